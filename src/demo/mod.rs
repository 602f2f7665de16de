//! The demo model (`--demo`): a few rules that play the part of a model.
//!
//! `--demo` must work on a fresh machine with no key and no network, and tests need a
//! model whose answers they can predict. So this module is a tiny, honest "model": it reads
//! the Chat Completions request the agent sent, recognises a small set of requests in the
//! last user message, plans the tool calls a real model would make, reads the results that
//! come back and answers with a short summary. It runs behind the scripted loopback server
//! (`crate::scripted_server`), so `--demo` exercises the real HTTP client, tools and loop unchanged.
//!
//! What it understands (English; a few Chinese forms too):
//!
//! | request | tool calls |
//! |---|---|
//! | `create hello.txt containing hello` · `create notes.md with <text>` · `write "<text>" to notes.md` · `创建 a.txt 内容为 你好` · `把 "你好" 写入 a.txt` | `write_file` |
//! | `read README.md` · `show src/main.rs` · `cat x.txt` · `读取 a.txt` · `查看 a.txt` | `read_file` |
//! | `list files` · `list files in src` · `列出文件` | `list_files` |
//! | `search for TODO` · `find "fn main" in src` · `搜索 TODO` | `search` |
//! | `run ls -la` · ``run `cargo --version` `` · `运行 ls` | `bash` |
//! | `replace foo with bar in x.txt` · `change foo to bar in x.txt` · `把 x.txt 中的 foo 替换为 bar` | `read_file`, then `edit_file` |
//!
//! In a prompt of `mini-agent tasks` (chapter 15's template wraps the task in instructions),
//! the request is what its `Task:` line says, so a task named in these words is done by the
//! task loop too.
//!
//! When the request offers only a `bash` tool (chapters 1 and 2), the same requests are
//! done with shell commands instead: `ls -A`, `cat -- x`, `grep -rnIF`, `printf '%s' … > x`,
//! and for a replace `cat` then a literal substitution in bash (see `bash`).
//!
//! Two more requests rehearse a server's faults, so the chapters on retries and streams run
//! offline: `be overloaded` (every request answered `503`, `Retry-After: 2`) and `break the
//! stream` (a stream cut in the middle of a `bash` call); see `faults`.
//!
//! Text may be quoted ("…", '…', `…`, “…”, 「…」); a literal `\n` in written content
//! becomes a newline, and content is written exactly as given (no newline is added).
//! Anything else gets [`CAPABILITIES`]: an honest list of the above, never a pretend answer.
//! The same request always gets the same reply.
//!
//! # The pieces
//!
//! - `mod.rs` (here): the server that answers with the demo's reply, as JSON or as a stream.
//! - `plan`: what the user asked for, the tool calls that do it, and the summary of
//!   their results.
//! - `parse`: the rules that read a request, English and Chinese.
//! - `bash`: the same plans as shell commands, for a request whose only tool is `bash`.
//! - `faults`: the rehearsed faults.
//! - `anthropic`: the same demo behind the Messages API, which chapter 19 turns on.

#[cfg(feature = "ch19")]
mod anthropic;
mod bash;
mod faults;
mod parse;
mod plan;

pub use parse::parse_intent;
pub use plan::{Intent, demo_message};

use crate::scripted_server::{ScriptedServer, Step};
use faults::{CUT_CALL, CUT_TEXT, Fault};
use serde_json::{Value, json};

/// The honest answer to anything the demo model does not understand.
pub(crate) const CAPABILITIES: &str = "I am the offline demo model: a few fixed rules, not a real language model. \
I can:
- create a file: `create hello.txt containing hello` or `write \"some text\" to notes.md`
- read a file: `read README.md` or `show src/main.rs`
- list files: `list files` or `list files in src`
- search for text: `search for TODO` or `search for \"fn main\" in src`
- run a command: `run ls -la` or ``run `cargo --version` ``
- replace text in a file: `replace foo with bar in notes.txt`
In a task loop's prompt, I read the `Task:` line as the request.
(Chinese also works for some: `创建 a.txt 内容为 你好`, `读取 a.txt`, `列出文件`, `搜索 TODO`, `运行 ls`, `把 a.txt 中的 foo 替换为 bar`.)
For anything else, point mini-agent at a real model with --base-url and --model.";

