//! Chapter 16 — hooks: the person's own commands at fixed points of the run.
//!
//! `.mini_agent/hooks.json` has the shape Claude Code users already write: for each event
//! (`PreToolUse`, `PostToolUse`, `Stop`, `TaskCompleted`, `TaskFailed`, `NeedsHuman`) a list of
//! groups, each a `matcher` (tool names separated by `|`; empty or `*` for all) and the
//! commands to run. A command gets one JSON object on stdin and answers with its exit code:
//! 0 goes on, 2 from `PreToolUse` refuses the call with its stderr as the reason the model
//! reads, anything else is a warning. The shape of the code follows chapter 12: [`Hooked`] is
//! one more wrapper around the `Tools` seam, so the loop does not change, and the events
//! that are not tool calls (`Stop`, the task events of chapter 15) call [`Hooks::fire`].
//! Each hook that ran becomes a `hook` record in the journal (chapter 9).

pub mod approval;
mod load;
mod run;
pub mod task_approval;
mod tasks;
#[cfg(test)]
mod tests;
mod turns;

pub use load::{HOOKS_FILE, load_for_run, load_hooks};
pub use run::Ran;
pub use tasks::WithHooks;
pub use turns::{HookTurns, part};

use crate::ch02_loop::command_line::{Flag, Help};
use crate::ch02_loop::{ToolCall, ToolOutput, ToolStatus, Tools};
use crate::ch05_sessions::RegisterParts;
use crate::ch15_tasks::RegisterTaskLayers;
use crate::text::shorten;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How long a hook may run when its entry gives no `timeout` (seconds), and the most it may ask.
const DEFAULT_TIMEOUT_SECS: u64 = 60;
const MAX_TIMEOUT_SECS: u64 = 600;
/// How much of a hook's stdout or stderr the model reads.
const SHOWN_CHARS: usize = 4_000;

// ANCHOR: config
/// The events a hook can wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    Stop,
    TaskCompleted,
    TaskFailed,
    NeedsHuman,
}

/// `.mini_agent/hooks.json`: the hooks, and the other top-level keys, which a later chapter
/// may read as a [`Section`] of its own.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct HooksFile {
    #[serde(default)]
    pub hooks: BTreeMap<HookEvent, Vec<Group>>,
    #[serde(flatten)]
    pub sections: BTreeMap<String, Value>,
}

/// A key of `hooks.json` a later chapter reads, approved (or not) with the commands because it
/// too acts for the person: `summary` checks its value and says in one line what it does, for
/// the approval question (an error: the file is ignored, as for a malformed hook).
#[derive(Clone, Copy, Debug)]
pub struct Section {
    pub key: &'static str,
    pub summary: fn(&Value) -> Result<String, String>,
}
// ANCHOR_END: config

// ANCHOR: group
/// Commands for the tools `matcher` names.
#[derive(Clone, Debug, Deserialize)]
pub struct Group {
    #[serde(default)]
    pub matcher: String,
    pub hooks: Vec<HookCommand>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct HookCommand {
    #[serde(rename = "type")]
    pub kind: String,
    pub command: String,
    pub timeout: Option<u64>,
}

impl Group {
    /// `bash|write_file` matches those two tools; empty or `*` matches every tool (and the
    /// events that have no tool).
    fn matches(&self, tool: Option<&str>) -> bool {
        let matcher = self.matcher.trim();
        if matcher.is_empty() || matcher == "*" {
            return true;
        }
        tool.is_some_and(|tool| matcher.split('|').any(|name| name.trim() == tool))
    }
}
// ANCHOR_END: group

/// One hook that ran, as the journal records it.
#[derive(Clone, Debug, PartialEq)]
pub struct HookRecord {
    pub event: HookEvent,
    pub command: String,
    /// The tool call it was about, for the tool events.
    pub tool_call_id: Option<String>,
    /// `exit 0`, `blocked: …`, `timed out after 30 s`…
    pub outcome: String,
}

/// What a run shares with its hooks: the session id they are told, and the records of the
/// hooks that ran, which the session's journal takes after each turn.
#[derive(Clone, Default)]
pub struct HookLog(Arc<Mutex<(String, Vec<HookRecord>)>>);

impl HookLog {
    pub fn set_session(&self, id: &str) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).0 = id.to_string();
    }

    fn session(&self) -> String {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).0.clone()
    }

    fn push(&self, record: HookRecord) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).1.push(record);
    }

    /// The records since the last call, oldest first.
    pub fn take(&self) -> Vec<HookRecord> {
        std::mem::take(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner).1)
    }
}

