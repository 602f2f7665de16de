//! Red-team cases: see `main.rs` for the rule this file holds.
//!
//! The attacker is the server (or whatever answers at its address): redirects to another
//! host, replies in shapes no client expects, responses that are not HTTP at all, replies
//! cut by the output limit. The rule: a clear one-line error (exit 1) or a correct answer,
//! never a silent one — no foreign reply taken as the answer, no answer dropped with exit 0,
//! no tool run from a reply we did not fully understand.

use crate::harness::{Run, Test, call, text};
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};

/// A 200 whose body is exactly `body`.
fn body(body: Value) -> Step {
    Step::Reply { status: 200, headers: Vec::new(), body: body.to_string() }
}

/// A reply whose `choices[0].message` is `message` (whatever its type).
fn message(message: Value) -> Step {
    body(json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}))
}

/// The run failed with one line on stderr naming `needle`, printed nothing on stdout, and
/// no escape sequence from the server reached the terminal.
fn fails_clearly(run: &Run, needle: &str) {
    run.expect_code(1).stderr_has(needle);
    assert!(run.stdout.trim().is_empty(), "nothing on stdout:\n{}", run.stdout);
    assert_eq!(run.stderr.trim().lines().count(), 1, "one line:\n{}", run.stderr);
    assert!(!run.stderr.contains('\x1b'), "raw escape on stderr: {:?}", run.stderr);
}

/// A second server standing for "another host": it must never be asked anything.
fn foreign() -> ScriptedServer {
    ScriptedServer::scripted(vec![text("FOREIGN ANSWER"); 4]).expect("foreign server")
}

#[test]
fn a_302_to_another_host_is_not_followed_and_names_the_target() {
    let other = foreign();
    let target = format!("{}/chat/completions", other.url);
    let run = Test::new().args(["-p", "hi"]).server(vec![Step::redirect(302, &target)]).run();
    fails_clearly(&run, &target);
    run.stderr_has("302").stderr_has("--base-url");
    assert_eq!(other.request_count(), 0, "the foreign host was contacted");
}

#[test]
fn every_redirect_status_is_refused_alike() {
    let other = foreign();
    for status in [301, 303, 307, 308] {
        let target = format!("{}/chat/completions", other.url);
        let run = Test::new().args(["-p", "hi"]).server(vec![Step::redirect(status, &target)]).run();
        fails_clearly(&run, &format!("{status} redirect to"));
    }
    assert_eq!(other.request_count(), 0, "the foreign host was contacted");
}

#[test]
fn a_redirect_of_a_stream_is_not_followed_either() {
    let other = foreign();
    let target = format!("{}/chat/completions", other.url);
    let run = Test::new().args(["--stream", "-p", "hi"]).server(vec![Step::redirect(307, &target)]).run();
    fails_clearly(&run, &target);
    assert_eq!(other.request_count(), 0);
}

#[test]
fn a_redirect_without_location_says_so() {
    let step = Step::Reply { status: 302, headers: Vec::new(), body: String::new() };
    let run = Test::new().args(["-p", "hi"]).server(vec![step]).run();
    fails_clearly(&run, "no Location given");
}

#[test]
fn a_huge_location_is_shortened_to_one_readable_line() {
    let location = format!("http://evil.example/{}", "a".repeat(16_000));
    let run = Test::new().args(["-p", "hi"]).server(vec![Step::redirect(302, &location)]).run();
    fails_clearly(&run, "evil.example");
    assert!(run.stderr.len() < 1_000, "{} bytes of error", run.stderr.len());
}

#[test]
fn a_message_that_is_a_string_is_a_malformed_reply() {
    let run = Test::new().args(["-p", "hi"]).server(vec![message(json!("the answer"))]).run();
    fails_clearly(&run, "malformed reply");
}

#[test]
fn content_as_a_list_of_parts_is_the_answer() {
    let parts = json!([{"type": "text", "text": "part one, "}, {"type": "text", "text": "part two"}]);
    let run = Test::new()
        .args(["-p", "hi"])
        .server(vec![message(json!({"role": "assistant", "content": parts}))])
        .run();
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "part one, part two");
}

