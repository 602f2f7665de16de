//! Red-team cases: a cloned repository with planted files (see `main.rs` for the rule).
//!
//! Each case plants something a repository can carry — a symlink, a FIFO, a `.git`
//! directory, a journal — then lets a scripted model (or nothing at all: start-up reads need
//! no tool call) try to use it, and checks the rule on what the run left behind: nothing
//! outside the root was read into a request, nothing under `.git/` or `.mini_agent/` was
//! written by a file tool, no journal moved the root, and every refusal names the path as
//! the model gave it.

use crate::harness::{Run, TempDir, Test, call, records, session_files, text};
use mini_agent::scripted_server::Step;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------
// Helpers

/// Every file, directory and symlink under `dir` (symlinks not followed), with contents.
fn tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut found = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let relative = path.strip_prefix(dir).unwrap().to_path_buf();
            let kind = entry.file_type().unwrap();
            let shown = if kind.is_symlink() {
                format!("-> {}", std::fs::read_link(&path).unwrap().display())
            } else if kind.is_dir() {
                pending.push(path.clone());
                "<dir>".to_string()
            } else {
                String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned()
            };
            found.insert(relative, shown);
        }
    }
    found
}

/// The part of the tree the file tools must never write: anything under a `.git` or
/// `.mini_agent` component, at any depth.
fn protected(dir: &Path) -> BTreeMap<PathBuf, String> {
    tree(dir)
        .into_iter()
        .filter(|(path, _)| {
            path.components().any(|c| {
                let name = c.as_os_str().to_string_lossy().to_ascii_lowercase();
                name == ".git" || name == ".mini_agent"
            })
        })
        .collect()
}

/// A fresh workspace with a small git-looking repository in it.
fn repository() -> TempDir {
    let workspace = TempDir::new("selfcheck");
    let root = workspace.path();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n\trepositoryformatversion = 0\n").unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(root.join("README.md"), "# planted\n").unwrap();
    workspace
}

