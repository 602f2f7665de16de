//! Chapter 19 — a whole Messages reply, read back into the loop's [`Reply`].
//!
//! The reply is a list of content blocks: `text` blocks are the answer, `tool_use` blocks the
//! calls (their `input` an object, kept as JSON text like every other call), and blocks of
//! other types (`thinking`, and whatever a later API version adds) are skipped, as the API's
//! versioning policy asks of clients. `stop_reason` is kept as the reply's finish reason:
//! `max_tokens` and `refusal` are cuts, which chapter 1 refuses to treat as an answer.
//!
//! `usage` counts the prompt in three parts: `input_tokens` after the last cache breakpoint,
//! `cache_read_input_tokens` read from the cache, `cache_creation_input_tokens` written to it.
//! The prompt is all three; the cache's part goes to `/stats`.

use crate::ch02_loop::{CacheUsage, Error, Reply, ToolCall, Usage};
use crate::ch02_model::quote;
use serde_json::Value;

// ANCHOR: parse_message
/// Reads a non-streamed reply (also what a server that ignores `stream: true` sends).
pub fn parse_message(body: &str) -> Result<Reply, Error> {
    let value: Value = serde_json::from_str(body)
        .map_err(|_| Error::Model(format!("the server's reply is not JSON: {}", quote(body))))?;
    let malformed = |what: &str| Error::Model(format!("malformed reply ({what}): {}", quote(body)));
    let Some(blocks) = value.get("content").and_then(Value::as_array) else {
        if value.get("choices").is_some() {
            return Err(Error::Model(format!(
                "the server answered in the shape of OpenAI's Chat Completions, not the Messages \
                 API: it is an OpenAI-compatible server; drop --api anthropic: {}",
                quote(body)
            )));
        }
        return Err(malformed("the reply has no content list"));
    };
    let (mut text, mut tool_calls) = (String::new(), Vec::new());
    for (index, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or_default()),
            Some("tool_use") => {
                tool_calls.push(tool_use(index, block).ok_or_else(|| malformed("a tool_use"))?)
            }
            Some(_) => {} // thinking, and block types a later version adds
            None => return Err(malformed("a content block has no type")),
        }
    }
    let finish_reason = match value.get("stop_reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(reason)) => Some(reason.clone()),
        Some(_) => return Err(malformed("stop_reason is not a string")),
    };
    let (usage, cache) = value.get("usage").map(parse_usage).unwrap_or_default();
    let content = (!text.is_empty()).then_some(text);
    Ok(Reply { content, tool_calls, usage, finish_reason, cache })
}
// ANCHOR_END: parse_message

/// One `tool_use` block: a non-empty name, an id (numbered when missing), `input` kept as text.
pub(super) fn tool_use(index: usize, block: &Value) -> Option<ToolCall> {
    let name = block.get("name").and_then(Value::as_str).filter(|n| !n.is_empty())?;
    let id = match block.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => format!("toolu_{index}"),
    };
    let arguments = match block.get("input") {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(input) => input.to_string(),
    };
    Some(ToolCall { id, name: name.to_owned(), arguments })
}

// ANCHOR: usage
/// The prompt is what was read from the cache, what was written to it, and the rest.
pub fn parse_usage(usage: &Value) -> (Option<Usage>, CacheUsage) {
    let count = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
    let cache =
        CacheUsage { read: count("cache_read_input_tokens"), written: count("cache_creation_input_tokens") };
    let Some(input) = usage.get("input_tokens").and_then(Value::as_u64) else { return (None, cache) };
    let prompt_tokens = input + cache.read + cache.written;
    (Some(Usage { prompt_tokens, completion_tokens: count("output_tokens") }), cache)
}
// ANCHOR_END: usage
