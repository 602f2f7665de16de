//! Red-team cases for chapter 15's task loop: see `main.rs` for the rule this file holds.
//!
//! A task list is a workspace file, and the harness runs each task's `verify_command` itself.
//! A cloned repository's list, or one the model rewrote, must not get a command run that the
//! person never approved: the rule of hooks and MCP servers (an approval, or `--trust-tasks`).

use crate::harness::{TempDir, Test, call, text};
use serde_json::json;

fn planted(verify: &str) -> String {
    json!({"tasks": [{"id": "1", "name": "anything", "status": "pending", "verify_command": verify}]})
        .to_string()
}

#[test]
fn a_planted_task_list_does_not_run_its_verify_command_unapproved() {
    // Found by rt-b: `tasks run` in a cloned repository ran the list's verify_command with no
    // question, where hooks and MCP servers need an approval or a --trust flag.
    let run = Test::new()
        .args(["tasks", "run", "--no-commit"])
        .file(".mini_agent/tasks.json", &planted("touch pwned"))
        .server(vec![text("done")])
        .run();
    run.expect_code(1).stderr_has("--trust-tasks").stderr_has("touch pwned");
    assert!(run.read("pwned").is_none(), "the planted command ran");
    assert!(run.requests.is_empty(), "refused before the first attempt");
    // Trusted for this run, it runs.
    let trusted = Test::new()
        .args(["tasks", "run", "--no-commit", "--trust-tasks"])
        .server(vec![text("done")])
        .run_in(run.workspace);
    trusted.expect_code(0);
    assert!(trusted.read("pwned").is_some());
}

#[test]
fn a_verify_command_the_model_rewrote_is_not_run() {
    // `--tasks tasks.json` lies outside `.mini_agent/`, so write_file may change it: a model
    // without --allow-shell must not get a command run through the next task's verify.
    let mut workspace = TempDir::new("selfcheck");
    for name in ["one", "two"] {
        let run = Test::new().args(["tasks", "add", name, "--verify", "true", "--tasks", "tasks.json"]);
        let run = run.run_in(workspace);
        run.expect_code(0);
        workspace = run.workspace;
    }
    let rewritten = json!({"tasks": [
        {"id": "1", "name": "one", "status": "in_progress", "verify_command": "true", "attempts": 1},
        {"id": "2", "name": "two", "status": "pending", "verify_command": "touch pwned"}]})
    .to_string();
    let steps = vec![
        call("write_file", json!({"path": "tasks.json", "content": rewritten})),
        text("one is done"),
        text("two is done"),
    ];
    let args =
        ["tasks", "run", "--no-commit", "--allow-write", "--max-attempts", "1", "--tasks", "tasks.json"];
    let run = Test::new().args(args).server(steps).run_in(workspace);
    // Task 2 ran out of attempts (a failed task; the loop goes on past it and exits 0).
    run.expect_code(0);
    assert!(run.read("pwned").is_none(), "the rewritten command ran\n{}", run.stderr);
    let list = run.read("tasks.json").unwrap();
    assert!(list.contains("was not run") && list.contains("\"done\""), "{list}");
}
