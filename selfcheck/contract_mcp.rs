//! Contract tests for chapter 18: the real binary against MCP servers nobody here wrote.
//!
//! Our scripted MCP server (`selfcheck/mcp/fake_server.sh`) speaks the protocol as we read
//! it; these cases run the reference servers of the protocol's authors instead,
//! `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/server-filesystem`
//! from npm, at the versions `.ci/contract` pins and installs. The model is the scripted
//! one (offline, deterministic), so each case says exactly which tool it calls: list the
//! tools, call one with arguments, a tool error, a long call cancelled by Ctrl+C (SIGINT), a
//! server killed in the middle of a call (an unknown outcome, then a restart), and a server
//! that never starts.
//!
//! Plain `cargo test` reports every case as ignored; `.ci/contract` sets `MCP_SERVERS_DIR`
//! (the `node_modules` directory that holds both) and runs them with `--include-ignored`.
//! A case run without the variable fails: it never passes by skipping.

#[allow(dead_code)]
#[path = "binary_run.rs"]
mod binary_run;
#[allow(dead_code)]
#[path = "harness.rs"]
mod harness;

use harness::{SIGINT, TempDir, Test, call, messages, text};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const NEEDS: &str = "needs the npm MCP servers: run .ci/contract";

/// `dist/index.js` of one of the two packages, from `MCP_SERVERS_DIR`.
fn server_script(package: &str) -> String {
    let Ok(dir) = std::env::var("MCP_SERVERS_DIR") else {
        panic!("contract_mcp needs MCP_SERVERS_DIR: run .ci/contract, which installs the servers");
    };
    let script = PathBuf::from(dir).join("@modelcontextprotocol").join(package).join("dist/index.js");
    assert!(script.is_file(), "{} is missing: run .ci/contract", script.display());
    script.to_string_lossy().into_owned()
}

/// A `.mcp.json` with server-everything as `everything` (and `extra` servers beside it).
fn everything(extra: Value) -> String {
    let mut servers =
        json!({"everything": {"command": "node", "args": [server_script("server-everything"), "stdio"]}});
    if let (Some(map), Some(more)) = (servers.as_object_mut(), extra.as_object()) {
        map.extend(more.clone());
    }
    json!({"mcpServers": servers}).to_string()
}

fn tools_of(request: &Value) -> Vec<Value> {
    request["tools"].as_array().cloned().unwrap_or_default()
}

fn tool<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().find(|t| t["function"]["name"] == name)
}

/// The `tool_finished` records of the run's one session.
fn finished(run: &harness::Run) -> Vec<Value> {
    run.only_journal().into_iter().filter(|r| r["type"] == "tool_finished").collect()
}

#[test]
#[ignore = "needs the npm MCP servers: run .ci/contract"]
fn everything_lists_its_tools_with_their_schemas() {
    let _ = NEEDS;
    let run = Test::new()
        .args(["--trust-mcp", "-p", "what can you do?"])
        .file(".mcp.json", &everything(json!({})))
        .server(vec![text("many things")])
        .run();
    run.expect_code(0);
    let tools = tools_of(&run.requests[0]);
    let sum = tool(&tools, "mcp__everything__get-sum").expect("get-sum is offered");
    let parameters = &sum["function"]["parameters"];
    assert_eq!(parameters["properties"]["a"]["type"], "number", "{sum}");
    assert_eq!(parameters["required"], json!(["a", "b"]));
    assert!(parameters.get("$schema").is_none());
    for name in
        ["mcp__everything__echo", "mcp__everything__trigger-long-running-operation", "read_file", "bash"]
    {
        assert!(tool(&tools, name).is_some(), "{name} missing");
    }
    println!("contract_mcp: server-everything offers {} tools", tools.len() - 6);
}

#[test]
#[ignore = "needs the npm MCP servers: run .ci/contract"]
fn everything_runs_calls_with_arguments_and_maps_content() {
    let secret = "sk-contract-mcp-0123456789abcdef";
    let run = Test::new()
        .args(["--trust-mcp", "--allow-mcp", "-p", "add and echo"])
        .env("OPENAI_API_KEY", secret)
        .file(".mcp.json", &everything(json!({})))
        .server(vec![
            call("mcp__everything__get-sum", json!({"a": 2, "b": 40})),
            call("mcp__everything__echo", json!({"message": "grüße, 世界"})),
            call("mcp__everything__get-tiny-image", json!({})),
            call("mcp__everything__get-env", json!({})),
            text("done"),
        ])
        .run();
    run.expect_code(0);
    let results: Vec<String> = messages(run.requests.last().unwrap())
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(results[0].contains("42"), "{}", results[0]);
    assert!(results[1].contains("grüße, 世界"), "{}", results[1]);
    assert!(results[2].contains("[image, image/png: not shown to the model]"), "{}", results[2]);
    // The server's environment never held the key: not even its name is there.
    assert!(results[3].contains("PATH") && !results[3].contains("OPENAI_API_KEY"), "{}", results[3]);
    assert!(!results[3].contains(secret));
    assert!(finished(&run).iter().all(|r| r["status"] == "ok"));
}

#[test]
#[ignore = "needs the npm MCP servers: run .ci/contract"]
fn a_tool_error_is_an_error_result() {
    let run = Test::new()
        .args(["--trust-mcp", "--allow-mcp", "-p", "add"])
        .file(".mcp.json", &everything(json!({})))
        .server(vec![call("mcp__everything__get-sum", json!({"a": "two"})), text("sorry")])
        .run();
    run.expect_code(0);
    assert!(run.only_tool_result().contains("Input validation error"), "{}", run.only_tool_result());
    assert_eq!(finished(&run)[0]["status"], "error");
}

