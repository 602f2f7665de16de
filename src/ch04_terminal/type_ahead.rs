//! Lines typed while a turn runs: a thread reads whole lines from the cooked-mode terminal
//! into a queue the loop drains between requests, and is stopped and joined before rustyline
//! takes the terminal back, so the two never read at the same time.

use super::commands::*;
use super::ready::{Ready, read_when_ready};
use super::spinner::{TOOL_LINE_OPEN, lock_question, question_open};
use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

// ANCHOR: type_ahead
/// Lines typed while a turn runs. Shared by the reader thread (which fills it), the
/// observer (which sends the lines with the next request) and [`TypeAhead::ask`] (which lets
/// a permission prompt take the next line instead).
#[derive(Clone, Default)]
pub struct TypeAhead {
    shared: Arc<(Mutex<Queue>, Condvar)>,
}

#[derive(Default)]
pub(super) struct Queue {
    pub(super) lines: VecDeque<String>,
    reading: bool,
    pub(super) asking: bool,
    answer: Option<String>,
    /// Lines typed during the turn and sent with a request: they belong in the history.
    handed_over: Vec<String>,
    /// Ctrl+D was pressed on an empty line while a question was asked: no answer, a denial.
    declined: bool,
}

/// Lines typed during turns so far, answers to questions aside: each moved the cursor down.
static LINES_ENTERED: AtomicU64 = AtomicU64::new(0);

/// How many lines have been typed during turns (Enter pressed), answers aside.
pub(crate) fn lines_entered() -> u64 {
    LINES_ENTERED.load(Ordering::SeqCst)
}

/// The running reader thread; [`TypeAheadReader::finish`] stops it and joins it.
pub struct TypeAheadReader {
    stop: Arc<AtomicBool>,
    pub(super) thread: Option<JoinHandle<()>>,
    type_ahead: TypeAhead,
}

impl TypeAhead {
    /// Starts reading whole lines from `fd` (stdin is 0) until `finish`.
    pub(crate) fn start_reading(&self, fd: i32) -> TypeAheadReader {
        self.lock().reading = true;
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, queue) = (Arc::clone(&stop), self.clone());
        let thread = std::thread::spawn(move || queue.read_lines(fd, &flag));
        TypeAheadReader { stop, thread: Some(thread), type_ahead: self.clone() }
    }

    // ANCHOR_END: type_ahead
    // ANCHOR: read_lines
    fn read_lines(&self, fd: i32, stop: &AtomicBool) {
        let mut pending = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            match read_when_ready(fd, &mut buffer, || stop.load(Ordering::SeqCst)) {
                Ready::Bytes(count) => {
                    pending.extend_from_slice(&buffer[..count]);
                    while let Some(end) = pending.iter().position(|&byte| byte == b'\n') {
                        let line: Vec<u8> = pending.drain(..=end).collect();
                        self.deliver(&line[..end]);
                    }
                }
                // Ctrl+D on an empty line: nothing to keep, but the answer "no" to a question
                // being asked.
                Ready::End { hung_up: false } => self.decline(),
                // The terminal or pipe is gone, or we were told to stop.
                Ready::End { hung_up: true } | Ready::Stopped | Ready::Failed => break,
            }
        }
        if !pending.is_empty() {
            self.deliver(&pending); // Ctrl+D in the middle of a line sent it without a newline
        }
    }

    // ANCHOR_END: read_lines
    // ANCHOR: deliver
    fn decline(&self) {
        let mut queue = self.lock();
        if queue.asking && queue.answer.is_none() {
            queue.declined = true;
            self.shared.1.notify_all();
        }
    }

    fn deliver(&self, bytes: &[u8]) {
        let line = String::from_utf8_lossy(bytes).trim_end_matches('\r').to_string();
        let mut queue = self.lock();
        if queue.asking && queue.answer.is_none() {
            queue.answer = Some(line);
            self.shared.1.notify_all();
            return;
        }
        // Enter was echoed: the cursor is on a new row (the spinner wants to know).
        LINES_ENTERED.fetch_add(1, Ordering::SeqCst);
        if !line.trim().is_empty() {
            queue.lines.push_back(line);
        }
    }

    // ANCHOR_END: deliver
    /// The queued lines that are messages; slash commands stay queued for after the turn.
    pub(crate) fn take_messages(&self) -> Vec<String> {
        let mut queue = self.lock();
        let (messages, kept): (Vec<String>, Vec<String>) =
            queue.lines.drain(..).partition(|line| command_word(line).is_none());
        queue.lines = kept.into();
        queue.handed_over.extend(messages.iter().cloned());
        messages
    }

    /// The lines sent with a request since the last call, for the history.
    pub(crate) fn take_handed_over(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().handed_over)
    }

    /// Everything still queued, in the order it was typed.
    pub(crate) fn take_all(&self) -> Vec<String> {
        self.lock().lines.drain(..).collect()
    }

    /// Asks a question on stderr and returns the next line typed (for a permission prompt
    /// during a turn). `None` when there is no terminal to ask, or Ctrl+C or Ctrl+D was pressed.
    pub fn ask(&self, question: &str) -> Option<String> {
        // On a terminal the tool line (`→ bash cargo test`) is still open: start a fresh line.
        // The tool line (`→ bash cargo test`) may still be open: end it, once. A follow-up question
        // (the reason after `n`) comes after the typed answer's newline: no blank line.
        let fresh_line = if TOOL_LINE_OPEN.swap(false, Ordering::SeqCst) { "\n" } else { "" };
        // Waiting for the answer starts before the question shows: a line typed the moment it
        // appears is the answer, and must not slip into the queue as a message.
        let reading = self.begin_asking();
        {
            let mut shown = lock_question();
            shown.show(true);
            eprint!("{fresh_line}{question}");
            let _ = std::io::stderr().flush();
        }
        let answer = if reading { self.wait_for_answer() } else { read_line_from_terminal() };
        question_open(false);
        answer
    }

    /// Whether the reader thread runs; if so, the next line it reads is the answer.
    fn begin_asking(&self) -> bool {
        let mut queue = self.lock();
        if queue.reading {
            queue.asking = true;
            queue.answer = None;
            queue.declined = false;
        }
        queue.reading
    }

    fn wait_for_answer(&self) -> Option<String> {
        let mut queue = self.lock();
        while queue.answer.is_none() && !queue.declined && !crate::ch02_loop::interrupted() {
            queue = match self.shared.1.wait_timeout(queue, Duration::from_millis(50)) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        queue.asking = false;
        if queue.declined {
            eprintln!();
        }
        queue.answer.take()
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // A panic elsewhere while holding the lock leaves a usable queue of lines.
        self.shared.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl TypeAheadReader {
    /// Stops the thread, waits for it (at most one poll interval), and returns every line
    /// still queued: they become the next inputs.
    pub fn finish(mut self) -> Vec<String> {
        self.stop_thread();
        self.type_ahead.take_all()
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.type_ahead.lock().reading = false;
    }
}

impl Drop for TypeAheadReader {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

pub(super) fn read_line_from_terminal() -> Option<String> {
    if !std::io::stdin().is_terminal() {
        return None;
    }
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
    }
}
