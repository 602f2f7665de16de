use super::*;
use crate::ch15_tasks::{Task, TaskEvent, TaskEvents, TaskStatus};
use crate::temp_dir::TempDir;
use crate::testkit::receiver::{Answer, Receiver};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The real policy with a short first backoff, for a test. Its timeouts are guards, far above
/// a local answer: 800 ms failed every receiver that answers when 64 test threads ran beside
/// busy loops. Only [`impatient`] has a timeout meant to fire.
fn quick() -> Policy {
    Policy {
        connect_timeout: Duration::from_secs(30),
        try_timeout: Duration::from_secs(30),
        total: Duration::from_secs(120),
        first_backoff: Duration::from_millis(20),
        ..WEBHOOK_POLICY
    }
}

/// [`quick`] with a try timeout of 800 ms: for a receiver that never answers.
fn impatient() -> Policy {
    Policy { try_timeout: Duration::from_millis(800), ..quick() }
}

/// Waits until the receiver has recorded `count` requests: a request may be sent and its try
/// given up on before the receiver's thread has read it.
fn wait_for_requests(receiver: &Receiver, count: usize) {
    let started = Instant::now();
    while receiver.received().len() < count {
        assert!(started.elapsed() < Duration::from_secs(60), "the receiver never got {count} requests");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn webhook(url: &str, secret: Option<&str>) -> Webhook {
    let config = WebhookConfig { url: url.into(), secret: secret.map(str::to_string), events: None };
    Webhook::new(config).expect("a valid URL")
}

fn task(status: TaskStatus) -> Task {
    let mut task = Task::new("7".into(), "make it work".into());
    task.status = status;
    task.sessions = vec!["20261201-154000-0001".into()];
    task
}

/// The HMAC computed here with ring's verify, not with the code under test.
fn assert_signed(secret: &str, received: &crate::testkit::receiver::Received) {
    let header = received.header("x-mini-agent-signature").expect("a signature header");
    let hex = header.strip_prefix("sha256=").expect("sha256= prefix");
    let tag: Vec<u8> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    ring::hmac::verify(&key, &received.body, &tag).expect("the signature matches the exact body");
}

#[test]
fn the_three_events_arrive_signed_with_the_task_and_no_secret() {
    let receiver = Receiver::start(vec![]).unwrap();
    let mut notifier = Notifier::new(Some(webhook(&receiver.url, Some("s3cret"))), None);
    notifier.policy = quick();
    let (done, failed, stuck) =
        (task(TaskStatus::Done), task(TaskStatus::Failed), task(TaskStatus::NeedsHuman));
    notifier.event(TaskEvent::Started { task: &done, session: "x" });
    notifier.event(TaskEvent::Completed { task: &done, commit: Some("abc123") });
    notifier.event(TaskEvent::Failed { task: &failed });
    notifier.event(TaskEvent::NeedsHuman { task: &stuck, reason: "3 failed attempts in a row" });
    let received = receiver.received();
    assert_eq!(received.len(), 3);
    let bodies: Vec<Value> = received.iter().map(|r| serde_json::from_slice(&r.body).unwrap()).collect();
    let events: Vec<&str> = bodies.iter().map(|b| b["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["task_completed", "task_failed", "needs_human"]);
    for (received, body) in received.iter().zip(&bodies) {
        assert_signed("s3cret", received);
        assert_eq!(received.header("content-type"), Some("application/json"));
        assert_eq!(body["task"]["id"], "7");
        assert_eq!(body["session_id"], "20261201-154000-0001");
        assert!(body["time"].as_str().unwrap().ends_with('Z'));
        assert!(!String::from_utf8_lossy(&received.body).contains("s3cret"));
    }
    assert_eq!(bodies[0]["commit"], "abc123");
    assert_eq!(bodies[2]["reason"], "3 failed attempts in a row");
}

#[test]
fn without_a_secret_there_is_no_signature_and_events_filter() {
    let receiver = Receiver::start(vec![]).unwrap();
    let config =
        WebhookConfig { url: receiver.url.clone(), secret: None, events: Some(vec!["NeedsHuman".into()]) };
    let mut notifier = Notifier::new(Some(Webhook::new(config).unwrap()), None);
    notifier.policy = quick();
    notifier.event(TaskEvent::Completed { task: &task(TaskStatus::Done), commit: None });
    notifier.event(TaskEvent::NeedsHuman { task: &task(TaskStatus::NeedsHuman), reason: "r" });
    let received = receiver.received();
    assert_eq!(received.len(), 1, "only the event asked for");
    assert_eq!(received[0].header("x-mini-agent-signature"), None);
}

#[test]
fn a_500_then_a_200_is_retried_and_a_retry_after_is_honoured() {
    let after = vec![("Retry-After".to_string(), "1".to_string())];
    let receiver = Receiver::start(vec![Answer::Status(500, vec![]), Answer::Status(429, after)]).unwrap();
    let started = Instant::now();
    let delivered = webhook(&receiver.url, None).deliver(b"{}", &quick()).unwrap();
    assert_eq!(delivered.tries, 3);
    assert!(started.elapsed() >= Duration::from_secs(1), "waited as Retry-After asked");
    assert_eq!(receiver.received().len(), 3);
}

#[test]
fn statuses_outside_the_set_and_redirects_are_not_retried_or_followed() {
    let location = vec![("Location".to_string(), "http://127.0.0.1:9/elsewhere".to_string())];
    for answer in [Answer::Status(400, vec![]), Answer::Status(302, location)] {
        let receiver = Receiver::start(vec![answer]).unwrap();
        let error = webhook(&receiver.url, None).deliver(b"{}", &quick()).unwrap_err();
        assert!(error.contains("not retried"), "{error}");
        assert_eq!(receiver.received().len(), 1);
    }
}

#[test]
fn a_receiver_that_keeps_failing_is_given_up_on_after_the_retries() {
    let receiver = Receiver::start(vec![Answer::Status(503, vec![]); 10]).unwrap();
    let error = webhook(&receiver.url, None).deliver(b"{}", &quick()).unwrap_err();
    assert!(error.contains("HTTP 503 after 4 tries"), "{error}");
    assert_eq!(receiver.received().len(), 4);
}

#[test]
fn a_retry_after_beyond_the_bound_is_not_waited_for() {
    let after = vec![("Retry-After".to_string(), "3600".to_string())];
    let receiver = Receiver::start(vec![Answer::Status(503, after)]).unwrap();
    let started = Instant::now();
    let error = webhook(&receiver.url, None).deliver(b"{}", &quick()).unwrap_err();
    assert!(error.contains("bound"), "{error}");
    // Not waited for: the answer came now, an hour early, and the error says why.
    println!("a Retry-After past the bound was given up on after {:?}", started.elapsed());
}

#[test]
fn a_silent_receiver_costs_one_try_timeout_and_the_loop_goes_on() {
    let receiver = Receiver::start(vec![Answer::Silent]).unwrap();
    let mut notifier = Notifier::new(Some(webhook(&receiver.url, None)), None);
    notifier.policy = impatient();
    let started = Instant::now();
    let error = notifier.send("task_completed", &task(TaskStatus::Done), None, None).unwrap_err();
    let took = started.elapsed();
    println!("a silent receiver was given up on after {took:?} (try timeout 800 ms)");
    assert!(error.contains("no answer within 0.8 s"), "{error}");
    wait_for_requests(&receiver, 1);
    assert_eq!(receiver.received().len(), 1, "a request that may have arrived is not sent twice");
}

#[test]
fn a_refused_connection_is_retried_and_then_given_up() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let error = webhook(&format!("http://127.0.0.1:{port}/"), None).deliver(b"{}", &quick()).unwrap_err();
    assert!(error.contains("after 4 tries"), "{error}");
}

#[test]
fn only_http_and_https_urls_with_a_host_are_taken() {
    for bad in ["ftp://example.com/x", "file:///etc/passwd", "http://", "example.com", "https:// x", ""] {
        let config = WebhookConfig { url: bad.into(), ..WebhookConfig::default() };
        assert!(Webhook::new(config).is_err(), "{bad} was accepted");
    }
    let hook = webhook("HTTPS://user:pw@hooks.example.com/services/T0/B0/SECRET?x=1", None);
    assert_eq!(hook.shown(), "HTTPS://hooks.example.com", "the path and the password are not shown");
}

#[test]
fn the_signature_is_the_hmac_of_the_body() {
    // RFC 4231 test case 2.
    let expected = "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
    assert_eq!(signature("Jefe", b"what do ya want for nothing?"), expected);
}

/// Every line of the file is a comment (`# HELP`/`# TYPE`) or `name{labels} value`.
fn parse_exposition(text: &str) -> Vec<(String, f64)> {
    let mut samples = Vec::new();
    let mut typed = std::collections::HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            assert!(["counter", "gauge", "summary"].contains(&kind), "{line}");
            typed.insert(name.to_string());
            continue;
        }
        if line.starts_with("# HELP mini_agent_") {
            continue;
        }
        let (name, value) = line.rsplit_once(' ').expect("name value");
        let base = name.split('{').next().unwrap();
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '_';
        assert!(base.starts_with("mini_agent_") && base.chars().all(valid), "{line}");
        let family = base.trim_end_matches("_sum").trim_end_matches("_count");
        assert!(typed.contains(base) || typed.contains(family), "no # TYPE before {line}");
        if let Some(labels) = name.strip_prefix(base) {
            assert!(
                labels.is_empty() || (labels.starts_with("{status=\"") && labels.ends_with("\"}")),
                "{line}"
            );
        }
        samples.push((name.to_string(), value.parse::<f64>().expect("a number")));
    }
    samples
}

#[test]
fn the_metrics_file_is_written_atomically_and_parses_back() {
    let dir = TempDir::new("metrics");
    let tasks = dir.path().join("tasks.json");
    let mut list = crate::ch15_tasks::TaskFile::load(&tasks).unwrap();
    list.tasks = vec![task(TaskStatus::Done), task(TaskStatus::Pending), task(TaskStatus::Done)];
    for (index, task) in list.tasks.iter_mut().enumerate() {
        task.id = index.to_string();
    }
    list.save().unwrap();
    let file = dir.path().join("mini_agent.prom");
    let mut notifier = Notifier::new(None, Some(MetricsOut { file: file.clone(), tasks }));
    notifier.counters.add_usage(3, 120, 40);
    let done = task(TaskStatus::Done);
    notifier.event(TaskEvent::Started { task: &done, session: "x" });
    notifier.event(TaskEvent::AttemptFailed { task: &done, output: "no" });
    notifier.event(TaskEvent::Started { task: &done, session: "y" });
    notifier.event(TaskEvent::Completed { task: &done, commit: None });
    let text = std::fs::read_to_string(&file).unwrap();
    let samples = parse_exposition(&text);
    let value = |name: &str| samples.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    assert_eq!(value("mini_agent_tasks{status=\"done\"}"), Some(2.0), "{text}");
    assert_eq!(value("mini_agent_tasks{status=\"pending\"}"), Some(1.0));
    assert_eq!(value("mini_agent_tasks{status=\"needs_human\"}"), Some(0.0));
    assert_eq!(value("mini_agent_attempts_total"), Some(2.0));
    assert_eq!(value("mini_agent_verify_failures_total"), Some(1.0));
    assert_eq!(value("mini_agent_model_requests_total"), Some(3.0));
    assert_eq!(value("mini_agent_prompt_tokens_total"), Some(120.0));
    assert_eq!(value("mini_agent_completion_tokens_total"), Some(40.0));
    assert_eq!(value("mini_agent_attempt_seconds_count"), Some(2.0));
    assert!(value("mini_agent_attempt_seconds_sum").is_some());
    // The cost the loop pays per attempt for --metrics: a read of the task list, a write, an fsync.
    let started = Instant::now();
    for _ in 0..20 {
        notifier.write_metrics();
    }
    println!(
        "--metrics costs {:?} per attempt (task list read, write, fsync, rename)",
        started.elapsed() / 20
    );
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "no temporary file is left behind: {names:?}");
}

