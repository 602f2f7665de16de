//! Sessions: every run leaves a journal, `-c` and `--resume` continue it exactly, `--status`
//! tells where it stopped, and a tool that may have run is never run again.

use crate::harness::{SIGKILL, TempDir, Test, call, messages, records, session_files, text};
use mini_agent::scripted_server::Step;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;

#[test]
fn every_run_leaves_a_private_journal_of_what_happened() {
    let run = Test::new()
        .args(["-p", "list the files"])
        .file("a.txt", "x")
        .server(vec![call("list_files", json!({})), text("one file")])
        .run();
    run.expect_code(0);
    assert_eq!(
        run.journal_types(),
        ["session", "system", "sandbox", "user", "assistant", "tool_started", "tool_finished", "assistant"]
    );
    let journal = run.only_journal();
    assert_eq!(journal[0]["root"], run.root().display().to_string());
    // The sandbox this run's commands start in (chapter 20), before the first message.
    assert_eq!(journal[2]["mode"], "workspace");
    assert_eq!(journal[2]["network"], false);
    assert_eq!(journal[3]["content"], "list the files");
    assert_eq!(journal[6]["status"], "ok");
    assert_eq!(journal[7]["content"], "one file");
    let file = &session_files(run.root())[0];
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode(file), 0o600);
    assert_eq!(mode(file.parent().expect("sessions dir")), 0o700);
}

#[test]
fn continue_sends_the_same_history_plus_the_new_message() {
    let first = Test::new()
        .args(["-p", "list the files"])
        .file("a.txt", "x")
        .server(vec![call("list_files", json!({})), text("one file: a.txt")])
        .run();
    first.expect_code(0);
    let mut expected = messages(first.requests.last().expect("a request"));
    expected.push(json!({"role": "assistant", "content": "one file: a.txt"}));
    expected.push(json!({"role": "user", "content": "and now?"}));

    let second =
        Test::new().args(["-c", "-p", "and now?"]).server(vec![text("done")]).run_in(first.workspace);
    second.expect_code(0);
    assert_eq!(second.stdout, "done\n");
    assert_eq!(without_nulls(messages(&second.requests[0])), without_nulls(expected));
    assert_eq!(session_files(second.root()).len(), 1, "-c appends to the same session");
    assert_eq!(second.journal_types().iter().filter(|t| *t == "user").count(), 2);
}

/// The client may send `"content": null` or leave it out; compare what is meant.
fn without_nulls(messages: Vec<Value>) -> Vec<Value> {
    messages
        .into_iter()
        .map(|mut message| {
            if let Some(object) = message.as_object_mut() {
                object.retain(|_, value| !value.is_null());
                if object.get("tool_calls").is_some_and(|calls| calls.as_array().is_some_and(Vec::is_empty)) {
                    object.remove("tool_calls");
                }
            }
            message
        })
        .collect()
}

fn session_id(path: &std::path::Path) -> String {
    path.file_stem().and_then(|s| s.to_str()).expect("an id").to_string()
}

#[test]
fn resume_takes_a_unique_prefix_and_lists_the_candidates_of_an_ambiguous_one() {
    let first = Test::new().args(["-p", "one"]).server(vec![text("first answer")]).run();
    let second = Test::new().args(["-p", "two"]).server(vec![text("second answer")]).run_in(first.workspace);
    let mut files = session_files(second.root());
    assert_eq!(files.len(), 2);
    // Two sessions started in the same second sort by their random suffix: find "one" by content.
    let first_user = |file| records(file).into_iter().find(|record| record["type"] == "user");
    if first_user(&files[0]).is_none_or(|record| record["content"] != "one") {
        files.swap(0, 1);
    }
    let (a, b) = (session_id(&files[0]), session_id(&files[1]));

    let ambiguous = Test::new().args(["-r", "20", "-p", "x"]).server(vec![]).run_in(second.workspace);
    ambiguous.expect_code(1).stderr_has("matches 2 sessions").stderr_has(&a).stderr_has(&b);
    assert!(ambiguous.requests.is_empty());

    // The shortest prefix of the first id that the second does not share.
    let unique = (1..=a.len()).map(|n| &a[..n]).find(|prefix| !b.starts_with(prefix)).expect("ids differ");
    let resumed =
        Test::new().args(["-r", unique, "-p", "again"]).server(vec![text("ok")]).run_in(ambiguous.workspace);
    resumed.expect_code(0);
    let sent = messages(&resumed.requests[0]);
    assert_eq!(sent[1]["content"], "one");
    assert_eq!(sent[2]["content"], "first answer");
    assert_eq!(sent[3]["content"], "again");

    let by_path = files[1].display().to_string();
    let status = Test::new().args(["-r", &by_path, "--status"]).run_in(resumed.workspace);
    status.expect_code(0);
    assert!(status.stdout.contains(&format!("session  {b}")), "{}", status.stdout);
}

