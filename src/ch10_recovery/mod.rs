//! Chapter 10 — recovery.
//!
//! A journal written by chapter 9 can end anywhere: after a clean answer, after Ctrl+C, or
//! in the middle of a tool run when the machine lost power. This chapter reads the end of
//! the story and decides, without guessing, what may happen next.
//!
//! The hard case is a `tool_started` with no `tool_finished`: the command may have run to
//! the end, half-way, or not at all, and only the workspace knows. Running it again could
//! do the work twice (`git commit`, a migration, an `rm`), and telling the model it failed
//! could be a lie. So the agent **refuses to continue** and asks the user to look; once
//! they pass `--acknowledge-unknown`, the model is told exactly that — "unknown, the user
//! inspected the workspace" — in a synthetic result. A tool call the model asked for but
//! that never started is safe to answer "not run", and a read-only tool (`read_file`,
//! `list_files`, `search`) that started was merely interrupted: it changes nothing. Nothing is
//! ever re-run automatically.
//!
//! Everything here is a pure function of the records, so `--status` needs no key and sends
//! nothing, and the rules are tested without a disk or a model.

pub mod command_line;
mod journal_scan;

pub use command_line::{ACKNOWLEDGE_UNKNOWN, STATUS, register};

use crate::ch02_loop::{Error, Message, ToolCall, ToolStatus, describe_call, plural};
use crate::ch05_sessions::{Append, Body, Origin, Record, SessionError, replay, session_error, side_note};
use crate::ch07_context::{CompactionRecord, Recorded};
use crate::ch09_journal::{Journal, lock_holder_of};
use crate::ch09_trust::{check_recorded_root, journal_root, remove_leftover_temps};
use crate::text::{shorten, take_chars};
use std::fmt;
use std::path::{Path, PathBuf};

/// What the model reads for a call whose outcome is unknown, once the user acknowledged it.
pub(crate) const UNKNOWN_OUTCOME_RESULT: &str = "unknown outcome: mini-agent stopped while this tool was running, so it \
     may have finished, partly run or not run at all. It was not run again. The user inspected the workspace and \
     chose to continue: check the current state before relying on it.";

/// The tools that only read: they change nothing, so one that started and never finished
/// was simply interrupted. Its outcome is known (no effect), and resuming needs no one to look.
pub(crate) const READ_ONLY_TOOLS: [&str; 3] = ["read_file", "list_files", "search"];

/// What the model reads for a read-only call that the session stopped in the middle of.
pub(crate) const READ_ONLY_INTERRUPTED_RESULT: &str = "interrupted: the session stopped while this read-only tool ran; \
     it changes nothing, so nothing happened. Call it again if it is still needed.";

/// What the model reads for a call that never started.
pub(crate) const NOT_RUN_RESULT: &str = "not run: the session stopped before this tool call started, so nothing was \
     executed. Call it again if it is still needed.";

// ANCHOR: state
/// Where a session stopped, as `--status` tells it.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionState {
    /// No user message yet.
    New,
    /// The model answered without calling tools.
    Completed,
    /// The user pressed Ctrl+C.
    Interrupted,
    /// The next step was a model request (after a user line or tool results).
    WaitingForModel,
    /// The turn ended with this error.
    Failed(String),
    /// The model asked for these calls; none of them started. Resuming answers "not run".
    NotRun(Vec<ToolCall>),
    /// These calls started and never finished: resuming needs `--acknowledge-unknown`.
    UnknownOutcomes(Vec<ToolCall>),
    /// These read-only calls started and never finished: they changed nothing, and resuming
    /// answers them "interrupted".
    ReadsInterrupted(Vec<ToolCall>),
}

/// The tool calls that have no result yet, split by whether they started and, if they did,
/// whether they could have changed anything.
struct OpenCalls {
    unknown: Vec<ToolCall>,
    /// Read-only calls that started: interrupted, with no effect.
    interrupted: Vec<ToolCall>,
    not_run: Vec<ToolCall>,
}

