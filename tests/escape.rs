//! The escape suite: every way we know to make a file tool reach outside the workspace root.
//! A canary file sits next to the root; its secret must never appear in a tool's answer, and
//! nothing outside the root may change.

use mini_agent::ch02_loop::{ToolCall, ToolOutput, ToolStatus, Tools};
use mini_agent::ch03_tools::Workspace;
use mini_agent::temp_dir::TempDir;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

const SECRET: &str = "CANARY-SECRET-7f3a";

struct Sandbox {
    base: PathBuf,
    root: PathBuf,
    _dir: TempDir,
}

impl Sandbox {
    fn new(name: &str) -> Sandbox {
        let dir = TempDir::new(&format!("escape-{name}"));
        let base = dir.path().to_path_buf();
        let root = base.join("root");
        fs::create_dir_all(root.join("sub/deeper")).unwrap();
        fs::create_dir_all(base.join("outside/deep")).unwrap();
        fs::write(base.join("canary.txt"), SECRET).unwrap();
        fs::write(base.join("outside/secret.txt"), SECRET).unwrap();
        fs::write(base.join("outside/f"), SECRET).unwrap();
        fs::write(root.join("inside.txt"), "inside\n").unwrap();
        Sandbox { root, base, _dir: dir }
    }

    /// Every file outside the root with its content, to prove nothing there changed.
    fn outside_state(&self) -> BTreeSet<(PathBuf, Vec<u8>)> {
        let mut state = BTreeSet::new();
        let mut stack = vec![self.base.clone()];
        while let Some(directory) = stack.pop() {
            for entry in fs::read_dir(&directory).unwrap().flatten() {
                let path = entry.path();
                if path == self.root {
                    continue;
                }
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    stack.push(path.clone());
                }
                let content = if kind.is_file() { fs::read(&path).unwrap() } else { Vec::new() };
                state.insert((path, content));
            }
        }
        state
    }
}

fn call(workspace: &mut Workspace, name: &str, arguments: Value) -> ToolOutput {
    workspace.run(&ToolCall { id: "x".into(), name: name.into(), arguments: arguments.to_string() })
}

#[test]
fn no_path_escapes_the_root() {
    let sandbox = Sandbox::new("paths");
    let root = &sandbox.root;
    let base = &sandbox.base;
    symlink("/", root.join("to_fs_root")).unwrap();
    symlink("../outside", root.join("to_outside")).unwrap();
    symlink(base.join("outside"), root.join("abs_outside")).unwrap();
    symlink("chain2", root.join("chain1")).unwrap();
    symlink("sub/chain3", root.join("chain2")).unwrap();
    symlink("../../canary.txt", root.join("sub/chain3")).unwrap();
    symlink("../outside/deep", root.join("dir_link")).unwrap();
    symlink("../canary.txt", root.join("canary_link")).unwrap();
    symlink("../created_outside.txt", root.join("dangling")).unwrap();
    symlink("loop", root.join("loop")).unwrap();
    symlink("sub/..", root.join("sneaky_up")).unwrap();
    symlink("/proc/self/cwd", root.join("proc_cwd")).unwrap();
    let weird = OsStr::from_bytes(b"bad-\xff\xfe-name");
    symlink("../canary.txt", root.join(weird)).unwrap();
    let before = sandbox.outside_state();
    let mut workspace = Workspace::new(root).unwrap();

    let absolute_canary = base.join("canary.txt").display().to_string();
    let long_dirs = "a/".repeat(3000) + "x";
    let long_name = "x".repeat(5000);
    let many_ups = "../".repeat(500) + "etc/passwd";
    let paths: Vec<String> = vec![
        "../canary.txt".into(),
        "../../canary.txt".into(),
        "sub/../../canary.txt".into(),
        "sub/deeper/../../../canary.txt".into(),
        "./../canary.txt".into(),
        many_ups,
        "/etc/passwd".into(),
        "//etc//passwd".into(),
        absolute_canary.clone(),
        format!("{}/../canary.txt", root.display()),
        "/proc/self/root/etc/passwd".into(),
        "to_fs_root/etc/passwd".into(),
        format!("to_fs_root{absolute_canary}"),
        "to_outside/secret.txt".into(),
        "abs_outside/secret.txt".into(),
        "chain1".into(),
        "sub/chain3".into(),
        "dir_link/../secret.txt".into(),
        "dir_link/../f".into(),
        "canary_link".into(),
        "sneaky_up/../canary.txt".into(),
        "proc_cwd/Cargo.toml".into(),
        "loop".into(),
        "loop/x".into(),
        "~/canary.txt".into(),
        "~root/.bashrc".into(),
        "..\\canary.txt".into(),
        "sub\\..\\..\\canary.txt".into(),
        "inside.txt\0../canary.txt".into(),
        "\0".into(),
        long_dirs,
        long_name,
        format!("{}/../../canary.txt", "y".repeat(300)),
    ];
    let mut attempts = 0;
    for path in &paths {
        let reads = [
            ("read_file", json!({"path": path})),
            ("edit_file", json!({"path": path, "old_string": SECRET, "new_string": "PWNED"})),
            ("write_file", json!({"path": path, "content": "PWNED"})),
            ("list_files", json!({"path": path})),
            ("search", json!({"pattern": "CANARY", "path": path})),
        ];
        for (tool, arguments) in reads {
            attempts += 1;
            let output = call(&mut workspace, tool, arguments);
            assert_eq!(output.status, ToolStatus::Error, "{tool} {path:?} succeeded: {}", output.content);
            assert!(!output.content.contains(SECRET), "{tool} {path:?} leaked the canary");
        }
    }
    // A non-UTF-8 name cannot be written in JSON; its lossy spelling names another file, and
    // reading that must not reach the link's target.
    for tool in ["read_file", "edit_file", "search"] {
        attempts += 1;
        let arguments = json!({"path": "bad-\u{fffd}\u{fffd}-name", "pattern": "C", "old_string": "C", "new_string": "D"});
        let output = call(&mut workspace, tool, arguments);
        assert_eq!(output.status, ToolStatus::Error, "{tool}: {}", output.content);
        assert!(!output.content.contains(SECRET));
    }
    let listing = call(&mut workspace, "list_files", json!({}));
    assert!(listing.content.contains("bad-\u{fffd}\u{fffd}-name -> ../canary.txt"), "{}", listing.content);
    // The dangling link points out: writing through it must not create the file outside.
    attempts += 1;
    let dangling = call(&mut workspace, "write_file", json!({"path": "dangling", "content": "PWNED"}));
    assert_eq!(dangling.status, ToolStatus::Error, "{}", dangling.content);
    // Whole-tree walks and globs must not follow the links out.
    for (tool, arguments) in [
        ("list_files", json!({})),
        ("list_files", json!({"pattern": "**/*"})),
        ("list_files", json!({"pattern": "../*"})),
        ("list_files", json!({"pattern": "**/secret.txt"})),
        ("search", json!({"pattern": "CANARY"})),
        ("search", json!({"pattern": "CANARY", "glob": "**"})),
        ("search", json!({"pattern": "CANARY", "path": "."})),
    ] {
        attempts += 1;
        let output = call(&mut workspace, tool, arguments.clone());
        assert!(!output.content.contains(SECRET), "{tool} {arguments} leaked the canary");
        let listed_outside =
            output.content.lines().any(|line| line.contains("secret.txt") && !line.starts_with("no files"));
        assert!(!listed_outside, "{tool} {arguments} listed outside: {}", output.content);
    }
    // A command is not confined (the shell is not a sandbox), but a file tool never is fooled.
    assert_eq!(sandbox.outside_state(), before, "something outside the root changed");
    assert!(!base.join("created_outside.txt").exists());
    println!("escape suite: {attempts} path attempts, 0 escapes");
    assert!(attempts >= 30);
}

