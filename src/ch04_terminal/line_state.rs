//! Chapter 4 — what is on the prompt line, for Ctrl+C.
//!
//! In a shell, Ctrl+C on a half-typed line throws the line away and gives a fresh prompt;
//! only on an empty line does it mean "leave". rustyline reports Ctrl+C as one error,
//! whatever was typed. So the editor gets a helper that is told the line at every edit (the
//! hinter and highlighter hooks rustyline calls anyway) and remembers whether it was empty:
//! then the REPL can tell a Ctrl+C that clears from one that leaves.

use rustyline::completion::Completer;
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the line being edited has text. Shows nothing and changes nothing.
#[derive(Default)]
pub(crate) struct LineState {
    typed: AtomicBool,
}

impl LineState {
    /// The line had text when the prompt ended; resets for the next prompt.
    pub(crate) fn take_typed(&self) -> bool {
        self.typed.swap(false, Ordering::SeqCst)
    }

    fn see(&self, line: &str) {
        self.typed.store(!line.is_empty(), Ordering::SeqCst);
    }
}

impl Hinter for LineState {
    type Hint = String;

    fn hint(&self, line: &str, _: usize, _: &rustyline::Context<'_>) -> Option<String> {
        self.see(line);
        None
    }
}

impl Highlighter for LineState {
    fn highlight_char(&self, line: &str, _: usize, _: CmdKind) -> bool {
        self.see(line);
        false
    }
}

impl Completer for LineState {
    type Candidate = String;
}

impl Validator for LineState {}

impl rustyline::Helper for LineState {}

/// The line editor with its helper.
pub(crate) type Editor = rustyline::Editor<LineState, rustyline::history::DefaultHistory>;
