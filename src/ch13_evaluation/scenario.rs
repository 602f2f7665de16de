//! The scenario format: one JSON file per scenario, read with `serde` into these types and
//! then checked for what JSON cannot say (a signal with no moment, an empty run). A scenario
//! that does not parse is an error naming its file, so a typo never passes silently.

use crate::ch02_loop::Error;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where `mini-agent eval` looks when no directory is given.
pub const DEFAULT_SCENARIO_DIR: &str = "selfcheck/scenarios";

/// A run that takes longer than this is killed and fails (scenarios can say otherwise).
pub(super) const DEFAULT_RUN_TIMEOUT_MS: u64 = 15_000;

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
// ANCHOR_END: format

// ANCHOR: format_steps
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
// ANCHOR_END: format_steps

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

pub(super) fn yes() -> bool {
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
    pub(super) fn number(self) -> i32 {
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
pub(super) fn check_scenario(scenario: &Scenario) -> Result<(), String> {
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
