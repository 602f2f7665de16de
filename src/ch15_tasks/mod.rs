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
//! * [`layers`] — what later chapters add around the seams ([`layers::TaskLayer`]), registered.

use crate::ch02_loop::command_line::{Flag, Help, MAX_TURNS_CEILING, Registry, SHOW_HELP, Takes};

pub mod file;
pub mod git;
pub mod git_process;
#[cfg(test)]
mod git_tests;
pub mod layers;
pub mod pick;
pub mod recover;
pub mod run;
pub mod set_aside;
pub mod template;
#[cfg(test)]
mod tests;
pub mod verify;

pub use file::{DEFAULT_TASKS_FILE, Task, TaskFile, TaskStatus};
pub use layers::{RegisterTaskLayers, TaskLayer, TaskLayers, TaskRun, shared};
pub use run::{Attempts, Loop, RunEnd, Settings, TaskEvent, TaskEvents};
/// The flags of `tasks run` (the agent's own flags come after them: the model, permissions…).
pub const ITERATIONS: Flag =
    Flag::value(15, "--iterations", Takes::Count("N", MAX_TURNS_CEILING), &[]).of("tasks run");
pub const MAX_ATTEMPTS: Flag =
    Flag::value(15, "--max-attempts", Takes::Count("N", MAX_TURNS_CEILING), &[]).of("tasks run");
pub const INTERVENTION_AFTER: Flag =
    Flag::value(15, "--intervention-after", Takes::Count("N", MAX_TURNS_CEILING), &[]).of("tasks run");
pub const NO_COMMIT: Flag = Flag::switch(15, "--no-commit", &[]).of("tasks run");
pub const ALLOW_DIRTY: Flag = Flag::switch(15, "--allow-dirty", &[]).of("tasks run");

/// Chapter 15's command line: the `tasks` subcommand, and the exit code that asks for a person.
pub fn register(registry: &mut dyn Registry) {
    for flag in [ITERATIONS, MAX_ATTEMPTS, INTERVENTION_AFTER, NO_COMMIT, ALLOW_DIRTY] {
        registry.flag(flag);
    }
    registry.flag(Flag { chapter: 15, command: "tasks", ..SHOW_HELP });
    let help = |section, lines| Help { chapter: 15, page: "", section, lines };
    registry.help(help(
        "USAGE",
        &["  mini-agent tasks add|list|status|show|run|reset  work through a task list unattended (tasks --help)"],
    ));
    registry.help(help(
        "EXIT CODES",
        &["  3  mini-agent tasks run stopped: a human is needed (a task is needs_human)"],
    ));
}
