//! Chapter 19 — which tool results were errors.
//!
//! The Messages API marks a failed tool result with `is_error`, but the loop's history keeps a
//! result's text, not its status (chapter 1's `Message::Tool`). The status exists once, in
//! `Event::ToolFinished`: [`ToolFailures`] is an observer that remembers the ids of the calls
//! that did not end `ok`, and the request mapping asks [`failed`]. Process-wide, like chapter
//! 3's redactor: one run, one set, a few bytes per failed call. A session resumed in a new
//! process knows only its own failures and those of calls whose input did not parse.

use crate::ch02_loop::{Error, Event, Observer, ToolStatus};
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
            let mut failed = FAILED.lock().unwrap_or_else(PoisonError::into_inner);
            failed.get_or_insert_with(HashSet::new).insert(call.id.clone());
        }
        Ok(())
    }
}

/// Did the call with this id fail in this run?
pub fn failed(id: &str) -> bool {
    let failed = FAILED.lock().unwrap_or_else(PoisonError::into_inner);
    failed.as_ref().is_some_and(|set| set.contains(id))
}
// ANCHOR_END: failures