#[test]
fn content_of_any_other_type_is_a_malformed_reply() {
    for content in [json!(42), json!({"text": "x"}), json!([1, 2]), json!(true)] {
        let run = Test::new()
            .args(["-p", "hi"])
            .server(vec![message(json!({"role": "assistant", "content": content}))])
            .run();
        fails_clearly(&run, "malformed reply");
    }
}

#[test]
fn choices_that_are_not_a_list_are_a_malformed_reply() {
    let step = body(json!({"choices": {"0": {"message": {"content": "hidden"}}}}));
    let run = Test::new().args(["-p", "hi"]).server(vec![step]).run();
    fails_clearly(&run, "choices is not a list");
}

#[test]
fn tool_calls_of_the_wrong_shape_run_nothing() {
    let write = json!({"name": "write_file", "arguments": {"path": "owned.txt", "content": "x"}});
    for tool_calls in [
        json!({"function": write}),
        json!([{"id": "c", "function": {"name": "write_file", "arguments": 17}}]),
        json!([{"id": 5, "function": write}]),
        json!(["write_file"]),
    ] {
        let run = Test::new()
            .args(["--allow-write", "-p", "hi"])
            .server(vec![message(json!({"role": "assistant", "content": null, "tool_calls": tool_calls}))])
            .run();
        fails_clearly(&run, "tool");
        assert_eq!(run.read("owned.txt"), None, "a malformed call ran");
        assert_eq!(run.requests.len(), 1);
    }
}

#[test]
fn a_finish_reason_that_is_not_text_is_a_malformed_reply() {
    let step = body(json!({"choices": [{"message": {"content": "ok"}, "finish_reason": ["stop"]}]}));
    let run = Test::new().args(["-p", "hi"]).server(vec![step]).run();
    fails_clearly(&run, "finish_reason");
}

#[test]
fn a_reply_cut_at_the_output_limit_is_not_the_answer_and_runs_no_call() {
    let step = body(json!({"choices": [{"finish_reason": "length", "message": {"content": "The first",
        "tool_calls": [{"id": "c", "function": {"name": "write_file",
            "arguments": "{\"path\": \"cut.txt\", \"content\": \"half"}}]}}]}));
    let run = Test::new().args(["--allow-write", "-p", "hi"]).server(vec![step]).run();
    fails_clearly(&run, "output limit");
    run.stderr_has("not run");
    assert_eq!(run.read("cut.txt"), None);
}

#[test]
fn a_stream_stopped_by_the_content_filter_has_no_final_event() {
    let chunk = |delta: Value, finish: Value| {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string()
    };
    let chunks = vec![
        chunk(json!({"content": "Here is how to"}), Value::Null),
        chunk(json!({}), json!("content_filter")),
    ];
    let step = Step::Stream { chunks, delay_ms: 0, finish: true };
    let run = Test::new().args(["--stream", "--json", "-p", "hi"]).server(vec![step]).run();
    run.expect_code(1);
    let events: Vec<Value> =
        run.stdout.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert!(events.iter().all(|e| e["type"] != "final"), "a cut reply became final: {events:?}");
    let exit = events.last().expect("an exit event");
    assert_eq!((exit["type"].as_str(), exit["code"].as_u64()), (Some("exit"), Some(1)));
    assert!(exit["error"].as_str().is_some_and(|e| e.contains("content filter")), "{exit}");
}

#[test]
fn streamed_content_parts_are_the_answer_and_odd_deltas_are_refused() {
    let chunk = |delta: Value, finish: Value| {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string()
    };
    let parts = vec![
        chunk(json!({"content": [{"type": "text", "text": "in "}]}), Value::Null),
        chunk(json!({"content": [{"type": "text", "text": "parts"}]}), json!("stop")),
    ];
    let run = Test::new()
        .args(["--stream", "-p", "hi"])
        .server(vec![Step::Stream { chunks: parts, delay_ms: 0, finish: true }])
        .run();
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "in parts");
    let odd = vec![chunk(json!({"content": {"text": "x"}}), json!("stop"))];
    let run = Test::new()
        .args(["--stream", "-p", "hi"])
        .server(vec![Step::Stream { chunks: odd, delay_ms: 0, finish: true }])
        .run();
    fails_clearly(&run, "malformed stream chunk");
}

