//! The loop's git against real repositories in temporary directories: what a failed attempt
//! leaves is set aside and the tree put back; a commit holds a task's work; git cannot hang.

use super::git::{ATTEMPT_REF, Git};
use super::set_aside::ref_component;
use crate::temp_dir::TempDir;
use std::fs;
use std::path::Path;
use std::process::Command;

fn git(root: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A repository with `kept.txt`, `gone.txt` and `sub/deep.txt` committed, `*.log` ignored,
/// and a task list under `.mini_agent/`.
fn repository() -> (TempDir, Git) {
    let dir = TempDir::new("tasks-git");
    let root = dir.path();
    git(root, &["init", "-q"]);
    dir.write("kept.txt", "kept\n");
    dir.write("gone.txt", "gone\n");
    dir.write("sub/deep.txt", "deep\n");
    dir.write(".gitignore", "*.log\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "start"]);
    dir.write(".mini_agent/tasks.json", "{}\n");
    let list = root.join(".mini_agent/tasks.json");
    let opened = Git::open(root, &[list.as_path()]).unwrap().expect("a repository");
    (dir, opened)
}

fn read(dir: &TempDir, path: &str) -> Option<String> {
    fs::read_to_string(dir.join(path)).ok()
}

#[test]
fn a_failed_attempt_is_set_aside_and_the_tree_put_back() {
    let (dir, repo) = repository();
    let root = dir.path();
    repo.start_attempt("2", 1).unwrap();
    // The attempt adds, changes, removes, stages, writes an ignored file and its own notes.
    dir.write("notes.txt", "notes\n");
    dir.write("new/dir/file.txt", "new\n");
    dir.write("kept.txt", "changed\n");
    fs::remove_file(dir.join("gone.txt")).unwrap();
    dir.write("sub/deep.txt", "staged\n");
    git(root, &["add", "sub/deep.txt"]);
    dir.write("build.log", "ignored\n");
    dir.write(".mini_agent/sessions/x.jsonl", "{}\n");
    let kept = repo.set_aside("2", 1, "its verify command failed").unwrap().expect("changes");
    assert_eq!(kept.reference, "refs/mini-agent/failed/2/1");
    assert_eq!(kept.files, 5);
    // The tree, the index and HEAD are as the attempt found them...
    assert_eq!(git(root, &["status", "--porcelain"]), "?? .mini_agent/\n");
    assert_eq!(read(&dir, "kept.txt").as_deref(), Some("kept\n"));
    assert_eq!(read(&dir, "gone.txt").as_deref(), Some("gone\n"));
    assert_eq!(read(&dir, "sub/deep.txt").as_deref(), Some("deep\n"));
    assert!(!dir.join("notes.txt").exists() && !dir.join("new").exists(), "added files and their folders go");
    // ...but for what git ignores and the harness's own files.
    assert_eq!(read(&dir, "build.log").as_deref(), Some("ignored\n"));
    assert!(dir.join(".mini_agent/sessions/x.jsonl").exists());
    // `git show REF` is what the attempt did.
    let shown = git(root, &["show", "--name-status", "--format=%s", &kept.reference]);
    assert!(
        shown.starts_with("mini-agent: task 2, attempt 1, set aside (its verify command failed)"),
        "{shown}"
    );
    for line in ["M\tkept.txt", "D\tgone.txt", "A\tnotes.txt", "A\tnew/dir/file.txt", "M\tsub/deep.txt"] {
        assert!(shown.contains(line), "{line} in {shown}");
    }
    assert!(!shown.contains("build.log") && !shown.contains(".mini_agent"), "{shown}");
    assert!(git(root, &["for-each-ref", ATTEMPT_REF]).is_empty(), "the attempt is over");
    // After `tasks reset`, attempt 1 again: the first one is kept, the second gets its own ref.
    repo.start_attempt("2", 1).unwrap();
    dir.write("notes.txt", "again\n");
    assert_eq!(repo.set_aside("2", 1, "again").unwrap().unwrap().reference, "refs/mini-agent/failed/2/1-2");
    assert_eq!(
        repo.set_aside_refs("2").unwrap(),
        ["refs/mini-agent/failed/2/1", "refs/mini-agent/failed/2/1-2"]
    );
}

#[test]
fn an_attempt_that_changed_nothing_keeps_nothing_and_commits_hold_one_task() {
    let (dir, repo) = repository();
    let root = dir.path();
    repo.start_attempt("1", 1).unwrap();
    assert_eq!(repo.set_aside("1", 1, "nothing").unwrap(), None);
    assert!(git(root, &["for-each-ref", "refs/mini-agent/"]).is_empty());
    // A failed task's notes, then a passing task: its commit holds its own file alone.
    repo.start_attempt("2", 1).unwrap();
    dir.write("notes.txt", "notes\n");
    repo.set_aside("2", 1, "failed").unwrap().unwrap();
    repo.start_attempt("3", 1).unwrap();
    dir.write("a.txt", "a\n");
    let commit = repo.commit_all("3: create a.txt").unwrap().expect("a commit");
    assert_eq!(
        git(root, &["show", "--name-only", "--format=%an|%s", &commit]),
        "mini-agent|3: create a.txt\n\na.txt\n"
    );
    assert!(git(root, &["for-each-ref", ATTEMPT_REF]).is_empty(), "the commit ended the attempt");
    assert_eq!(git(root, &["status", "--porcelain"]), "?? .mini_agent/\n");
}

#[test]
fn commits_the_attempt_made_itself_are_kept_and_the_branch_put_back() {
    let (dir, repo) = repository();
    let root = dir.path();
    let start = git(root, &["rev-parse", "HEAD"]);
    repo.start_attempt("4", 2).unwrap();
    dir.write("mine.txt", "mine\n");
    git(root, &["add", "mine.txt"]);
    git(root, &["commit", "-q", "-m", "the model's own commit"]);
    git(root, &["checkout", "-q", "-b", "elsewhere"]);
    dir.write("loose.txt", "loose\n");
    let kept = repo.set_aside("4", 2, "stopped").unwrap().expect("changes");
    assert_eq!(git(root, &["rev-parse", "HEAD"]), start);
    assert_eq!(
        git(root, &["symbolic-ref", "--short", "HEAD"]).trim(),
        git(root, &["branch", "--show-current"]).trim()
    );
    assert_ne!(git(root, &["branch", "--show-current"]).trim(), "elsewhere");
    assert_eq!(git(root, &["status", "--porcelain"]), "?? .mini_agent/\n");
    let subjects = git(root, &["log", "--format=%s", &kept.reference]);
    assert!(subjects.contains("the model's own commit"), "{subjects}");
}

#[test]
fn added_paths_behind_a_symlink_or_in_a_repository_of_their_own_are_left() {
    let (dir, repo) = repository();
    let root = dir.path();
    let outside = TempDir::new("tasks-git-outside");
    repo.start_attempt("5", 1).unwrap();
    git(root, &["init", "-q", "nested"]);
    dir.write("nested/file.txt", "x\n");
    git(&root.join("nested"), &["add", "-A"]);
    git(&root.join("nested"), &["commit", "-q", "-m", "n"]);
    std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
    let kept = repo.set_aside("5", 1, "failed").unwrap().expect("changes");
    assert_eq!(kept.left, ["nested"], "a repository inside the tree is not deleted");
    assert!(dir.join("nested/file.txt").exists());
    assert!(fs::symlink_metadata(root.join("link")).is_err(), "the link itself goes");
    assert!(outside.path().exists(), "not what it points to");
}

#[test]
fn an_attempt_that_edits_the_ignore_rules_cannot_hide_its_files_or_expose_the_users() {
    let (dir, repo) = repository();
    let root = dir.path();
    dir.write("build.log", "the user's, ignored\n");
    dir.write("cache.log", "the user's too\n");
    repo.start_attempt("6", 1).unwrap();
    // It drops `*.log` from .gitignore, hides its own folder there, and stages an ignored file.
    dir.write(".gitignore", "node_modules/\n");
    dir.write("node_modules/dep/index.js", "x\n");
    git(root, &["add", "-f", "cache.log"]);
    let kept = repo.set_aside("6", 1, "failed").unwrap().expect("changes");
    assert_eq!(read(&dir, ".gitignore").as_deref(), Some("*.log\n"));
    assert_eq!(
        read(&dir, "build.log").as_deref(),
        Some("the user's, ignored\n"),
        "ignored before: untouched"
    );
    assert_eq!(read(&dir, "cache.log").as_deref(), Some("the user's too\n"));
    assert!(!dir.join("node_modules").exists(), "what the attempt hid from git is its own: it goes");
    assert_eq!(git(root, &["status", "--porcelain"]), "?? .mini_agent/\n");
    let shown = git(root, &["show", "--name-status", "--format=", &kept.reference]);
    assert_eq!(
        shown, "M\t.gitignore\nA\tnode_modules/dep/index.js\n",
        "the record: the attempt's, not the user's"
    );
    assert_eq!(kept.files, 2);
}

#[test]
fn a_root_below_the_top_of_the_repository_is_set_aside_alone() {
    let (dir, _) = repository();
    let root = dir.path();
    let sub = root.join("sub");
    let repo = Git::open(&sub, &[]).unwrap().expect("a repository");
    repo.start_attempt("7", 1).unwrap();
    dir.write("outside.txt", "not the root's\n");
    dir.write("sub/.gitignore", "hidden/\n");
    dir.write("sub/hidden/x.txt", "x\n");
    dir.write("sub/deep.txt", "changed\n");
    let kept = repo.set_aside("7", 1, "failed").unwrap().expect("changes");
    assert_eq!(read(&dir, "outside.txt").as_deref(), Some("not the root's\n"), "outside the root: untouched");
    assert_eq!(read(&dir, "sub/deep.txt").as_deref(), Some("deep\n"));
    assert!(!dir.join("sub/.gitignore").exists() && !dir.join("sub/hidden").exists());
    let shown = git(root, &["show", "--name-status", "--format=", &kept.reference]);
    assert_eq!(shown, "A\tsub/.gitignore\nM\tsub/deep.txt\nA\tsub/hidden/x.txt\n");
}

#[test]
fn ids_make_valid_distinct_ref_names() {
    assert_eq!(ref_component("12"), "12");
    assert_eq!(ref_component("fix-login_2"), "fix-login_2");
    assert_eq!(ref_component("a.b"), "a%2Eb");
    assert_eq!(ref_component("../x y"), "%2E%2E%2Fx%20y");
    assert_eq!(ref_component(""), "%");
}
