//! Tests of the ways out found after the first four layers: the user's UNIX sockets (and a
//! datagram pair's `sendto`), x32 call numbers, descriptors the agent inherited, the OOM
//! killer's choice, hooks kept outside `.git/hooks` and the gitdirs of other worktrees, and
//! the private temp dirs a `kill -9` leaves. Each refusal is paired with the same command
//! unconfined, as in `tests.rs`, whose helpers these use.

use super::tests::{bash, plain, sandboxed};
use super::*;
use crate::temp_dir::TempDir;
use std::process::Command;
use std::sync::Arc;

#[test]
fn a_start_sweeps_the_temp_dirs_of_runs_that_are_gone_and_nothing_else() {
    use std::os::unix::fs::MetadataExt;
    let temp = TempDir::new("sweep");
    let namespace = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    // A pid that is gone: a child that ran and was reaped.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let name = |pid: u32, ns: u64| format!("mini-agent-{pid}-0-123-{ns}");
    let dead = temp.path().join(name(gone, namespace));
    std::fs::create_dir(&dead).unwrap();
    std::fs::write(dead.join("left"), "x").unwrap();
    let alive = temp.path().join(name(std::process::id(), namespace));
    std::fs::create_dir(&alive).unwrap();
    let elsewhere = temp.path().join(name(gone, namespace + 1));
    std::fs::create_dir(&elsewhere).unwrap();
    let kept_target = TempDir::new("sweep-target");
    let planted = temp.path().join(name(gone + 1, namespace));
    std::os::unix::fs::symlink(kept_target.path(), &planted).unwrap();
    let file = temp.path().join(name(gone + 2, namespace));
    std::fs::write(&file, "not a dir").unwrap();
    let other_shape = temp.path().join(format!("mini-agent-{gone}-0-123"));
    std::fs::create_dir(&other_shape).unwrap();
    let removed = super::private_temp::sweep_dead_runs(temp.path(), 64);
    assert_eq!(removed, 1);
    assert!(!dead.exists(), "the dead run's dir is removed");
    for kept in [&alive, &elsewhere, &planted, &file, &other_shape] {
        assert!(kept.symlink_metadata().is_ok(), "{} is kept", kept.display());
    }
    assert!(kept_target.path().exists());
}

#[test]
fn a_sweep_removes_at_most_its_bound() {
    use std::os::unix::fs::MetadataExt;
    let temp = TempDir::new("sweep-bound");
    let namespace = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    for n in 0..5 {
        std::fs::create_dir(temp.path().join(format!("mini-agent-{gone}-{n}-1-{namespace}"))).unwrap();
    }
    assert_eq!(super::private_temp::sweep_dead_runs(temp.path(), 3), 3);
    assert_eq!(super::private_temp::sweep_dead_runs(temp.path(), 3), 2);
}

#[test]
fn no_unix_socket_of_the_user_is_reachable_with_or_without_the_network() {
    // A socket outside the workspace, as the SSH agent's or the session bus's would be.
    let outside = TempDir::new("user-socket");
    let path = outside.path().join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let python = format!(
        "import socket\ntry:\n    s = socket.socket(socket.AF_UNIX)\n    s.connect('{}')\n    s.send(b'key')\n    print('sent')\nexcept OSError as e:\n    print('refused', e.errno)\na, b = socket.socketpair()\na.send(b'pair')\nprint('pair', b.recv(4).decode())",
        path.display()
    );
    for allow_net in [false, true] {
        let (_root, mut workspace, _sandbox) = sandboxed(Mode::Workspace, allow_net);
        let output = bash(&mut workspace, &format!("python3 -c \"{python}\""));
        assert!(output.content.contains(&format!("refused {}", libc::EPERM)), "{}", output.content);
        assert!(!output.content.contains("sent"), "{}", output.content);
        assert!(output.content.contains("pair pair"), "socketpair stays: {}", output.content);
        assert!(listener.accept().is_err(), "nothing connected (allow_net {allow_net})");
    }
    // Unconfined, the same command reaches it: the test can fail.
    let root = TempDir::new("sandbox");
    let output = bash(&mut plain(&root), &format!("python3 -c \"{python}\""));
    assert!(output.content.contains("sent"), "{}", output.content);
}

