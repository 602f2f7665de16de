//! Reading `.mini_agent/hooks.json`: through chapter 3's confined reads (a symlink out of the
//! workspace, a FIFO or a huge file is refused), parsed strictly enough to name what is wrong,
//! and obeyed only under the rule of `ch16_approval`: its exact contents approved by the person
//! at the terminal, or `--trust-hooks` for this run.

use super::{HookEvent, HookLog, Hooks, HooksFile};
use crate::ch03_tools::Workspace;
use crate::ch04_terminal::sanitize::sanitize_command;
use crate::ch16_hooks::approval::{ApprovalStore, Ask, Decision, Request, decide, shown_word};

/// Where the workspace keeps its hooks.
pub const HOOKS_FILE: &str = ".mini_agent/hooks.json";
/// A hooks file is a few commands; a larger one is refused rather than read.
const HOOKS_MAX_BYTES: usize = 256 * 1024;

// ANCHOR: load_hooks
/// The workspace's hooks, if it has any and they may run, with the warnings to show
/// (`trusted` is `--trust-hooks`; `ask` reaches the person at the terminal, if any).
pub fn load_hooks(
    workspace: &Workspace,
    log: HookLog,
    trusted: bool,
    store: Option<&ApprovalStore>,
    ask: Option<Ask>,
) -> (Option<Hooks>, Vec<String>) {
    let path = workspace.root().join(HOOKS_FILE);
    let text = match workspace.read_workspace_file(HOOKS_FILE, HOOKS_MAX_BYTES) {
        Ok(None) => return (None, Vec::new()),
        Ok(Some(file)) if file.cut => {
            return (None, vec![format!("{HOOKS_FILE} is larger than 256 KiB; ignored")]);
        }
        Ok(Some(file)) => file.text,
        Err(why) => return (None, vec![format!("{HOOKS_FILE} ignored: {why}")]),
    };
    let file: HooksFile = match serde_json::from_str(&text) {
        Ok(file) => file,
        Err(error) => return (None, vec![format!("{HOOKS_FILE} ignored: {error}")]),
    };
    if file.asks_nothing() {
        return (None, Vec::new());
    }
    // ANCHOR_END: load_hooks
    // ANCHOR: load_hooks_trust
    let summary = summary(&file);
    let request = Request {
        kind: "hooks",
        path: &path,
        contents: text.as_bytes(),
        summary: &summary,
        flag: "--trust-hooks",
    };
    match decide(&request, trusted, store, ask) {
        Decision::Run => (Some(Hooks::new(workspace.root().to_path_buf(), file, log)), Vec::new()),
        Decision::Skip(line) => (None, vec![line]),
    }
}
// ANCHOR_END: load_hooks_trust

impl HooksFile {
    /// No command to run (and, from chapter 17, no webhook to send data out with).
    fn asks_nothing(&self) -> bool {
        let no_commands = self.hooks.values().all(Vec::is_empty);
        #[cfg(feature = "ch17")]
        let no_commands = no_commands && self.webhook.is_none();
        no_commands
    }
}

/// One line per command, as the approval question shows them: every word from the file
/// made safe to show (a matcher could otherwise hide the command after it).
fn summary(file: &HooksFile) -> String {
    let mut lines = Vec::new();
    for (event, groups) in &file.hooks {
        for group in groups {
            for hook in &group.hooks {
                let on = if group.matcher.trim().is_empty() {
                    String::new()
                } else {
                    format!(" {}", shown_word(&group.matcher))
                };
                lines.push(format!("  {}{on}: {}", name(*event), sanitize_command(&hook.command)));
            }
        }
    }
    #[cfg(feature = "ch17")]
    if let Some(webhook) = &file.webhook {
        let events = webhook.events.as_ref().map_or("every task event".into(), |events| {
            events.iter().map(|event| shown_word(event)).collect::<Vec<_>>().join(", ")
        });
        lines.push(format!("  webhook: POST {events} to {}", sanitize_command(&webhook.url)));
    }
    lines.join("\n")
}

fn name(event: HookEvent) -> String {
    format!("{event:?}")
}
