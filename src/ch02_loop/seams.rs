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

/// A borrowed model is a model, so a layer can wrap the session's model for one turn.
impl<M: Model + ?Sized> Model for &mut M {
    fn complete(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        (**self).complete(request, observer)
    }
}

/// Boxed tools are tools, so a layer can wrap whatever the layers inside it made.
impl<T: Tools + ?Sized> Tools for Box<T> {
    fn schemas(&self) -> Vec<Value> {
        (**self).schemas()
    }

    fn run(&mut self, call: &ToolCall) -> ToolOutput {
        (**self).run(call)
    }
}

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
    /// A tool is about to run. Observers that must persist this do so before returning.
    ToolStarted(&'a ToolCall),
    ToolFinished(&'a ToolCall, &'a ToolOutput),
    // ANCHOR_END: events
    // ANCHOR: events_later
    /// Something the user should know that did not stop the turn (a reply's text that looked
    /// like a tool call, a compaction that could not be made…).
    Warning(&'a str),
    /// What a later chapter reports: a retry (chapter 8), a compaction (7), streamed text (11).
    Notice(&'a dyn Notice),
}
// ANCHOR_END: events_later

// ANCHOR: notice
/// Something a later chapter reports during a turn. Chapter 2's loop never makes one; it
/// says what every observer needs of a notice it has never heard of, so that the screen, the
/// journal and `--json` handle them all alike, and the chapter that declared one reads it
/// back (`as_any`) where only it knows what to do.
pub trait Notice: std::fmt::Debug {
    /// The line a person reads on stderr (`retry 1 in 2.0s: …`); `None`: not a line. `width`:
    /// the terminal's, to cut a long line to; `None` for a log, which keeps it whole.
    fn line(&self, _width: Option<usize>) -> Option<String> {
        None
    }
    /// What the screen's spinner says after that line while the model is still awaited.
    fn spinner(&self) -> &'static str {
        "thinking…"
    }
    /// What a session's journal records of it (chapter 5's records, as JSON): nothing here.
    fn records(&self) -> Vec<Value> {
        Vec::new()
    }
    /// Its event for a program reading `--json` (chapter 14); `None`: programs do not see it.
    fn json(&self) -> Option<Value> {
        None
    }
    /// The same notice with every text in it passed through `clean` (chapter 3's redaction).
    fn cleaned(&self, clean: &dyn Fn(&str) -> String) -> Box<dyn Notice>;
    /// For the chapter that declared it, to know its own notice again.
    fn as_any(&self) -> &dyn std::any::Any;
}
// ANCHOR_END: notice

// ANCHOR: observer_trait
/// Watches the turn. Returning an error stops the turn before anything else happens —
/// this is how the journal guarantees that a tool never runs unrecorded.
pub trait Observer {
    fn event(&mut self, event: Event) -> Result<(), Error>;
    /// Lines the user typed while the turn ran; they join the next request. Nobody types
    /// into chapter 2's agent; chapter 4's REPL does.
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