#[test]
fn status_tells_completed_and_interrupted_without_a_key_or_a_request() {
    let done = Test::new().args(["-p", "hi"]).server(vec![text("hello")]).run();
    let status = Test::new()
        .args(["-c", "--status"])
        .base_url("https://api.example.invalid/v1")
        .run_in(done.workspace);
    status.expect_code(0);
    assert!(status.stdout.contains("state    completed"), "{}", status.stdout);
    assert!(status.stdout.contains("last     \"hi\""), "{}", status.stdout);

    let interrupted = Test::new().args(["-p", "wait"]).server(vec![Step::Hang]).interrupt_after(1).run();
    interrupted.expect_code(130);
    assert_eq!(interrupted.journal_types().last().map(String::as_str), Some("interrupted"));
    let status = Test::new().args(["-c", "--status"]).run_in(interrupted.workspace);
    assert!(status.stdout.contains("state    interrupted"), "{}", status.stdout);
}

/// A crash while `bash` runs leaves a tool that may or may not have done its work.
fn killed_during_a_tool() -> TempDir {
    // The command never ends by itself, so the kill lands while it runs however late the test
    // notices; what the killed agent leaves running is stopped by the test.
    let command = "echo ran >> runs.txt; sleep 3600";
    let run = Test::new()
        .args(["-p", "run it", "--allow-shell"])
        .server(vec![call("bash", json!({ "command": command })), text("never sent")])
        // Killed once the command has certainly begun: its first line is written (whole: the
        // command is stopped right after, and must not be caught between open and write).
        .signal_when(
            |root| std::fs::read_to_string(root.join("runs.txt")).is_ok_and(|t| t == "ran\n"),
            SIGKILL,
        )
        .run();
    crate::harness::kill_processes_in(run.root());
    assert_eq!(run.code, None, "killed by a signal");
    assert_eq!(run.journal_types().last().map(String::as_str), Some("tool_started"));
    run.workspace
}

#[test]
fn an_unknown_outcome_blocks_until_acknowledged_and_the_tool_never_runs_twice() {
    let workspace = killed_during_a_tool();
    let status = Test::new().args(["-c", "--status"]).run_in(workspace);
    status.expect_code(0);
    assert!(
        status.stdout.contains("unknown outcome: 1 tool call started and never finished"),
        "{}",
        status.stdout
    );
    assert!(status.stdout.contains("bash echo ran >> runs.txt; sleep 3600"), "{}", status.stdout);

    let blocked = Test::new().args(["-c", "-p", "go on"]).server(vec![text("no")]).run_in(status.workspace);
    blocked.expect_code(1).stderr_has("unknown outcome").stderr_has("--acknowledge-unknown");
    assert!(blocked.requests.is_empty());

    let acknowledged = Test::new()
        .args(["-c", "--acknowledge-unknown", "-p", "go on"])
        .server(vec![text("checked")])
        .run_in(blocked.workspace);
    acknowledged.expect_code(0);
    let result = acknowledged.only_tool_result();
    assert!(result.starts_with("unknown outcome:"), "{result}");
    assert_eq!(messages(&acknowledged.requests[0]).last().expect("a message")["content"], "go on");
    // A re-run would have appended its line before the resumed agent exited.
    assert_eq!(acknowledged.read("runs.txt").as_deref(), Some("ran\n"), "the command ran exactly once");
    let journal = acknowledged.only_journal();
    let finished: Vec<&Value> = journal.iter().filter(|r| r["type"] == "tool_finished").collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["status"], "unknown");
}

