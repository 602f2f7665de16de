//! Chapter 20's rows: what the sandbox costs. Setting it up happens once per run (the private
//! temp dir, the ruleset, the BPF program, the namespaces); applying it happens in every
//! command's child, between fork and exec, and must add at most 0.3 ms to a command.
//!
//! Measured twice. Through the workspace's `bash`, as the model calls it, in this process: the
//! same `true` command, alternately through a sandboxed workspace and an unconfined one, so
//! that both halves of each pair see the same load; the paired difference is the figure. And
//! through the real binary, as a user meets it: a `-p` run of 20 `bash true` turns under the
//! default sandbox and the same run with `--sandbox off`, one right after the other (in
//! alternating order), so the per-turn difference of each pair is the sandbox's cost in a turn.

use super::{RUNS, Table, TempDir, Wrap, median, repeat, run_task_with};
use mini_agent::ch02_loop::{ToolCall, Tools};
use mini_agent::ch03_tools::Workspace;
use mini_agent::ch20_sandbox::{Mode, Sandbox};
use mini_agent::scripted_server::Step;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Commands per run, in pairs.
const PAIRS: usize = 100;

struct Pairs {
    setup: Duration,
    sandboxed: Vec<Duration>,
    unconfined: Vec<Duration>,
}

pub(super) fn sandbox_rows(table: &mut Table) {
    let runs = match repeat(paired_commands) {
        Ok(runs) => runs,
        Err(reason) => return table.missing("bash `true` sandboxed", &reason),
    };
    let ms = |d: &Duration| d.as_secs_f64() * 1e3;
    let show = |ms: f64| format!("{ms:.3} ms");
    let name = "sandbox set-up, once per run (temp dir, ruleset, BPF, namespaces)";
    table.row(name, runs.iter().map(|run| ms(&run.setup)).collect(), show, None);
    let medians = |pick: &dyn Fn(&Pairs) -> &Vec<Duration>| -> Vec<f64> {
        runs.iter().map(|run| median(pick(run).iter().map(ms).collect())).collect()
    };
    let name = format!("bash `true` tool call, sandboxed (median of {PAIRS} per run)");
    table.row(&name, medians(&|run| &run.sandboxed), show, None);
    table.row("  the same call unconfined (paired)", medians(&|run| &run.unconfined), show, None);
    let added: Vec<f64> = runs
        .iter()
        .map(|run| median(run.sandboxed.iter().zip(&run.unconfined).map(|(s, u)| ms(s) - ms(u)).collect()))
        .collect();
    table.row("  added by the sandbox per command (paired difference)", added, show, Some(0.3));
    debug_assert_eq!(runs.len(), RUNS);
}

fn paired_commands() -> Result<Pairs, String> {
    let workspace = TempDir::new("sandbox")?;
    let root = workspace.root();
    let started = Instant::now();
    let sandbox =
        Sandbox::new(root, Mode::Workspace, false).map_err(|e| format!("cannot build the sandbox: {e}"))?;
    let setup = started.elapsed();
    if !sandbox.missing().is_empty() {
        return Err(format!("not every layer is enforced here: {}", sandbox.start_up_line()));
    }
    let open = |root| Workspace::new(root).map_err(|e| format!("cannot open the workspace: {e}"));
    let mut sandboxed = open(root)?.confined(Arc::new(sandbox));
    let mut unconfined = open(root)?;
    let mut pairs = Pairs { setup, sandboxed: Vec::new(), unconfined: Vec::new() };
    for n in 0..PAIRS {
        // Alternate which goes first, so neither always follows the other's fork.
        let (first, second) =
            if n % 2 == 0 { (&mut sandboxed, &mut unconfined) } else { (&mut unconfined, &mut sandboxed) };
        let a = time_true(first)?;
        let b = time_true(second)?;
        let (s, u) = if n % 2 == 0 { (a, b) } else { (b, a) };
        pairs.sandboxed.push(s);
        pairs.unconfined.push(u);
    }
    Ok(pairs)
}

fn time_true(workspace: &mut Workspace) -> Result<Duration, String> {
    let call = ToolCall { id: "1".into(), name: "bash".into(), arguments: r#"{"command":"true"}"#.into() };
    let started = Instant::now();
    let output = workspace.run(&call);
    let elapsed = started.elapsed();
    match output.content.ends_with("[exit code 0]") {
        true => Ok(elapsed),
        false => Err(format!("bash true answered: {}", output.content)),
    }
}

/// Turns of the real binary: N `bash true` calls in one `-p` run, sandboxed (the default) and
/// with `--sandbox off`, back to back. A turn's time is mostly the journal's fsyncs, whose
/// noise on a busy disk is larger than the figure, so each run is many short pairs (the load
/// changes less within a pair than across runs), each run's turn the median of its turns,
/// and the row the median of the pairs' differences.
pub(super) fn sandbox_turn_rows(table: &mut Table, binary: &Path) {
    const CALLS: usize = 20;
    const PAIRS_PER_RUN: usize = 10;
    // Each call differs: identical calls in a row stop the turn (chapter 7's repeat detector).
    let bash_true = |n: usize| Step::tool_calls(&[("bash", &format!(r#"{{"command":"true # {n}"}}"#))]);
    let turn = |flags: &[&str]| -> Result<f64, String> {
        let run = run_task_with(binary, CALLS, &bash_true, Wrap::None, flags)?;
        Ok(median(run.turns.iter().map(|turn| turn.as_secs_f64() * 1e3).collect()))
    };
    let mut round = 0;
    let pairs = || -> Result<(f64, f64, f64), String> {
        let (mut sandboxed, mut off) = (Vec::new(), Vec::new());
        for _ in 0..PAIRS_PER_RUN {
            round += 1;
            // Alternate which run goes first, so neither always meets the machine warmer.
            let (s, o) = if round % 2 == 1 {
                let s = turn(&[])?;
                (s, turn(&["--sandbox", "off"])?)
            } else {
                let o = turn(&["--sandbox", "off"])?;
                (turn(&[])?, o)
            };
            sandboxed.push(s);
            off.push(o);
        }
        let added = median(sandboxed.iter().zip(&off).map(|(s, o)| s - o).collect());
        Ok((median(sandboxed), median(off), added))
    };
    let runs = match repeat(pairs) {
        Ok(runs) => runs,
        Err(reason) => return table.missing("bash `true` turns, sandboxed and off", &reason),
    };
    let show = |ms: f64| format!("{ms:.2} ms");
    let name = format!("bash `true` turn, N = {CALLS}, sandboxed (the binary's default; median turn)");
    table.row(&name, runs.iter().map(|run| run.0).collect(), show, None);
    table.row(
        "  the same run with --sandbox off (paired)",
        runs.iter().map(|run| run.1).collect(),
        show,
        None,
    );
    let added = runs.iter().map(|run| run.2).collect();
    let name = format!("  added by the sandbox per turn (median of {PAIRS_PER_RUN} paired differences)");
    table.row(&name, added, show, Some(0.3));
}
