//! Red-team cases: see `main.rs` for the rule this file holds.
//!
//! A hostile model asks for unbounded disk or memory: endless output, a file doubled a
//! thousand times, a one-gigabyte line, a reply of a thousand calls, a streamed argument with
//! no end. Each case runs the real binary, reads its peak resident memory from the kernel
//! (`wait4`'s `ru_maxrss`, which also covers the commands it ran, taken by the small wrapper
//! of `measure.rs`), prints it, and asserts the
//! rule: peak RSS under 64 MB, no file the agent wrote over 64 MiB, the spill directory small.
//!
//! These measurements move hundreds of megabytes and take most of a minute on two cores, so
//! they are the heavy tier: ignored by plain `cargo test` (a newcomer's check), run by
//! `.ci/run` with `cargo test --test redteam -- --ignored`.

use crate::harness::{TempDir, call, messages, records, session_files, text};
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Instant;

/// The bar of the issue: peak RSS in every resource case.
const RSS_LIMIT_KB: i64 = 64 * 1000;
const MIB: u64 = 1 << 20;

pub(crate) struct Measured {
    pub(crate) code: Option<i32>,
    pub(crate) stderr: String,
    pub(crate) peak_rss_kb: i64,
    pub(crate) requests: Vec<Value>,
    workspace: TempDir,
}

/// Runs the agent with `args` against `steps` in `workspace`, and measures it.
///
/// The agent is started by a small measuring wrapper, not by this large test process
/// (`measure.rs` says why).
pub(crate) fn measure(name: &str, workspace: TempDir, args: &[&str], steps: Vec<Step>) -> Measured {
    let server = ScriptedServer::scripted(steps).expect("start the scripted server");
    let mut args: Vec<&str> = args.to_vec();
    args.extend(["--base-url", &server.url]);
    let mut measured = measure_command(name, workspace, &args);
    measured.requests = server.requests();
    measured
}

/// Like [`measure`], without a server: the command line alone.
pub(crate) fn measure_command(name: &str, workspace: TempDir, args: &[&str]) -> Measured {
    let run = crate::measure::run_measured(name, workspace.path(), args);
    let measured = Measured {
        code: run.code,
        stderr: run.stderr,
        peak_rss_kb: run.peak_rss_kb,
        requests: Vec::new(),
        workspace,
    };
    assert!(
        measured.peak_rss_kb < RSS_LIMIT_KB,
        "{name}: peak RSS {} kB is over the bar\n{}",
        measured.peak_rss_kb,
        measured.stderr
    );
    measured
}

impl Measured {
    fn root(&self) -> &Path {
        self.workspace.path()
    }

    pub(crate) fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, Some(code), "exit code; stderr:\n{}", self.stderr);
        self
    }

    /// The tool results the last request carried back to the model.
    pub(crate) fn tool_results(&self) -> Vec<String> {
        let last = self.requests.last().expect("a request was sent");
        messages(last)
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Bytes and files in `.mini_agent/outputs/`.
    fn spill_dir(&self) -> (u64, Vec<(String, u64)>) {
        let dir = self.root().join(".mini_agent/outputs");
        let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| (e.file_name().to_string_lossy().into_owned(), e.metadata().unwrap().len()))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        (files.iter().map(|(_, size)| size).sum(), files)
    }

    /// The largest file in the workspace, `.mini_agent/` included.
    fn largest_file(&self) -> u64 {
        fn walk(dir: &Path, largest: &mut u64) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let meta = entry.metadata().unwrap();
                if meta.is_dir() {
                    walk(&entry.path(), largest);
                } else {
                    *largest = (*largest).max(meta.len());
                }
            }
        }
        let mut largest = 0;
        walk(self.root(), &mut largest);
        largest
    }
}

fn shell(command: &str, timeout_secs: u64) -> Vec<Step> {
    vec![call("bash", json!({"command": command, "timeout_secs": timeout_secs})), text("done")]
}

