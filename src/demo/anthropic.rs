//! The demo model behind the Messages API (chapter 19 turns it on): the same rules, another
//! wire format, so `--demo --api anthropic` runs offline like `--demo`.
//!
//! A Messages request is read back into the Chat Completions shape the rules read (the system
//! prompt, user text, `tool_use` blocks as tool calls, `tool_result` blocks as tool messages),
//! the demo plans its reply as ever, and the reply is written in the Messages shape: content
//! blocks with a `stop_reason`, or, streamed, the events `message_start` … `message_stop`. A
//! rehearsed fault is the same fault on this wire.

use super::demo_reply;
use super::faults::{CUT_CALL, CUT_TEXT, Fault, overloaded, rehearsed};
use crate::scripted_server::Step;
use serde_json::{Value, json};

/// How the demo server answers a request to `/v1/messages`.
pub(super) fn demo_step(request: &Value) -> Step {
    let chat = chat_request(request);
    let streamed = request["stream"] == Value::Bool(true);
    match rehearsed(&chat) {
        Some(Fault::Overloaded) => {
            return overloaded(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "overloaded"}}),
            );
        }
        Some(Fault::BrokenStream) if streamed => return cut_stream(),
        Some(Fault::BrokenStream) => return Step::Close,
        None => {}
    }
    let body = message_body(&demo_reply(&chat));
    if streamed {
        Step::Stream { chunks: events(&body), delay_ms: 0, finish: false }
    } else {
        Step::Reply { status: 200, headers: Vec::new(), body: body.to_string() }
    }
}

/// The Messages request as the Chat Completions request the rules read.
fn chat_request(request: &Value) -> Value {
    let mut messages = vec![json!({"role": "system", "content": text_of(&request["system"])})];
    for turn in request["messages"].as_array().into_iter().flatten() {
        let blocks = blocks_of(&turn["content"]);
        let text =
            blocks.iter().filter(|b| b["type"] == "text").map(|b| b["text"].as_str().unwrap_or_default());
        let text: Vec<&str> = text.collect();
        if turn["role"] == "assistant" {
            let calls: Vec<Value> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    json!({"id": b["id"], "type": "function",
                                "function": {"name": b["name"], "arguments": b["input"].to_string()}})
                })
                .collect();
            let content = if text.is_empty() { Value::Null } else { json!(text.join("\n")) };
            messages.push(json!({"role": "assistant", "content": content, "tool_calls": calls}));
            continue;
        }
        for result in blocks.iter().filter(|b| b["type"] == "tool_result") {
            let content = text_of(&result["content"]);
            messages.push(json!({"role": "tool", "tool_call_id": result["tool_use_id"], "content": content}));
        }
        if !text.is_empty() {
            messages.push(json!({"role": "user", "content": text.join("\n")}));
        }
    }
    let tools: Vec<Value> = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| json!({"type": "function", "function": {"name": tool["name"]}}))
        .collect();
    json!({"model": request["model"], "messages": messages, "tools": tools})
}

/// Content as blocks: a string is one text block.
fn blocks_of(content: &Value) -> Vec<Value> {
    match content {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    }
}

/// The text of a string or of the text blocks of an array.
fn text_of(content: &Value) -> String {
    let blocks = blocks_of(content);
    let texts: Vec<&str> = blocks.iter().filter_map(|block| block["text"].as_str()).collect();
    texts.join("\n")
}

/// The demo's Chat Completions reply as a Messages reply.
fn message_body(reply: &Value) -> Value {
    let message = &reply["choices"][0]["message"];
    let mut content: Vec<Value> =
        message["content"].as_str().map(|text| json!({"type": "text", "text": text})).into_iter().collect();
    for call in message["tool_calls"].as_array().into_iter().flatten() {
        let input: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
            .unwrap_or_else(|_| json!({}));
        content.push(
            json!({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": input}),
        );
    }
    let stop_reason = if message["tool_calls"].is_array() { "tool_use" } else { "end_turn" };
    json!({
        "id": "msg_demo", "type": "message", "role": "assistant", "model": "mini-agent-demo",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": reply["usage"]["prompt_tokens"],
                  "output_tokens": reply["usage"]["completion_tokens"]}
    })
}

/// The events of a streamed reply: the message, each block started, its content, stopped,
/// then the stop reason with the output tokens, and `message_stop`.
fn events(body: &Value) -> Vec<String> {
    let mut start = body.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let mut events = vec![json!({"type": "message_start", "message": start})];
    for (index, block) in body["content"].as_array().into_iter().flatten().enumerate() {
        let (empty, delta) = if block["type"] == "text" {
            (json!({"type": "text", "text": ""}), json!({"type": "text_delta", "text": block["text"]}))
        } else {
            let empty = json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}});
            (empty, json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}))
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": empty}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": body["stop_reason"], "stop_sequence": null},
                       "usage": {"output_tokens": body["usage"]["output_tokens"]}}),
    );
    events.push(json!({"type": "message_stop"}));
    events.into_iter().map(|event| event.to_string()).collect()
}

/// The rehearsed broken stream on this wire: a text block, then a `bash` call cut mid-input.
fn cut_stream() -> Step {
    let (name, partial) = CUT_CALL;
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_demo", "type": "message", "role": "assistant",
               "model": "mini-agent-demo", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": CUT_TEXT}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1,
               "content_block": {"type": "tool_use", "id": "call_0", "name": name, "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": partial}}),
    ];
    Step::Stream { chunks: events.iter().map(Value::to_string).collect(), delay_ms: 0, finish: false }
}
