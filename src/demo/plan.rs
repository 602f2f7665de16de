//! The demo's plan: from the user's last message and the tool results since, the next
//! tool call or the final answer. A pure function of the conversation, so the same request
//! always gets the same reply, and failures are judged only by the text a model would see.

use super::CAPABILITIES;
use super::bash::{bash_command, bash_outcome, replace_command};
use super::parse::parse_intent;
use crate::text::plural;
use serde_json::{Value, json};

// ANCHOR: intent
/// What the user asked for, as far as the rules can tell.
#[derive(Clone, Debug, PartialEq)]
pub enum Intent {
    Write { path: String, content: String },
    Read { path: String },
    List { path: Option<String> },
    Search { pattern: String, path: Option<String> },
    Run { command: String },
    Replace { path: String, old: String, new: String },
    Unknown,
}

/// One tool call made since the user's message, and the result that came back.
pub(super) struct Round {
    name: String,
    result: String,
}

pub(super) enum Action {
    Call(&'static str, Value),
    Answer(String),
}
// ANCHOR_END: intent

// ANCHOR: demo_message
/// The assistant message that answers this conversation; with `bash_only`, the tool calls
/// are shell commands (the request offered no other tool).
pub fn demo_message(messages: &[Value], bash_only: bool) -> Value {
    // Ids must be unique in the conversation: count every tool call made so far.
    let calls_so_far: usize =
        messages.iter().filter_map(|m| m["tool_calls"].as_array()).map(|calls| calls.len()).sum();
    let Some(user_index) = messages.iter().rposition(|m| m["role"] == "user") else {
        return json!({"role": "assistant", "content": CAPABILITIES});
    };
    let intent = parse_intent(request_of(&message_text(&messages[user_index])));
    let rounds = rounds_since(&messages[user_index + 1..]);
    match next_action(&intent, &rounds, bash_only) {
        Action::Call(name, arguments) => json!({
            "role": "assistant", "content": null,
            "tool_calls": [{"id": format!("call_{calls_so_far}"), "type": "function",
                            "function": {"name": name, "arguments": arguments.to_string()}}]
        }),
        Action::Answer(text) => json!({"role": "assistant", "content": text}),
    }
}
// ANCHOR_END: demo_message

/// The request in a message: the whole text, or, in a task loop's prompt (a template that
/// wraps the task in instructions), what its `Task:` line says.
pub(super) fn request_of(text: &str) -> &str {
    text.lines().find_map(|line| line.strip_prefix("Task:")).map(str::trim).unwrap_or(text)
}

// ANCHOR: plan
/// The plan: the first tool call for a fresh request, then what to do with each result.
pub(super) fn next_action(intent: &Intent, rounds: &[Round], bash_only: bool) -> Action {
    let Some(last) = rounds.last() else { return first_call(intent, bash_only) };
    let (failure, result) = match bash_only {
        true => bash_outcome(intent, &last.result),
        false => (failure_line(&last.name, &last.result), last.result.trim_end()),
    };
    let answer = match (intent, failure) {
        (Intent::Replace { path, old, new }, None)
            if rounds.len() == 1 && (bash_only || last.name == "read_file") =>
        {
            let found = result.matches(old.as_str()).count();
            if found == 0 {
                format!("I read `{path}` but it does not contain \"{old}\", so I changed nothing.")
            } else if bash_only {
                return Action::Call("bash", json!({"command": replace_command(path, old, new)}));
            } else {
                let mut arguments = json!({"path": path, "old_string": old, "new_string": new});
                if found > 1 {
                    arguments["replace_all"] = Value::Bool(true);
                }
                return Action::Call("edit_file", arguments);
            }
        }
        (_, Some(line)) => format!("I could not {}: `{}` answered “{line}”.", describe(intent), last.name),
        (Intent::Write { path, content }, None) => {
            format!("Wrote `{path}` ({}).", plural(content.len(), "byte"))
        }
        (Intent::Read { path }, None) => format!("Here is `{path}`:\n\n```\n{result}\n```"),
        (Intent::List { path }, None) => {
            format!("Files in `{}`:\n\n```\n{result}\n```", path.as_deref().unwrap_or("."))
        }
        (Intent::Search { pattern, .. }, None) if result.is_empty() => {
            format!("No matches for \"{pattern}\".")
        }
        (Intent::Search { pattern, .. }, None) => format!("Matches for \"{pattern}\":\n\n```\n{result}\n```"),
        (Intent::Run { command }, None) => format!("Ran `{command}`. It returned:\n\n```\n{result}\n```"),
        (Intent::Replace { path, old, new }, None) => {
            format!("Replaced \"{old}\" with \"{new}\" in `{path}`.")
        }
        (Intent::Unknown, None) => CAPABILITIES.to_string(),
    };
    Action::Answer(answer)
}
// ANCHOR_END: plan

pub(super) fn first_call(intent: &Intent, bash_only: bool) -> Action {
    if bash_only {
        return match bash_command(intent) {
            Some(command) => Action::Call("bash", json!({"command": command})),
            None => Action::Answer(CAPABILITIES.to_string()),
        };
    }
    match intent {
        Intent::Write { path, content } => {
            Action::Call("write_file", json!({"path": path, "content": content}))
        }
        Intent::Read { path } | Intent::Replace { path, .. } => {
            Action::Call("read_file", json!({"path": path}))
        }
        Intent::List { path: Some(path) } => Action::Call("list_files", json!({"path": path})),
        Intent::List { path: None } => Action::Call("list_files", json!({})),
        Intent::Search { pattern, path: Some(path) } => {
            Action::Call("search", json!({"pattern": pattern, "path": path}))
        }
        Intent::Search { pattern, path: None } => Action::Call("search", json!({"pattern": pattern})),
        Intent::Run { command } => Action::Call("bash", json!({"command": command})),
        Intent::Unknown => Action::Answer(CAPABILITIES.to_string()),
    }
}

pub(super) fn describe(intent: &Intent) -> String {
    match intent {
        Intent::Write { path, .. } => format!("write `{path}`"),
        Intent::Read { path } => format!("read `{path}`"),
        Intent::List { path } => format!("list `{}`", path.as_deref().unwrap_or(".")),
        Intent::Search { pattern, .. } => format!("search for \"{pattern}\""),
        Intent::Run { command } => format!("run `{command}`"),
        Intent::Replace { old, path, .. } => format!("replace \"{old}\" in `{path}`"),
        Intent::Unknown => "do that".to_string(),
    }
}

// ANCHOR: results
/// The first line of a result that reports a failure, or `None` when the tool succeeded.
/// The demo only sees the text the model would see, so it judges by what that text says:
/// a denial, an interruption or an error message. A `bash` result is the command's own
/// output, so only the agent's words (denied, interrupted, not run) count as failure there.
pub(super) fn failure_line<'a>(tool: &str, result: &'a str) -> Option<&'a str> {
    let line = result.lines().map(str::trim).find(|l| !l.is_empty())?;
    let lower = line.to_lowercase();
    const NOT_RUN: [&str; 7] =
        ["denied", "not allowed", "interrupted", "not run", "unknown outcome", "--allow-", "refus"];
    const ERRORS: [&str; 13] = [
        "error",
        "failed",
        "no such",
        "not found",
        "no match",
        "not unique",
        "multiple",
        "cannot",
        "can't",
        "outside",
        "does not exist",
        "invalid",
        "binary file",
    ];
    // Content lines (numbered file lines, `file:line:` matches) are data, not messages.
    let is_data = line.starts_with(|c: char| c.is_ascii_digit())
        || line.split(':').nth(1).is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    let not_run = NOT_RUN.iter().any(|word| lower.contains(word));
    let error = tool != "bash" && ERRORS.iter().any(|word| lower.contains(word));
    (!is_data && (not_run || error)).then_some(line)
}
// ANCHOR_END: results

/// The tool calls made after the user's message, each with the result that answered it.
pub(super) fn rounds_since(messages: &[Value]) -> Vec<Round> {
    let mut rounds = Vec::new();
    for message in messages {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let id = &call["id"];
            let result = messages
                .iter()
                .find(|m| m["role"] == "tool" && &m["tool_call_id"] == id)
                .map(message_text)
                .unwrap_or_default();
            let name = call["function"]["name"].as_str().unwrap_or_default().to_string();
            rounds.push(Round { name, result });
        }
    }
    rounds
}

/// A message's text: `content` as a string, or the text parts of a content array.
pub(super) fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}
