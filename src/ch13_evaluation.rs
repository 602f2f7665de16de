//! Chapter 13 — evaluation: scenarios stored as data, run against the real binary.
//!
//! Unit tests check pieces; an evaluation checks the *agent*: the binary a user runs, with
//! its argument parser, model client, tools, journal and exit codes, doing a whole task.
//! Against a real model that would be slow, paid for and different every time, so here the
//! model is the scripted server of this chapter: each scenario says which replies it sends
//! (text, tool calls, error statuses, SSE streams finished or cut, a request never answered),
//! runs `mini-agent` in a fresh temporary workspace, maybe interrupts or kills it, and then
//! compares what happened with what it expected. The same scenario gives the same result on
//! every machine, so a failure means the code changed, not the weather.
//!
//! **What "passed" asserts:** for every run, the exit code (a process that dies of a signal
//! fails, unless it is the scenario's own SIGKILL); the files named (exact content, or
//! absent); the tools the agent started, in order (from the journal's `tool_started`
//! records, or, when a build keeps no journal, from the tool results it sent back); the
//! number of model requests; substrings of stdout, stderr, the tool results and the first
//! request; and, always, that every request the binary sent is well formed — each tool call
//! answered exactly once, right after its assistant message, in order (an API rejects
//! anything else) — and that the journal kept its promises: every line a record (a torn
//! last line only after a kill) and no tool call started twice. **What it cannot assert:**
//! that a real model would behave like the script. The script plays the model; the scenario
//! tests everything *around* the model — the part that must be dependable whatever the
//! model does. Whether the agent solves real tasks well is a question for a different kind
//! of evaluation, with real models and many samples.
//!
//! # The scenario format
//!
//! One JSON file per scenario in `selfcheck/scenarios/`:
//!
//! ```text
//! {
//!   "name": "edit_fails_then_succeeds",
//!   "description": "what it shows (optional)",
//!   "files": {"notes.txt": "hello world\n"},          // the workspace before the first run
//!   "runs": [{
//!     "args": ["--allow-write", "-p", "fix the greeting"],   // --base-url is added
//!     "stdin": "text for -p -",                      // optional; otherwise stdin is empty
//!     "env": {"MINI_AGENT_REQUEST_MAX_RETRIES": "1"},  // optional
//!     "steps": [                                     // one per model request, in order
//!       {"tool_calls": [{"name": "edit_file", "arguments": {"path": "notes.txt", …}}]},
//!       {"text": "Done."},
//!       {"error": {"status": 429, "message": "slow down", "headers": {"Retry-After": "0"}}},
//!       {"stream": {"text": "Hi", "tool_calls": [], "finish": false, "delay_ms": 5}},
//!       "hang", "close"
//!     ],
//!     "signal": {"signal": "INT", "after_requests": 1, "delay_ms": 100},
//!            // or {"signal": "KILL", "when_file": "started.txt", "delay_ms": 0}
//!     "timeout_ms": 15000,                           // optional; the run is killed after it
//!     "expect": {
//!       "exit": 0,                                   // 137: killed by the scenario's SIGKILL
//!       "files": {"notes.txt": "hello there\n", "gone.txt": null},
//!       "tools": ["edit_file", "edit_file"],         // tools started during this run
//!       "requests": 3,                               // model requests during this run
//!       "stdout_contains": ["Done."], "stderr_contains": [],
//!       "stdout_json_lines": false,                  // true: each stdout line is JSON
//!       "tool_results_contain": ["not found"],       // in some tool result sent back
//!       "first_request_contains": []                 // in the first request's messages
//!     }
//!   }]
//! }
//! ```
//!
//! (The `//` notes are for this page; the files are plain JSON.) Tool-call arguments are
//! JSON objects, or a string sent exactly as written (to test invalid JSON). Each tool call
//! gets a unique id. A request beyond the last step is answered with a 500, so a scenario
//! also fails when the agent asks the model more often than the script expects. Runs share
//! the workspace, so a second run can continue the first one's session with `-c`.

use crate::ch01_loop::Error;
use crate::ch13_scripted_server::{ScriptedServer, Step};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Where `mini-agent eval` looks when no directory is given.
pub const DEFAULT_SCENARIO_DIR: &str = "selfcheck/scenarios";

/// A run that takes longer than this is killed and fails (scenarios can say otherwise).
const DEFAULT_RUN_TIMEOUT_MS: u64 = 15_000;

/// How often the runner looks at the child, the server and the workspace.
const POLL: Duration = Duration::from_millis(5);

/// How long the output of an ended run may still take to arrive (see [`collect`]).
const OUTPUT_GRACE: Duration = Duration::from_millis(500);

// ANCHOR: format
/// One scenario file: a workspace, then one or more runs of the binary in it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Relative path → content, written before the first run.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    pub runs: Vec<Run>,
}

/// One invocation of the binary, the model replies it will get, and what must follow.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    pub args: Vec<String>,
    #[serde(default)]
    pub stdin: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub steps: Vec<ScriptStep>,
    #[serde(default)]
    pub signal: Option<SignalPlan>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    pub expect: Expect,
}

