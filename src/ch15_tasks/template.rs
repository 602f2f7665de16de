//! The prompt of one attempt: a template with `{{placeholders}}`, built in and overridable.
//!
//! A project can say how its tasks should be approached (run the linter, keep commits small)
//! in `.mini_agent/templates/task.md`. That file comes with the repository, so it is read the
//! way `AGENTS.md` is: through chapter 3's confined reader, a symlink out of the root refused,
//! regular files only, bounded. Filling it in is one pass over the template: a task whose
//! description contains `{{last_error}}` gets those characters, not the verify output, so
//! nothing a task says is expanded twice. Context files are listed for the model to read with
//! its tools, not inlined: the prompt stays small and the model reads what it needs.

use super::file::Task;
use crate::ch02_loop::Error;
use crate::ch03_tools::Workspace;

/// Where a project's own template lives, relative to the root.
pub const TEMPLATE_PATH: &str = ".mini_agent/templates/task.md";

/// A template longer than this is refused (it goes into every attempt's prompt).
const TEMPLATE_MAX_BYTES: usize = 64 * 1024;

// ANCHOR: built_in
/// The template used when the project has none.
pub const BUILT_IN_TEMPLATE: &str = "\
You are working unattended on one task of a list. Nobody will answer questions: decide, act,
and finish with a short summary of what you changed.

Task: {{name}}
Attempt: {{attempt}}

{{description}}

Files to read first:
{{context_files}}

When you stop, the harness runs this command in the workspace root; the task passes when it
exits 0. Run it yourself before you finish:
{{verify_command}}

Output of the verify command after the previous attempt:
{{last_error}}
";
// ANCHOR_END: built_in

/// The project's template, else the built-in one. A refused file (a symlink out of the root,
/// not a regular file, too large) is an error: a silent fallback would hide it.
pub fn load_template(workspace: &Workspace) -> Result<String, Error> {
    match workspace.read_workspace_file(TEMPLATE_PATH, TEMPLATE_MAX_BYTES) {
        Ok(None) => Ok(BUILT_IN_TEMPLATE.to_string()),
        Ok(Some(file)) if file.cut => Err(Error::Config(format!(
            "{TEMPLATE_PATH} is larger than {} KiB; shorten it",
            TEMPLATE_MAX_BYTES / 1024
        ))),
        Ok(Some(file)) => Ok(file.text),
        Err(problem) => Err(Error::Config(format!("the task template: {problem}"))),
    }
}

/// The text of placeholder `key` for this task and attempt; `None`: not a placeholder.
fn value(task: &Task, attempt: u32, key: &str) -> Option<String> {
    let listed = |files: &[String]| files.iter().map(|f| format!("- {f}")).collect::<Vec<_>>().join("\n");
    Some(match key {
        "id" => task.id.clone(),
        "name" => task.name.clone(),
        "description" => task.description.clone(),
        "verify_command" => task.verify_command.clone().unwrap_or_else(|| "(none)".into()),
        "context_files" if task.context_files.is_empty() => "(none)".into(),
        "context_files" => listed(&task.context_files),
        "last_error" => match (&task.last_error, &task.set_aside) {
            (None, _) => "(none: this is the first attempt)".into(),
            (Some(error), None) => error.clone(),
            (Some(error), Some(kept)) => format!(
                "{error}\n\n(That attempt's changes were set aside and the work tree put back as it found \
                 it; `git show {kept}` shows them.)"
            ),
        },
        "attempt" => attempt.to_string(),
        _ => return None,
    })
}

// ANCHOR: render
/// The template with each known `{{name}}` replaced, in one pass; unknown ones stay as written.
pub fn render(template: &str, task: &Task, attempt: u32) -> String {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let found =
            after.find("}}").and_then(|close| Some((close, value(task, attempt, after[..close].trim())?)));
        match found {
            Some((close, text)) => {
                out.push_str(&text);
                rest = &after[close + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}
// ANCHOR_END: render
