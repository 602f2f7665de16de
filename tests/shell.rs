//! Shell robustness: whatever a command does — read stdin, flood the pipe, print binary,
//! ignore SIGTERM, leave a daemon, `cd` or `exec` — the bash tool returns, bounded, and
//! leaves no process of the command's group behind.

use mini_agent::ch02_loop::{ToolCall, ToolOutput, ToolStatus, Tools, set_interrupted};
use mini_agent::ch03_tools::Workspace;
use mini_agent::temp_dir::TempDir;
use serde_json::{Value, json};
use std::fs;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The interrupt flag is global: tests in this file run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

struct Fixture {
    root: PathBuf,
    workspace: Workspace,
    _dir: TempDir,
    _serial: MutexGuard<'static, ()>,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let dir = TempDir::new(&format!("shell-{name}"));
        let workspace = Workspace::new(dir.path()).unwrap();
        Fixture { root: workspace.root().to_path_buf(), workspace, _dir: dir, _serial: serial }
    }

    fn bash(&mut self, arguments: Value) -> (ToolOutput, Duration) {
        let started = Instant::now();
        let output = self.workspace.run(&ToolCall {
            id: "1".into(),
            name: "bash".into(),
            arguments: arguments.to_string(),
        });
        (output, started.elapsed())
    }
}

/// Live (non-zombie) processes whose process group is `group`, read from /proc.
fn live_members(group: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else { continue };
        // Fields after the command name: state, ppid, pgrp, …
        let Some(after_name) = stat.rsplit_once(')').map(|(_, rest)| rest) else { continue };
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == group.to_string() {
            members.push(pid);
        }
    }
    members
}

/// The first line of a command that starts with `echo $$` is its process group id.
fn group_of(output: &ToolOutput) -> u32 {
    output
        .content
        .lines()
        .next()
        .and_then(|line| line.trim().parse().ok())
        .expect("the command printed $$ first")
}

fn assert_nothing_left(output: &ToolOutput) {
    let group = group_of(output);
    // SIGKILL is delivered asynchronously: wait for the kernel to finish the deaths (a minute
    // is a guard against a survivor, not a measure).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !live_members(group).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(live_members(group), Vec::<u32>::new(), "processes left in group {group}");
}

#[test]
fn a_command_runs_in_the_root_and_reports_its_exit_code() {
    let mut fixture = Fixture::new("basic");
    let (ran, _) = fixture.bash(json!({"command": "pwd; echo oops >&2; exit 3"}));
    assert_eq!(ran.status, ToolStatus::Ok);
    assert_eq!(ran.content, format!("{}\noops\n\n[exit code 3]", fixture.root.display()));
    let (quiet, _) = fixture.bash(json!({"command": "true"}));
    assert_eq!(quiet.content, "(no output)\n[exit code 0]");
    let (killed, _) = fixture.bash(json!({"command": "kill -9 $$"}));
    assert_eq!(killed.content, "(no output)\n[killed by signal 9]");
    let (timed, _) = fixture.bash(json!({"command": "sleep 5", "timeout_secs": 1}));
    assert_eq!(timed.status, ToolStatus::Error);
    assert_eq!(
        timed.content,
        "(no output)\n[timed out after 1 s; the command and its process group were killed]"
    );
    let (bad, _) = fixture.bash(json!({"command": "a\u{0}b"}));
    assert_eq!(bad.status, ToolStatus::Error);
    assert!(bad.content.starts_with("cannot start the shell"), "{}", bad.content);
}

#[test]
fn a_password_prompt_fails_at_once_instead_of_waiting() {
    let mut fixture = Fixture::new("tty");
    // No controlling terminal: opening /dev/tty fails instead of stopping the command.
    let (output, _) = fixture.bash(json!({"command": "exec 2>/dev/null; cat /dev/tty || echo no terminal"}));
    assert_eq!(output.content, "no terminal\n\n[exit code 0]");
}

#[test]
fn a_command_reading_stdin_gets_end_of_file_at_once() {
    let mut fixture = Fixture::new("stdin");
    let (output, took) =
        fixture.bash(json!({"command": "cat; read line; echo \"done $?\"", "timeout_secs": 5}));
    assert_eq!(output.content, "done 1\n\n[exit code 0]");
    println!("stdin command returned in {took:?}");
}

#[test]
fn a_hundred_megabytes_of_output_stay_bounded() {
    let mut fixture = Fixture::new("flood");
    let (output, took) = fixture
        .bash(json!({"command": "echo $$; head -c 100000000 /dev/zero | tr '\\0' 'a'; echo; echo END"}));
    assert_eq!(output.status, ToolStatus::Ok);
    assert!(output.content.len() < 31_000, "the model sees {} bytes", output.content.len());
    assert!(output.content.ends_with("aaaa\nEND\n\n[exit code 0]"));
    let note = output.content.lines().find(|line| line.starts_with("[… ")).expect("an omission note");
    // 100 MB is over the 64 MiB a saved output may hold: the file stops there and says so.
    assert!(note.contains("full output (its first 64 MiB): "), "{note}");
    let saved = note.split("MiB): ").nth(1).unwrap().trim_end_matches(']');
    let mut spilled = fs::File::open(fixture.root.join(saved)).unwrap();
    assert_eq!(spilled.metadata().unwrap().len(), 64 << 20);
    let mut end = Vec::new();
    std::io::Seek::seek(&mut spilled, std::io::SeekFrom::End(-60)).unwrap();
    std::io::Read::read_to_end(&mut spilled, &mut end).unwrap();
    let end = String::from_utf8_lossy(&end);
    assert!(end.ends_with("this file was cut at its size limit]\n"), "{end:?}");
    let peak_kb: u64 = fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status");
    println!("100 MB through bash in {took:?}; test process peak RSS {peak_kb} kB");
    assert!(peak_kb < 30_000, "peak RSS {peak_kb} kB");
    assert_nothing_left(&output);
}

