use super::plan::*;
use super::*;
use crate::ch02_loop::{
    Error, Event, Limits, Message, Model, Observer, Outcome, Reply, Request, ToolCall, ToolOutput,
    ToolStatus, Tools, run_turn,
};
use crate::text::plural;

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn reply_to(messages: &[Value]) -> Value {
    demo_reply(&json!({"model": "demo", "messages": messages, "tools": []}))["choices"][0]["message"].clone()
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
    assert_eq!(plans("show me the file `README.md`."), ("read_file".into(), json!({"path": "README.md"})));
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
    assert_eq!(shown["content"], "Here is `notes.md`:\n\n```\n1\taccess denied errors\n2\tsecond line\n```");
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
    assert_eq!(ran["content"], "Ran `cargo --version`. It returned:\n\n```\nexit code 0\ncargo 1.95.0\n```");
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
    assert_eq!(absent["content"], "I read `x.txt` but it does not contain \"foo\", so I changed nothing.");
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
    for prompt in ["refactor the parser", "help", "", "make sure the tests pass", "read my notes please"] {
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
    let chunks: Vec<Value> = chunks.iter().map(|c| serde_json::from_str(c).expect("JSON chunk")).collect();
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
        Ok(Reply { content: message["content"].as_str().map(String::from), tool_calls, ..Reply::default() })
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