const RUN_ALL: [&str; 5] = ["-p", "go", "--allow-write", "--allow-shell", "--max-turns=5"];

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_300_mb_output_leaves_a_spill_of_at_most_64_mib() {
    let run = measure(
        "300 MB output",
        TempDir::new("selfcheck"),
        &RUN_ALL,
        shell("head -c 300000000 /dev/zero | tr '\\0' x", 60),
    );
    run.expect_code(0);
    let (total, files) = run.spill_dir();
    eprintln!(
        "[resources] spill dir after a 300 MB output: {:.1} MB in {} file(s)",
        total as f64 / 1e6,
        files.len()
    );
    assert!(total < 70_000_000, "spill dir {total} bytes: {files:?}");
    assert_eq!(files.len(), 1, "{files:?}");
    let spill = std::fs::read(run.root().join(".mini_agent/outputs").join(&files[0].0)).unwrap();
    assert!(spill.len() as u64 <= 64 * MIB);
    assert!(String::from_utf8_lossy(&spill[spill.len() - 200..]).contains("cut at its size limit"));
    let result = &run.tool_results()[0];
    assert!(
        result.contains("omitted") && result.contains("full output (its first 64 MiB): "),
        "{}",
        &result[result.len() - 400..]
    );
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn endless_output_until_the_timeout_is_capped_too() {
    // The issue's `cat /dev/zero` with a timeout: the disk filled at the pipe's speed.
    let run = measure(
        "endless output, 3 s timeout",
        TempDir::new("selfcheck"),
        &RUN_ALL,
        shell("yes 0123456789abcdef", 3),
    );
    run.expect_code(0);
    let (total, files) = run.spill_dir();
    eprintln!("[resources] spill dir after an endless output: {:.1} MB", total as f64 / 1e6);
    assert!(total <= 64 * MIB + 100, "{files:?}");
    assert!(run.tool_results()[0].contains("timed out"));
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn old_spills_are_pruned_to_a_budget() {
    let workspace = TempDir::new("selfcheck");
    let outputs = workspace.path().join(".mini_agent/outputs");
    std::fs::create_dir_all(&outputs).unwrap();
    // 150 old spills, three of them 100 MB (sparse: the length counts, not the disk).
    for n in 0..150 {
        let file = std::fs::File::create(outputs.join(format!("bash-old-{n:03}.txt"))).unwrap();
        file.set_len(if n < 3 { 100_000_000 } else { 10 }).unwrap();
    }
    let run = measure("spill pruning", workspace, &RUN_ALL, shell("seq 1 100000", 10));
    run.expect_code(0);
    let (total, files) = run.spill_dir();
    eprintln!("[resources] spill dir after pruning: {:.1} MB in {} files", total as f64 / 1e6, files.len());
    assert!(files.len() <= 100, "{} files", files.len());
    assert!(total <= 256 * MIB, "{total}");
    assert!(files.iter().any(|(name, _)| !name.starts_with("bash-old")), "the new spill is kept");
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn replace_all_cannot_grow_a_file_past_64_mib() {
    // The issue: a 1 MB file of `a`, each `a` replaced by 2,000 bytes, is a 2 GB file.
    let workspace = TempDir::new("selfcheck");
    std::fs::write(workspace.path().join("big.txt"), "a".repeat(1_000_000)).unwrap();
    let edit =
        json!({"path": "big.txt", "old_string": "a", "new_string": "b".repeat(2000), "replace_all": true});
    let run =
        measure("replace_all to 2 GB", workspace, &RUN_ALL, vec![call("edit_file", edit), text("done")]);
    run.expect_code(0);
    let result = &run.tool_results()[0];
    assert!(result.contains("refused") && result.contains("64 MiB"), "{result}");
    assert_eq!(std::fs::metadata(run.root().join("big.txt")).unwrap().len(), 1_000_000, "unchanged");
    assert!(run.largest_file() < 64 * MIB);
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_large_edit_under_the_cap_is_written_without_holding_it() {
    // 1 MB → 50 MB: allowed, and written as it is made (peak RSS far below the result).
    let workspace = TempDir::new("selfcheck");
    std::fs::write(workspace.path().join("big.txt"), "a\n".repeat(500_000)).unwrap();
    let edit =
        json!({"path": "big.txt", "old_string": "a", "new_string": "c".repeat(100), "replace_all": true});
    let run =
        measure("replace_all to 50 MB", workspace, &RUN_ALL, vec![call("edit_file", edit), text("done")]);
    run.expect_code(0);
    assert!(run.tool_results()[0].contains("replaced 500000 occurrences"), "{:?}", run.tool_results());
    assert_eq!(std::fs::metadata(run.root().join("big.txt")).unwrap().len(), 50_500_000);
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_write_of_megabytes_is_written_and_the_session_goes_on() {
    // A write the reply cap lets through is written; the file bound is the same 64 MiB rule.
    let content = "z".repeat(9_000_000);
    let run = measure(
        "write_file 9 MB",
        TempDir::new("selfcheck"),
        &RUN_ALL,
        vec![call("write_file", json!({"path": "w.txt", "content": content})), text("done")],
    );
    run.expect_code(0);
    assert_eq!(std::fs::metadata(run.root().join("w.txt")).unwrap().len(), 9_000_000);
}

/// A file that is one line of `bytes` bytes: non-NUL at the start (so it is text), then a hole.
fn one_long_line(workspace: &TempDir, name: &str, bytes: u64) {
    let path = workspace.path().join(name);
    std::fs::write(&path, "q".repeat(16_384)).unwrap();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(bytes).unwrap();
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn read_file_of_a_1_gb_line_holds_only_its_head() {
    let workspace = TempDir::new("selfcheck");
    one_long_line(&workspace, "line.txt", 1 << 30);
    let run = measure(
        "read_file of a 1 GB line",
        workspace,
        &RUN_ALL,
        vec![call("read_file", json!({"path": "line.txt", "limit": 1})), text("done")],
    );
    run.expect_code(0);
    let result = &run.tool_results()[0];
    assert!(result.contains("[line cut]") && result.len() < 20_000, "{}", result.len());
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn search_and_list_over_a_1_gb_file_stay_small() {
    let workspace = TempDir::new("selfcheck");
    one_long_line(&workspace, "line.txt", 1 << 30);
    std::fs::write(workspace.path().join("small.txt"), "needle here\n").unwrap();
    let steps = vec![
        Step::tool_calls(&[
            ("search", &json!({"pattern": "needle"}).to_string()),
            ("list_files", &json!({}).to_string()),
        ]),
        text("done"),
    ];
    let run = measure("search and list beside a 1 GB file", workspace, &RUN_ALL, steps);
    run.expect_code(0);
    let results = run.tool_results();
    assert!(results[0].contains("small.txt:1: needle here"), "{results:?}");
}

/// A streamed reply whose one tool call carries `bytes` bytes of arguments.
fn streamed_call(bytes: usize) -> Step {
    let piece = "A".repeat(64 * 1024);
    let mut chunks = vec![
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1",
            "function": {"name": "write_file", "arguments": "{\"path\":\"s.txt\",\"content\":\""}}]}}]})
        .to_string(),
    ];
    for _ in 0..bytes / piece.len() {
        chunks.push(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
                "function": {"arguments": piece}}]}}]})
            .to_string(),
        );
    }
    chunks.push(
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
            "function": {"arguments": "\"}"}}]}, "finish_reason": "tool_calls"}]})
        .to_string(),
    );
    Step::Stream { chunks, delay_ms: 0, finish: true }
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_streamed_reply_has_the_same_cap_as_a_whole_one() {
    // The issue sent a 300 MB argument; 40 MB shows the rule as well, four times past the cap.
    let run = measure(
        "streamed 40 MB argument",
        TempDir::new("selfcheck"),
        &["-p", "go", "--allow-write", "--stream"],
        vec![streamed_call(40 << 20), text("done")],
    );
    run.expect_code(1);
    assert!(run.stderr.contains("larger than 10 MiB"), "{}", run.stderr);
    assert!(!run.root().join("s.txt").exists(), "the cut reply's call never ran");
    let journal = &session_files(run.root())[0];
    let size = std::fs::metadata(journal).unwrap().len();
    eprintln!("[resources] journal after a 40 MB stream: {size} bytes");
    assert!(size < 11 * MIB, "{size}");
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_streamed_reply_under_the_cap_still_works() {
    let run = measure(
        "streamed 2 MB argument",
        TempDir::new("selfcheck"),
        &["-p", "go", "--allow-write", "--stream"],
        vec![streamed_call(2 << 20), text("done")],
    );
    run.expect_code(0);
    assert_eq!(std::fs::metadata(run.root().join("s.txt")).unwrap().len(), 2 << 20);
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_whole_reply_over_the_cap_is_a_clear_error() {
    let body = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "x".repeat(11 << 20)}}]})
    .to_string();
    let run = measure(
        "whole 11 MB reply",
        TempDir::new("selfcheck"),
        &["-p", "go"],
        vec![Step::Reply { status: 200, headers: Vec::new(), body }],
    );
    run.expect_code(1);
    assert!(run.stderr.contains("larger than 10 MiB"), "{}", run.stderr);
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_reply_of_a_thousand_calls_runs_at_most_64() {
    let calls: Vec<(String, String)> = (0..1000)
        .map(|n| ("bash".to_string(), json!({"command": format!("echo {n} >> ran.txt")}).to_string()))
        .collect();
    let calls: Vec<(&str, &str)> = calls.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let run = measure(
        "1000 calls in one reply",
        TempDir::new("selfcheck"),
        &RUN_ALL,
        vec![Step::tool_calls(&calls), text("done")],
    );
    run.expect_code(0);
    let ran = std::fs::read_to_string(run.root().join("ran.txt")).unwrap();
    assert_eq!(ran.lines().count(), 64);
    // The history keeps the 64 calls that ran (each with its result); the last result tells
    // the model how many more were dropped. A reply's footprint is bounded, whatever its size.
    let results = run.tool_results();
    assert_eq!(results.len(), 64, "the calls kept are answered");
    assert!(
        results[63].contains("936 further calls") && results[63].contains("at most 64"),
        "{}",
        results[63]
    );
    let finished =
        records(&session_files(run.root())[0]).iter().filter(|r| r["type"] == "tool_finished").count();
    assert_eq!(finished, 64);
}

