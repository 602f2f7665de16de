//! Chapter 5 — sessions.
//!
//! A session **is** its file: `<root>/.mini_agent/sessions/<id>.jsonl`, one JSON record per
//! line, appended as things happen and never rewritten. Nothing else remembers a
//! conversation, so resuming one means reading the file back and *replaying* it into the
//! exact history the model was sent. Three decisions make that simple:
//!
//! * **Facts, not snapshots.** We record what happened (a user line, a reply, a tool that
//!   started, a tool that finished) rather than the whole history each time. Appending is
//!   cheap, and a crash can only lose the end of the story, never rewrite its middle.
//! * **Ids that sort by time** (`20261129-091500-7f3a`): "the latest session" is the largest
//!   file name, and a prefix such as `20261129-09` finds a session without opening files.
//! * **One observer.** The [`Recorder`] is just an [`Observer`] of the chapter-1 loop: the
//!   loop does not know that it is being written down.
//!
//! Records go to anything that can [`Append`] them: here a [`MemoryLog`], enough to test
//! the idea; chapter 9's journal writes them to the file, each one durable before the loop
//! goes on, and chapter 10 decides what to do with a session that stopped in the middle of
//! a tool.
//!
//! # The record format (version 1)
//!
//! Every line is one object `{"seq": n, "ts": "2026-11-29T09:15:00.123Z", "type": …, …}`.
//! `seq` counts from 1 within the file; `ts` is RFC 3339 in UTC. The types:
//!
//! | `type` | fields | meaning |
//! |---|---|---|
//! | `session` | `version`, `id`, `root`, `model`, `api`, `endpoint`, `created` | always the first record; `api` and `endpoint` say where the model lives (see [`Origin`]); `root` is a check, never an authority: the root is the directory whose `.mini_agent/sessions/` holds the file (chapter 9) |
//! | `system` | `content` | the system prompt as it was sent |
//! | `user` | `content` | a user message |
//! | `assistant` | `content` (string or null), `tool_calls` (`[{id, name, arguments}]`), `usage`? (`{prompt_tokens, completion_tokens}`) | a model reply, as sent by the model |
//! | `tool_started` | `id`, `name`, `arguments` | a tool is about to run (on disk before it runs) |
//! | `tool_finished` | `id`, `status` (`ok` `error` `denied` `interrupted` `not_run` `unknown`), `content` | its result, as the model reads it |
//! | `interrupted` | — | the user pressed Ctrl+C; the turn ended there |
//! | `compaction` | `summary`, `replaces`, `elided`? | see below |
//! | `retry` | `attempt`, `wait_ms`, `reason` | a failed request will be retried |
//! | `partial` | `content` | text of a stream that was cut off (never sent back to the model) |
//! | `error` | `message` | the turn failed with this error |
//! | `usage` | `prompt_tokens`, `completion_tokens` | token use not tied to one reply |
//!
//! A short session, as written (`ts` shortened):
//!
//! ```text
//! {"seq":1,"ts":"2026-11-29T09:15:00.123Z","type":"session","version":1,"id":"20261129-091500-7f3a","root":"/home/ada/project","model":"gpt-4o-mini","api":"openai","endpoint":"https://api.openai.com/v1","created":"2026-11-29T09:15:00.123Z"}
//! {"seq":2,"ts":"…","type":"system","content":"You are mini-agent, a coding agent…"}
//! {"seq":3,"ts":"…","type":"user","content":"run the tests"}
//! {"seq":4,"ts":"…","type":"assistant","content":null,"tool_calls":[{"id":"call_1","name":"bash","arguments":"{\"command\":\"cargo test\"}"}],"usage":{"prompt_tokens":812,"completion_tokens":19}}
//! {"seq":5,"ts":"…","type":"tool_started","id":"call_1","name":"bash","arguments":"{\"command\":\"cargo test\"}"}
//! {"seq":6,"ts":"…","type":"tool_finished","id":"call_1","status":"ok","content":"test result: ok. 3 passed"}
//! {"seq":7,"ts":"…","type":"assistant","content":"All 3 tests pass.","tool_calls":[]}
//! ```
//!
//! **Replay** rebuilds the history in file order: `system`, `user` and `assistant` records
//! become their messages, `tool_finished` becomes the tool result message; the other types
//! are facts for `--status` and `/stats` and add nothing to the history. A `compaction`
//! record is such a fact too: the history stays whole, and the record says that, from then
//! on, the first `replaces` messages after the system prompt are *sent* as one summary (and
//! the first `elided`, when present, with their large tool output cut short).
//! Chapter 7 owns that rule (`apply_compaction`); a resumed session restores the latest
//! compaction into it instead of replaying it here, so there is one rule, not two.

