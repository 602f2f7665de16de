//! Ctrl+C during a turn: a SIGINT handler that only stores to chapter 1's atomic flag, and
//! a second press after a second of no answer exits at once with 130.

use crate::ch02_loop::set_interrupted;
use std::sync::atomic::{AtomicU64, Ordering};

// ANCHOR: interrupt_handler
/// When the pending Ctrl+C was pressed, in milliseconds since the Unix epoch.
pub(super) static FIRST_PRESS_MS: AtomicU64 = AtomicU64::new(0);
/// A turn normally stops well within this; a Ctrl+C still pending after it means a stuck turn.
pub(super) const FORCE_QUIT_AFTER_MS: u64 = 1000;

/// Runs inside the signal: only async-signal-safe work (reading the clock, atomics, `write`,
/// `_exit`).
extern "C" fn on_sigint(_signal: libc::c_int) {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64);
    if !crate::ch02_loop::interrupted() {
        FIRST_PRESS_MS.store(now_ms, Ordering::SeqCst);
        set_interrupted(true);
    } else if now_ms.saturating_sub(FIRST_PRESS_MS.load(Ordering::SeqCst)) >= FORCE_QUIT_AFTER_MS {
        // Pressed again, and the turn has had its chance to stop: the user wants out now.
        // A quick double press does not land here, so it cannot cut a turn's last records.
        crate::ch04_terminal::spinner::wrap_on_in_a_signal();
        // SAFETY: _exit is async-signal-safe and takes no pointers.
        unsafe { libc::_exit(130) }
    }
}

/// Makes Ctrl+C set the interrupt flag instead of killing the process. Call once at start,
/// for the REPL and for `-p` alike (`-p` then exits 130 when its turn was interrupted).
pub fn install_interrupt_handler() {
    // SAFETY: the handler is a plain function that touches only an atomic and `_exit`.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t);
    }
    crate::ch04_terminal::signals::install_stop_handlers();
}
// ANCHOR_END: interrupt_handler
