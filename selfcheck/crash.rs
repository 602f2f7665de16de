//! The crash test: a scripted multi-tool session is killed with SIGKILL at more than a
//! hundred points, and every time the journal must tell the truth.
//!
//! A kill point is "right after the journal's line k appeared" (for every k), "k ms into
//! a `bash` command" and "k ms into a model request" (the scripted server answers after a
//! delay, so those windows are wide and the point lands where it is aimed). Each `bash`
//! command appends its own name to `runs.log`, so executions can be counted. After each
//! kill the expected state is computed here, independently of chapter 10, from the
//! records that are on disk; then `--status` must say it, resuming must refuse exactly
//! when a tool started without finishing, `--acknowledge-unknown` must continue without
//! running anything again, and the counter must show every command at most once (exactly
//! once when its `tool_finished` was recorded).
//!
//! Half of the line kills also simulate a power cut: the next record is left half
//! written, as a torn tail the reader must cut off with a warning.
//!
//! The points run on a few threads (most of the time is spent sleeping). Set
//! `MINI_AGENT_CRASH_THREADS` to change how many.
//!
//! Over a hundred agents killed one after another take a while on two cores, so this is the
//! heavy tier: ignored by plain `cargo test`, run by `.ci/run` with
//! `cargo test --test selfcheck -- --ignored`.

use crate::harness::{TempDir, Test, session_files, text};
use mini_agent::ch09_journal::read_journal;
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long the scripted model "thinks" before each reply, for most points.
const MODEL_DELAY_MS: u64 = 40;
/// How long each `bash` command sleeps after counting itself.
const BASH_SLEEP: &str = "0.15";

/// One tool call of the script.
struct ScriptedCall {
    id: &'static str,
    name: &'static str,
    arguments: Value,
}

impl ScriptedCall {
    fn bash(id: &'static str, counter_name: &str) -> ScriptedCall {
        let command = format!("echo {counter_name} >> runs.log; sleep {BASH_SLEEP}");
        ScriptedCall { id, name: "bash", arguments: json!({"command": command}) }
    }

    /// The name the command writes to `runs.log`, for `bash` calls.
    fn counter_name(&self) -> Option<String> {
        let command = self.arguments["command"].as_str()?;
        Some(command.strip_prefix("echo ")?.split_whitespace().next()?.to_string())
    }

    /// How `--status` names the call (chapter 10's `describe_call`, written out here).
    fn described(&self) -> String {
        let main = ["command", "path"].iter().find_map(|key| self.arguments[*key].as_str()).unwrap_or("?");
        format!("{} {main}", self.name)
    }
}

/// The model's replies, in order: tool calls (one or two at a time), then an answer.
/// Call ids are unique across the session, as real models make them.
fn script() -> Vec<Vec<ScriptedCall>> {
    let call = |id, name, arguments| ScriptedCall { id, name, arguments };
    vec![
        vec![call("c1", "write_file", json!({"path": "notes/a.txt", "content": "alpha\n"}))],
        vec![ScriptedCall::bash("c2", "b1")],
        vec![
            call("c3", "write_file", json!({"path": "b.txt", "content": "bravo\n"})),
            ScriptedCall::bash("c4", "b2"),
        ],
        vec![call(
            "c5",
            "edit_file",
            json!({"path": "notes/a.txt", "old_string": "alpha", "new_string": "beta"}),
        )],
        vec![ScriptedCall::bash("c6", "b3"), ScriptedCall::bash("c7", "b4")],
        vec![call("c8", "read_file", json!({"path": "notes/a.txt"}))],
    ]
}

fn scripted_steps() -> Vec<Step> {
    let mut steps: Vec<Step> = script()
        .iter()
        .map(|calls| {
            let calls: Vec<Value> = calls
                .iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments.to_string()}})
                })
                .collect();
            Step::message(json!({"role": "assistant", "content": null, "tool_calls": calls}))
        })
        .collect();
    steps.push(text("all done"));
    steps
}

/// Where to kill: once the journal has `after_lines` lines, wait `offset_ms`, then SIGKILL.
#[derive(Clone, Debug)]
struct KillPoint {
    after_lines: usize,
    offset_ms: u64,
    model_delay_ms: u64,
    /// After the kill, leave half of the next record at the end of the file, the way a
    /// power cut during the write would.
    power_cut: bool,
    what: String,
}

