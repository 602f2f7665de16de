use super::*;

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
fn a_task_loops_prompt_is_read_from_its_task_line() {
    // The shape of chapter 15's built-in template: instructions around the task.
    let prompt = "You are working unattended on one task of a list. Nobody will answer questions: decide, act,\n\
                  and finish with a short summary of what you changed.\n\nTask: create z.txt containing z\n\
                  Attempt: 1\n\nFiles to read first:\n(none)\n\nWhen you stop, the harness runs this command \
                  in the workspace root; the task passes when it\nexits 0. Run it yourself before you finish:\n\
                  test -f z.txt\n";
    assert_eq!(plans(prompt), ("write_file".into(), json!({"path": "z.txt", "content": "z"})));
    // A task in other words gets the honest list, as a prompt would.
    let prompt = prompt.replace("create z.txt containing z", "make the tests pass");
    assert_eq!(reply_to(&[user(&prompt)]), json!({"role": "assistant", "content": CAPABILITIES}));
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

/// The demo behind chapter 2's loop (`run_turn`), with in-memory file tools.
#[cfg(feature = "ch02")]
mod with_the_loop {
    use super::*;
    use crate::ch02_loop::{
        Error, Event, Limits, Message, Model, Observer, Outcome, Reply, Request, ToolCall, ToolOutput,
        ToolStatus, Tools, run_turn,
    };
    use crate::text::plural;

    /// The demo model behind the real loop, with in-memory file tools: the way `--demo` runs,
    /// minus HTTP.
    struct Demo;

    impl Model for Demo {
        fn complete(&mut self, request: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
            let messages: Vec<Value> = request.messages.iter().map(wire).collect();
            let message = demo_message(&messages, false);
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
}

/// What the demo answers when the request's only tool is `bash` (chapters 1 and 2).
fn bash_reply_to(messages: &[Value]) -> Value {
    let bash = json!({"type": "function", "function": {"name": "bash", "parameters": {}}});
    demo_reply(&json!({"model": "demo", "messages": messages, "tools": [bash]}))["choices"][0]["message"]
        .clone()
}

/// The shell command the demo plans for `prompt` when it has only `bash`.
fn command_for(prompt: &str) -> String {
    let (_, name, arguments) = the_call(&bash_reply_to(&[user(prompt)]));
    assert_eq!(name, "bash", "{prompt}");
    arguments["command"].as_str().expect("a command").to_string()
}

#[test]
fn with_only_bash_each_request_becomes_a_shell_command() {
    assert_eq!(command_for("list files"), "ls -A");
    assert_eq!(command_for("list files in src"), "ls -A -- 'src'");
    assert_eq!(command_for("read src/main.rs"), "cat -- 'src/main.rs'");
    assert_eq!(command_for("search for TODO"), "grep -rnIF --exclude-dir=.git -- 'TODO'");
    assert_eq!(
        command_for("search for \"fn main\" in src"),
        "grep -rnIF --exclude-dir=.git -- 'fn main' 'src'"
    );
    assert_eq!(command_for("create hello.txt containing hello"), "printf '%s' 'hello' > 'hello.txt'");
    assert_eq!(command_for("create a/b.txt containing x"), "mkdir -p -- 'a' && printf '%s' 'x' > 'a/b.txt'");
    assert_eq!(command_for("run ls -la"), "ls -la");
    assert_eq!(command_for("replace foo with bar in x.txt"), "cat -- 'x.txt'");
    assert_eq!(command_for("列出文件"), "ls -A");
    // Quotes in names and text stay inside one shell word.
    assert_eq!(command_for("create \"it's.txt\" containing a'b"), r"printf '%s' 'a'\''b' > 'it'\''s.txt'");
    // A tool list with anything besides bash is the full program: file tools as before.
    assert_eq!(plans("list files"), ("list_files".into(), json!({})));
    assert_eq!(bash_reply_to(&[user("sing")])["content"], CAPABILITIES);
}

#[test]
fn with_only_bash_the_exit_code_decides_success() {
    let first = vec![user("read notes.md")];
    let call = bash_reply_to(&first);
    let shown = bash_reply_to(&answer(first.clone(), &call, "error: one\ntwo\nexit code 0"));
    assert_eq!(shown["content"], "Here is `notes.md`:\n\n```\nerror: one\ntwo\n```");
    let failed =
        bash_reply_to(&answer(first, &call, "cat: notes.md: No such file or directory\nexit code 1"));
    assert_eq!(
        failed["content"],
        "I could not read `notes.md`: `bash` answered “cat: notes.md: No such file or directory”."
    );
    let first = vec![user("search for zzz")];
    let call = bash_reply_to(&first);
    assert_eq!(
        bash_reply_to(&answer(first.clone(), &call, "exit code 1"))["content"],
        "No matches for \"zzz\"."
    );
    let found = bash_reply_to(&answer(first, &call, "a.txt:3:zzz\nexit code 0"));
    assert_eq!(found["content"], "Matches for \"zzz\":\n\n```\na.txt:3:zzz\n```");
    let first = vec![user("create a.txt containing hi")];
    let call = bash_reply_to(&first);
    let denied = bash_reply_to(&answer(first.clone(), &call, "denied: shell commands need --allow-shell"));
    assert!(denied["content"].as_str().is_some_and(|text| text.contains("“denied: shell")), "{denied}");
    assert_eq!(bash_reply_to(&answer(first, &call, "exit code 0"))["content"], "Wrote `a.txt` (2 bytes).");
}

/// Runs `command` with `bash -c` in `dir`, as chapter 1's tool does: output, then the exit code.
fn run_in(dir: &std::path::Path, command: &str) -> String {
    let out =
        std::process::Command::new("bash").args(["-c", command]).current_dir(dir).output().expect("bash");
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    format!("{text}exit code {}", out.status.code().unwrap_or(-1))
}

#[test]
fn with_only_bash_the_planned_commands_really_write_and_replace() {
    let dir = std::env::temp_dir().join(format!("mini-agent-demo-bash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    // Text the shell would otherwise read as syntax: quotes, $, backquotes, &, a backslash.
    let text = r#"it's $HOME `id` & \n"#;
    let mut messages = vec![user(&format!("create \"odd 'name'.txt\" containing \"{text}\""))];
    let call = bash_reply_to(&messages);
    let result = run_in(&dir, the_call(&call).2["command"].as_str().expect("command"));
    messages = answer(messages, &call, &result);
    assert!(bash_reply_to(&messages)["content"].as_str().is_some_and(|t| t.starts_with("Wrote")));
    let written = std::fs::read_to_string(dir.join("odd 'name'.txt")).expect("the file");
    assert_eq!(written, "it's $HOME `id` & \n", "the demo turns a literal \\n into a newline");

    let mut messages = vec![user("replace \"$HOME `id`\" with \"a & b\\\\\" in \"odd 'name'.txt\"")];
    for _ in 0..2 {
        let call = bash_reply_to(&messages);
        let result = run_in(&dir, the_call(&call).2["command"].as_str().expect("command"));
        messages = answer(messages, &call, &result);
    }
    let done = bash_reply_to(&messages);
    let changed = std::fs::read_to_string(dir.join("odd 'name'.txt")).expect("the file");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(done["content"].as_str().is_some_and(|t| t.starts_with("Replaced")), "{done}");
    assert_eq!(changed, "it's a & b\\\\ & \n");
}

#[test]
fn two_requests_rehearse_a_servers_faults() {
    let overloaded = demo_step(&json!({"messages": [user("Be overloaded.")]}));
    let Step::Reply { status: 503, headers, body } = overloaded else { panic!("a 503: {overloaded:?}") };
    assert_eq!(headers, [("retry-after".to_string(), "2".to_string())]);
    assert_eq!(serde_json::from_str::<Value>(&body).expect("JSON")["error"]["message"], "overloaded");
    let cut = demo_step(&json!({"messages": [user("break the stream")], "stream": true}));
    let Step::Stream { chunks, finish: false, .. } = cut else { panic!("a cut stream: {cut:?}") };
    assert!(chunks.last().is_some_and(|chunk| chunk.contains(r#"\"command\": \"rm -rf"#)), "{chunks:?}");
    assert!(matches!(demo_step(&json!({"messages": [user("break the stream")]})), Step::Close));
    // Only the user's last word asks: after a tool result the demo goes on as ever.
    let later = json!({"messages": [user("be overloaded"), json!({"role": "tool", "tool_call_id": "x", "content": "ok"})]});
    assert!(matches!(demo_step(&later), Step::Reply { status: 200, .. }));
}
