//! Chapter 16 — a task's verify command is a command the workspace supplies.
//!
//! Chapter 15's harness runs each task's `verify_command` itself, with no permission question:
//! the person who wrote the list chose it. But a task list is a file in the workspace, and a
//! cloned repository can hold one (`.mini_agent/tasks.json`, Agent-Loop's
//! `.agent/feature_list.json`). Typing `tasks run` there would run whatever its author wrote,
//! before the model did anything, and a `--tasks` file outside `.mini_agent/` can even be
//! rewritten by the model's `write_file`: a model without `--allow-shell` could get a command
//! run that way. So verify commands follow the rule of hooks and MCP servers: each runs only
//! once approved (its exact text, for this task file) or under `--trust-tasks`.
//!
//! Approving is what the person does anyway: `tasks add --verify CMD` approves the command
//! it adds, since they typed it; at a terminal `tasks run` asks once about the others. With
//! nobody to ask, `tasks run` refuses before the first attempt and names the flag; and a
//! command that changes during the run is not run but reported as the attempt's failure.

use crate::ch02_loop::Error;
use crate::ch04_terminal::sanitize::sanitize_command;
use crate::ch15_tasks::verify::{Verdict, Verifier};
use crate::ch15_tasks::{Task, TaskFile, TaskStatus};
use crate::ch16_hooks::approval::{ApprovalStore, Ask, approval_key, ask_on_tty, shown_word};
use std::path::{Path, PathBuf};

/// The flag that trusts a task list's verify commands for one run.
pub const TRUST_FLAG: &str = "--trust-tasks";

fn key(tasks: &Path, command: &str) -> String {
    approval_key("task verify command", tasks, command.as_bytes())
}

/// Remembers `command` as approved for the task list at `tasks` (`tasks add --verify`).
pub fn approve(store: Option<&ApprovalStore>, tasks: &Path, command: &str) -> std::io::Result<()> {
    store.map_or(Ok(()), |store| store.remember(&key(tasks, command)))
}

/// When a person adds a task (`tasks add --verify CMD`, the service): they typed its verify
/// command, so it is approved for this task list. A store that cannot be written is a warning.
pub fn approve_added(tasks: &Path, task: &Task) {
    let Some(command) = &task.verify_command else { return };
    if let Err(error) = approve(ApprovalStore::user().as_ref(), tasks, command) {
        eprintln!("mini-agent: warning: the verify command's approval could not be remembered: {error}");
    }
}

// ANCHOR: check
/// Before `tasks run`: the verify commands of the tasks that may be attempted must be
/// trusted, approved before, or approved now by the person at the terminal. Returns the
/// commands approved for this run; an error that names [`TRUST_FLAG`] otherwise.
pub fn check(
    tasks: &Path,
    list: &[Task],
    trusted: bool,
    store: Option<&ApprovalStore>,
    ask: Option<Ask>,
) -> Result<Vec<String>, String> {
    let mut waiting: Vec<&str> = list
        .iter()
        .filter(|t| matches!(t.status, TaskStatus::Pending | TaskStatus::InProgress))
        .filter_map(|t| t.verify_command.as_deref().filter(|c| !c.trim().is_empty()))
        .collect();
    waiting.sort_unstable();
    waiting.dedup();
    let approved = |command: &&str| store.is_some_and(|store| store.contains(&key(tasks, command)));
    let new: Vec<&str> = waiting.iter().copied().filter(|command| !approved(command)).collect();
    if trusted || new.is_empty() {
        return Ok(waiting.iter().map(|c| c.to_string()).collect());
    }
    // ANCHOR_END: check
    // ANCHOR: check_ask
    let shown: Vec<String> = new.iter().map(|c| format!("  {}", sanitize_command(c))).collect();
    let refused = |why: &str| {
        format!(
            "{} not run: {why}; approve them at a terminal, or pass {TRUST_FLAG} to trust them for this run:\n{}",
            crate::text::plural(new.len(), "verify command"),
            shown.join("\n")
        )
    };
    let Some(ask) = ask else { return Err(refused("nobody at a terminal approved them")) };
    let question = format!(
        "{} wants the harness to run these verify commands:\n{}\nrun them? [y] yes, and remember  [n] no: ",
        shown_word(&tasks.to_string_lossy()),
        shown.join("\n")
    );
    match ask(&question).map(|line| line.trim().to_lowercase()).as_deref() {
        Some("y" | "yes") => {
            for command in &new {
                if let Err(error) = approve(store, tasks, command) {
                    eprintln!("mini-agent: warning: the approval could not be remembered: {error}");
                }
            }
            Ok(waiting.iter().map(|c| c.to_string()).collect())
        }
        _ => Err(refused("not approved")),
    }
}
// ANCHOR_END: check_ask

// ANCHOR: approved_only
/// The harness's verifier, running only the commands approved for this run: the task list is
/// read afresh every iteration, and a command that changed since the start is not run.
pub struct ApprovedOnly<'a> {
    pub inner: Box<dyn Verifier + 'a>,
    pub tasks: PathBuf,
    pub trusted: bool,
    /// What [`check`] approved (or found approved) at the start.
    pub approved: Vec<String>,
}

impl Verifier for ApprovedOnly<'_> {
    fn verify(&mut self, command: &str) -> Verdict {
        if self.trusted || self.approved.iter().any(|approved| approved == command) {
            return self.inner.verify(command);
        }
        Verdict::Failed(format!(
            "the verify command `{}` was not run: it is not one approved when tasks run started (the \
             task list changed); look at {}, then run tasks run again at a terminal or with {TRUST_FLAG}",
            sanitize_command(command),
            self.tasks.display()
        ))
    }
}
// ANCHOR_END: approved_only

/// The harness's verifier for one `tasks run`: it runs only verify commands the person approved
/// (or `trusted`, `--trust-tasks`), asking at the terminal when `can_ask` and the list holds
/// others.
pub fn approved_only<'a>(
    verifier: Box<dyn Verifier + 'a>,
    path: &Path,
    trusted: bool,
    can_ask: bool,
) -> Result<ApprovedOnly<'a>, Error> {
    let store = ApprovalStore::user();
    let mut tty = ask_on_tty;
    let ask: Option<Ask> = if can_ask { Some(&mut tty) } else { None };
    let list = TaskFile::load(path)?.tasks;
    let approved = check(path, &list, trusted, store.as_ref(), ask).map_err(Error::Usage)?;
    Ok(ApprovedOnly { inner: verifier, tasks: path.to_path_buf(), trusted, approved })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_shows_the_task_lists_path_escaped() {
        // The workspace is wherever the person ran the agent; a directory a clone named with an
        // escape sequence must not hide or recolour the question.
        let tasks = Path::new("/work/\u{1b}[8mhidden/.mini_agent/tasks.json");
        let task: Task = serde_json::from_value(serde_json::json!(
            {"id": "1", "name": "x", "status": "pending", "verify_command": "cargo test"}
        ))
        .expect("a task");
        let mut asked = String::new();
        let mut no = |question: &str| {
            asked = question.to_string();
            Some("n".to_string())
        };
        assert!(check(tasks, &[task], false, None, Some(&mut no)).is_err());
        assert!(asked.contains("cargo test") && !asked.contains('\u{1b}'), "{asked:?}");
    }
}