#[test]
#[ignore = "needs the npm MCP servers: run .ci/contract"]
fn ctrl_c_cancels_a_long_running_operation() {
    // An hour's operation: only the Ctrl+C can end this run; waiting for the operation would be
    // the harness's hang, so no clock is needed to tell.
    let started = Instant::now();
    let run = Test::new()
        .args(["--trust-mcp", "--allow-mcp", "-p", "take your time"])
        .file(".mcp.json", &everything(json!({})))
        .server(vec![
            call("mcp__everything__trigger-long-running-operation", json!({"duration": 3600, "steps": 6})),
            text("never asked"),
        ])
        .signal_when(|root| crate::harness::journal_has(root, "tool_started"), SIGINT)
        .run();
    run.expect_code(130);
    println!("figure: Ctrl+C during a long MCP operation: the run ended after {:?}", started.elapsed());
    assert_eq!(run.requests.len(), 1);
    let types = run.journal_types();
    assert!(types.contains(&"interrupted".to_string()), "{types:?}");
}

#[test]
#[ignore = "needs the npm MCP servers: run .ci/contract"]
fn a_server_killed_mid_call_is_an_unknown_outcome_and_restarts() {
    let workspace = TempDir::new("mcp");
    let root = workspace.path().to_path_buf();
    // The server writes its pid, so the test can kill it as a crash would.
    let wrapped = json!({"mcpServers": {"everything": {"command": "sh", "args": ["-c",
        format!("echo $$ > everything.pid; exec node '{}' stdio", server_script("server-everything"))]}}});
    let killer = std::thread::spawn(move || kill_server_when_calling(&root));
    let run = Test::new()
        .args(["--trust-mcp", "--allow-mcp", "-p", "work"])
        .file(".mcp.json", &wrapped.to_string())
        .server(vec![
            call("mcp__everything__trigger-long-running-operation", json!({"duration": 30, "steps": 3})),
            call("mcp__everything__echo", json!({"message": "back again"})),
            text("done"),
        ])
        .run_in(workspace);
    assert!(killer.join().unwrap(), "the server was never killed\n{}", run.stderr);
    run.expect_code(0);
    let results: Vec<String> = messages(run.requests.last().unwrap())
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(results[0].starts_with("unknown outcome: the server was killed by signal 9"), "{}", results[0]);
    assert!(results[1].contains("back again"), "restarted: {}", results[1]);
    let statuses: Vec<Value> = finished(&run).iter().map(|r| r["status"].clone()).collect();
    assert_eq!(statuses, [json!("unknown"), json!("ok")]);
}

/// Waits for the long call to have started, then SIGKILLs the server. The two minutes are a
/// guard (the harness's own): the call normally starts within a second.
fn kill_server_when_calling(root: &Path) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        let pid = std::fs::read_to_string(root.join("everything.pid")).ok();
        let calling = harness::session_files(root)
            .iter()
            .any(|file| std::fs::read_to_string(file).is_ok_and(|t| t.contains("tool_started")));
        if let (Some(pid), true) = (pid, calling) {
            std::thread::sleep(Duration::from_millis(300));
            let status = std::process::Command::new("kill").args(["-9", pid.trim()]).status();
            return status.is_ok_and(|s| s.success());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
#[ignore = "needs the npm MCP servers: run .ci/contract"]
fn a_server_that_never_starts_is_one_warning_and_the_others_work() {
    let broken = json!({"broken": {"command": "node", "args": ["/nonexistent/mcp-server.js"]},
        "missing": {"command": "/nonexistent/bin/mcp-server"}});
    let run = Test::new()
        .args(["--trust-mcp", "--allow-mcp", "-p", "echo"])
        .file(".mcp.json", &everything(broken))
        .server(vec![call("mcp__everything__echo", json!({"message": "still here"})), text("ok")])
        .run();
    run.expect_code(0)
        .stderr_has("MCP server `broken` not started: the server exited with status 1")
        .stderr_has("MCP server `missing` not started: cannot start `/nonexistent/bin/mcp-server`");
    assert!(run.only_tool_result().contains("still here"));
    assert!(
        !tools_of(&run.requests[0])
            .iter()
            .any(|t| t["function"]["name"].as_str().unwrap().contains("broken"))
    );
}

#[test]
#[ignore = "needs the npm MCP servers: run .ci/contract"]
fn filesystem_reads_inside_its_directory_and_refuses_outside() {
    let workspace = TempDir::new("mcp");
    let root = workspace.path().to_string_lossy().into_owned();
    let config = json!({"mcpServers": {"files": {"command": "node",
        "args": [server_script("server-filesystem"), root]}}});
    let run = Test::new()
        .args(["--trust-mcp", "--allow-mcp", "-p", "read"])
        .file(".mcp.json", &config.to_string())
        .file("notes.txt", "canary-7f3e: filesystem contract\n")
        .server(vec![
            call("mcp__files__read_text_file", json!({"path": format!("{root}/notes.txt")})),
            call("mcp__files__read_text_file", json!({"path": "/etc/hostname"})),
            text("done"),
        ])
        .run_in(workspace);
    run.expect_code(0);
    let tools = tools_of(&run.requests[0]);
    assert!(tool(&tools, "mcp__files__list_directory").is_some());
    let results = run.tool_results();
    assert!(results[0].contains("canary-7f3e"), "{}", results[0]);
    assert!(results[1].to_lowercase().contains("access denied"), "{}", results[1]);
    let statuses: Vec<Value> = finished(&run).iter().map(|r| r["status"].clone()).collect();
    assert_eq!(statuses, [json!("ok"), json!("error")]);
}
