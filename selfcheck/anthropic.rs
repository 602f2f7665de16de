//! Chapter 19 end to end: the binary with `--api anthropic` against the scripted server
//! answering in the Messages API's shape. The tool loop, the session's record of the API and
//! `-c` going back to it, `/stats` with the prompt cache, the key kept out of the model's
//! commands, and a cut stream.

use crate::harness::{Test, records, session_files};
use mini_agent::scripted_server::Step;
use serde_json::{Value, json};

/// A whole Messages reply with these content blocks.
fn message(content: Value, stop_reason: &str) -> Step {
    let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": stop_reason,
        "usage": {"input_tokens": 30, "output_tokens": 9, "cache_read_input_tokens": 4000,
                  "cache_creation_input_tokens": 120}});
    Step::Reply { status: 200, headers: vec![], body: body.to_string() }
}

fn tool_use(id: &str, name: &str, input: Value) -> Step {
    message(json!([{"type": "tool_use", "id": id, "name": name, "input": input}]), "tool_use")
}

fn answer(text: &str) -> Step {
    message(json!([{"type": "text", "text": text}]), "end_turn")
}

#[test]
fn a_task_runs_its_tools_over_the_messages_api() {
    let run = Test::new()
        .args(["--api", "anthropic", "-p", "what is here?"])
        .file("notes.txt", "hello\n")
        .server(vec![tool_use("toolu_1", "list_files", json!({})), answer("One file: notes.txt.")])
        .run();
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "One file: notes.txt.");
    let first = &run.requests[0];
    assert!(first["max_tokens"].as_u64().is_some_and(|n| n > 0), "{first}");
    assert_eq!(first["system"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert!(first["tools"].as_array().is_some_and(|t| t.iter().all(|t| t["input_schema"].is_object())));
    let follow_up = &run.requests[1]["messages"];
    let roles: Vec<&str> =
        follow_up.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    let result = &follow_up[2]["content"][0];
    assert_eq!(
        (result["type"].as_str(), result["tool_use_id"].as_str()),
        (Some("tool_result"), Some("toolu_1"))
    );
    assert!(result["content"].as_str().is_some_and(|c| c.contains("notes.txt")), "{result}");
    assert_eq!(follow_up[2]["content"][0]["cache_control"], json!({"type": "ephemeral"}));
    let header = &run.only_journal()[0];
    assert_eq!((header["type"].as_str(), header["api"].as_str()), (Some("session"), Some("anthropic")));
}

#[test]
fn a_failed_tool_result_is_marked_is_error() {
    let run = Test::new()
        .args(["--api", "anthropic", "-p", "read it"])
        .server(vec![
            tool_use("toolu_missing", "read_file", json!({"path": "missing.txt"})),
            answer("It is missing."),
        ])
        .run();
    run.expect_code(0);
    let result = &run.requests[1]["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_missing");
    assert_eq!(result["is_error"], json!(true), "{result}");
}

#[test]
fn continue_goes_back_to_the_api_the_session_recorded() {
    let first =
        Test::new().args(["--api", "anthropic", "-p", "hello"]).server(vec![answer("Hi there.")]).run();
    first.expect_code(0);
    // No --api this time: the session's record says which API it talked to.
    let again = Test::new()
        .args(["-c", "-p", "and now?"])
        .server(vec![answer("Still here.")])
        .run_in(first.workspace);
    again.expect_code(0);
    assert_eq!(again.stdout.trim(), "Still here.");
    let sent = &again.requests[0];
    assert!(sent.get("max_tokens").is_some() && sent.get("system").is_some(), "a Messages request: {sent}");
    let texts: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()))
        .collect();
    assert_eq!(texts, ["hello", "Hi there.", "and now?"]);
    // `--api openai` moves it: the same history, sent as Chat Completions.
    let moved = Test::new()
        .args(["-c", "--api", "openai", "-p", "once more"])
        .server(vec![Step::text("In the other format.")])
        .run_in(again.workspace);
    moved.expect_code(0);
    assert!(moved.requests[0].get("max_tokens").is_none());
    assert_eq!(moved.requests[0]["messages"][0]["role"], "system");
    let files = session_files(moved.root());
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(records(&files[0])[0]["api"], "anthropic", "the session's first record is kept");
}

#[test]
fn stats_shows_what_the_prompt_cache_read_and_wrote() {
    let run = Test::new()
        .args(["--api", "anthropic"])
        .stdin("hello\nhello again\n/stats\n/exit\n")
        .server(vec![answer("One."), answer("Two.")])
        .run();
    run.expect_code(0);
    let shown = format!("{}{}", run.stdout, run.stderr);
    assert!(shown.contains("cache        8000 read + 240 written"), "{shown}");
    assert!(shown.contains("8300 prompt"), "the prompt counts the cache's part too: {shown}");
}

