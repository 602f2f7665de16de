//! Chapter 4 — the spinner: something moves while the agent waits.
//!
//! A model call takes seconds, a build takes minutes; a screen that does not change looks
//! like a hang. So while the model thinks, and while a tool runs, a thread redraws one status
//! line ten times a second: a frame, what is running, the seconds so far, and for `bash` the
//! last line of output. It shares the terminal with the permission question, so the two take
//! turns under one lock. Only a live terminal gets it; pipes and `--json` never see a frame.

use super::observer::Screen;
use super::sanitize::sanitize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

// ANCHOR: spinner
/// `⠋ thinking…   1.2s` on stderr while the model works, `⠋ bash: cargo test   4.1s  Compiling
/// foo` while a tool runs; cleared when it stops. A permission question pauses it.
pub(crate) struct Spinner {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Set while a permission question is on the screen: the spinner must not draw over it. The
/// lock is held while a frame or the question is written, so the two never interleave.
pub(crate) static QUESTION_OPEN: Mutex<bool> = Mutex::new(false);

/// A live tool line (`→ bash cargo test`) is on the screen without its newline.
pub(crate) static TOOL_LINE_OPEN: AtomicBool = AtomicBool::new(false);

/// Marks a question as shown (`true`, before writing it) or answered (`false`).
pub fn question_open(open: bool) {
    *QUESTION_OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = open;
}

// ANCHOR_END: spinner
// ANCHOR: spinner_thread
impl Spinner {
    /// `detail` is read at each frame: for `bash`, the last line of output so far.
    pub(crate) fn start(screen: &Screen, label: String, detail: Option<fn() -> String>) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, screen) = (Arc::clone(&stop), screen.clone());
        let thread = std::thread::spawn(move || {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let started = Instant::now();
            let (mut frame, mut drawn) = (0, 0);
            // Fixed width, so a later frame covers exactly the earlier one, and short enough
            // not to wrap: the line is rewritten in place.
            let width = super::markdown::terminal_width().saturating_sub(1).clamp(20, 100);
            let label = crate::text::take_chars(&label, width / 2);
            // A quick reply should not flash a spinner.
            std::thread::park_timeout(Duration::from_millis(200));
            // ANCHOR_END: spinner_thread
            // ANCHOR: spinner_frame
            while !flag.load(Ordering::SeqCst) {
                let seconds = started.elapsed().as_secs_f64();
                let mut status = format!("{} {label} {seconds:>5.1}s ", FRAMES[frame % FRAMES.len()]);
                if let Some(detail) = detail {
                    status.push_str(&sanitize(&detail()));
                }
                let status: String = status.chars().chain(std::iter::repeat(' ')).take(width).collect();
                frame += 1;
                let question = QUESTION_OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if *question {
                    // After the answer the cursor is on a fresh line: start drawing anew there.
                    drawn = 0;
                } else if drawn == 0 {
                    screen.status(&format!("\r\x1b[2K{status}"));
                    drawn += 1;
                } else {
                    // The cursor is saved and restored (ESC 7 / ESC 8): what the user types
                    // meanwhile is echoed after the status and stays visible.
                    screen.status(&format!("\x1b7\r{status}\x1b8"));
                    drawn += 1;
                }
                drop(question);
                std::thread::park_timeout(Duration::from_millis(100));
            }
            if drawn > 0 {
                screen.status("\r\x1b[2K");
            }
        });
        Spinner { stop, thread: Some(thread) }
    }
}

// ANCHOR_END: spinner_frame
impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}