// ---- rt-b: the reply cap counts everything a reply makes us hold, not only text and arguments.

/// A streamed reply of `calls` tool calls, each opened under a new index with a 1 MB name:
/// no text, no arguments, so a cap that counts only those never fires.
fn streamed_calls_with_huge_names(calls: u64) -> Step {
    let name = "n".repeat(1 << 20);
    let mut chunks: Vec<String> = (0..calls)
        .map(|index| {
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index,
                "id": format!("c{index}"), "function": {"name": name, "arguments": ""}}]}}]})
            .to_string()
        })
        .collect();
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).to_string());
    Step::Stream { chunks, delay_ms: 0, finish: true }
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_streamed_reply_of_many_huge_names_has_the_same_cap() {
    // Found by rt-b: 300 such calls took 1.2 GB of RSS and left a 381 MB journal.
    let run = measure(
        "streamed 80 calls with 1 MB names",
        TempDir::new("selfcheck"),
        &["-p", "go", "--stream"],
        vec![streamed_calls_with_huge_names(80), text("done")],
    );
    run.expect_code(1);
    assert!(run.stderr.contains("larger than 10 MiB"), "{}", run.stderr);
    let journal = &session_files(run.root())[0];
    let size = std::fs::metadata(journal).unwrap().len();
    eprintln!("[resources] journal after 80 MB of streamed names: {size} bytes");
    assert!(size < 11 * MIB, "{size}");
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_reply_of_twenty_thousand_calls_costs_the_history_64() {
    // Found by rt-b: every call past 64 was answered with its own refusal, each two journal
    // records with an fsync; 200,000 calls took minutes (SIGTERM was not heard meanwhile),
    // left a 44 MB journal, and resuming it took 384 s. A reply's footprint in the history is
    // bounded: at most 64 of its calls are kept, and the model is told the rest were dropped.
    let calls: Vec<(String, String)> = (0..20_000)
        .map(|n| ("read_file".to_string(), json!({"path": format!("f{n}")}).to_string()))
        .collect();
    let calls: Vec<(&str, &str)> = calls.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let started = Instant::now();
    let run = measure(
        "20,000 calls in one reply",
        TempDir::new("selfcheck"),
        &RUN_ALL,
        vec![Step::tool_calls(&calls), text("done")],
    );
    let took = started.elapsed();
    run.expect_code(0);
    let journal = &session_files(run.root())[0];
    let size = std::fs::metadata(journal).unwrap().len();
    let finished = records(journal).iter().filter(|r| r["type"] == "tool_finished").count();
    eprintln!("[resources] 20,000 calls: {took:?}, journal {size} bytes, {finished} results");
    assert!(finished <= 64, "{finished} results recorded for one reply");
    let last = messages(&run.requests[1]);
    let results: Vec<&Value> = last.iter().filter(|m| m["role"] == "tool").collect();
    assert!(results.len() <= 64, "{} results sent back", results.len());
    let said = results.last().unwrap()["content"].as_str().unwrap();
    assert!(said.contains("19936") && said.contains("at most 64"), "{said}");
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn listing_sessions_reads_only_the_head_of_a_huge_journal() {
    // Found by rt-b: `mini-agent sessions` with one 381 MB journal took 83 s and 310 MB.
    let workspace = TempDir::new("selfcheck");
    let dir = workspace.path().join(".mini_agent/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("20260101-000000-aaaa.jsonl");
    let root = workspace.path().canonicalize().unwrap();
    let header = json!({"seq": 1, "ts": "2026-01-01T00:00:00.000Z", "type": "session", "version": 1,
        "id": "20260101-000000-aaaa", "root": root, "model": "demo", "api": "openai",
        "endpoint": "demo", "created": "2026-01-01T00:00:00.000Z"});
    let user = json!({"seq": 2, "ts": "2026-01-01T00:00:00.000Z", "type": "user", "content": "hello"});
    let text = format!("{header}\n{user}\n");
    let filler = json!({"seq": 3, "ts": "2026-01-01T00:00:00.000Z", "type": "user",
        "content": "x".repeat(1 << 20)});
    let filler = format!("{filler}\n");
    let mut file = std::fs::File::create(&path).unwrap();
    use std::io::Write;
    file.write_all(text.as_bytes()).unwrap();
    for _ in 0..200 {
        file.write_all(filler.as_bytes()).unwrap();
    }
    drop(file);
    let started = Instant::now();
    let measured = measure_command("sessions with a 200 MB journal", workspace, &["sessions"]);
    eprintln!("[resources] `sessions` over a 200 MB journal: {:?}", started.elapsed());
    assert_eq!(measured.code, Some(0), "{}", measured.stderr);
}

#[test]
fn a_result_larger_than_a_small_window_cannot_end_the_session() {
    // Found by rt-b: with a 4,000-token window, one `seq 1 3000` result (about 14 KB) is
    // larger than the window; the latest results were never cut, so the run ended "does not
    // fit … even after compaction". A session can always continue: when nothing old is left
    // to forget, the newest result is sent as its head and tail, with a note of what was cut.
    let run = crate::harness::Test::new()
        .args(["-p", "go", "--allow-shell"])
        .env("MINI_AGENT_CONTEXT_TOKENS", "4000")
        .server(vec![
            call("bash", json!({"command": "seq 1 3000"})),
            text("done"),
            text("done"),
            text("done"),
        ])
        .run();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("done"), "{}", run.stdout);
    let result = run.only_tool_result();
    eprintln!("[resources] a 14 KB result in a 4,000-token window is sent as {} bytes", result.len());
    assert!(result.starts_with("1\n2\n3\n") && result.contains("2999\n3000"), "{result}");
    assert!(result.contains("cut from the middle of this result"), "{result}");
    assert!(result.len() < 8_000, "{}", result.len());
    assert!(run.stderr.contains("head and tail"), "{}", run.stderr);
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_journal_of_400_000_open_calls_lists_in_bounded_memory() {
    // Found by rt-b: once `sessions` read journals as a stream, what remained was the calls
    // still open: a planted 60 MB journal of replies whose calls never finish kept them all.
    let workspace = TempDir::new("selfcheck");
    let dir = workspace.path().join(".mini_agent/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let root = workspace.path().canonicalize().unwrap();
    let header = json!({"seq": 1, "ts": "2026-01-01T00:00:00.000Z", "type": "session", "version": 1,
        "id": "20260101-000000-bbbb", "root": root, "model": "demo", "api": "openai",
        "endpoint": "demo", "created": "2026-01-01T00:00:00.000Z"});
    let mut text = format!("{header}\n");
    let arguments = json!({"command": "x".repeat(100)}).to_string();
    for n in 0..400_000 {
        let call = json!({"id": format!("c{n}"), "name": "bash", "arguments": arguments});
        text.push_str(
            &json!({"seq": n + 2, "ts": "2026-01-01T00:00:00.000Z", "type": "assistant",
            "content": null, "tool_calls": [call]})
            .to_string(),
        );
        text.push('\n');
    }
    std::fs::write(dir.join("20260101-000000-bbbb.jsonl"), text).unwrap();
    let measured = measure_command("sessions with 400,000 open calls", workspace, &["sessions"]);
    assert_eq!(measured.code, Some(0), "{}", measured.stderr);
}
