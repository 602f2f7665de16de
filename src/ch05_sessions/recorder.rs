//! Chapter 5 — the recorder: an observer of the chapter-1 loop that writes each fact once.
//!
//! The loop does not know it is being written down. A tool result arrives twice (as
//! `ToolFinished` with its status and as `Message::Tool`); the recorder keeps the first, so
//! replay sees every fact exactly once.

use super::*;
use crate::ch02_loop::{Error, Event, Message, Observer, Outcome, ToolStatus, Usage, plural};
use std::collections::HashSet;

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

    pub fn log_mut(&mut self) -> &mut A {
        &mut self.log
    }

    pub fn into_log(self) -> A {
        self.log
    }
}

impl<A: Append> Observer for Recorder<A> {
    // ANCHOR: event
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
            // A later chapter's notice says what the journal keeps of it: a retry, a compaction
            // and what its summary cost, a cut stream's text; streamed text leaves nothing.
            Event::Notice(notice) => {
                for record in notice.records() {
                    let body = serde_json::from_value(record)
                        .map_err(|e| session_error(format!("a notice made no record of this format: {e}")))?;
                    self.log.append(body)?;
                }
                return Ok(());
            }
            // Requests and warnings are for the screen, not the record.
            Event::Request { .. } | Event::Warning(_) => return Ok(()),
        };
        self.log.append(body).map(drop)
    }
    // ANCHOR_END: event
}

// ANCHOR: session
/// A session around the loop: its journal, and the later chapters' parts in each turn.
pub struct Session<A: Append> {
    pub id: String,
    pub recorder: Recorder<A>,
    pub hooks: Vec<Box<dyn TurnHook>>,
}

impl<A: Append> Session<A> {
    /// The user's message is recorded before the model sees it; then each part hears of it.
    pub fn begin(&mut self, message: &Message) -> Result<(), Error> {
        self.recorder.message(message)?;
        self.hooks.iter_mut().for_each(|hook| hook.begin(&self.id, message));
        Ok(())
    }

    /// The journal first, then each part's observer: an error stops the turn before anyone
    /// after it acts on an event that is not on disk.
    pub fn observers(&mut self) -> impl Iterator<Item = &mut dyn Observer> {
        let hooks = self.hooks.iter_mut().filter_map(|hook| hook.observer());
        std::iter::once(&mut self.recorder as &mut dyn Observer).chain(hooks)
    }

    /// How the turn ended is a fact too: each part's ending, then Ctrl+C, an error or the
    /// turn limit (of `max_turns` calls) recorded, so `--status` can tell where it stopped.
    pub fn end(&mut self, outcome: &Outcome, max_turns: usize) -> Result<(), Error> {
        for hook in &mut self.hooks {
            hook.end(outcome, self.recorder.log_mut());
        }
        match outcome {
            Outcome::Completed(_) => Ok(()),
            Outcome::Interrupted => self.recorder.interrupted(),
            Outcome::TurnLimit => self
                .recorder
                .error(&format!("stopped after {} (the turn limit)", plural(max_turns, "model call"))),
            Outcome::Failed(error) => self.recorder.error(&error.to_string()),
        }
    }
}
// ANCHOR_END: session
