//! Red-team cases: see `main.rs` for the rule this file holds.
//!
//! A hostile or broken MCP server (chapter 18): a malformed handshake, garbage on stdout, a
//! 50 MB result, a line that never ends, a server that never answers at start or during a
//! call. Each case runs the real binary with the scripted MCP server of
//! `selfcheck/mcp/fake_server.sh` in one of its bad modes, measures peak RSS like the other
//! resource cases, and asserts the rule: the run ends (no hang), without a panic, with the
//! memory bound kept, and the model or the user is told what happened in one line.

use crate::harness::{TempDir, call, text};
use crate::resources::{Measured, measure};
use serde_json::{Value, json};
use std::time::Instant;

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/selfcheck/mcp/fake_server.sh");
const ARGS: [&str; 5] = ["-p", "go", "--trust-mcp", "--allow-mcp", "--max-turns=5"];

/// A timeout that a case expects to fire: the server never answers in time.
const FIRES: u64 = 2;
/// A timeout that must not fire: a guard far above a local answer, however loaded the machine.
const GUARD: u64 = 60;

/// Runs the agent with the fake server in `mode` (and `env`), `steps`, the server's call and
/// start-up timeouts in seconds. The run must end without a panic; how long it took is printed,
/// not bounded: a case that waits for something endless shows as a hang (the measuring
/// wrapper's guard), and each case checks the one line that says which timeout ended it.
fn hostile(
    name: &str,
    env: Value,
    steps: Vec<mini_agent::scripted_server::Step>,
    (call_timeout, startup_timeout): (u64, u64),
) -> Measured {
    let workspace = TempDir::new("redteam-mcp");
    let config = json!({"mcpServers": {"bad": {"command": "sh", "args": [FAKE], "env": env,
        "timeout": call_timeout, "startup_timeout": startup_timeout}}});
    workspace.write(".mcp.json", &config.to_string());
    let started = Instant::now();
    let run = measure(name, workspace, &ARGS, steps);
    eprintln!("figure: {name}: the run ended after {:.2?}", started.elapsed());
    assert!(!run.stderr.contains("panicked"), "{name}: {}", run.stderr);
    run
}

#[test]
fn a_malformed_handshake_is_one_warning() {
    let env = json!({"FAKE_MODE": "badinit"});
    let run = hostile("MCP malformed handshake", env, vec![text("fine")], (GUARD, FIRES));
    run.expect_code(0);
    assert!(run.stderr.contains("MCP server `bad` not started: no answer within 2 s"), "{}", run.stderr);
}

#[test]
fn garbage_on_stdout_is_skipped() {
    let steps = vec![call("mcp__bad__echo", json!({"message": "through the noise"})), text("ok")];
    let run = hostile("MCP garbage on stdout", json!({"FAKE_MODE": "garbage"}), steps, (GUARD, GUARD));
    run.expect_code(0);
    assert!(run.tool_results()[0].contains("through the noise"), "{:?}", run.tool_results());
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_50_mb_result_fails_its_call_within_the_memory_bound() {
    // 8 MiB must arrive before the call's timeout, so that timeout is a guard (at 2 s, then at
    // 10 s, a loaded machine failed it).
    let steps = vec![call("mcp__bad__big", json!({})), call("mcp__bad__echo", json!({})), text("ok")];
    let run = hostile("MCP 50 MB result", json!({}), steps, (GUARD, GUARD));
    run.expect_code(0);
    let results = run.tool_results();
    assert!(results[0].contains("more than the 8 MiB a line may hold"), "{}", results[0]);
    assert_eq!(results[1], "echo {}", "the server answers the next call");
}

#[test]
fn a_line_that_never_ends_times_out_within_the_memory_bound() {
    let steps = vec![call("mcp__bad__endless", json!({})), text("ok")];
    let run = hostile("MCP endless line", json!({}), steps, (FIRES, GUARD));
    run.expect_code(0);
    assert!(
        run.tool_results()[0].contains("gave no answer in time (no answer within 2 s)"),
        "{:?}",
        run.tool_results()
    );
}

#[test]
fn a_server_that_never_answers_costs_its_timeouts_only() {
    let env = json!({"FAKE_MODE": "silent"});
    let run = hostile("MCP silent at start", env, vec![text("fine")], (GUARD, FIRES));
    run.expect_code(0);
    assert!(run.stderr.contains("not started: no answer within 2 s"), "{}", run.stderr);
    let steps = vec![call("mcp__bad__slow", json!({})), text("ok")];
    let run = hostile("MCP silent during a call", json!({"FAKE_SLOW": "3600"}), steps, (FIRES, GUARD));
    run.expect_code(0);
    assert!(run.tool_results()[0].contains("gave no answer in time"), "{:?}", run.tool_results());
}

#[test]
fn a_server_of_huge_schemas_cannot_fill_every_request() {
    // Found by rt-b: each schema is capped (16 KiB) but not their sum: 256 tools of 15 KB made
    // every request carry 3.8 MB of schemas, about a million tokens, and the session ended
    // "the conversation does not fit" before the model was asked anything.
    let env = json!({"FAKE_MODE": "hugeschemas"});
    let run = hostile("MCP 256 huge schemas", env, vec![text("fine")], (GUARD, GUARD));
    let tools = run.requests.first().map(|r| r["tools"].to_string().len()).unwrap_or(0);
    eprintln!("[resources] tool schemas sent with 256 huge MCP schemas: {tools} bytes");
    run.expect_code(0);
    assert!(tools < 300_000, "{tools} bytes of schemas");
    assert!(run.stderr.contains("schemas"), "{}", run.stderr);
}