/// How the scripted model answers one request.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ScriptStep {
    Text(String),
    ToolCalls(Vec<CallSpec>),
    Error(ErrorSpec),
    Stream(StreamSpec),
    /// Accept the request and never answer.
    Hang,
    /// Close the connection without a response.
    Close,
}
// ANCHOR_END: format

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    pub name: String,
    /// An object (sent as its JSON text) or a string (sent exactly as written).
    pub arguments: Value,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorSpec {
    pub status: u16,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Sent instead of the JSON error body (an HTML page from a proxy, say).
    #[serde(default)]
    pub body: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSpec {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<CallSpec>,
    /// `false` cuts the stream: no finish reason, no `[DONE]`, and the last tool call's
    /// arguments stop half-way.
    #[serde(default = "yes")]
    pub finish: bool,
    #[serde(default)]
    pub delay_ms: u64,
}

fn yes() -> bool {
    true
}

/// A signal sent to the binary once something has happened, then `delay_ms` later.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalPlan {
    pub signal: SignalName,
    /// Once the server has received this many requests during the run…
    #[serde(default)]
    pub after_requests: Option<usize>,
    /// …or once this file exists in the workspace (a tool created it).
    #[serde(default)]
    pub when_file: Option<String>,
    #[serde(default)]
    pub delay_ms: u64,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum SignalName {
    /// Ctrl+C: the agent should stop cleanly with exit code 130.
    #[serde(rename = "INT")]
    Interrupt,
    /// A crash or power cut: the process gets no chance to react.
    #[serde(rename = "KILL")]
    Kill,
}

// ANCHOR: expect
/// What must be true after a run. Everything but `exit` is checked only when given.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub exit: i32,
    /// Relative path → exact content, or `null` for "must not exist".
    #[serde(default)]
    pub files: BTreeMap<String, Option<String>>,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub requests: Option<usize>,
    /// Every line of stdout is a JSON object (`--json`).
    #[serde(default)]
    pub stdout_json_lines: bool,
    #[serde(default)]
    pub stdout_contains: Vec<String>,
    #[serde(default)]
    pub stderr_contains: Vec<String>,
    #[serde(default)]
    pub tool_results_contain: Vec<String>,
    #[serde(default)]
    pub first_request_contains: Vec<String>,
}
// ANCHOR_END: expect

impl SignalName {
    fn number(self) -> i32 {
        match self {
            SignalName::Interrupt => 2,
            SignalName::Kill => 9,
        }
    }
}

/// Reads every `*.json` file of `dir`, in name order. A malformed file is an error that
/// names it, so a typo in a scenario never passes silently.
pub fn load_scenarios(dir: &Path) -> Result<Vec<Scenario>, Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Error::io(
            format!(
                "reading the scenario directory {} (pass another one: mini-agent eval DIR)",
                dir.display()
            ),
            e,
        )
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(Error::Config(format!("no scenarios (*.json) in {}", dir.display())));
    }
    paths.iter().map(|path| load_scenario(path)).collect()
}

pub fn load_scenario(path: &Path) -> Result<Scenario, Error> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let scenario: Scenario = serde_json::from_str(&text)
        .map_err(|e| Error::Config(format!("scenario {}: {e}", path.display())))?;
    check_scenario(&scenario)
        .map_err(|problem| Error::Config(format!("scenario {}: {problem}", path.display())))?;
    Ok(scenario)
}

/// The rules JSON cannot express.
fn check_scenario(scenario: &Scenario) -> Result<(), String> {
    if scenario.runs.is_empty() {
        return Err("it has no runs".into());
    }
    for (index, run) in scenario.runs.iter().enumerate() {
        let number = index + 1;
        if let Some(plan) = &run.signal
            && plan.after_requests.is_some() == plan.when_file.is_some()
        {
            return Err(format!("run {number}: a signal needs exactly one of after_requests and when_file"));
        }
        let paths = scenario
            .files
            .keys()
            .chain(run.expect.files.keys())
            .chain(run.signal.iter().filter_map(|p| p.when_file.as_ref()));
        for path in paths {
            if Path::new(path).is_absolute() || path.split('/').any(|part| part == "..") || path.is_empty() {
                return Err(format!("run {number}: '{path}' must be a relative path inside the workspace"));
            }
        }
    }
    Ok(())
}

// ANCHOR: script
/// Turns a scenario's steps into server steps. Tool-call ids are unique across the whole
/// scenario (`call_<run>_<step>_<n>`), so answers can be matched to calls; the map
/// remembers each id's tool name.
fn server_steps(run_index: usize, steps: &[ScriptStep], names: &mut HashMap<String, String>) -> Vec<Step> {
    steps
        .iter()
        .enumerate()
        .map(|(step_index, step)| {
            let mut ids = |calls: &[CallSpec]| -> Vec<(String, String, String)> {
                calls
                    .iter()
                    .enumerate()
                    .map(|(n, call)| {
                        let id = format!("call_{run_index}_{step_index}_{n}");
                        names.insert(id.clone(), call.name.clone());
                        (id, call.name.clone(), arguments_text(&call.arguments))
                    })
                    .collect()
            };
            match step {
                ScriptStep::Text(text) => Step::text(text),
                ScriptStep::ToolCalls(calls) => {
                    let calls: Vec<Value> = ids(calls)
                        .into_iter()
                        .map(|(id, name, arguments)| {
                            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
                        })
                        .collect();
                    Step::message(json!({"role": "assistant", "content": null, "tool_calls": calls}))
                }
                ScriptStep::Error(spec) => {
                    let mut error = json!({"message": spec.message, "type": "error"});
                    if let Some(code) = &spec.code {
                        error["code"] = json!(code);
                    }
                    let headers = spec.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    let body = spec.body.clone().unwrap_or_else(|| json!({"error": error}).to_string());
                    Step::Reply { status: spec.status, headers, body }
                }
                ScriptStep::Stream(spec) => {
                    let calls = ids(&spec.tool_calls);
                    Step::Stream { chunks: stream_chunks(spec.text.as_deref(), &calls, spec.finish), delay_ms: spec.delay_ms, finish: spec.finish }
                }
                ScriptStep::Hang => Step::Hang,
                ScriptStep::Close => Step::Close,
            }
        })
        .collect()
}
// ANCHOR_END: script

fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The SSE chunks a real server would send: text word by word, each tool call as a first
/// fragment with id and name and then its arguments in two halves, then the finish reason
/// and the usage — or, for a stream to be cut, nothing after half the last arguments.
fn stream_chunks(text: Option<&str>, calls: &[(String, String, String)], finish: bool) -> Vec<String> {
    let chunk = |delta: Value, finish_reason: Value| {
        json!({"id": "scripted", "object": "chat.completion.chunk", "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})
        .to_string()
    };
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    for piece in text.unwrap_or_default().split_inclusive(' ') {
        chunks.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let first = json!({"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}});
        chunks.push(chunk(json!({"tool_calls": [first]}), Value::Null));
        let middle =
            arguments.char_indices().nth(arguments.chars().count() / 2).map_or(arguments.len(), |(at, _)| at);
        for half in [&arguments[..middle], &arguments[middle..]] {
            let fragment = json!({"index": index, "function": {"arguments": half}});
            chunks.push(chunk(json!({"tool_calls": [fragment]}), Value::Null));
        }
    }
    if !finish {
        // Cut where it hurts most: half-way through the last call's arguments.
        if !calls.is_empty() {
            chunks.pop();
        }
        return chunks;
    }
    {
        let reason = if calls.is_empty() { "stop" } else { "tool_calls" };
        chunks.push(chunk(json!({}), json!(reason)));
        chunks.push(
            json!({"id": "scripted", "object": "chat.completion.chunk", "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
            .to_string(),
        );
    }
    chunks
}

/// What one run did, as seen from outside the binary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    pub ending: Ending,
    pub stdout: String,
    pub stderr: String,
    /// The expected files as found: content, or `None` when absent.
    pub files: BTreeMap<String, Option<String>>,
    /// The tools started during the run, in order, and where that was read.
    pub tools: Vec<String>,
    pub tools_witness: ToolsWitness,
    /// The request bodies the server received during the run.
    pub requests: Vec<Value>,
    /// Broken promises of the session journal (see [`journal_problems`]).
    pub journal_problems: Vec<String>,
}

/// How the process ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    /// A signal ended it: SIGKILL when the scenario sent one, anything else is a failure
    /// (an agent catches Ctrl+C and exits with 130 after recording it).
    Signalled(i32),
    /// It outlived its timeout and was killed by the runner.
    #[default]
    TimedOut,
}

impl Ending {
    /// The shell's way of saying it: the exit code, or 128+N for signal N.
    pub fn code(self) -> Option<i32> {
        match self {
            Ending::Exited(code) => Some(code),
            Ending::Signalled(signal) => Some(128 + signal),
            Ending::TimedOut => None,
        }
    }
}

/// Where the list of tools a run started comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolsWitness {
    /// The `tool_started` records of the session journal: every tool that began, even one
    /// that was killed or denied before it could answer.
    #[default]
    Journal,
    /// No journal was written (an early build): the tool calls answered in the requests,
    /// which misses a call whose answer was never sent (the turn limit, a kill).
    Requests,
}

// ANCHOR: compare
/// Every way `observed` differs from `expect`, one line each; empty means the run passed.
pub fn compare(expect: &Expect, observed: &Observed) -> Vec<String> {
    let mut differences = Vec::new();
    let kill = SignalName::Kill.number();
    match observed.ending {
        Ending::TimedOut => differences.push("the run did not end in time and was killed".to_string()),
        Ending::Exited(code) if code == expect.exit => {}
        Ending::Exited(code) => differences.push(format!("exit: expected {}, got {code}", expect.exit)),
        Ending::Signalled(signal) if signal == kill && expect.exit == 128 + kill => {}
        Ending::Signalled(signal) => differences.push(format!(
            "exit: expected {}, got killed by signal {signal} (a signal it should have handled, or did not expect)",
            expect.exit
        )),
    }
    for (path, wanted) in &expect.files {
        let found = observed.files.get(path).cloned().flatten();
        if &found != wanted {
            differences.push(format!(
                "file {path}: expected {}, got {}",
                shown(wanted.as_deref()),
                shown(found.as_deref())
            ));
        }
    }
    if let Some(tools) = &expect.tools
        && &observed.tools != tools
    {
        let witness = match observed.tools_witness {
            ToolsWitness::Journal => "from the journal",
            ToolsWitness::Requests => "from the answers sent; no journal was written",
        };
        differences.push(format!("tools ({witness}): expected {tools:?}, got {:?}", observed.tools));
    }
    if let Some(count) = expect.requests
        && observed.requests.len() != count
    {
        differences.push(format!("model requests: expected {count}, got {}", observed.requests.len()));
    }
    let missing = |label: &str, haystack: &str, needles: &[String], differences: &mut Vec<String>| {
        for needle in needles.iter().filter(|needle| !haystack.contains(needle.as_str())) {
            differences
                .push(format!("{label}: expected to contain {needle:?}, got {}", shown(Some(haystack))));
        }
    };
    if expect.stdout_json_lines
        && let Some((number, line)) = observed
            .stdout
            .lines()
            .enumerate()
            .find(|(_, line)| !serde_json::from_str::<Value>(line).is_ok_and(|v| v.is_object()))
    {
        differences.push(format!("stdout line {} is not a JSON object: {}", number + 1, shown(Some(line))));
    }
    missing("stdout", &observed.stdout, &expect.stdout_contains, &mut differences);
    missing("stderr", &observed.stderr, &expect.stderr_contains, &mut differences);
    let results = tool_results(&observed.requests).join("\n");
    missing("tool results", &results, &expect.tool_results_contain, &mut differences);
    let first = observed.requests.first().map(message_texts).unwrap_or_default();
    missing("first request", &first, &expect.first_request_contains, &mut differences);
    for (index, request) in observed.requests.iter().enumerate() {
        if let Err(problem) = check_tool_answers(request) {
            differences.push(format!("request {}: {problem}", index + 1));
        }
    }
    differences.extend(observed.journal_problems.iter().map(|problem| format!("journal: {problem}")));
    differences
}
// ANCHOR_END: compare

// ANCHOR: tool_answers
/// The invariant every Chat Completions request must keep: an assistant message's tool
/// calls are answered by tool messages right after it, one per call, in the same order,
/// and no tool message answers anything else.
pub fn check_tool_answers(request: &Value) -> Result<(), String> {
    let messages = request["messages"].as_array().ok_or("the request has no messages array")?;
    let mut index = 0;
    while index < messages.len() {
        let message = &messages[index];
        index += 1;
        match message["role"].as_str() {
            Some("assistant") => {
                let calls = message["tool_calls"].as_array().map(Vec::as_slice).unwrap_or_default();
                for call in calls {
                    let id = call["id"].as_str().unwrap_or_default();
                    let answer = messages.get(index);
                    let answered =
                        answer.filter(|m| m["role"] == "tool").and_then(|m| m["tool_call_id"].as_str());
                    if answered != Some(id) {
                        return Err(format!(
                            "tool call {id} is not answered next, in order (found {})",
                            answered.unwrap_or("no tool result")
                        ));
                    }
                    index += 1;
                }
            }
            Some("tool") => {
                return Err(format!(
                    "tool result {} answers no call just before it",
                    message["tool_call_id"]
                ));
            }
            _ => {}
        }
    }
    Ok(())
}
// ANCHOR_END: tool_answers

/// The text of every message of a request, one after the other, as the model reads it.
fn message_texts(request: &Value) -> String {
    let messages = request["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
    messages.iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n")
}

/// The content of every tool result in these requests, each once.
fn tool_results(requests: &[Value]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut results = Vec::new();
    for message in requests.iter().filter_map(|r| r["messages"].as_array()).flatten() {
        if message["role"] == "tool" && seen.insert(message.to_string()) {
            results.push(message["content"].as_str().unwrap_or_default().to_string());
        }
    }
    results
}

fn shown(text: Option<&str>) -> String {
    match text {
        None => "(absent)".into(),
        Some(text) if text.chars().count() > 160 => {
            let cut: String = text.chars().take(160).collect();
            format!("{cut:?}…")
        }
        Some(text) => format!("{text:?}"),
    }
}

/// One attempt at a whole scenario.
struct Attempt {
    /// `None` when it passed; else which run failed and how.
    failure: Option<String>,
    requests: usize,
    elapsed: Duration,
    /// With `verbose`: each run's exit code, stdout and stderr.
    transcript: String,
}

// ANCHOR: run_eval
/// Runs every scenario in `dir` `repeats` times against `binary`, prints a table on stdout
/// — scenario, passed/N, turns (the model requests of all its runs), median milliseconds —
/// then what differed for each failure, and says whether everything passed. With
/// `verbose`, each run's exit code, stdout and stderr are shown too.
pub fn run_eval(binary: &Path, dir: &Path, repeats: usize, verbose: bool) -> Result<bool, Error> {
    run_eval_to(&mut std::io::stdout().lock(), binary, dir, repeats, verbose)
}

fn run_eval_to(
    out: &mut dyn Write,
    binary: &Path,
    dir: &Path,
    repeats: usize,
    verbose: bool,
) -> Result<bool, Error> {
    let scenarios = load_scenarios(dir)?;
    // Each run starts in its own workspace, so a relative path would no longer lead here.
    let binary = &binary
        .canonicalize()
        .map_err(|e| Error::io(format!("finding the binary to evaluate, {}", binary.display()), e))?;
    let repeats = repeats.max(1);
    let width = scenarios.iter().map(|s| s.name.chars().count()).max().unwrap_or(8).max(8);
    let print = |out: &mut dyn Write, line: String| {
        // A closed stdout (| head) must not stop the evaluation; the result still counts.
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    };
    print(out, format!("{:<width$}  {:>7}  {:>5}  {:>6}", "scenario", "passed", "turns", "ms"));
    let mut failures = Vec::new();
    for scenario in &scenarios {
        let mut attempts = Vec::new();
        for _ in 0..repeats {
            attempts.push(attempt(binary, scenario, verbose)?);
        }
        for attempt in attempts.iter().filter(|a| !a.transcript.is_empty()) {
            print(out, attempt.transcript.trim_end().to_string());
        }
        let passed = attempts.iter().filter(|a| a.failure.is_none()).count();
        let mut times: Vec<Duration> = attempts.iter().map(|a| a.elapsed).collect();
        times.sort();
        let turns = attempts.last().map_or(0, |a| a.requests);
        let median = times[times.len() / 2].as_millis();
        let mark = if passed == repeats { "" } else { "  FAIL" };
        print(
            out,
            format!(
                "{:<width$}  {:>7}  {turns:>5}  {median:>6}{mark}",
                scenario.name,
                format!("{passed}/{repeats}")
            ),
        );
        // The first failure is shown; the passed/N column says how often it happened.
        if let Some(failure) = attempts.iter().find_map(|a| a.failure.clone()) {
            failures.push((scenario.name.clone(), failure));
        }
    }
    for (name, failure) in &failures {
        print(out, format!("\n{name}: {failure}"));
    }
    let passed = scenarios.len() - failures.len();
    print(out, format!("\n{passed} of {} scenarios passed", scenarios.len()));
    Ok(failures.is_empty())
}
// ANCHOR_END: run_eval

/// Runs a scenario once in a fresh workspace, which is removed afterwards.
fn attempt(binary: &Path, scenario: &Scenario, verbose: bool) -> Result<Attempt, Error> {
    let workspace = TempWorkspace::new(&scenario.name)?;
    let started = Instant::now();
    let mut requests = 0;
    let mut transcript = String::new();
    let mut names = HashMap::new();
    for (path, content) in &scenario.files {
        let full = workspace.path.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::io(format!("creating {}", parent.display()), e))?;
        }
        std::fs::write(&full, content).map_err(|e| Error::io(format!("writing {}", full.display()), e))?;
    }
    for (index, run) in scenario.runs.iter().enumerate() {
        let observed = run_once(binary, &workspace.path, index, run, &mut names)?;
        requests += observed.requests.len();
        if verbose {
            transcript.push_str(&format!(
                "--- {} run {} ({}): exit {}\n{}{}",
                scenario.name,
                index + 1,
                run.args.join(" "),
                observed.ending.code().map_or("none (timed out)".to_string(), |code| code.to_string()),
                observed.stdout,
                observed.stderr
            ));
        }
        let differences = compare(&run.expect, &observed);
        if !differences.is_empty() {
            let stderr_tail: Vec<&str> =
                observed.stderr.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect();
            let failure = format!(
                "run {} ({}) differed:\n  - {}\n  stderr ends: {}",
                index + 1,
                run.args.join(" "),
                differences.join("\n  - "),
                stderr_tail.join(" | ")
            );
            return Ok(Attempt { failure: Some(failure), requests, elapsed: started.elapsed(), transcript });
        }
    }
    Ok(Attempt { failure: None, requests, elapsed: started.elapsed(), transcript })
}

// ANCHOR: run_once
/// One run: a scripted server, the binary in the workspace, the signal if any, and what
/// could be seen afterwards.
fn run_once(
    binary: &Path,
    root: &Path,
    index: usize,
    run: &Run,
    names: &mut HashMap<String, String>,
) -> Result<Observed, Error> {
    let server = ScriptedServer::scripted(server_steps(index, &run.steps, names))
        .map_err(|e| Error::io("starting the scripted model server", e))?;
    let journal_before = journal_records(root);
    let mut command = Command::new(binary);
    if !run.args.iter().any(|arg| arg == "--demo") {
        command.args(["--base-url", &server.url]);
    }
    command
        .args(&run.args)
        .current_dir(root)
        // The scenario decides everything the binary sees: no key, no endpoint, no model
        // from the environment of whoever runs the evaluation.
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("MODEL_ID")
        .env_remove("MINI_AGENT_REQUEST_MAX_RETRIES")
        .env("NO_COLOR", "1")
        .envs(&run.env)
        .stdin(if run.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    without_terminal(&mut command);
    let mut child = command.spawn().map_err(|e| Error::io(format!("starting {}", binary.display()), e))?;
    if let (Some(text), Some(mut stdin)) = (run.stdin.clone(), child.stdin.take()) {
        thread::spawn(move || stdin.write_all(text.as_bytes()));
    }
    let stdout = collect(child.stdout.take());
    let stderr = collect(child.stderr.take());
    let ending = wait(&mut child, run, root, &server)?;
    let mut observed = Observed {
        ending,
        stdout: finish_collecting(stdout),
        stderr: finish_collecting(stderr),
        files: BTreeMap::new(),
        tools: Vec::new(),
        tools_witness: ToolsWitness::Journal,
        requests: server.requests(),
        journal_problems: journal_problems(root, ending == Ending::Signalled(SignalName::Kill.number())),
    };
    drop(server);
    for path in run.expect.files.keys() {
        observed.files.insert(path.clone(), std::fs::read_to_string(root.join(path)).ok());
    }
    let journal_after = journal_records(root);
    if journal_after.is_empty() {
        observed.tools = tools_answered(&observed.requests, index, names);
        observed.tools_witness = ToolsWitness::Requests;
    } else {
        observed.tools = tools_started_since(&journal_before, &journal_after);
    }
    Ok(observed)
}
// ANCHOR_END: run_once

/// Waits for the child, sends the planned signal when its moment comes, and kills the
/// child if it outlives its timeout.
fn wait(child: &mut Child, run: &Run, root: &Path, server: &ScriptedServer) -> Result<Ending, Error> {
    let deadline = Instant::now() + Duration::from_millis(run.timeout_ms.unwrap_or(DEFAULT_RUN_TIMEOUT_MS));
    let mut signal = run.signal.clone();
    let mut send_at: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| Error::io("waiting for the binary", e))? {
            use std::os::unix::process::ExitStatusExt;
            return Ok(match (status.code(), status.signal()) {
                (Some(code), _) => Ending::Exited(code),
                (None, Some(signal)) => Ending::Signalled(signal),
                (None, None) => Ending::TimedOut,
            });
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Ending::TimedOut);
        }
        if let Some(plan) = &signal {
            let ready = match (&plan.after_requests, &plan.when_file) {
                (Some(count), _) => server.request_count() >= *count,
                (None, Some(path)) => root.join(path).exists(),
                (None, None) => true,
            };
            if ready && send_at.is_none() {
                send_at = Some(Instant::now() + Duration::from_millis(plan.delay_ms));
            }
            if send_at.is_some_and(|at| Instant::now() >= at) {
                send_signal(child.id(), plan.signal.number());
                signal = None;
            }
        }
        thread::sleep(POLL);
    }
}

