//! Red-team cases for chapter 16's hooks: see `main.rs` for the rule this file holds.
//!
//! A hook is a command of the workspace, approved once; what it leaves running must not
//! outlive it. The bash tool kills the processes that left its group (chapter 3's reaper);
//! a hook is held to the same rule.

use crate::harness::{TempDir, Test, call, text};
use serde_json::json;

#[test]
fn a_daemon_a_hook_leaves_behind_does_not_outlive_the_agent() {
    // Found by rt-b: a hook that starts `setsid sleep 300 &` returned at once; the sleep left
    // the hook's process group, so killing the group missed it, and it outlived the agent.
    let outside = TempDir::new("selfcheck");
    let pidfile = outside.path().join("daemon.pid");
    let pidfile_shown = pidfile.display();
    // The hook waits until its daemon has left the group and said its pid, then returns.
    let command = format!(
        "setsid sh -c 'echo $$ > {pidfile_shown}; exec sleep 300' >/dev/null 2>&1 & \
         while [ ! -s {pidfile_shown} ]; do sleep 0.05; done"
    );
    let hooks = json!({"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": command}]}]}});
    let run = Test::new()
        .args(["-p", "x", "--trust-hooks"])
        .file(".mini_agent/hooks.json", &hooks.to_string())
        .server(vec![call("list_files", json!({})), text("done")])
        .run();
    run.expect_code(0);
    let mut pid = String::new();
    for _ in 0..100 {
        pid = std::fs::read_to_string(&pidfile).unwrap_or_default().trim().to_string();
        if !pid.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid: i32 = pid.parse().unwrap_or_else(|_| panic!("the hook started no daemon: {}", run.stderr));
    // Dead, or a zombie no one has reaped yet (the test process may be its subreaper).
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let alive = !state.is_empty() && !state.contains(") Z ");
    if alive {
        // SAFETY: kill with a pid we read, to clean up after the failure.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!alive, "the hook's daemon {pid} outlived the agent: {state}");
}

/// Found by the red team, once, under load: a `setsid` daemon started by a hook outlived the
/// agent. The reaper knows an escaped process by the run's mark in its environment, and a
/// process caught in the middle of `exec` has no environment yet: the kernel lays the new one
/// out last, and until then `/proc/<pid>/environ` reads empty. The reaper took it for a
/// stranger and let it go. Here 120 hooks each leave a daemon that is still `exec`ing its
/// way to `sleep` (through a chain of `env`s, as wrapper scripts do) when the hook returns,
/// while two threads keep both cores busy. Whether a daemon survived is not a matter of
/// waiting: each holds the write end of a FIFO, so once the agent has exited, one read of the
/// other end says whether any daemon is still alive (no data yet) or none is (end of file).
#[test]
fn no_daemon_a_hook_leaves_in_the_middle_of_exec_outlives_the_agent() {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    const HOOKS: usize = 120;
    let outside = TempDir::new("selfcheck");
    let dir = outside.path().display().to_string();
    let fifo = outside.path().join("alive.fifo");
    let fifo_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("a path");
    // SAFETY: mkfifo reads a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(fifo_path.as_ptr(), 0o600) }, 0, "mkfifo");
    let mut alive =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).expect("the FIFO");
    let chain = "env ".repeat(40);
    outside
        .write("daemon.sh", &format!("exec 3>'{dir}/alive.fifo'\necho $$ > \"$1\"\nexec {chain}sleep 300\n"));
    outside.write(
        "hook.sh",
        &format!(
            "setsid sh '{dir}/daemon.sh' '{dir}'/daemon.$$ >/dev/null 2>&1 &\n\
             while [ ! -s '{dir}'/daemon.$$ ]; do sleep 0.01; done\n"
        ),
    );
    let hooks = json!({"hooks": {"PostToolUse": [{"hooks": [{"type": "command",
        "command": format!("sh '{dir}/hook.sh'")}]}]}});
    // Each call differs, so the repeat guard (chapter 7) lets them all run.
    let mut steps: Vec<_> =
        (0..HOOKS).map(|i| call("list_files", json!({"pattern": format!("*{i}*")}))).collect();
    steps.push(text("done"));
    let busy = std::sync::Arc::new(AtomicBool::new(true));
    let load: Vec<_> = (0..2)
        .map(|_| {
            let busy = busy.clone();
            std::thread::spawn(move || {
                while busy.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let run = Test::new()
        .args(["-p", "x", "--trust-hooks", "--max-turns", "200"])
        .file(".mini_agent/hooks.json", &hooks.to_string())
        .server(steps)
        .run();
    // At once, before anything else can happen: end of file means no daemon holds the FIFO.
    let survived = match alive.read(&mut [0u8; 16]) {
        Ok(_) => false,
        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => true,
        Err(error) => panic!("reading the FIFO: {error}"),
    };
    busy.store(false, Ordering::Relaxed);
    load.into_iter().for_each(|thread| thread.join().expect("a load thread"));
    let pids: Vec<i32> = std::fs::read_dir(outside.path())
        .expect("the pid files")
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("daemon."))
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok()?.trim().parse().ok())
        .collect();
    let living: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|pid| {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            !state.is_empty() && !state.contains(") Z ")
        })
        .collect();
    for pid in &living {
        // SAFETY: kill with a pid a daemon wrote, to clean up after the failure.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(!survived, "{} of {HOOKS} daemons outlived the agent: {living:?}", living.len());
    assert_eq!(pids.len(), HOOKS, "every hook started its daemon: {}", run.stderr);
    run.expect_code(0);
}
