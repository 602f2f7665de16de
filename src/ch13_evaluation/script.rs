//! A scenario's steps turned into the scripted server's steps: replies, errors and SSE
//! streams cut like a real server's, with tool-call ids unique across the whole scenario so
//! every answer can be traced back to its call.

use super::scenario::{CallSpec, ScriptStep};
use crate::scripted_server::Step;
use serde_json::{Value, json};
use std::collections::HashMap;

// ANCHOR: server_steps
/// Turns a scenario's steps into server steps. Tool-call ids are unique across the whole
/// scenario (`call_<run>_<step>_<n>`), so answers can be matched to calls; the map
/// remembers each id's tool name.
pub(super) fn server_steps(
    run_index: usize,
    steps: &[ScriptStep],
    names: &mut HashMap<String, String>,
) -> Vec<Step> {
    steps
        .iter()
        .enumerate()
        .map(|(step_index, step)| {
            let mut ids = |calls: &[CallSpec]| -> Vec<(String, String, String)> {
                calls
                    .iter()
                    .enumerate()
                    .map(|(n, call)| {
                        let id = format!("call_{run_index}_{step_index}_{n}");
                        names.insert(id.clone(), call.name.clone());
                        (id, call.name.clone(), arguments_text(&call.arguments))
                    })
                    .collect()
            };
            match step {
                ScriptStep::Text(text) => Step::text(text),
                ScriptStep::ToolCalls(calls) => {
                    let calls: Vec<Value> = ids(calls)
                        .into_iter()
                        .map(|(id, name, arguments)| {
                            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
                        })
                        .collect();
                    Step::message(json!({"role": "assistant", "content": null, "tool_calls": calls}))
                }
                ScriptStep::Error(spec) => {
                    let mut error = json!({"message": spec.message, "type": "error"});
                    if let Some(code) = &spec.code {
                        error["code"] = json!(code);
                    }
                    let headers = spec.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    let body = spec.body.clone().unwrap_or_else(|| json!({"error": error}).to_string());
                    Step::Reply { status: spec.status, headers, body }
                }
                ScriptStep::Stream(spec) => {
                    let calls = ids(&spec.tool_calls);
                    Step::Stream { chunks: stream_chunks(spec.text.as_deref(), &calls, spec.finish), delay_ms: spec.delay_ms, finish: spec.finish }
                }
                ScriptStep::Hang => Step::Hang,
                ScriptStep::Close => Step::Close,
            }
        })
        .collect()
}
// ANCHOR_END: server_steps

pub(super) fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The SSE chunks a real server would send: text word by word, each tool call as a first
/// fragment with id and name and then its arguments in two halves, then the finish reason
/// and the usage — or, for a stream to be cut, nothing after half the last arguments.
pub(super) fn stream_chunks(
    text: Option<&str>,
    calls: &[(String, String, String)],
    finish: bool,
) -> Vec<String> {
    let chunk = |delta: Value, finish_reason: Value| {
        json!({"id": "scripted", "object": "chat.completion.chunk", "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})
        .to_string()
    };
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    for piece in text.unwrap_or_default().split_inclusive(' ') {
        chunks.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let first = json!({"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}});
        chunks.push(chunk(json!({"tool_calls": [first]}), Value::Null));
        let middle =
            arguments.char_indices().nth(arguments.chars().count() / 2).map_or(arguments.len(), |(at, _)| at);
        for half in [&arguments[..middle], &arguments[middle..]] {
            let fragment = json!({"index": index, "function": {"arguments": half}});
            chunks.push(chunk(json!({"tool_calls": [fragment]}), Value::Null));
        }
    }
    if !finish {
        // Cut where it hurts most: half-way through the last call's arguments.
        if !calls.is_empty() {
            chunks.pop();
        }
        return chunks;
    }
    {
        let reason = if calls.is_empty() { "stop" } else { "tool_calls" };
        chunks.push(chunk(json!({}), json!(reason)));
        chunks.push(
            json!({"id": "scripted", "object": "chat.completion.chunk", "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
            .to_string(),
        );
    }
    chunks
}