use crate::ch01_loop::{Error, Event, Message, Observer, ToolCall, ToolStatus, Usage};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Written into every `session` record; a reader refuses versions it does not know.
pub const FORMAT_VERSION: u32 = 1;

// ANCHOR: record
/// One line of a session file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub seq: u64,
    pub ts: String,
    #[serde(flatten)]
    pub body: Body,
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

/// What a record says. The `type` field of the line picks the variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Body {
    Session {
        version: u32,
        id: String,
        root: String,
        model: String,
        /// Absent in journals written before it was recorded: those spoke `openai`.
        #[serde(default = "default_api")]
        api: String,
        /// Absent in older journals: then a resumed session uses the current defaults.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        endpoint: Option<String>,
        created: String,
    },
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: Option<String>,
        tool_calls: Vec<ToolCall>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    ToolStarted {
        id: String,
        name: String,
        arguments: String,
    },
    ToolFinished {
        id: String,
        status: ToolStatus,
        content: String,
    },
    Interrupted {},
    Compaction {
        summary: String,
        replaces: usize,
        /// Messages after the system prompt sent with large tool output elided (chapter 7).
        #[serde(default, skip_serializing_if = "is_zero")]
        elided: usize,
    },
    Retry {
        attempt: u32,
        wait_ms: u64,
        reason: String,
    },
    Partial {
        content: String,
    },
    Error {
        message: String,
    },
    Usage {
        prompt_tokens: u64,
        completion_tokens: u64,
    },
}
// ANCHOR_END: record

// ANCHOR: origin
/// Where a session talks: its model, the wire format (`api`) and the endpoint, as the
/// `session` record keeps them so that `-c` and `--resume` go back to the same place.
/// The endpoint is recorded without credentials: no `user:password@`, no `key=` in the
/// query; the key itself lives in the environment and is never written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub model: String,
    pub api: String,
    /// The base URL, or [`DEMO_ENDPOINT`]; `None` when an older journal did not say.
    pub endpoint: Option<String>,
}

/// The endpoint recorded for the built-in demo model, whose port changes every run.
pub const DEMO_ENDPOINT: &str = "demo";
/// The only wire format so far: OpenAI's Chat Completions.
pub const OPENAI_API: &str = "openai";

impl Origin {
    /// The origin of a session about to start against `base_url` (credentials removed).
    pub fn new(model: &str, api: &str, base_url: &str) -> Origin {
        Origin { model: model.into(), api: api.into(), endpoint: Some(without_credentials(base_url)) }
    }
}

/// A model id alone: the origin of test and benchmark sessions.
impl From<&str> for Origin {
    fn from(model: &str) -> Origin {
        Origin { model: model.into(), api: OPENAI_API.into(), endpoint: None }
    }
}

fn default_api() -> String {
    OPENAI_API.into()
}

/// The one definition of a URL without its credentials lives with the other secrets.
pub use crate::ch03_tools::url_credentials::without_credentials;
// ANCHOR_END: origin

/// Anything records can be appended to: an in-memory list here, a durable journal in
/// chapter 9. Returns the `seq` the record was given.
pub trait Append {
    fn append(&mut self, body: Body) -> Result<u64, Error>;
}

/// Records kept in memory: what a test, or a caller that writes them elsewhere, appends to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryLog(pub Vec<Record>);

