//! The task loop's events (chapter 15) as hook events: the loop tells its [`TaskEvents`]
//! observers, and [`Hooks`] is one of them. A task that passed fires `TaskCompleted`, one out
//! of attempts `TaskFailed`, and the loop stopping for a person `NeedsHuman`, each with the
//! task object (and the reason) on the hook's stdin.

use super::{HookEvent, Hooks};
use crate::ch04_terminal::sanitize::sanitize;
use crate::ch15_tasks::{TaskEvent, TaskEvents};
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
    pub inner: &'a mut dyn TaskEvents,
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
}
// ANCHOR_END: with_hooks
