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

fn git(root: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null"])
        .args(args)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

#[test]
fn a_planted_git_config_runs_nothing_when_the_harness_commits() {
    // Found by rt-b: `tasks run` calls git (status, add -A, commit) in the workspace, and git
    // runs what `.git/config` names: core.fsmonitor, hooks, filter drivers. A project handed
    // over as an archive carries that file. The harness's git runs none of them.
    let workspace = TempDir::new("selfcheck");
    let outside = TempDir::new("selfcheck");
    let root = workspace.path();
    let mark = |name: &str| format!("touch {}/{name}", outside.path().display());
    git(root, &["init", "-q"]);
    std::fs::write(root.join(".gitattributes"), "*.txt filter=planted\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "start"]);
    std::fs::write(root.join(".git/info/exclude"), ".no-user-config/\n").unwrap();
    let hooks = root.join(".git/hooks");
    for hook in ["pre-commit", "commit-msg", "post-commit"] {
        std::fs::write(hooks.join(hook), format!("#!/bin/sh\n{}\n", mark(hook))).unwrap();
        std::process::Command::new("chmod").arg("+x").arg(hooks.join(hook)).status().unwrap();
    }
    for (key, value) in [
        ("core.fsmonitor", format!("{}; false", mark("fsmonitor"))),
        ("filter.planted.clean", format!("sh -c '{}; cat'", mark("filter"))),
        ("filter.planted.process", format!("sh -c '{}; exit 1'", mark("process"))),
    ] {
        git(root, &["config", key, &value]);
    }
    let add = Test::new().args(["tasks", "add", "write it", "--verify", "test -f a.txt"]).run_in(workspace);
    add.expect_code(0);
    let steps = vec![call("write_file", json!({"path": "a.txt", "content": "a\n"})), text("done")];
    let run = Test::new().args(["tasks", "run", "--allow-write"]).server(steps).run_in(add.workspace);
    let ran: Vec<String> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(ran.is_empty(), "the planted config ran: {ran:?}");
    run.expect_code(0).stderr_has("task 1 passed");
    let log = std::process::Command::new("git")
        .arg("-C")
        .arg(run.root())
        .args(["log", "--format=%s"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&log.stdout).starts_with("1: write it"), "{log:?}");
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_huge_or_deep_task_list_costs_bounded_memory() {
    // Found by rt-b: the list was read as a JSON tree, then checked for twin ids by a search
    // of the tasks so far: 370,000 tiny tasks (16 MB) took minutes of CPU and 446 MB, and 16 MB
    // of nested arrays under an unknown key some 500 MB. Now: a cap on tasks, a linear check,
    // and unknown fields kept as text.
    let many: Vec<serde_json::Value> =
        (0..370_000).map(|n| json!({"id": n.to_string(), "name": "t", "status": "done"})).collect();
    let workspace = TempDir::new("selfcheck");
    let list = workspace.path().join(".mini_agent/tasks.json");
    std::fs::create_dir_all(list.parent().unwrap()).unwrap();
    std::fs::write(&list, json!({"tasks": many}).to_string()).unwrap();
    let run = crate::resources::measure_command("tasks list of 370,000 tasks", workspace, &["tasks", "list"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("at most 10000"), "{}", run.stderr);
    let workspace = TempDir::new("selfcheck");
    let list = workspace.path().join(".mini_agent/tasks.json");
    std::fs::create_dir_all(list.parent().unwrap()).unwrap();
    let junk = vec!["[[[[1]]]]"; 1_600_000].join(",");
    std::fs::write(&list, format!("{{\"tasks\": [], \"junk\": [{junk}]}}")).unwrap();
    let run = crate::resources::measure_command(
        "tasks add beside 16 MB of nesting",
        workspace,
        &["tasks", "add", "x"],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

#[test]
fn a_fifo_planted_as_the_task_list_does_not_hang() {
    // Found by rt-b: the list was opened without O_NONBLOCK, so a FIFO in its place (an
    // archive can hold one) made `tasks list`, `add` and `run` wait forever for a writer.
    let workspace = TempDir::new("selfcheck");
    let list = workspace.path().join(".mini_agent/tasks.json");
    std::fs::create_dir_all(list.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&list).status().expect("mkfifo runs");
    assert!(made.success());
    // Opening the FIFO to read would wait for a writer for ever: the harness's hang guard.
    let run = Test::new().args(["tasks", "list"]).run_in(workspace);
    run.expect_code(1).stderr_has("not a regular file");
}

/// `git` with a given environment, in `root`, which must succeed.
fn git_in(root: &std::path::Path, env: &[(&str, String)], args: &[&str]) {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .envs(env.iter().map(|(name, value)| (name, value)))
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

#[test]
fn no_filter_driver_runs_wherever_config_defines_it_and_whatever_attributes_name_it() {
    // Found by the red team (issue 22): filter names were looked up with `git config --local`,
    // which does not read `.git/config.worktree`, so a driver defined there ran on `git add`.
    // Nor were drivers named `a=b` (`-c` splits at the first '='), drivers in a file the
    // repository's config includes that the attempt itself wrote, or drivers from the
    // environment and the user's config. Each is named by a different attributes file.
    let workspace = TempDir::new("selfcheck");
    let outside = TempDir::new("selfcheck");
    let root = workspace.path().to_path_buf();
    let mark = |name: &str| format!("touch {}/{name}; cat", outside.path().display());
    let global = outside.path().join("gitconfig");
    std::fs::write(&global, format!("[filter \"global\"]\n\tclean = {}\n", mark("global"))).unwrap();
    let env = vec![
        ("GIT_CONFIG_COUNT", "1".to_string()),
        ("GIT_CONFIG_KEY_0", "filter.fromenv.clean".to_string()),
        ("GIT_CONFIG_VALUE_0", mark("environment")),
        ("GIT_CONFIG_GLOBAL", global.display().to_string()),
    ];
    git(&root, &["init", "-q"]);
    std::fs::write(root.join(".gitattributes"), "*.wt filter=wt\n*.eq filter=a=b\n").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/.gitattributes"), "*.late filter=late\n").unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "start"]);
    std::fs::write(root.join(".git/info/exclude"), ".no-user-config/\n").unwrap();
    std::fs::write(root.join(".git/info/attributes"), "*.env filter=fromenv\n").unwrap();
    std::fs::write(root.join(".git/more-attributes"), "*.glob filter=global\n").unwrap();
    git(&root, &["config", "core.attributesFile", &root.join(".git/more-attributes").display().to_string()]);
    git(&root, &["config", "extensions.worktreeConfig", "true"]);
    git(&root, &["config", "--worktree", "filter.wt.clean", &mark("worktree")]);
    git(&root, &["config", "include.path", "../late.config"]);
    let config = format!(
        "{}[filter \"a=b\"]\n\tclean = {}\n",
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        mark("equals")
    );
    std::fs::write(root.join(".git/config"), config).unwrap();
    let add = Test::new().args(["tasks", "add", "write them", "--verify", "test -f a.wt"]).run_in(workspace);
    add.expect_code(0);
    // The attempt writes a file of each kind, and the config the repository includes.
    let late = format!("[filter \"late\"]\n\tclean = {}\n", mark("included"));
    let mut steps: Vec<_> = ["a.wt", "b.eq", "sub/c.late", "d.env", "e.glob"]
        .into_iter()
        .map(|path| call("write_file", json!({"path": path, "content": "x\n"})))
        .collect();
    steps.push(call("write_file", json!({"path": "late.config", "content": late})));
    steps.push(text("done"));
    let mut test = Test::new().args(["tasks", "run", "--allow-write"]).server(steps);
    for (name, value) in &env {
        test = test.env(name, value);
    }
    let run = test.run_in(add.workspace);
    let ran = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(outside.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "gitconfig")
            .collect();
        names.sort();
        names
    };
    assert!(ran().is_empty(), "a filter driver ran: {:?}\n{}", ran(), run.stderr);
    run.expect_code(0).stderr_has("task 1 passed, committed");
    // Each one is real: git itself, asked to add such files, runs all five.
    for path in ["x.wt", "x.eq", "sub/x.late", "x.env", "x.glob"] {
        std::fs::write(run.root().join(path), "y\n").unwrap();
    }
    git_in(run.root(), &env, &["add", "-A"]);
    assert_eq!(ran(), ["environment", "equals", "global", "included", "worktree"]);
}

#[test]
fn a_fifo_where_git_reads_config_does_not_hang_the_loop() {
    // Found by the red team (issue 22): git ran with no time bound, and `[include] path =
    // <a FIFO>` made it wait forever for a writer: `tasks run` and `tasks status` hung. Every
    // git call now has a bound, and git is killed with its process group past it.
    let workspace = add_to_repository("anything");
    let fifo = workspace.path().join(".git/planted");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    git(workspace.path(), &["config", "include.path", "planted"]);
    let bound = [("MINI_AGENT_GIT_TIMEOUT_SECS", "2")];
    let status = Test::new().args(["tasks", "status"]).env(bound[0].0, bound[0].1).run_in(workspace);
    status.expect_code(1).stderr_has("did not finish within 2 s").stderr_has("MINI_AGENT_GIT_TIMEOUT_SECS");
    let run = Test::new()
        .args(["tasks", "run"])
        .env(bound[0].0, bound[0].1)
        .server(vec![])
        .run_in(status.workspace);
    run.expect_code(1).stderr_has("did not finish within 2 s");
    assert!(run.requests.is_empty(), "stopped before the first attempt");
    // A FIFO in the work tree where git reads attributes, as an archive can carry one.
    let workspace = add_to_repository("anything");
    let fifo = workspace.path().join(".gitattributes");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let run = Test::new().args(["tasks", "run"]).env(bound[0].0, bound[0].1).server(vec![]).run_in(workspace);
    run.expect_code(1).stderr_has("did not finish within 2 s");
}

/// A repository with one commit and one task named `name` (verify `true`).
fn add_to_repository(name: &str) -> TempDir {
    let workspace = TempDir::new("selfcheck");
    git(workspace.path(), &["init", "-q"]);
    std::fs::write(workspace.path().join("README.md"), "x\n").unwrap();
    git(workspace.path(), &["add", "-A"]);
    git(workspace.path(), &["commit", "-q", "-m", "start"]);
    std::fs::write(workspace.path().join(".git/info/exclude"), ".no-user-config/\n").unwrap();
    let add = Test::new().args(["tasks", "add", name, "--verify", "true"]).run_in(workspace);
    add.expect_code(0);
    add.workspace
}
