//! A read-only checkout (issue 22, item 8): a question is still answered, with one warning
//! that the session is not recorded (naming the workspace root, which is where sessions are
//! kept, not the current directory), and what needs the journal (`-c`, `tasks run`, `serve`)
//! fails saying why and what to do.
//!
//! The directory is made read-only for real: a read-only bind mount in a private user and
//! mount namespace (`unshare -rm`), which works for root too; without user namespaces, a
//! non-root user's `chmod`. Root without user namespaces cannot make one (root writes through
//! any mode), and the tests fail saying so rather than pass untested.

use crate::binary_run::{Workspace, agent_command, drain};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WARNING: &str = "mini-agent: warning: this session is not recorded: the workspace root ";

/// How this machine makes a directory read-only.
#[derive(Clone, Copy, PartialEq)]
enum ReadOnly {
    BindMount,
    Chmod,
}

/// The script that makes `$0` a read-only bind mount, then runs the rest of its arguments in
/// the directory `$1`.
const MOUNT_READ_ONLY: &str =
    r#"mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && cd "$1" && shift && exec "$@""#;

fn how_to_make_read_only() -> ReadOnly {
    // SELFCHECK_READ_ONLY=chmod tries the other way on a machine that has both.
    if std::env::var("SELFCHECK_READ_ONLY").as_deref() == Ok("chmod") {
        return ReadOnly::Chmod;
    }
    let probe = Workspace::new("read-only-probe");
    let mounted = Command::new("unshare")
        .args(["-rm", "sh", "-c", MOUNT_READ_ONLY])
        .args([probe.path(), probe.path()])
        .args(["sh", "-c", "! touch probe 2>/dev/null"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if mounted {
        return ReadOnly::BindMount;
    }
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string());
    match uid.as_deref() {
        Ok("0") | Err(_) => panic!(
            "cannot make a read-only directory here: no user namespaces for a read-only bind mount \
             (unshare -rm), and root writes through chmod; run as another user or allow user namespaces"
        ),
        Ok(_) => ReadOnly::Chmod,
    }
}

/// Every directory and file under `root` given `dir_mode` / `file_mode`.
fn chmod_tree(root: &Path, dir_mode: u32, file_mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(root).expect("list the workspace").flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            chmod_tree(&path, dir_mode, file_mode);
        } else {
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(file_mode));
        }
    }
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(dir_mode)).expect("chmod");
}

/// `mini-agent ARGS` in `workspace` made read-only, with `stdin`: (exit code, stdout, stderr).
fn run_read_only(workspace: &Path, args: &[&str], stdin: &str) -> (Option<i32>, String, String) {
    run_read_only_from(workspace, workspace, args, stdin)
}

/// `mini-agent ARGS` started in `cwd`, with `workspace` made read-only.
fn run_read_only_from(
    workspace: &Path,
    cwd: &Path,
    args: &[&str],
    stdin: &str,
) -> (Option<i32>, String, String) {
    let how = how_to_make_read_only();
    let plain = agent_command(cwd);
    let mut command = match how {
        ReadOnly::BindMount => {
            let mut command = Command::new("unshare");
            command
                .args(["-rm", "sh", "-c", MOUNT_READ_ONLY])
                .args([workspace, cwd])
                .arg(plain.get_program());
            for (name, value) in plain.get_envs() {
                match value {
                    Some(value) => command.env(name, value),
                    None => command.env_remove(name),
                };
            }
            command
        }
        ReadOnly::Chmod => {
            chmod_tree(workspace, 0o555, 0o444);
            plain
        }
    };
    command.args(args).env("HOME", workspace).current_dir(cwd);
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("start mini-agent");
    let mut input = child.stdin.take().expect("stdin");
    std::io::Write::write_all(&mut input, stdin.as_bytes()).expect("write stdin");
    drop(input);
    let (stdout, stderr) =
        (drain(child.stdout.take().expect("stdout")), drain(child.stderr.take().expect("stderr")));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("mini-agent {args:?} hung in a read-only directory");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if how == ReadOnly::Chmod {
        chmod_tree(workspace, 0o755, 0o644);
    }
    let (stdout, stderr) = (stdout.join().expect("stdout"), stderr.join().expect("stderr"));
    (status.code(), stdout, stderr)
}