#[test]
fn a_workspace_webhook_is_obeyed_only_once_its_file_is_approved() {
    use crate::ch03_tools::Workspace;
    use crate::ch16_hooks::approval::ApprovalStore;
    use crate::ch16_hooks::{HOOKS_FILE, HookLog, load_hooks};
    use crate::ch17_notify::webhook::HOOKS_SECTION;
    let dir = TempDir::new("notify-trust");
    let store = ApprovalStore::at(&dir.join("config/approved"));
    dir.write(
        HOOKS_FILE,
        r#"{"webhook": {"url": "https://collector.example/in", "events": ["needs_human"]}}"#,
    );
    let workspace = Workspace::new(dir.path()).unwrap();
    let load = |trusted, ask: Option<crate::ch16_hooks::approval::Ask>| {
        load_hooks(&workspace, HookLog::default(), trusted, Some(&store), ask, &[HOOKS_SECTION])
    };
    // A file with a webhook and no command is still a file to approve.
    let (hooks, warnings) = load(false, None);
    assert!(hooks.is_none(), "an unapproved webhook must not be loaded");
    assert!(warnings[0].contains("--trust-hooks"), "{warnings:?}");
    let trusted = load(true, None).0.expect("trusted for this run");
    assert_eq!(trusted.webhook().map(|w| w.url), Some("https://collector.example/in".to_string()));
    // The question shows where the data would go.
    let mut questions = Vec::new();
    let mut no = |question: &str| {
        questions.push(question.to_string());
        Some("n".to_string())
    };
    assert!(load(false, Some(&mut no)).0.is_none());
    assert!(
        questions[0].contains("webhook: POST needs_human to https://collector.example/in"),
        "{}",
        questions[0]
    );
}