#[test]
fn a_body_shorter_than_its_content_length_fails_clearly() {
    let raw =
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"choices\": ["
            .to_vec();
    let run = Test::new().args(["-p", "hi"]).server(vec![Step::Raw(raw)]).run();
    run.expect_code(1);
    assert!(run.stdout.trim().is_empty());
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn a_response_that_is_not_http_fails_clearly() {
    let raw = b"SSH-2.0-OpenSSH_9.6\r\n\x1b[2Jgarbage\r\n\r\n".to_vec();
    let run = Test::new().args(["-p", "hi"]).server(vec![Step::Raw(raw)]).run();
    run.expect_code(1);
    assert!(run.stdout.trim().is_empty());
    assert!(!run.stderr.contains('\x1b') && !run.stderr.contains("panicked"), "{:?}", run.stderr);
}

#[test]
fn a_well_formed_answer_after_a_tool_call_still_works() {
    // The control case: the checks above refuse odd shapes, not ordinary ones.
    let run = Test::new()
        .args(["-p", "hi"])
        .file("a.txt", "alpha\n")
        .server(vec![call("read_file", json!({"path": "a.txt"})), text("done")])
        .run();
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "done");
}

// ---- issue 22: what a server says of itself, and what a stuck model does, stay bounded ----

/// llama-server's body when a sampled reply does not parse as a tool call.
fn unparsed_output() -> Step {
    let body = json!({"error": {"code": 500, "message":
        "The model produced output that does not match the expected peg-native format", "type": "server_error"}});
    Step::Reply { status: 500, headers: Vec::new(), body: body.to_string() }
}

#[test]
fn a_server_that_always_fails_to_parse_is_asked_a_bounded_number_of_times() {
    // Retried because it is a sampling slip: a server that answers nothing else must not keep
    // the agent asking. MINI_AGENT_REQUEST_MAX_RETRIES=2: three requests, one line.
    let run = Test::new()
        .args(["-p", "hi"])
        .env("MINI_AGENT_REQUEST_MAX_RETRIES", "2")
        .server(vec![unparsed_output(); 10])
        .run();
    run.expect_code(1).stderr_has("still failing after 2 retries").stderr_has("a sampling slip");
    assert_eq!(run.requests.len(), 3);
    assert!(run.stdout.trim().is_empty());
}

#[test]
fn a_window_a_server_states_cannot_make_the_agent_loop_or_send_more() {
    // A server that states a window of 1 token, one larger than a u64, or 0, for a request it
    // refuses whatever its size: the window it states is believed only within bounds (at least
    // 256 tokens, at most MINI_AGENT_CONTEXT_TOKENS), the request cannot fit it, and the run
    // ends with one line, never a loop of summaries or retries.
    for window in ["1", "999999999999999999999999", "0"] {
        let refusal = || {
            let message = format!(
                "request (5000 tokens) exceeds the available context size ({window} tokens), try increasing it"
            );
            let body =
                json!({"error": {"code": 400, "message": message, "type": "exceed_context_size_error"}});
            Step::Reply { status: 400, headers: Vec::new(), body: body.to_string() }
        };
        let run = Test::new().args(["-p", "hi"]).server(vec![refusal(); 10]).run();
        run.expect_code(1).stderr_has("does not fit");
        assert!(run.requests.len() <= 2, "window {window}: {} requests", run.requests.len());
        assert!(run.stdout.trim().is_empty());
    }
}

#[test]
fn a_model_asked_without_tools_cannot_run_a_tool_by_calling_one_anyway() {
    // The 6th request of a stuck model offers no tools; a reply that calls one all the same
    // (a hostile model, or a server that ignores the request) runs nothing: the turn stops.
    let touch =
        |n: usize| call("bash", json!({"command": format!("touch once; echo same{}", " ".repeat(n))}));
    let same = || call("bash", json!({"command": "echo same"}));
    let run = Test::new()
        .args(["--allow-shell", "-p", "go"])
        .server(vec![same(), same(), same(), same(), same(), touch(0)])
        .run();
    run.expect_code(2).stderr_has("gave no answer when asked once more without tools");
    assert!(!run.root().join("once").exists(), "a tool ran after tools were turned off");
    assert_eq!(run.tool_results().len(), 5);
}