/// The rule of group 2, checked on what the run left: the protected part of the tree is as
/// it was, except for the one journal this run created (which must be whole), and every
/// tool result the model got back was a refusal.
fn assert_protected_untouched(run: &Run, before: &BTreeMap<PathBuf, String>) {
    let after = protected(run.root());
    let added: Vec<&PathBuf> = after.keys().filter(|path| !before.contains_key(*path)).collect();
    for (path, content) in before {
        assert_eq!(after.get(path), Some(content), "{} changed\nstderr:\n{}", path.display(), run.stderr);
    }
    let journals: Vec<&&PathBuf> = added
        .iter()
        .filter(|p| p.starts_with(".mini_agent/sessions") && p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(journals.len(), 1, "one new journal expected, added: {added:?}");
    let unexpected: Vec<&&PathBuf> = added
        .iter()
        .filter(|p| !p.starts_with(".mini_agent/sessions") || p.extension().is_some_and(|e| e != "jsonl"))
        .filter(|p| {
            !matches!(p.to_str(), Some(".mini_agent" | ".mini_agent/sessions" | ".mini_agent/.gitignore"))
        })
        // The sandbox (chapter 20) makes a missing `.git/hooks`, empty, to mount it read-only.
        .filter(|p| p.to_str() != Some(".git/hooks") || !after.keys().any(|q| q.starts_with(".git/hooks/")))
        .collect();
    assert!(unexpected.is_empty(), "the file tools wrote into a protected directory: {unexpected:?}");
    let journal = records(&run.root().join(journals[0]));
    assert_eq!(journal[0]["type"], "session", "the live journal starts with its header");
    let results = run.tool_results();
    assert!(!results.is_empty(), "the model got no tool result\nstderr:\n{}", run.stderr);
    for result in results {
        assert!(result.starts_with("refused:"), "not refused: {result}");
    }
    run.expect_code(0);
}

/// One reply with these calls, then "done"; writes pre-approved.
fn model_writes(calls: &[(&str, Value)]) -> Test {
    let calls: Vec<(&str, String)> = calls.iter().map(|(name, args)| (*name, args.to_string())).collect();
    let calls: Vec<(&str, &str)> = calls.iter().map(|(name, args)| (*name, args.as_str())).collect();
    Test::new().args(["-p", "go", "--allow-write"]).server(vec![Step::tool_calls(&calls), text("done")])
}

fn write(path: &str, content: &str) -> (&'static str, Value) {
    ("write_file", json!({"path": path, "content": content}))
}

fn edit(path: &str, old: &str, new: &str) -> (&'static str, Value) {
    ("edit_file", json!({"path": path, "old_string": old, "new_string": new}))
}

/// Runs `test` in `workspace` and checks the protected-write rule on the result.
fn attempt(workspace: TempDir, test: Test) -> Run {
    let before = protected(workspace.path());
    let run = test.run_in(workspace);
    assert_protected_untouched(&run, &before);
    run
}

// ---------------------------------------------------------------------------------------
// 1. What the agent reads at start-up is workspace input.

/// A directory outside the workspace holding a secret the system prompt must never carry.
fn outside_secret() -> (TempDir, String) {
    let outside = TempDir::new("selfcheck");
    let secret = format!("OUTSIDE-SECRET-{}", std::process::id());
    std::fs::write(outside.path().join("secret.md"), format!("{secret}\n")).unwrap();
    std::fs::create_dir_all(outside.path().join("skill")).unwrap();
    std::fs::write(outside.path().join("skill/SKILL.md"), format!("---\nname: planted\n---\n{secret}\n"))
        .unwrap();
    (outside, secret)
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Starts a session in `workspace` against a model that answers at once, and checks the rule
/// of group 1: the session started and ended normally, no request carried `secret`, and each
/// refusal was one warning line naming the file as planted (never the outside path). A start
/// that waited on a planted FIFO or read `/dev/zero` would never end: the harness's hang guard.
fn start_up(workspace: TempDir, secret: &str, refused: &[&str]) -> Run {
    let started = std::time::Instant::now();
    let run = Test::new().args(["-p", "hi"]).server(vec![text("ok")]).run_in(workspace);
    eprintln!("start-up with planted files: {:?}", started.elapsed());
    run.expect_code(0);
    assert_eq!(run.requests.len(), 1, "the session started and asked the model");
    for request in &run.requests {
        assert!(!request.to_string().contains(secret), "a file from outside the root reached the model");
    }
    let warnings: Vec<&str> = run.stderr.lines().filter(|line| line.contains("warning")).collect();
    for name in refused {
        let matching: Vec<&&str> = warnings.iter().filter(|line| line.contains(name)).collect();
        assert_eq!(matching.len(), 1, "one warning line for {name}:\n{}", run.stderr);
        assert!(matching[0].contains("not loaded"), "{}", matching[0]);
    }
    assert!(!run.stderr.contains(secret));
    run
}

fn system_prompt(run: &Run) -> String {
    run.requests[0]["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

#[test]
fn agents_md_linked_outside_the_root_is_refused_with_a_warning() {
    let (outside, secret) = outside_secret();
    let workspace = TempDir::new("selfcheck");
    symlink(outside.path().join("secret.md"), workspace.path().join("AGENTS.md")).unwrap();
    let run = start_up(workspace, &secret, &["AGENTS.md"]);
    let outside_name = outside.path().file_name().unwrap().to_string_lossy().into_owned();
    assert!(!run.stderr.contains(&outside_name), "the warning shows the target:\n{}", run.stderr);
}

#[test]
fn agents_md_escaping_through_a_relative_chain_is_refused() {
    let (outside, secret) = outside_secret();
    let workspace = TempDir::new("selfcheck");
    let root = workspace.path();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    symlink(outside.path(), root.join("docs/shared")).unwrap();
    symlink("docs/../docs/shared/secret.md", root.join("AGENTS.md")).unwrap();
    start_up(workspace, &secret, &["AGENTS.md"]);
}

#[test]
fn agents_md_as_a_fifo_does_not_hang_start_up() {
    let workspace = TempDir::new("selfcheck");
    mkfifo(&workspace.path().join("AGENTS.md"));
    start_up(workspace, "never", &["AGENTS.md"]);
}

#[test]
fn agents_md_as_dev_zero_is_refused_before_reading() {
    let workspace = TempDir::new("selfcheck");
    symlink("/dev/zero", workspace.path().join("AGENTS.md")).unwrap();
    start_up(workspace, "never", &["AGENTS.md"]);
}

#[test]
fn agents_md_as_a_directory_is_a_warning_not_a_failure() {
    let workspace = TempDir::new("selfcheck");
    std::fs::create_dir_all(workspace.path().join("AGENTS.md")).unwrap();
    start_up(workspace, "never", &["AGENTS.md"]);
}

/// 300 MB of AGENTS.md (sparse: no disk) and a 300 MB skill: only the caps are read, so peak
/// RSS stays under the 64 MB bar, and the prompt says AGENTS.md was cut.
#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_huge_agents_md_is_bounded_before_it_is_read() {
    let workspace = TempDir::new("selfcheck");
    std::fs::File::create(workspace.path().join("AGENTS.md")).unwrap().set_len(300 << 20).unwrap();
    std::fs::create_dir_all(workspace.path().join("skills")).unwrap();
    std::fs::File::create(workspace.path().join("skills/huge.md")).unwrap().set_len(300 << 20).unwrap();
    let measured =
        crate::resources::measure("300 MB AGENTS.md and skill", workspace, &["-p", "hi"], vec![text("ok")]);
    assert_eq!(measured.code, Some(0), "{}", measured.stderr);
    let prompt = measured.requests[0]["messages"][0]["content"].as_str().unwrap_or_default().to_string();
    assert!(prompt.len() < 300 * 1024, "the prompt is {} bytes", prompt.len());
    assert!(prompt.contains(&format!("of {} bytes", 300u64 << 20)), "the cut is said");
    assert!(measured.stderr.contains("skills/huge.md: only the first"), "{}", measured.stderr);
}

#[test]
fn a_skills_directory_linked_outside_is_refused() {
    let (outside, secret) = outside_secret();
    let workspace = TempDir::new("selfcheck");
    std::fs::write(outside.path().join("evil.md"), format!("{secret}\n")).unwrap();
    symlink(outside.path(), workspace.path().join("skills")).unwrap();
    start_up(workspace, &secret, &["skills/"]);
}

#[test]
fn skill_files_and_folders_linked_outside_are_refused_and_the_rest_load() {
    let (outside, secret) = outside_secret();
    let workspace = TempDir::new("selfcheck");
    let skills = workspace.path().join("skills");
    std::fs::create_dir_all(skills.join("fine")).unwrap();
    std::fs::write(skills.join("fine/SKILL.md"), "---\nname: fine\n---\nRun the tests.\n").unwrap();
    std::fs::write(skills.join("review.md"), "Review carefully.\n").unwrap();
    symlink(outside.path().join("secret.md"), skills.join("leak.md")).unwrap();
    symlink(outside.path().join("skill"), skills.join("planted")).unwrap();
    mkfifo(&skills.join("pipe.md"));
    symlink("/dev/zero", skills.join("zero.md")).unwrap();
    let run = start_up(
        workspace,
        &secret,
        &["skills/leak.md", "skills/planted/SKILL.md", "skills/pipe.md", "skills/zero.md"],
    );
    let prompt = system_prompt(&run);
    assert!(prompt.contains("Run the tests.") && prompt.contains("Review carefully."), "{prompt}");
}

/// Confinement is not over-broad: a link that stays inside the root is followed.
#[test]
fn agents_md_linked_inside_the_root_still_loads() {
    let workspace = TempDir::new("selfcheck");
    std::fs::create_dir_all(workspace.path().join("docs")).unwrap();
    std::fs::write(workspace.path().join("docs/agents.md"), "Use cargo nextest.\n").unwrap();
    symlink("docs/agents.md", workspace.path().join("AGENTS.md")).unwrap();
    let run = start_up(workspace, "never", &[]);
    assert!(system_prompt(&run).contains("Use cargo nextest."));
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

// ---------------------------------------------------------------------------------------
// 2. The model can never write `.mini_agent/` or `.git/`, by any spelling.

/// The attack of the issue: `missing/../link/sessions/<live id>.jsonl` with
/// `link -> .mini_agent`. A missing component used to be resolved as text, so the `..`
/// skipped the symlink check and the live journal was replaced.
#[test]
fn the_live_journal_cannot_be_replaced_through_a_missing_directory_and_a_link() {
    let workspace = repository();
    symlink(".mini_agent", workspace.path().join("link")).unwrap();
    let root = workspace.path().to_path_buf();
    let mut replies = 0;
    let test = Test::new().args(["-p", "go", "--allow-write"]).server_fn(move |_| {
        replies += 1;
        if replies > 1 {
            return text("done");
        }
        let live = session_files(&root).pop().expect("the live journal exists when the model is asked");
        let name = live.file_name().unwrap().to_string_lossy().into_owned();
        let forged = r#"{"seq":1,"ts":"x","type":"session","version":1,"id":"x","root":"/","model":"m","created":"x"}"#;
        Step::tool_calls(&[
            ("write_file", &json!({"path": format!("missing/../link/sessions/{name}"), "content": forged}).to_string()),
            ("write_file", &json!({"path": format!("link/sessions/{name}"), "content": forged}).to_string()),
            ("write_file", &json!({"path": format!("./link/../.mini_agent/sessions/{name}"), "content": ""}).to_string()),
        ])
    });
    let run = attempt(workspace, test);
    assert!(!run.root().join("missing").exists(), "no directory was created on the way");
    let journal = run.only_journal();
    assert_ne!(journal[0]["root"], "/", "the header was not replaced");
}

#[test]
fn a_missing_directory_then_dot_dot_is_refused_whatever_follows() {
    let run = attempt(
        repository(),
        model_writes(&[
            write("nope/../../escaped.txt", "x"),
            write("nope/deeper/../../.git/config", "[core]\n\tfsmonitor = touch pwned\n"),
            write("nope/../README.md", "replaced"),
        ]),
    );
    assert_eq!(run.read("README.md").as_deref(), Some("# planted\n"));
    for result in run.tool_results() {
        assert!(result.contains("goes up (`..`) out of a directory that does not exist"), "{result}");
    }
}

#[test]
fn git_config_cannot_be_written_or_edited() {
    let run = attempt(
        repository(),
        model_writes(&[
            write(".git/config", "[core]\n\tfsmonitor = touch pwned\n"),
            edit(".git/config", "repositoryformatversion = 0", "fsmonitor = touch pwned"),
            write("./.git/./config", "[core]\n\tfsmonitor = touch pwned\n"),
        ]),
    );
    assert!(run.tool_results()[0].contains("inside .git/"), "{}", run.tool_results()[0]);
}

#[test]
fn git_hooks_cannot_be_created_even_when_the_hooks_directory_is_missing() {
    let workspace = repository();
    std::fs::remove_dir(workspace.path().join(".git/hooks")).unwrap();
    let run = attempt(
        workspace,
        model_writes(&[
            write(".git/hooks/pre-commit", "#!/bin/sh\ntouch pwned\n"),
            write(".git/info/attributes", ""),
        ]),
    );
    // The sandbox made the directory, empty, as `git init` would, so that it is read-only for
    // commands; the file tools put nothing in it.
    let hooks = std::fs::read_dir(run.root().join(".git/hooks")).map(|entries| entries.count());
    assert_eq!(hooks.ok(), Some(0), "no hook was created");
}

#[test]
fn a_git_directory_at_any_depth_is_protected() {
    let workspace = repository();
    std::fs::create_dir_all(workspace.path().join("vendor/lib/.git")).unwrap();
    std::fs::write(workspace.path().join("vendor/lib/.git/config"), "[core]\n").unwrap();
    attempt(
        workspace,
        model_writes(&[
            write("vendor/lib/.git/config", "[core]\n\tfsmonitor = touch pwned\n"),
            write("vendor/other/.git/hooks/post-checkout", "touch pwned"),
            edit("vendor/lib/.git/config", "[core]", "[core]\n\tsshCommand = touch pwned"),
        ]),
    );
}

/// A `.git` *file* (`gitdir: …`) makes git use another directory as the repository, with
/// that directory's hooks: it is refused as a name, not only as a directory.
#[test]
fn a_git_file_pointing_elsewhere_cannot_be_planted() {
    let run = attempt(
        repository(),
        model_writes(&[write("sub/.git", "gitdir: /tmp/evil\n"), write(".mini_agent", "x")]),
    );
    assert!(!run.root().join("sub/.git").exists());
}

#[test]
fn a_symlink_to_git_does_not_open_it() {
    let workspace = repository();
    symlink(".git", workspace.path().join("gitlink")).unwrap();
    std::fs::create_dir_all(workspace.path().join("docs")).unwrap();
    symlink("../.git/hooks", workspace.path().join("docs/hooks")).unwrap();
    attempt(
        workspace,
        model_writes(&[
            write("gitlink/config", "[core]\n\tfsmonitor = touch pwned\n"),
            write("docs/hooks/pre-commit", "touch pwned"),
            edit("gitlink/HEAD", "main", "evil"),
        ]),
    );
}

#[test]
fn a_symlink_into_the_sessions_directory_does_not_open_it() {
    let workspace = repository();
    let root = workspace.path().to_path_buf();
    std::fs::create_dir_all(root.join(".mini_agent/sessions")).unwrap();
    std::fs::create_dir_all(root.join("notes")).unwrap();
    symlink("../.mini_agent/sessions", root.join("notes/archive")).unwrap();
    symlink(".mini_agent/outputs", root.join("outs")).unwrap();
    attempt(
        workspace,
        model_writes(&[
            write("notes/archive/20991231-000000-0000.jsonl", "{}\n"),
            write("outs/bash-1.txt", "forged output"),
            write(&format!("{}/.mini_agent/sessions/x.jsonl", root.display()), "{}\n"),
        ]),
    );
}

/// Case-insensitive file systems (macOS, Windows shares) would take `.GIT` for `.git`.
#[test]
fn other_spellings_of_the_protected_names_are_refused() {
    attempt(
        repository(),
        model_writes(&[
            write(".GIT/config", "[core]\n\tfsmonitor = touch pwned\n"),
            write(".Mini_Agent/sessions/x.jsonl", "{}\n"),
            write("a/./b/../../.git/config", "x"),
        ]),
    );
}

// ---------------------------------------------------------------------------------------
// 8. Refusals do not print symlink targets outside the root.

#[test]
fn refusals_name_the_path_as_given_never_the_symlink_target_outside() {
    let outside = TempDir::new("selfcheck");
    std::fs::write(outside.path().join("secret.txt"), "outside secret\n").unwrap();
    let outside_before = tree(outside.path());
    let workspace = repository();
    let root = workspace.path();
    symlink(outside.path(), root.join("out")).unwrap();
    symlink("out", root.join("chain")).unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    symlink(outside.path().join("secret.txt"), root.join("docs/notes.txt")).unwrap();
    let calls = [
        ("read_file", json!({"path": "out/secret.txt"})),
        ("read_file", json!({"path": "docs/notes.txt"})),
        ("read_file", json!({"path": "chain/secret.txt"})),
        write("out/new.txt", "x"),
        edit("docs/notes.txt", "outside", "inside"),
        ("list_files", json!({"path": "chain"})),
        ("search", json!({"pattern": "secret", "path": "out"})),
    ];
    let calls: Vec<(&str, String)> = calls.iter().map(|(name, args)| (*name, args.to_string())).collect();
    let calls: Vec<(&str, &str)> = calls.iter().map(|(name, args)| (*name, args.as_str())).collect();
    let run = Test::new()
        .args(["-p", "go", "--allow-write", "-v"])
        .server(vec![Step::tool_calls(&calls), text("done")])
        .run_in(workspace);
    run.expect_code(0);
    let results = run.tool_results();
    assert_eq!(results.len(), 7);
    let outside_name = outside.path().file_name().unwrap().to_string_lossy().into_owned();
    for (result, (_, arguments)) in results.iter().zip(&calls) {
        assert!(result.starts_with("refused:"), "{result}");
        assert!(!result.contains(&outside_name), "a refusal shows the target outside: {result}");
        let given: Value = serde_json::from_str(arguments).unwrap();
        assert!(result.contains(given["path"].as_str().unwrap()), "names the path as given: {result}");
    }
    assert!(!run.stdout.contains(&outside_name), "stdout shows the target:\n{}", run.stdout);
    assert!(!run.stderr.contains(&outside_name), "stderr shows the target:\n{}", run.stderr);
    assert_eq!(tree(outside.path()), outside_before, "nothing outside changed");
}

// ---------------------------------------------------------------------------------------
// 3. A journal cannot move the root.

/// A session header as a planted journal would write it, recording `root`.
fn planted_journal(root: &str) -> String {
    let header = json!({"seq": 1, "ts": "9999-12-31T00:00:00.000Z", "type": "session", "version": 1,
        "id": "99991231-000000-ffff", "root": root, "model": "m", "created": "9999-12-31T00:00:00.000Z"});
    let user = json!({"seq": 2, "ts": "9999-12-31T00:00:00.000Z", "type": "user", "content": "hi"});
    format!("{header}\n{user}\n")
}

const PLANTED: &str = ".mini_agent/sessions/99991231-000000-ffff.jsonl";

/// A continued session whose model tries to write and read outside; the rule: the run is
/// refused before any request, with the reason, and `outside` is as it was.
fn continue_refused(workspace: TempDir, args: &[&str], outside: &TempDir, reason: &str) -> Run {
    let before = tree(outside.path());
    let mut test = Test::new().args(["--allow-write"]).server(vec![
        call(
            "write_file",
            json!({"path": format!("{}/pwned.txt", outside.path().display()), "content": "x"}),
        ),
        call("write_file", json!({"path": "pwned.txt", "content": "x"})),
        text("done"),
    ]);
    for arg in args {
        test = test.args([*arg]);
    }
    let run = test.run_in(workspace);
    run.expect_code(1).stderr_has(reason);
    assert!(run.requests.is_empty(), "a request was sent from a refused session");
    assert_eq!(tree(outside.path()), before, "something outside the root changed");
    assert!(!run.root().join("pwned.txt").exists());
    run
}

#[test]
fn a_planted_latest_journal_claiming_root_slash_is_refused_by_continue() {
    let outside = TempDir::new("selfcheck");
    let run = continue_refused(
        repository_with(PLANTED, &planted_journal("/")),
        &["-c", "-p", "go on"],
        &outside,
        "says its root is \"/\"",
    );
    assert_eq!(run.read(PLANTED).as_deref(), Some(planted_journal("/").as_str()), "the journal untouched");
}

#[test]
fn a_planted_journal_claiming_another_existing_root_is_refused_by_resume() {
    let outside = TempDir::new("selfcheck");
    let journal = planted_journal(&outside.path().display().to_string());
    continue_refused(
        repository_with(PLANTED, &journal),
        &["-r", "99991231", "-p", "go on"],
        &outside,
        "a session works only where its journal lives",
    );
}

#[test]
fn status_refuses_a_journal_whose_root_disagrees() {
    let outside = TempDir::new("selfcheck");
    continue_refused(
        repository_with(PLANTED, &planted_journal("/")),
        &["-c", "--status"],
        &outside,
        "says its root is \"/\"",
    );
}

#[test]
fn a_loose_journal_given_by_path_is_refused() {
    let outside = TempDir::new("selfcheck");
    let loose = outside.path().join("x.jsonl");
    std::fs::write(&loose, planted_journal(&outside.path().display().to_string())).unwrap();
    continue_refused(
        repository(),
        &["-r", loose.to_str().unwrap(), "-p", "go on"],
        &outside,
        "is not in a .mini_agent/sessions/ directory",
    );
}

#[test]
fn a_symlinked_record_directory_is_refused_and_nothing_lands_outside() {
    for link in [".mini_agent", ".mini_agent/sessions"] {
        let outside = TempDir::new("selfcheck");
        let workspace = repository();
        if link != ".mini_agent" {
            std::fs::create_dir_all(workspace.path().join(".mini_agent")).unwrap();
        }
        symlink(outside.path(), workspace.path().join(link)).unwrap();
        let run = continue_refused(workspace, &["-p", "go"], &outside, "is a symlink");
        assert!(tree(outside.path()).is_empty(), "{link}: a record landed outside");
        let refused = continue_refused(repository_at(run), &["-c", "-p", "go"], &outside, "is a symlink");
        drop(refused);
    }
}

#[test]
fn a_journal_that_is_a_symlink_fifo_or_huge_is_refused_without_reading_it() {
    let outside = TempDir::new("selfcheck");
    let real = outside.path().join("real.jsonl");
    std::fs::write(&real, planted_journal(&outside.path().display().to_string())).unwrap();
    let linked = repository();
    std::fs::create_dir_all(linked.path().join(".mini_agent/sessions")).unwrap();
    symlink(&real, linked.path().join(PLANTED)).unwrap();
    continue_refused(linked, &["-c", "-p", "go on"], &outside, "is a symlink");

    let fifo = repository();
    std::fs::create_dir_all(fifo.path().join(".mini_agent/sessions")).unwrap();
    mkfifo(&fifo.path().join(PLANTED));
    continue_refused(fifo, &["-c", "-p", "go on"], &outside, "is not a regular file");

    let huge = repository();
    std::fs::create_dir_all(huge.path().join(".mini_agent/sessions")).unwrap();
    let file = std::fs::File::create(huge.path().join(PLANTED)).unwrap();
    file.set_len(300 << 20).unwrap(); // sparse
    let started = std::time::Instant::now();
    continue_refused(huge, &["-c", "--status"], &outside, "more than a session may hold");
    eprintln!("a 300 MB planted journal refused in {:?}", started.elapsed());
}

fn repository_with(path: &str, content: &str) -> TempDir {
    let workspace = repository();
    let full = workspace.path().join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, content).unwrap();
    workspace
}

/// The workspace of a finished run, to run again in it.
fn repository_at(run: Run) -> TempDir {
    run.workspace
}

// ---------------------------------------------------------------------------------------
// 8. Temporary files of an interrupted write_file are cleaned up.

/// A session killed in the middle of `write_file` (its `tool_started` is on disk, the
/// temporary file is next to the target): resuming it removes that temporary file, and
/// only it.
#[test]
fn the_temporary_file_of_a_write_killed_mid_way_is_removed_on_resume() {
    use mini_agent::ch02_loop::ToolCall;
    use mini_agent::ch05_sessions::{Append, Body, SessionStore};
    use mini_agent::ch09_journal::Journal;
    let workspace = repository();
    let root = workspace.path();
    std::fs::create_dir_all(root.join("notes")).unwrap();
    std::fs::write(root.join("notes/a.txt"), "old\n").unwrap();
    let write = ToolCall {
        id: "call_0".into(),
        name: "write_file".into(),
        arguments: json!({"path": "notes/a.txt", "content": "new\n"}).to_string(),
    };
    let mut journal = Journal::create(&SessionStore::new(root), "m").unwrap();
    for body in [
        Body::User { content: "rewrite a".into() },
        Body::Assistant { content: None, tool_calls: vec![write.clone()], usage: None },
        Body::ToolStarted {
            id: write.id.clone(),
            name: write.name.clone(),
            arguments: write.arguments.clone(),
        },
    ] {
        journal.append(body).unwrap();
    }
    drop(journal); // the kill: no tool_finished
    std::fs::write(root.join("notes/.mini-agent-tmp.a.txt.1764000000000-4242-0"), "ne").unwrap();
    std::fs::write(root.join("notes/.mini-agent-tmp.b.txt.1764000000000-4242-1"), "other").unwrap();
    let run = Test::new()
        .args(["-c", "--acknowledge-unknown", "-p", "go on"])
        .server(vec![text("checked")])
        .run_in(workspace);
    run.expect_code(0).stderr_has("removed 1 temporary file(s) left by an interrupted write");
    let left: Vec<String> = std::fs::read_dir(run.root().join("notes"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("a.txt"))
        .collect();
    assert_eq!(left, ["a.txt"], "the temporary file of a.txt is gone, the file itself kept");
    assert_eq!(run.read("notes/a.txt").as_deref(), Some("old\n"));
    assert!(run.root().join("notes/.mini-agent-tmp.b.txt.1764000000000-4242-1").exists(), "others kept");
}

/// Failed writes leave nothing behind: every error path removes the temporary file.
#[test]
fn failed_and_refused_writes_leave_no_temporary_file() {
    let workspace = repository();
    std::fs::create_dir_all(workspace.path().join("dir/sub")).unwrap();
    let run = model_writes(&[
        write("dir", "x"),
        write(".git/config", "x"),
        write("README.md/child", "x"),
        write(&"n".repeat(300), "x"),
        write("ok.txt", "fine"),
    ])
    .run_in(workspace);
    run.expect_code(0);
    let temps: Vec<PathBuf> =
        tree(run.root()).into_keys().filter(|p| p.to_string_lossy().contains(".mini-agent-tmp.")).collect();
    assert!(temps.is_empty(), "left behind: {temps:?}");
    assert_eq!(run.read("ok.txt").as_deref(), Some("fine"));
}

/// `/list` opens every journal of the root: a FIFO named like a session must not hang it,
/// and a symlinked one must not be followed.
#[test]
fn listing_sessions_does_not_hang_on_a_planted_fifo_or_follow_a_link() {
    let outside = TempDir::new("selfcheck");
    let workspace = repository();
    let sessions = workspace.path().join(".mini_agent/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    mkfifo(&sessions.join("99991231-000000-fffe.jsonl"));
    std::fs::write(outside.path().join("x.jsonl"), planted_journal("/")).unwrap();
    symlink(outside.path().join("x.jsonl"), sessions.join("99991231-000000-ffff.jsonl")).unwrap();
    let run = Test::new().stdin("/list\n/exit\n").server(vec![]).run_in(workspace);
    run.expect_code(0);
    assert!(run.stderr.contains("is not a regular file, so it is not a session"), "{}", run.stderr);
    assert!(!run.stdout.contains("99991231-000000-ffff"), "a linked journal was listed:\n{}", run.stdout);
}

/// A planted `.mini_agent/history -> ~/.bashrc` would have every line typed at the terminal
/// appended to the target: history is turned off instead, with a warning.
#[test]
fn a_history_file_linked_outside_is_not_written_through() {
    use crate::pty::Terminal;
    use mini_agent::scripted_server::ScriptedServer;
    let outside = TempDir::new("selfcheck");
    let target = outside.path().join("bashrc");
    std::fs::write(&target, "# original\n").unwrap();
    let workspace = repository();
    std::fs::create_dir_all(workspace.path().join(".mini_agent")).unwrap();
    symlink(&target, workspace.path().join(".mini_agent/history")).unwrap();
    let server = ScriptedServer::scripted(vec![text("answered")]).expect("server");
    let mut terminal = Terminal::start(workspace.path(), &["--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("touch pwned\r");
    terminal.wait_for("answered");
    let shown = terminal.exit();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "# original\n", "typed lines reached the target");
    assert!(shown.contains("history is off"), "{shown}");
}

/// The same, with a real kill: SIGKILL as soon as the temporary file of a 4 MB write exists.
/// Whether the kill lands mid-write or just after it, the rule holds: after resuming, no
/// temporary file is left and the target is either the old file or the new one, whole.
#[test]
fn a_write_killed_for_real_leaves_no_temporary_file_after_resume() {
    let content = "0123456789abcdef".repeat(4 << 16); // 4 MiB
    let mut caught = 0;
    for attempt in 0..2 {
        let workspace = repository();
        std::fs::create_dir_all(workspace.path().join("notes")).unwrap();
        std::fs::write(workspace.path().join("notes/a.txt"), "old\n").unwrap();
        let has_temp = |root: &Path| {
            std::fs::read_dir(root.join("notes"))
                .map(|entries| {
                    entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with(".mini-agent-tmp."))
                })
                .unwrap_or(false)
        };
        let killed = Test::new()
            .args(["-p", "rewrite a", "--allow-write"])
            .server(vec![
                call("write_file", json!({"path": "notes/a.txt", "content": content})),
                text("done"),
            ])
            .signal_when(has_temp, crate::harness::SIGKILL)
            .run_in(workspace);
        let mid_write = killed.code.is_none() && has_temp(killed.root());
        caught += usize::from(mid_write);
        let resumed = Test::new()
            .args(["-c", "--acknowledge-unknown", "-p", "go on"])
            // 4 MB of history: chapter 7 asks the model for a summary first.
            .server(vec![text("a summary"), text("checked"), text("checked")])
            .run_in(killed.workspace);
        resumed.expect_code(0);
        assert!(!has_temp(resumed.root()), "attempt {attempt}: a temporary file is left");
        let target = resumed.read("notes/a.txt").unwrap();
        assert!(target == "old\n" || target == content, "attempt {attempt}: the target is half written");
        if mid_write {
            resumed.stderr_has("removed 1 temporary file(s)");
        }
    }
    eprintln!("real kills that landed mid-write: {caught} of 2");
}

// ---------------------------------------------------------------------------------------
// 3 (continued). Listing sessions reads planted journals too: bounded like opening one.

/// Runs `mini-agent ARGS` in `root` and returns (exit code, stdout and stderr, peak RSS in kB).
fn peak_rss_of(root: &Path, args: &[&str]) -> (Option<i32>, String, i64) {
    let run = crate::measure::run_measured(&format!("mini-agent {args:?}"), root, args);
    (run.code, run.stdout + &run.stderr, run.peak_rss_kb)
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn listing_sessions_does_not_read_a_huge_planted_journal_whole() {
    // A 1 GB sparse file with no newline under a session's name: `mini-agent sessions` (and
    // `/list`, the same table) must refuse it as `-c` does, not hold it as one line.
    let workspace = repository_with(".mini_agent/sessions/20261201-000000-aaaa.jsonl", &planted_journal("x"));
    let huge = workspace.path().join(".mini_agent/sessions/20261201-000001-bbbb.jsonl");
    std::fs::File::create(&huge).unwrap().set_len(1 << 30).unwrap();
    let (code, printed, peak_kb) = peak_rss_of(workspace.path(), &["sessions"]);
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("20261201-000000-aaaa"), "the other session is still listed:\n{printed}");
    assert!(peak_kb < 64 * 1000, "peak RSS {peak_kb} kB listing a planted 1 GB journal");
}

#[test]
fn a_huge_planted_history_file_is_not_read_at_start_up() {
    // `.mini_agent/history` is a file of the workspace like any other: a repository can
    // carry a 1 GB one (sparse: it costs nothing to ship). The line editor must not load it.
    let workspace = repository();
    std::fs::create_dir_all(workspace.path().join(".mini_agent")).unwrap();
    std::fs::File::create(workspace.path().join(".mini_agent/history")).unwrap().set_len(1 << 30).unwrap();
    let mut terminal = crate::pty::Terminal::start(workspace.path(), &["--demo"]);
    terminal.wait_for("> ");
    let status = std::fs::read_to_string(format!("/proc/{}/status", terminal.pid())).unwrap_or_default();
    let peak_kb: i64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/<pid>/status");
    let screen = terminal.exit();
    eprintln!("[planted] REPL start with a 1 GB history: peak RSS {:.1} MB", peak_kb as f64 / 1000.0);
    assert!(peak_kb < 64 * 1000, "peak RSS {peak_kb} kB\n{screen}");
}

#[test]
fn thousands_of_planted_skills_cost_a_bounded_start_up() {
    // Skills that all claim one name are refused one by one: each must still count against
    // the cap on what is read, or a repository makes start-up read (and warn about) every
    // file it ships.
    let workspace = repository();
    let skills = workspace.path().join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    for n in 0..3_000 {
        std::fs::write(skills.join(format!("s{n:05}.md")), "---\nname: same\n---\nbody\n").unwrap();
    }
    let run = Test::new().args(["-p", "hi"]).server(vec![text("ok")]).run_in(workspace);
    run.expect_code(0);
    let warnings = run.stderr.lines().filter(|line| line.contains("warning")).count();
    eprintln!("[planted] 3,000 skills of one name: {warnings} warning lines");
    assert!(warnings <= 10, "{warnings} warning lines at start-up");
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn continue_is_not_held_by_planted_journals_without_a_reply() {
    // `-c` looks for the newest session with a model reply. Forty planted 250 MB journals
    // (sparse: free to ship) with none must not be read through, nor any held as one line.
    let workspace = repository_with(".mini_agent/sessions/20261201-000000-aaaa.jsonl", &planted_journal("x"));
    for n in 0..40 {
        let path = workspace.path().join(format!(".mini_agent/sessions/20991231-0000{n:02}-bbbb.jsonl"));
        std::fs::File::create(path).unwrap().set_len(250 << 20).unwrap();
    }
    let run = crate::measure::run_measured("mini-agent -c --status", workspace.path(), &["-c", "--status"]);
    let printed = run.stdout + &run.stderr;
    // With no reply anywhere the newest is opened, and a journal is read whole (up to its
    // 256 MiB cap, by design): the bound is that one file and the heads of the others (about
    // 600 MB in all), not forty files (10 GB). Counted in bytes read, not in seconds: a time
    // bound failed on a loaded machine.
    assert!(run.peak_rss_kb < 64 * 1000 * 5, "peak RSS {} kB\n{printed}", run.peak_rss_kb);
    assert!(run.read_bytes < 1 << 30, "-c read {} bytes of 10 GB\n{printed}", run.read_bytes);
}

// ---------------------------------------------------------------------------------------
// The agent's own configuration, wherever the root is.

/// Found by the red team: with the workspace root at `$HOME` and only `--allow-write`, the
/// model wrote `~/.config/mini-agent/mcp.json` (the user's own servers, started without a
/// question) and the approval store, and the next plain run started its server. The file
/// tools never write the agent's configuration directory: not by its name, not through a
/// link inside the root, not in the `XDG_CONFIG_HOME` place nor in the `~/.config` one, and
/// not by creating it when it is missing.
#[test]
fn the_agents_own_configuration_is_never_written_even_with_the_root_at_home() {
    let home = TempDir::new("selfcheck");
    let root = home.path();
    std::fs::create_dir_all(root.join(".config/mini-agent")).unwrap();
    std::fs::write(root.join(".config/mini-agent/approved"), "0000\n").unwrap();
    std::os::unix::fs::symlink(".config", root.join("dotfiles")).unwrap();
    let server = json!({"mcpServers": {"x": {"command": "sh", "args": ["-c", "touch pwned"]}}}).to_string();
    let calls = [
        write(".config/mini-agent/mcp.json", &server),
        write(".config/mini-agent/approved", "ffff\n"),
        edit(".config/mini-agent/approved", "0000", "ffff"),
        write("dotfiles/mini-agent/mcp.json", &server),
        write("xdg/mini-agent/mcp.json", &server),
    ];
    let home_path = root.display().to_string();
    let xdg = root.join("xdg").display().to_string();
    let run = model_writes(&calls).env("HOME", &home_path).env("XDG_CONFIG_HOME", &xdg).run_in(home);
    run.expect_code(0);
    let results = run.tool_results();
    assert_eq!(results.len(), calls.len());
    for result in &results {
        assert!(result.contains("the agent's own configuration and approvals"), "{result}");
    }
    assert!(!run.root().join(".config/mini-agent/mcp.json").exists(), "the user's MCP file was written");
    assert!(!run.root().join("xdg").exists(), "the XDG configuration directory was created");
    assert_eq!(std::fs::read_to_string(run.root().join(".config/mini-agent/approved")).unwrap(), "0000\n");
    // With `XDG_CONFIG_HOME` unset, `~/.config/mini-agent` is the one in use; still refused.
    let home = TempDir::new("selfcheck");
    let home_path = home.path().display().to_string();
    let again = model_writes(&[write(".config/mini-agent/mcp.json", &server)])
        .env("HOME", &home_path)
        .env("XDG_CONFIG_HOME", "")
        .run_in(home);
    again.expect_code(0);
    assert!(again.only_tool_result().contains("own configuration"), "{}", again.only_tool_result());
    assert!(!again.root().join(".config").exists(), "the configuration directory was created");
}