/// The points, planned from the journal of one uninterrupted run of the script.
fn kill_points(reference: &[String]) -> Vec<KillPoint> {
    let mut points = Vec::new();
    let kind =
        |line: &str| serde_json::from_str::<Value>(line).map(|r| r["type"].clone()).unwrap_or_default();
    for lines in 0..reference.len() {
        let after = if lines == 0 {
            "at start".to_string()
        } else {
            format!("after {}", kind(&reference[lines - 1]))
        };
        points.push(KillPoint {
            after_lines: lines,
            offset_ms: 0,
            model_delay_ms: MODEL_DELAY_MS,
            power_cut: false,
            what: format!("line {lines} ({after})"),
        });
        points.push(KillPoint {
            after_lines: lines,
            offset_ms: 0,
            model_delay_ms: 0,
            power_cut: true,
            what: format!("line {lines} ({after}), fast model, power cut"),
        });
    }
    for (index, line) in reference.iter().enumerate() {
        let record: Value = serde_json::from_str(line).unwrap_or_default();
        let next_is_a_request = reference.get(index + 1).is_some_and(|next| kind(next) == "assistant")
            && record["type"] != "session";
        if record["type"] == "tool_started" && record["name"] == "bash" {
            for offset_ms in [1, 3, 6, 12, 25, 50, 80, 110, 140] {
                points.push(KillPoint {
                    after_lines: index + 1,
                    offset_ms,
                    model_delay_ms: MODEL_DELAY_MS,
                    power_cut: false,
                    what: format!("{offset_ms} ms into bash {}", record["id"]),
                });
            }
        } else if next_is_a_request {
            for offset_ms in [5, 15, 30] {
                points.push(KillPoint {
                    after_lines: index + 1,
                    offset_ms,
                    model_delay_ms: MODEL_DELAY_MS,
                    power_cut: false,
                    what: format!("{offset_ms} ms into the model request after line {}", index + 1),
                });
            }
        }
    }
    points
}

