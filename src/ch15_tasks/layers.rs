//! The task loop's layers: what later chapters add around its seams, registered.
//!
//! `tasks run` hands the loop a [`Verifier`] and a [`TaskEvents`] observer. Later chapters
//! wrap them: chapter 16 runs only the verify commands a person approved and fires the task
//! hooks, chapter 17 sends the webhook and writes the metrics, chapter 20 confines the
//! verify commands. Each hands over a constructor of its [`TaskLayer`] in its `register`
//! function; the command line builds them when a run starts and folds them in chapter order
//! (the order they registered in), so it names no chapter after this one. Every method has a
//! default that leaves its seam as it was: a layer says only what it adds.

use super::file::Task;
use super::run::TaskEvents;
use super::verify::Verifier;
use crate::ch02_loop::Error;
use crate::ch02_loop::command_line::{Registry, Settings};
use crate::ch03_tools::Workspace;
use crate::ch03_tools::secrets::Keys;
use crate::ch05_sessions::Parts;
use crate::ch05_sessions::parts::RunPart;
use crate::ch07_context::Stats;
use std::path::Path;

// ANCHOR: layer
/// A chapter's layer of the task loop, built when a run starts. The command line calls each
/// method once, on every layer in chapter order, at the point of the run its comment names,
/// with the run's parts (chapter 5), which a layer shares with the sessions ([`shared`]).
pub trait TaskLayer {
    /// A file of the harness that no task's commit may hold (chapter 17's metrics file); asked
    /// before git is opened.
    fn harness_file(&self) -> Option<&Path> {
        None
    }
    /// The workspace verify commands run in (chapter 20 confines it).
    fn workspace(&mut self, workspace: Workspace, _parts: &Parts) -> Result<Workspace, Error> {
        Ok(workspace)
    }
    /// The verifier, wrapped (chapter 16 runs only approved commands).
    fn verifier<'v>(
        &mut self,
        inner: Box<dyn Verifier + 'v>,
        _parts: &Parts,
    ) -> Result<Box<dyn Verifier + 'v>, Error> {
        Ok(inner)
    }
    /// The loop's observer, wrapped: the screen first, then each chapter's (16's hooks, 17's
    /// notifications).
    fn events<'v>(
        &mut self,
        inner: Box<dyn TaskEvents + 'v>,
        _parts: &Parts,
    ) -> Result<Box<dyn TaskEvents + 'v>, Error> {
        Ok(inner)
    }
    /// After each attempt's session, what it counted (chapter 17 adds its tokens to the metrics).
    fn attempt_ended(&self, _stats: &Stats) {}
}
// ANCHOR_END: layer

// ANCHOR: register
/// One `tasks run`, as its layers are built from it.
#[derive(Clone, Copy)]
pub struct TaskRun<'a> {
    pub root: &'a Path,
    /// The task list.
    pub tasks: &'a Path,
    /// The agent's own flags (the model, permissions, `--sandbox`…).
    pub settings: &'a Settings,
    /// The flags of `tasks run` itself (`--trust-tasks`, `--webhook`…).
    pub extra: &'a Settings,
    /// The secrets taken out of the environment at start-up.
    pub keys: &'a Keys,
    /// Whether a person is at the terminal to answer a question.
    pub can_ask: bool,
    /// How the command line says a line on stderr (sanitised, secrets redacted).
    pub say: fn(&str),
}

/// What a chapter registers: its layer, built from the run.
pub type NewTaskLayer = for<'a> fn(&TaskRun<'a>) -> Result<Box<dyn TaskLayer + 'a>, Error>;

/// What a chapter does when a person adds a task to the list at `tasks` (`tasks add`, the
/// service): chapter 16 remembers its verify command as approved, since the person typed it.
pub type TaskAdded = fn(tasks: &Path, task: &Task);

/// Where the chapters hand over their layers of the task loop.
pub trait RegisterTaskLayers: Registry {
    fn task_layer(&mut self, layer: NewTaskLayer);
    fn task_added(&mut self, added: TaskAdded);
}
// ANCHOR_END: register

/// What the chapters registered for the task loop, in chapter order.
#[derive(Default)]
pub struct TaskLayers {
    pub layers: Vec<NewTaskLayer>,
    pub added: Vec<TaskAdded>,
}

/// The run's part of type `P` (chapter 16's hooks, chapter 20's sandbox): made once for the
/// run, shared by its sessions and its task loop. An error names it when the run has none.
pub fn shared<P: RunPart + 'static>(parts: &Parts) -> Result<&P, Error> {
    parts.find::<P>().ok_or_else(|| {
        Error::Config(format!(
            "the run has no {} for the task loop to share; its chapter must register it",
            std::any::type_name::<P>()
        ))
    })
}
