//! Chapter 15 — `mini-agent tasks`: the real binary, a real git repository in a temporary
//! directory, real verify commands and the scripted model.

use crate::harness::{SIGKILL, TempDir, Test, call, text};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const SIGTERM: i32 = libc::SIGTERM;

pub(crate) fn git(root: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.name=tester", "-c", "user.email=tester@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A workspace that is a git repository with one commit.
pub(crate) fn repository() -> TempDir {
    let workspace = TempDir::new("tasks");
    git(workspace.path(), &["init", "-q"]);
    // The tests' user config directory (approvals, chapter 16) is inside the workspace; a
    // real one is not, so git is told to look past it.
    std::fs::write(workspace.path().join(".git/info/exclude"), ".no-user-config/\n").unwrap();
    std::fs::write(workspace.path().join("README.md"), "tasks\n").unwrap();
    git(workspace.path(), &["add", "-A"]);
    git(workspace.path(), &["commit", "-q", "-m", "start"]);
    workspace
}

/// `mini-agent tasks add WORDS…` in `workspace`, which must succeed.
pub(crate) fn add(workspace: TempDir, words: &[&str]) -> TempDir {
    let mut args = vec!["tasks".to_string(), "add".to_string()];
    args.extend(words.iter().map(|w| w.to_string()));
    let run = Test::new().args_vec(args).run_in(workspace);
    run.expect_code(0);
    run.workspace
}

pub(crate) fn tasks_file(root: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(root.join(".mini_agent/tasks.json")).unwrap()).unwrap()
}

fn user_prompt(request: &Value) -> String {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().filter(|m| m["role"] == "user").filter_map(|m| m["content"].as_str()).collect()
}

