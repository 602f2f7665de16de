//! Chapter 20's rows: what the sandbox costs. Setting it up happens once per run (the private
//! temp dir, the ruleset, the BPF program, the namespaces); applying it happens in every
//! command's child, between fork and exec, and must add at most 0.3 ms to a command.
//!
//! Measured here through the workspace's `bash`, as the model calls it, in this process: the
//! same `true` command, alternately through a sandboxed workspace and an unconfined one, so
//! that both halves of each pair see the same load. The paired difference is the figure.

use super::{RUNS, Table, TempDir, median, repeat};
use mini_agent::ch02_loop::{ToolCall, Tools};
use mini_agent::ch03_tools::Workspace;
use mini_agent::ch20_sandbox::{Mode, Sandbox};
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
