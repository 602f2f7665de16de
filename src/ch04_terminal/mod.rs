//! Chapter 4 — the terminal.
//!
//! The loop of chapter 1 does not know a person is watching. This chapter is everything
//! between that person and the loop: reading what they type, showing what happens, and
//! letting Ctrl+C stop a turn without killing the program. It plugs in at two places: a
//! [`TerminalObserver`] (an `Observer`) draws events, and [`run_repl`] drives turns through a
//! [`ReplHost`], a small trait that `main` implements with the pieces of later chapters.
//!
//! Who owns standard input, and when, is the design choice this file is about:
//!
//! * **At the idle prompt** rustyline owns the terminal (raw mode: arrow keys, history, wide
//!   characters). Ctrl+C and Ctrl+D arrive as keys, not signals: on an empty line they mean
//!   "leave", and Ctrl+C on a half-typed line clears it, as in a shell ([`line_state`]).
//! * **During a turn** rustyline is not running and the terminal is back in cooked mode, where
//!   the kernel edits the line and hands over only whole lines. A [`TypeAhead`] thread polls
//!   stdin (50 ms at a time, so it can be told to stop) and reads those whole lines into a
//!   queue; the observer hands them to the loop through `queued_input`, so they join the next
//!   model request. When the turn ends the thread is stopped and joined *before* rustyline
//!   starts again, so the two never read at the same time. A half-typed line is still in the
//!   kernel's buffer; rustyline switches to raw mode with `TCSADRAIN`, which keeps it, and the
//!   characters land in the new prompt: nothing is lost or mixed. Lines typed faster than
//!   rustyline returns (several Enters at once) stay in rustyline's own buffer, kept between
//!   calls by its `buffer-redux` feature, and become the next prompts' lines.
//! * **Ctrl+C during a turn** is a real SIGINT (cooked mode). The handler only stores to the
//!   atomic flag of chapter 1; the model client and the tools poll it. Another Ctrl+C when the
//!   first has gone unanswered for a second exits at once with 130: the escape hatch for a
//!   stuck turn (and, with piped input, the way out at the idle prompt).
//! * **Piped stdin** (not a terminal) is a script: one line, one turn, in order, with no
//!   type-ahead, so a piped run sends exactly what the same lines typed one by one would.

//!
//! Submodules: [`commands`], [`interrupt`] and [`signals`] (Ctrl+C and stop signals),
//! [`type_ahead`], [`line_reader`] and [`line_state`] (input), [`observer`] and [`spinner`]
//! (output), [`repl`], [`sanitize`] (what the model wrote, made safe to print), and
//! [`markdown`] and [`stream`] (Markdown laid out for the terminal).

pub mod commands;
pub mod interrupt;
pub(crate) mod line_reader;
pub(crate) mod line_state;
pub(crate) mod markdown;
pub mod observer;
pub(crate) mod ready;
pub mod repl;
pub mod sanitize;
pub mod signals;
pub mod spinner;
pub mod streamed_markdown;
pub mod type_ahead;

pub use commands::{Command, HostCommand, RegisterCommands, SlashCommand, help, parse_command};
pub use interrupt::install_interrupt_handler;
pub use line_reader::{Input, LineReader, history_file};
pub use markdown::{Look, render_markdown};
pub use observer::{Screen, TerminalObserver};
pub use repl::{ReplHost, run_repl};
pub use spinner::question_open;
pub use streamed_markdown::StreamRenderer;
pub use type_ahead::{TypeAhead, TypeAheadReader};

use crate::ch02_loop::command_line::Help;
/// Chapter 4's command line: the REPL when there is no `-p`, colours, and Ctrl+C.
pub fn register(registry: &mut dyn RegisterCommands) {
    let help = |section, lines| Help { chapter: 4, page: "", section, lines };
    registry.help(help(
        "USAGE",
        &["  mini-agent [OPTIONS]                  interactive session in the workspace root"],
    ));
    registry.help(help("ENVIRONMENT", &["  NO_COLOR                   disable colors"]));
    registry.help(help(
        "EXIT CODES",
        &["  130  interrupted (Ctrl+C)", "  143  stopped by SIGTERM (129: SIGHUP), handled like Ctrl+C"],
    ));
    registry.command(commands::NEW);
    registry.terminal(sanitize::sanitize, signals::stop_signal);
}

#[cfg(test)]
pub(crate) mod tests;