#[test]
fn three_tasks_one_passes_one_passes_on_retry_one_needs_a_human() {
    let mut workspace = repository();
    workspace = add(workspace, &["make a", "-p", "1", "--verify", "test -f a.txt"]);
    let check_b = r#"echo "found: $(cat b.txt)"; grep -qx fixed b.txt"#;
    workspace = add(workspace, &["make b", "-p", "2", "-d", "b.txt must say fixed", "--verify", check_b]);
    workspace = add(workspace, &["make c", "-p", "3", "--verify", "echo c is never right; exit 1"]);
    let write = |path: &str, content: &str| call("write_file", json!({"path": path, "content": content}));
    let steps = vec![
        write("a.txt", "a\n"),
        text("a is done"),
        write("b.txt", "wrong\n"),
        text("b is done"),
        write("b.txt", "fixed\n"),
        text("b is fixed"),
        text("c: I tried"),
        text("c: I tried again"),
        text("c: I tried a third time"),
    ];
    let run = Test::new().args(["tasks", "run", "--allow-write", "--json"]).server(steps).run_in(workspace);
    run.expect_code(3).stderr_has("task 3 needs a human");
    assert_eq!(run.requests.len(), 9, "{}", run.stderr);
    // b's second attempt read what its verify command printed after the first one.
    assert!(!user_prompt(&run.requests[2]).contains("found: wrong"));
    let retry = user_prompt(&run.requests[4]);
    assert!(retry.contains("found: wrong") && retry.contains("Attempt: 2"), "{retry}");
    // One commit per passed task, by mini-agent, with the task's id and name.
    let log = git(run.root(), &["log", "--format=%an <%ae>|%s"]);
    let log: Vec<&str> = log.lines().collect();
    assert_eq!(
        log,
        [
            "mini-agent <mini-agent@localhost>|2: make b",
            "mini-agent <mini-agent@localhost>|1: make a",
            "tester <tester@example.com>|start"
        ]
    );
    let files = git(run.root(), &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(files.trim(), "b.txt", "the harness's own files are not committed");
    let saved = tasks_file(run.root());
    let statuses: Vec<&str> =
        saved["tasks"].as_array().unwrap().iter().map(|t| t["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["done", "done", "needs_human"]);
    assert_eq!(saved["tasks"][1]["attempts"], 2);
    assert_eq!(saved["tasks"][1]["sessions"].as_array().unwrap().len(), 2);
    assert!(saved["tasks"][2]["last_error"].as_str().unwrap().contains("c is never right"));
    // --json: session and task events, then the exit event, last.
    let lines: Vec<Value> =
        run.stdout.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(lines.iter().filter(|l| l["type"] == "session").count(), 6);
    assert!(lines.iter().any(|l| l["type"] == "task" && l["event"] == "completed" && l["task"]["id"] == "2"));
    assert_eq!(lines.last().unwrap()["type"], "exit");
    assert_eq!(lines.last().unwrap()["code"], 3);
    // Nothing pending: the next run has nothing to do.
    let list = Test::new().args(["tasks", "list"]).run_in(run.workspace);
    list.expect_code(0);
    assert!(list.stdout.contains("needs_human") && list.stdout.contains("make c"), "{}", list.stdout);
}

#[test]
fn a_dirty_tree_is_refused_without_allow_dirty() {
    let workspace = add(repository(), &["anything", "--verify", "true"]);
    std::fs::write(workspace.path().join("README.md"), "changed\n").unwrap();
    let run = Test::new().args(["tasks", "run"]).server(vec![]).run_in(workspace);
    run.expect_code(1).stderr_has("--allow-dirty");
    assert!(run.requests.is_empty());
}

#[test]
fn a_first_run_with_no_tasks_says_how_to_add_one_and_a_finished_list_says_where_to_look() {
    let run = Test::new().args(["tasks", "run"]).server(vec![]).run_in(repository());
    run.expect_code(0).stderr_has("no tasks in").stderr_has("tasks add");
    assert!(run.requests.is_empty());
    let workspace = add(run.workspace, &["done already", "--verify", "true"]);
    let list = workspace.path().join(".mini_agent/tasks.json");
    let text = std::fs::read_to_string(&list).unwrap().replace("\"pending\"", "\"done\"");
    std::fs::write(&list, text).unwrap();
    let again = Test::new().args(["tasks", "run"]).server(vec![]).run_in(workspace);
    again.expect_code(0).stderr_has("nothing is pending").stderr_has("tasks list");
}

#[test]
fn a_damaged_task_file_is_an_error_naming_the_line_and_is_left_alone() {
    let damaged =
        "{\"tasks\": [\n  {\"id\": \"1\", \"name\": \"a\"},\n  {\"id\": \"2\", \"name\": \"b\",}\n]}\n";
    for words in [vec!["tasks", "list"], vec!["tasks", "run", "--no-commit"], vec!["tasks", "add", "c"]] {
        let run = Test::new()
            .args_vec(words.iter().map(|w| w.to_string()).collect())
            .file(".mini_agent/tasks.json", damaged)
            .run();
        run.expect_code(1).stderr_has("line 3");
        assert_eq!(
            run.read(".mini_agent/tasks.json").as_deref(),
            Some(damaged),
            "{words:?} changed the file"
        );
    }
}

#[test]
fn kill_9_during_an_attempt_leaves_it_in_progress_until_acknowledged() {
    let workspace = add(repository(), &["slow", "--verify", "test -f started"]);
    // An endless command: the kill lands during the attempt however late the test notices.
    let steps = vec![call("bash", json!({"command": "touch started; sleep 3600"}))];
    let run = Test::new()
        .args(["tasks", "run", "--allow-shell", "--no-commit"])
        .server(steps)
        .signal_when(|root| root.join("started").exists(), SIGKILL)
        .run_in(workspace);
    crate::harness::kill_processes_in(run.root());
    assert_eq!(run.code, None, "killed by the signal");
    let status = Test::new().args(["tasks", "status"]).run_in(run.workspace);
    status.expect_code(0);
    assert!(status.stdout.contains("in progress  task 1"), "{}", status.stdout);
    assert!(
        status.stdout.contains("unknown outcome") && status.stdout.contains("1 in_progress"),
        "{}",
        status.stdout
    );
    // Like -c: nothing goes on until a person has looked.
    let refused = Test::new().args(["tasks", "run", "--no-commit"]).server(vec![]).run_in(status.workspace);
    refused.expect_code(1).stderr_has("--acknowledge-unknown");
    assert!(refused.requests.is_empty());
    let run = Test::new()
        .args(["tasks", "run", "--no-commit", "--acknowledge-unknown"])
        .server(vec![text("it was done already")])
        .run_in(refused.workspace);
    run.expect_code(0).stderr_has("cut off during attempt 1");
    let saved = tasks_file(run.root());
    assert_eq!(
        (saved["tasks"][0]["status"].as_str(), saved["tasks"][0]["attempts"].as_u64()),
        (Some("done"), Some(2))
    );
}

#[test]
fn sigterm_stops_the_attempt_exits_143_and_the_task_is_pending_again() {
    let workspace = add(repository(), &["slow", "--verify", "true"]);
    // Endless: only the SIGTERM (which kills the command's group) can end this attempt.
    let steps = vec![call("bash", json!({"command": "touch started; sleep 3600"})), text("never reached")];
    let run = Test::new()
        .args(["tasks", "run", "--allow-shell", "--no-commit"])
        .server(steps)
        .signal_when(|root| root.join("started").exists(), SIGTERM)
        .run_in(workspace);
    run.expect_code(143);
    let saved = tasks_file(run.root());
    assert_eq!(saved["tasks"][0]["status"], "pending");
    assert_eq!(saved["tasks"][0]["attempts"], 1);
    assert!(saved["tasks"][0]["last_error"].as_str().unwrap().contains("interrupted"));
}

#[test]
fn a_failed_tasks_changes_never_reach_the_next_tasks_commit() {
    // Issue 22: task 2 failed both attempts and left notes.txt, and the next task's commit
    // held both a.txt and notes.txt. Now each attempt that fails is set aside under a ref.
    let mut workspace = repository();
    workspace = add(workspace, &["write notes", "-p", "1", "--verify", "grep -q never notes.txt"]);
    workspace = add(workspace, &["create a.txt", "-p", "2", "--verify", "test -f a.txt"]);
    let write = |path: &str| call("write_file", json!({"path": path, "content": format!("{path}\n")}));
    let steps = vec![
        write("notes.txt"),
        text("noted"),
        write("notes.txt"),
        text("noted again"),
        write("a.txt"),
        text("a"),
    ];
    let args = ["tasks", "run", "--allow-write", "--max-attempts", "2", "--intervention-after", "3"];
    let run = Test::new().args(args).server(steps).run_in(workspace);
    run.expect_code(0)
        .stderr_has("git show refs/mini-agent/failed/1/1")
        .stderr_has("refs/mini-agent/failed/1/2");
    let files = git(run.root(), &["show", "--name-only", "--format=%s", "HEAD"]);
    assert_eq!(files, "2: create a.txt\n\na.txt\n", "the commit holds its own task's file alone");
    for attempt in ["1", "2"] {
        let kept = git(
            run.root(),
            &["show", "--name-only", "--format=", &format!("refs/mini-agent/failed/1/{attempt}")],
        );
        assert_eq!(kept.trim(), "notes.txt");
    }
    assert!(run.read("notes.txt").is_none(), "the tree is back as the attempt found it");
    assert_eq!(git(run.root(), &["status", "--porcelain"]), "?? .mini_agent/\n");
    assert_eq!(tasks_file(run.root())["tasks"][0]["set_aside"], "refs/mini-agent/failed/1/2");
    // The second attempt was told where the first one's work went.
    assert!(user_prompt(&run.requests[2]).contains("git show refs/mini-agent/failed/1/1"));
    let show = Test::new().args(["tasks", "show", "1"]).run_in(run.workspace);
    show.expect_code(0);
    assert!(
        show.stdout.contains("set aside    refs/mini-agent/failed/1/1, refs/mini-agent/failed/1/2"),
        "{}",
        show.stdout
    );
}

#[test]
fn kill_9_in_a_repository_leaves_the_next_run_a_clean_tree_and_the_work_kept() {
    let workspace = add(repository(), &["slow", "--verify", "true"]);
    let steps = vec![
        call("write_file", json!({"path": "half.txt", "content": "half done\n"})),
        call("bash", json!({"command": "touch started; sleep 3"})),
    ];
    let run = Test::new()
        .args(["tasks", "run", "--allow-shell", "--allow-write"])
        .server(steps)
        .signal_when(|root| root.join("started").exists(), SIGKILL)
        .run_in(workspace);
    assert_eq!(run.code, None, "killed by the signal");
    let status = Test::new().args(["tasks", "status"]).run_in(run.workspace);
    status.expect_code(0);
    assert!(
        status.stdout.contains("an attempt was cut off; tasks run keeps its changes"),
        "{}",
        status.stdout
    );
    // No --allow-dirty needed: the cut-off attempt's changes are its own, and are set aside.
    let run = Test::new()
        .args(["tasks", "run", "--acknowledge-unknown"])
        .server(vec![text("nothing left to do")])
        .run_in(status.workspace);
    run.expect_code(0).stderr_has("cut off during attempt 1").stderr_has("refs/mini-agent/failed/1/1");
    let kept = git(run.root(), &["show", "--name-only", "--format=", "refs/mini-agent/failed/1/1"]);
    assert_eq!(kept.lines().collect::<Vec<_>>(), ["half.txt", "started"]);
    assert!(run.read("half.txt").is_none());
    assert_eq!(
        git(run.root(), &["log", "--format=%s"]),
        "start\n",
        "nothing of the cut-off attempt committed"
    );
}

#[test]
fn a_failed_check_says_why_on_screen_in_the_list_and_in_show() {
    let check = r#"for n in $(seq 1 30); do echo "step $n"; done; printf 'bad \033[2J news\n'; exit 1"#;
    let workspace = add(repository(), &["never", "--verify", check]);
    let run = Test::new()
        .args(["tasks", "run", "--max-attempts", "1"])
        .server(vec![text("tried")])
        .run_in(workspace);
    run.expect_code(0)
        .stderr_has(
            "task 1: attempt 1 failed its verify command (its last 12 lines; all: mini-agent tasks show 1)",
        )
        .stderr_has("  │ step 21\n")
        .stderr_has("  │ bad \\x1b[2J news\n")
        .stderr_has("  │ [exit code 1]");
    assert!(!run.stderr.contains("step 20\n") && !run.stderr.contains('\u{1b}'), "{}", run.stderr);
    let list = Test::new().args(["tasks", "list"]).run_in(run.workspace);
    assert!(list.stdout.contains("last error: bad \\x1b[2J news [exit code 1]"), "{}", list.stdout);
    let show = Test::new().args(["tasks", "show", "1"]).run_in(list.workspace);
    assert!(show.stdout.contains("  step 1\n") && show.stdout.contains("  step 30\n"), "{}", show.stdout);
    assert!(!show.stdout.contains('\u{1b}'));
}

#[test]
fn the_demo_does_a_task_in_its_own_words_and_a_task_without_a_check_is_warned_about() {
    let workspace = add(repository(), &["create z.txt containing z", "--verify", "grep -qx z z.txt"]);
    let run = Test::new().args(["tasks", "run", "--demo", "--allow-write"]).run_in(workspace);
    run.expect_code(0).stderr_has("task 1 passed, committed");
    assert_eq!(
        git(run.root(), &["log", "-1", "--format=%an %s"]),
        "mini-agent 1: create z.txt containing z\n"
    );
    let unchecked = Test::new().args(["tasks", "add", "anything"]).run_in(run.workspace);
    unchecked.expect_code(0).stderr_has("task 2 has no --verify command");
    let run = Test::new().args(["tasks", "run", "--demo"]).run_in(unchecked.workspace);
    run.expect_code(0).stderr_has("task 2 passed (it has no verify command: nothing was checked)");
}

#[test]
fn a_repository_that_ignores_the_harness_directory_still_gets_its_commits() {
    // Found while measuring issue 22 on a clone of this repository: `git add -A -- .
    // ':(exclude).mini_agent'` fails ("The following paths are ignored") when .mini_agent/ is
    // ignored, since git reports an ignored path that any pathspec names, exclusions included.
    let workspace = repository();
    std::fs::write(workspace.path().join(".git/info/exclude"), ".no-user-config/\n.mini_agent/\n").unwrap();
    let workspace = add(workspace, &["create a.txt", "--verify", "test -f a.txt"]);
    let steps = vec![call("write_file", json!({"path": "a.txt", "content": "a\n"})), text("done")];
    let run = Test::new().args(["tasks", "run", "--allow-write"]).server(steps).run_in(workspace);
    run.expect_code(0).stderr_has("task 1 passed, committed");
    assert_eq!(git(run.root(), &["show", "--name-only", "--format=", "HEAD"]).trim(), "a.txt");
}