/// A workspace with one file, and what `mini-agent ARGS` did in it while it was writable.
fn workspace(setup: &[&[&str]]) -> Workspace {
    let workspace = Workspace::new("read-only");
    std::fs::write(workspace.path().join("a.txt"), "hi\n").expect("write a.txt");
    for args in setup {
        let status = agent_command(workspace.path())
            .args(*args)
            .env("HOME", workspace.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run mini-agent");
        assert!(status.success(), "setup {args:?} failed");
    }
    workspace
}

#[test]
fn a_question_in_a_read_only_checkout_is_answered_with_one_warning() {
    let checkout = workspace(&[]);
    let (code, stdout, stderr) = run_read_only(checkout.path(), &["--demo", "-p", "list files"], "");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("a.txt"), "{stdout}");
    let warnings: Vec<&str> = stderr.lines().filter(|line| line.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert_warning(warnings[0], checkout.path());
    assert!(!checkout.path().join(".mini_agent").exists(), "nothing was written");
    // --json too: the events come, the warning stays on stderr.
    let (code, stdout, stderr) =
        run_read_only(checkout.path(), &["--demo", "--json", "-p", "list files"], "");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with("{") && stdout.contains(r#""type":"exit""#), "{stdout}");
    assert!(stderr.contains(WARNING), "{stderr}");
}

#[test]
fn json_says_a_session_in_a_read_only_checkout_is_not_recorded() {
    // A program reads stdout, not stderr's warning: the `session` event says it.
    let checkout = workspace(&[]);
    let (code, stdout, stderr) =
        run_read_only(checkout.path(), &["--demo", "--json", "-p", "list files"], "");
    assert_eq!(code, Some(0), "{stderr}");
    let session: serde_json::Value =
        serde_json::from_str(stdout.lines().next().unwrap_or_default()).expect("a JSON first line");
    assert_eq!((&session["type"], &session["recorded"]), (&"session".into(), &false.into()), "{stdout}");
    // The same directory, writable: recorded, and the id is the journal's.
    let (code, stdout, stderr) = writable_json(checkout.path());
    assert_eq!(code, Some(0), "{stderr}");
    let session: serde_json::Value =
        serde_json::from_str(stdout.lines().next().unwrap_or_default()).expect("a JSON first line");
    assert_eq!(session["recorded"], true, "{stdout}");
    let id = session["id"].as_str().expect("an id");
    assert!(checkout.path().join(format!(".mini_agent/sessions/{id}.jsonl")).is_file(), "{stdout}");
}

/// `mini-agent --demo --json -p …` in `workspace` as it is (writable).
fn writable_json(workspace: &Path) -> (Option<i32>, String, String) {
    let out = agent_command(workspace)
        .args(["--demo", "--json", "-p", "list files"])
        .env("HOME", workspace)
        .stdin(Stdio::null())
        .output()
        .expect("run mini-agent");
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    (out.status.code(), text(out.stdout), text(out.stderr))
}

/// Checks that `line` is the warning for a read-only `root`: it names the root, what could not
/// be written there (the OS's words in the middle vary), where sessions are kept, and `--root`.
fn assert_warning(line: &str, root: &Path) {
    let root = root.canonicalize().expect("the workspace's real path").display().to_string();
    let start = format!("{WARNING}{root} cannot be written (cannot create {root}/.mini_agent/sessions");
    let end = format!(
        "); sessions are kept in {root}/.mini_agent/, so -c and -r will not find this one — use a \
         writable --root to keep them"
    );
    assert!(line.starts_with(&start), "{line}\ndoes not start with\n{start}");
    assert!(line.ends_with(&end), "{line}\ndoes not end with\n{end}");
}

#[test]
fn the_warning_names_the_workspace_root_not_the_current_directory() {
    // Sessions live in the root (`--root`), so the advice is about the root, wherever the
    // command was typed: here a writable directory of its own.
    let checkout = workspace(&[]);
    let elsewhere = Workspace::new("read-only-cwd");
    let root = checkout.path().to_str().expect("a UTF-8 path");
    let (code, stdout, stderr) = run_read_only_from(
        checkout.path(),
        elsewhere.path(),
        &["--root", root, "--demo", "-p", "list files"],
        "",
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("a.txt"), "the root's files, not the current directory's: {stdout}");
    let warnings: Vec<&str> = stderr.lines().filter(|line| line.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert_warning(warnings[0], checkout.path());
    assert!(!elsewhere.path().join(".mini_agent").exists(), "nothing is kept in the current directory");
}

#[test]
fn the_repl_in_a_read_only_checkout_says_it_once() {
    let checkout = workspace(&[]);
    let (code, stdout, stderr) = run_read_only(checkout.path(), &["--demo"], "list files\n/new\n/exit\n");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr.matches(WARNING).count(), 1, "{stderr}");
    assert!(stderr.contains("· unrecorded session "), "{stderr}");
    assert!(stdout.contains("a.txt"), "{stdout}");
    assert!(stdout.contains("(not recorded: the root cannot be written)"), "/new says it: {stdout}");
}

#[test]
fn what_needs_the_journal_fails_saying_so_in_a_read_only_checkout() {
    let checkout = workspace(&[
        &["--demo", "-p", "list files"],
        &["tasks", "add", "create z.txt containing z", "--verify", "test -f z.txt"],
    ]);
    let state = checkout.path().canonicalize().expect("the workspace's real path").join(".mini_agent");
    let state = state.display();
    let (code, _, stderr) = run_read_only(checkout.path(), &["--demo", "-c", "-p", "list files"], "");
    assert_eq!(code, Some(1), "{stderr}");
    let continued = format!(
        "; -c and -r add to the session they continue, so {state}/ must be writable (without -c or -r, \
         a question is still answered, unrecorded)\n"
    );
    assert!(stderr.ends_with(&continued), "{stderr}");
    let run = ["tasks", "run", "--demo", "--allow-write", "--no-commit", "--iterations", "1"];
    let (code, _, stderr) = run_read_only(checkout.path(), &run, "");
    assert_eq!(code, Some(1), "{stderr}");
    let tasks = format!("; tasks run records each task's session, so {state}/ must be writable\n");
    assert!(stderr.ends_with(&tasks), "{stderr}");
    assert!(!stderr.contains(WARNING), "tasks run never goes on unrecorded: {stderr}");
}

#[test]
fn serve_refuses_to_start_in_a_read_only_checkout() {
    // A service records every session: rather than print its URL and answer each
    // `POST /sessions` with a 500, it says why at once and exits 1.
    let checkout = workspace(&[]);
    let (code, stdout, stderr) = run_read_only(checkout.path(), &["serve", "--demo", "--port", "0"], "");
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stdout, "", "no URL is printed");
    let root = checkout.path().canonicalize().expect("the workspace's real path").display().to_string();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line, the reason: {stderr}");
    let start = format!("mini-agent: cannot serve {root}: cannot create {root}/.mini_agent/sessions: ");
    let end = format!(
        "; a service records every session in {root}/.mini_agent/, so serve a directory that can be \
         written (run it there, or pass --root)"
    );
    assert!(lines[0].starts_with(&start) && lines[0].ends_with(&end), "{stderr}");
    assert!(!checkout.path().join(".mini_agent").exists(), "nothing was written");
}
