//! The demo with only a shell: when a request offers just a `bash` tool (chapters 1 and 2
//! have no other), the demo plans the shell command that does what a file tool would
//! (`ls -A`, `cat -- x`, `grep -rnIF`, `printf '%s' … > x`) and reads the exit code that
//! ends the answer. Every word that comes from the user is single-quoted, so a file name or
//! a text never becomes shell syntax.

use super::plan::{Intent, failure_line};

/// Whether the request offers tools and every one of them is `bash`.
pub(super) fn offers_only_bash(request: &serde_json::Value) -> bool {
    let tools = request["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
    !tools.is_empty() && tools.iter().all(|tool| tool["function"]["name"] == "bash")
}

// ANCHOR: bash_command
/// The command that does the first step of `intent` (for a replace: reading the file).
pub(super) fn bash_command(intent: &Intent) -> Option<String> {
    Some(match intent {
        Intent::Write { path, content } => {
            let parent = path.rsplit_once('/').map(|(dir, _)| dir).filter(|dir| !dir.is_empty());
            let mkdir = parent.map(|dir| format!("mkdir -p -- {} && ", quote(dir))).unwrap_or_default();
            format!("{mkdir}printf '%s' {} > {}", quote(content), quote(path))
        }
        Intent::Read { path } | Intent::Replace { path, .. } => format!("cat -- {}", quote(path)),
        Intent::List { path: None } => "ls -A".to_string(),
        Intent::List { path: Some(path) } => format!("ls -A -- {}", quote(path)),
        Intent::Search { pattern, path } => {
            let path = path.as_deref().map(|path| format!(" {}", quote(path))).unwrap_or_default();
            format!("grep -rnIF --exclude-dir=.git -- {}{path}", quote(pattern))
        }
        Intent::Run { command } => command.clone(),
        Intent::Unknown => return None,
    })
}
// ANCHOR_END: bash_command

/// The command that replaces every `old` with `new` in `path`, literally (no patterns):
/// bash's `${text//"$old"/"$new"}` with both quoted; the `x` keeps trailing newlines.
pub(super) fn replace_command(path: &str, old: &str, new: &str) -> String {
    format!(
        "f={} old={} new={}; text=$(cat -- \"$f\"; printf x) && text=${{text%x}} && \
         printf '%s' \"${{text//\"$old\"/\"$new\"}}\" > \"$f\"",
        quote(path),
        quote(old),
        quote(new)
    )
}

/// `it's` → `'it'\''s'`: one shell word, whatever it contains.
pub(super) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A bash answer split into its output and the `exit code N` of its last line, if any.
pub(super) fn split_exit_code(result: &str) -> (&str, Option<i32>) {
    let result = result.trim_end();
    let (body, last) = result.rsplit_once('\n').unwrap_or(("", result));
    match last.strip_prefix("exit code ").and_then(|code| code.trim().parse().ok()) {
        Some(code) => (body.trim_end(), Some(code)),
        None => (result, None),
    }
}

/// For a command the demo chose in place of a file tool: the failure line (if it failed)
/// and the output to show. The exit code decides; `grep` exiting 1 with no output means
/// "no matches". Without an exit code, only the agent's own words (denied, not run) count.
pub(super) fn bash_outcome<'a>(intent: &Intent, result: &'a str) -> (Option<&'a str>, &'a str) {
    let (body, code) = split_exit_code(result);
    match code {
        _ if matches!(intent, Intent::Run { .. }) => (failure_line("bash", result), result.trim_end()),
        None => (failure_line("bash", result), body),
        Some(0) => (None, body),
        Some(1) if matches!(intent, Intent::Search { .. }) && body.is_empty() => (None, body),
        Some(_) => {
            let last = result.trim_end().lines().last().unwrap_or_default();
            (Some(body.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or(last)), body)
        }
    }
}
