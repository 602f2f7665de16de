//! Chapter 20's look at git's metadata after every sandboxed command: what it costs when
//! nothing changed (the common case: a few `stat`s and one per watched directory), what the
//! walk at start costs, and what reading a large index costs when a command changed it.
//!
//! Measured in this process on repositories made for the purpose: a project of 70 directories
//! and 500 files (with a `target/` of 500 more directories, which the walk skips), and a large
//! tree of 2,020 directories and 20,000 files, at the walk's bound (2,048). The index read is timed on
//! a synthetic index of 100,000 entries (about 8 MB), written the way git writes version 2.

use super::{RUNS, Table, TempDir, median, repeat};
use mini_agent::ch20_sandbox::git_index;
use mini_agent::ch20_sandbox::git_watch::GitWatch;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Looks timed per run.
const LOOKS: usize = 1000;

pub(super) fn git_check_rows(table: &mut Table) {
    let show_us = |us: f64| format!("{us:.1} µs");
    let show_ms = |ms: f64| format!("{ms:.2} ms");
    for (name, dirs, files_per_dir, target_dirs, bar) in
        [("70 dirs, 500 files", 50, 10, 500, Some(100.0)), ("2,020 dirs, 20,000 files", 2000, 10, 0, None)]
    {
        let runs = match repeat(|| looks(dirs, files_per_dir, target_dirs)) {
            Ok(runs) => runs,
            Err(reason) => return table.missing("git look after a command", &reason),
        };
        let row = format!("git look after a command, nothing changed ({name}; median of {LOOKS})");
        table.row(&row, runs.iter().map(|run| run.1).collect(), show_us, bar);
        let row = format!("  its start, at sandbox set-up: tree walk and index ({name})");
        table.row(&row, runs.iter().map(|run| run.0).collect(), show_ms, None);
    }
    let index = match synthetic_index(100_000) {
        Ok(index) => index,
        Err(reason) => return table.missing("index read", &reason),
    };
    let read = repeat(|| {
        let file = std::fs::File::open(index.root().join("index")).map_err(|e| e.to_string())?;
        let started = Instant::now();
        let links = git_index::gitlinks(file).map_err(|e| e.to_string())?;
        let elapsed = started.elapsed();
        match links.paths.len() {
            1000 => Ok(ms(elapsed)),
            n => Err(format!("found {n} gitlinks, not 1000")),
        }
    });
    match read {
        Ok(values) => table.row(
            "  reading an index of 100,000 entries, when a command changed it",
            values,
            show_ms,
            None,
        ),
        Err(reason) => table.missing("index read", &reason),
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// One run: a fresh repository of `dirs` directories, the start's time (ms) and the median
/// look (µs) over [`LOOKS`] looks at it unchanged.
fn looks(dirs: usize, files_per_dir: usize, target_dirs: usize) -> Result<(f64, f64), String> {
    let workspace = TempDir::new("git-check")?;
    let root = workspace.root();
    for d in 0..dirs {
        let dir = root.join(format!("d{}/e{d}", d % 20));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        for f in 0..files_per_dir {
            std::fs::write(dir.join(format!("f{f}.rs")), "fn x() {}\n").map_err(|e| e.to_string())?;
        }
    }
    for t in 0..target_dirs {
        std::fs::create_dir_all(root.join(format!("target/debug/t{t}"))).map_err(|e| e.to_string())?;
    }
    git(root, &["init", "-q"])?;
    git(root, &["add", "-A"])?;
    let started = Instant::now();
    let mut watch = GitWatch::start(root).map_err(|e| format!("cannot start: {e}"))?;
    let start = ms(started.elapsed());
    let mut times = Vec::with_capacity(LOOKS);
    for _ in 0..LOOKS {
        let started = Instant::now();
        let findings = watch.check();
        times.push(started.elapsed().as_secs_f64() * 1e6);
        if !findings.is_empty() {
            return Err(format!("nothing changed, yet: {:?}", findings.line()));
        }
    }
    Ok((start, median(times)))
}

fn git(root: &Path, args: &[&str]) -> Result<(), String> {
    let status =
        Command::new("git").args(args).current_dir(root).status().map_err(|e| format!("git: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("git {args:?} failed")) }
}

/// An index file of `entries` entries, one in a hundred a gitlink, as git writes version 2
/// (the checksum left zero: the reader does not verify it).
fn synthetic_index(entries: usize) -> Result<TempDir, String> {
    let dir = TempDir::new("git-index")?;
    let mut bytes = Vec::with_capacity(entries * 80);
    bytes.extend_from_slice(b"DIRC");
    bytes.extend_from_slice(&2u32.to_be_bytes());
    bytes.extend_from_slice(&(entries as u32).to_be_bytes());
    for n in 0..entries {
        let path = format!("src/module{:03}/file{n:06}.rs", n % 997);
        let mode: u32 = if n % 100 == 0 { 0o160000 } else { 0o100644 };
        let start = bytes.len();
        bytes.extend_from_slice(&[0u8; 24]);
        bytes.extend_from_slice(&mode.to_be_bytes());
        bytes.extend_from_slice(&[0u8; 12]);
        bytes.extend_from_slice(&[7u8; 20]);
        bytes.extend_from_slice(&(path.len() as u16).to_be_bytes());
        bytes.extend_from_slice(path.as_bytes());
        let padded = (62 + path.len() + 8) & !7;
        bytes.resize(start + padded, 0);
    }
    bytes.extend_from_slice(&[0u8; 20]);
    std::fs::write(dir.root().join("index"), &bytes).map_err(|e| e.to_string())?;
    debug_assert_eq!(RUNS, 5);
    Ok(dir)
}
