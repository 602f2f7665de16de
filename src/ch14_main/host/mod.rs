//! From chapter 5 on, every run is a session: the session host. `start.rs` chooses the
//! session and starts the agent of `app.rs`, which keeps the run's configuration and folds
//! the chapters' parts around the tools; `repl.rs` and `session.rs` are the REPL's side of it,
//! `context.rs` is chapter 7's compacting model and `/compact` and `/stats`, `reopen.rs` goes
//! back to a journal (chapter 10), `json_events.rs` and `unrecorded.rs` are
//! chapter 14's own, `tasks/` and `serve.rs` the subcommands of chapters 15 and 21. Before
//! chapter 5, `../early.rs` holds one conversation in memory instead.

pub(crate) mod app;
#[cfg(feature = "ch07")]
pub(crate) mod context;
pub(crate) mod json_events;
#[cfg(feature = "ch10")]
pub(crate) mod reopen;
pub(crate) mod repl;
#[cfg(feature = "ch21")]
pub(crate) mod serve;
pub(crate) mod session;
pub(crate) mod sessions_table;
pub(crate) mod start;
#[cfg(feature = "ch15")]
pub(crate) mod tasks;
#[cfg(test)]
mod tests;
pub(crate) mod unrecorded;
