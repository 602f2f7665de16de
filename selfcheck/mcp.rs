//! Chapter 18 end to end, offline: the real binary, the scripted model, and the scripted MCP
//! server of `selfcheck/mcp/fake_server.sh`. The tools reach the model, calls run only when
//! allowed, a workspace `.mcp.json` needs approval, Ctrl+C cancels a long call, and a crash
//! during an MCP call is an unknown outcome, exactly like one during `bash`.

use crate::harness::{SIGKILL, TempDir, Test, call, text};
use serde_json::{Value, json};
use std::path::Path;

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/selfcheck/mcp/fake_server.sh");

/// A `.mcp.json` with the scripted server as `fake`, with `env` for it.
fn mcp_json(env: Value) -> String {
    mcp_json_with_timeout(env, 20)
}

/// The same, with this call timeout in seconds.
fn mcp_json_with_timeout(env: Value, seconds: u64) -> String {
    let server = json!({"command": "sh", "args": [FAKE], "env": env, "timeout": seconds});
    json!({"mcpServers": {"fake": server}}).to_string()
}

fn tool_names(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_string)).collect()
}

#[test]
fn mcp_tools_reach_the_model_and_a_call_runs_with_allow_mcp() {
    let run = Test::new()
        .args(["--trust-mcp", "--allow-mcp", "-p", "echo it"])
        .file(".mcp.json", &mcp_json(json!({})))
        .server(vec![call("mcp__fake__echo", json!({"message": "über"})), text("done")])
        .run();
    run.expect_code(0);
    let names = tool_names(&run.requests[0]);
    assert!(
        names.contains(&"mcp__fake__echo".to_string()) && names.contains(&"bash".to_string()),
        "{names:?}"
    );
    assert_eq!(run.only_tool_result(), r#"echo {"message":"über"}"#);
    let finished: Vec<Value> =
        run.only_journal().into_iter().filter(|r| r["type"] == "tool_finished").collect();
    assert_eq!(finished[0]["status"], "ok", "{finished:?}");
    assert!(run.read(".mini_agent/mcp/fake.log").unwrap().contains("fake server started"));
}

#[test]
fn an_unapproved_workspace_file_starts_nothing_and_the_warning_names_the_flag() {
    let run = Test::new()
        .args(["--allow-mcp", "-p", "hi"])
        .file(".mcp.json", &mcp_json(json!({})))
        .server(vec![text("hello")])
        .run();
    run.expect_code(0).stderr_has("not started").stderr_has("--trust-mcp");
    assert!(!tool_names(&run.requests[0]).iter().any(|n| n.starts_with("mcp__")));
    assert!(!run.root().join(".mini_agent/mcp").exists(), "a server was started");
}

#[test]
fn the_users_own_config_needs_no_approval_and_calls_are_denied_without_the_flag() {
    let workspace = TempDir::new("mcp");
    let config = workspace.path().join("user-config");
    std::fs::create_dir_all(config.join("mini-agent")).unwrap();
    std::fs::write(config.join("mini-agent/mcp.json"), mcp_json(json!({}))).unwrap();
    let run = Test::new()
        .args(["-p", "echo it"])
        .env("XDG_CONFIG_HOME", config.to_str().unwrap())
        .server(vec![call("mcp__fake__echo", json!({})), text("done")])
        .run_in(workspace);
    run.expect_code(0);
    let result = run.only_tool_result();
    assert!(result.contains("calling MCP tools needs permission; rerun with --allow-mcp"), "{result}");
}

/// The call never ends by itself (an hour's sleep, an hour's timeout), so only Ctrl+C can end
/// the run: waiting for the call would be a hang, which the harness reports. The cancellation
/// is written just before the agent exits; the server reads it because it is stopped the way
/// MCP asks (its input closed, then time to exit), not killed at once (2 runs in 4 lost it
/// under load).
#[test]
fn ctrl_c_cancels_a_long_mcp_call_and_tells_the_server() {
    let workspace = TempDir::new("mcp");
    let log = workspace.path().join("received.jsonl");
    let env = json!({"FAKE_LOG": log.to_str().unwrap(), "FAKE_SLOW": "3600"});
    let run = Test::new()
        .args(["--trust-mcp", "--allow-mcp", "-p", "wait"])
        .file(".mcp.json", &mcp_json_with_timeout(env, 3600))
        .server(vec![call("mcp__fake__slow", json!({})), text("never asked")])
        // Ctrl+C once the server has the call (it logs every line): then there is a call to cancel.
        .signal_when(
            |root| {
                std::fs::read_to_string(root.join("received.jsonl"))
                    .is_ok_and(|log| log.contains(r#""name":"slow""#))
            },
            crate::harness::SIGINT,
        )
        .run_in(workspace);
    run.expect_code(130);
    let received = run.read("received.jsonl").unwrap_or_default();
    assert!(received.contains(r#""method":"notifications/cancelled""#), "{received}");
    let types = run.journal_types();
    assert!(types.contains(&"interrupted".to_string()), "{types:?}");
}

#[test]
fn a_crash_during_an_mcp_call_is_an_unknown_outcome() {
    let workspace = TempDir::new("mcp");
    // The call never ends by itself: the kill lands during it however late the test notices.
    let env = json!({"FAKE_SLOW": "3600"});
    let calling = |root: &Path| {
        let sessions = root.join(".mini_agent/sessions");
        let Ok(entries) = std::fs::read_dir(sessions) else { return false };
        entries.flatten().any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("tool_started")))
    };
    let run = Test::new()
        .args(["--trust-mcp", "--allow-mcp", "-p", "wait"])
        .file(".mcp.json", &mcp_json_with_timeout(env, 3600))
        .server(vec![call("mcp__fake__slow", json!({})), text("never asked")])
        .signal_when(calling, SIGKILL)
        .run_in(workspace);
    crate::harness::kill_processes_in(run.root()); // the orphaned server and its sleep
    assert_eq!(run.code, None, "killed by SIGKILL\n{}", run.stderr);
    let root = run.root().to_str().unwrap().to_string();
    let status = Test::new().args(["--root", &root, "-c", "--status"]).run();
    status.expect_code(0);
    assert!(
        status.stdout.contains("unknown outcome") && status.stdout.contains("mcp__fake__slow"),
        "{}",
        status.stdout
    );
    let refused = Test::new().args(["--root", &root, "-c", "-p", "go on"]).server(vec![text("x")]).run();
    refused.expect_code(1).stderr_has("--acknowledge-unknown");
}

/// Issue 22, item 5: a first start that takes a while (`npx` downloading) is announced while
/// it is waited for; when it runs out of time the warning names `startup_timeout` and `/mcp`,
/// which tries again; and the approval question asks again after an answer it does not know.
/// The server answers `initialize` only once the test creates `go`.
#[test]
fn a_slow_first_start_is_announced_names_its_timeout_and_mcp_tries_again() {
    use crate::pty::Terminal;
    use mini_agent::scripted_server::ScriptedServer;
    let model = ScriptedServer::scripted(vec![text("first answer")]).expect("server");
    let workspace = TempDir::new("mcp");
    let go = workspace.path().join("go");
    let server = json!({"command": "sh", "args": [FAKE], "env": {"FAKE_GO": go.to_str().unwrap()}, "startup_timeout": 4});
    std::fs::write(workspace.path().join(".mcp.json"), json!({"mcpServers": {"fake": server}}).to_string())
        .unwrap();
    let mut terminal = Terminal::start(workspace.path(), &["--base-url", &model.url]);
    terminal.wait_for("run them (this file, exactly as it is now)? [y] yes, and remember  [n] no: ");
    terminal.type_keys("sure\r");
    terminal.wait_for("please answer y or n");
    terminal.type_keys("y\r");
    terminal.wait_for("> ");
    terminal.type_keys("hello\r");
    terminal.wait_for(&format!("mini-agent: starting MCP server `fake` (sh {FAKE}), waiting up to 4 s"));
    terminal
        .wait_for("MCP server `fake` not started: no answer within 4 s (raise its \"startup_timeout\" in ");
    terminal.wait_for("/mcp tries again");
    terminal.wait_for("first answer");
    terminal.wait_for("> ");
    std::fs::write(&go, "").unwrap();
    terminal.type_keys("/mcp\r");
    terminal.wait_for("fake · running");
    let screen = terminal.exit();
    assert_eq!(screen.matches("wants to start MCP servers").count(), 1, "{screen}");
}
