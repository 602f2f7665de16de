//! The journal read from outside: one JSON object per line under `.mini_agent/sessions/`,
//! parsed here without the journal's own reader, so the evaluation checks the documented
//! contract rather than the code that writes it.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

// ANCHOR: journal
/// Every journal record under `<root>/.mini_agent/sessions/`, per file in name order (a
/// run writes to one session, so the order between files never decides a result). The
/// evaluation reads the documented format from outside (one JSON object per line) rather
/// than through the journal's own reader: it checks the contract, not the code.
pub(super) fn journal_records(root: &Path) -> Vec<(PathBuf, Vec<Value>)> {
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
// ANCHOR_END: journal

// ANCHOR: journal_problems
/// What must hold for every journal after every run, whatever the scenario: each line is
/// a record (only a process killed mid-write may leave a torn last line, which the next
/// open cuts off), and no tool call was started twice — nothing is ever re-run.
pub(super) fn journal_problems(root: &Path, killed: bool) -> Vec<String> {
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
// ANCHOR_END: journal_problems

/// The session files of the workspace, in name order.
pub(super) fn journal_paths(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join(".mini_agent").join("sessions")) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries.filter_map(|entry| entry.ok().map(|e| e.path())).collect();
    paths.retain(|path| path.extension().is_some_and(|ext| ext == "jsonl"));
    paths.sort();
    paths
}

/// The names of the `tool_started` records written since `before`.
pub(super) fn tools_started_since(
    before: &[(PathBuf, Vec<Value>)],
    after: &[(PathBuf, Vec<Value>)],
) -> Vec<String> {
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
pub(super) fn tools_answered(
    requests: &[Value],
    run_index: usize,
    names: &HashMap<String, String>,
) -> Vec<String> {
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
