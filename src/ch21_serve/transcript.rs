//! A session's journal as the console draws it: the records, turned into the events a live
//! stream sends.
//!
//! The console has one way to draw a session: events (`assistant`, `tool_started`,
//! `tool_finished`, `notice`). A live turn sends them as they happen; a session opened later
//! is read from its journal, and each record becomes the event it was, so both look the same.
//! The journal is the whole story and may be long, so what is sent is bounded: the newest
//! [`MAX_EVENTS`] events, each tool result cut to [`MAX_RESULT_CHARS`] (head and tail), with
//! a count of what was left out. `mini-agent -r ID` has the rest.

use crate::ch05_sessions::{Body, Record};
use crate::text::head_and_tail;
use serde_json::{Value, json};
use std::collections::HashMap;

/// The most events of a transcript sent at once: the newest.
pub const MAX_EVENTS: usize = 1_000;
/// The longest tool result a transcript carries whole.
pub const MAX_RESULT_CHARS: usize = 8_000;

/// The events of `records` (`"transcript"`) and how many older ones were left out
/// (`"omitted"`).
pub fn transcript(records: &[Record]) -> Value {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut events = Vec::new();
    for record in records {
        let event = match &record.body {
            Body::User { content } => json!({"type": "user", "text": content}),
            Body::Assistant { content, tool_calls, .. } => json!({
                "type": "assistant",
                "text": content.as_deref().filter(|text| !text.is_empty()),
                "tool_calls": tool_calls,
            }),
            Body::ToolStarted { id, name, arguments } => {
                names.insert(id, name);
                json!({"type": "tool_started", "id": id, "name": name, "arguments": arguments})
            }
            Body::ToolFinished { id, status, content } => json!({
                "type": "tool_finished", "id": id, "name": names.get(id.as_str()).copied().unwrap_or("?"),
                "status": status, "content": shortened(content),
            }),
            Body::Interrupted {} => {
                json!({"type": "notice", "kind": "interrupted", "text": "the turn was interrupted"})
            }
            Body::Error { message } => json!({"type": "notice", "kind": "error", "text": message}),
            Body::Partial { content } => json!({"type": "notice", "kind": "partial", "text": content}),
            Body::Compaction { summary, replaces, .. } => {
                json!({"type": "compaction", "replaced": replaces, "summary": summary})
            }
            Body::Retry { attempt, wait_ms, reason } => {
                json!({"type": "retry", "attempt": attempt, "wait_ms": wait_ms, "reason": reason})
            }
            // The session's origin, the system prompt, token counts and hook records are not
            // part of the conversation a person reads.
            _ => continue,
        };
        events.push(event);
    }
    let omitted = events.len().saturating_sub(MAX_EVENTS);
    json!({"transcript": events.split_off(omitted), "omitted": omitted})
}

fn shortened(content: &str) -> String {
    match head_and_tail(content, MAX_RESULT_CHARS, MAX_RESULT_CHARS / 2, MAX_RESULT_CHARS / 4) {
        Some((head, cut, tail)) => format!("{head}\n… ({cut} characters not shown) …\n{tail}"),
        None => content.to_string(),
    }
}
