//! Reading `.mini_agent/hooks.json`: through chapter 3's confined reads (a symlink out of the
//! workspace, a FIFO or a huge file is refused), parsed strictly enough to name what is wrong,
//! and obeyed only under the rule of `ch16_approval`: its exact contents approved by the person
//! at the terminal, or `--trust-hooks` for this run.

use super::{HookEvent, HookLog, Hooks, HooksFile, Section};
use crate::ch03_tools::Workspace;
use crate::ch04_terminal::sanitize::{sanitize, sanitize_command};
use crate::ch16_hooks::approval::{ApprovalStore, Ask, Decision, Request, ask_on_tty, decide, shown_word};
use std::path::Path;

/// Where the workspace keeps its hooks.
pub const HOOKS_FILE: &str = ".mini_agent/hooks.json";
/// A hooks file is a few commands; a larger one is refused rather than read.
const HOOKS_MAX_BYTES: usize = 256 * 1024;

// ANCHOR: load_hooks
/// The workspace's hooks, if it has any and they may run, with the warnings to show
/// (`trusted` is `--trust-hooks`; `ask` reaches the person at the terminal, if any;
/// `sections` are the keys later chapters read, approved with the commands).
pub fn load_hooks(
    workspace: &Workspace,
    log: HookLog,
    trusted: bool,
    store: Option<&ApprovalStore>,
    ask: Option<Ask>,
    sections: &[Section],
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
    let summary = match summary(&file, sections) {
        Ok(summary) => summary,
        Err(error) => return (None, vec![format!("{HOOKS_FILE} ignored: {error}")]),
    };
    if summary.is_empty() {
        return (None, Vec::new());
    }
    // ANCHOR_END: load_hooks
    // ANCHOR: load_hooks_trust
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

/// One line per command, as the approval question shows them: every word from the file
/// made safe to show (a matcher could otherwise hide the command after it); then a line per
/// section a later chapter reads. Empty: the file asks nothing.
fn summary(file: &HooksFile, sections: &[Section]) -> Result<String, String> {
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
    for section in sections {
        if let Some(value) = file.sections.get(section.key) {
            lines.push(format!("  {}: {}", section.key, (section.summary)(value)?));
        }
    }
    Ok(lines.join("\n"))
}

fn name(event: HookEvent) -> String {
    format!("{event:?}")
}

// ANCHOR: load
/// The hooks of `root` for one run of the command line; none (with a warning on stderr) when
/// they may not run. `trusted` is `--trust-hooks`; `can_ask` says a person is at the terminal
/// to approve the file (and no program reads the output); `sections` are the keys later
/// chapters read (chapter 17's `webhook`).
pub fn load_for_run(root: &Path, trusted: bool, can_ask: bool, sections: &[Section]) -> Hooks {
    let Ok(workspace) = Workspace::new(root) else { return Hooks::default() };
    let store = ApprovalStore::user();
    let mut ask = ask_on_tty;
    let ask: Option<Ask> = if can_ask { Some(&mut ask) } else { None };
    let (hooks, warnings) =
        load_hooks(&workspace, HookLog::default(), trusted, store.as_ref(), ask, sections);
    for warning in warnings {
        eprintln!("mini-agent: warning: {}", sanitize(&warning));
    }
    hooks.unwrap_or_default()
}
// ANCHOR_END: load
