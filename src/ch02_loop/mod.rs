//! Chapter 2 — the loop, behind three seams.
//!
//! Chapter 1's agent was one file with the loop and one tool. This chapter keeps the loop and
//! pulls out what every later chapter plugs into: a coding agent is a loop that sends the
//! conversation to a model and, if the reply asks for tools, runs them, appends their results
//! and asks again; it stops when the model answers in plain text.
//!
//! * `vocabulary.rs` — the words: messages, tool calls and outputs, a request and its reply.
//! * `seams.rs` — the three seams: [`Model`] completes a request (this chapter speaks HTTP;
//!   chapter 8 wraps it with retries, chapter 11 streams, chapter 7 compacts what is sent);
//!   [`Tools`] lists schemas and runs a call (chapter 3's six tools, chapter 12's permission
//!   gate around them); [`Observer`] sees every event (the terminal of chapter 4, the journal of
//!   chapter 9, `--json`).
//! * `error.rs` — the crate's one error type.
//! * `command_line.rs` — what a chapter adds to the command line (flags, `--help`), as data.
//! * this file — [`run_turn`], the loop itself, and the one piece of global state (Ctrl+C).
//!
//! Because the seams are traits, later chapters add code instead of editing this file: the
//! loop you read here is the loop that runs.

pub mod command_line;
mod error;
mod seams;
mod vocabulary;

pub use error::{Error, Failure};
pub use seams::*;
pub use vocabulary::*;

use std::sync::atomic::{AtomicBool, Ordering};

/// Tool calls kept from one reply; the rest are dropped before they reach the history (a reply
/// of a thousand calls must not run a thousand commands, nor cost the history a thousand results).
pub(crate) const MAX_CALLS_PER_REPLY: usize = 64;

// ANCHOR: run_turn
// ANCHOR: run_turn_start
/// Runs one user turn to its end. `history` already holds the user's message.
pub fn run_turn(
    model: &mut dyn Model,
    tools: &mut dyn Tools,
    history: &mut Vec<Message>,
    observer: &mut dyn Observer,
    limits: &Limits,
) -> Outcome {
    let schemas = tools.schemas();
    let mut step = || -> Result<Option<Outcome>, Error> {
        for content in observer.queued_input() {
            append(history, observer, Message::User { content })?;
        }
        check_interrupt()?;
        observer.event(Event::Request { messages: history.len() })?;
        let request = Request { messages: history, tools: &schemas };
        let mut reply = model.complete(&request, observer)?;
        // ANCHOR_END: run_turn_start
        // ANCHOR: cut_reply
        // A reply cut by the output limit is not an answer, and its calls may be cut in the
        // middle of their arguments: none of them runs. Its text is kept in the history (so
        // "continue" can follow), and the turn fails saying why.
        let cut = reply.cut_reason().map(str::to_owned);
        let dropped_calls = if cut.is_some() { std::mem::take(&mut reply.tool_calls).len() } else { 0 };
        // Past MAX_CALLS_PER_REPLY, calls are dropped before anything sees them: the history,
        // the journal and every later request hold at most that many calls of one reply, so a
        // reply of 20,000 calls costs what one of 64 costs. The last result says so.
        let beyond = reply.tool_calls.len().saturating_sub(MAX_CALLS_PER_REPLY);
        reply.tool_calls.truncate(MAX_CALLS_PER_REPLY);
        observer.event(Event::Reply(&reply))?;
        let calls = reply.tool_calls.clone();
        let content = reply.content.clone();
        let text = content.as_deref().unwrap_or_default();
        if let Some(reason) = cut {
            let chars = text.chars().count();
            if !text.trim().is_empty() {
                append(history, observer, Message::Assistant { content, tool_calls: Vec::new() })?;
            }
            return Err(Error::ReplyCut { reason, chars, dropped_calls });
        }
        append(
            history,
            observer,
            Message::Assistant { content: content.clone(), tool_calls: reply.tool_calls },
        )?;
        if calls.is_empty() {
            return Ok(Some(Outcome::Completed(content.unwrap_or_default())));
        }
        // ANCHOR_END: cut_reply
        // ANCHOR: run_tools
        for (index, call) in calls.iter().enumerate() {
            let mut output = if interrupted() {
                ToolOutput {
                    content: "interrupted by user before this tool ran".into(),
                    status: ToolStatus::Interrupted,
                }
            } else {
                observer.event(Event::ToolStarted(call))?;
                tools.run(call)
            };
            if beyond > 0 && index + 1 == calls.len() {
                output.content.push_str(&format!(
                    "\n[{beyond} further calls of this reply were dropped, not run: at most \
                     {MAX_CALLS_PER_REPLY} calls of one reply run; call again]"
                ));
            }
            observer.event(Event::ToolFinished(call, &output))?;
            append(
                history,
                observer,
                Message::Tool { tool_call_id: call.id.clone(), content: output.content },
            )?;
        }
        check_interrupt().map(|()| None)
    };
    // ANCHOR_END: run_tools
    // ANCHOR: turn_loop
    for _ in 0..limits.max_turns {
        match step() {
            Ok(Some(outcome)) => return outcome,
            Ok(None) => {}
            Err(Error::Interrupted) => {
                // The next message the model reads follows this turn: it must know the turn was
                // cut short, not answered (and no server sees two user messages in a row).
                let mark = Some(INTERRUPTED_MARK.to_string());
                let _ =
                    append(history, observer, Message::Assistant { content: mark, tool_calls: Vec::new() });
                return Outcome::Interrupted;
            }
            Err(error) => return Outcome::Failed(error),
        }
    }
    Outcome::TurnLimit
}
// ANCHOR_END: turn_loop
// ANCHOR_END: run_turn

