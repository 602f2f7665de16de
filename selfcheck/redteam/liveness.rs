//! Red-team cases: see `main.rs` for the rule this file holds.
//!
//! Liveness: nothing the server, the model or a signal does can hang the agent. A server that
//! stalls or drips is cut by `MINI_AGENT_IDLE_TIMEOUT_SECS` (the wait for the next byte, never
//! the length of the reply); globs match in O(n·m); walks stop on Ctrl+C; SIGTERM and SIGHUP
//! end a turn the way Ctrl+C does.

use crate::harness::{Test, text};
use mini_agent::ch13_scripted_server::Step;
use std::time::{Duration, Instant};

/// The bar of issue 10: a stalled server with a 3 s idle timeout ends in under 10 s, exit 1,
/// with one line that names the variable.
fn ends_within_the_idle_bound(label: &str, test: Test) {
    let started = Instant::now();
    let run = test.env("MINI_AGENT_IDLE_TIMEOUT_SECS", "3").args(["-p", "go"]).run();
    let took = started.elapsed();
    eprintln!("figure: {label}: ended after {took:.2?} with MINI_AGENT_IDLE_TIMEOUT_SECS=3");
    run.expect_code(1).stderr_has("no byte from the server for 3 s (MINI_AGENT_IDLE_TIMEOUT_SECS)");
    assert!(took < Duration::from_secs(10), "{label}: {took:?}");
    assert!(took >= Duration::from_secs(3), "{label}: the bound is the idle timeout, got {took:?}");
    let error_lines = run.stderr.lines().filter(|l| l.contains("no byte from the server")).count();
    assert_eq!(error_lines, 1, "one line:\n{}", run.stderr);
}

#[test]
fn a_server_that_never_sends_the_headers_is_cut_by_the_idle_timeout() {
    ends_within_the_idle_bound("no headers", Test::new().server(vec![Step::delayed(60_000, text("late"))]));
}

#[test]
fn a_body_that_stalls_after_the_headers_is_cut_by_the_idle_timeout() {
    ends_within_the_idle_bound("stalled body", Test::new().server(vec![Step::drip(60_000, text("never"))]));
}

#[test]
fn a_body_that_drips_slower_than_the_bound_is_cut() {
    // One byte every 4 s: each wait is longer than the 3 s bound.
    ends_within_the_idle_bound("4 s drip", Test::new().server(vec![Step::drip(4_000, text("drip"))]));
}

#[test]
fn a_stream_that_stalls_after_the_headers_is_cut_by_the_idle_timeout() {
    let stalled = Step::Stream { chunks: vec!["{}".into()], delay_ms: 60_000, finish: true };
    ends_within_the_idle_bound("stalled stream", Test::new().args(["--stream"]).server(vec![stalled]));
}

#[test]
fn a_stream_that_never_sends_the_headers_is_cut_by_the_idle_timeout() {
    let late = Step::delayed(60_000, Step::Stream { chunks: vec![], delay_ms: 0, finish: true });
    ends_within_the_idle_bound("stream without headers", Test::new().args(["--stream"]).server(vec![late]));
}

/// The streamed reply of `answer`, as the SSE chunks a server sends.
fn streamed(answer: &str) -> Step {
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": answer}, "finish_reason": null}]});
    let end = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    Step::Stream { chunks: vec![chunk.to_string(), end.to_string()], delay_ms: 0, finish: true }
}

/// Issue 11, item 11: a reply that takes longer than the idle timeout but keeps coming is
/// never cut. Thinking for 1.5 s, then a byte every 20 ms (several seconds in all) under a
/// 2 s bound. The old client cut a reply at a fixed total; this one bounds only silence.
#[test]
fn a_long_reply_that_keeps_coming_is_never_cut() {
    for stream in [false, true] {
        let reply = if stream { streamed("all of it") } else { text("all of it") };
        let mut test = Test::new()
            .env("MINI_AGENT_IDLE_TIMEOUT_SECS", "2")
            .server(vec![Step::delayed(1_500, Step::drip(20, reply))])
            .args(["-p", "go"]);
        if stream {
            test = test.args(["--stream"]);
        }
        let started = Instant::now();
        let run = test.run();
        let took = started.elapsed();
        eprintln!("figure: a reply of {took:.2?} (stream: {stream}) under a 2 s idle timeout");
        run.expect_code(0);
        assert!(run.stdout.contains("all of it"), "{}", run.stdout);
        assert!(took > Duration::from_secs(4), "the reply outlasted the bound twice over: {took:?}");
    }
}

/// The same rule, past the old fixed limit of the non-streaming client: the bound is the
/// variable, so a silence longer than the old 120 s total would be allowed with a larger one,
/// and a silence shorter than the old total is cut when the variable says so.
#[test]
fn the_bound_is_the_variable_not_a_hidden_constant() {
    let run = Test::new()
        .env("MINI_AGENT_IDLE_TIMEOUT_SECS", "1")
        .server(vec![Step::delayed(2_500, text("too late"))])
        .args(["-p", "go"])
        .run();
    run.expect_code(1).stderr_has("no byte from the server for 1 s (MINI_AGENT_IDLE_TIMEOUT_SECS)");
    let run = Test::new()
        .env("MINI_AGENT_IDLE_TIMEOUT_SECS", "4")
        .server(vec![Step::delayed(2_500, text("in time"))])
        .args(["-p", "go"])
        .run();
    run.expect_code(0);
    assert!(run.stdout.contains("in time"), "{}", run.stdout);
}

#[test]
fn a_bad_idle_timeout_value_is_a_clear_error() {
    for bad in ["0", "soon", "2.5"] {
        let run = Test::new()
            .env("MINI_AGENT_IDLE_TIMEOUT_SECS", bad)
            .server(vec![text("unused")])
            .args(["-p", "go"])
            .run();
        run.expect_code(1).stderr_has("MINI_AGENT_IDLE_TIMEOUT_SECS must be a whole number");
        assert!(run.requests.is_empty(), "{bad}: nothing is sent with a bad setting");
    }
}

#[test]
fn ctrl_c_ends_a_dripping_reply_at_once() {
    let started = Instant::now();
    let run = Test::new()
        .server(vec![Step::drip(200, text("a long, long answer"))])
        .interrupt_after(1)
        .args(["-p", "go"])
        .run();
    let took = started.elapsed();
    eprintln!("figure: Ctrl+C during a dripping reply: exit after {took:.2?}");
    run.expect_code(130);
    assert!(took < Duration::from_secs(5), "{took:?}");
}
