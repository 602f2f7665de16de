//! Test doubles for chapter 2's seams, one copy for every chapter's tests: a model that
//! replays scripted replies, tools that run nothing but remember what was asked, and an
//! observer that shows nothing.

use super::{Error, Event, Model, Observer, Reply, Request, ToolCall, ToolOutput, ToolStatus, Tools};
use serde_json::Value;

/// Replays `replies` in order (a model error once they run out) and records how many
/// messages each request carried.
#[derive(Default)]
pub(crate) struct ScriptedModel {
    pub(crate) replies: Vec<Reply>,
    pub(crate) sent: Vec<usize>,
}

impl ScriptedModel {
    pub(crate) fn new(replies: Vec<Reply>) -> ScriptedModel {
        ScriptedModel { replies, sent: Vec::new() }
    }
}

impl Model for ScriptedModel {
    fn complete(&mut self, request: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
        self.sent.push(request.messages.len());
        if self.replies.is_empty() {
            return Err(Error::Model("script exhausted".into()));
        }
        Ok(self.replies.remove(0))
    }
}

/// Offers no tools, answers every call with `ran NAME ARGUMENTS`, and keeps the calls.
#[derive(Default)]
pub(crate) struct RecordingTools {
    pub(crate) calls: Vec<ToolCall>,
}

impl RecordingTools {
    /// The names of the calls run, in order.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.calls.iter().map(|call| call.name.as_str()).collect()
    }
}

impl Tools for RecordingTools {
    fn schemas(&self) -> Vec<Value> {
        Vec::new()
    }

    fn run(&mut self, call: &ToolCall) -> ToolOutput {
        self.calls.push(call.clone());
        ToolOutput { content: format!("ran {} {}", call.name, call.arguments), status: ToolStatus::Ok }
    }
}

/// Shows nothing; hands over its lines as typed-ahead input at the first chance.
#[derive(Default)]
pub(crate) struct Quiet(pub(crate) Vec<String>);

impl Observer for Quiet {
    fn event(&mut self, _: Event) -> Result<(), Error> {
        Ok(())
    }

    fn queued_input(&mut self) -> Vec<String> {
        std::mem::take(&mut self.0)
    }
}