fn agent_command(root: &Path, url: &str) -> Command {
    let mut command = crate::harness::agent_command(root);
    command
        .args(["-p", "do the work", "--allow-write", "--allow-shell", "--base-url", url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// The model server of the first run: the script, each reply after `delay_ms`.
fn slow_server(delay_ms: u64) -> ScriptedServer {
    let mut steps = scripted_steps().into_iter();
    ScriptedServer::start(move |_| {
        std::thread::sleep(Duration::from_millis(delay_ms));
        steps.next().unwrap_or_else(|| Step::error(500, "the crash script has no step left"))
    })
    .expect("start the scripted server")
}

fn journal_bytes(root: &Path) -> Option<(PathBuf, Vec<u8>)> {
    let path = session_files(root).pop()?;
    let bytes = std::fs::read(&path).ok()?;
    Some((path, bytes))
}

fn complete_lines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// Runs the script and SIGKILLs the agent at `point`. Returns false when the agent ended
/// before the point was reached.
fn run_and_kill(root: &Path, point: &KillPoint) -> bool {
    let server = slow_server(point.model_delay_ms);
    let mut child = agent_command(root, &server.url).spawn().expect("start mini-agent");
    let started = Instant::now();
    let mut reached = point.after_lines == 0;
    while !reached {
        if child.try_wait().expect("poll mini-agent").is_some() {
            return false;
        }
        reached = journal_bytes(root).is_some_and(|(_, bytes)| complete_lines(&bytes) >= point.after_lines);
        assert!(started.elapsed() < Duration::from_secs(20), "{}: never reached", point.what);
        if !reached {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    std::thread::sleep(Duration::from_millis(point.offset_ms));
    let _ = child.kill(); // SIGKILL; the agent may have just finished on its own.
    let _ = child.wait();
    true
}

/// Processes whose working directory is `root`: a `bash` command the dead agent left
/// running (SIGKILL gives it no chance to clean up; the command ends by itself).
fn processes_in(root: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == root))
        .collect()
}

/// Children of the dead agent caught between fork and exec: they still run the agent's
/// binary and hold copies of its descriptors, the locked journal among them, until their
/// exec closes them. Returns whether there were any.
fn wait_for_children_to_exec(root: &Path) -> Result<bool, String> {
    let agent = Path::new(env!("CARGO_BIN_EXE_mini-agent")).canonicalize().map_err(|e| e.to_string())?;
    let not_yet = || {
        processes_in(root)
            .into_iter()
            .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == agent))
            .count()
    };
    let (started, caught) = (Instant::now(), not_yet() > 0);
    while not_yet() > 0 {
        if started.elapsed() > Duration::from_secs(10) {
            return Err("a child of the killed agent never reached its exec".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(caught)
}

fn wait_until_no_process_in(root: &Path) -> Result<(), String> {
    let started = Instant::now();
    while !processes_in(root).is_empty() {
        if started.elapsed() > Duration::from_secs(10) {
            return Err(format!("processes still running in the workspace: {:?}", processes_in(root)));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// What the records on disk say, worked out here without chapter 10.
#[derive(Debug, PartialEq)]
enum Expected {
    /// No session record on disk: nothing to show or resume.
    NoSession,
    /// A session record, but no user message yet.
    New,
    Unknown(BTreeSet<String>),
    /// Read-only calls (read_file, list_files, search) that started: no effect, no question.
    ReadsInterrupted(BTreeSet<String>),
    NotRun(BTreeSet<String>),
    WaitingForModel,
    Completed,
}

fn expected_state(records: &[Value]) -> Expected {
    if records.first().is_none_or(|first| first["type"] != "session") {
        return Expected::NoSession;
    }
    let mut open: Vec<(String, bool)> = Vec::new();
    let mut read_only: BTreeSet<String> = BTreeSet::new();
    for record in records {
        let id = || record["id"].as_str().unwrap_or_default().to_string();
        match record["type"].as_str().unwrap_or_default() {
            "assistant" => {
                for call in record["tool_calls"].as_array().into_iter().flatten() {
                    let id = call["id"].as_str().unwrap_or_default().to_string();
                    if matches!(call["name"].as_str(), Some("read_file" | "list_files" | "search")) {
                        read_only.insert(id.clone());
                    }
                    open.push((id, false));
                }
            }
            "tool_started" => {
                open.iter_mut().filter(|(open_id, _)| *open_id == id()).for_each(|c| c.1 = true)
            }
            "tool_finished" => open.retain(|(open_id, _)| *open_id != id()),
            _ => {}
        }
    }
    let started: BTreeSet<String> = open.iter().filter(|c| c.1).map(|c| c.0.clone()).collect();
    let (reads, started): (BTreeSet<String>, BTreeSet<String>) =
        started.into_iter().partition(|id| read_only.contains(id));
    if !started.is_empty() {
        return Expected::Unknown(started);
    }
    if !reads.is_empty() {
        return Expected::ReadsInterrupted(reads);
    }
    if !open.is_empty() {
        return Expected::NotRun(open.into_iter().map(|c| c.0).collect());
    }
    let last = records.iter().rev().find(|r| {
        matches!(r["type"].as_str(), Some("user" | "assistant" | "tool_finished" | "interrupted" | "error"))
    });
    if last.is_none() {
        return Expected::New;
    }
    match last {
        Some(r) if r["type"] == "assistant" && r["tool_calls"].as_array().is_none_or(Vec::is_empty) => {
            Expected::Completed
        }
        _ => Expected::WaitingForModel,
    }
}

/// The figures the test prints, and every failure with the point it happened at.
#[derive(Default)]
struct Tally {
    points: usize,
    observed: BTreeSet<String>,
    corrupted: usize,
    ran_twice: usize,
    misclassified: usize,
    torn_tails: usize,
    unknown_outcome_points: usize,
    /// Line kills (no offset) whose journal held exactly the aimed-at line count.
    landed_exactly: usize,
    line_kills: usize,
    caught_before_exec: usize,
    failures: Vec<String>,
}

/// What one kill point found.
#[derive(Default)]
struct Findings {
    corrupted: bool,
    ran_twice: usize,
    misclassified: Vec<String>,
    other: Vec<String>,
    torn_tail: bool,
    unknown: bool,
    signature: String,
    lines_at_kill: usize,
    caught_before_exec: bool,
}

fn check_point(point: &KillPoint, reference: &[String]) -> Findings {
    let mut found = Findings::default();
    let workspace = TempDir::new("selfcheck");
    let root = workspace.path().to_path_buf();
    if !run_and_kill(&root, point) {
        found.other.push("the agent finished before the kill point".into());
        return found;
    }
    // A power cut tears the record being written: half of it, no newline.
    if point.power_cut
        && let Some((path, bytes)) = journal_bytes(&root)
        && bytes.ends_with(b"\n")
        && let Some(next) = reference.get(complete_lines(&bytes))
    {
        let mut torn = bytes;
        torn.extend_from_slice(&next.as_bytes()[..next.len() / 2]);
        std::fs::write(&path, torn).expect("tear the journal's tail");
    }

    // The journal opens, with at most a torn tail.
    let on_disk = journal_bytes(&root);
    let records: Vec<Value> = match &on_disk {
        None => Vec::new(),
        Some((path, bytes)) => {
            found.torn_tail = !bytes.is_empty() && !bytes.ends_with(b"\n");
            match read_journal(path) {
                Ok(loaded) => {
                    if loaded.warning.is_some() != found.torn_tail {
                        found.corrupted = true;
                        found
                            .other
                            .push(format!("torn tail {} but warning {:?}", found.torn_tail, loaded.warning));
                    }
                    bytes
                        .split(|&b| b == b'\n')
                        .take(complete_lines(bytes))
                        .map(|line| serde_json::from_slice(line).unwrap_or(Value::Null))
                        .collect()
                }
                Err(error) => {
                    found.corrupted = true;
                    found.other.push(format!("the journal does not open: {error}"));
                    return found;
                }
            }
        }
    };
    if records.iter().any(Value::is_null) {
        found.corrupted = true;
        found.other.push("a complete line is not JSON".into());
    }
    found.lines_at_kill = records.len();
    let expected = expected_state(&records);
    found.unknown = matches!(expected, Expected::Unknown(_));
    let finished: BTreeSet<String> = records
        .iter()
        .filter(|r| r["type"] == "tool_finished")
        .filter_map(|r| r["id"].as_str().map(str::to_string))
        .collect();
    let started: BTreeSet<String> = records
        .iter()
        .filter(|r| r["type"] == "tool_started")
        .filter_map(|r| r["id"].as_str().map(str::to_string))
        .collect();

    // --status says what the records say.
    // A kill right after a fork can leave a child that has not exec'd yet and so still
    // shares the session's lock; it is gone a moment later. (A command that keeps running
    // after its exec holds nothing, and is left running on purpose: resuming must cope.)
    match wait_for_children_to_exec(&root) {
        Ok(caught) => found.caught_before_exec = caught,
        Err(error) => found.other.push(error),
    }
    let status = Test::new().args(["-c", "--status"]).run_in(workspace);
    let all_calls: Vec<ScriptedCall> = script().into_iter().flatten().collect();
    let said = &status.stdout;
    let state_ok = match &expected {
        Expected::NoSession => status.code == Some(1),
        Expected::Unknown(ids) => {
            status.code == Some(0)
                && said.contains(&format!("state    unknown outcome: {}", calls_count(ids.len())))
                && said.contains("--acknowledge-unknown")
                && all_calls.iter().all(|call| said.contains(&call.described()) == ids.contains(call.id))
        }
        Expected::ReadsInterrupted(ids) => {
            status.code == Some(0)
                && said
                    .contains(&format!("state    stopped during {} that only read", calls_count(ids.len())))
                && all_calls.iter().all(|call| said.contains(&call.described()) == ids.contains(call.id))
        }
        Expected::NotRun(ids) => {
            status.code == Some(0)
                && said.contains(&format!("state    stopped before running {}", calls_count(ids.len())))
                && all_calls.iter().all(|call| said.contains(&call.described()) == ids.contains(call.id))
        }
        Expected::WaitingForModel => {
            status.code == Some(0) && said.contains("state    waiting for the model")
        }
        Expected::Completed => status.code == Some(0) && said.contains("state    completed"),
        Expected::New => status.code == Some(0) && said.contains("state    new: no messages yet"),
    };
    if !state_ok {
        found.misclassified.push(format!("--status for {expected:?}:\n{said}{}", status.stderr));
    }
    if found.torn_tail && status.code == Some(0) && !said.contains("was cut off mid-write") {
        found.misclassified.push(format!("--status did not warn about the torn tail:\n{said}"));
    }

    // Resuming without --acknowledge-unknown is refused exactly when an outcome is unknown.
    let plain = Test::new()
        .args(["-c", "-p", "continue", "--allow-write", "--allow-shell"])
        .server(vec![text("resumed")])
        .run_in(status.workspace);
    let refused = plain.code == Some(1) && plain.requests.is_empty();
    let mut workspace = plain.workspace;
    match &expected {
        Expected::NoSession => {
            if !refused {
                found.misclassified.push(format!("resumed a session with no records: {}", plain.stderr));
            }
        }
        Expected::Unknown(_) => {
            if !(refused
                && plain.stderr.contains("unknown outcome")
                && plain.stderr.contains("--acknowledge-unknown"))
            {
                found.misclassified.push(format!("an unknown outcome did not block: {}", plain.stderr));
            }
            let acknowledged = Test::new()
                .args(["-c", "-p", "continue", "--allow-write", "--allow-shell", "--acknowledge-unknown"])
                .server(vec![text("resumed")])
                .run_in(workspace);
            if acknowledged.code != Some(0) {
                found.other.push(format!("acknowledged resume failed: {}", acknowledged.stderr));
            }
            workspace = acknowledged.workspace;
        }
        Expected::New
        | Expected::ReadsInterrupted(_)
        | Expected::NotRun(_)
        | Expected::WaitingForModel
        | Expected::Completed => {
            if plain.code != Some(0) {
                found.misclassified.push(format!("resume refused for {expected:?}: {}", plain.stderr));
            }
        }
    }

    // After the resume: nothing ran again, open calls were answered as the rules say.
    let root = workspace.path().to_path_buf();
    if expected != Expected::NoSession {
        let after: Vec<Value> = journal_bytes(&root)
            .map(|(_, bytes)| {
                String::from_utf8_lossy(&bytes)
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
                    .collect()
            })
            .unwrap_or_default();
        let mut starts: BTreeMap<String, usize> = BTreeMap::new();
        for record in after.iter().filter(|r| r["type"] == "tool_started") {
            *starts.entry(record["id"].as_str().unwrap_or_default().to_string()).or_default() += 1;
        }
        found.ran_twice += starts.values().filter(|&&n| n > 1).count();
        if starts.len() != started.len() {
            found.other.push(format!("the resume started tools: {starts:?} vs {started:?}"));
        }
        let synthetic = |status: &str| -> BTreeSet<String> {
            after[records.len().min(after.len())..]
                .iter()
                .filter(|r| r["type"] == "tool_finished" && r["status"] == status)
                .filter_map(|r| r["id"].as_str().map(str::to_string))
                .collect()
        };
        let (unknown, not_run) = (synthetic("unknown"), synthetic("not_run"));
        let wanted_unknown = match &expected {
            Expected::Unknown(ids) => ids.clone(),
            _ => BTreeSet::new(),
        };
        if unknown != wanted_unknown {
            found.misclassified.push(format!("unknown results {unknown:?}, expected {wanted_unknown:?}"));
        }
        if let Expected::ReadsInterrupted(ids) = &expected
            && &synthetic("interrupted") != ids
        {
            found
                .misclassified
                .push(format!("interrupted results {:?}, expected {ids:?}", synthetic("interrupted")));
        }
        if let Expected::NotRun(ids) = &expected
            && &not_run != ids
        {
            found.misclassified.push(format!("not-run results {not_run:?}, expected {ids:?}"));
        }
        if expected_state(&after) != Expected::Completed {
            found.other.push(format!("not completed after the resume: {:?}", expected_state(&after)));
        }
    }

    // The counter: every command at most once, exactly once when its end was recorded,
    // and never without a `tool_started` on disk before it.
    if let Err(error) = wait_until_no_process_in(&root) {
        found.other.push(error);
    }
    let counter = std::fs::read_to_string(root.join("runs.log")).unwrap_or_default();
    for call in &all_calls {
        let Some(name) = call.counter_name() else { continue };
        let runs = counter.lines().filter(|line| *line == name).count();
        if runs > 1 {
            found.ran_twice += 1;
        }
        if finished.contains(call.id) && runs != 1 {
            found.misclassified.push(format!("{name} recorded as finished but ran {runs} times"));
        }
        if runs > 0 && !started.contains(call.id) {
            found.misclassified.push(format!("{name} ran without a tool_started on disk"));
        }
    }
    found.signature = format!(
        "{} lines, torn {}, runs {:?}",
        records.len(),
        found.torn_tail,
        counter.lines().collect::<Vec<_>>()
    );
    found
}

fn calls_count(n: usize) -> String {
    if n == 1 { "1 tool call".into() } else { format!("{n} tool calls") }
}

/// One uninterrupted run: the journal lines every kill point is planned from.
fn reference_journal() -> Vec<String> {
    let workspace = TempDir::new("selfcheck");
    let server = slow_server(0);
    let status = agent_command(workspace.path(), &server.url).status().expect("run mini-agent");
    assert!(status.success(), "the script runs to the end: {status:?}");
    let (_, bytes) = journal_bytes(workspace.path()).expect("a journal");
    let lines: Vec<String> = String::from_utf8(bytes).expect("UTF-8").lines().map(str::to_string).collect();
    let counter = std::fs::read_to_string(workspace.path().join("runs.log")).unwrap_or_default();
    assert_eq!(counter, "b1\nb2\nb3\nb4\n");
    assert_eq!(
        expected_state(
            &lines.iter().map(|l| serde_json::from_str(l).unwrap_or_default()).collect::<Vec<_>>()
        ),
        Expected::Completed
    );
    lines
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test selfcheck -- --ignored)"]
fn sigkill_at_every_point_leaves_a_journal_that_tells_the_truth() {
    let started = Instant::now();
    let reference = reference_journal();
    let points = kill_points(&reference);
    assert!(points.len() >= 100, "only {} kill points", points.len());
    let threads: usize =
        std::env::var("MINI_AGENT_CRASH_THREADS").ok().and_then(|n| n.parse().ok()).unwrap_or(4).max(1);
    let next = AtomicUsize::new(0);
    let tally = Mutex::new(Tally::default());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(point) = points.get(index) else { break };
                    let found = check_point(point, &reference);
                    let mut tally = tally.lock().expect("tally lock");
                    tally.points += 1;
                    tally.observed.insert(found.signature.clone());
                    tally.corrupted += usize::from(found.corrupted);
                    tally.ran_twice += found.ran_twice;
                    tally.misclassified += found.misclassified.len();
                    tally.torn_tails += usize::from(found.torn_tail);
                    tally.unknown_outcome_points += usize::from(found.unknown);
                    tally.caught_before_exec += usize::from(found.caught_before_exec);
                    if point.offset_ms == 0 && !point.power_cut {
                        tally.line_kills += 1;
                        tally.landed_exactly += usize::from(found.lines_at_kill == point.after_lines);
                    }
                    for problem in found.misclassified.iter().chain(&found.other) {
                        tally.failures.push(format!("{}: {problem}", point.what));
                    }
                    if found.ran_twice > 0 {
                        tally.failures.push(format!("{}: a tool ran twice", point.what));
                    }
                }
            });
        }
    });
    let tally = tally.into_inner().expect("tally lock");
    eprintln!(
        "crash test: {} kill points ({} distinct states on disk, {} with unknown outcomes, {} torn tails; {} of {} line kills landed exactly on their line; children caught between fork and exec at {} kills) in {:.1} s; \
         corrupted journals {}, tools run twice {}, misclassified outcomes {}",
        tally.points,
        tally.observed.len(),
        tally.unknown_outcome_points,
        tally.torn_tails,
        tally.landed_exactly,
        tally.line_kills,
        tally.caught_before_exec,
        started.elapsed().as_secs_f64(),
        tally.corrupted,
        tally.ran_twice,
        tally.misclassified
    );
    assert!(tally.failures.is_empty(), "{} failures:\n{}", tally.failures.len(), tally.failures.join("\n"));
    assert_eq!((tally.corrupted, tally.ran_twice, tally.misclassified), (0, 0, 0));
    assert!(tally.unknown_outcome_points > 0, "no kill landed inside a tool run");
}