// ANCHOR_END: state
// ANCHOR: open_calls
/// Follows every call from the assistant message that asked for it to its result, one
/// record at a time: `--status` reads a journal as a stream and never holds it whole.
#[derive(Default)]
struct CallTracker {
    // Few calls are open at any moment, so a list beats a map here.
    open: Vec<(ToolCall, bool)>,
}

impl CallTracker {
    fn see(&mut self, body: &Body) {
        let open = &mut self.open;
        match body {
            Body::Assistant { tool_calls, .. } => open.extend(tool_calls.iter().map(|c| (c.clone(), false))),
            Body::ToolStarted { id, name, arguments } => match open.iter_mut().find(|(c, _)| &c.id == id) {
                Some((_, started)) => *started = true,
                None => open.push((
                    ToolCall { id: id.clone(), name: name.clone(), arguments: arguments.clone() },
                    true,
                )),
            },
            Body::ToolFinished { id, .. } => open.retain(|(call, _)| &call.id != id),
            Body::System { .. } | Body::User { .. } | Body::Interrupted {} | Body::Error { .. } => {}
            side_note!() => {}
        }
    }

    /// The calls still open, split by whether they started and could have had an effect.
    fn open_calls(self) -> OpenCalls {
        let (started, never): (Vec<_>, Vec<_>) = self.open.into_iter().partition(|(_, started)| *started);
        let (interrupted, unknown): (Vec<_>, Vec<_>) = started
            .into_iter()
            .map(|(call, _)| call)
            .partition(|call| READ_ONLY_TOOLS.contains(&call.name.as_str()));
        OpenCalls { unknown, interrupted, not_run: never.into_iter().map(|(call, _)| call).collect() }
    }
}

fn open_calls(records: &[Record]) -> OpenCalls {
    let mut calls = CallTracker::default();
    records.iter().for_each(|record| calls.see(&record.body));
    calls.open_calls()
}

// ANCHOR_END: open_calls
// ANCHOR: state_of
/// Where the story stands after `body`, if it moved the conversation; retries, usage and
/// the like are side notes and say nothing.
fn moved_to(body: &Body) -> Option<SessionState> {
    match body {
        Body::User { .. } | Body::ToolFinished { .. } => Some(SessionState::WaitingForModel),
        Body::Assistant { tool_calls, .. } if tool_calls.is_empty() => Some(SessionState::Completed),
        Body::Assistant { .. } => Some(SessionState::WaitingForModel),
        Body::Interrupted {} => Some(SessionState::Interrupted),
        Body::Error { message } => Some(SessionState::Failed(message.clone())),
        Body::System { .. } | Body::ToolStarted { .. } => None,
        side_note!() => None,
    }
}
// ANCHOR_END: state_of

// ANCHOR: state_decide

/// Open calls decide first; otherwise the last record that moved the conversation does.
fn decide(open: OpenCalls, last_move: Option<SessionState>) -> SessionState {
    if !open.unknown.is_empty() {
        return SessionState::UnknownOutcomes(open.unknown);
    }
    if !open.interrupted.is_empty() {
        return SessionState::ReadsInterrupted(open.interrupted);
    }
    if !open.not_run.is_empty() {
        return SessionState::NotRun(open.not_run);
    }
    last_move.unwrap_or(SessionState::New)
}
// ANCHOR_END: state_decide

#[cfg(test)]
fn state_of(records: &[Record]) -> SessionState {
    decide(open_calls(records), records.iter().rev().find_map(|r| moved_to(&r.body)))
}

