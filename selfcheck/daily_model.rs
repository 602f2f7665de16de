//! A real model on a real server (issue 11, items 3, 10, 13, 14, 15): what a local model and
//! its server do to the agent, replayed through the scripted server against the binary.
//!
//! * `--stream` retries a failure that came before the first byte of the body, never after;
//! * a reply cut by the output limit is reported as cut, runs none of its calls, exits 1;
//! * a model repeating one call is told at the 3rd repeat and stopped at the 5th (exit 2);
//! * a tool call written as text is recognised, with the likely cause on stderr;
//! * `edit_file` names each matching line once.

use crate::harness::{Test, agent_command, call, text};
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn chunk(delta: Value, finish: Value) -> String {
    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string()
}

fn stream(text: &str) -> Step {
    let chunks = vec![chunk(json!({"content": text}), Value::Null), chunk(json!({}), json!("stop"))];
    Step::Stream { chunks, delay_ms: 0, finish: true }
}

// ---- item 3: --stream retries what can be retried ----

#[test]
fn stream_retries_a_429_and_a_503_that_came_before_any_text() {
    let run = Test::new()
        .args(["--stream", "-p", "hi"])
        .env("MINI_AGENT_REQUEST_MAX_RETRIES", "2")
        .server(vec![Step::error(429, "rate limited"), Step::error(503, "busy"), stream("the answer")])
        .run();
    run.expect_code(0);
    assert_eq!(run.requests.len(), 3);
    assert_eq!(run.stdout.trim(), "the answer", "the text is shown once");
    run.stderr_has("retry 1").stderr_has("retry 2");
}

#[test]
fn stream_is_never_retried_once_text_was_shown() {
    let cut = Step::Stream {
        chunks: vec![chunk(json!({"content": "half an"}), Value::Null)],
        delay_ms: 0,
        finish: false,
    };
    let run = Test::new()
        .args(["--stream", "-p", "hi"])
        .env("MINI_AGENT_REQUEST_MAX_RETRIES", "2")
        .server(vec![cut, stream("a second answer")])
        .run();
    run.expect_code(1).stderr_has("stream cut off");
    assert_eq!(run.requests.len(), 1, "a stream that showed text was retried");
    assert!(!run.stdout.contains("second"));
}

#[test]
fn stream_retries_a_refused_connection_until_the_server_is_up() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let workspace = crate::harness::TempDir::new("selfcheck");
    // Retries enough that the backoffs (0.25 s doubling, at most 8 s) outlast any delay of the
    // test in starting the server: the server comes up once the first refusal is reported.
    let mut child = agent_command(workspace.path())
        .args(["--stream", "--base-url", &format!("http://127.0.0.1:{port}/v1"), "-p", "hi"])
        .env("MINI_AGENT_REQUEST_MAX_RETRIES", "10")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mini-agent");
    let stdout = crate::binary_run::drain(child.stdout.take().expect("piped"));
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let (mut pipe, stderr) = (child.stderr.take().expect("piped"), stderr.clone());
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(count @ 1..) = std::io::Read::read(&mut pipe, &mut buffer) {
                stderr.lock().expect("lock").push_str(&String::from_utf8_lossy(&buffer[..count]));
            }
        })
    };
    let refused = || {
        let text = stderr.lock().expect("lock").clone();
        text.contains("connection refused") || text.contains("cannot connect")
    };
    let started = Instant::now();
    while !refused() {
        assert!(started.elapsed() < Duration::from_secs(60), "no refusal was reported");
        std::thread::sleep(Duration::from_millis(5));
    }
    let server = ScriptedServer::start_on(port, |_| stream("up now")).expect("bind the port");
    let status = child.wait().expect("mini-agent ends");
    reader.join().expect("the stderr reader");
    let (stdout, stderr) = (stdout.join().unwrap_or_default(), stderr.lock().expect("lock").clone());
    assert_eq!(status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "up now");
    assert_eq!(server.request_count(), 1);
    println!("figure: a refused --stream request succeeded {:?} after the first refusal", started.elapsed());
}

// ---- item 10: a reply cut at the output limit is not a finished answer ----

fn cut_reply(content: &str, tool_calls: Value) -> Step {
    let body = json!({"choices": [{"index": 0, "finish_reason": "length",
        "message": {"role": "assistant", "content": content, "tool_calls": tool_calls}}]});
    Step::Reply { status: 200, headers: Vec::new(), body: body.to_string() }
}

