//! Chapter 13 — the demo model: a few rules that play the part of a model.
//!
//! `--demo` must work on a fresh machine with no key and no network, and tests need a
//! model whose answers they can predict. So this file is a tiny, honest "model": it reads
//! the Chat Completions request the agent sent, recognises a small set of requests in the
//! last user message, plans the tool calls a real model would make, reads the results that
//! come back and answers with a short summary. It runs behind the scripted loopback server
//! of this chapter, so `--demo` exercises the real HTTP client, tools and loop unchanged.
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
//! Text may be quoted ("…", '…', `…`, “…”, 「…」); a literal `\n` in written content
//! becomes a newline, and content is written exactly as given (no newline is added).
//! Anything else gets [`CAPABILITIES`]: an honest list of the above, never a pretend answer.
//! The same request always gets the same reply.

use crate::ch01_loop::plural;
use crate::ch13_scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};

/// The honest answer to anything the demo model does not understand.
pub const CAPABILITIES: &str = "I am the offline demo model: a few fixed rules, not a real language model. \
I can:
- create a file: `create hello.txt containing hello` or `write \"some text\" to notes.md`
- read a file: `read README.md` or `show src/main.rs`
- list files: `list files` or `list files in src`
- search for text: `search for TODO` or `search for \"fn main\" in src`
- run a command: `run ls -la` or ``run `cargo --version` ``
- replace text in a file: `replace foo with bar in notes.txt`
(Chinese also works for some: `创建 a.txt 内容为 你好`, `读取 a.txt`, `列出文件`, `搜索 TODO`, `运行 ls`, `把 a.txt 中的 foo 替换为 bar`.)
For anything else, point mini-agent at a real model with --base-url and --model.";

// ANCHOR: start
/// Starts the demo model on a loopback port; its `url` is the base URL for the client.
pub fn start_demo_server() -> std::io::Result<ScriptedServer> {
    ScriptedServer::start(demo_step)
}

/// How the server answers one request: a JSON reply, or an SSE stream when the
/// client asked for `"stream": true` (so `--demo --stream` works too).
pub fn demo_step(request: &Value) -> Step {
    let body = demo_reply(request);
    if request["stream"] == Value::Bool(true) {
        Step::Stream { chunks: stream_chunks(&body), delay_ms: 0, finish: true }
    } else {
        Step::Reply { status: 200, headers: Vec::new(), body: body.to_string() }
    }
}

