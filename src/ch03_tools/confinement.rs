//! Chapter 3 — the seam for an operating-system sandbox.
//!
//! The file tools are confined by this chapter, path by path. `bash` cannot be: a command
//! names any path, opens any socket, signals any process of the user, and only the kernel can
//! stop that. How is chapter 20's subject; this file is the hook it plugs into. A
//! [`Confinement`] given to the [`Workspace`](super::Workspace) prepares every shell command
//! the workspace starts — the model's `bash` and the harness's verify command (chapter 15's
//! `run_command`) — reads what each one printed, and recognises the processes it started.
//! Without one (the default, and every chapter's state before chapter 20) a command runs with
//! all the rights of the user.
//!
//! Hooks and MCP servers (chapters 16 and 18) do not start through the workspace: they are
//! programs the person approved, and they stay unconfined.

use std::process::Command;

// ANCHOR: confinement
/// Something that confines the shell commands a [`Workspace`](super::Workspace) starts.
pub trait Confinement: Send + Sync {
    /// Prepares `command` (program, arguments, directory and output already set) to start
    /// confined: its environment, and a `pre_exec` hook that confines the child between fork
    /// and exec. An `Err` means the command must not run; the message says why, to the model.
    fn confine(&self, command: &mut Command) -> Result<(), String>;

    /// One line to append to a command's result when its output suggests the confinement
    /// stopped it (a refused write or connection), saying how the person can lift it.
    fn explain(&self, output: &str) -> Option<String>;

    /// Whether process `pid` was started inside this confinement, by a mark it cannot remove.
    /// The reaper uses it beside its environment mark, which `env -i` clears.
    fn started_inside(&self, pid: i32) -> bool;

    /// How a command will run, in a few words, for the person asked to allow it
    /// (`sandbox: workspace, no network`).
    fn describe(&self) -> String;

    /// Called once a command has ended and its processes are gone: what it left that the
    /// confinement could not prevent, undone or reported, in one line appended to the result
    /// (the person is told too). `None` when there is nothing to say.
    fn after_command(&self) -> Option<String>;
}
// ANCHOR_END: confinement
