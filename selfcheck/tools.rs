//! Each tool through the real binary: a success path, a failure path the model can act on,
//! and the attempts to escape the workspace root.

use crate::harness::{Run, TempDir, Test, call, text};
use serde_json::{Value, json};

/// One tool call, then a final answer; writes and shell allowed.
fn one_call(name: &str, arguments: Value) -> Test {
    Test::new()
        .args(["-p", "task", "--allow-write", "--allow-shell"])
        .server(vec![call(name, arguments), text("done")])
}

fn result_of(run: &Run) -> String {
    run.expect_code(0);
    run.only_tool_result()
}

#[test]
fn write_file_creates_parents_and_reports_failure() {
    let run = one_call("write_file", json!({"path": "deep/er/new.txt", "content": "hello\n"})).run();
    result_of(&run);
    assert_eq!(run.read("deep/er/new.txt").as_deref(), Some("hello\n"));
    run.stderr_has("✓ write_file deep/er/new.txt");

    let missing = one_call("write_file", json!({"path": "x.txt"})).run();
    assert!(result_of(&missing).contains("content"), "{}", missing.only_tool_result());
    assert_eq!(missing.read("x.txt"), None);
}

#[test]
fn read_file_numbers_lines_and_explains_a_missing_file() {
    let run = one_call("read_file", json!({"path": "a.txt"})).file("a.txt", "alpha\nbeta\n").run();
    let result = result_of(&run);
    assert!(result.contains("1") && result.contains("alpha") && result.contains("beta"), "{result}");
    let missing = one_call("read_file", json!({"path": "nope.txt"})).run();
    assert!(result_of(&missing).contains("`nope.txt` does not exist"), "{}", missing.only_tool_result());
    missing.stderr_has("✗ read_file nope.txt — `nope.txt` does not exist");

    let binary = one_call("read_file", json!({"path": "blob.bin"}))
        .file("blob.bin", "PK\u{3}\u{4}\u{0}\u{0}\u{0}data")
        .run();
    assert!(result_of(&binary).contains("looks like a binary file"), "{}", binary.only_tool_result());
}

#[test]
fn edit_file_replaces_once_and_explains_no_or_many_matches() {
    let run = one_call("edit_file", json!({"path": "a.txt", "old_string": "beta", "new_string": "BETA"}))
        .file("a.txt", "alpha\nbeta\n")
        .run();
    result_of(&run);
    assert_eq!(run.read("a.txt").as_deref(), Some("alpha\nBETA\n"));

    let none = one_call("edit_file", json!({"path": "a.txt", "old_string": "gamma", "new_string": "x"}))
        .file("a.txt", "alpha\nbeta\n")
        .run();
    assert!(result_of(&none).contains("not found"), "{}", none.only_tool_result());
    assert_eq!(none.read("a.txt").as_deref(), Some("alpha\nbeta\n"));

    let many = one_call("edit_file", json!({"path": "a.txt", "old_string": "same", "new_string": "x"}))
        .file("a.txt", "same\nother\nsame\n")
        .run();
    let result = result_of(&many);
    assert!(result.contains("lines 1, 3"), "names the matching lines: {result}");
    assert_eq!(many.read("a.txt").as_deref(), Some("same\nother\nsame\n"));
}

#[test]
fn list_files_and_search_find_what_is_there() {
    let list = one_call("list_files", json!({})).file("src/lib.rs", "").file("README.md", "").run();
    let result = result_of(&list);
    assert!(result.contains("lib.rs") && result.contains("README.md"), "{result}");

    let missing = one_call("list_files", json!({"path": "ghost"})).run();
    assert!(result_of(&missing).contains("`ghost` does not exist"), "{}", missing.only_tool_result());

    let search =
        one_call("search", json!({"pattern": "needle"})).file("hay/stack.txt", "a\nthe needle\n").run();
    let result = result_of(&search);
    assert!(result.contains("stack.txt:2"), "{result}");

    let nowhere = one_call("search", json!({"pattern": "x", "path": "no/such/dir"})).run();
    assert!(result_of(&nowhere).contains("no/such/dir"), "{}", nowhere.only_tool_result());
}

