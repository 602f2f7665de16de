//! Chapter 15: the task loop's own cost per iteration, and what it is made of.
//!
//! The model answers at once and the tasks have no verify command, so the gap between one
//! attempt's last reply and the next attempt's request is the loop alone: the session ended,
//! the list saved, the next task picked and marked, a new session journaled, the prompt
//! rendered. Most of that time is the disk: each iteration makes a fixed number of fsyncs
//! (the task list saved twice, file and directory; the new journal and its directory; the
//! system, user and reply records, the system one covering the header). On a loaded disk
//! one fsync can take several milliseconds, so the bench counts them (with `strace`, when
//! it is installed) and prices them at the disk's own rate measured in the same minute:
//! a slow figure then shows whether it is the disk or the loop.

use super::{Run, Table, TempDir, Wrap, load_average, repeat, run_agent};
use mini_agent::ch09_journal::measure_appends;
use mini_agent::scripted_server::Step;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const TASKS: usize = 20;

pub(super) fn task_rows(table: &mut Table, binary: &Path) {
    let load = load_average();
    let fsyncs = fsyncs_per_iteration(binary);
    // Each run is preceded by a measure of the disk (50 fsynced appends), so that a slow run
    // can be set beside the price of its fsyncs at that moment.
    let timed = repeat(|| {
        let dir = TempDir::new("appends")?;
        let rate = measure_appends(dir.root(), 50).map_err(|e| e.to_string())?;
        Ok((rate, task_loop_run(binary, TASKS, false, Wrap::None)?))
    });
    let name = format!("tasks run: loop cost per iteration, {TASKS} tasks (no verify, --no-commit)");
    let rates = match timed {
        Ok(timed) => {
            let gaps: Vec<Vec<Duration>> = timed.iter().map(|(_, run)| run.turns.clone()).collect();
            table.pooled(&name, &gaps, Some(20.0));
            timed.iter().map(|(rate, _)| *rate).collect()
        }
        Err(reason) => {
            table.missing(&name, &reason);
            Vec::new()
        }
    };
    table.text("  load average (1, 5, 15 min) as it started", &load, "");
    match &fsyncs {
        Ok((fsync, fdatasync)) => {
            let note = format!(
                "{fsync} fsync (task list file and directory, sessions/) + {fdatasync} fdatasync (journal)"
            );
            table.text("  fsyncs per iteration (strace)", &format!("{}", fsync + fdatasync), &note);
            if !rates.is_empty() {
                let count = f64::from(fsync + fdatasync);
                let name = "  those fsyncs at the disk's rate measured before each run";
                table.row(
                    name,
                    rates.iter().map(|rate| count * 1e3 / rate).collect(),
                    |ms| format!("{ms:.2} ms"),
                    None,
                );
                table.row("  the disk then, fsynced appends/s", rates, |rate| format!("{rate:.0} /s"), None);
            }
        }
        Err(reason) => table.missing("  fsyncs per iteration", reason),
    }
    // Each attempt writes a file (one tool call), so every other gap is between attempts.
    match repeat(|| task_loop_run(binary, TASKS, true, Wrap::None)) {
        Ok(runs) => {
            let gaps: Vec<Vec<Duration>> =
                runs.iter().map(|run| run.turns.iter().skip(1).step_by(2).copied().collect()).collect();
            table.pooled("  the same with a git commit per task", &gaps, None);
        }
        Err(reason) => table.missing("tasks run with commits", &reason),
    }
}

/// (fsync, fdatasync) calls per iteration: a run of `1 + EXTRA` tasks against a run of one,
/// both under `strace -f`, so that start-up and shutdown cancel out.
fn fsyncs_per_iteration(binary: &Path) -> Result<(u32, u32), String> {
    const EXTRA: u32 = 4;
    let one = strace_counts(binary, 1)?;
    let more = strace_counts(binary, 1 + EXTRA as usize)?;
    let per = |more: u32, one: u32| more.saturating_sub(one).div_ceil(EXTRA);
    Ok((per(more.0, one.0), per(more.1, one.1)))
}

fn strace_counts(binary: &Path, tasks: usize) -> Result<(u32, u32), String> {
    let found = Command::new("strace").arg("-V").output().is_ok_and(|out| out.status.success());
    if !found {
        return Err("needs strace (not installed)".into());
    }
    let out = TempDir::new("strace")?;
    let log = out.root().join("strace.log");
    task_loop_run(binary, tasks, false, Wrap::Strace(&log))?;
    let text = std::fs::read_to_string(&log).map_err(|e| format!("no strace output: {e}"))?;
    let count = |call: &str| u32::try_from(text.lines().filter(|l| l.contains(call)).count()).unwrap_or(0);
    Ok((count(" fsync("), count(" fdatasync(")))
}

/// `tasks run` over `tasks` tasks in a fresh workspace (a git repository when `commit`).
fn task_loop_run(binary: &Path, tasks: usize, commit: bool, wrap: Wrap) -> Result<Run, String> {
    let workspace = TempDir::new("tasks")?;
    let list: Vec<Value> =
        (1..=tasks).map(|i| serde_json::json!({"id": i.to_string(), "name": format!("task {i}")})).collect();
    let dir = workspace.root().join(".mini_agent");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let text = serde_json::json!({"tasks": list}).to_string();
    std::fs::write(dir.join("tasks.json"), text).map_err(|e| format!("cannot write the task list: {e}"))?;
    let mut replies = Vec::new();
    for i in 1..=tasks {
        if commit {
            let arguments = format!(r#"{{"path":"f{i}.txt","content":"{i}"}}"#);
            replies.push(Step::tool_calls(&[("write_file", &arguments)]));
        }
        replies.push(Step::text("done"));
    }
    let words: &[&str] = if commit {
        let init = Command::new("git").args(["init", "-q"]).current_dir(workspace.root()).status();
        if !init.is_ok_and(|status| status.success()) {
            return Err("git init failed (is git installed?)".into());
        }
        &["tasks", "run", "--allow-write"]
    } else {
        &["tasks", "run", "--no-commit"]
    };
    run_agent(binary, &workspace, words, replies, wrap)
}
