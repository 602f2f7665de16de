//! Chapter 16's glue in the command line: the workspace's hooks are loaded once per run
//! (approved, trusted with `--trust-hooks`, or skipped with a warning); every session's tools
//! are wrapped with them (`app.rs`), and the task loop's events reach them too.

use mini_agent::ch02_loop::command_line::Settings;
use mini_agent::ch03_tools::Workspace;
use mini_agent::ch04_terminal::sanitize::sanitize;
use mini_agent::ch15_tasks::{TaskEvent, TaskEvents};
use mini_agent::ch16_hooks::approval::{ApprovalStore, ask_on_tty};
use mini_agent::ch16_hooks::{HookLog, Hooks, TRUST_HOOKS, load_hooks};
use std::io::IsTerminal;
use std::path::Path;

// ANCHOR: load
/// The hooks of `root` for this run; none (with a warning on stderr) when they may not run.
/// A person at the terminal is asked to approve the file, unless a program reads (`--json`).
pub fn load(root: &Path, settings: &Settings) -> Hooks {
    let (trusted, can_ask) =
        (settings.has(&TRUST_HOOKS), std::io::stdin().is_terminal() && !super::json_wanted(settings));
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