/// Starts the child in a session of its own, with no controlling terminal. Otherwise an
/// evaluation started from a terminal would let the agent open `/dev/tty` and ask the
/// person at the keyboard whether a write is allowed — and the answer would depend on them.
fn without_terminal(command: &mut Command) {
    crate::ch03_tools::in_new_session(command);
}

fn send_signal(pid: u32, signal: i32) {
    if let Ok(pid) = i32::try_from(pid) {
        crate::ch03_tools::send_signal(pid, signal);
    }
}

/// Reads a pipe to its end on a thread. The result is taken with a grace period, because a
/// process the agent started and that outlived it (a killed agent's `sleep`) may hold the
/// pipe open long after the agent is gone.
fn collect(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            let _ = sender.send(bytes);
        });
    }
    receiver
}

fn finish_collecting(receiver: mpsc::Receiver<Vec<u8>>) -> String {
    let bytes = receiver.recv_timeout(OUTPUT_GRACE).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

// ANCHOR: journal
/// Every journal record under `<root>/.mini_agent/sessions/`, per file in name order (a
/// run writes to one session, so the order between files never decides a result). The
/// evaluation reads the documented format from outside (one JSON object per line) rather
/// than through the journal's own reader: it checks the contract, not the code.
fn journal_records(root: &Path) -> Vec<(PathBuf, Vec<Value>)> {
    journal_paths(root)
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            // A torn last line (the process was killed mid-write) is not a record.
            let records = text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect();
            (path, records)
        })
        .collect()
}