impl Append for MemoryLog {
    fn append(&mut self, body: Body) -> Result<u64, Error> {
        let seq = self.0.last().map_or(1, |last| last.seq + 1);
        self.0.push(Record { seq, ts: now_rfc3339(), body });
        Ok(seq)
    }
}

// ANCHOR: replay
/// Rebuilds the history exactly as it was last sent (or about to be sent) to the model.
pub fn replay<'a>(bodies: impl IntoIterator<Item = &'a Body>) -> Vec<Message> {
    let mut history = Vec::new();
    for body in bodies {
        match body {
            Body::System { content } => history.push(Message::System { content: content.clone() }),
            Body::User { content } => history.push(Message::User { content: content.clone() }),
            Body::Assistant { content, tool_calls, .. } => {
                history.push(Message::Assistant { content: content.clone(), tool_calls: tool_calls.clone() })
            }
            Body::ToolFinished { id, content, .. } => {
                history.push(Message::Tool { tool_call_id: id.clone(), content: content.clone() });
            }
            // Facts about the session that were never part of what the model reads. The loop
            // answers every pending tool call before it returns, so an interruption leaves a
            // valid history behind and needs no replay of its own.
            Body::Session { .. }
            | Body::Compaction { .. }
            | Body::ToolStarted { .. }
            | Body::Interrupted {}
            | Body::Retry { .. }
            | Body::Partial { .. }
            | Body::Error { .. }
            | Body::Usage { .. } => {}
        }
    }
    history
}

// ANCHOR_END: replay

// ANCHOR: recorder
/// Turns the loop's events into records. Each fact is written once: a tool result arrives
/// both as `ToolFinished` (with its status) and as `Message::Tool`; the first is recorded.
pub struct Recorder<A: Append> {
    log: A,
    /// Usage of the reply whose assistant message comes next.
    pending_usage: Option<Usage>,
    /// Tool results recorded from `ToolFinished`, awaiting their `Message::Tool`.
    finished: HashSet<String>,
}

// ANCHOR_END: recorder
impl<A: Append> Recorder<A> {
    pub fn new(log: A) -> Self {
        Recorder { log, pending_usage: None, finished: HashSet::new() }
    }

    /// Records a message the caller put in the history itself (the system prompt, the
    /// user's line before `run_turn`): the loop only announces what it appends.
    pub fn message(&mut self, message: &Message) -> Result<(), Error> {
        self.event(Event::Message(message))
    }

    /// The turn ended on Ctrl+C.
    pub fn interrupted(&mut self) -> Result<(), Error> {
        self.log.append(Body::Interrupted {}).map(drop)
    }

    /// The turn failed (or hit its limit); `message` is what the user was told.
    pub fn error(&mut self, message: &str) -> Result<(), Error> {
        self.log.append(Body::Error { message: message.to_string() }).map(drop)
    }

    pub fn log(&self) -> &A {
        &self.log
    }

    pub fn into_log(self) -> A {
        self.log
    }
}

// ANCHOR: recorder_events
impl<A: Append> Observer for Recorder<A> {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        let body = match event {
            Event::Message(Message::System { content }) => Body::System { content: content.clone() },
            Event::Message(Message::User { content }) => Body::User { content: content.clone() },
            Event::Message(Message::Assistant { content, tool_calls }) => Body::Assistant {
                content: content.clone(),
                tool_calls: tool_calls.clone(),
                usage: self.pending_usage.take(),
            },
            Event::Message(Message::Tool { tool_call_id, content }) => {
                if self.finished.remove(tool_call_id) {
                    return Ok(());
                }
                // A result nobody announced with `ToolFinished`: still part of the history.
                Body::ToolFinished {
                    id: tool_call_id.clone(),
                    status: ToolStatus::Ok,
                    content: content.clone(),
                }
            }
            Event::Reply(reply) => {
                self.pending_usage = reply.usage;
                return Ok(());
            }
            Event::ToolStarted(call) => Body::ToolStarted {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            },
            Event::ToolFinished(call, output) => {
                self.finished.insert(call.id.clone());
                Body::ToolFinished {
                    id: call.id.clone(),
                    status: output.status,
                    content: output.content.clone(),
                }
            }
            Event::Retry { attempt, wait_ms, reason } => {
                Body::Retry { attempt, wait_ms, reason: reason.to_string() }
            }
            Event::Compaction { summary, replaced, elided, usage, .. } => {
                let summary = summary.to_string();
                self.log.append(Body::Compaction { summary, replaces: replaced, elided })?;
                // The summary was a model call of its own: its tokens count too.
                match usage {
                    Some(Usage { prompt_tokens, completion_tokens }) => {
                        Body::Usage { prompt_tokens, completion_tokens }
                    }
                    None => return Ok(()),
                }
            }
            Event::Notice { kind: "partial", text } => Body::Partial { content: text.to_string() },
            // Requests, stream deltas and other notices are for the screen, not the record.
            Event::Request { .. } | Event::TextDelta(_) | Event::Notice { .. } => return Ok(()),
        };
        self.log.append(body).map(drop)
    }
}
// ANCHOR_END: recorder_events