#[test]
fn a_reply_cut_at_the_output_limit_exits_1_and_the_state_says_why() {
    let run = Test::new()
        .args(["-p", "write an essay"])
        .server(vec![cut_reply("An essay. The first", Value::Null)])
        .run();
    run.expect_code(1).stderr_has("output limit").stderr_has("\"length\"");
    assert!(run.stdout.trim().is_empty(), "cut text printed as the answer: {}", run.stdout);
    let status = agent_command(run.root()).args(["-c", "--status"]).output().expect("--status");
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("output limit"), "{status}");
    assert!(!status.contains("completed"), "{status}");
}

#[test]
fn partial_tool_calls_of_a_cut_reply_never_run() {
    let calls = json!([
        {"id": "a", "type": "function", "function": {"name": "write_file", "arguments": "{\"path\": \"one.txt\", \"content\": \"1\"}"}},
        {"id": "b", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"touch two.t"}}
    ]);
    let run = Test::new()
        .args(["--allow-write", "--allow-shell", "-p", "go"])
        .server(vec![cut_reply("", calls)])
        .run();
    run.expect_code(1).stderr_has("2 unfinished tool calls were not run");
    assert_eq!((run.read("one.txt"), run.read("two.t")), (None, None));
    assert!(run.journal_types().iter().all(|t| t != "tool_started"), "{:?}", run.journal_types());
}

#[test]
fn a_cut_stream_in_json_mode_has_no_final_event() {
    let chunks =
        vec![chunk(json!({"content": "1, 2, 3, The first"}), Value::Null), chunk(json!({}), json!("length"))];
    let run = Test::new()
        .args(["--stream", "--json", "-p", "count"])
        .server(vec![Step::Stream { chunks, delay_ms: 0, finish: true }])
        .run();
    run.expect_code(1);
    let events: Vec<Value> =
        run.stdout.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    assert!(events.iter().all(|e| e["type"] != "final"), "{events:?}");
    let exit = events.last().expect("exit event");
    assert_eq!(exit["code"], 1);
    assert!(exit["error"].as_str().is_some_and(|e| e.contains("output limit")), "{exit}");
}

// ---- item 13: a model stuck in a loop is told, then stopped ----

#[test]
fn a_repeated_call_is_told_at_the_third_and_stopped_at_the_fifth() {
    let echo = || call("bash", json!({"command": "echo 42"}));
    let run = Test::new()
        .args(["--allow-shell", "--max-turns", "50", "-p", "print 42"])
        .server((0..50).map(|_| echo()).collect())
        .run();
    run.expect_code(2).stderr_has("bash 5 times in a row");
    // The 6th request offers no tools (issue 22): the model called again all the same.
    assert_eq!(run.requests.len(), 6, "asked once more, then stopped");
    assert!(run.requests[5].get("tools").is_none(), "the last request offers no tools");
    let results = run.tool_results();
    assert_eq!(results.len(), 5, "every call's result, the 5th with the note");
    assert!(!results[1].contains("mini-agent:") && results[2].contains("3 times in a row"), "{results:#?}");
    let last = run.only_journal().into_iter().last().expect("records");
    assert!(
        last["type"] == "error" && last["message"].as_str().is_some_and(|m| m.contains("in a row")),
        "{last}"
    );
}

#[test]
fn a_model_that_takes_the_hint_goes_on() {
    let echo = || call("bash", json!({"command": "echo 42"}));
    let run = Test::new()
        .args(["--allow-shell", "-p", "print 42"])
        .server(vec![echo(), echo(), echo(), text("It prints 42.")])
        .run();
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "It prints 42.");
}

// ---- item 14: a tool call written as text is recognised ----

#[test]
fn a_tool_call_written_as_text_is_named_with_its_likely_cause() {
    for answer in [
        r#"{"name": "list_files", "arguments": {"path": "."}}"#,
        "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```",
    ] {
        let run = Test::new().args(["-p", "list the files"]).server(vec![text(answer)]).run();
        run.expect_code(1).stderr_has("written as text").stderr_has("--jinja").stderr_has("Local models");
    }
    let run = Test::new().args(["-p", "give me JSON"]).server(vec![text(r#"{"name": "Ada"}"#)]).run();
    assert!(!run.stderr.contains("written as text"), "{}", run.stderr);
}

// ---- item 15: edit_file names each matching line once ----

#[test]
fn edit_file_names_each_matching_line_once_with_a_count() {
    let run = Test::new()
        .args(["--allow-write", "-p", "edit"])
        .file("f.txt", "a a\nb\na\n")
        .server(vec![
            call("edit_file", json!({"path": "f.txt", "old_string": "a", "new_string": "c"})),
            text("ok"),
        ])
        .run();
    let result = run.only_tool_result();
    assert!(result.contains("matches 3 times in `f.txt` (lines 1 ×2, 3)"), "{result}");
}