// ANCHOR: status
/// Everything `--status` prints.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionStatus {
    pub id: String,
    pub root: String,
    /// The model and where it lives, as recorded.
    pub origin: Origin,
    pub created: String,
    pub updated: String,
    pub records: usize,
    pub turns: usize,
    /// The first line of the last user message, at most 200 characters (all it shows).
    pub last_user_message: Option<String>,
    pub state: SessionState,
    /// The reader's warning about a torn last line, if any.
    pub warning: Option<String>,
    /// The pid of a mini-agent that has the session open right now: then the state is a
    /// snapshot of a turn in progress, not where it stopped.
    pub in_use_by: Option<u32>,
}

// ANCHOR_END: status
// ANCHOR: status_reader
/// What `--status` keeps while it reads a journal, one record at a time: the header, a few
/// counts, the calls still open and where the story last moved. Never the records
/// themselves, so a journal of any size costs one line of memory.
#[derive(Default)]
pub(crate) struct StatusReader {
    status: Option<SessionStatus>,
    calls: CallTracker,
    last_move: Option<SessionState>,
    /// Open calls past [`OPEN_CALLS_SHOWN`], counted and not kept.
    not_kept: usize,
}

impl StatusReader {
    pub(crate) fn see(&mut self, record: Record) {
        if let Some(state) = moved_to(&record.body) {
            self.last_move = Some(state);
        }
        let record = self.bounded(record);
        self.calls.see(&record.body);
        let Some(status) = &mut self.status else {
            // The first record must be the header; without one there is no session.
            self.status = first_status(record);
            return;
        };
        status.records += 1;
        status.updated = record.ts;
        if let Body::User { content } = record.body {
            status.turns += 1;
            status.last_user_message =
                Some(take_chars(content.lines().next().unwrap_or_default(), 200).into());
        }
    }
}
// ANCHOR_END: status_reader

impl StatusReader {
    /// A line too long to read (see `journal_scan.rs`): counted, and a user's line is named by its size.
    pub(crate) fn see_unread(&mut self, user: bool, bytes: u64) {
        let Some(status) = &mut self.status else { return };
        status.records += 1;
        if user {
            status.turns += 1;
            status.last_user_message = Some(format!("(a message of {bytes} bytes)"));
            self.last_move = Some(SessionState::WaitingForModel);
        }
    }

    pub(crate) fn finish(self) -> Result<SessionStatus, Error> {
        let mut status = self.status.ok_or_else(no_header)?;
        status.state = decide(self.calls.open_calls(), self.last_move);
        if self.not_kept > 0 {
            status.warning = Some(format!(
                "open tool calls past the first {OPEN_CALLS_SHOWN} are not shown (no journal mini-agent writes \
                 has that many)"
            ));
        }
        Ok(status)
    }

    /// What a status keeps of a record's calls: at most [`OPEN_CALLS_SHOWN`] open ones, each
    /// with only the arguments `describe_call` shows. A planted journal of a million unfinished
    /// calls must not cost a million calls of memory.
    fn bounded(&mut self, mut record: Record) -> Record {
        let room = OPEN_CALLS_SHOWN.saturating_sub(self.calls.open.len());
        match &mut record.body {
            Body::Assistant { tool_calls, .. } => {
                self.not_kept += tool_calls.len().saturating_sub(room);
                tool_calls.truncate(room);
                tool_calls.iter_mut().for_each(shown_only);
            }
            Body::ToolStarted { id, name, arguments } => {
                if !self.calls.open.iter().any(|(call, _)| &call.id == id) && room == 0 {
                    self.not_kept += 1;
                    record.body = Body::Interrupted {};
                } else {
                    let mut call =
                        ToolCall { id: id.clone(), name: name.clone(), arguments: std::mem::take(arguments) };
                    shown_only(&mut call);
                    (*name, *arguments) = (call.name, call.arguments);
                }
            }
            _ => {}
        }
        record
    }
}

// ANCHOR: status_fn
/// The status of a session, from its records (the first must be the `session` header).
pub fn status(records: &[Record]) -> Result<SessionStatus, Error> {
    let mut reader = StatusReader::default();
    records.iter().for_each(|record| reader.see(record.clone()));
    reader.finish()
}

