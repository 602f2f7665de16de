//! Chapter 3 — what a running command printed last.
//!
//! A command can run for minutes. The terminal (chapter 4) shows that it runs, and its last
//! line of output so far, the way a person watching a build would glance at it. The reader
//! thread of `bash` keeps the tail of the output here; the screen reads it ten times a
//! second. One slot is enough: tools run one at a time, and a stale line is harmless.

use std::sync::Mutex;

/// Bytes kept: enough for a line of a terminal's width, even in a multi-byte script.
const TAIL_BYTES: usize = 1024;

/// The tail of one command's output.
pub(crate) struct Tail(Mutex<Vec<u8>>);

static TAIL: Tail = Tail::new();

/// A command starts: nothing printed yet.
pub fn clear() {
    TAIL.clear();
}

/// More output arrived.
pub fn note(bytes: &[u8]) {
    TAIL.note(bytes);
}

/// The last line with something on it (a progress bar's `\r` ends a line too), unsanitised.
pub fn last_line() -> String {
    TAIL.last_line()
}

impl Tail {
    pub const fn new() -> Tail {
        Tail(Mutex::new(Vec::new()))
    }

    fn bytes(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn clear(&self) {
        self.bytes().clear();
    }

    pub fn note(&self, bytes: &[u8]) {
        let mut tail = self.bytes();
        let keep = bytes.len().min(TAIL_BYTES);
        tail.extend_from_slice(&bytes[bytes.len() - keep..]);
        let excess = tail.len().saturating_sub(TAIL_BYTES);
        tail.drain(..excess);
    }

    pub fn last_line(&self) -> String {
        let tail = self.bytes();
        let text = String::from_utf8_lossy(&tail);
        text.split(['\n', '\r']).rev().find(|line| !line.trim().is_empty()).unwrap_or("").trim().to_string()
    }
}

impl Default for Tail {
    fn default() -> Tail {
        Tail::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_with_text_is_kept() {
        // A tail of its own: tests running commands in parallel share the global one.
        let tail = Tail::new();
        assert_eq!(tail.last_line(), "");
        tail.note(b"compiling a\ncompiling b\n\n");
        assert_eq!(tail.last_line(), "compiling b");
        tail.note(b" 10%\r 20%\r");
        assert_eq!(tail.last_line(), "20%");
        tail.note(&vec![b'x'; 5000]);
        assert_eq!(tail.last_line().len(), TAIL_BYTES);
        tail.clear();
        assert_eq!(tail.last_line(), "");
    }
}
