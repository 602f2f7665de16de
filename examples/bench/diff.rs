//! Chapters 3 and 12: what showing a change before it is approved costs, on the inputs that
//! could make it expensive (issue 22, item 1).
//!
//! In process, `diff_lines` on five pairs of texts, each the worst of its kind: time (median
//! of [`RUNS`]) and the peak of heap bytes it allocated beyond its two inputs, counted by this
//! binary's allocator. End to end, the real binary under `--json` is asked about a 4 MB
//! `write_file` over a 4 MB file whose every other line differs: the `approval` event carries
//! the diff, nobody answers, the call is denied. Its wall time and peak RSS stand beside the
//! same run with `--allow-write` (no question: the write itself, and its `+N −M`), and beside
//! 9 MB writes, whose file on disk is over the 4 MiB a write is compared with.

use super::{RUNS, Table, TempDir, Wrap, repeat, run_agent};
use mini_agent::ch03_tools::diff::diff_lines;
use mini_agent::scripted_server::Step;
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The system allocator, counting the bytes in use and their peak.
pub(super) struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = IN_USE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(pointer, layout) }
    }
}

/// The texts: (name, old, new).
fn cases() -> Vec<(&'static str, String, String)> {
    let lines = |count: usize, line: &dyn Fn(usize) -> String| -> String { (0..count).map(line).collect() };
    let file = lines(100_000, &|n| {
        format!("{n:>8} some text of a line of about a hundred bytes, as code has{}\n", " ".repeat(36))
    });
    let one_edit = file.replacen("   50000 some", "   50000 SOME", 1);
    let every_other =
        lines(20_000, &|n| if n % 2 == 0 { format!("line {n}\n") } else { format!("LINE {n}\n") });
    let scattered =
        lines(20_000, &|n| if n % 50 == 0 { format!("line {n} changed\n") } else { format!("line {n}\n") });
    let long_line = "x".repeat(10_000_000);
    let mut long_line_changed = long_line.clone();
    long_line_changed.replace_range(5_000_000..5_000_001, "y");
    vec![
        ("one edit in a 10 MB file (100,000 lines)", file, one_edit),
        ("10 MB of empty lines over nothing (10 million rows)", String::new(), "\n".repeat(10_000_000)),
        ("one 10 MB line, one byte changed", long_line, long_line_changed),
        (
            "20,000 lines, every other one changed (past the edit bound)",
            lines(20_000, &|n| format!("line {n}\n")),
            every_other,
        ),
        (
            "20,000 lines, one in 50 changed (800 edits, aligned)",
            lines(20_000, &|n| format!("line {n}\n")),
            scattered,
        ),
    ]
}

pub(super) fn diff_rows(table: &mut Table, binary: &Path) {
    for (name, old, new) in cases() {
        let mut heap = 0;
        let mut rows = 0;
        let times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let before = IN_USE.load(Ordering::Relaxed);
                PEAK.store(before, Ordering::Relaxed);
                let started = Instant::now();
                let diff = diff_lines(&old, &new);
                let took = started.elapsed();
                heap = PEAK.load(Ordering::Relaxed) - before;
                rows = diff.rows();
                took
            })
            .collect();
        table.millis(&format!("diff: {name}"), times.into_iter(), Some(1_000.0));
        table.text(
            "  its peak heap beyond the inputs, MB",
            &format!("{:.1}", heap as f64 / 1e6),
            &format!("{rows} rows, at most 2,000 kept"),
        );
    }
    approval_rows(table, binary);
}

/// A file of `lines` lines of 50 bytes, and a write of as many over it that changes every
/// other line (a model's reply is at most 10 MiB, arguments and all). Without `over`, the file
/// does not exist yet.
fn big_write(workspace: &TempDir, over: bool, lines: usize) -> Result<Step, String> {
    let line = |n: usize, changed: bool| match changed {
        false => format!("{n:>8} a line of fifty bytes or so, to be changed\n"),
        true => format!("{n:>8} A LINE OF FIFTY BYTES OR SO, NOW CHANGED!!\n"),
    };
    let old: String = (0..lines).map(|n| line(n, false)).collect();
    let new: String = (0..lines).map(|n| line(n, n % 2 == 1)).collect();
    if over {
        std::fs::write(workspace.root().join("big.txt"), old)
            .map_err(|e| format!("cannot write big.txt: {e}"))?;
    }
    let arguments = json!({"path": "big.txt", "content": new}).to_string();
    Ok(Step::tool_calls(&[("write_file", &arguments)]))
}

/// `--json`, asked (and denied) or allowed: wall time and peak RSS of the whole run, beside the
/// same write to a new file (nothing to read or compare).
fn approval_rows(table: &mut Table, binary: &Path) {
    let runs = [
        ("4 MB write over a 4 MB file, asked: the approval event's diff, then denied", false, true, 80_000),
        ("4 MB write over a 4 MB file, --allow-write: written, no question", true, true, 80_000),
        ("9 MB write over a 9 MB file (not compared: over 4 MiB), asked", false, true, 180_000),
        ("9 MB write over a 9 MB file (not compared: over 4 MiB), --allow-write", true, true, 180_000),
        ("  for comparison: the 9 MB write to a new file, --allow-write", true, false, 180_000),
    ];
    for (label, allow, over, lines) in runs {
        let measured = repeat(|| {
            let workspace = TempDir::new("diff")?;
            let step = big_write(&workspace, over, lines)?;
            let report = workspace.root().join("peak-rss-kb");
            let mut words = vec!["--json", "-p", "rewrite big.txt"];
            if allow {
                words.insert(0, "--allow-write");
            }
            let started = Instant::now();
            run_agent(binary, &workspace, &words, vec![step, Step::text("done")], Wrap::Time(&report))?;
            let took = started.elapsed();
            let text = std::fs::read_to_string(&report).map_err(|e| format!("no report from time: {e}"))?;
            let last = text.lines().last().and_then(|line| line.trim().parse::<f64>().ok());
            Ok((took, last.ok_or(format!("time said: {text}"))?))
        });
        match measured {
            Ok(runs) => {
                table.millis(label, runs.iter().map(|run| run.0), None);
                let megabytes = runs.iter().map(|run| run.1 / 1024.0).collect();
                table.row("  its peak RSS, MB", megabytes, |mb| format!("{mb:.1} MB"), Some(64.0));
            }
            Err(reason) => table.missing(label, &reason),
        }
    }
}