// ANCHOR: append
/// What the model reads where the user stopped a turn with Ctrl+C.
pub const INTERRUPTED_MARK: &str =
    "[interrupted: the user stopped this turn (Ctrl+C) before it was finished]";

fn append(history: &mut Vec<Message>, observer: &mut dyn Observer, message: Message) -> Result<(), Error> {
    history.push(message);
    observer.event(Event::Message(history.last().expect("just pushed")))
}
// ANCHOR_END: append

// ANCHOR: interrupt
/// The one piece of global state: set by Ctrl+C, polled by everything that waits.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub fn interrupted() -> bool {
    #[cfg(feature = "ch21")]
    if turn_flag_raised() {
        return true;
    }
    INTERRUPTED.load(Ordering::SeqCst)
}

pub fn set_interrupted(value: bool) {
    INTERRUPTED.store(value, Ordering::SeqCst);
}

fn check_interrupt() -> Result<(), Error> {
    if interrupted() { Err(Error::Interrupted) } else { Ok(()) }
}
// ANCHOR_END: interrupt

// ANCHOR: turn_flag
// Chapter 21: a service runs many turns at once, each on a thread of its own. Ctrl+C stops
// them all; a turn's own flag, set for the thread that runs it, stops one.
#[cfg(feature = "ch21")]
thread_local! {
    static TURN_FLAG: std::cell::RefCell<Option<std::sync::Arc<AtomicBool>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `work` with `flag` as this thread's turn flag: everything that polls [`interrupted`]
/// on this thread (the loop, a running `bash`, a model request) sees it once it is set.
#[cfg(feature = "ch21")]
pub fn with_turn_flag<T>(flag: std::sync::Arc<AtomicBool>, work: impl FnOnce() -> T) -> T {
    /// Puts the thread's previous flag back, also when `work` panics.
    struct Restore(Option<std::sync::Arc<AtomicBool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            TURN_FLAG.with(|slot| *slot.borrow_mut() = self.0.take());
        }
    }
    let _restore = Restore(TURN_FLAG.with(|slot| slot.replace(Some(flag))));
    work()
}

#[cfg(feature = "ch21")]
fn turn_flag_raised() -> bool {
    TURN_FLAG.with(|slot| slot.borrow().as_ref().is_some_and(|flag| flag.load(Ordering::SeqCst)))
}
// ANCHOR_END: turn_flag

/// Test doubles of the seams, shared by every chapter's tests.
#[cfg(test)]
pub(crate) mod fakes;

#[cfg(test)]
mod tests;