/// Where a session stopped, in one word, for a list of sessions ([`status_of`] has the whole
/// story); a session another process holds is `in use`.
pub fn state_word(path: &std::path::Path) -> &'static str {
    let Ok(status) = status_of(path) else { return "unreadable" };
    // Another mini-agent is running it; this process's own session shows its state.
    if status.in_use_by.is_some_and(|pid| pid != std::process::id()) {
        return "in use";
    }
    match status.state {
        SessionState::New => "new",
        SessionState::Completed => "completed",
        SessionState::Interrupted | SessionState::ReadsInterrupted(_) => "interrupted",
        SessionState::WaitingForModel => "waiting",
        SessionState::Failed(_) => "failed",
        SessionState::NotRun(_) => "not run",
        SessionState::UnknownOutcomes(_) => "unknown",
    }
}

/// `--status`: reads the journal as a stream, without locking or changing it, so it also
/// works while another process runs the session.
pub fn status_of(path: &Path) -> Result<SessionStatus, Error> {
    let root = journal_root(path)?;
    let mut reader = StatusReader::default();
    let warning = journal_scan::read_records(path, &mut reader)?;
    let mut status = reader.finish().map_err(|e| in_file(path, e))?;
    check_recorded_root(path, &root, &status.root)?;
    status.warning =
        [warning, status.warning.take()].into_iter().flatten().reduce(|a, b| format!("{a}; {b}"));
    status.in_use_by = lock_holder_of(path);
    Ok(status)
}
// ANCHOR_END: status_fn

/// Open calls a status keeps; a real journal has at most a reply's worth (64) open.
const OPEN_CALLS_SHOWN: usize = 256;

/// `call` with only what `describe_call` shows of it, when it is large.
fn shown_only(call: &mut ToolCall) {
    if call.arguments.len() <= 4096 && call.name.len() <= 200 {
        return;
    }
    let arguments: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&call.arguments).unwrap_or_default();
    let kept: serde_json::Map<String, serde_json::Value> = ["command", "path", "pattern", "name"]
        .into_iter()
        .filter_map(|key| {
            Some((key.to_string(), crate::text::first_line(arguments.get(key)?.as_str()?, 200).into()))
        })
        .collect();
    call.arguments = serde_json::Value::Object(kept).to_string();
    call.name = take_chars(&call.name, 200).to_string();
}

fn first_status(record: Record) -> Option<SessionStatus> {
    let Body::Session { id, root, model, api, endpoint, created, .. } = record.body else { return None };
    Some(SessionStatus {
        id,
        root,
        origin: Origin { model, api, endpoint },
        created,
        updated: record.ts,
        records: 1,
        turns: 0,
        last_user_message: None,
        state: SessionState::New,
        warning: None,
        in_use_by: None,
    })
}

