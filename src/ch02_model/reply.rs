//! Chapter 2 — the shape of a reply, checked field by field.
//!
//! A reply is untrusted input like any other. Servers differ in ways we tolerate: `content`
//! null or missing, `content` as a list of parts (`[{"type": "text", "text": "…"}]`, which
//! some servers send), arguments as an object instead of a string, extra fields, a missing
//! call id. Anything else — `message` a string, `content` a number, `tool_calls` an object —
//! is a malformed reply and an error that quotes the body. The one thing we never do is read
//! a field with "take it if it has the type we hoped for, else pretend it was absent": that
//! turns a reply we did not understand into an empty answer, and the run "succeeds" with
//! nothing.
//!
//! The reply also says *why* the model stopped. `finish_reason` is kept: `"length"` (the
//! output limit) and `"content_filter"` mean the text is cut, and chapter 1 refuses to treat
//! a cut reply as an answer.

use super::quote;
use crate::ch02_loop::{Error, Reply, ToolCall, Usage};
use serde_json::Value;

// ANCHOR: parse_reply
/// Reads `choices[0]`: its `message` and `finish_reason`, and the reply's `usage`. Every
/// field we use is type-checked; fields we do not use are ignored.
pub fn parse_reply(body: &str) -> Result<Reply, Error> {
    let value: Value = serde_json::from_str(body)
        .map_err(|_| Error::Model(format!("the server's reply is not JSON: {}", quote(body))))?;
    let malformed = |what: &str| Error::Model(format!("malformed reply ({what}): {}", quote(body)));
    let choice = match value.get("choices") {
        Some(Value::Array(choices)) => choices.first().ok_or_else(|| malformed("choices is empty"))?,
        Some(_) => return Err(malformed("choices is not a list")),
        // A Messages API reply (`"type": "message"` with a list of content blocks).
        None if value.get("type").and_then(Value::as_str) == Some("message") => {
            return Err(Error::Model(format!(
                "the server answered in the shape of Anthropic's Messages API, not Chat Completions \
                 (that API is reached with --api anthropic): {}",
                quote(body)
            )));
        }
        None => return Err(malformed("the reply has no choices[0].message")),
    };
    let message = match choice.get("message") {
        Some(message @ Value::Object(_)) => message,
        Some(_) => return Err(malformed("choices[0].message is not an object")),
        None => return Err(malformed("the reply has no choices[0].message")),
    };
    let content = content_text(message.get("content")).map_err(|what| malformed(&what))?;
    let tool_calls = match message.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => {
            calls.iter().enumerate().map(|(i, call)| tool_call(i, call)).collect::<Result<_, _>>()?
        }
        Some(_) => return Err(malformed("tool_calls is not a list")),
    };
    let finish_reason = match choice.get("finish_reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(reason)) => Some(reason.clone()),
        Some(_) => return Err(malformed("finish_reason is not a string")),
    };
    // Usage only feeds `/stats` and the context estimate: a strange one is ignored, never fatal.
    let usage = value.get("usage").and_then(parse_usage);
    Ok(Reply { content, tool_calls, usage, finish_reason, cache: Default::default() })
}

// ANCHOR_END: parse_reply
// ANCHOR: content_text
/// `content` as text: a string, null or missing (no text), or a list of parts whose text
/// parts are joined. Parts of other types (an image, reasoning) carry no answer text.
pub fn content_text(content: Option<&Value>) -> Result<Option<String>, String> {
    match content {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (index, part) in parts.iter().enumerate() {
                match (part.get("type").and_then(Value::as_str), part.get("text")) {
                    (Some("text" | "output_text") | None, Some(Value::String(piece))) => text.push_str(piece),
                    (Some(kind), _) if kind != "text" && kind != "output_text" => {}
                    _ => return Err(format!("content part {index} is neither text nor a typed part")),
                }
            }
            Ok((!parts.is_empty()).then_some(text))
        }
        Some(_) => Err("content is neither text, null nor a list of parts".into()),
    }
}
// ANCHOR_END: content_text

// ANCHOR: tool_call
/// One entry of `tool_calls`: `function.name` a non-empty string, `arguments` text or an
/// object, `id` a string when present (a few servers omit it: we number the call).
fn tool_call(index: usize, call: &Value) -> Result<ToolCall, Error> {
    let bad = |what: &str| Error::Model(format!("tool call {index} {what}: {}", quote(&call.to_string())));
    let function = match call.get("function") {
        Some(function @ Value::Object(_)) => function,
        _ => return Err(bad("has no function object")),
    };
    let name = match function.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => return Err(bad("has no function name")),
    };
    let arguments = match function.get("arguments") {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(text)) => text.clone(),
        // Some servers send the object itself: we keep its text.
        Some(object @ Value::Object(_)) => object.to_string(),
        Some(_) => return Err(bad("has arguments that are neither text nor an object")),
    };
    let id = match call.get("id") {
        None | Some(Value::Null) => format!("call_{index}"),
        Some(Value::String(id)) if id.is_empty() => format!("call_{index}"),
        Some(Value::String(id)) => id.clone(),
        Some(_) => return Err(bad("has an id that is not text")),
    };
    Ok(ToolCall { id, name, arguments })
}

// ANCHOR_END: tool_call
pub fn parse_usage(usage: &Value) -> Option<Usage> {
    Some(Usage {
        prompt_tokens: usage.get("prompt_tokens")?.as_u64()?,
        completion_tokens: usage.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reply(message: Value) -> String {
        json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).to_string()
    }

    #[test]
    fn content_parts_are_joined_and_other_parts_skipped() {
        let parts = json!([{"type": "text", "text": "Hello, "}, {"type": "image_url", "image_url": {}},
            {"type": "text", "text": "world"}]);
        let parsed = parse_reply(&reply(json!({"role": "assistant", "content": parts}))).expect("parts");
        assert_eq!(parsed.content.as_deref(), Some("Hello, world"));
        assert_eq!(parsed.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn every_other_shape_is_a_malformed_reply() {
        let bodies = [
            json!({"choices": [{"message": "the answer"}]}).to_string(),
            json!({"choices": {"message": {"content": "x"}}}).to_string(),
            reply(json!({"content": 42})),
            reply(json!({"content": {"text": "x"}})),
            reply(json!({"content": [7]})),
            reply(json!({"content": null, "tool_calls": {"function": {"name": "bash"}}})),
            reply(json!({"tool_calls": [{"function": {"name": "bash", "arguments": 5}}]})),
            reply(json!({"tool_calls": [{"id": 3, "function": {"name": "bash"}}]})),
            reply(json!({"tool_calls": ["bash"]})),
            json!({"choices": [{"message": {"content": "x"}, "finish_reason": 1}]}).to_string(),
        ];
        for body in bodies {
            let error = parse_reply(&body).expect_err(&body);
            assert!(matches!(error, Error::Model(_)), "{body}: {error:?}");
        }
    }

    #[test]
    fn a_cut_reply_keeps_its_finish_reason() {
        let body = json!({"choices": [{"message": {"content": "The first"}, "finish_reason": "length"}]});
        let parsed = parse_reply(&body.to_string()).expect("cut but well formed");
        assert_eq!(parsed.finish_reason.as_deref(), Some("length"));
        assert_eq!(parsed.cut_reason(), Some("length"));
    }
}
