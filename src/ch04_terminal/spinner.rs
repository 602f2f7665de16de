//! Chapter 4 — the spinner: something moves while the agent waits.
//!
//! A model call takes seconds, a build takes minutes; a screen that does not change looks
//! like a hang. So while the model thinks, and while a tool runs, a thread redraws one status
//! line ten times a second: a frame, what is running, the seconds so far, and for `bash` the
//! last line of output. It shares the terminal with the permission question, so the two take
//! turns under one lock. Only a live terminal gets it; pipes and `--json` never see a frame.
//!
//! It also shares the line with the person, who may type while a turn runs: the kernel
//! echoes those keys where the cursor is, after the status. So the status has a fixed width
//! for its whole life (the typed text after it does not move), no wider than the terminal is
//! now (a window made narrower does not wrap it into two rows, one of them left behind), and
//! while it is drawn the terminal does not wrap lines (`ESC[?7l`): text typed past the edge
//! stays on the row instead of wrapping onto the next one, where the next frame would draw
//! over it. When Enter is pressed the cursor is on a new row; the spinner marks the old one
//! `↳` and goes on there. Wrapping comes back for a question, when the spinner stops, and on
//! every way out of the program.

use super::observer::Screen;
use super::sanitize::sanitize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

// ANCHOR: spinner
/// `⠋ thinking…   1.2s` on stderr while the model works, `⠋ bash: cargo test   4.1s  Compiling
/// foo` while a tool runs; cleared when it stops. A permission question pauses it.
pub(crate) struct Spinner {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The question on the screen, shared by the spinner and whoever asks: the lock is held while
/// a frame or the question is written, so the two never interleave.
pub(crate) struct Question {
    /// A question is on the screen: the spinner must not draw over it.
    open: bool,
    /// When the last one was answered: a tool's time starts after its permission question.
    answered: Option<Instant>,
}

pub(crate) static QUESTION: Mutex<Question> = Mutex::new(Question { open: false, answered: None });

/// A live tool line (`→ bash cargo test`) is on the screen without its newline.
pub(crate) static TOOL_LINE_OPEN: AtomicBool = AtomicBool::new(false);

/// The spinner has turned the terminal's line wrapping off; whoever writes a question, and
/// every way out of the program (the signal handlers too), turns it back on.
pub(crate) static WRAP_OFF: AtomicBool = AtomicBool::new(false);

/// Turns the terminal's line wrapping back on, if the spinner turned it off.
pub(crate) const WRAP_ON: &str = "\x1b[?7h";
const NO_WRAP: &str = "\x1b[?7l";
// ANCHOR_END: spinner

/// Line wrapping back on, from a signal handler about to `_exit`: one `write(2)`, which is
/// async-signal-safe, and only if the spinner had turned it off.
pub(crate) fn wrap_on_in_a_signal() {
    if WRAP_OFF.swap(false, Ordering::SeqCst) {
        // SAFETY: write(2) reads WRAP_ON's bytes, which live as long as the program.
        unsafe { libc::write(2, WRAP_ON.as_ptr().cast(), WRAP_ON.len()) };
    }
}

/// Marks a question as shown (`true`, before writing it) or answered (`false`).
pub fn question_open(open: bool) {
    let mut question = lock_question();
    question.show(open);
}

pub(crate) fn lock_question() -> MutexGuard<'static, Question> {
    QUESTION.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Question {
    /// Opens the question (line wrapping back on: a long command must wrap) or closes it.
    pub(crate) fn show(&mut self, open: bool) {
        if open && WRAP_OFF.swap(false, Ordering::SeqCst) {
            eprint!("{WRAP_ON}");
        }
        if !open && self.open {
            self.answered = Some(Instant::now());
        }
        self.open = open;
    }
}

/// Columns for the last line of a command's output, after its name and time.
const DETAIL_COLUMNS: usize = 30;
/// Columns for what is running (`bash cargo test`), at most.
const LABEL_COLUMNS: usize = 40;

// ANCHOR: spinner_thread
impl Spinner {
    /// `detail` is read at each frame: for `bash`, the last line of output so far.
    pub(crate) fn start(screen: &Screen, label: String, detail: Option<fn() -> String>) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, screen) = (Arc::clone(&stop), screen.clone());
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let label = fit(&label, LABEL_COLUMNS);
            // The status's width: fixed (until the window changes), so that text typed after it
            // stays where it is.
            let status_width = label.width() + 10 + if detail.is_some() { DETAIL_COLUMNS } else { 0 };
            let mut frames = Frames { frame: 0, drawn: false, lines_seen: 0 };
            // A quick reply should not flash a spinner.
            std::thread::park_timeout(Duration::from_millis(200));
            while !flag.load(Ordering::SeqCst) {
                let question = lock_question();
                // The time a tool really runs: from its start, or from the answer to its question.
                let since = question.answered.filter(|&answered| answered > started).unwrap_or(started);
                if question.open {
                    frames.drawn = false; // after the answer the cursor is on a fresh line
                } else {
                    let time = format!(" {:>5.1}s ", since.elapsed().as_secs_f64());
                    let detail = detail.map(|detail| sanitize(&detail())).unwrap_or_default();
                    let columns = super::markdown::terminal_width();
                    // At most two thirds of the row: the rest is for what the person types.
                    let width = status_width.min(columns * 2 / 3).max(12).min(columns.saturating_sub(1));
                    screen.status(&frames.next([&label, &time, &detail], width));
                }
                drop(question);
                std::thread::park_timeout(Duration::from_millis(100));
            }
            if frames.drawn {
                screen.status("\r\x1b[2K");
            }
            if WRAP_OFF.swap(false, Ordering::SeqCst) {
                screen.status(WRAP_ON);
            }
        });
        Spinner { stop, thread: Some(thread) }
    }
}
// ANCHOR_END: spinner_thread

