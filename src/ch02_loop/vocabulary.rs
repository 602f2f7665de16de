//! Chapter 2 — the vocabulary the loop speaks: the conversation ([`Message`], [`ToolCall`]),
//! what a tool produced ([`ToolOutput`]), and one model call's request and reply. Plain data,
//! serialisable as the wire and the session files need it; nothing here acts.

use serde::{Deserialize, Serialize};
use serde_json::Value;

// ANCHOR: messages
/// One entry of the conversation, in the order the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System { content: String },
    User { content: String },
    Assistant { content: Option<String>, tool_calls: Vec<ToolCall> },
    Tool { tool_call_id: String, content: String },
}

/// A request from the model to run one tool. `arguments` is the JSON text as the model
/// wrote it: it is parsed (and may be invalid) only when the tool runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}
// ANCHOR_END: messages

// ANCHOR: tool_output
/// What a tool run produced: the text the model will read, and how it ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub content: String,
    pub status: ToolStatus,
}

/// How a tool call ended. One list in every state: the journal records it, and a state reads
/// journals a later one wrote. The loop makes `Ok`, `Error` and `Interrupted`; chapter 12's
/// gate `Denied`, chapter 10's recovery `NotRun` and `Unknown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Error,
    /// The permission gate refused the call (chapter 12).
    Denied,
    Interrupted,
    /// Recovery answers a call that never started (chapter 10).
    NotRun,
    /// Recovery answers a call that started and never finished (chapter 10).
    Unknown,
}
// ANCHOR_END: tool_output

// ANCHOR: request_reply
/// What one model call is asked: the whole conversation and the tool schemas.
pub struct Request<'a> {
    pub messages: &'a [Message],
    pub tools: &'a [Value],
}

/// What one model call answered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    /// Why the model stopped (`stop`, `tool_calls`, `length`…), when the server said.
    pub finish_reason: Option<String>,
    /// What the server's prompt cache did; zero from a server that does not say.
    pub cache: CacheUsage,
}

impl Reply {
    /// `Some(reason)` when the model stopped before it finished (the output limit, a content
    /// filter): not an answer, and its tool calls may be cut in the middle of their arguments.
    pub(crate) fn cut_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref().filter(|reason| CUT_REASONS.contains(reason))
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}
// ANCHOR_END: request_reply

/// The finish reasons of a cut reply, as servers say them: Chat Completions' `length` and
/// `content_filter`, the Messages API's `max_tokens` and `refusal` (chapter 19). The loop is
/// the one place that decides a reply is not an answer, for every client.
const CUT_REASONS: &[&str] = &["length", "content_filter", "max_tokens", "refusal"];

/// A reply's `cache`: prompt tokens read from the server's prompt cache, and written to it.
/// Chapter 2's client reads only the totals; chapter 19's Messages API says both, and
/// `/stats` (chapter 7) shows them once they are not zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUsage {
    pub read: u64,
    pub written: u64,
}

/// `bash cargo test`, `read_file src/main.rs`, `list_files .`: a tool call as a person reads
/// it, for progress lines and `--status` alike. The argument that says what the call does,
/// on one line (`…` marks what was cut); the screen's sanitiser (chapter 4) shows control
/// characters when it is printed.
pub fn describe_call(call: &ToolCall) -> String {
    let arguments: serde_json::Map<String, Value> = serde_json::from_str(&call.arguments).unwrap_or_default();
    let text = |key: &str| arguments.get(key).and_then(Value::as_str).filter(|value| !value.is_empty());
    let what = match call.name.as_str() {
        "list_files" => {
            [text("path").or(Some(".")), text("pattern")].into_iter().flatten().collect::<Vec<_>>().join(" ")
        }
        "search" => match (text("pattern"), text("path")) {
            (Some(pattern), Some(path)) => format!("{pattern} in {path}"),
            (pattern, _) => pattern.unwrap_or_default().to_string(),
        },
        _ => match ["command", "path", "pattern", "name"].iter().find_map(|key| text(key)) {
            Some(value) => value.to_string(),
            None if arguments.is_empty() => String::new(),
            None => call.arguments.clone(),
        },
    };
    let shown = crate::text::first_line(&what, 80);
    if shown.is_empty() { call.name.clone() } else { format!("{} {shown}", call.name) }
}

pub use crate::text::plural;
