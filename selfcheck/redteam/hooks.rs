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
