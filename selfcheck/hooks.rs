//! Chapter 16 through the real binary: `.mini_agent/hooks.json` in a workspace, a scripted
//! model, and what the model reads, the files and the journal afterwards.

use crate::harness::{Test, call, text};
use serde_json::{Value, json};

const BLOCK_BASH: &str = r#"{"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [
    {"type": "command", "command": "echo 'bash is off today: use read_file' >&2; exit 2"}]}]}}"#;

fn hook_records(journal: &[Value]) -> Vec<Value> {
    journal.iter().filter(|record| record["type"] == "hook").cloned().collect()
}

#[test]
fn a_pre_tool_use_hook_exiting_2_keeps_bash_from_running_and_tells_the_model_why() {
    let run = Test::new()
        .args(["-p", "x", "--allow-shell", "--trust-hooks"])
        .file(".mini_agent/hooks.json", BLOCK_BASH)
        .server(vec![call("bash", json!({"command": "touch marker"})), text("ok")])
        .run();
    run.expect_code(0);
    assert_eq!(run.read("marker"), None, "the blocked command ran");
    let result = run.only_tool_result();
    assert!(result.contains("bash is off today: use read_file"), "{result}");
    let journal = run.only_journal();
    let finished = journal.iter().find(|r| r["type"] == "tool_finished").expect("a tool_finished record");
    assert_eq!(finished["status"], "denied");
    let hooks = hook_records(&journal);
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["event"], "PreToolUse");
    assert!(hooks[0]["outcome"].as_str().unwrap().starts_with("blocked: bash is off today"), "{hooks:?}");
}

#[test]
fn post_tool_use_stdout_reaches_the_model_and_stop_hooks_run_at_the_end() {
    let hooks = r#"{"hooks": {
        "PostToolUse": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "echo \"checked $(wc -c < notes.txt) bytes\""}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "cat > stop.json"}]}]}}"#;
    let run = Test::new()
        .args(["-p", "x", "--allow-write", "--trust-hooks"])
        .file(".mini_agent/hooks.json", hooks)
        .server(vec![call("write_file", json!({"path": "notes.txt", "content": "hello"})), text("done")])
        .run();
    run.expect_code(0);
    let result = run.only_tool_result();
    assert!(result.contains("[PostToolUse hook") && result.contains("checked 5 bytes"), "{result}");
    let stop: Value = serde_json::from_str(&run.read("stop.json").expect("the Stop hook ran")).unwrap();
    assert_eq!(stop["hook_event_name"], "Stop");
    assert_eq!(stop["reason"], "completed");
    let journal = run.only_journal();
    assert_eq!(stop["session_id"], journal[0]["id"]);
    let events: Vec<Value> = hook_records(&journal).iter().map(|r| r["event"].clone()).collect();
    assert_eq!(events, ["PostToolUse", "Stop"]);
}

#[test]
fn workspace_hooks_are_skipped_without_trust_and_the_warning_names_the_flag() {
    let run = Test::new()
        .args(["-p", "x", "--allow-shell"])
        .env("XDG_CONFIG_HOME", "/nonexistent-mini-agent-config")
        .file(".mini_agent/hooks.json", BLOCK_BASH)
        .server(vec![call("bash", json!({"command": "touch marker"})), text("ok")])
        .run();
    run.expect_code(0).stderr_has("--trust-hooks").stderr_has("hooks.json");
    assert_eq!(run.read("marker").as_deref(), Some(""), "without trust the hook must not block");
    assert!(hook_records(&run.only_journal()).is_empty());
}

/// The line `ch16_approval` remembers for an approved file: SHA-256 over the kind, the real
/// path and the bytes, each preceded by its length.
fn approval_line(path: &std::path::Path, contents: &[u8]) -> String {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for part in [b"hooks".as_slice(), path.as_os_str().as_encoded_bytes(), contents] {
        context.update(&(part.len() as u64).to_le_bytes());
        context.update(part);
    }
    context.finish().as_ref().iter().map(|byte| format!("{byte:02x}")).collect()
}

#[test]
fn an_approval_is_remembered_by_hash_and_lost_when_the_file_changes() {
    let workspace = mini_agent::temp_dir::TempDir::new("selfcheck-hooks-approved");
    let hooks_file = workspace.path().join(".mini_agent/hooks.json");
    // The user's store, outside the developer's own config: under the test's directory.
    workspace.write(
        ".config/mini-agent/approved",
        &format!("{}\n", approval_line(&hooks_file, BLOCK_BASH.as_bytes())),
    );
    let config = workspace.path().join(".config").display().to_string();
    let run = Test::new()
        .args(["-p", "x", "--allow-shell"])
        .env("XDG_CONFIG_HOME", &config)
        .file(".mini_agent/hooks.json", BLOCK_BASH)
        .server(vec![call("bash", json!({"command": "touch marker"})), text("ok")])
        .run_in(workspace);
    run.expect_code(0);
    assert!(!run.stderr.contains("--trust-hooks"), "{}", run.stderr);
    assert_eq!(run.read("marker"), None, "the approved hook did not run");
    // One byte more and the same approval no longer covers it.
    let workspace = run.workspace;
    std::fs::remove_dir_all(workspace.path().join(".mini_agent/sessions")).unwrap();
    let run = Test::new()
        .args(["-p", "x", "--allow-shell"])
        .env("XDG_CONFIG_HOME", &config)
        .file(".mini_agent/hooks.json", &format!("{BLOCK_BASH} "))
        .server(vec![call("bash", json!({"command": "touch marker"})), text("ok")])
        .run_in(workspace);
    run.expect_code(0).stderr_has("--trust-hooks");
    assert_eq!(run.read("marker").as_deref(), Some(""));
}