#[test]
fn binary_output_is_shown_lossily() {
    let mut fixture = Fixture::new("binary");
    let (output, _) = fixture.bash(json!({"command": "printf 'a\\000b\\377\\376c'"}));
    assert_eq!(output.content, "a\0b\u{fffd}\u{fffd}c\n[exit code 0]");
}

#[test]
fn a_command_ignoring_sigterm_is_killed_after_the_grace() {
    let mut fixture = Fixture::new("term");
    let (output, took) =
        fixture.bash(json!({"command": "echo $$; trap '' TERM; sleep 30; echo never", "timeout_secs": 1}));
    assert_eq!(output.status, ToolStatus::Error);
    assert!(output.content.ends_with("[timed out after 1 s; the command and its process group were killed]"));
    assert!(!output.content.contains("never"));
    println!("SIGTERM-ignoring command ended after {took:?}");
    assert_nothing_left(&output);
}

#[test]
fn a_daemon_holding_the_pipe_does_not_hang_the_tool() {
    let mut fixture = Fixture::new("daemon");
    let (output, took) = fixture.bash(json!({"command": "echo $$; sleep 100 & echo started"}));
    assert_eq!(output.status, ToolStatus::Ok);
    assert!(output.content.contains("started\n"));
    assert!(output.content.contains("background processes still held the output; they were stopped"));
    println!("daemon case returned in {took:?}");
    assert_nothing_left(&output);
    // Detached from the pipe, a background process is stopped all the same.
    let (quiet, _) = fixture.bash(json!({"command": "echo $$; sleep 100 >/dev/null 2>&1 &"}));
    assert_nothing_left(&quiet);
}

#[test]
fn cd_and_exec_do_not_leak_or_hang() {
    let mut fixture = Fixture::new("cd");
    let (moved, _) = fixture.bash(json!({"command": "cd / && pwd"}));
    assert_eq!(moved.content, "/\n\n[exit code 0]");
    let (back, _) = fixture.bash(json!({"command": "pwd"}));
    assert_eq!(back.content, format!("{}\n\n[exit code 0]", fixture.root.display()));
    let (replaced, _) = fixture.bash(json!({"command": "echo $$; exec sleep 30", "timeout_secs": 1}));
    assert!(replaced.content.contains("timed out after 1 s"));
    assert_nothing_left(&replaced);
    let (exec_echo, _) = fixture.bash(json!({"command": "exec echo hi"}));
    assert_eq!(exec_echo.content, "hi\n\n[exit code 0]");
}

#[test]
fn ctrl_c_kills_the_whole_group() {
    let mut fixture = Fixture::new("interrupt");
    // Ctrl+C once the command has started (it leaves a file), not after a fixed nap that a
    // loaded machine could spend before the command ran.
    let started = fixture.root.join("started");
    let interrupter = std::thread::spawn(move || {
        while !started.exists() {
            std::thread::sleep(Duration::from_millis(5));
        }
        set_interrupted(true);
    });
    let (output, took) =
        fixture.bash(json!({"command": "echo $$; touch started; sleep 30 & sleep 30; echo never"}));
    println!("Ctrl+C ended the command after {took:?}");
    interrupter.join().unwrap();
    set_interrupted(false);
    assert_eq!(output.status, ToolStatus::Interrupted);
    assert!(
        output.content.ends_with("[interrupted by the user; the command and its process group were killed]")
    );
    assert_nothing_left(&output);
}

#[test]
fn a_process_escaping_the_group_still_cannot_hang_the_tool() {
    let mut fixture = Fixture::new("setsid");
    // setsid leaves our process group, so it cannot be killed with it: the tool gives up on
    // the pipe after a grace period instead of waiting. The test cleans the process up.
    let (output, took) = fixture.bash(json!({"command": "setsid sleep 100 & echo $!"}));
    println!("a process outside the group: the tool returned after {took:?}");
    // One that keeps writing is cut off (EPIPE) instead of filling the disk.
    // Its pid goes to a file: in the output, `yes` can bury it in the middle that is cut.
    let (writer, _) = fixture.bash(json!({"command": "setsid yes & echo $! > writer.pid"}));
    let pid_file = fs::read_to_string(fixture.root.join("writer.pid"));
    let writer_pid: u32 = pid_file.ok().and_then(|pid| pid.trim().parse().ok()).expect(&writer.content);
    // Its next write after the tool closed the pipe kills it (EPIPE); a minute is a guard.
    let running =
        || fs::read_to_string(format!("/proc/{writer_pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "));
    let deadline = Instant::now() + Duration::from_secs(60);
    while running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let alive = running();
    if alive {
        let _ = std::process::Command::new("kill").arg("-9").arg(writer_pid.to_string()).status();
    }
    assert!(!alive, "`yes` outside the group kept running after its reader closed");
    assert_eq!(output.status, ToolStatus::Ok);
    if let Some(pid) = output.content.lines().next().and_then(|line| line.trim().parse::<u32>().ok()) {
        let _ = std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
}
