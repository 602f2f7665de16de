//! The task loop's events (chapter 15) as hook events: the loop tells its [`TaskEvents`]
//! observers, and [`Hooks`] is one of them. A task that passed fires `TaskCompleted`, one out
//! of attempts `TaskFailed`, and the loop stopping for a person `NeedsHuman`, each with the
//! task object (and the reason) on the hook's stdin. This chapter's [`layer`] of the loop puts
//! them beside the screen, and the approval of verify commands around the verifier.

use super::task_approval::approved_only;
use super::{HookEvent, Hooks, TRUST_TASKS};
use crate::ch02_loop::Error;
use crate::ch04_terminal::sanitize::sanitize;
use crate::ch05_sessions::Parts;
use crate::ch15_tasks::verify::Verifier;
use crate::ch15_tasks::{TaskEvent, TaskEvents, TaskLayer, TaskRun, shared};
use serde_json::{Map, json};

// ANCHOR: task_events
impl TaskEvents for Hooks {
    fn event(&mut self, event: TaskEvent<'_>) {
        let (hook_event, task, reason) = match event {
            TaskEvent::Completed { task, .. } => (HookEvent::TaskCompleted, task, None),
            TaskEvent::Failed { task } => (HookEvent::TaskFailed, task, None),
            TaskEvent::NeedsHuman { task, reason } => (HookEvent::NeedsHuman, task, Some(reason)),
            TaskEvent::Started { .. } | TaskEvent::AttemptFailed { .. } | TaskEvent::SetAside { .. } => {
                return;
            }
        };
        let mut fields = Map::from_iter([("task".to_string(), json!(task))]);
        if let Some(reason) = reason {
            fields.insert("reason".into(), json!(reason));
        }
        self.fire(hook_event, None, fields);
    }
}
// ANCHOR_END: task_events

// ANCHOR: with_hooks
/// The task loop's observer with the hooks beside it. A task event comes between sessions, so
/// its hooks have no journal to go to: each is reported on stderr instead.
pub struct WithHooks<'a> {
    pub inner: Box<dyn TaskEvents + 'a>,
    pub hooks: Hooks,
}

impl TaskEvents for WithHooks<'_> {
    fn event(&mut self, event: TaskEvent<'_>) {
        self.inner.event(event);
        self.hooks.event(event);
        for record in self.hooks.log().take() {
            let line = format!("{:?} hook `{}`: {}", record.event, record.command, record.outcome);
            eprintln!("mini-agent: {}", sanitize(&line));
        }
    }

    fn run_ended(&mut self) {
        self.inner.run_ended();
    }
}
// ANCHOR_END: with_hooks

// ANCHOR: layer
/// This chapter's layer of `tasks run`: the verifier runs only the commands a person approved
/// (or `--trust-tasks`), asking at the terminal before the first attempt when one is there;
/// the observer fires the task hooks of the run (the hooks its sessions have, approved once).
pub fn layer<'a>(run: &TaskRun<'a>) -> Result<Box<dyn TaskLayer + 'a>, Error> {
    Ok(Box::new(TaskHooks(*run)))
}

struct TaskHooks<'a>(TaskRun<'a>);

impl TaskLayer for TaskHooks<'_> {
    fn verifier<'v>(
        &mut self,
        inner: Box<dyn Verifier + 'v>,
        _: &Parts,
    ) -> Result<Box<dyn Verifier + 'v>, Error> {
        let TaskRun { tasks, extra, can_ask, .. } = self.0;
        Ok(Box::new(approved_only(inner, tasks, extra.has(&TRUST_TASKS), can_ask)?))
    }

    fn events<'v>(
        &mut self,
        inner: Box<dyn TaskEvents + 'v>,
        parts: &Parts,
    ) -> Result<Box<dyn TaskEvents + 'v>, Error> {
        Ok(Box::new(WithHooks { inner, hooks: shared::<Hooks>(parts)?.clone() }))
    }
}
// ANCHOR_END: layer