#[test]
fn the_anthropic_key_is_sent_but_never_reaches_a_command_or_the_journal() {
    let key = "sk-ant-selfcheck-secret-4242";
    let run = Test::new()
        .args(["--api", "anthropic", "--allow-shell", "-p", "show the environment"])
        .env("ANTHROPIC_API_KEY", key)
        .server(vec![tool_use("toolu_env", "bash", json!({"command": "env; echo done"})), answer("Shown.")])
        .run();
    run.expect_code(0);
    let result = &run.requests[1]["messages"][2]["content"][0]["content"];
    assert!(
        result.as_str().is_some_and(|r| r.contains("done") && !r.contains("ANTHROPIC_API_KEY")),
        "{result}"
    );
    let journal = std::fs::read_to_string(&session_files(run.root())[0]).expect("journal");
    assert!(!journal.contains(key), "the key is never written down");
}

#[test]
fn a_cut_stream_fails_without_running_its_half_received_call() {
    let events = [
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Cleaning up"}}),
        json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_rm", "name": "bash", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{\"command\":\"rm -rf bu"}}),
    ];
    let stream =
        Step::Stream { chunks: events.iter().map(Value::to_string).collect(), delay_ms: 0, finish: false };
    let run = Test::new()
        .args(["--api", "anthropic", "--stream", "--allow-shell", "-p", "clean"])
        .file("build/keep.txt", "kept\n")
        .server(vec![stream])
        .run();
    run.expect_code(1);
    assert!(run.stderr.contains("cut off"), "{}", run.stderr);
    assert_eq!(run.stdout, "Cleaning up\n", "the partial text is shown, once");
    assert!(!run.stderr.contains("Cleaning up"), "and not again: {}", run.stderr);
    assert_eq!(run.read("build/keep.txt").as_deref(), Some("kept\n"), "no tool ran");
    assert_eq!(run.requests.len(), 1, "a stream that began is not retried");
}

/// `is_error` survives `-c`: a new process learns which calls failed from the journal, which
/// kept every call's status, not from its own events (it has seen none).
#[test]
fn a_resumed_session_still_marks_its_earlier_failures() {
    let first = Test::new()
        .args(["--api", "anthropic", "-p", "read both"])
        .file("here.txt", "present\n")
        .server(vec![
            tool_use("toolu_ok", "read_file", json!({"path": "here.txt"})),
            tool_use("toolu_missing", "read_file", json!({"path": "missing.txt"})),
            answer("One is missing."),
        ])
        .run();
    first.expect_code(0);
    let again = Test::new()
        .args(["-c", "-p", "and now?"])
        .server(vec![answer("Still missing.")])
        .run_in(first.workspace);
    again.expect_code(0);
    let results: Vec<&Value> = again.requests[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    let marks: Vec<(&str, bool)> =
        results.iter().map(|b| (b["tool_use_id"].as_str().unwrap(), b["is_error"] == json!(true))).collect();
    assert_eq!(marks, [("toolu_ok", false), ("toolu_missing", true)], "{results:?}");
}

#[test]
fn the_demo_model_speaks_the_messages_api_offline_and_continue_goes_back_to_it() {
    let first = Test::new()
        .args(["--demo", "--api", "anthropic", "--stream", "-p", "read notes.txt"])
        .file("notes.txt", "hello\n")
        // A key in the environment is not the demo's business.
        .env("ANTHROPIC_API_KEY", "sk-ant-not-for-the-demo")
        .run();
    first.expect_code(0);
    assert!(
        first.stdout.starts_with("Here is `notes.txt`:") && first.stdout.contains("hello"),
        "{}",
        first.stdout
    );
    let header = &first.only_journal()[0];
    assert_eq!((header["api"].as_str(), header["endpoint"].as_str()), (Some("anthropic"), Some("demo")));
    let again = Test::new().args(["-c", "-p", "list files"]).run_in(first.workspace);
    again.expect_code(0);
    assert!(again.stdout.starts_with("Files in `.`:"), "{}", again.stdout);
    let kinds: Vec<String> =
        again.only_journal().iter().filter_map(|r| r["api"].as_str().map(String::from)).collect();
    assert_eq!(kinds, ["anthropic"], "one session, still on the Messages API");
}

#[test]
fn without_a_key_the_messages_api_names_its_own_variables_streamed_or_not() {
    for args in [vec!["--api", "anthropic", "-p", "hi"], vec!["--api", "anthropic", "--stream", "-p", "hi"]] {
        let run = Test::new().args_vec(args.iter().map(|a| a.to_string()).collect()).run();
        run.expect_code(1).stderr_has("ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) is not set");
        assert!(!run.stderr.contains("OPENAI_API_KEY"), "{}", run.stderr);
    }
}
