//! What a run did, seen from outside the binary, compared with what the scenario expected:
//! one line per difference. Also the invariant every request must keep whatever the
//! scenario: each tool call answered exactly once, right after its assistant message.

use super::scenario::{Expect, SignalName};
use serde_json::Value;
use std::collections::BTreeMap;

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
// ANCHOR: compare_signature
/// Every way `observed` differs from `expect`, one line each; empty means the run passed.
pub fn compare(expect: &Expect, observed: &Observed) -> Vec<String> {
    // ANCHOR_END: compare_signature
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
pub(super) fn message_texts(request: &Value) -> String {
    let messages = request["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
    messages.iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n")
}

/// The content of every tool result in these requests, each once.
pub(super) fn tool_results(requests: &[Value]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut results = Vec::new();
    for message in requests.iter().filter_map(|r| r["messages"].as_array()).flatten() {
        if message["role"] == "tool" && seen.insert(message.to_string()) {
            results.push(message["content"].as_str().unwrap_or_default().to_string());
        }
    }
    results
}

pub(super) fn shown(text: Option<&str>) -> String {
    match text {
        None => "(absent)".into(),
        Some(text) if text.chars().count() > 160 => {
            format!("{:?}…", crate::text::take_chars(text, 160))
        }
        Some(text) => format!("{text:?}"),
    }
}