impl fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        writeln!(f, "session  {}", self.id)?;
        writeln!(f, "root     {}", self.root)?;
        writeln!(f, "model    {}", self.origin.model)?;
        match &self.origin.endpoint {
            Some(endpoint) => writeln!(f, "endpoint {endpoint} ({})", self.origin.api)?,
            None => writeln!(f, "endpoint not recorded (an older session): the current default is used")?,
        }
        writeln!(f, "created  {}", self.created)?;
        writeln!(f, "updated  {}", self.updated)?;
        writeln!(f, "turns    {} ({})", self.turns, plural(self.records, "record"))?;
        if let Some(line) = &self.last_user_message {
            writeln!(f, "last     {:?}", shorten(line.lines().next().unwrap_or_default(), 100))?;
        }
        if let Some(pid) = self.in_use_by {
            writeln!(f, "in use   by mini-agent pid {pid}: the state below is a turn in progress")?;
        }
        write!(f, "state    ")?;
        match &self.state {
            SessionState::New => writeln!(f, "new: no messages yet")?,
            SessionState::Completed => writeln!(f, "completed: the model answered")?,
            SessionState::Interrupted => writeln!(f, "interrupted by the user (Ctrl+C)")?,
            SessionState::WaitingForModel => {
                writeln!(f, "waiting for the model: resuming sends the next request")?
            }
            SessionState::Failed(message) => writeln!(f, "failed: {message}")?,
            SessionState::NotRun(calls) => {
                writeln!(
                    f,
                    "stopped before running {}; resuming answers them \"not run\":",
                    count(calls.len())
                )?;
                calls.iter().try_for_each(|call| writeln!(f, "           {}", describe_call(call)))?;
            }
            SessionState::ReadsInterrupted(calls) => {
                writeln!(
                    f,
                    "stopped during {} that only read (no effect); resuming answers them \"interrupted\":",
                    count(calls.len())
                )?;
                calls.iter().try_for_each(|call| writeln!(f, "           {}", describe_call(call)))?;
            }
            SessionState::UnknownOutcomes(calls) => {
                writeln!(f, "unknown outcome: {} started and never finished:", count(calls.len()))?;
                calls.iter().try_for_each(|call| writeln!(f, "           {}", describe_call(call)))?;
                writeln!(f, "         inspect the workspace, then resume with --acknowledge-unknown")?;
            }
        }
        if let Some(warning) = &self.warning {
            writeln!(f, "warning  {warning}")?;
        }
        Ok(())
    }
}

// ANCHOR: resume
/// How to continue a session: the records to append first, then the history to send.
#[derive(Clone, Debug, PartialEq)]
pub struct ResumePlan {
    pub id: String,
    /// The saved workspace root: a resumed session works where it started.
    pub root: PathBuf,
    /// The model and where it lives: what `-c`/`-r` use unless a flag says otherwise.
    pub origin: Origin,
    /// Synthetic `tool_finished` records (unknown / not run), in call order.
    pub append: Vec<Body>,
    /// The history to continue with, the appended results included.
    pub history: Vec<Message>,
    /// The latest compaction: what chapter 7 was sending in place of the oldest messages.
    /// The history above stays whole.
    pub compaction: Option<CompactionRecord>,
    /// What the user should hear: a torn last line cut off, temporary files removed.
    pub warning: Option<String>,
    /// What the session used before this run, as its file says: `/stats` counts it too.
    pub recorded: Recorded,
    /// The calls that did not end `ok`, as their `tool_finished` records say: the history
    /// keeps a result's text only, and chapter 19 marks these results `is_error`.
    pub failed: Vec<String>,
}

// ANCHOR_END: resume
// ANCHOR: prepare_resume
/// Decides how to continue. Unknown outcomes block unless `acknowledge_unknown`; no tool
/// is ever run again. Permissions are not part of a session: the caller grants them anew.
pub fn prepare_resume(records: &[Record], acknowledge_unknown: bool) -> Result<ResumePlan, Error> {
    let header = header(records)?;
    let open = open_calls(records);
    if !open.unknown.is_empty() && !acknowledge_unknown {
        let calls: Vec<String> = open.unknown.iter().map(describe_call).collect();
        let (has, outcome) = if calls.len() == 1 { ("has", "outcome") } else { ("have", "outcomes") };
        return Err(session_error(format!(
            "cannot resume {}: {} {has} an unknown {outcome} ({}); inspect the workspace, then rerun with \
             --acknowledge-unknown",
            header.id,
            count(calls.len()),
            calls.join(", ")
        )));
    }
    // Results must follow their assistant message in call order, and calls run in order,
    // so the unknown ones (started) come before the ones that never started.
    let result = |call: &ToolCall, status, text: &str| Body::ToolFinished {
        id: call.id.clone(),
        status,
        content: text.to_string(),
    };
    let append: Vec<Body> = (open
        .unknown
        .iter()
        .map(|c| result(c, ToolStatus::Unknown, UNKNOWN_OUTCOME_RESULT)))
    .chain(open.interrupted.iter().map(|c| result(c, ToolStatus::Interrupted, READ_ONLY_INTERRUPTED_RESULT)))
    .chain(open.not_run.iter().map(|c| result(c, ToolStatus::NotRun, NOT_RUN_RESULT)))
    .collect();
    let history = replay(records.iter().map(|r| &r.body).chain(&append));
    let compaction = records.iter().rev().find_map(|record| match &record.body {
        Body::Compaction { summary, replaces, elided } => Some(CompactionRecord {
            summary: summary.clone(),
            replaced: *replaces,
            elided: *elided,
            tokens_before: 0,
            tokens_after: 0,
            usage: None,
        }),
        _ => None,
    });
    Ok(ResumePlan {
        id: header.id.to_string(),
        root: PathBuf::from(header.root),
        origin: header.origin(),
        // read before `append` moves into the plan
        failed: failed_calls(records.iter().map(|r| &r.body).chain(&append)),
        append,
        history,
        compaction,
        warning: None,
        recorded: Recorded::of(records.iter().map(|r| &r.body)),
    })
}

