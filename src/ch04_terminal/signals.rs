//! Chapter 4 — SIGTERM and SIGHUP, handled like Ctrl+C.
//!
//! A terminal that closes sends `SIGHUP`; `kill`, `timeout`, systemd and CI runners send
//! `SIGTERM`. By default either one kills the agent on the spot, so a running command is left
//! behind and the journal says only that a tool started: an *unknown outcome* that blocks the
//! session until a person looks. Treated as a Ctrl+C instead, the stop is orderly: the same
//! interrupt flag is set, the running tool's process group is killed, the interruption is
//! recorded, and the agent exits with the shell's convention for that signal, `128 + n`
//! (143 for SIGTERM, 129 for SIGHUP).
//!
//! Two cases do not fit the flag. At the idle REPL prompt there is no turn to stop, and the
//! line editor retries a read that a signal interrupted, so the handler leaves at once (after
//! putting the terminal back the way it found it). And a second signal, a second after the
//! first, means the turn did not stop in time: the handler leaves at once too, as a second
//! Ctrl+C does.

use crate::ch02_loop::{interrupted, set_interrupted};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

// ANCHOR: stop_signals
/// The signal that asked the agent to stop (SIGTERM or SIGHUP), 0 for none.
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// When it arrived, in milliseconds since the Unix epoch.
static STOP_AT_MS: AtomicU64 = AtomicU64::new(0);
/// The REPL is waiting at its prompt: no turn runs, nothing needs recording.
static AT_PROMPT: AtomicBool = AtomicBool::new(false);
/// The terminal settings at start-up, restored when the handler leaves from the prompt.
static SAVED_TERMINAL: OnceLock<libc::termios> = OnceLock::new();
/// Like a second Ctrl+C: a stop signal still pending after this means a stuck turn.
const FORCE_QUIT_AFTER_MS: u64 = 1000;

/// Runs inside the signal: atomics, the clock, `tcsetattr`, `write` and `_exit` only.
extern "C" fn on_stop_signal(signal: libc::c_int) {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64);
    let first = STOP_SIGNAL.load(Ordering::SeqCst) == 0;
    let stuck = !first && now_ms.saturating_sub(STOP_AT_MS.load(Ordering::SeqCst)) >= FORCE_QUIT_AFTER_MS;
    if AT_PROMPT.load(Ordering::SeqCst) || stuck {
        if let Some(saved) = SAVED_TERMINAL.get() {
            // SAFETY: tcsetattr is async-signal-safe; `saved` is a valid termios.
            unsafe { libc::tcsetattr(0, libc::TCSANOW, saved) };
        }
        crate::ch04_terminal::spinner::wrap_on_in_a_signal();
        // SAFETY: _exit is async-signal-safe and takes no pointers.
        unsafe { libc::_exit(128 + signal) }
    }
    if first {
        STOP_AT_MS.store(now_ms, Ordering::SeqCst);
        STOP_SIGNAL.store(signal, Ordering::SeqCst);
    }
    if !interrupted() {
        set_interrupted(true);
    }
}

// ANCHOR_END: stop_signals
// ANCHOR: stop_signals_install
/// Makes SIGTERM and SIGHUP stop the running turn the way Ctrl+C does. Called with the
/// Ctrl+C handler, once at start.
pub(crate) fn install_stop_handlers() {
    let handler = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches atomics, the saved termios, and `_exit`.
    unsafe {
        libc::signal(libc::SIGTERM, handler);
        libc::signal(libc::SIGHUP, handler);
    }
}

/// The stop signal received, if any: the run then exits with `128 + signal`.
pub fn stop_signal() -> Option<i32> {
    Some(STOP_SIGNAL.load(Ordering::SeqCst)).filter(|&signal| signal != 0)
}

/// The REPL says when it waits at its prompt (`true`) and when a line arrived (`false`).
/// The first call saves the terminal's settings, to restore them on the way out.
pub(crate) fn at_prompt(waiting: bool) {
    if waiting && SAVED_TERMINAL.get().is_none() {
        // SAFETY: tcgetattr fills a termios we own; it fails harmlessly when 0 is no terminal.
        let mut settings: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(0, &mut settings) } == 0 {
            let _ = SAVED_TERMINAL.set(settings);
        }
    }
    AT_PROMPT.store(waiting, Ordering::SeqCst);
}
// ANCHOR_END: stop_signals_install