/// What must hold for every journal after every run, whatever the scenario: each line is
/// a record (only a process killed mid-write may leave a torn last line, which the next
/// open cuts off), and no tool call was started twice — nothing is ever re-run.
fn journal_problems(root: &Path, killed: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let mut started = std::collections::HashSet::new();
    for path in journal_paths(root) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = text.split_terminator('\n').collect();
        for (number, line) in lines.iter().enumerate() {
            let record: Option<Value> =
                serde_json::from_str(line).ok().filter(|r: &Value| r["type"].is_string());
            match record {
                None if killed && number + 1 == lines.len() => {}
                None => problems.push(format!("{name} line {} is not a record", number + 1)),
                Some(record) if record["type"] == "tool_started" => {
                    let id = record["id"].as_str().unwrap_or_default().to_string();
                    if !started.insert(id.clone()) {
                        problems.push(format!(
                            "tool call {id} was started a second time ({name} line {})",
                            number + 1
                        ));
                    }
                }
                Some(_) => {}
            }
        }
    }
    problems
}
// ANCHOR_END: journal

/// The session files of the workspace, in name order.
fn journal_paths(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join(".mini_agent").join("sessions")) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries.filter_map(|entry| entry.ok().map(|e| e.path())).collect();
    paths.retain(|path| path.extension().is_some_and(|ext| ext == "jsonl"));
    paths.sort();
    paths
}