/// The hooks of one workspace, ready to run.
#[derive(Clone, Default)]
pub struct Hooks {
    root: PathBuf,
    file: HooksFile,
    log: HookLog,
}

impl Hooks {
    pub fn new(root: PathBuf, file: HooksFile, log: HookLog) -> Hooks {
        Hooks { root, file, log }
    }

    /// The value of a section of the file (see [`Section`]), if the file may be obeyed and
    /// has it.
    pub fn section(&self, key: &str) -> Option<&Value> {
        self.file.sections.get(key)
    }

    /// Where the hooks that ran are kept until the journal takes them.
    pub fn log(&self) -> &HookLog {
        &self.log
    }
}

// ANCHOR: fire
impl Hooks {
    /// Runs every command for `event` whose matcher takes `tool`, in file order, each with
    /// `fields` added to the common ones on its stdin. Stops at the first `PreToolUse` hook
    /// that exits 2. Warns about the others that fail, records each.
    pub fn fire(
        &self,
        event: HookEvent,
        tool: Option<&ToolCall>,
        fields: Map<String, Value>,
    ) -> Vec<(String, Ran)> {
        let Some(groups) = self.file.hooks.get(&event) else { return Vec::new() };
        let mut input = json!({
            "session_id": self.log.session(),
            "hook_event_name": format!("{event:?}"),
            "cwd": self.root.display().to_string(),
        });
        input.as_object_mut().expect("an object").extend(fields);
        let input = input.to_string().into_bytes();
        // ANCHOR_END: fire
        // ANCHOR: fire_run
        let mut ran = Vec::new();
        let commands = groups.iter().filter(|group| group.matches(tool.map(|call| call.name.as_str())));
        for hook in commands.flat_map(|group| &group.hooks).filter(|hook| hook.kind == "command") {
            let seconds = hook.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS).clamp(1, MAX_TIMEOUT_SECS);
            let result = run::run_hook(&self.root, &hook.command, &input, Duration::from_secs(seconds));
            let blocks = event == HookEvent::PreToolUse && result.code == Some(2);
            let outcome = describe(&result, blocks);
            if !blocks && result.code != Some(0) {
                eprintln!("mini-agent: warning: {event:?} hook `{}`: {outcome}", shorten(&hook.command, 80));
            }
            let tool_call_id = tool.map(|call| call.id.clone());
            self.log.push(HookRecord { event, command: hook.command.clone(), tool_call_id, outcome });
            ran.push((hook.command.clone(), result));
            if blocks {
                break;
            }
        }
        ran
    }
}
// ANCHOR_END: fire_run

fn describe(ran: &Ran, blocked: bool) -> String {
    match (&ran.failure, ran.code) {
        (Some(failure), _) => failure.clone(),
        (None, Some(2)) if blocked => format!("blocked: {}", shorten(ran.stderr.trim(), 200)),
        (None, Some(code)) if code != 0 && !ran.stderr.trim().is_empty() => {
            format!("exit {code}: {}", shorten(ran.stderr.trim(), 200))
        }
        (None, Some(code)) => format!("exit {code}"),
        (None, None) => "killed by a signal".to_string(),
    }
}

