//! Chapter 3 — what a running command printed last.
//!
//! A command can run for minutes. The terminal (chapter 4) shows that it runs, and its last
//! line of output so far, the way a person watching a build would glance at it. The reader
//! thread of `bash` keeps the tail of the output here; the screen reads it ten times a
//! second. One slot is enough: tools run one at a time, and a stale line is harmless.

use std::sync::Mutex;

/// Bytes kept: enough for a line of a terminal's width, even in a multi-byte script.
const TAIL_BYTES: usize = 1024;

static TAIL: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// A command starts: nothing printed yet.
pub fn clear() {
    TAIL.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
}

/// More output arrived.
pub fn note(bytes: &[u8]) {
    let mut tail = TAIL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let keep = bytes.len().min(TAIL_BYTES);
    tail.extend_from_slice(&bytes[bytes.len() - keep..]);
    let excess = tail.len().saturating_sub(TAIL_BYTES);
    tail.drain(..excess);
}

/// The last line with something on it (a progress bar's `\r` ends a line too), unsanitised.
pub fn last_line() -> String {
    let tail = TAIL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let text = String::from_utf8_lossy(&tail);
    text.split(['\n', '\r']).rev().find(|line| !line.trim().is_empty()).unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_with_text_is_kept() {
        clear();
        assert_eq!(last_line(), "");
        note(b"compiling a\ncompiling b\n\n");
        assert_eq!(last_line(), "compiling b");
        note(b" 10%\r 20%\r");
        assert_eq!(last_line(), "20%");
        note(&vec![b'x'; 5000]);
        assert_eq!(last_line().len(), TAIL_BYTES);
        clear();
    }
}
