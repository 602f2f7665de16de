//! Selfcheck: offline end-to-end checks of the real binary.
//!
//! Unit tests prove that each chapter's piece works alone; these prove that `main.rs` put
//! the pieces together the way a user will meet them. Every test starts `mini-agent` in a
//! fresh temporary workspace, points it at a scripted model server on 127.0.0.1 (or the
//! built-in demo), and then checks what a user would check — the exit code, stdout, stderr,
//! the files — and what a model would see: the requests the binary sent.

// The one way to start the binary, which the harness builds on.
#[allow(dead_code)]
mod binary_run;
mod harness;
mod kit;
mod pty;

mod anthropic;
mod command_line;
mod context;
mod crash;
mod daily_cli;
mod daily_terminal;
mod events;
#[cfg(feature = "ch16")]
mod hooks;
mod interrupts;
mod mcp;
mod model_replies;
mod notify;
// Issue 11: a real model on a real server.
mod daily_model;
// Issue 22: real servers and small local models.
mod daily_model_2;
mod read_only;
mod repl;
mod robustness_journal;
mod serve;
mod sessions;
mod tasks;
mod terminal;
mod terminal_spinner;
mod tools;
