//! Chapter 17 through the real binary: `tasks run --webhook` against a receiver on
//! 127.0.0.1 (the signature checked here with ring, not with the code under test), a
//! receiver that never answers, a planted hooks.json webhook, and `--metrics` parsed back.

use crate::harness::{Test, text};
use crate::kit::receiver::{Answer, Received, Receiver};
use crate::tasks::{add, repository, tasks_file};
use serde_json::Value;
use std::time::Instant;

const SECRET: &str = "correct horse battery staple";

fn assert_signed(received: &Received) {
    let header = received.header("x-mini-agent-signature").expect("a signature header");
    let hex = header.strip_prefix("sha256=").expect("sha256=");
    let tag: Vec<u8> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, SECRET.as_bytes());
    ring::hmac::verify(&key, &received.body, &tag).expect("the signature is the HMAC of the exact body");
}

fn body(received: &Received) -> Value {
    serde_json::from_slice(&received.body).expect("a JSON body")
}

/// Every line a `# HELP`/`# TYPE` comment or `mini_agent_name{labels} number`; the samples.
fn parse_metrics(text: &str) -> Vec<(String, f64)> {
    let mut samples = Vec::new();
    for line in text.lines() {
        if line.starts_with("# HELP mini_agent_") || line.starts_with("# TYPE mini_agent_") {
            continue;
        }
        let (name, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line}"));
        let base = name.split('{').next().unwrap();
        assert!(base.starts_with("mini_agent_"), "{line}");
        assert!(base.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{line}");
        assert!(
            text.contains(&format!("# TYPE {}", base.trim_end_matches("_sum").trim_end_matches("_count")))
        );
        samples.push((name.to_string(), value.parse().unwrap_or_else(|_| panic!("not a number: {line}"))));
    }
    samples
}

#[test]
fn completed_failed_and_needs_human_are_posted_signed_and_a_500_is_retried() {
    let mut workspace = repository();
    workspace = add(workspace, &["pass", "-p", "1", "--verify", "true"]);
    workspace = add(workspace, &["run out", "-p", "2", "--verify", "false"]);
    workspace = add(workspace, &["give up", "-p", "3", "--verify", "false"]);
    // The first POST gets a 500: the webhook retries it (a model request would not).
    let receiver = Receiver::start(vec![Answer::Status(500, vec![])]).unwrap();
    let steps = vec![text("done"), text("tried"), text("tried too")];
    let run = Test::new()
        .args([
            "tasks",
            "run",
            "--max-attempts",
            "1",
            "--intervention-after",
            "2",
            "--webhook",
            &receiver.url,
        ])
        .args(["--metrics", "tasks.prom"])
        .env("MINI_AGENT_WEBHOOK_SECRET", SECRET)
        .env("OPENAI_API_KEY", "sk-test-key-never-sent-anywhere")
        .server(steps)
        .run_in(workspace);
    run.expect_code(3).stderr_has("task 3 needs a human");
    let received = receiver.received();
    let events: Vec<String> =
        received.iter().map(|r| body(r)["event"].as_str().unwrap().to_string()).collect();
    assert_eq!(events, ["task_completed", "task_completed", "task_failed", "needs_human"], "{}", run.stderr);
    for (received, id) in received.iter().zip(["1", "1", "2", "3"]) {
        assert_signed(received);
        let body = body(received);
        assert_eq!(body["task"]["id"], id);
        assert_eq!(body["session_id"], body["task"]["sessions"][0]);
        let raw = String::from_utf8_lossy(&received.body);
        assert!(!raw.contains(SECRET) && !raw.contains("sk-test-key"), "{raw}");
    }
    assert!(body(&received[3])["reason"].as_str().unwrap().contains("--intervention-after"));
    assert!(!run.stderr.contains("warning"), "a delivered webhook is silent: {}", run.stderr);
    // The metrics file, parsed back; it is not part of any task's commit.
    let metrics = run.read("tasks.prom").expect("the metrics file");
    let samples = parse_metrics(&metrics);
    let value = |name: &str| samples.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    assert_eq!(value("mini_agent_tasks{status=\"done\"}"), Some(1.0), "{metrics}");
    assert_eq!(value("mini_agent_tasks{status=\"failed\"}"), Some(1.0));
    assert_eq!(value("mini_agent_tasks{status=\"needs_human\"}"), Some(1.0));
    assert_eq!(value("mini_agent_attempts_total"), Some(3.0));
    assert_eq!(value("mini_agent_verify_failures_total"), Some(2.0));
    assert_eq!(value("mini_agent_model_requests_total"), Some(3.0));
    assert_eq!(value("mini_agent_prompt_tokens_total"), Some(30.0), "the scripted usage: 10 per reply");
    assert_eq!(value("mini_agent_completion_tokens_total"), Some(15.0));
    assert_eq!(value("mini_agent_attempt_seconds_count"), Some(3.0));
    let committed = crate::tasks::git(run.root(), &["log", "--name-only", "--format="]);
    assert!(!committed.contains("tasks.prom"), "{committed}");
}

#[test]
fn a_receiver_that_never_answers_costs_a_bounded_wait_and_the_loop_goes_on() {
    let mut workspace = repository();
    workspace = add(workspace, &["first", "-p", "1", "--verify", "true"]);
    workspace = add(workspace, &["second", "-p", "2", "--verify", "true"]);
    let receiver = Receiver::start(vec![Answer::Silent]).unwrap();
    let started = Instant::now();
    let run = Test::new()
        .args(["tasks", "run", "--no-commit", "--webhook", &receiver.url])
        .server(vec![text("one"), text("two")])
        .run_in(workspace);
    let took = started.elapsed();
    println!("a silent webhook receiver cost the loop {took:?} (one try, 10 s bound)");
    run.expect_code(0).stderr_has("was not delivered: no answer within 10 s");
    assert_eq!(run.requests.len(), 2, "the second task still ran");
    let saved = tasks_file(run.root());
    assert_eq!(saved["tasks"][1]["status"], "done");
    assert_eq!(
        receiver.received().len(),
        2,
        "the silent one once, never a second copy; then the second task's"
    );
}

#[test]
fn a_planted_hooks_json_webhook_does_not_fire_without_trust() {
    let receiver = Receiver::start(vec![]).unwrap();
    let hooks = format!(r#"{{"webhook": {{"url": "{}"}}}}"#, receiver.url);
    let workspace = add(repository(), &["pass", "--verify", "true"]);
    let run = Test::new()
        .args(["tasks", "run", "--no-commit"])
        .file(".mini_agent/hooks.json", &hooks)
        .server(vec![text("done")])
        .run_in(workspace);
    run.expect_code(0).stderr_has("--trust-hooks");
    assert!(receiver.received().is_empty(), "an unapproved workspace sent data out");
    // Trusted for a run, the same file's webhook fires.
    let reset = Test::new().args(["tasks", "reset", "1"]).run_in(run.workspace);
    let trusted = Test::new()
        .args(["tasks", "run", "--no-commit", "--trust-hooks"])
        .server(vec![text("done")])
        .run_in(reset.workspace);
    trusted.expect_code(0);
    assert_eq!(receiver.received().len(), 1, "{}", trusted.stderr);
}

#[test]
fn tasks_out_of_attempts_are_failed_and_the_run_exits_0() {
    let mut workspace = repository();
    workspace = add(workspace, &["never", "-p", "1", "--verify", "false"]);
    workspace = add(workspace, &["fine", "-p", "2", "--verify", "true"]);
    let run = Test::new()
        .args(["tasks", "run", "--no-commit", "--max-attempts", "1", "--intervention-after", "5"])
        .server(vec![text("tried"), text("done")])
        .run_in(workspace);
    run.expect_code(0).stderr_has("1 task done and 1 task failed");
    let saved = tasks_file(run.root());
    assert_eq!(
        (saved["tasks"][0]["status"].as_str(), saved["tasks"][1]["status"].as_str()),
        (Some("failed"), Some("done"))
    );
}

#[test]
fn a_webhook_url_that_is_not_http_is_a_usage_error() {
    let workspace = add(repository(), &["pass", "--verify", "true"]);
    let run = Test::new()
        .args(["tasks", "run", "--webhook", "file:///etc/passwd"])
        .server(vec![])
        .run_in(workspace);
    run.expect_code(1).stderr_has("http:// or https://");
    assert!(run.requests.is_empty());
}

#[test]
fn ctrl_c_while_a_webhook_waits_stops_before_the_next_task() {
    let mut workspace = repository();
    workspace = add(workspace, &["first", "-p", "1", "--verify", "true"]);
    workspace = add(workspace, &["second", "-p", "2", "--verify", "true"]);
    let receiver = std::sync::Arc::new(Receiver::start(vec![Answer::Silent]).unwrap());
    let waiting = receiver.clone();
    let started = Instant::now();
    let run = Test::new()
        .args(["tasks", "run", "--no-commit", "--webhook", &receiver.url])
        .server(vec![text("one"), text("two")])
        .signal_when(move |_| !waiting.received().is_empty(), crate::harness::SIGINT)
        .run_in(workspace);
    println!("Ctrl+C during a webhook's wait: exit after {:?}", started.elapsed());
    run.expect_code(130).stderr_has("was not delivered: interrupted");
    assert_eq!(run.requests.len(), 1, "the second task was not started");
    let saved = tasks_file(run.root());
    assert_eq!(saved["tasks"][0]["status"], "done");
    assert_eq!(
        (saved["tasks"][1]["status"].as_str(), saved["tasks"][1]["attempts"].as_u64()),
        (Some("pending"), Some(0))
    );
}