/// The names of the `tool_started` records written since `before`.
fn tools_started_since(before: &[(PathBuf, Vec<Value>)], after: &[(PathBuf, Vec<Value>)]) -> Vec<String> {
    after
        .iter()
        .flat_map(|(path, records)| {
            let seen = before.iter().find(|(p, _)| p == path).map_or(0, |(_, r)| r.len());
            records.iter().skip(seen)
        })
        .filter(|record| record["type"] == "tool_started")
        .filter_map(|record| record["name"].as_str().map(str::to_string))
        .collect()
}

/// Without a journal, the next best witness: the tool calls of this run that were answered
/// in the requests, in order of their first answer.
fn tools_answered(requests: &[Value], run_index: usize, names: &HashMap<String, String>) -> Vec<String> {
    let prefix = format!("call_{run_index}_");
    let mut seen = std::collections::HashSet::new();
    requests
        .iter()
        .filter_map(|r| r["messages"].as_array())
        .flatten()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["tool_call_id"].as_str())
        .filter(|id| id.starts_with(&prefix) && seen.insert(id.to_string()))
        .filter_map(|id| names.get(id).cloned())
        .collect()
}

/// A fresh directory under the system temp dir, removed when dropped.
struct TempWorkspace {
    path: PathBuf,
}

impl TempWorkspace {
    fn new(label: &str) -> Result<Self, Error> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let safe: String =
            label.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).take(40).collect();
        let name = format!(
            "mini-agent-eval-{}-{}-{nanos}-{safe}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path)
            .map_err(|e| Error::io(format!("creating the workspace {}", path.display()), e))?;
        // The agent canonicalizes its root; so do we, so paths compare equal.
        let path = path.canonicalize().map_err(|e| Error::io(format!("resolving {}", path.display()), e))?;
        Ok(TempWorkspace { path })
    }
}