// ANCHOR: ids
/// A session id for this instant: UTC date and time, then 4 hex digits counting the fraction
/// of that second in 65,536ths, so that ids sort by time even within one second (`-c` picks
/// the latest by sorting names). `salt` moves to the next value when that id is taken.
pub fn new_session_id(now: SystemTime, salt: u64) -> String {
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let (date, time) = civil_parts(since_epoch.as_secs());
    let fraction = (u64::from(since_epoch.subsec_nanos()) << 16) / 1_000_000_000;
    let suffix = (fraction + salt).min(0xffff);
    format!("{:04}{:02}{:02}-{:02}{:02}{:02}-{suffix:04x}", date.0, date.1, date.2, time.0, time.1, time.2)
}

/// Now as RFC 3339 in UTC with milliseconds: `2026-11-29T09:15:00.123Z`.
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

pub fn rfc3339(time: SystemTime) -> String {
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let ((year, month, day), (hour, minute, second)) = civil_parts(since_epoch.as_secs());
    let millis = since_epoch.subsec_millis();
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
}

type Date = (i64, u32, u32);
type Clock = (u64, u64, u64);

fn civil_parts(seconds: u64) -> (Date, Clock) {
    let days = (seconds / 86_400) as i64;
    let of_day = seconds % 86_400;
    (civil_from_days(days), (of_day / 3600, of_day / 60 % 60, of_day % 60))
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm: count in 400-year eras that start on March 1st, so the
/// leap day is the last day of the shifted year).
fn civil_from_days(days: i64) -> Date {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
// ANCHOR_END: ids

// ANCHOR: store
/// The sessions of one workspace root.
#[derive(Clone, Debug)]
pub struct SessionStore {
    root: PathBuf,
    dir: PathBuf,
}

/// One line of `/list`.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionSummary {
    pub id: String,
    pub path: PathBuf,
    pub created: String,
    pub first_prompt: Option<String>,
    pub user_turns: usize,
}

impl SessionStore {
    pub fn new(root: &Path) -> Self {
        SessionStore { root: root.to_path_buf(), dir: root.join(".mini_agent").join("sessions") }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// Creates a new, empty session file (0600, in a 0700 directory) under a fresh id.
    pub fn create_file(&self) -> Result<(String, PathBuf, File), Error> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| Error::io(format!("cannot create {}", self.dir.display()), e))?;
        for salt in 0..64 {
            let id = new_session_id(SystemTime::now(), salt);
            let path = self.path_of(&id);
            // `create_new` makes two processes starting in the same second pick different ids.
            match OpenOptions::new().read(true).append(true).create_new(true).mode(0o600).open(&path) {
                Ok(file) => return Ok((id, path, file)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(format!("cannot create {}", path.display()), e)),
            }
        }
        Err(Error::Session(format!("cannot find a free session id in {}", self.dir.display())))
    }

    // ANCHOR_END: store
    // ANCHOR: resolve
    /// Session ids of this root, oldest first (ids sort by time).
    pub fn ids(&self) -> Result<Vec<String>, Error> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(format!("cannot list {}", self.dir.display()), e)),
        };
        let mut ids: Vec<String> = entries
            .filter_map(|entry| entry.ok())
            .filter_map(|entry| entry.file_name().to_str()?.strip_suffix(".jsonl").map(str::to_string))
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// The session `-c` continues: the newest one that got a model reply. A start that
    /// failed (no key, a refused connection) or a REPL left at once leaves a session with no
    /// reply; skipping those keeps the last real conversation one `-c` away. When no session
    /// has a reply, the newest is taken; `-r ID` opens any of them.
    pub fn latest(&self) -> Result<PathBuf, Error> {
        let ids = self.ids()?;
        let Some(newest) = ids.last() else {
            return Err(Error::Session(format!(
                "no session to continue in {}; start one without -c",
                self.root.display()
            )));
        };
        let replied = ids.iter().rev().map(|id| self.path_of(id)).find(|path| got_a_reply(path));
        Ok(replied.unwrap_or_else(|| self.path_of(newest)))
    }

    /// `--resume` argument → journal path: a path to a file, an id, or a unique id prefix.
    pub fn resolve(&self, wanted: &str) -> Result<PathBuf, Error> {
        let as_path = Path::new(wanted);
        if wanted.contains('/') || wanted.ends_with(".jsonl") {
            if as_path.is_file() {
                return Ok(as_path.to_path_buf());
            }
            return Err(Error::Session(format!("no session file at {wanted}")));
        }
        let ids = self.ids()?;
        if ids.iter().any(|id| id == wanted) {
            return Ok(self.path_of(wanted));
        }
        let matching: Vec<&String> = ids.iter().filter(|id| id.starts_with(wanted)).collect();
        match matching.as_slice() {
            [only] => Ok(self.path_of(only)),
            [] => Err(Error::Session(format!(
                "no session matches '{wanted}' in {}; `mini-agent sessions` (or /list) shows them",
                self.dir.display()
            ))),
            several => {
                // The newest ten are named; a prefix such as `2026` may match hundreds.
                let newest = &several[several.len().saturating_sub(AMBIGUOUS_SHOWN)..];
                let shown: Vec<&str> = newest.iter().map(|id| id.as_str()).collect();
                let more = several.len() - shown.len();
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                Err(Error::Session(format!(
                    "'{wanted}' matches {} sessions: {}{more}; give more of the id",
                    several.len(),
                    shown.join(", ")
                )))
            }
        }
    }

    // ANCHOR_END: resolve
    /// The sessions of this root, oldest first, for `/list`.
    pub fn list(&self) -> Result<Vec<SessionSummary>, Error> {
        self.ids()?.into_iter().map(|id| self.summary(id)).collect()
    }

    /// What `/list` shows of one session; an error for a file that is not a session.
    pub fn summary(&self, id: String) -> Result<SessionSummary, Error> {
        summarize(&self.path_of(&id), id)
    }
}