#[test]
#[cfg(target_arch = "x86_64")]
fn an_x32_call_is_refused_not_passed_by_the_filter() {
    // socket(AF_INET, SOCK_STREAM) under its x32 number. A kernel without x32 support answers
    // ENOSYS (38) when the call gets that far; the filter must answer first, with EPERM.
    let python = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.syscall(0x40000029, 2, 1, 0)\nprint('x32', r, ctypes.get_errno())";
    for allow_net in [false, true] {
        let (_root, mut workspace, _sandbox) = sandboxed(Mode::Workspace, allow_net);
        let output = bash(&mut workspace, &format!("python3 -c \"{python}\""));
        assert!(output.content.contains(&format!("x32 -1 {}", libc::EPERM)), "{}", output.content);
    }
}

#[test]
fn a_sandboxed_command_is_the_oom_killers_first_choice_and_the_agent_is_not() {
    let (_root, mut workspace, _sandbox) = sandboxed(Mode::Workspace, false);
    let output = bash(&mut workspace, "cat /proc/self/oom_score_adj; sh -c 'cat /proc/self/oom_score_adj'");
    assert_eq!(output.content.matches("1000").count(), 2, "the command and its child: {}", output.content);
    let agent = std::fs::read_to_string("/proc/self/oom_score_adj").unwrap();
    assert_ne!(agent.trim(), "1000", "the agent keeps its own score");
}

#[test]
fn a_descriptor_the_agent_inherited_does_not_reach_a_command() {
    // As if whatever started the agent had left a descriptor open without close-on-exec.
    let outside = TempDir::new("inherited");
    let file = std::fs::File::create(outside.path().join("log")).unwrap();
    // A free number of 217 or above, taken atomically and without close-on-exec. Not `dup2`
    // onto a fixed number: in a test process other tests' sockets may hold it, and dup2 would
    // silently close one of them (a serve test once lost its connection that way).
    // SAFETY: F_DUPFD of a descriptor we own returns a new one, or -1.
    let fd = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&file), libc::F_DUPFD, 217) };
    assert!(fd >= 217, "{}", std::io::Error::last_os_error());
    let (_root, mut workspace, _sandbox) = sandboxed(Mode::Workspace, false);
    let output = bash(&mut workspace, &format!("echo leaked >&{fd} && echo wrote"));
    let unconfined_root = TempDir::new("sandbox");
    let unconfined = bash(&mut plain(&unconfined_root), &format!("echo leaked >&{fd} && echo wrote"));
    // SAFETY: closing the descriptor F_DUPFD made above, ours alone.
    unsafe { libc::close(fd) };
    assert!(!output.content.contains("wrote"), "{}", output.content);
    assert!(unconfined.content.contains("wrote"), "unconfined, it does: {}", unconfined.content);
    assert_eq!(std::fs::read_to_string(outside.path().join("log")).unwrap(), "leaked\n");
}