impl Drop for TempWorkspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ch01_loop::{Event, Observer, Reply, ToolCall};
    use crate::ch11_streaming::StreamAssembler;

    fn scenario_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_SCENARIO_DIR)
    }

    #[test]
    fn every_scenario_file_parses_and_names_are_unique() {
        let scenarios = load_scenarios(&scenario_dir()).expect("the shipped scenarios load");
        assert!(scenarios.len() >= 12, "the issue asks for at least 12 scenarios, found {}", scenarios.len());
        let mut names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), scenarios.len(), "two scenarios share a name");
        for scenario in &scenarios {
            let mut ids = HashMap::new();
            for (index, run) in scenario.runs.iter().enumerate() {
                assert_eq!(server_steps(index, &run.steps, &mut ids).len(), run.steps.len());
            }
        }
    }

    #[test]
    fn a_typo_or_an_impossible_signal_is_rejected_with_the_file_named() {
        let dir = TempWorkspace::new("malformed").expect("temp dir");
        let typo = r#"{"name": "x", "runs": [{"args": [], "expect": {"exit": 0, "stdout_contain": ["a"]}}]}"#;
        std::fs::write(dir.path.join("typo.json"), typo).expect("write");
        let error = load_scenarios(&dir.path).expect_err("unknown field").to_string();
        assert!(error.contains("typo.json") && error.contains("stdout_contain"), "{error}");

        let both = r#"{"name": "x", "runs": [{"args": [], "expect": {"exit": 0},
            "signal": {"signal": "INT", "after_requests": 1, "when_file": "f"}}]}"#;
        std::fs::write(dir.path.join("typo.json"), both).expect("write");
        let error = load_scenarios(&dir.path).expect_err("two triggers").to_string();
        assert!(error.contains("exactly one of after_requests and when_file"), "{error}");

        let outside =
            r#"{"name": "x", "files": {"../escape": ""}, "runs": [{"args": [], "expect": {"exit": 0}}]}"#;
        std::fs::write(dir.path.join("typo.json"), outside).expect("write");
        let error = load_scenarios(&dir.path).expect_err("path outside").to_string();
        assert!(error.contains("'../escape' must be a relative path"), "{error}");
    }

    fn request(messages: Value) -> Value {
        json!({"model": "m", "messages": messages})
    }

    fn answered_pair() -> Value {
        request(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "file text"},
            {"role": "tool", "tool_call_id": "b", "content": "[exit code 0]"}
        ]))
    }

    #[test]
    fn tool_answers_must_follow_their_calls_once_and_in_order() {
        assert_eq!(check_tool_answers(&answered_pair()), Ok(()));
        let mut swapped = answered_pair();
        swapped["messages"].as_array_mut().expect("array").swap(2, 3);
        assert_eq!(
            check_tool_answers(&swapped),
            Err("tool call a is not answered next, in order (found b)".into())
        );
        let mut missing = answered_pair();
        missing["messages"].as_array_mut().expect("array").pop();
        assert_eq!(
            check_tool_answers(&missing),
            Err("tool call b is not answered next, in order (found no tool result)".into())
        );
        let mut twice = answered_pair();
        twice["messages"]
            .as_array_mut()
            .expect("array")
            .push(json!({"role": "tool", "tool_call_id": "b", "content": "again"}));
        assert_eq!(
            check_tool_answers(&twice),
            Err("tool result \"b\" answers no call just before it".into())
        );
    }

    fn passing() -> (Expect, Observed) {
        let expect = Expect {
            exit: 0,
            files: BTreeMap::from([("a.txt".into(), Some("hi\n".into())), ("gone".into(), None)]),
            tools: Some(vec!["read_file".into(), "bash".into()]),
            requests: Some(1),
            stdout_json_lines: false,
            stdout_contains: vec!["Done".into()],
            stderr_contains: vec!["→ bash".into()],
            tool_results_contain: vec!["exit code 0".into()],
            first_request_contains: vec!["go".into()],
        };
        let observed = Observed {
            ending: Ending::Exited(0),
            stdout: "Done.\n".into(),
            stderr: "→ read_file a.txt ✓\n→ bash ls ✓\n".into(),
            files: BTreeMap::from([("a.txt".into(), Some("hi\n".into())), ("gone".into(), None)]),
            tools: vec!["read_file".into(), "bash".into()],
            tools_witness: ToolsWitness::Journal,
            requests: vec![answered_pair()],
            journal_problems: Vec::new(),
        };
        (expect, observed)
    }

    #[test]
    fn a_run_that_matches_passes_and_each_difference_is_one_line() {
        let (expect, observed) = passing();
        assert_eq!(compare(&expect, &observed), Vec::<String>::new());

        let mut wrong = observed.clone();
        wrong.ending = Ending::Exited(1);
        wrong.files.insert("a.txt".into(), None);
        wrong.files.insert("gone".into(), Some("back".into()));
        wrong.tools = vec!["bash".into()];
        wrong.stdout = "Nope".into();
        wrong.requests.push(request(json!([{"role": "tool", "tool_call_id": "x", "content": ""}])));
        assert_eq!(
            compare(&expect, &wrong),
            [
                "exit: expected 0, got 1",
                "file a.txt: expected \"hi\\n\", got (absent)",
                "file gone: expected (absent), got \"back\"",
                "tools (from the journal): expected [\"read_file\", \"bash\"], got [\"bash\"]",
                "model requests: expected 1, got 2",
                "stdout: expected to contain \"Done\", got \"Nope\"",
                "request 2: tool result \"x\" answers no call just before it",
            ]
        );
    }

    #[test]
    fn json_lines_output_is_checked_line_by_line() {
        let (mut expect, mut observed) = passing();
        expect.stdout_json_lines = true;
        expect.stdout_contains = vec!["read_file".into()];
        observed.stdout =
            "{\"type\":\"tool_started\",\"name\":\"read_file\"}\n{\"type\":\"exit\",\"code\":0}\n".into();
        assert_eq!(compare(&expect, &observed), Vec::<String>::new());
        observed.stdout.push_str("Done.\n");
        assert_eq!(compare(&expect, &observed), ["stdout line 3 is not a JSON object: \"Done.\""]);
    }

    #[test]
    fn a_killed_or_timed_out_run_says_so() {
        let (mut expect, mut observed) = passing();
        observed.ending = Ending::TimedOut;
        assert_eq!(compare(&expect, &observed), ["the run did not end in time and was killed"]);
        expect.exit = 137;
        observed.ending = Ending::Signalled(9);
        assert_eq!(compare(&expect, &observed), Vec::<String>::new());
        // Dying of Ctrl+C is not the same as catching it and exiting with 130.
        expect.exit = 130;
        observed.ending = Ending::Signalled(2);
        assert_eq!(
            compare(&expect, &observed),
            [
                "exit: expected 130, got killed by signal 2 (a signal it should have handled, or did not expect)"
            ]
        );
    }

    struct Ignore;
    impl Observer for Ignore {
        fn event(&mut self, _: Event) -> Result<(), Error> {
            Ok(())
        }
    }

    fn assemble(chunks: &[String]) -> StreamAssembler {
        let mut assembler = StreamAssembler::default();
        for chunk in chunks {
            assembler.apply(chunk, &mut Ignore).expect("a valid chunk");
        }
        assembler
    }

    #[test]
    fn scripted_streams_assemble_into_the_reply_they_describe_and_cut_ones_do_not() {
        let calls =
            vec![("call_0_0_0".to_string(), "write_file".to_string(), r#"{"path":"é.txt"}"#.to_string())];
        let assembler = assemble(&stream_chunks(Some("Writing it now."), &calls, true));
        assert!(assembler.is_complete());
        let reply = assembler.into_reply().expect("a whole reply");
        let expected_call = ToolCall {
            id: "call_0_0_0".into(),
            name: "write_file".into(),
            arguments: r#"{"path":"é.txt"}"#.into(),
        };
        assert_eq!(
            reply,
            Reply {
                content: Some("Writing it now.".into()),
                tool_calls: vec![expected_call],
                usage: Some(crate::ch01_loop::Usage { prompt_tokens: 10, completion_tokens: 5 }),
                finish_reason: Some("tool_calls".into()),
            }
        );
        let cut = assemble(&stream_chunks(Some("Writing it now."), &calls, false));
        assert!(!cut.is_complete());
        assert_eq!(cut.partial_text(), "Writing it now.");
    }

    #[test]
    fn tools_started_are_read_from_the_journal_as_the_journal_writes_them() {
        use crate::ch05_sessions::{Append, Body, SessionStore};
        use crate::ch09_journal::Journal;
        let root = TempWorkspace::new("journal").expect("temp dir");
        let store = SessionStore::new(&root.path);
        let started = |name: &str| Body::ToolStarted {
            id: format!("id_{name}"),
            name: name.into(),
            arguments: "{}".into(),
        };
        let mut first = Journal::create(&store, "m").expect("a journal");
        first.append(started("bash")).expect("append");
        let before = journal_records(&root.path);
        first.append(started("read_file")).expect("append");
        first
            .append(Body::ToolFinished {
                id: "id_read_file".into(),
                status: crate::ch01_loop::ToolStatus::Ok,
                content: "x".into(),
            })
            .expect("append");
        assert_eq!(tools_started_since(&before, &journal_records(&root.path)), ["read_file"]);
        drop(first);
        let before = journal_records(&root.path);
        let mut second = Journal::create(&store, "m").expect("a second journal");
        second.append(started("edit_file")).expect("append");
        assert_eq!(tools_started_since(&before, &journal_records(&root.path)), ["edit_file"]);
        let mut everything = tools_started_since(&[], &journal_records(&root.path));
        everything.sort();
        assert_eq!(everything, ["bash", "edit_file", "read_file"]);
    }

    #[test]
    fn a_journal_with_a_torn_middle_or_a_tool_started_twice_is_a_difference() {
        let root = TempWorkspace::new("promises").expect("temp dir");
        let dir = root.path.join(".mini_agent").join("sessions");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let lines = [
            r#"{"seq":1,"type":"session"}"#,
            r#"{"seq":2,"type":"tool_started","id":"call_0_0_0","name":"bash"}"#,
            r#"{"seq":3,"ty"#,
            r#"{"seq":4,"type":"tool_started","id":"call_0_0_0","name":"bash"}"#,
            r#"{"seq":5,"type":"tool_fin"#,
        ];
        std::fs::write(dir.join("20261129-100000-abcd.jsonl"), lines.join("\n")).expect("write");
        assert_eq!(
            journal_problems(&root.path, false),
            [
                "20261129-100000-abcd.jsonl line 3 is not a record",
                "tool call call_0_0_0 was started a second time (20261129-100000-abcd.jsonl line 4)",
                "20261129-100000-abcd.jsonl line 5 is not a record",
            ]
        );
        // Only a killed process may leave a torn last line.
        assert_eq!(journal_problems(&root.path, true).len(), 2);
    }

    #[test]
    fn without_a_journal_the_answers_of_this_run_name_the_tools() {
        let names = HashMap::from([
            ("call_0_0_0".to_string(), "read_file".to_string()),
            ("call_1_0_0".to_string(), "bash".to_string()),
            ("call_1_1_0".to_string(), "search".to_string()),
        ]);
        let messages = json!([
            {"role": "tool", "tool_call_id": "call_0_0_0", "content": ""},
            {"role": "tool", "tool_call_id": "call_1_0_0", "content": ""}
        ]);
        let mut later = messages.clone();
        later
            .as_array_mut()
            .expect("array")
            .push(json!({"role": "tool", "tool_call_id": "call_1_1_0", "content": ""}));
        let requests = [request(messages), request(later)];
        assert_eq!(tools_answered(&requests, 1, &names), ["bash", "search"]);
        assert_eq!(tools_answered(&requests, 0, &names), ["read_file"]);
    }

    /// A stand-in binary: a shell script, so the runner's plumbing (arguments, stdin, exit
    /// codes, files, signals, timeouts) is tested without the agent.
    fn script(dir: &Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("fake-agent");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write the script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    fn run_with(body: &str, run: &str) -> (Observed, Vec<String>) {
        let bin = TempWorkspace::new("bin").expect("temp dir");
        let root = TempWorkspace::new("root").expect("temp dir");
        let run: Run = serde_json::from_str(run).expect("a valid run");
        let observed =
            run_once(&script(&bin.path, body), &root.path, 0, &run, &mut HashMap::new()).expect("ran");
        let differences = compare(&run.expect, &observed);
        (observed, differences)
    }

    #[test]
    fn the_runner_passes_arguments_and_stdin_and_sees_exit_code_output_and_files() {
        let (observed, differences) = run_with(
            r#"echo "args: $*"; read line; echo "stdin: $line" >&2; printf 'x\n' > made.txt; exit 3"#,
            r#"{"args": ["-p", "hi"], "stdin": "typed\n", "expect": {"exit": 3,
                "files": {"made.txt": "x\n", "other.txt": null},
                "stdout_contains": ["-p hi", "--base-url http://127.0.0.1:"],
                "stderr_contains": ["stdin: typed"], "requests": 0, "tools": []}}"#,
        );
        assert_eq!(differences, Vec::<String>::new(), "{observed:?}");
    }

    #[test]
    fn the_binary_has_no_terminal_to_ask_even_when_the_evaluation_has_one() {
        let (observed, differences) = run_with(
            "if (exec < /dev/tty) 2>/dev/null; then echo tty; else echo no-tty; fi",
            r#"{"args": [], "expect": {"exit": 0, "stdout_contains": ["no-tty"]}}"#,
        );
        assert_eq!(differences, Vec::<String>::new(), "{observed:?}");
    }

    #[test]
    fn the_runner_kills_when_the_file_appears_and_reports_signal_exit_codes() {
        let (observed, differences) = run_with(
            "touch ready; exec sleep 10",
            r#"{"args": [], "signal": {"signal": "KILL", "when_file": "ready"}, "expect": {"exit": 137}}"#,
        );
        assert_eq!(differences, Vec::<String>::new(), "{observed:?}");
        let (observed, differences) = run_with(
            "trap 'exit 130' INT; touch ready; while :; do sleep 0.01; done",
            r#"{"args": [], "signal": {"signal": "INT", "when_file": "ready", "delay_ms": 20}, "expect": {"exit": 130}}"#,
        );
        assert_eq!(differences, Vec::<String>::new(), "{observed:?}");
    }

    #[test]
    fn the_table_counts_passes_per_scenario_and_failures_say_what_differed() {
        let dir = TempWorkspace::new("scenarios").expect("temp dir");
        let scenario = |name: &str, exit: i32| {
            format!(
                r#"{{"name": "{name}", "runs": [{{"args": ["-p", "x"], "expect": {{"exit": {exit}, "stdout_contains": ["hello"]}}}}]}}"#
            )
        };
        std::fs::write(dir.path.join("a.json"), scenario("passes", 0)).expect("write");
        std::fs::write(dir.path.join("b.json"), scenario("fails", 5)).expect("write");
        let binary = script(&dir.path, "echo hello");
        let mut out = Vec::new();
        let all_passed = run_eval_to(&mut out, &binary, &dir.path, 2, false).expect("ran");
        let out = String::from_utf8(out).expect("utf-8");
        assert!(!all_passed, "{out}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("scenario") && lines[0].ends_with("ms"), "{out}");
        assert!(lines[1].starts_with("passes    ") && lines[1].contains(" 2/2 "), "{out}");
        assert!(
            lines[2].starts_with("fails     ") && lines[2].contains(" 0/2 ") && lines[2].ends_with("FAIL"),
            "{out}"
        );
        assert!(out.contains("fails: run 1 (-p x) differed:\n  - exit: expected 5, got 0\n"), "{out}");
        assert!(out.ends_with("1 of 2 scenarios passed\n"), "{out}");
    }

    #[test]
    fn a_run_that_never_ends_is_killed_at_its_timeout() {
        let (observed, differences) =
            run_with("exec sleep 10", r#"{"args": [], "timeout_ms": 200, "expect": {"exit": 0}}"#);
        assert_eq!(observed.ending, Ending::TimedOut);
        assert_eq!(differences, ["the run did not end in time and was killed"]);
    }
}