#[test]
fn bash_reports_output_and_exit_code() {
    let run = one_call("bash", json!({"command": "echo out; echo err >&2; exit 3"})).run();
    let result = result_of(&run);
    assert!(result.contains("out") && result.contains("err") && result.contains("exit code 3"), "{result}");
}

#[test]
fn bash_kills_a_command_that_outlives_its_timeout() {
    let run = one_call("bash", json!({"command": "sleep 30", "timeout_secs": 1})).run();
    let result = result_of(&run);
    assert!(result.contains("timed out"), "{result}");
    run.stderr_has("✗ bash sleep 30");
}

#[test]
fn bash_returns_while_a_background_process_keeps_running() {
    // Without care, `sleep 3600 &` keeps the output pipe open and the tool waits an hour;
    // the harness would then kill the run as hung. The sleep itself goes with the run's end.
    let run = one_call("bash", json!({"command": "sleep 3600 & echo started"})).run();
    assert!(result_of(&run).contains("started"));
}

#[test]
fn a_large_output_keeps_head_and_tail_and_saves_the_rest() {
    let run = one_call("bash", json!({"command": "seq 1 200000"})).run();
    let result = result_of(&run);
    assert!(result.len() < 100_000, "bounded: {} bytes", result.len());
    assert!(result.starts_with("1\n2\n3\n"), "head kept: {:?}", &result[..200.min(result.len())]);
    assert!(result.contains("\n199999\n200000\n"), "tail kept");
    assert!(
        result.contains("bytes omitted; full output: .mini_agent/outputs/"),
        "{}",
        &result[..500.min(result.len())]
    );
    let saved: Vec<_> =
        std::fs::read_dir(run.root().join(".mini_agent/outputs")).expect("outputs saved").collect();
    assert_eq!(saved.len(), 1);
    let full =
        std::fs::read_to_string(saved[0].as_ref().expect("entry").path()).expect("read the saved output");
    let expected_bytes: usize = (1..=200_000).map(|n: usize| n.to_string().len() + 1).sum();
    assert!(full.starts_with("1\n2\n") && full.contains("\n200000\n") && full.len() >= expected_bytes);
}

#[test]
fn escapes_from_the_root_are_refused() {
    let outside = TempDir::new("selfcheck");
    std::fs::write(outside.path().join("secret.txt"), "secret").expect("write outside");
    let workspace = TempDir::new("selfcheck");
    std::os::unix::fs::symlink(outside.path(), workspace.path().join("link")).expect("symlink");
    let absolute = outside.path().join("secret.txt").display().to_string();
    let steps = vec![
        crate::harness::call("read_file", json!({"path": "../secret.txt"})),
        crate::harness::call("read_file", json!({"path": absolute})),
        crate::harness::call("read_file", json!({"path": "link/secret.txt"})),
        crate::harness::call("read_file", json!({"path": "a\u{0}b"})),
        crate::harness::call("write_file", json!({"path": "../escaped.txt", "content": "x"})),
        crate::harness::call("write_file", json!({"path": "link/escaped.txt", "content": "x"})),
        text("refused"),
    ];
    let run = Test::new().args(["-p", "escape", "--allow-write"]).server(steps).run_in(workspace);
    run.expect_code(0);
    assert_eq!(run.requests.len(), 7);
    for request in &run.requests[1..] {
        let messages = crate::harness::messages(request);
        let result = messages.last().and_then(|m| m["content"].as_str()).unwrap_or_default();
        assert!(!result.contains("secret\n") && result != "secret", "leaked: {result}");
        assert!(result.starts_with("refused"), "{result}");
    }
    assert!(!outside.path().join("escaped.txt").exists());
    assert!(!outside.path().parent().expect("temp dir").join("escaped.txt").exists());
}

/// Regression: when the first read from the pipe was already larger than the output limit
/// (a fast writer, a busy machine), the head was lost and only the tail was shown.
#[test]
fn bug_the_head_survives_a_first_read_larger_than_the_limit() {
    let command = "seq 1 200000 > big.txt; cat big.txt big.txt big.txt";
    for _ in 0..5 {
        let run = one_call("bash", json!({"command": command})).run();
        let result = result_of(&run);
        assert!(result.starts_with("1\n2\n3\n"), "head lost: {:?}", &result[..200.min(result.len())]);
    }
}