// ANCHOR: spinner_frame
/// What the spinner has put on the screen so far.
struct Frames {
    frame: usize,
    /// A frame is on the cursor's row.
    drawn: bool,
    /// Lines typed (Enter pressed) when the status row was last anchored.
    lines_seen: u64,
}

impl Frames {
    /// The bytes that draw the next frame, `width` columns wide: what runs, cut first when
    /// the row is short, its time, never cut, and the detail in what is left.
    fn next(&mut self, [label, time, detail]: [&str; 3], width: usize) -> String {
        const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
        let room = width.saturating_sub(time.len() + 2);
        // With a detail to show, what runs takes three fifths of the room at most.
        let label = fit(label, if detail.is_empty() { room } else { room * 3 / 5 });
        let head = format!("{} {label}{time}", FRAMES[self.frame % FRAMES.len()]);
        let status = fit(&format!("{head}{detail}"), width);
        // Only the status's own characters are written: blank cells are erased (`ESC[nX`), not
        // written as spaces, so a window made narrower has no long row of spaces to wrap.
        let rest = match width - status.width() {
            0 => String::new(),
            blank => format!("\x1b[{blank}X"),
        };
        // What the person types goes after the status, at a fixed column.
        let typing_column = format!("\x1b[{}G", width + 1);
        self.frame += 1;
        let entered = super::type_ahead::lines_entered();
        let drawn = std::mem::replace(&mut self.drawn, true);
        if !drawn {
            self.lines_seen = entered;
            WRAP_OFF.store(true, Ordering::SeqCst);
            return format!("{NO_WRAP}\r\x1b[2K{status}{typing_column}");
        }
        if entered != self.lines_seen {
            // Enter moved the cursor down: the row the status was on keeps the typed line, marked;
            // the status goes on on the cursor's row, with what is typed next after it.
            let rows_up = entered - std::mem::replace(&mut self.lines_seen, entered);
            let mark = format!("\x1b[{rows_up}A\r\x1b[{width}X\x1b[{}G↳", width.saturating_sub(1));
            return format!("\x1b7{mark}\x1b8\r{status}{rest}{typing_column}");
        }
        // The cursor is saved and restored (ESC 7 / ESC 8): what the user types meanwhile is
        // echoed after the status and stays visible.
        format!("\x1b7\r{status}{rest}\x1b8")
    }
}
// ANCHOR_END: spinner_frame

/// `text` cut to `width` columns (wide characters count two).
fn fit(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let columns = c.width().unwrap_or(0);
        if used + columns > width {
            break;
        }
        used += columns;
        out.push(c);
    }
    out
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_fits_its_columns_and_wide_characters_count_two() {
        assert_eq!(fit("bash ls", 10), "bash ls");
        assert_eq!(fit("读取 文件", 5), "读取 ");
        assert_eq!(fit("读取文件", 5), "读取");
        assert_eq!(fit("abc", 2), "ab");
    }
}
