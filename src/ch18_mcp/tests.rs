//! The client against a tiny scripted server (`selfcheck/mcp/fake_server.sh`): the
//! handshake, paging, calls, errors, a death mid-call, a timeout, and misbehaving servers.

use super::config::ServerConfig;
use super::rpc::RpcError;
use super::server::{Server, State};
use super::*;
use serde_json::json;
use std::time::{Duration, Instant};

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/selfcheck/mcp/fake_server.sh");

use crate::temp_dir::TempDir as Root;

fn fake(root: &Root, env: &[(&str, &str)]) -> ServerConfig {
    ServerConfig {
        name: "fake".into(),
        command: "sh".into(),
        args: vec![FAKE.into()],
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        cwd: root.path().to_path_buf(),
        // Guards, not measures: a test that wants a timeout to fire sets its own.
        timeout: Duration::from_secs(60),
        startup_timeout: Duration::from_secs(60),
        source: root.join(".mcp.json"),
    }
}

fn call(name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: "c1".into(), name: name.into(), arguments: arguments.into() }
}

#[test]
fn lists_every_page_and_calls_with_arguments() {
    let root = Root::new("mcp-list");
    let servers = McpServers::new(vec![fake(&root, &[])], root.path());
    let schemas = servers.schemas();
    let names: Vec<&str> = schemas.iter().filter_map(|s| s["function"]["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "mcp__fake__echo",
            "mcp__fake__fail",
            "mcp__fake__slow",
            "mcp__fake__die",
            "mcp__fake__big",
            "mcp__fake__endless"
        ]
    );
    let echoed = servers.call(&call("mcp__fake__echo", r#"{"message":"hi there"}"#));
    assert_eq!(echoed.status, ToolStatus::Ok);
    assert_eq!(echoed.content, r#"echo {"message":"hi there"}"#);
    let failed = servers.call(&call("mcp__fake__fail", ""));
    assert_eq!((failed.content.as_str(), failed.status), ("the fake tool failed", ToolStatus::Error));
    assert_eq!(servers.call(&call("mcp__fake__echo", "[1]")).status, ToolStatus::Error);
    assert_eq!(servers.call(&call("mcp__fake__nope", "{}")).status, ToolStatus::Error);
    let report = servers.report();
    assert!(report.contains("fake · running") && report.contains("  mcp__fake__big"), "{report}");
    let log = std::fs::read_to_string(root.join(".mini_agent/mcp/fake.log")).unwrap();
    assert!(log.contains("fake server started"), "{log}");
}

#[test]
fn a_server_killed_mid_call_is_an_unknown_outcome_and_restarts() {
    let root = Root::new("mcp-die");
    let servers = McpServers::new(vec![fake(&root, &[])], root.path());
    servers.ensure_started(false);
    let died = servers.call(&call("mcp__fake__die", "{}"));
    assert_eq!(died.status, ToolStatus::Unknown, "{}", died.content);
    assert!(died.content.contains("killed by signal 9"), "{}", died.content);
    assert!(servers.report().contains("restarts on its next call"), "{}", servers.report());
    let again = servers.call(&call("mcp__fake__echo", r#"{"message":"back"}"#));
    assert_eq!(again.status, ToolStatus::Ok, "{}", again.content);
}

#[test]
fn a_timeout_cancels_the_request_and_the_server_goes_on() {
    let root = Root::new("mcp-timeout");
    let log = root.join("received.jsonl");
    let log_text = log.to_str().unwrap().to_string();
    let mut config = fake(&root, &[("FAKE_LOG", &log_text), ("FAKE_SLOW", "3")]);
    config.timeout = Duration::from_millis(300);
    let mut server = Server::new(config, root.path());
    server.start().unwrap();
    // The answer comes after 3 s: a timeout, not the answer, ended the call.
    assert_eq!(server.call("slow", json!({})), Err(RpcError::Timeout(Duration::from_millis(300))));
    // The late answer is dropped; the next call gets its own. The server notes when it has
    // answered, so the next call is sent after the late answer, however slow the machine.
    let answered = root.join("received.jsonl.answered");
    let started = Instant::now();
    while !answered.exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "the slow tool never answered");
        std::thread::sleep(Duration::from_millis(10));
    }
    let answer = server.call("echo", json!({"message": "after"})).unwrap();
    assert_eq!(answer["content"][0]["text"], r#"echo {"message":"after"}"#);
    let received = std::fs::read_to_string(&log).unwrap();
    assert!(received.contains(r#""method":"notifications/cancelled""#), "{received}");
    assert!(received.contains(r#""requestId":4"#), "{received}");
}

#[test]
fn servers_that_never_start_are_reported_and_skipped() {
    let root = Root::new("mcp-never");
    let log = root.join("silent.log");
    let log = log.to_str().unwrap();
    // Two seconds each: far more than a shell needs to start, so both have started before
    // either is given up on, if they start together.
    let mut silent = fake(&root, &[("FAKE_MODE", "silent"), ("FAKE_LOG", log)]);
    silent.startup_timeout = Duration::from_secs(2);
    silent.name = "silent".into();
    let mut quiet = fake(&root, &[("FAKE_MODE", "silent"), ("FAKE_LOG", log)]);
    quiet.startup_timeout = Duration::from_secs(2);
    quiet.name = "quiet".into();
    let mut missing = fake(&root, &[]);
    missing.command = "/nonexistent/mcp-server".into();
    missing.name = "missing".into();
    let mut exits = fake(&root, &[("FAKE_MODE", "exit")]);
    exits.name = "exits".into();
    let mut junk = fake(&root, &[("FAKE_MODE", "badinit")]);
    junk.startup_timeout = Duration::from_millis(400);
    junk.name = "junk".into();
    let servers = McpServers::new(vec![silent, quiet, missing, exits, junk, fake(&root, &[])], root.path());
    let started = Instant::now();
    let schemas = servers.schemas();
    println!("figure: six servers, three that never start, listed after {:?}", started.elapsed());
    // In parallel: both silent servers were running before either was given up on (one after
    // the other, the first would have stopped before the second started).
    let events = std::fs::read_to_string(root.join("silent.log")).unwrap_or_default();
    assert!(events.starts_with("silent start\nsilent start\n"), "{events:?}");
    assert_eq!(schemas.len(), 6);
    let report = servers.report();
    assert!(report.contains("silent · failed: no answer within 2 s"), "{report}");
    assert!(report.contains("quiet · failed: no answer within 2 s"), "{report}");
    assert!(report.contains("missing · failed: cannot start `/nonexistent/mcp-server`"), "{report}");
    assert!(report.contains("exits · failed: the server exited with status 3"), "{report}");
    assert!(report.contains("junk · failed"), "{report}");
    let not_run = servers.call(&call("mcp__fake__echo", "{}"));
    assert_eq!(not_run.status, ToolStatus::Ok);
}

#[test]
fn a_server_that_failed_to_start_is_tried_again_by_mcp() {
    let root = Root::new("mcp-retry");
    let go = root.join("go");
    let mut slow = fake(&root, &[("FAKE_GO", go.to_str().unwrap())]);
    slow.startup_timeout = Duration::from_millis(300);
    let servers = McpServers::new(vec![slow], root.path());
    assert!(servers.schemas().is_empty());
    let report = servers.report();
    assert!(
        report.contains("fake · failed: no answer within 300 ms (raise its \"startup_timeout\" in"),
        "{report}"
    );
    // The next turn does not wait for it again; `/mcp` does, and now it answers.
    std::fs::write(&go, "").unwrap();
    assert!(servers.schemas().is_empty(), "a turn does not retry a failed start");
    let report = servers.report();
    assert!(report.contains("fake · running"), "{report}");
    assert_eq!(servers.schemas().len(), 6);
}

#[test]
fn garbage_and_oversized_answers_cost_bounded_memory() {
    let root = Root::new("mcp-garbage");
    let mut server = Server::new(fake(&root, &[("FAKE_MODE", "garbage")]), root.path());
    server.start().unwrap();
    assert_eq!(server.state, State::Running);
    let answer = server.call("echo", json!({"message": "ok"})).unwrap();
    assert_eq!(answer["content"][0]["text"], r#"echo {"message":"ok"}"#);
    let mut big = Server::new(fake(&root, &[("FAKE_BIG", "12000000")]), root.path());
    big.start().unwrap();
    match big.call("big", json!({})) {
        Err(RpcError::TooLarge(bytes)) => assert!(bytes > 12_000_000),
        other => panic!("expected TooLarge, got {:?}", other.map(|_| "a result")),
    }
    let after = big.call("echo", json!({})).unwrap();
    assert_eq!(after["content"][0]["text"], "echo {}");
}

#[test]
fn the_gate_asks_for_mcp_calls_like_bash_and_results_are_bounded() {
    use crate::ch12_permissions::{Gate, Permissions};
    let root = Root::new("mcp-gate");
    let mcp = Arc::new(McpServers::new(vec![fake(&root, &[("FAKE_BIG", "100000")])], root.path()));
    let tools = WithMcp::new(
        Workspace::new(root.path()).unwrap(),
        Arc::clone(&mcp),
        Workspace::new(root.path()).unwrap(),
    );
    let mut closed = Gate::new(tools, Permissions::default(), None);
    let names: Vec<String> = closed.schemas().iter().map(|s| s["function"]["name"].to_string()).collect();
    assert_eq!(names.len(), 6 + 6, "{names:?}");
    let denied = closed.run(&call("mcp__fake__echo", "{}"));
    assert_eq!(denied.status, ToolStatus::Denied);
    assert!(
        denied.content.contains("calling MCP tools needs permission; rerun with --allow-mcp"),
        "{}",
        denied.content
    );
    let tools = WithMcp::new(Workspace::new(root.path()).unwrap(), mcp, Workspace::new(root.path()).unwrap());
    let mut open = Gate::new(tools, Permissions::granting(["--allow-mcp"]), None);
    assert_eq!(open.run(&call("mcp__fake__echo", "{}")).content, "echo {}");
    assert_eq!(open.run(&call("list_files", "{}")).status, ToolStatus::Ok);
    let big = open.run(&call("mcp__fake__big", "{}"));
    assert_eq!(big.status, ToolStatus::Ok);
    assert!(
        big.content.len() < 40_000
            && big.content.contains("bytes omitted; full output: .mini_agent/outputs/mcp-"),
        "{}",
        big.content.len()
    );
}
