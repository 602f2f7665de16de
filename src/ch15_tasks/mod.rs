//! Chapter 15 — the task loop: mini-agent left alone with a list of tasks.
//!
//! Until now a person watched every run. This chapter lets the agent work through a list:
//! pick the next task, attempt it as an ordinary session, prove it with a command the
//! harness runs (never the model's word), commit it, go on — and stop to ask a human when
//! the work keeps failing. Nothing in the loop is new machinery: an attempt is a session
//! (journal, recovery, permissions carry over), the verify command runs under the bash
//! tool's rules, and the task list is a JSON file written the way the journal is.
//!
//! * [`file`] — the task list: load (a damaged file names its line), atomic save, update.
//! * [`pick`] — the next task and new ids, pure functions of the list.
//! * [`template`] — the attempt's prompt, built in or the project's own.
//! * [`verify`] — the proof: the verify command with the bash tool's rules.
//! * [`git`] — one commit per passed task, holding its work and nothing else; never a push.
//! * [`set_aside`] — an attempt that did not pass: its changes kept under a ref, the tree put back.
//! * [`git_process`] — every git call bounded in time and running nothing config names.
//! * [`run`] — the loop itself, with its seams: [`run::Attempts`], [`verify::Verifier`],
//!   [`run::TaskEvents`].
//! * [`recover`] — a task left in progress by a crash.

pub mod file;
pub mod git;
pub mod git_process;
#[cfg(test)]
mod git_tests;
pub mod pick;
pub mod recover;
pub mod run;
pub mod set_aside;
pub mod template;
#[cfg(test)]
mod tests;
pub mod verify;

pub use file::{DEFAULT_TASKS_FILE, Task, TaskFile, TaskStatus};
pub use run::{Attempts, Loop, RunEnd, Settings, TaskEvent, TaskEvents};