// ANCHOR: hooked
/// Any [`Tools`] with hooks around each call: `PreToolUse` before (exit 2 refuses the call),
/// `PostToolUse` after a call that ran (its stdout is added to what the model reads).
pub struct Hooked<T: Tools> {
    inner: T,
    hooks: Hooks,
}

impl<T: Tools> Hooked<T> {
    pub fn new(inner: T, hooks: Hooks) -> Hooked<T> {
        Hooked { inner, hooks }
    }
}
// ANCHOR_END: hooked

// ANCHOR: hooked_run
impl<T: Tools> Tools for Hooked<T> {
    fn schemas(&self) -> Vec<Value> {
        self.inner.schemas()
    }

    fn run(&mut self, call: &ToolCall) -> ToolOutput {
        let input = serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!(call.arguments));
        let mut fields = Map::new();
        fields.insert("tool_name".into(), json!(call.name));
        fields.insert("tool_input".into(), input);
        let before = self.hooks.fire(HookEvent::PreToolUse, Some(call), fields.clone());
        if let Some((command, ran)) = before.iter().find(|(_, ran)| ran.code == Some(2)) {
            let reason = shorten(ran.stderr.trim(), SHOWN_CHARS);
            let content = format!("denied by a PreToolUse hook (`{}`): {reason}", shorten(command, 80));
            return ToolOutput { content, status: ToolStatus::Denied };
        }
        // ANCHOR_END: hooked_run
        // ANCHOR: hooked_post
        let mut output = self.inner.run(call);
        if matches!(output.status, ToolStatus::Ok | ToolStatus::Error) {
            fields
                .insert("tool_response".into(), json!({"content": output.content, "status": output.status}));
            for (command, ran) in self.hooks.fire(HookEvent::PostToolUse, Some(call), fields) {
                let added = ran.stdout.trim();
                if ran.code == Some(0) && !added.is_empty() {
                    let added = shorten(added, SHOWN_CHARS);
                    output
                        .content
                        .push_str(&format!("\n\n[PostToolUse hook `{}`]\n{added}", shorten(&command, 80)));
                }
            }
        }
        output
    }
}
// ANCHOR_END: hooked_post
/// `--trust-hooks` runs the workspace's hooks for this run without asking; `tasks run
/// --trust-tasks` does the same for the task list's verify commands.
pub const TRUST_HOOKS: Flag =
    Flag::switch(16, "--trust-hooks", &["run the workspace's hooks for this run without asking"]);
pub const TRUST_TASKS: Flag = Flag::switch(16, "--trust-tasks", &[]).of("tasks run");

/// Chapter 16's command line: its two flags, its help, its part in every session and its
/// layer of the task loop.
pub fn register(registry: &mut (impl RegisterParts + RegisterTaskLayers)) {
    registry.part("hooks", |run| Ok(part(run, &[])));
    registry.flag(TRUST_HOOKS);
    registry.flag(TRUST_TASKS);
    registry.task_layer(tasks::layer);
    registry.task_added(task_approval::approve_added);
    registry.help(Help {
        chapter: 16,
        page: "",
        section: "HOOKS",
        lines: &[
            "  .mini_agent/hooks.json runs your commands before and after tool calls and when a turn",
            "  stops (PreToolUse exit 2 refuses the call). Its commands run only once you approved the",
            "  file's exact contents at the terminal (remembered in ~/.config/mini-agent/approved), or",
            "  for one run with --trust-hooks.",
        ],
    });
    registry.help(Help {
        chapter: 16,
        page: "tasks",
        section: "VERIFY COMMANDS",
        lines: &[
            "  A verify command is the workspace's, so the harness runs one only once it is approved:",
            "  tasks add --verify CMD approves what you typed; at a terminal, tasks run asks about any",
            "  other (a list you wrote by hand, or one a cloned repository came with). With nobody to",
            "  ask, tasks run stops before the first attempt unless --trust-tasks trusts the list for",
            "  this run.",
        ],
    });
}