#[test]
fn a_datagram_socketpair_is_refused_and_a_stream_pair_is_not() {
    let python = "import socket\ntry:\n    socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n    print('dgram made')\nexcept OSError as e:\n    print('dgram refused', e.errno)\na, b = socket.socketpair()\na.send(b'ok')\nprint('stream', b.recv(2).decode())";
    for allow_net in [false, true] {
        let (_root, mut workspace, _sandbox) = sandboxed(Mode::Workspace, allow_net);
        let output = bash(&mut workspace, &format!("python3 -c \"{python}\""));
        assert!(output.content.contains(&format!("dgram refused {}", libc::EPERM)), "{}", output.content);
        assert!(output.content.contains("stream ok"), "{}", output.content);
    }
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn hooks_kept_elsewhere_in_the_root_through_a_symlink_are_read_only_too() {
    let root = TempDir::new("sandbox");
    let git = |args: &[&str]| Command::new("git").args(args).current_dir(root.path()).output().unwrap();
    assert!(git(&["init", "-q"]).status.success());
    std::fs::remove_dir_all(root.path().join(".git/hooks")).unwrap();
    std::fs::create_dir(root.path().join(".githooks")).unwrap();
    std::os::unix::fs::symlink("../.githooks", root.path().join(".git/hooks")).unwrap();
    let sandbox = Arc::new(Sandbox::new(root.path(), Mode::Workspace, false).unwrap());
    assert!(sandbox.coverage().state, "build.rs made a user namespace: {}", sandbox.start_up_line());
    assert!(sandbox.start_up_line().contains(".githooks"), "{}", sandbox.start_up_line());
    let mut workspace = plain(&root).confined(sandbox);
    let output = bash(&mut workspace, "echo y > .git/hooks/pre-commit; echo z > .githooks/post-commit");
    assert!(!root.path().join(".githooks/pre-commit").exists(), "{}", output.content);
    assert!(!root.path().join(".githooks/post-commit").exists(), "{}", output.content);
    assert!(output.content.contains("Read-only file system"), "{}", output.content);
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn hooks_that_core_hookspath_keeps_in_the_work_tree_are_read_only() {
    let root = TempDir::new("sandbox");
    let git = |args: &[&str]| Command::new("git").args(args).current_dir(root.path()).output().unwrap();
    assert!(git(&["init", "-q"]).status.success());
    // As husky sets it up: a hooks folder in the work tree, ignored by its own .gitignore.
    assert!(git(&["config", "core.hooksPath", ".husky/_"]).status.success());
    std::fs::create_dir(root.path().join(".husky")).unwrap();
    let sandbox = Arc::new(Sandbox::new(root.path(), Mode::Workspace, false).unwrap());
    assert!(sandbox.coverage().state, "build.rs made a user namespace: {}", sandbox.start_up_line());
    let mut workspace = plain(&root).confined(sandbox);
    let output = bash(&mut workspace, "echo y > .husky/_/pre-commit; echo done");
    assert!(!root.path().join(".husky/_/pre-commit").exists(), "{}", output.content);
    assert!(output.content.contains("Read-only file system"), "{}", output.content);
    // Elsewhere in .husky the work goes on.
    let output = bash(&mut workspace, "echo ok > .husky/notes && cat .husky/notes");
    assert!(output.content.contains("ok"), "{}", output.content);
}

#[test]
fn hooks_path_is_read_as_git_reads_it_and_only_inside_the_root() {
    let root = TempDir::new("hooks-path");
    let root_path = root.path().canonicalize().unwrap();
    std::fs::create_dir(root_path.join("tools")).unwrap();
    let config = root_path.join("config");
    let case = |text: &str| {
        std::fs::write(&config, text).unwrap();
        crate::ch03_tools::git_config::hooks_path(&root_path, &config)
    };
    assert_eq!(case("[core]\n\thooksPath = tools/hooks\n"), Some(root_path.join("tools/hooks")));
    assert_eq!(case("[CORE]\n\tHOOKSPATH = \"tools/h #1\" ; note\n"), Some(root_path.join("tools/h #1")));
    assert_eq!(
        case("[core]\nhooksPath = a\n[core]\nhooksPath = tools/last # why\n"),
        Some(root_path.join("tools/last"))
    );
    assert_eq!(case("[alias]\n\thooksPath = tools/hooks\n"), None, "another section's key");
    assert_eq!(case("[core]\n\thooksPath = ../outside\n"), None);
    assert_eq!(case("[core]\n\thooksPath = /etc/hooks\n"), None);
    assert_eq!(case("[core]\n\thooksPath = ~/hooks\n"), None);
    assert_eq!(case("[core]\n\tbare = false\n"), None);
    assert_eq!(case("[core]\n\thooksPath = .\n"), None, "the root is not made read-only");
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn the_gitdirs_of_other_worktrees_are_read_only() {
    let root = TempDir::new("sandbox");
    let elsewhere = TempDir::new("linked");
    let linked = elsewhere.path().join("lw");
    let git = |args: &[&str]| Command::new("git").args(args).current_dir(root.path()).output().unwrap();
    assert!(git(&["init", "-q"]).status.success());
    assert!(
        git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "i"])
            .status
            .success()
    );
    assert!(git(&["worktree", "add", "-q", linked.to_str().unwrap(), "-b", "lw"]).status.success());
    let sandbox = Arc::new(Sandbox::new(root.path(), Mode::Workspace, false).unwrap());
    assert!(sandbox.coverage().state, "build.rs made a user namespace: {}", sandbox.start_up_line());
    let mut workspace = plain(&root).confined(sandbox);
    let output =
        bash(&mut workspace, "echo planted > .git/worktrees/lw/commondir; cat .git/worktrees/lw/commondir");
    assert!(output.content.contains("Read-only file system"), "{}", output.content);
    assert!(!output.content.contains("planted\n"), "{}", output.content);
    // The main checkout's own git work goes on.
    let output = bash(
        &mut workspace,
        "echo hi > a.txt && git add a.txt && git -c user.name=t -c user.email=t@t commit -qm one && echo committed",
    );
    assert!(output.content.contains("committed"), "{}", output.content);
}

#[test]
fn the_files_git_config_names_are_found_by_any_word_of_any_value_inside_the_root_only() {
    let root = TempDir::new("git-config");
    let root_path = root.path().canonicalize().unwrap();
    let outside = TempDir::new("git-config-outside");
    std::fs::create_dir_all(root_path.join(".git")).unwrap();
    std::fs::create_dir_all(root_path.join("scripts")).unwrap();
    for file in ["scripts/fsmonitor.sh", "scripts/clean.py", "shared.gitconfig", "tools.sh"] {
        std::fs::write(root_path.join(file), "#!/bin/sh\n").unwrap();
    }
    std::fs::write(outside.path().join("elsewhere.sh"), "x").unwrap();
    let config = root_path.join(".git/config");
    let escaped = outside.path().join("elsewhere.sh");
    std::fs::write(
        &config,
        format!(
            "[core]\n\tfsmonitor = scripts/fsmonitor.sh\n[filter \"x\"]\n\tclean = python3 scripts/clean.py --quiet\n\
             [include]\n\tpath = ../shared.gitconfig\n[alias]\n\tt = \"!./tools.sh run\"\n\
             [core]\n\tpager = {}\n\teditor = scripts/missing.sh\n[remote \"o\"]\n\turl = https://scripts/clean.py\n",
            escaped.display()
        ),
    )
    .unwrap();
    let named = crate::ch03_tools::git_config::named_files(&root_path, &config);
    let expected: Vec<_> = ["scripts/fsmonitor.sh", "scripts/clean.py", "shared.gitconfig", "tools.sh"]
        .iter()
        .map(|file| root_path.join(file))
        .collect();
    assert_eq!(named, expected);
    // A config of many words is looked at only as far as the bound.
    let filler = "w ".repeat(crate::ch03_tools::git_config::MAX_WORDS);
    std::fs::write(&config, format!("[core]\n\tpager = {filler}\n\tfsmonitor = scripts/fsmonitor.sh\n"))
        .unwrap();
    assert_eq!(crate::ch03_tools::git_config::named_files(&root_path, &config), Vec::<PathBuf>::new());
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn a_script_that_git_config_names_in_the_work_tree_is_read_only() {
    let root = TempDir::new("sandbox");
    let git = |args: &[&str]| Command::new("git").args(args).current_dir(root.path()).output().unwrap();
    assert!(git(&["init", "-q"]).status.success());
    std::fs::create_dir(root.path().join("scripts")).unwrap();
    std::fs::write(root.path().join("scripts/fsmonitor.sh"), "#!/bin/sh\n").unwrap();
    assert!(git(&["config", "core.fsmonitor", "scripts/fsmonitor.sh"]).status.success());
    let sandbox = Arc::new(Sandbox::new(root.path(), Mode::Workspace, false).unwrap());
    assert!(sandbox.coverage().state, "build.rs made a user namespace: {}", sandbox.start_up_line());
    let line = sandbox.start_up_line();
    assert!(line.contains("1 work-tree file that .git/config names"), "{line}");
    let mut workspace = plain(&root).confined(sandbox);
    let output =
        bash(&mut workspace, "echo 'touch /tmp/owned' >> scripts/fsmonitor.sh; rm -f scripts/fsmonitor.sh");
    assert_eq!(std::fs::read_to_string(root.path().join("scripts/fsmonitor.sh")).unwrap(), "#!/bin/sh\n");
    assert!(output.content.contains("Read-only file system"), "{}", output.content);
    // Beside it the work goes on.
    let output = bash(&mut workspace, "echo ok > scripts/other.sh && cat scripts/other.sh");
    assert!(output.content.contains("ok"), "{}", output.content);
}
