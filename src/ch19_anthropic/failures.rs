//! Chapter 19 — which tool results were errors.
//!
//! The Messages API marks a failed tool result with `is_error`, but the loop's history keeps a
//! result's text, not its status (chapter 1's `Message::Tool`). The status exists once, in
//! `Event::ToolFinished`: [`ToolFailures`] is an observer that remembers the ids of the calls
//! that did not end `ok`, and the request mapping asks [`failed`]. Process-wide, like chapter
//! 3's redactor: one run, one set, a few bytes per failed call. A session resumed in a new
//! process gets its earlier failures from its journal, which kept every call's status:
//! chapter 10's plan lists them and [`remember`] adds them to the set.

use crate::ch02_loop::{Error, Event, Observer, ToolStatus};
use crate::ch05_sessions::TurnHook;
use crate::ch05_sessions::parts::{Brought, RunPart};
use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

static FAILED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

// ANCHOR: failures
/// Remembers the calls whose result was not `ok`: an error, a refusal, an interruption.
pub struct ToolFailures;

impl Observer for ToolFailures {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        if let Event::ToolFinished(call, output) = event
            && output.status != ToolStatus::Ok
        {
            remember(std::slice::from_ref(&call.id));
        }
        Ok(())
    }
}

/// A part of every turn of a session: its observer.
impl TurnHook for ToolFailures {
    fn observer(&mut self) -> Option<&mut dyn Observer> {
        Some(self)
    }
}

/// Adds calls that failed: from the events above, or, for `-c` and `/resume`, the failures the
/// session's journal recorded (chapter 10's `ResumePlan::failed`).
pub fn remember(ids: &[String]) {
    let mut failed = FAILED.lock().unwrap_or_else(PoisonError::into_inner);
    failed.get_or_insert_with(HashSet::new).extend(ids.iter().cloned());
}

/// Did the call with this id fail in this run?
pub fn failed(id: &str) -> bool {
    let failed = FAILED.lock().unwrap_or_else(PoisonError::into_inner);
    failed.as_ref().is_some_and(|set| set.contains(id))
}
// ANCHOR_END: failures

/// This chapter's part in every session: the failures noted in each turn.
impl RunPart for ToolFailures {
    /// A resumed session's earlier failures, from its journal (chapter 10's plan).
    fn session_opened(&self, _: &[crate::ch02_loop::Message], brought: &Brought) {
        if let Some(plan) = brought.find::<crate::ch10_recovery::ResumePlan>() {
            remember(&plan.failed);
        }
    }
    fn turn_hook(&self) -> Option<Box<dyn TurnHook>> {
        Some(Box::new(ToolFailures))
    }
    fn clone_part(&self) -> Box<dyn RunPart> {
        Box::new(ToolFailures)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
