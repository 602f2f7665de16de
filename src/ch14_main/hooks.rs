//! Chapter 16's glue in the command line: the workspace's hooks are loaded once per run
//! (approved, trusted with `--trust-hooks`, or skipped with a warning), every session's tools
//! are wrapped with them, and after each turn the `Stop` hooks run and the hooks that ran are
//! written to the journal.

use mini_agent::ch02_loop::{Outcome, ToolCall};
use mini_agent::ch03_tools::Workspace;
use mini_agent::ch04_terminal::sanitize::sanitize;
use mini_agent::ch05_sessions::Recorder;
use mini_agent::ch09_journal::Journal;
use mini_agent::ch15_tasks::{TaskEvent, TaskEvents};
use mini_agent::ch16_hooks::approval::{ApprovalStore, ask_on_tty};
use mini_agent::ch16_hooks::{HookEvent, HookLog, Hooks, load_hooks};
use serde_json::{Map, json};
use std::path::Path;

// ANCHOR: load
/// The hooks of `root` for this run; none (with a warning on stderr) when they may not run.
/// `can_ask`: a person is at the terminal to approve the file.
pub fn load(root: &Path, trusted: bool, can_ask: bool) -> Hooks {
    let Ok(workspace) = Workspace::new(root) else { return Hooks::default() };
    let store = ApprovalStore::user();
    let mut ask = ask_on_tty;
    let ask: Option<mini_agent::ch16_hooks::approval::Ask> = if can_ask { Some(&mut ask) } else { None };
    let sections = [
        #[cfg(feature = "ch17")]
        mini_agent::ch17_notify::webhook::HOOKS_SECTION,
    ];
    let (hooks, warnings) =
        load_hooks(&workspace, HookLog::default(), trusted, store.as_ref(), ask, &sections);
    for warning in warnings {
        eprintln!("mini-agent: warning: {}", sanitize(&warning));
    }
    hooks.unwrap_or_default()
}
// ANCHOR_END: load

// ANCHOR: after_turn
/// After a turn: the `Stop` hooks (unless it was interrupted), then one journal record per
/// hook that ran during the turn, in the order they ran.
pub fn after_turn(hooks: &Hooks, recorder: &mut Recorder<Journal>, outcome: &Outcome) {
    let reason = match outcome {
        Outcome::Completed(_) => Some("completed"),
        Outcome::TurnLimit => Some("turn_limit"),
        Outcome::Failed(_) => Some("failed"),
        Outcome::Interrupted => None,
    };
    if let Some(reason) = reason {
        let fields = Map::from_iter([("reason".to_string(), json!(reason))]);
        hooks.fire(HookEvent::Stop, None::<&ToolCall>, fields);
    }
    for record in hooks.log().take() {
        let event = format!("{:?}", record.event);
        let written = recorder.hook(&event, &record.command, record.tool_call_id.as_deref(), &record.outcome);
        if let Err(error) = written {
            eprintln!("mini-agent: warning: could not record a hook: {}", sanitize(&error.to_string()));
        }
    }
}
// ANCHOR_END: after_turn

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
