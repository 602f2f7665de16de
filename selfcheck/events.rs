//! `--json` events and `--stream`, end to end through the real binary.

use crate::harness::{Test, call, text};
use mini_agent::scripted_server::Step;
use serde_json::{Value, json};

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout.lines().map(|line| serde_json::from_str(line).expect("every stdout line is JSON")).collect()
}

#[test]
fn json_prints_one_object_per_event_with_stable_fields() {
    let run = Test::new()
        .args(["--json", "-p", "list the files"])
        .file("a.txt", "x")
        .server(vec![call("list_files", json!({})), text("one file")])
        .run();
    run.expect_code(0);
    let events = json_lines(&run.stdout);
    let id = events[0]["id"].as_str().expect("a session id").to_string();
    let root = run.root().display().to_string();
    let endpoint = events[0]["endpoint"].as_str().expect("the endpoint").to_string();
    assert!(endpoint.starts_with("http://127.0.0.1:"), "{endpoint}");
    assert_eq!(
        events,
        [
            json!({"type": "session", "id": id, "root": root, "model": "gpt-4o-mini", "api": "openai",
                   "endpoint": endpoint, "resumed": false, "recorded": true}),
            json!({"type": "request", "messages": 2}),
            json!({"type": "assistant", "text": null,
                   "tool_calls": [{"id": "call_0", "name": "list_files", "arguments": "{}"}]}),
            json!({"type": "tool_started", "id": "call_0", "name": "list_files", "arguments": "{}"}),
            json!({"type": "tool_finished", "id": "call_0", "name": "list_files", "status": "ok",
                   "content": "a.txt"}),
            json!({"type": "request", "messages": 4}),
            json!({"type": "assistant", "text": "one file", "tool_calls": []}),
            json!({"type": "final", "answer": "one file"}),
            json!({"type": "exit", "code": 0, "error": null}),
        ]
    );
    // Humans still get their progress on stderr.
    run.stderr_has("✓ list_files");
}

#[test]
fn json_reports_failures_and_retries_as_events_too() {
    let run = Test::new()
        .args(["--json", "-p", "hi"])
        .env("MINI_AGENT_REQUEST_MAX_RETRIES", "1")
        .server(vec![
            Step::Reply {
                status: 503,
                headers: vec![("Retry-After".into(), "0".into())],
                body: json!({"error": {"message": "busy"}}).to_string(),
            },
            Step::error(400, "bad request"),
        ])
        .run();
    run.expect_code(1);
    let events = json_lines(&run.stdout);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap_or("?")).collect();
    assert_eq!(types, ["session", "request", "retry", "exit"]);
    assert_eq!(events[2]["attempt"], 1);
    assert!(events[2]["reason"].as_str().is_some_and(|r| r.contains("503")), "{}", events[2]);
    assert_eq!(events[3]["code"], 1);
    assert!(events[3]["error"].as_str().is_some_and(|e| e.contains("400")), "{}", events[3]);
}

#[test]
fn json_without_a_prompt_is_a_usage_error() {
    let run = Test::new().args(["--json"]).run();
    run.expect_code(1).stderr_has("add -p");
}

fn stream(chunks: &[Value], finish: bool) -> Step {
    Step::Stream { chunks: chunks.iter().map(Value::to_string).collect(), delay_ms: 0, finish }
}

fn text_chunk(piece: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]})
}

fn finish_chunk(reason: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

fn call_chunk(id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut call = json!({"index": 0, "function": {"arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
}

#[test]
fn stream_shows_text_as_it_arrives_and_runs_assembled_tool_calls() {
    let run = Test::new()
        .args(["--stream", "--allow-write", "-p", "write it"])
        .server(vec![
            stream(
                &[
                    call_chunk(Some("call_1"), Some("write_file"), "{\"path\": \"out.txt\","),
                    call_chunk(None, None, " \"content\": \"streamed\"}"),
                    finish_chunk("tool_calls"),
                ],
                true,
            ),
            stream(&[text_chunk("Wrote "), text_chunk("out.txt."), finish_chunk("stop")], true),
        ])
        .run();
    run.expect_code(0).stderr_has("✓ write_file");
    assert_eq!(run.read("out.txt").as_deref(), Some("streamed"));
    assert_eq!(run.stdout, "Wrote out.txt.\n");
    assert_eq!(run.requests[0]["stream"], true);
    assert_eq!(
        run.journal_types(),
        ["session", "system", "sandbox", "user", "assistant", "tool_started", "tool_finished", "assistant"]
    );
}

#[test]
fn a_cut_stream_fails_and_runs_nothing() {
    let run = Test::new()
        .args(["--stream", "--allow-write", "-p", "write it"])
        .server(vec![stream(
            &[
                text_chunk("Let me write it."),
                call_chunk(Some("call_1"), Some("write_file"), "{\"path\": \"out.txt\", \"con"),
            ],
            false,
        )])
        .run();
    run.expect_code(1);
    assert_eq!(run.read("out.txt"), None, "nothing was executed");
    assert_eq!(run.requests.len(), 1, "a stream is never retried");
    let journal = run.only_journal();
    let types: Vec<&str> = journal.iter().map(|r| r["type"].as_str().unwrap_or("?")).collect();
    assert_eq!(types, ["session", "system", "sandbox", "user", "partial", "error"]);
    assert_eq!(journal[4]["content"], "Let me write it.");
}

/// Issue 22, item 1: with nobody to ask, `--json` still shows the program what a person would
/// have been asked: an `approval` event with the question and the change as a unified diff,
/// then the denial that names the flag. With the flag, nobody is asked and there is none.
#[test]
fn json_carries_the_approval_question_with_its_diff() {
    let edit =
        || call("edit_file", json!({"path": "six.py", "old_string": "return 5", "new_string": "return 6"}));
    let run = Test::new()
        .args(["--json", "-p", "fix six"])
        .file("six.py", "def six():\n    return 5\n")
        .server(vec![edit(), text("not allowed")])
        .run();
    run.expect_code(0);
    let events = json_lines(&run.stdout);
    let at = events.iter().position(|event| event["type"] == "approval").expect("an approval event");
    assert_eq!(events[at - 1]["type"], "tool_started");
    assert_eq!(
        events[at],
        json!({"type": "approval", "call_id": "call_0", "name": "edit_file",
               "question": "edit_file wants to change six.py (+1 −1)",
               "diff": "--- a/six.py\n+++ b/six.py\n@@ -1,2 +1,2 @@\n def six():\n-    return 5\n+    return 6\n"})
    );
    assert_eq!(events[at + 1]["type"], "tool_finished");
    assert_eq!(events[at + 1]["status"], "denied");
    assert!(
        events[at + 1]["content"].as_str().unwrap().contains("rerun with --allow-write"),
        "{}",
        events[at + 1]
    );
    let allowed = Test::new()
        .args(["--json", "--allow-write", "-p", "fix six"])
        .file("six.py", "def six():\n    return 5\n")
        .server(vec![edit(), text("fixed")])
        .run();
    allowed.expect_code(0);
    let events = json_lines(&allowed.stdout);
    assert!(!events.iter().any(|event| event["type"] == "approval"), "{events:?}");
    let finished = events.iter().find(|event| event["type"] == "tool_finished").unwrap();
    assert_eq!(finished["content"], "edited `six.py`: replaced 1 occurrence at line 2 (+1 −1)");
}