/// How many candidates an ambiguous prefix names.
const AMBIGUOUS_SHOWN: usize = 10;

/// Whether a journal holds a model reply, by its `type` pattern alone (no parsing). It is
/// opened as chapter 9 opens any journal (no symlink, no FIFO, bounded); one that cannot be
/// is not a candidate, and opening it for real reports why.
fn got_a_reply(path: &Path) -> bool {
    let Ok(file) = crate::ch09_trust::open_journal(path, false) else { return false };
    BufReader::new(file)
        .split(b'\n')
        .map_while(Result::ok)
        .any(|line| contains(&line, br#","type":"assistant","#))
}

/// Reads only what `/list` shows: records are parsed up to the first user message; the
/// remaining lines are counted by their `type` without parsing them. (A JSON string cannot
/// contain an unescaped `"`, so this pattern only matches the record's own field.)
fn summarize(path: &Path, id: String) -> Result<SessionSummary, Error> {
    // Not through a symlink, not blocking on a FIFO, regular files only: a repository can
    // plant anything under a session's name (chapter 9 says more).
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(Error::Session(format!(
            "{} is not a regular file, so it is not a session",
            path.display()
        )));
    }
    let mut summary = SessionSummary {
        id,
        path: path.to_path_buf(),
        created: String::new(),
        first_prompt: None,
        user_turns: 0,
    };
    for line in BufReader::new(file).split(b'\n') {
        let line = line.map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
        if summary.first_prompt.is_some() {
            summary.user_turns += usize::from(contains(&line, br#","type":"user","#));
            continue;
        }
        // Unreadable lines are the journal reader's business (chapter 9); a list skips them.
        match serde_json::from_slice::<Record>(&line).map(|record| record.body) {
            Ok(Body::Session { created, .. }) => summary.created = created,
            Ok(Body::User { content }) => {
                summary.first_prompt = Some(content);
                summary.user_turns = 1;
            }
            Ok(_) | Err(_) => {}
        }
    }
    Ok(summary)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ch01_loop::{Limits, Model, Outcome, Reply, Request, ToolOutput, Tools, run_turn};
    use serde_json::Value;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    /// A fresh directory under the system temp dir, removed on drop.
    pub(crate) struct TempDir(pub PathBuf);
    impl TempDir {
        pub(crate) fn new(label: &str) -> TempDir {
            let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
            let dir = std::env::temp_dir().join(format!("mini-agent-{label}-{}-{nanos}", std::process::id()));
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    struct Scripted(Vec<Reply>);
    impl Model for Scripted {
        fn complete(&mut self, _: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
            Ok(self.0.remove(0))
        }
    }
    struct Echo;
    impl Tools for Echo {
        fn schemas(&self) -> Vec<Value> {
            Vec::new()
        }
        fn run(&mut self, call: &ToolCall) -> ToolOutput {
            ToolOutput { content: format!("ran {} {}", call.name, call.arguments), status: ToolStatus::Ok }
        }
    }
    pub(crate) fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
    }

    #[test]
    fn a_recorded_turn_replays_to_the_same_history() {
        let mut recorder = Recorder::new(MemoryLog::default());
        let mut history = vec![
            Message::System { content: "be brief".into() },
            Message::User { content: "list and read".into() },
        ];
        for message in &history {
            recorder.message(message).unwrap();
        }
        let usage = Some(Usage { prompt_tokens: 10, completion_tokens: 3 });
        let mut model = Scripted(vec![
            Reply {
                content: Some("looking".into()),
                tool_calls: vec![call("a", "list_files", "{}"), call("b", "read_file", r#"{"path":"x"}"#)],
                usage,
                finish_reason: None,
            },
            Reply { content: Some("done".into()), ..Reply::default() },
        ]);
        let outcome = run_turn(&mut model, &mut Echo, &mut history, &mut recorder, &Limits { max_turns: 5 });
        assert!(matches!(outcome, Outcome::Completed(_)));

        let records = recorder.into_log().0;
        let types: Vec<String> = records
            .iter()
            .map(|r| serde_json::to_value(r).unwrap()["type"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            types,
            [
                "system",
                "user",
                "assistant",
                "tool_started",
                "tool_finished",
                "tool_started",
                "tool_finished",
                "assistant"
            ]
        );
        assert!(matches!(&records[2].body, Body::Assistant { usage: Some(u), .. } if Some(*u) == usage));
        assert_eq!(replay(records.iter().map(|r| &r.body)), history);
    }

    #[test]
    fn an_interrupted_turn_is_recorded_once_and_replays_valid() {
        let mut recorder = Recorder::new(MemoryLog::default());
        let (ran, skipped) = (call("a", "bash", r#"{"command":"sleep 60"}"#), call("b", "read_file", "{}"));
        let asked = Message::Assistant { content: None, tool_calls: vec![ran.clone(), skipped.clone()] };
        let killed = ToolOutput { content: "killed by Ctrl+C".into(), status: ToolStatus::Interrupted };
        let never =
            ToolOutput { content: "interrupted by user before this tool ran".into(), ..killed.clone() };
        recorder.message(&Message::User { content: "wait".into() }).unwrap();
        recorder.message(&asked).unwrap();
        // The events the loop sends when Ctrl+C arrives during the first call.
        recorder.event(Event::ToolStarted(&ran)).unwrap();
        recorder.event(Event::ToolFinished(&ran, &killed)).unwrap();
        recorder
            .message(&Message::Tool { tool_call_id: "a".into(), content: killed.content.clone() })
            .unwrap();
        recorder.event(Event::ToolFinished(&skipped, &never)).unwrap();
        recorder
            .message(&Message::Tool { tool_call_id: "b".into(), content: never.content.clone() })
            .unwrap();
        recorder.interrupted().unwrap();
        let records = recorder.into_log().0;
        assert_eq!(records.len(), 6, "{records:#?}");
        assert_eq!(records[5].body, Body::Interrupted {});
        let history = replay(records.iter().map(|r| &r.body));
        assert_eq!(history.len(), 4);
        assert_eq!(history[3], Message::Tool { tool_call_id: "b".into(), content: never.content });
    }

    #[test]
    fn records_survive_a_trip_through_json_lines() {
        let mut log = MemoryLog::default();
        log.append(Body::User { content: "naïve \"quotes\"\nand 中文".into() }).unwrap();
        log.append(Body::Interrupted {}).unwrap();
        log.append(Body::Assistant { content: None, tool_calls: vec![call("a", "bash", "{}")], usage: None })
            .unwrap();
        let records = log.0;
        for record in &records {
            let line = serde_json::to_string(record).unwrap();
            assert!(!line.contains('\n'));
            assert_eq!(&serde_json::from_str::<Record>(&line).unwrap(), record);
        }
        let line = serde_json::to_string(&records[0]).unwrap();
        assert!(line.starts_with(r#"{"seq":1,"ts":""#) && line.contains(r#","type":"user","#), "{line}");
    }

    #[test]
    fn a_compaction_is_a_fact_and_replay_keeps_every_message() {
        let user = |c: &str| Body::User { content: c.into() };
        let bodies = vec![
            Body::System { content: "sys".into() },
            user("one"),
            user("two"),
            user("three"),
            Body::Compaction { summary: "summary of one and two".into(), replaces: 2, elided: 0 },
            user("four"),
            Body::Compaction { summary: "summary of all before four".into(), replaces: 2, elided: 0 },
        ];
        let message = |c: &str| Message::User { content: c.into() };
        assert_eq!(
            replay(&bodies),
            vec![
                Message::System { content: "sys".into() },
                message("one"),
                message("two"),
                message("three"),
                message("four")
            ]
        );
    }

    #[test]
    fn dates_are_civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        let time = UNIX_EPOCH + Duration::from_millis(1_795_943_700_123);
        assert_eq!(rfc3339(time), "2026-11-29T09:15:00.123Z");
        assert!(new_session_id(time, 0).starts_with("20261129-091500-"));
    }

    #[test]
    fn ids_sort_by_time() {
        let times = [1_700_000_000u64, 1_700_000_001, 1_700_003_600, 1_800_000_000];
        let ids: Vec<String> = times
            .iter()
            .enumerate()
            .map(|(i, s)| new_session_id(UNIX_EPOCH + Duration::new(*s, 999_999_000 - i as u32 * 7919), 0))
            .collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        assert_eq!(ids[0].len(), "20261129-091500-7f3a".len());
    }

    #[test]
    fn two_sessions_in_the_same_second_sort_in_the_order_they_started() {
        let earlier = new_session_id(UNIX_EPOCH + Duration::new(1_700_000_000, 100_000_000), 0);
        let later = new_session_id(UNIX_EPOCH + Duration::new(1_700_000_000, 100_050_000), 0);
        assert!(earlier < later, "{earlier} should sort before {later}");
    }

    fn write_session(store: &SessionStore, id: &str, prompts: &[&str]) {
        let mut log = MemoryLog::default();
        let created = "2026-11-29T09:15:00.000Z".to_string();
        let root = store.root().display().to_string();
        log.append(Body::Session {
            version: FORMAT_VERSION,
            id: id.into(),
            root,
            model: "m".into(),
            api: OPENAI_API.into(),
            endpoint: None,
            created,
        })
        .unwrap();
        for prompt in prompts {
            log.append(Body::User { content: prompt.to_string() }).unwrap();
            log.append(Body::Assistant { content: Some("ok".into()), tool_calls: vec![], usage: None })
                .unwrap();
        }
        let lines: String = log.0.iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect();
        fs::create_dir_all(store.dir()).unwrap();
        fs::write(store.path_of(id), lines).unwrap();
    }

    #[test]
    fn prefixes_resolve_when_unique_and_list_candidates_when_not() {
        let temp = TempDir::new("resolve");
        let store = SessionStore::new(&temp.0);
        for id in ["20261129-091500-aaaa", "20261129-091502-bbbb", "20261130-080000-cccc"] {
            write_session(&store, id, &["hi"]);
        }
        assert_eq!(store.resolve("20261130").unwrap(), store.path_of("20261130-080000-cccc"));
        assert_eq!(store.resolve("20261129-091502-bbbb").unwrap(), store.path_of("20261129-091502-bbbb"));
        let path = store.path_of("20261129-091500-aaaa");
        assert_eq!(store.resolve(path.to_str().unwrap()).unwrap(), path);
        let ambiguous = store.resolve("20261129-0915").unwrap_err().to_string();
        assert_eq!(
            ambiguous,
            "'20261129-0915' matches 2 sessions: 20261129-091500-aaaa, 20261129-091502-bbbb; give more of the id"
        );
        assert!(store.resolve("2025").unwrap_err().to_string().starts_with("no session matches '2025'"));
        assert_eq!(store.latest().unwrap(), store.path_of("20261130-080000-cccc"));
    }

    #[test]
    fn list_shows_the_first_prompt_and_counts_turns() {
        let temp = TempDir::new("list");
        let store = SessionStore::new(&temp.0);
        assert!(store.list().unwrap().is_empty());
        assert!(store.latest().is_err());
        write_session(&store, "20261129-091500-aaaa", &["fix the \"type\":\"user\", bug", "again", "more"]);
        let listed = store.list().unwrap();
        assert_eq!(
            listed,
            vec![SessionSummary {
                id: "20261129-091500-aaaa".into(),
                path: store.path_of("20261129-091500-aaaa"),
                created: "2026-11-29T09:15:00.000Z".into(),
                first_prompt: Some("fix the \"type\":\"user\", bug".into()),
                user_turns: 3,
            }]
        );
    }

    #[test]
    fn an_endpoint_is_recorded_without_credentials() {
        let clean = without_credentials;
        assert_eq!(clean("https://api.openai.com/v1"), "https://api.openai.com/v1");
        assert_eq!(clean("http://ada:pw@127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
        assert_eq!(
            clean("http://a:b@c@host/v1?api-version=2&api_key=sk&Token=t#k=1"),
            "http://host/v1?api-version=2"
        );
        assert_eq!(Origin::new("m", OPENAI_API, DEMO_ENDPOINT).endpoint.as_deref(), Some("demo"));
        let old = r#"{"seq":1,"ts":"t","type":"session","version":1,"id":"x","root":"/r","model":"m","created":"c"}"#;
        let Ok(Record { body: Body::Session { api, endpoint, .. }, .. }) = serde_json::from_str(old) else {
            panic!("an old header must still parse")
        };
        assert_eq!((api.as_str(), endpoint), (OPENAI_API, None));
    }

    #[test]
    fn session_files_are_private() {
        let temp = TempDir::new("perms");
        let store = SessionStore::new(&temp.0);
        let (id, path, _file) = store.create_file().unwrap();
        assert_eq!(path, store.path_of(&id));
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(store.dir()), 0o700);
        assert_eq!(mode(&temp.0.join(".mini_agent")), 0o700);
        let (second, _, _) = store.create_file().unwrap();
        assert_ne!(id, second);
    }
}