/// A thread swaps a path between a real file (or directory) and a symlink pointing out, as
/// fast as it can, while the tools read and write it. The check-then-use gap must never leak.
#[test]
fn swapping_a_path_for_a_symlink_never_leaks() {
    let sandbox = Sandbox::new("race");
    let root = sandbox.root.clone();
    let base = sandbox.base.clone();
    fs::create_dir(root.join("swapdir")).unwrap();
    fs::write(root.join("swapdir/f"), "inside\n").unwrap();
    fs::write(root.join("swap"), "inside\n").unwrap();
    let before = sandbox.outside_state();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let (root, base) = (root.clone(), base.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                swap_in(&root.join("swap"), &base.join("canary.txt"), false);
                swap_in(&root.join("swapdir"), &base.join("outside"), true);
                swaps += 1;
            }
            swaps
        })
    };
    let mut workspace = Workspace::new(&root).unwrap();
    let mut tries = 0;
    let mut outcomes = std::collections::BTreeMap::new();
    for round in 0..200 {
        let calls = [
            ("read_file", json!({"path": "swap"})),
            ("read_file", json!({"path": "swapdir/f"})),
            ("search", json!({"pattern": "CANARY"})),
            ("list_files", json!({"path": "swapdir"})),
            ("edit_file", json!({"path": "swapdir/f", "old_string": "inside", "new_string": "INSIDE"})),
            ("write_file", json!({"path": "swap", "content": format!("inside {round}\n")})),
            ("write_file", json!({"path": "swapdir/f", "content": "inside\n"})),
        ];
        for (tool, arguments) in calls {
            tries += 1;
            let output = call(&mut workspace, tool, arguments);
            assert!(!output.content.contains(SECRET), "{tool} leaked the canary in round {round}");
            let outcome = match output.status {
                ToolStatus::Ok => "ok",
                _ if output.content.contains("changed while being opened") => "caught after open",
                _ if output.content.contains("became a symlink") => "symlink met at open",
                _ if output.content.starts_with("refused") => "refused at resolve",
                _ => "other error (vanished mid-swap)",
            };
            *outcomes.entry(outcome).or_insert(0) += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert_eq!(sandbox.outside_state(), before, "something outside the root changed");
    println!("race: {tries} tool calls during {swaps} swaps, 0 leaks; outcomes {outcomes:?}");
}

/// Replaces `path` by a symlink to `target`, then back by a real file or directory.
fn swap_in(path: &Path, target: &Path, directory: bool) {
    let _ = fs::remove_file(path).or_else(|_| fs::remove_dir_all(path));
    let _ = symlink(target, path);
    std::thread::yield_now();
    let _ = fs::remove_file(path);
    if directory {
        let _ = fs::create_dir(path);
        let _ = fs::write(path.join("f"), "inside\n");
    } else {
        let _ = fs::write(path, "inside\n");
    }
}
