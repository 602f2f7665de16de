//! Unit tests of the sandbox, through the workspace's `bash` as the model calls it. Each
//! refusal is paired with the same command unconfined, so a test proves the sandbox and not a
//! broken shell. On a kernel without Landlock they are ignored, with that reason (build.rs).

use super::*;
use crate::ch02_loop::{ToolCall, ToolOutput, Tools};
use crate::ch03_tools::Workspace;
use crate::temp_dir::TempDir;
use serde_json::json;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::sync::Arc;

pub(super) fn bash(workspace: &mut Workspace, command: &str) -> ToolOutput {
    let arguments = json!({"command": command}).to_string();
    workspace.run(&ToolCall { id: "1".into(), name: "bash".into(), arguments })
}

/// A workspace in a fresh root, confined by a sandbox in `mode` (kept alive by the workspace).
pub(super) fn sandboxed(mode: Mode, allow_net: bool) -> (TempDir, Workspace, Arc<Sandbox>) {
    let root = TempDir::new("sandbox");
    let sandbox = Arc::new(Sandbox::new(root.path(), mode, allow_net).unwrap());
    let workspace = Workspace::new(root.path()).unwrap().confined(sandbox.clone());
    (root, workspace, sandbox)
}

pub(super) fn plain(root: &TempDir) -> Workspace {
    Workspace::new(root.path()).unwrap()
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn writes_land_in_the_root_and_tmpdir_and_nowhere_else() {
    let (root, mut workspace, sandbox) = sandboxed(Mode::Workspace, false);
    let outside = TempDir::new("outside");
    let target = outside.path().join("planted");
    let inside =
        bash(&mut workspace, "echo in > inside.txt && echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"");
    assert!(inside.content.contains("tmp") && inside.content.contains("exit code 0"), "{}", inside.content);
    assert_eq!(std::fs::read_to_string(root.path().join("inside.txt")).unwrap(), "in\n");
    assert!(sandbox.temp_dir().join("t").exists(), "TMPDIR is the private temp dir");

    let escape = format!("echo owned > {}", target.display());
    let refused = bash(&mut workspace, &escape);
    assert!(!target.exists(), "the write outside the root landed: {}", refused.content);
    assert!(refused.content.contains("Permission denied"), "{}", refused.content);
    assert!(
        refused.content.contains("[sandbox: this command ran in the workspace sandbox"),
        "{}",
        refused.content
    );
    assert!(refused.content.contains("--sandbox off"), "{}", refused.content);

    let allowed = bash(&mut plain(&root), &escape);
    assert!(target.exists(), "unconfined, the same command writes: {}", allowed.content);
    assert!(!allowed.content.contains("sandbox"), "no note without a sandbox: {}", allowed.content);
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn read_only_writes_only_the_private_temp_dir() {
    let (root, mut workspace, _sandbox) = sandboxed(Mode::ReadOnly, false);
    let output =
        bash(&mut workspace, "echo x > inside.txt; echo y > \"$TMPDIR/y\" && cat \"$TMPDIR/y\" README 2>&1");
    assert!(!root.path().join("inside.txt").exists(), "{}", output.content);
    assert!(output.content.contains("y\n"), "{}", output.content);
    assert!(
        output.content.contains("here it enforces: writes only in a private TMPDIR"),
        "{}",
        output.content
    );
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn no_tcp_and_no_udp_unless_the_network_is_allowed() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = listener.local_addr().unwrap().port();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let send = format!(
        "echo key > /dev/tcp/127.0.0.1/{tcp} && echo tcp-sent; echo key > /dev/udp/127.0.0.1/{udp_port} && echo udp-sent"
    );
    let (_root, mut workspace, _sandbox) = sandboxed(Mode::Workspace, false);
    let refused = bash(&mut workspace, &send);
    assert!(
        !refused.content.contains("tcp-sent") && !refused.content.contains("udp-sent"),
        "{}",
        refused.content
    );
    assert!(refused.content.contains("--allow-net"), "the note names the flag: {}", refused.content);

    let (_root, mut workspace, _sandbox) = sandboxed(Mode::Workspace, true);
    let allowed = bash(&mut workspace, &send);
    assert!(
        allowed.content.contains("tcp-sent") && allowed.content.contains("udp-sent"),
        "{}",
        allowed.content
    );
    let mut datagram = [0u8; 16];
    assert_eq!(udp.recv(&mut datagram).unwrap(), 4, "the datagram arrived");
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn each_network_layer_refuses_on_its_own() {
    // Landlock alone (the seccomp filter taken away): a TCP connect is refused with EACCES.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let root = TempDir::new("sandbox");
    let mut sandbox = Sandbox::new(root.path(), Mode::Workspace, false).unwrap();
    sandbox.parts.without_socket_filter();
    let mut workspace = plain(&root).confined(Arc::new(sandbox));
    let tcp = bash(&mut workspace, &format!("echo x > /dev/tcp/127.0.0.1/{port}"));
    assert!(tcp.content.contains("Permission denied"), "Landlock's EACCES: {}", tcp.content);
    // The filter alone refuses the socket itself, EPERM, before any address is named.
    let python = "import socket\ntry:\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    print('made')\nexcept OSError as e:\n    print('refused', e.errno)";
    let (_root, mut workspace, _sandbox) = sandboxed(Mode::Workspace, false);
    let udp = bash(&mut workspace, &format!("python3 -c \"{python}\""));
    assert!(udp.content.contains(&format!("refused {}", libc::EPERM)), "{}", udp.content);
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn no_signal_reaches_the_agent() {
    let (root, mut workspace, _sandbox) = sandboxed(Mode::Workspace, false);
    let refused = bash(&mut workspace, "kill -0 $PPID && echo reached");
    assert!(!refused.content.contains("reached"), "{}", refused.content);
    assert!(refused.content.contains("Operation not permitted"), "{}", refused.content);
    let allowed = bash(&mut plain(&root), "kill -0 $PPID && echo reached");
    assert!(allowed.content.contains("reached"), "{}", allowed.content);
    // Nor its memory or environment, which ptrace's rules guard (the agent's key is there).
    let environ = bash(&mut workspace, "head -c 10 /proc/$PPID/environ >/dev/null && echo read");
    assert!(!environ.content.contains("read\n"), "{}", environ.content);
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
#[cfg_attr(no_other_user, ignore = "no user but root can make a user namespace here (build.rs)")]
fn the_agents_state_and_git_hooks_are_read_only_but_git_commit_works() {
    let root = TempDir::new("sandbox");
    let git = |args: &[&str]| Command::new("git").args(args).current_dir(root.path()).output().unwrap();
    assert!(git(&["init", "-q"]).status.success());
    let sandbox = Arc::new(Sandbox::new(root.path(), Mode::Workspace, false).unwrap());
    assert!(sandbox.coverage().state, "build.rs made a user namespace: {}", sandbox.start_up_line());
    let mut workspace = plain(&root).confined(sandbox);
    let attack = "umount .mini_agent; umount .git/config; echo x > .mini_agent/planted; echo y > .git/hooks/pre-commit; \
                  git config core.fsmonitor evil; mv .git .git-old || echo pinned";
    let output = bash(&mut workspace, attack);
    assert!(!root.path().join(".mini_agent/planted").exists(), "{}", output.content);
    assert!(!root.path().join(".git/hooks/pre-commit").exists(), "{}", output.content);
    assert!(
        !String::from_utf8_lossy(&git(&["config", "--list"]).stdout).contains("evil"),
        "{}",
        output.content
    );
    assert!(output.content.contains("Read-only file system"), "{}", output.content);
    assert!(
        output.content.contains("pinned") && root.path().join(".git/HEAD").exists(),
        "{}",
        output.content
    );

    let commit = "echo hi > a.txt && git add a.txt && git -c user.name=t -c user.email=t@t commit -qm one && git log --oneline";
    let output = bash(&mut workspace, commit);
    assert!(output.content.contains("one") && output.content.contains("exit code 0"), "{}", output.content);
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
#[cfg_attr(no_other_user, ignore = "no user but root can make a user namespace here (build.rs)")]
fn a_process_that_clears_its_environment_and_leaves_the_group_is_still_stopped() {
    // The command waits until the process has left its group (it writes its pid after
    // setsid), so the group's kill at the end cannot catch it first.
    let escape = "rm -f pid; env -i setsid sh -c 'echo $$ > pid; exec sleep 1000' >/dev/null 2>&1 & \
                  while [ ! -s pid ]; do sleep 0.01; done; cat pid";
    let pid_of = |output: &ToolOutput| -> i32 {
        output.content.lines().find_map(|line| line.trim().parse().ok()).expect("a pid")
    };
    let alive = |pid: i32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    let (root, mut workspace, sandbox) = sandboxed(Mode::Workspace, false);
    assert!(sandbox.coverage().state, "build.rs made a user namespace: {}", sandbox.start_up_line());
    let output = bash(&mut workspace, escape);
    let pid = pid_of(&output);
    assert!(!alive(pid), "the escaped process still runs: {}", output.content);
    assert!(
        output.content.contains("left the command's group were stopped")
            || output.content.contains("1 process")
    );

    let output = bash(&mut plain(&root), escape);
    let pid = pid_of(&output);
    assert!(alive(pid), "unconfined, env -i hides it from the reaper: {}", output.content);
    // SAFETY: kill takes plain integers; the process is the one this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    crate::ch03_tools::reaper::kill_escaped_or("none", -1, &|child| child == pid);
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn ordinary_work_still_runs() {
    let (_root, mut workspace, _sandbox) = sandboxed(Mode::Workspace, false);
    let work = "python3 -c 'import tempfile; f = tempfile.NamedTemporaryFile(); print(\"py\", f.name)' && \
                echo data > /dev/null && echo out > /dev/stdout && echo err >&2 && mktemp -d && ls -la / >/dev/null && \
                cat /etc/hostname >/dev/null && echo done";
    let output = bash(&mut workspace, work);
    assert!(output.content.contains("done") && output.content.contains("exit code 0"), "{}", output.content);
    assert!(!output.content.contains("[sandbox:"), "nothing was refused: {}", output.content);
}

#[test]
fn the_private_temp_dir_is_private_and_goes_with_the_run() {
    let temp = PrivateTemp::create().unwrap();
    let path = temp.path().to_path_buf();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o700);
    std::fs::write(path.join("left"), "x").unwrap();
    drop(temp);
    assert!(!path.exists());
}

#[test]
fn require_refuses_a_command_when_a_layer_is_missing() {
    let root = TempDir::new("sandbox");
    let mut sandbox = Sandbox::new(root.path(), Mode::Require, false).unwrap();
    sandbox.coverage.signals = false;
    let line = sandbox.start_up_line();
    assert!(line.starts_with("mini-agent: warning: sandbox require does not enforce signals"), "{line}");
    let mut workspace = plain(&root).confined(Arc::new(sandbox));
    let output = bash(&mut workspace, "echo ran");
    assert!(!output.content.contains("ran\n"), "{}", output.content);
    assert!(output.content.contains("bash refused: --sandbox require"), "{}", output.content);
}

#[test]
fn require_refuses_a_command_when_the_agents_state_cannot_be_kept_read_only() {
    let all_but_the_state = Coverage { files: true, tcp: true, signals: true, sockets: true, state: false };
    let root = TempDir::new("sandbox");
    let mut sandbox = Sandbox::new(root.path(), Mode::Require, false).unwrap();
    sandbox.coverage = all_but_the_state;
    let line = sandbox.start_up_line();
    assert!(line.contains(".mini_agent/ writable by commands: "), "{line}");
    assert!(line.ends_with("; so --sandbox require refuses every command"), "{line}");
    let mut workspace = plain(&root).confined(Arc::new(sandbox));
    let output = bash(&mut workspace, "echo ran");
    assert!(!output.content.contains("ran\n"), "{}", output.content);
    let refusal =
        "bash refused: --sandbox require, and this machine cannot enforce a read-only .mini_agent/ (";
    assert!(output.content.contains(refusal), "{}", output.content);
    // The default mode runs it, and says at start-up what it does not protect.
    let mut sandbox = Sandbox::new(root.path(), Mode::Workspace, false).unwrap();
    sandbox.coverage = all_but_the_state;
    assert!(!sandbox.start_up_line().contains("refuses"), "{}", sandbox.start_up_line());
    let mut workspace = plain(&root).confined(Arc::new(sandbox));
    let output = bash(&mut workspace, "echo ran");
    assert!(output.content.contains("ran\n"), "{}", output.content);
}

#[test]
fn the_note_appears_only_for_refusals() {
    let enforced = ["writes only in the workspace and a private TMPDIR".to_string()];
    assert_eq!(stopped::explain("hello\n", Mode::Workspace, &enforced, true), None);
    let note =
        stopped::explain("sh: 1: cannot create /x: Permission denied", Mode::Workspace, &enforced, true)
            .unwrap();
    assert!(note.contains("--sandbox off, or --allow-net"), "{note}");
    let note =
        stopped::explain("curl: (6) Could not resolve host: example.com", Mode::Workspace, &enforced, false);
    assert_eq!(note, None, "with the network allowed, a failed lookup is not ours");
    let note = stopped::explain("Permission denied", Mode::Workspace, &[], true);
    assert_eq!(note, None, "a sandbox that enforces nothing here refused nothing");
}

#[test]
fn the_note_says_what_is_enforced_on_this_run_and_no_more() {
    let refused = "sh: 1: cannot create .mini_agent/x: Read-only file system";
    let note = |sandbox: &Sandbox| Confinement::explain(sandbox, refused).unwrap();
    let everything = Coverage { files: true, tcp: true, signals: true, sockets: true, state: true };
    // A repository: the state and git's hooks and config, as the start-up line lists them.
    let root = TempDir::new("sandbox");
    std::fs::create_dir_all(root.path().join(".git/hooks")).unwrap();
    std::fs::write(root.path().join(".git/config"), "").unwrap();
    let mut sandbox = Sandbox::new(root.path(), Mode::Workspace, false).unwrap();
    sandbox.coverage = everything;
    let all = "read-only agent state (.mini_agent/, .git/hooks, .git/config)";
    assert!(note(&sandbox).contains(all), "{}", note(&sandbox));
    assert!(sandbox.start_up_line().contains(all), "{}", sandbox.start_up_line());
    // No namespace (a user without user namespaces): nothing is claimed read-only.
    sandbox.coverage = Coverage { state: false, ..everything };
    assert!(!note(&sandbox).contains("read-only"), "{}", note(&sandbox));
    assert!(note(&sandbox).contains("writes only in the workspace"), "{}", note(&sandbox));
    // A linked worktree (`.git` is a file): only the agent's own directory.
    let worktree = TempDir::new("sandbox");
    std::fs::write(worktree.path().join(".git"), "gitdir: /elsewhere/.git/worktrees/w\n").unwrap();
    let mut sandbox = Sandbox::new(worktree.path(), Mode::Workspace, true).unwrap();
    sandbox.coverage = everything;
    assert!(note(&sandbox).contains("read-only agent state (.mini_agent/)."), "{}", note(&sandbox));
    assert!(!note(&sandbox).contains(".git"), "{}", note(&sandbox));
    assert!(
        note(&sandbox).ends_with("rerun with --sandbox off"),
        "the network is allowed: {}",
        note(&sandbox)
    );
}

#[test]
fn modes_parse_and_name_themselves() {
    for word in ["workspace", "read-only", "off", "require"] {
        assert_eq!(Mode::parse(word).map(Mode::name), Some(word));
    }
    assert_eq!(Mode::parse("on"), None);
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn the_start_up_line_says_what_this_machine_enforces() {
    let root = TempDir::new("sandbox");
    let sandbox = Sandbox::new(root.path(), Mode::Workspace, false).unwrap();
    let line = sandbox.start_up_line();
    println!("figure: start-up line: {line}");
    let c = sandbox.coverage();
    assert!(c.files, "build.rs saw Landlock, so the probe must too");
    match sandbox.missing().is_empty() {
        true => {
            assert!(line.starts_with("mini-agent: sandbox workspace: writes only in the workspace"), "{line}")
        }
        false => {
            assert!(line.starts_with("mini-agent: warning: sandbox workspace does not enforce"), "{line}")
        }
    }
    assert_eq!(line.lines().count(), 1);
    assert!(line.contains(".mini_agent/"), "{line}");
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn links_made_inside_the_root_do_not_lead_out_of_it() {
    let (root, mut workspace, _sandbox) = sandboxed(Mode::Workspace, false);
    let outside = TempDir::new("outside");
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "original\n").unwrap();
    // A symlink is followed to its target, which Landlock checks; a hard link would give the
    // file a second name inside the root, which Landlock refuses to make (EXDEV).
    let attack = format!("ln -s {0} soft; echo a >> soft; ln {0} hard; echo b >> hard", victim.display());
    let output = bash(&mut workspace, &attack);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original\n", "{}", output.content);
    bash(&mut plain(&root), "rm -f soft hard");
    let unconfined = bash(&mut plain(&root), &attack);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original\na\nb\n", "{}", unconfined.content);
}

#[test]
fn a_config_dir_inside_the_root_is_made_and_protected_before_a_command_could_make_it() {
    let root = TempDir::new("sandbox");
    std::fs::create_dir(root.path().join(".config")).unwrap();
    let config = root.path().join(".config/mini-agent");
    let protected = protected_paths(root.path(), Some(config.clone()));
    assert!(config.is_dir(), "made now, by the agent");
    assert!(protected.read_only.contains(&config), "{:?}", protected.read_only);
    assert!(protected.read_only.contains(&root.path().join(".mini_agent")));
    let elsewhere = TempDir::new("config");
    let protected = protected_paths(root.path(), Some(elsewhere.path().join("mini-agent")));
    assert_eq!(protected.read_only, [root.path().join(".mini_agent")], "outside the root, Landlock keeps it");
    let missing_tree = root.path().join("no-such/mini-agent");
    protected_paths(root.path(), Some(missing_tree.clone()));
    assert!(!missing_tree.exists(), "a config dir whose parent is missing is not made");
}

#[test]
fn a_repository_without_hooks_gets_an_empty_hooks_directory_to_protect() {
    let root = TempDir::new("sandbox");
    std::fs::create_dir(root.path().join(".git")).unwrap();
    let protected = protected_paths(root.path(), None);
    let hooks = root.path().join(".git/hooks");
    assert!(hooks.is_dir(), "made now, by the agent, as git init does");
    assert!(protected.read_only.contains(&hooks), "{:?}", protected.read_only);
    // A worktree's `.git` is a file: nothing is made beside it.
    let worktree = TempDir::new("sandbox");
    std::fs::write(worktree.path().join(".git"), "gitdir: /elsewhere\n").unwrap();
    let protected = protected_paths(worktree.path(), None);
    assert_eq!(protected.read_only, [worktree.path().join(".mini_agent")]);
    assert!(protected.pinned.is_empty());
}

#[test]
fn the_line_names_what_is_missing_and_the_filter_alone_still_means_no_network() {
    let root = TempDir::new("sandbox");
    let mut sandbox = Sandbox::new(root.path(), Mode::Workspace, false).unwrap();
    sandbox.coverage = Coverage { files: true, tcp: false, signals: false, sockets: true, state: true };
    assert_eq!(sandbox.missing(), ["signals to other processes (needs Landlock ABI 6, Linux 6.12)"]);
    assert!(
        sandbox
            .start_up_line()
            .contains("it does: writes only in the workspace and a private TMPDIR, no network")
    );
    sandbox.coverage = Coverage { files: true, tcp: true, signals: true, sockets: false, state: true };
    assert_eq!(
        sandbox.missing(),
        ["UDP, raw and UNIX sockets (needs seccomp on x86_64, aarch64 or riscv64)"]
    );
    assert!(sandbox.start_up_line().contains("no TCP"), "{}", sandbox.start_up_line());
    sandbox.coverage = Coverage::default();
    assert_eq!(sandbox.missing().len(), 3, "files, the network, signals: {:?}", sandbox.missing());
    assert!(sandbox.start_up_line().contains("it does: nothing"), "{}", sandbox.start_up_line());
}

#[test]
fn without_namespaces_the_line_says_the_state_is_writable() {
    let root = TempDir::new("sandbox");
    let mut sandbox = Sandbox::new(root.path(), Mode::Workspace, false).unwrap();
    sandbox.coverage = Coverage { files: true, tcp: true, signals: true, sockets: true, state: false };
    let line = sandbox.start_up_line();
    assert!(line.starts_with("mini-agent: sandbox workspace: writes only in the workspace"), "{line}");
    assert!(line.contains("; .mini_agent/ writable by commands: "), "{line}");
}

/// The settings of a command line that gave `--sandbox mode` (and `--allow-net`).
fn flags(mode: Option<&str>, allow_net: bool) -> crate::ch02_loop::command_line::Settings {
    let mut settings = crate::ch02_loop::command_line::Settings::default();
    if let Some(mode) = mode {
        settings.set(&SANDBOX, Some(mode.to_string()));
    }
    if allow_net {
        settings.set(&ALLOW_NET, None);
    }
    settings
}

#[test]
#[cfg_attr(no_landlock, ignore = "this kernel has no Landlock")]
fn a_run_builds_one_sandbox_per_root_and_off_builds_none() {
    let root = TempDir::new("sandbox");
    let below = root.path().join("below");
    std::fs::create_dir(&below).unwrap();
    let run = RunSandbox::for_run(root.path(), &flags(Some("read-only"), false)).unwrap();
    let workspace = run.confine(plain(&root)).unwrap();
    assert_eq!(workspace.confinement().as_deref(), Some("sandbox: read-only, no network"));
    let again = run.clone().confine(plain(&root)).unwrap();
    assert_eq!(again.confinement(), workspace.confinement());
    assert!(!below.join(".mini_agent").exists(), "a root is set up only when a workspace works in it");
    run.confine(Workspace::new(&below).unwrap()).unwrap();
    assert!(
        below.join(".mini_agent").is_dir(),
        "a root below gets a sandbox of its own, its state protected"
    );
    assert_eq!(run.label(), "read-only, no network");

    let off = RunSandbox::for_run(root.path(), &flags(Some("off"), false)).unwrap();
    let mut workspace = off.confine(plain(&root)).unwrap();
    assert_eq!(workspace.confinement().as_deref(), Some("no sandbox: --sandbox off"));
    let output = bash(&mut workspace, "echo $TMPDIR; cat /nonexistent/x");
    assert!(!output.content.contains("mini-agent-"), "no private TMPDIR: {}", output.content);
    assert!(!output.content.contains("[sandbox:"), "no note without a sandbox: {}", output.content);
    assert_eq!(off.label(), "off (commands run with all your rights)");
}

#[test]
fn the_start_up_line_is_said_when_asked_and_always_when_the_machine_falls_short() {
    let root = TempDir::new("sandbox");
    let off = RunSandbox::for_run(root.path(), &flags(Some("off"), false)).unwrap();
    assert_eq!(off.start_up_line(false), None);
    assert!(off.start_up_line(true).is_some_and(|line| line.starts_with("mini-agent: sandbox off")));
    let run = RunSandbox::for_run(root.path(), &flags(None, true)).unwrap();
    let asked = run.start_up_line(true).expect("asked, it always answers");
    assert!(
        asked.contains("sandbox workspace") && asked.contains("network allowed (--allow-net)"),
        "{asked}"
    );
    let falls_short = run.first().expect("built").falls_short();
    assert_eq!(run.start_up_line(false).is_some(), falls_short, "unasked, only a warning: {asked}");
}

#[test]
fn each_session_records_the_mode_once_per_run() {
    use crate::ch05_sessions::{Body, MemoryLog};
    let root = TempDir::new("sandbox");
    let mut log = MemoryLog::default();
    let run = RunSandbox::for_run(root.path(), &flags(None, false)).unwrap();
    run.record("one", &mut log).unwrap();
    run.clone().record("one", &mut log).unwrap(); // opened again in the same run: said once
    let off = RunSandbox::for_run(root.path(), &flags(Some("off"), false)).unwrap();
    off.record("one", &mut log).unwrap();
    let modes: Vec<(String, bool)> = log
        .0
        .iter()
        .map(|record| match &record.body {
            Body::Sandbox { mode, network, .. } => (mode.clone(), *network),
            other => panic!("not a sandbox record: {other:?}"),
        })
        .collect();
    assert_eq!(modes, [("workspace".to_string(), false), ("off".to_string(), true)]);
}
