//! Chapter 19 — our history in the shape of the Messages API.
//!
//! The loop's history is Chat Completions-shaped: a system message, user and assistant
//! messages, and one `tool` message per result. The Messages API differs in four ways, each
//! handled here and nowhere else:
//!
//! * the system prompt is not a message but the request's `system` field;
//! * a tool call is a `tool_use` block of the assistant turn, with `input` a JSON *object*
//!   (our arguments are text, and text the model wrote may not parse);
//! * a tool result is a `tool_result` block of a *user* turn;
//! * turns alternate: two user turns in a row (results, then a line typed meanwhile) must be
//!   one turn of several blocks.
//!
//! Prompt caching rides on the same pass: a `cache_control` breakpoint on the system prompt and
//! one on the last block of the latest turn, so the next request reads the whole history back
//! from the cache instead of paying for it again.

use crate::ch02_loop::{Message, Request};
use serde_json::{Map, Value, json};
use std::collections::HashSet;

// ANCHOR: body
/// The JSON we POST to `/v1/messages`.
pub fn body(model: &str, max_tokens: u32, request: &Request, stream: bool) -> Vec<u8> {
    let (system, messages) = split_system(request.messages);
    let blocks = !request.tools.is_empty();
    let mut body = json!({"model": model, "max_tokens": max_tokens, "messages": turns(messages, blocks)});
    if !system.is_empty() {
        let text = system.join("\n\n");
        body["system"] = json!([{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]);
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.iter().map(tool).collect());
    }
    if stream {
        body["stream"] = json!(true);
    }
    serde_json::to_vec(&body).expect("JSON values always serialise")
}

/// The leading system messages (the system prompt), and the conversation after them.
fn split_system(messages: &[Message]) -> (Vec<&str>, &[Message]) {
    let count = messages.iter().take_while(|m| matches!(m, Message::System { .. })).count();
    let system = messages[..count]
        .iter()
        .filter_map(|m| match m {
            Message::System { content } if !content.trim().is_empty() => Some(content.as_str()),
            _ => None,
        })
        .collect();
    (system, &messages[count..])
}
// ANCHOR_END: body

// ANCHOR: turns
/// The conversation as alternating turns of content blocks, with the cache breakpoint last.
/// Without `tool_blocks` (a request that offers no tools, which the API refuses to see tool
/// blocks in), calls and results are said in text.
fn turns(messages: &[Message], tool_blocks: bool) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    // Calls whose arguments did not parse: the tool refused them, so their results are errors
    // (as are those `failures` saw fail).
    let mut unparsed: HashSet<&str> = HashSet::new();
    for message in messages {
        let (role, blocks) = match message {
            // A system message later in the history (none today) is said as the user's text.
            Message::System { content } | Message::User { content } => ("user", vec![text(content)]),
            Message::Assistant { content, tool_calls } => {
                let mut blocks: Vec<Value> = content.iter().map(|t| text(t)).collect();
                for call in tool_calls.iter().filter(|_| !tool_blocks) {
                    blocks.push(text(&format!("[called {} with {}]", call.name, call.arguments)));
                }
                for call in tool_calls.iter().filter(|_| tool_blocks) {
                    let input = serde_json::from_str::<Map<String, Value>>(&call.arguments);
                    if input.is_err() {
                        unparsed.insert(&call.id);
                    }
                    blocks.push(json!({"type": "tool_use", "id": block_id(&call.id),
                        "name": call.name, "input": input.unwrap_or_default()}));
                }
                ("assistant", blocks)
            }
            // ANCHOR_END: turns
            // ANCHOR: turns_merge
            Message::Tool { content, .. } if !tool_blocks => {
                ("user", vec![text(&format!("[the call's result]\n{}", non_empty(content)))])
            }
            Message::Tool { tool_call_id, content } => {
                let mut block = json!({"type": "tool_result", "tool_use_id": block_id(tool_call_id),
                    "content": non_empty(content)});
                if unparsed.contains(tool_call_id.as_str()) || super::failures::failed(tool_call_id) {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        let blocks: Vec<Value> = blocks.into_iter().filter(|b| b["text"] != json!("")).collect();
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ if blocks.is_empty() => {}
            _ => turns.push((role, blocks)),
        }
    }
    // ANCHOR_END: turns_merge
    // ANCHOR: turns_end
    // The API wants a user turn first, and no turn without blocks.
    turns.retain(|(_, blocks)| !blocks.is_empty());
    if turns.first().is_none_or(|(role, _)| *role != "user") {
        turns.insert(0, ("user", vec![text("(the conversation continues)")]));
    }
    // The breakpoint: everything up to here is cached for the next request.
    if let Some(block) = turns.last_mut().and_then(|(_, blocks)| blocks.last_mut()) {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    turns.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect()
}
// ANCHOR_END: turns_end

fn text(content: &str) -> Value {
    json!({"type": "text", "text": content})
}

/// A tool result may not be empty text; an empty one says so.
fn non_empty(content: &str) -> &str {
    if content.is_empty() { "(no output)" } else { content }
}

/// Block ids must match `^[a-zA-Z0-9_-]+$`; an id from another server (or a journal) may not.
/// The same id maps to the same block id, so a call and its result still meet.
pub(super) fn block_id(id: &str) -> String {
    let cleaned: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if cleaned.is_empty() { "call".into() } else { cleaned }
}

// ANCHOR: tool
/// A tool schema as chapter 3 writes it (`{"type": "function", "function": {name, description,
/// parameters}}`) in Anthropic's shape: `{name, description, input_schema}`.
fn tool(schema: &Value) -> Value {
    let function = schema.get("function").unwrap_or(schema);
    let mut tool = json!({
        "name": function.get("name").cloned().unwrap_or_default(),
        "input_schema": function.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"})),
    });
    if let Some(description) = function.get("description") {
        tool["description"] = description.clone();
    }
    tool
}
// ANCHOR_END: tool