// ANCHOR: start
/// Starts the demo model on a loopback port; its `url` is the base URL for the client.
#[cfg(not(feature = "ch19"))]
pub fn start_demo_server() -> std::io::Result<ScriptedServer> {
    ScriptedServer::start(demo_step)
}

/// From chapter 19, the demo answers the Messages API at `/v1/messages` too.
#[cfg(feature = "ch19")]
pub fn start_demo_server() -> std::io::Result<ScriptedServer> {
    ScriptedServer::start_routed(|path, request| match path.ends_with("/messages") {
        true => anthropic::demo_step(request),
        false => demo_step(request),
    })
}

/// How the server answers one request: a JSON reply, or an SSE stream when the
/// client asked for `"stream": true` (so `--demo --stream` works too); a fault when asked.
pub(crate) fn demo_step(request: &Value) -> Step {
    let streamed = request["stream"] == Value::Bool(true);
    match faults::rehearsed(request) {
        Some(Fault::Overloaded) => return faults::overloaded(json!({"error": {"message": "overloaded"}})),
        Some(Fault::BrokenStream) if streamed => return cut_stream(),
        Some(Fault::BrokenStream) => return Step::Close,
        None => {}
    }
    let body = demo_reply(request);
    if streamed {
        Step::Stream { chunks: stream_chunks(&body), delay_ms: 0, finish: true }
    } else {
        Step::Reply { status: 200, headers: Vec::new(), body: body.to_string() }
    }
}
// ANCHOR_END: start

// ANCHOR: demo_reply

/// The whole Chat Completions response body for a request: a pure function of it.
pub(crate) fn demo_reply(request: &Value) -> Value {
    let no_messages = Vec::new();
    let messages = request["messages"].as_array().unwrap_or(&no_messages);
    let message = demo_message(messages, bash::offers_only_bash(request));
    let finish_reason = if message.get("tool_calls").is_some() { "tool_calls" } else { "stop" };
    // Token counts are estimated as bytes / 4, the usual rule of thumb for English text.
    let prompt_tokens = (request.to_string().len() / 4).max(1);
    let completion_tokens = (message.to_string().len() / 4).max(1);
    json!({
        "id": "demo", "object": "chat.completion", "model": "mini-agent-demo",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}
    })
}
// ANCHOR_END: demo_reply

/// The rehearsed broken stream: some text, then a `bash` call cut in its arguments, then the
/// connection closes (no `finish_reason`, no `[DONE]`).
fn cut_stream() -> Step {
    let (name, partial) = CUT_CALL;
    let delta = |delta: Value| {
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
            .to_string()
    };
    let call = json!({"index": 0, "id": "call_0", "type": "function", "function": {"name": name, "arguments": partial}});
    let chunks =
        vec![delta(json!({"role": "assistant", "content": CUT_TEXT})), delta(json!({"tool_calls": [call]}))];
    Step::Stream { chunks, delay_ms: 0, finish: false }
}

/// The stream a server would send for `body`: text in a few pieces or the tool calls,
/// then a chunk carrying `finish_reason` and usage.
fn stream_chunks(body: &Value) -> Vec<String> {
    let choice = &body["choices"][0];
    let message = &choice["message"];
    let delta = |delta: Value| {
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}).to_string()
    };
    let mut chunks = vec![delta(json!({"role": "assistant", "content": ""}))];
    if let Some(text) = message["content"].as_str() {
        // Split after spaces so the terminal shows the answer arriving, word group by word group.
        let mut start = 0;
        for (at, _) in text.match_indices(' ') {
            if at - start >= 24 {
                chunks.push(delta(json!({"content": text[start..=at]})));
                start = at + 1;
            }
        }
        chunks.push(delta(json!({"content": text[start..]})));
    }
    for (index, call) in message["tool_calls"].as_array().into_iter().flatten().enumerate() {
        let head = json!({"index": index, "id": call["id"], "type": "function",
                          "function": {"name": call["function"]["name"], "arguments": ""}});
        chunks.push(delta(json!({"tool_calls": [head]})));
        let arguments = json!({"index": index, "function": {"arguments": call["function"]["arguments"]}});
        chunks.push(delta(json!({"tool_calls": [arguments]})));
    }
    chunks.push(
        json!({"object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
               "usage": body["usage"]})
        .to_string(),
    );
    chunks
}

#[cfg(test)]
mod tests;
