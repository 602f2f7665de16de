//! Chapter 2 — the three seams every later chapter plugs into: [`Model`] completes a request,
//! [`Tools`] lists schemas and runs a call, [`Observer`] sees every [`Event`] of a turn. They are
//! traits so that a later chapter wraps one (retries around a model, a permission gate around
//! the tools, a journal beside the screen) instead of editing the loop.

use super::{Error, Message, Reply, Request, ToolCall, ToolOutput};
use serde_json::Value;

// ANCHOR: seams
/// Completes a request. Wrappers (retries, compaction) are Models around a Model.
pub trait Model {
    fn complete(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error>;
}

/// A boxed model is a model, so `main` can choose one at run time.
impl<M: Model + ?Sized> Model for Box<M> {
    fn complete(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        (**self).complete(request, observer)
    }
}

/// The tools the model may call: their JSON schemas, and a way to run one call.
/// A bad call (unknown tool, invalid arguments) is an `Error` output, never a panic.
pub trait Tools {
    fn schemas(&self) -> Vec<Value>;
    fn run(&mut self, call: &ToolCall) -> ToolOutput;
}

// ANCHOR_END: seams

// ANCHOR: events
/// Everything that happens during a turn, in order. Events hold only references and
/// numbers, so one event can be handed to several observers.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// A message was appended to the history (user, assistant or tool result).
    Message(&'a Message),
    /// A model request is about to be sent.
    Request {
        messages: usize,
    },
    /// A model reply arrived (before its message is appended).
    Reply(&'a Reply),
    /// A piece of reply text arrived while streaming (chapter 11).
    #[cfg(feature = "ch11")]
    TextDelta(&'a str),
    /// A tool is about to run. Observers that must persist this do so before returning.
    ToolStarted(&'a ToolCall),
    ToolFinished(&'a ToolCall, &'a ToolOutput),
    // ANCHOR_END: events
    // ANCHOR: events_later
    /// A failed request will be tried again after `wait_ms` (chapter 8).
    #[cfg(feature = "ch08")]
    Retry {
        attempt: u32,
        wait_ms: u64,
        reason: &'a str,
    },
    /// Older messages are now sent as `summary` (chapter 7): it stands for the first
    /// `replaced` messages after the system prompt. The token counts are estimates of the
    /// request before and after; `usage` is what the summary request cost, when known.
    /// `elided` messages after the system prompt are sent with their large tool results and
    /// arguments cut short; `summarised` is false when only that changed (no model call).
    #[cfg(feature = "ch07")]
    Compaction {
        summary: &'a str,
        replaced: usize,
        elided: usize,
        summarised: bool,
        tokens_before: u64,
        tokens_after: u64,
        usage: Option<super::Usage>,
    },
    /// Something the user should know that did not stop the turn (a reply's text that looked
    /// like a tool call, a compaction that could not be made…).
    Warning(&'a str),
    /// The text of a stream cut off before it finished (chapter 11): shown and recorded, never
    /// sent back to the model.
    #[cfg(feature = "ch11")]
    Partial(&'a str),
}

// ANCHOR_END: events_later
// ANCHOR: observer_trait
/// Watches the turn. Returning an error stops the turn before anything else happens —
/// this is how the journal guarantees that a tool never runs unrecorded.
pub trait Observer {
    fn event(&mut self, event: Event) -> Result<(), Error>;
    /// Lines the user typed while the turn ran; they join the next request (chapter 4).
    #[cfg(feature = "ch04")]
    fn queued_input(&mut self) -> Vec<String> {
        Vec::new()
    }
}

pub struct Limits {
    /// Model calls allowed for one user message.
    pub max_turns: usize,
}

#[derive(Debug)]
pub enum Outcome {
    /// The model stopped calling tools; this is its final text.
    Completed(String),
    TurnLimit,
    Interrupted,
    Failed(Error),
}
// ANCHOR_END: observer_trait