#[test]
fn a_torn_last_line_is_cut_with_a_warning_and_the_session_goes_on() {
    let first = Test::new().args(["-p", "hi"]).server(vec![text("hello")]).run();
    let file = session_files(first.root())[0].clone();
    let mut bytes = std::fs::read(&file).expect("journal");
    let whole = bytes.len();
    bytes.extend_from_slice(b"{\"seq\":99,\"ts\":\"2026");
    std::fs::write(&file, &bytes).expect("tear the journal");
    let resumed = Test::new().args(["-c", "-p", "again"]).server(vec![text("ok")]).run_in(first.workspace);
    resumed.expect_code(0).stderr_has("mini-agent: warning:");
    let records = records(&file);
    // session, system, sandbox, user, assistant; then the resumed run's sandbox, user, assistant.
    assert_eq!(records.len(), 8, "the torn line is gone, the new turn is there");
    assert!(std::fs::read(&file).expect("journal").len() > whole);
}

#[test]
fn how_a_turn_ended_is_recorded_and_status_tells_it() {
    let steps = (0..3).map(|_| call("list_files", json!({}))).collect();
    let limited = Test::new().args(["-p", "loop", "--max-turns", "2"]).server(steps).run();
    limited.expect_code(2);
    let last = limited.only_journal().pop().expect("records");
    assert_eq!(last["type"], "error");
    assert!(last["message"].as_str().is_some_and(|m| m.contains("turn limit")), "{last}");

    let failed = Test::new().args(["-p", "hi"]).server(vec![Step::error(400, "no such model")]).run();
    failed.expect_code(1);
    let last = failed.only_journal().pop().expect("records");
    assert_eq!(last["type"], "error");
    assert!(last["message"].as_str().is_some_and(|m| m.contains("no such model")), "{last}");
    let status = Test::new().args(["-c", "--status"]).run_in(failed.workspace);
    assert!(status.stdout.contains("state    failed: model request failed: 400"), "{}", status.stdout);
}

/// Issue 22, item 11: `.mini_agent/` in a repository showed as untracked, sessions and input
/// history beside the files a team shares. The first run writes `.mini_agent/.gitignore`:
/// `git status` then shows only the shared files, and a `.gitignore` of the user's own is
/// never rewritten.
#[test]
fn the_agents_private_files_stay_out_of_git_and_the_shared_ones_show() {
    let git = |root: &std::path::Path, args: &[&str]| {
        let out = std::process::Command::new("git").args(args).current_dir(root).output().expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let workspace = TempDir::new("selfcheck");
    git(workspace.path(), &["init", "-q"]);
    let run = Test::new()
        .args(["-p", "list the files"])
        .file(".mini_agent/hooks.json", r#"{"hooks": {}}"#)
        .file(".mini_agent/tasks.json", r#"{"tasks": []}"#)
        .file(".mini_agent/templates/task.md", "{{task}}")
        .server(vec![call("bash", json!({"command": "seq 1 100000"})), text("done")])
        .args(["--allow-shell"])
        .run_in(workspace);
    run.expect_code(0);
    assert!(run.root().join(".mini_agent/outputs").is_dir(), "a long output was saved");
    let status = git(run.root(), &["status", "--porcelain", "--untracked-files=all"]);
    let untracked: Vec<&str> = status.lines().collect();
    assert_eq!(
        untracked,
        [
            "?? .mini_agent/.gitignore",
            "?? .mini_agent/hooks.json",
            "?? .mini_agent/tasks.json",
            "?? .mini_agent/templates/task.md"
        ],
        "{status}"
    );
    let workspace = TempDir::new("selfcheck");
    std::fs::create_dir(workspace.path().join(".mini_agent")).expect("an existing .mini_agent");
    std::fs::write(workspace.path().join(".mini_agent/.gitignore"), "# my own\n").expect("the user's own");
    let again = Test::new().args(["-p", "hi"]).server(vec![text("hello")]).run_in(workspace);
    again.expect_code(0);
    assert_eq!(again.read(".mini_agent/.gitignore").as_deref(), Some("# my own\n"));
}