// ANCHOR_END: prepare_resume
// ANCHOR: resume_open
/// Opens the journal at `path` for `-c` / `--resume`, checks it can continue, and appends
/// the synthetic results: the journal comes back locked, repaired and ready to record.
pub fn resume(path: &Path, acknowledge_unknown: bool) -> Result<(Journal, ResumePlan), Error> {
    let root = journal_root(path)?; // before anything is opened, locked or cut
    let (mut journal, loaded) = Journal::open(path)?;
    let mut plan = prepare_resume(&loaded.records, acknowledge_unknown).map_err(|e| in_file(path, e))?;
    check_recorded_root(path, &root, &plan.root.to_string_lossy())?;
    plan.root = root;
    for body in &plan.append {
        journal.append(body.clone())?;
    }
    let removed = remove_leftover_temps(&plan.root, &open_calls(&loaded.records).unknown);
    plan.warning = [loaded.warning, removed].into_iter().flatten().reduce(|a, b| format!("{a}; {b}"));
    Ok((journal, plan))
}
// ANCHOR_END: resume_open

/// The ids of the calls whose `tool_finished` status is not `ok` (chapter 19's `is_error`).
fn failed_calls<'a>(bodies: impl Iterator<Item = &'a Body>) -> Vec<String> {
    let failed = bodies.filter_map(|body| match body {
        Body::ToolFinished { id, status, .. } if *status != ToolStatus::Ok => Some(id.clone()),
        _ => None,
    });
    failed.collect()
}

struct Header<'a> {
    id: &'a str,
    root: &'a str,
    model: &'a str,
    api: &'a str,
    endpoint: Option<&'a str>,
}

impl Header<'_> {
    fn origin(&self) -> Origin {
        Origin {
            model: self.model.to_string(),
            api: self.api.to_string(),
            endpoint: self.endpoint.map(str::to_string),
        }
    }
}

fn header(records: &[Record]) -> Result<Header<'_>, Error> {
    match records.first().map(|r| &r.body) {
        Some(Body::Session { id, root, model, api, endpoint, .. }) => {
            Ok(Header { id, root, model, api, endpoint: endpoint.as_deref() })
        }
        _ => Err(no_header()),
    }
}

fn no_header() -> Error {
    session_error("the session has no session record (it stopped before its first write); start a new one")
}

fn in_file(path: &Path, error: Error) -> Error {
    match error.failure::<SessionError>() {
        Some(SessionError(text)) if text.starts_with("the session has no") => {
            session_error(format!("{}: {text}", path.display()))
        }
        _ => error,
    }
}

fn count(calls: usize) -> String {
    plural(calls, "tool call")
}

#[cfg(test)]
mod tests;