/// The whole Chat Completions response body for a request: a pure function of it.
pub fn demo_reply(request: &Value) -> Value {
    let no_messages = Vec::new();
    let messages = request["messages"].as_array().unwrap_or(&no_messages);
    let message = demo_message(messages);
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
// ANCHOR_END: start

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
struct Round {
    name: String,
    result: String,
}

enum Action {
    Call(&'static str, Value),
    Answer(String),
}

/// The assistant message that answers this conversation.
pub fn demo_message(messages: &[Value]) -> Value {
    // Ids must be unique in the conversation: count every tool call made so far.
    let calls_so_far: usize =
        messages.iter().filter_map(|m| m["tool_calls"].as_array()).map(|calls| calls.len()).sum();
    let Some(user_index) = messages.iter().rposition(|m| m["role"] == "user") else {
        return json!({"role": "assistant", "content": CAPABILITIES});
    };
    let intent = parse_intent(&message_text(&messages[user_index]));
    let rounds = rounds_since(&messages[user_index + 1..]);
    match next_action(&intent, &rounds) {
        Action::Call(name, arguments) => json!({
            "role": "assistant", "content": null,
            "tool_calls": [{"id": format!("call_{calls_so_far}"), "type": "function",
                            "function": {"name": name, "arguments": arguments.to_string()}}]
        }),
        Action::Answer(text) => json!({"role": "assistant", "content": text}),
    }
}
// ANCHOR_END: intent

// ANCHOR: plan
/// The plan: the first tool call for a fresh request, then what to do with each result.
fn next_action(intent: &Intent, rounds: &[Round]) -> Action {
    let Some(last) = rounds.last() else { return first_call(intent) };
    let failure = failure_line(&last.name, &last.result);
    let result = last.result.trim_end();
    let answer = match (intent, failure) {
        (Intent::Replace { path, old, new }, None) if rounds.len() == 1 && last.name == "read_file" => {
            let found = result.matches(old.as_str()).count();
            if found == 0 {
                format!("I read `{path}` but it does not contain \"{old}\", so I changed nothing.")
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

fn first_call(intent: &Intent) -> Action {
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

fn describe(intent: &Intent) -> String {
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
fn failure_line<'a>(tool: &str, result: &'a str) -> Option<&'a str> {
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
fn rounds_since(messages: &[Value]) -> Vec<Round> {
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
fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

// ANCHOR: parse
/// Reads a request. Keywords match case-insensitively; paths and content keep their case.
pub fn parse_intent(text: &str) -> Intent {
    let text = strip_politeness(text.trim());
    let attempts: [fn(&str) -> Option<Intent>; 7] =
        [parse_run, parse_replace, parse_write, parse_list, parse_search, parse_read, parse_chinese];
    attempts.iter().find_map(|parse| parse(text)).unwrap_or(Intent::Unknown)
}

fn parse_run(text: &str) -> Option<Intent> {
    let rest = after_word(text, &["run the command", "run command", "run", "execute", "exec"])?;
    let command = unquote(rest);
    (!command.is_empty()).then(|| Intent::Run { command: command.to_string() })
}

fn parse_replace(text: &str) -> Option<Intent> {
    let (rest, joiner) = match after_word(text, &["replace", "substitute"]) {
        Some(rest) => (rest, " with "),
        None => (after_word(text, &["change"])?, " to "),
    };
    let (pair, path) = split_last(rest, " in ")?;
    let (old, new) = split_pair(pair, joiner)?;
    let path = clean_path(path);
    (!old.is_empty() && !path.is_empty()).then(|| Intent::Replace {
        path: path.to_string(),
        old: old.to_string(),
        new: new.to_string(),
    })
}
// ANCHOR_END: parse

fn parse_write(text: &str) -> Option<Intent> {
    if let Some(rest) = after_word(text, &["write", "save", "put"]) {
        let rest = strip_words(rest, &["the text", "text"]);
        if let Some((content, path)) = split_last(rest, " to ").or_else(|| split_last(rest, " into ")) {
            return Some(write_intent(path, content));
        }
    }
    let rest = after_word(text, &["create", "make", "write"])?;
    let rest = strip_words(rest, &["a new file", "a file", "the file", "new file", "file", "a", "an"]);
    let rest = strip_words(rest, &["named", "called"]);
    const CONTENT_WORDS: [&str; 7] = [
        " containing ",
        " with content ",
        " with the content ",
        " with text ",
        " with ",
        " that says ",
        " saying ",
    ];
    let split = CONTENT_WORDS.iter().find_map(|word| split_first(rest, word));
    let (path, content) = split.unwrap_or((rest, ""));
    one_path(path).map(|path| write_intent(path, content))
}

fn parse_list(text: &str) -> Option<Intent> {
    let lower = text.to_ascii_lowercase();
    let asks_for_files = ["show files", "show me the files", "show the files", "what files", "which files"]
        .iter()
        .any(|phrase| lower.starts_with(phrase));
    let rest = match after_word(text, &["list"]) {
        Some(rest) => rest,
        None if asks_for_files => "",
        None if lower == "list" || lower == "ls" => "",
        None => return None,
    };
    let rest = strip_words(rest, &["all", "the"]);
    let rest = strip_words(rest, &["files", "file", "everything", "contents"]);
    let rest = strip_words(rest, &["in", "under", "of", "inside"]);
    let path = clean_path(rest);
    Some(Intent::List { path: (!path.is_empty()).then(|| path.to_string()) })
}

fn parse_search(text: &str) -> Option<Intent> {
    let rest = after_word(
        text,
        &["search for", "search", "find text", "find occurrences of", "find", "grep", "look for"],
    )?;
    let (pattern, path) = match split_last(rest, " in ") {
        // `in <one word>` names where to look; otherwise "in" is part of the pattern.
        Some((pattern, path)) if !pattern.trim().is_empty() && one_path(path).is_some() => {
            (pattern, one_path(path).map(String::from))
        }
        _ => (rest, None),
    };
    let pattern = unquote(pattern);
    (!pattern.is_empty()).then(|| Intent::Search { pattern: pattern.to_string(), path })
}

fn parse_read(text: &str) -> Option<Intent> {
    let rest = after_word(
        text,
        &["read", "show me", "show", "cat", "open", "display", "print", "view", "what's in", "what is in"],
    )?;
    let rest = strip_words(rest, &["the contents of", "the content of", "contents of", "content of"]);
    let rest = strip_words(rest, &["the file", "file"]);
    one_path(rest).map(|path| Intent::Read { path: path.to_string() })
}

/// A few Chinese forms: 创建/新建 … 内容为 …, 把 … 写入 …, 读取/查看 …, 列出 …, 搜索/查找 …,
/// 运行/执行 …, 把 <file> 中的 … 替换为 ….
fn parse_chinese(text: &str) -> Option<Intent> {
    if let Some((before, new)) =
        ["替换为", "替换成", "改为", "改成"].iter().find_map(|w| split_first(text, w))
    {
        let before = before.trim_start_matches(['把', '将', '在']);
        let (path, old) =
            ["中的", "里的", "中把", "里把", "中", "里"].iter().find_map(|w| split_first(before, w))?;
        let old = old.trim_start_matches(['把', '将']);
        let (path, old, new) = (clean_path(path), unquote(old), unquote(new));
        return (!path.is_empty() && !old.is_empty()).then(|| Intent::Replace {
            path: path.into(),
            old: old.into(),
            new: new.into(),
        });
    }
    if let Some(rest) = text.strip_prefix('把').or_else(|| text.strip_prefix('将'))
        && let Some((content, path)) = ["写入", "写到"].iter().find_map(|w| split_first(rest, w))
    {
        return Some(write_intent(path, content));
    }
    if let Some(rest) = ["创建", "新建"].iter().find_map(|w| text.strip_prefix(w)) {
        let rest = rest.trim_start_matches("一个").trim_start_matches("文件");
        let words = ["，内容为", "，内容是", ",内容为", "内容为", "内容是", "内容：", "内容:", "写入"];
        let (path, content) = words.iter().find_map(|w| split_first(rest, w)).unwrap_or((rest, ""));
        return Some(write_intent(path, content));
    }
    let (verb, rest) = ["读取", "查看", "显示", "打开", "列出", "搜索", "查找", "运行", "执行"]
        .iter()
        .find_map(|verb| Some((*verb, text.strip_prefix(verb)?)))?;
    let rest = rest.trim_start_matches("命令").trim_start_matches("文件").trim();
    let rest = rest.trim_end_matches("目录下的文件").trim_end_matches("中的文件").trim_end_matches("目录");
    let (path, value) = (clean_path(rest).to_string(), unquote(rest).to_string());
    match verb {
        "列出" => Some(Intent::List { path: (!path.is_empty()).then_some(path) }),
        _ if value.is_empty() => None,
        "搜索" | "查找" => Some(Intent::Search { pattern: value, path: None }),
        "运行" | "执行" => Some(Intent::Run { command: value }),
        _ => Some(Intent::Read { path }),
    }
}

fn write_intent(path: &str, content: &str) -> Intent {
    // A literal `\n` typed in a one-line prompt means a line break in the file.
    let content = unquote(content).replace("\\n", "\n").replace("\\t", "\t");
    Intent::Write { path: clean_path(path).to_string(), content }
}

fn strip_politeness(text: &str) -> &str {
    let text = strip_words(text, &["please", "can you", "could you", "would you"]);
    let lower = text.to_ascii_lowercase();
    if lower.ends_with(" please") { text[..text.len() - " please".len()].trim_end() } else { text }
}

/// The text after the first of `words` that starts `text` as a whole word, if any.
fn after_word<'a>(text: &'a str, words: &[&str]) -> Option<&'a str> {
    words.iter().find_map(|word| {
        let head = text.get(..word.len())?;
        let rest = &text[word.len()..];
        let whole_word = rest.is_empty() || rest.starts_with(char::is_whitespace);
        (head.eq_ignore_ascii_case(word) && whole_word).then(|| rest.trim())
    })
}

/// `after_word`, but keeps the text when none of the words starts it.
fn strip_words<'a>(text: &'a str, words: &[&str]) -> &'a str {
    after_word(text, words).unwrap_or(text)
}

/// Splits at the first `separator` outside quotes (matched case-insensitively).
fn split_first<'a>(text: &'a str, separator: &str) -> Option<(&'a str, &'a str)> {
    separator_positions(text, separator).first().map(|&at| (&text[..at], &text[at + separator.len()..]))
}

/// Splits at the last `separator` outside quotes.
fn split_last<'a>(text: &'a str, separator: &str) -> Option<(&'a str, &'a str)> {
    separator_positions(text, separator).last().map(|&at| (&text[..at], &text[at + separator.len()..]))
}

/// Splits `old <joiner> new`, where either side may be quoted and contain the joiner.
fn split_pair<'a>(text: &'a str, joiner: &str) -> Option<(&'a str, &'a str)> {
    let (old, new) = split_first(text, joiner)?;
    Some((unquote(old), unquote(new)))
}

const QUOTES: [(char, char); 7] =
    [('"', '"'), ('\'', '\''), ('`', '`'), ('“', '”'), ('‘', '’'), ('「', '」'), ('『', '』')];

fn separator_positions(text: &str, separator: &str) -> Vec<usize> {
    let lower = text.to_ascii_lowercase();
    let separator = separator.to_ascii_lowercase();
    let mut positions = Vec::new();
    let mut closing: Option<char> = None;
    for (at, c) in text.char_indices() {
        match closing {
            Some(close) if c == close => closing = None,
            Some(_) => {}
            None if lower[at..].starts_with(&separator) => positions.push(at),
            // A quote opens only at the start of a word, so "don't" is not a quote.
            None => {
                let starts_word = at == 0 || text[..at].ends_with(char::is_whitespace);
                closing = QUOTES.iter().find(|(open, _)| *open == c && starts_word).map(|(_, close)| *close);
            }
        }
    }
    positions
}

/// Removes one pair of surrounding quotes.
fn unquote(text: &str) -> &str {
    let text = text.trim();
    for (open, close) in QUOTES {
        if let Some(inner) = text.strip_prefix(open).and_then(|t| t.strip_suffix(close)) {
            return inner;
        }
    }
    text
}

/// A path that is the whole of `text`: one word, or quoted if it has spaces.
fn one_path(text: &str) -> Option<&str> {
    let path = clean_path(text);
    let quoted = QUOTES.iter().any(|(open, _)| text.trim().starts_with(*open));
    (!path.is_empty() && (quoted || !path.contains(char::is_whitespace))).then_some(path)
}

/// A path as typed in a sentence: unquoted, without the sentence's final punctuation.
fn clean_path(text: &str) -> &str {
    let text = unquote(text.trim().trim_end_matches(['.', ',', ';', ':', '!', '?', '。', '，', '；', '：']));
    text.trim_start_matches(['，', ',', '：', ':']).trim()
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
mod tests {
    use super::*;
    use crate::ch01_loop::{
        Error, Event, Limits, Message, Model, Observer, Outcome, Reply, Request, ToolCall, ToolOutput,
        ToolStatus, Tools, run_turn,
    };

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    fn reply_to(messages: &[Value]) -> Value {
        demo_reply(&json!({"model": "demo", "messages": messages, "tools": []}))["choices"][0]["message"]
            .clone()
    }

    /// The one tool call of a reply as (id, name, parsed arguments).
    fn the_call(message: &Value) -> (String, String, Value) {
        let calls = message["tool_calls"].as_array().expect("a tool call");
        assert_eq!(calls.len(), 1);
        let arguments = calls[0]["function"]["arguments"].as_str().expect("arguments as JSON text");
        (
            calls[0]["id"].as_str().expect("id").to_string(),
            calls[0]["function"]["name"].as_str().expect("name").to_string(),
            serde_json::from_str(arguments).expect("valid JSON arguments"),
        )
    }

    /// Appends the assistant's call and the tool's answer, as the agent would.
    fn answer(mut messages: Vec<Value>, call: &Value, result: &str) -> Vec<Value> {
        let id = call["tool_calls"][0]["id"].clone();
        messages.push(call.clone());
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
        messages
    }

    fn plans(prompt: &str) -> (String, Value) {
        let (_, name, arguments) = the_call(&reply_to(&[user(prompt)]));
        (name, arguments)
    }

    #[test]
    fn create_with_content_plans_one_write() {
        assert_eq!(
            plans("create hello.txt containing hello"),
            ("write_file".into(), json!({"path": "hello.txt", "content": "hello"}))
        );
        assert_eq!(
            plans("Please create a file called notes/todo.md with \"buy milk\\nfix bug\""),
            ("write_file".into(), json!({"path": "notes/todo.md", "content": "buy milk\nfix bug"}))
        );
        assert_eq!(
            plans("write \"go to bed\" to notes.md"),
            ("write_file".into(), json!({"path": "notes.md", "content": "go to bed"}))
        );
        assert_eq!(
            plans("create hello.txt containing Hello, World!"),
            ("write_file".into(), json!({"path": "hello.txt", "content": "Hello, World!"}))
        );
        assert_eq!(
            plans("创建 a.txt 内容为 你好"),
            ("write_file".into(), json!({"path": "a.txt", "content": "你好"}))
        );
        assert_eq!(
            plans("把 “你好，世界” 写入 b.txt"),
            ("write_file".into(), json!({"path": "b.txt", "content": "你好，世界"}))
        );
    }

    #[test]
    fn read_list_search_and_run_plan_their_tools() {
        assert_eq!(plans("read src/main.rs"), ("read_file".into(), json!({"path": "src/main.rs"})));
        assert_eq!(
            plans("show me the file `README.md`."),
            ("read_file".into(), json!({"path": "README.md"}))
        );
        assert_eq!(plans("cat 'my notes.txt'"), ("read_file".into(), json!({"path": "my notes.txt"})));
        assert_eq!(plans("查看 a.txt"), ("read_file".into(), json!({"path": "a.txt"})));
        assert_eq!(plans("list files"), ("list_files".into(), json!({})));
        assert_eq!(plans("List all files in src"), ("list_files".into(), json!({"path": "src"})));
        assert_eq!(plans("列出文件"), ("list_files".into(), json!({})));
        assert_eq!(plans("search for TODO"), ("search".into(), json!({"pattern": "TODO"})));
        assert_eq!(
            plans("search for \"fn main\" in src"),
            ("search".into(), json!({"pattern": "fn main", "path": "src"}))
        );
        assert_eq!(plans("搜索 TODO"), ("search".into(), json!({"pattern": "TODO"})));
        assert_eq!(plans("run ls -la"), ("bash".into(), json!({"command": "ls -la"})));
        assert_eq!(plans("run `cargo --version`"), ("bash".into(), json!({"command": "cargo --version"})));
        assert_eq!(plans("运行 echo 你好"), ("bash".into(), json!({"command": "echo 你好"})));
    }

    #[test]
    fn a_successful_write_is_summarised() {
        let first = vec![user("create hello.txt containing hello")];
        let call = reply_to(&first);
        let done = reply_to(&answer(first, &call, "wrote 5 bytes to hello.txt"));
        assert_eq!(done, json!({"role": "assistant", "content": "Wrote `hello.txt` (5 bytes)."}));
    }

    #[test]
    fn a_denied_write_is_reported_with_the_tools_words() {
        let first = vec![user("create hello.txt containing hello")];
        let call = reply_to(&first);
        let denial = "denied: writing files needs approval; rerun with --allow-write\n(more)";
        let done = reply_to(&answer(first, &call, denial));
        assert_eq!(
            done["content"],
            "I could not write `hello.txt`: `write_file` answered \
             “denied: writing files needs approval; rerun with --allow-write”."
        );
        assert!(done.get("tool_calls").is_none());
    }

    #[test]
    fn a_read_shows_the_file_and_a_failed_read_says_so() {
        let first = vec![user("read notes.md")];
        let call = reply_to(&first);
        let shown = reply_to(&answer(first.clone(), &call, "1\taccess denied errors\n2\tsecond line\n"));
        assert_eq!(
            shown["content"],
            "Here is `notes.md`:\n\n```\n1\taccess denied errors\n2\tsecond line\n```"
        );
        let failed = reply_to(&answer(first, &call, "error: notes.md does not exist"));
        assert_eq!(
            failed["content"],
            "I could not read `notes.md`: `read_file` answered “error: notes.md does not exist”."
        );
    }

    #[test]
    fn search_and_run_results_are_shown() {
        let first = vec![user("search for error")];
        let call = reply_to(&first);
        let found = reply_to(&answer(first.clone(), &call, "src/a.rs:3: error here"));
        assert_eq!(found["content"], "Matches for \"error\":\n\n```\nsrc/a.rs:3: error here\n```");
        let none = reply_to(&answer(first, &call, ""));
        assert_eq!(none["content"], "No matches for \"error\".");

        let first = vec![user("run cargo --version")];
        let call = reply_to(&first);
        let ran = reply_to(&answer(first.clone(), &call, "exit code 0\ncargo 1.95.0\n"));
        assert_eq!(
            ran["content"],
            "Ran `cargo --version`. It returned:\n\n```\nexit code 0\ncargo 1.95.0\n```"
        );
        let denied = reply_to(&answer(first, &call, "denied: shell commands need --allow-shell"));
        assert_eq!(
            denied["content"],
            "I could not run `cargo --version`: `bash` answered “denied: shell commands need --allow-shell”."
        );
    }

    #[test]
    fn replace_reads_then_edits_then_reports() {
        let first = vec![user("replace foo with \"bar baz\" in x.txt")];
        let read = reply_to(&first);
        assert_eq!(the_call(&read), ("call_0".into(), "read_file".into(), json!({"path": "x.txt"})));
        let after_read = answer(first, &read, "1\tone foo\n2\ttwo\n");
        let edit = reply_to(&after_read);
        assert_eq!(
            the_call(&edit),
            (
                "call_1".into(),
                "edit_file".into(),
                json!({"path": "x.txt", "old_string": "foo", "new_string": "bar baz"})
            )
        );
        let done = reply_to(&answer(after_read.clone(), &edit, "edited x.txt: 1 replacement"));
        assert_eq!(done["content"], "Replaced \"foo\" with \"bar baz\" in `x.txt`.");
        let refused = reply_to(&answer(after_read, &edit, "edit_file: old_string not found in x.txt"));
        assert_eq!(
            refused["content"],
            "I could not replace \"foo\" in `x.txt`: `edit_file` answered “edit_file: old_string not found in x.txt”."
        );
    }

    #[test]
    fn replace_of_absent_text_changes_nothing_and_several_matches_replace_all() {
        let first = vec![user("change foo to bar in x.txt")];
        let read = reply_to(&first);
        let absent = reply_to(&answer(first.clone(), &read, "1\tnothing here\n"));
        assert_eq!(
            absent["content"],
            "I read `x.txt` but it does not contain \"foo\", so I changed nothing."
        );
        let several = reply_to(&answer(first, &read, "1\tfoo\n2\tfoo\n"));
        assert_eq!(the_call(&several).2["replace_all"], true);
        assert_eq!(plans("把 x.txt 中的 foo 替换为 bar"), ("read_file".into(), json!({"path": "x.txt"})));
    }

    #[test]
    fn ids_count_every_earlier_tool_call_of_the_conversation() {
        let first = vec![user("run true")];
        let call = reply_to(&first);
        let mut messages = answer(first, &call, "exit code 0");
        messages.push(json!({"role": "assistant", "content": "Ran it."}));
        messages.push(user("read a.txt"));
        assert_eq!(the_call(&reply_to(&messages)).0, "call_1");
    }

    #[test]
    fn anything_else_gets_the_honest_list() {
        for prompt in ["refactor the parser", "help", "", "make sure the tests pass", "read my notes please"]
        {
            assert_eq!(reply_to(&[user(prompt)]), json!({"role": "assistant", "content": CAPABILITIES}));
        }
        assert_eq!(reply_to(&[]), json!({"role": "assistant", "content": CAPABILITIES}));
    }

    #[test]
    fn the_same_request_gets_the_same_reply_with_estimated_usage() {
        let request = json!({"messages": [user("list files in src")]});
        let reply = demo_reply(&request);
        assert_eq!(reply, demo_reply(&request));
        assert_eq!(reply["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(reply["usage"]["prompt_tokens"], request.to_string().len() / 4);
        assert!(reply["usage"]["completion_tokens"].as_u64().is_some_and(|n| n > 0));
    }

    #[test]
    fn a_streamed_reply_carries_the_same_message() {
        let request = json!({"messages": [user("create a.txt containing hi")], "stream": true});
        let Step::Stream { chunks, finish: true, .. } = demo_step(&request) else {
            panic!("expected a finished stream")
        };
        let chunks: Vec<Value> =
            chunks.iter().map(|c| serde_json::from_str(c).expect("JSON chunk")).collect();
        let calls: Vec<&Value> =
            chunks.iter().filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0)).collect();
        assert_eq!(calls[0]["function"]["name"], "write_file");
        assert_eq!(calls[1]["function"]["arguments"], r#"{"content":"hi","path":"a.txt"}"#);
        let last = chunks.last().expect("a final chunk");
        assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
        assert!(last["usage"]["prompt_tokens"].is_u64());
    }

    /// The demo model behind the real loop, with in-memory file tools: the way `--demo` runs,
    /// minus HTTP.
    struct Demo;

    impl Model for Demo {
        fn complete(&mut self, request: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
            let messages: Vec<Value> = request.messages.iter().map(wire).collect();
            let message = demo_message(&messages);
            let tool_calls = message["tool_calls"].as_array().into_iter().flatten();
            let tool_calls = tool_calls
                .map(|call| ToolCall {
                    id: call["id"].as_str().unwrap_or_default().into(),
                    name: call["function"]["name"].as_str().unwrap_or_default().into(),
                    arguments: call["function"]["arguments"].as_str().unwrap_or_default().into(),
                })
                .collect();
            Ok(Reply {
                content: message["content"].as_str().map(String::from),
                tool_calls,
                ..Reply::default()
            })
        }
    }

    fn wire(message: &Message) -> Value {
        match message {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant { content, tool_calls } => {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                                    "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect();
                json!({"role": "assistant", "content": content, "tool_calls": calls})
            }
            Message::Tool { tool_call_id, content } => {
                json!({"role": "tool", "tool_call_id": tool_call_id, "content": content})
            }
        }
    }

    #[derive(Default)]
    struct Files(std::collections::BTreeMap<String, String>);

    impl Tools for Files {
        fn schemas(&self) -> Vec<Value> {
            Vec::new()
        }
        fn run(&mut self, call: &ToolCall) -> ToolOutput {
            let args: Value = serde_json::from_str(&call.arguments).expect("the demo writes valid JSON");
            let path = args["path"].as_str().unwrap_or_default().to_string();
            let content = match (call.name.as_str(), self.0.get_mut(&path)) {
                ("write_file", _) => {
                    let text = args["content"].as_str().unwrap_or_default().to_string();
                    let answer = format!("wrote {} to {path}", plural(text.len(), "byte"));
                    self.0.insert(path, text);
                    answer
                }
                ("read_file", Some(text)) => {
                    text.lines().enumerate().map(|(n, l)| format!("{}\t{l}\n", n + 1)).collect()
                }
                ("edit_file", Some(text)) => {
                    let old = args["old_string"].as_str().unwrap_or_default();
                    *text = text.replace(old, args["new_string"].as_str().unwrap_or_default());
                    format!("edited {path}")
                }
                (_, _) => format!("error: {path} does not exist"),
            };
            ToolOutput { content, status: ToolStatus::Ok }
        }
    }

    #[test]
    fn the_demo_drives_the_real_loop_to_an_answer() {
        struct Quiet;
        impl Observer for Quiet {
            fn event(&mut self, _: Event) -> Result<(), Error> {
                Ok(())
            }
        }
        let mut files = Files::default();
        let mut history = vec![user_message("create hello.txt containing hello")];
        let limits = Limits { max_turns: 5 };
        let outcome = run_turn(&mut Demo, &mut files, &mut history, &mut Quiet, &limits);
        assert!(
            matches!(outcome, Outcome::Completed(ref t) if t == "Wrote `hello.txt` (5 bytes)."),
            "{outcome:?}"
        );
        history.push(user_message("replace hello with bye in hello.txt"));
        let outcome = run_turn(&mut Demo, &mut files, &mut history, &mut Quiet, &limits);
        assert!(matches!(outcome, Outcome::Completed(ref t) if t.starts_with("Replaced")), "{outcome:?}");
        history.push(user_message("read missing.txt"));
        let outcome = run_turn(&mut Demo, &mut files, &mut history, &mut Quiet, &limits);
        assert!(matches!(outcome, Outcome::Completed(ref t) if t.contains("does not exist")), "{outcome:?}");
        assert_eq!(files.0["hello.txt"], "bye");
        let ids: Vec<&str> = history
            .iter()
            .filter_map(|m| match m {
                Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["call_0", "call_1", "call_2", "call_3"]);
    }

    fn user_message(text: &str) -> Message {
        Message::User { content: text.into() }
    }

    #[test]
    fn the_server_answers_over_http() {
        let server = start_demo_server().expect("loopback server");
        let body = json!({"model": "demo", "messages": [user("list files")]}).to_string();
        let mut response = ureq::post(format!("{}/chat/completions", server.url))
            .header("content-type", "application/json")
            .send(body.as_str())
            .expect("a 200 reply");
        let text = response.body_mut().read_to_string().expect("a body");
        let reply: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "list_files");
        assert_eq!(server.requests().len(), 1);
    }
}
