//! Chapter 12 in the command line: who may be asked "may this call run?", and the gate each
//! session's tools go behind, granted what the flags granted.

use super::app::Config;
use mini_agent::ch02_loop::ToolCall;
use mini_agent::ch04_terminal::TypeAhead;
use mini_agent::ch12_permissions::{
    Answer, Gate, Guarded, Permission, Prompter, TerminalPrompter, ask_with, granted,
};
use std::io::IsTerminal;

/// Who answers "may this call run?" when the flags did not allow it.
#[derive(Clone)]
pub enum Asker {
    /// Nobody: the call is denied with a result that names the flag.
    Nobody,
    /// `-p` on a terminal: ask on /dev/tty.
    Tty,
    /// The REPL: ask through the queue that reads lines during a turn.
    TypeAhead(TypeAhead),
}

/// Chapter 12's layer: the tools behind a gate that grants what the flags granted and asks
/// `config.asker` about the rest.
pub fn gate<T: Guarded>(tools: T, config: &Config) -> Gate<T> {
    let prompter: Option<Box<dyn Prompter>> = match &config.asker {
        Asker::Nobody => None,
        Asker::Tty => TerminalPrompter::open_tty().map(|tty| Box::new(tty) as Box<dyn Prompter>),
        Asker::TypeAhead(queue) => Some(Box::new(TypeAheadPrompter(queue.clone()))),
    };
    Gate::new(tools, granted(&config.settings), prompter)
}

// ANCHOR: ask_at_the_terminal
/// `-p` asks at the terminal only when a person is there to answer (DESIGN: scripts and tests
/// get a denial that names the flag); `--json` means a program reads, and nobody answers.
pub fn at_the_terminal(config: Config) -> Config {
    let asker = match std::io::stdin().is_terminal() && !super::json_wanted(&config.settings) {
        true => Asker::Tty,
        false => Asker::Nobody,
    };
    Config { asker, ..config }
}
// ANCHOR_END: ask_at_the_terminal

// ANCHOR: prompter
/// Asks for a permission during a REPL turn: the question on stderr, the answer from the
/// queue of lines typed meanwhile (the REPL's reader thread owns stdin then).
struct TypeAheadPrompter(TypeAhead);

impl Prompter for TypeAheadPrompter {
    fn ask(&mut self, call: &ToolCall, needed: Permission) -> Answer {
        ask_with(call, needed, |question| self.0.ask(question))
    }
}
// ANCHOR_END: prompter
