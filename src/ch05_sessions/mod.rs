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
//! Records go to anything that can [`Append`] them: a [`MemoryLog`] in tests, and in the
//! command line the session's file (`SessionFile`, one `write` per line, nothing more).
//! `-c` and `-r` read the file back and continue its replayed history when it ended between
//! turns (`continue_history` refuses one that stopped inside a tool). Chapter 9's journal
//! replaces the plain file and makes each record durable before the loop goes on; chapter 10
//! decides what to do with a session that stopped in the middle of a tool.
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
//!
//! # The files of this chapter
//!
//! - [`record`]: the record format and where the model lives ([`Origin`]);
//! - this file: appending records ([`Append`], [`MemoryLog`]) and replaying them into a history;
//! - [`recorder`]: the observer that turns the loop's events into records;
//! - `file`: the plain session file records are appended to (until chapter 9's journal);
//! - [`ids`]: session ids that sort by time, and RFC 3339 timestamps without a date library;
//! - [`store`]: the sessions of one root, found by id, prefix or "the latest";
//! - [`parts`]: what a later chapter adds to every session (a layer of the tools, a part in
//!   each turn), registered as a value the command line folds.

pub mod file;
pub mod ids;
pub mod listing;
pub mod parts;
pub mod record;
pub mod recorder;
pub mod store;
#[cfg(test)]
pub(crate) mod tests;

pub use file::SessionFile;
pub use ids::{new_session_id, now_rfc3339, rfc3339};
pub use listing::SessionSummary;
pub use parts::{Answerer, Brought, Layer, Parts, RegisterParts, RunPart};
pub(crate) use record::side_note;
pub use record::{Body, DEMO_ENDPOINT, FORMAT_VERSION, OPENAI_API, Origin, Record, without_credentials};
pub use recorder::{Recorder, Session};
pub use store::SessionStore;

use crate::ch02_loop::command_line::{Flag, Help, Takes};
use crate::ch02_loop::{Error, Failure, Message, Observer, Outcome};
use crate::ch04_terminal::{RegisterCommands, SlashCommand};
use std::any::Any;
use std::fmt;

// ANCHOR: session_error
/// A session or journal problem: a corrupt line, a lock held, a session that cannot go on.
/// Chapter 2's `Error` carries it as a later chapter's failure (exit 1).
#[derive(Debug)]
pub struct SessionError(pub String);

/// `Err(session_error(…))`: the error for a session or journal problem.
pub fn session_error(text: impl Into<String>) -> Error {
    Error::Other(Box::new(SessionError(text.into())))
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Failure for SessionError {
    fn cleaned(&self, clean: &dyn Fn(&str) -> String) -> Box<dyn Failure> {
        Box::new(SessionError(clean(&self.0)))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
// ANCHOR_END: session_error

// ANCHOR: append
/// Anything records can be appended to: an in-memory list here, a durable journal in
/// chapter 9. Returns the `seq` the record was given.
pub trait Append {
    fn append(&mut self, body: Body) -> Result<u64, Error>;
}
// ANCHOR_END: append

// ANCHOR: turn_hook
/// A later chapter's part in every turn of a session, beside this chapter's recorder: what it
/// does when the user's message arrives, the observer it adds to the turn (after the journal),
/// and what it does when the turn has ended, with the session's log at hand to record it
/// (chapter 7 counts and watches for repetition, chapter 16 runs the `Stop` hooks).
pub trait TurnHook {
    /// The user's message of a turn of session `session`, before the model sees it.
    fn begin(&mut self, _session: &str, _message: &Message) {}
    fn observer(&mut self) -> Option<&mut dyn Observer> {
        None
    }
    fn end(&mut self, _outcome: &Outcome, _log: &mut dyn Append) {}
}
// ANCHOR_END: turn_hook

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
            Body::ToolStarted { .. } | Body::Interrupted {} | Body::Error { .. } => {}
            side_note!() => {}
        }
    }
    history
}

// ANCHOR_END: replay

// ANCHOR: continue_history
/// The history a session continues with (`-c`, `-r`): its replay, if every tool call the model
/// asked for has its result. A session that stopped in the middle of a tool is refused: whether
/// that tool ran is a question for chapter 10, and a call with no result would not be accepted
/// by the server anyway.
pub fn continue_history(id: &str, records: &[Record]) -> Result<Vec<Message>, Error> {
    let history = replay(records.iter().map(|record| &record.body));
    let mut open = Vec::new();
    for message in &history {
        match message {
            Message::Assistant { tool_calls, .. } => open.extend(tool_calls),
            Message::Tool { tool_call_id, .. } => open.retain(|call| &call.id != tool_call_id),
            _ => {}
        }
    }
    match open.first() {
        None => Ok(history),
        Some(call) => Err(session_error(format!(
            "cannot continue session {id}: it stopped while a tool call ({}) had no result",
            crate::ch02_loop::describe_call(call)
        ))),
    }
}
// ANCHOR_END: continue_history

// ANCHOR: register
/// `-c` continues the latest session of the root, `-r` a chosen one; `/list` shows them.
pub const CONTINUE: Flag =
    Flag::switch(5, "--continue", &["continue the latest session of this root"]).short('c');
pub const RESUME: Flag = Flag::value(
    5,
    "--resume",
    Takes::NonEmpty("ID"),
    &["resume a session (id, unique id prefix, or journal path)"],
)
.short('r');

/// Chapter 5's command line: a session per run, and the flags that find one again.
pub fn register(registry: &mut dyn RegisterCommands) {
    registry.flag(CONTINUE);
    registry.flag(RESUME);
    registry.help(Help {
        chapter: 5,
        page: "",
        section: "SESSIONS",
        lines: &[
            "  Every run is a session, recorded in .mini_agent/sessions/ under the workspace root.",
            "  mini-agent -c                         continue the latest session in the REPL",
            "  mini-agent -c -p \"now run the tests\"  continue it with one more task",
            "  -c skips sessions that never got a model reply (a failed start); -r ID opens any.",
        ],
    });
    registry.command(SlashCommand {
        chapter: 5,
        name: "list",
        argument: "",
        help: "list the sessions of this workspace",
    });
    registry.check(|settings| match settings.has(&CONTINUE) && settings.has(&RESUME) {
        true => Err("use either -c/--continue or -r/--resume, not both".into()),
        false => Ok(()),
    });
}
// ANCHOR_END: register
