//! Chapter 7 — a model stuck in a loop: told, then stopped.
//!
//! A small model that loses the thread often does the same thing again: `echo 42`, the same
//! answer, `echo 42` again, fifty times, until the turn limit. Every one of those calls costs
//! a request and fills the context with copies. The repetition is easy to see from outside —
//! the same call (same tool, same arguments) giving the same result, several times in a row —
//! so the agent sees it, in two steps:
//!
//! * [`RepeatNotes`] wraps the tools. At the [`TELL_AT`]-th reply in a row making the same
//!   call with the same result (the same call twice in one reply counts once), the tool
//!   result carries a note telling the model that it is repeating itself. Models usually take
//!   the hint: the note is in the very text they read next.
//! * [`StopRepeats`] is an observer. If the streak reaches [`STOP_AT`], it refuses the next
//!   request, and the turn ends with `Error::Stuck` (exit 2, like the turn limit: the task may
//!   be unfinished, and the person decides what to say next).
//!
//! The two share one small state. Stopping happens *before the next request*, never in the
//! middle of a batch of calls: every call has its result, and the history stays valid.
//! Only identical results count: polling a file that changes, or retrying a test that starts
//! passing, is not a loop.

use crate::ch02_loop::{Error, Event, Observer, ToolCall, ToolOutput, Tools};
use serde_json::Value;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

// ANCHOR: repeats
/// The identical call in a row at which the model is told it is repeating itself.
pub(crate) const TELL_AT: usize = 3;
/// The identical call in a row after which the turn is stopped.
pub(crate) const STOP_AT: usize = 5;

/// The last call's fingerprint (tool, arguments, result) and how many replies in a row made it.
#[derive(Debug, Default)]
pub(crate) struct RepeatState {
    last: Option<u64>,
    streak: usize,
    name: String,
    /// A reply arrived since the last call was counted: a repeat now is the model asking again.
    new_reply: bool,
}
// ANCHOR_END: repeats

// ANCHOR: repeat_record
impl RepeatState {
    /// Counts `call` with its result; returns the length of the streak it is part of. The
    /// same call twice in *one* reply is one request, not a model going round in circles.
    fn record(&mut self, call: &ToolCall, result: &str) -> usize {
        let mut hasher = DefaultHasher::new();
        call.name.hash(&mut hasher);
        // `{"a":1}` and `{ "a": 1 }` are the same call: compare the parsed arguments.
        match serde_json::from_str::<Value>(&call.arguments) {
            Ok(arguments) => arguments.to_string().hash(&mut hasher),
            Err(_) => call.arguments.hash(&mut hasher),
        }
        result.hash(&mut hasher);
        let print = hasher.finish();
        self.streak = match (self.last == Some(print), std::mem::take(&mut self.new_reply)) {
            (true, true) => self.streak + 1,
            (true, false) => self.streak,
            (false, _) => 1,
        };
        self.last = Some(print);
        self.name.clone_from(&call.name);
        self.streak
    }
}

// ANCHOR_END: repeat_record

type Shared = Arc<Mutex<RepeatState>>;

// ANCHOR: repeat_notes
/// Tools that notice repetition and say so in the result.
pub struct RepeatNotes<T> {
    pub inner: T,
    state: Shared,
}

impl<T: Tools> RepeatNotes<T> {
    pub fn new(inner: T) -> Self {
        RepeatNotes { inner, state: Shared::default() }
    }

    /// A new user message: whatever the model did before is not a loop any more.
    pub fn reset(&self) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = RepeatState::default();
    }

    /// The observer that stops the turn when the streak reaches [`STOP_AT`].
    pub fn stopper(&self) -> StopRepeats {
        StopRepeats(self.state.clone())
    }
}
// ANCHOR_END: repeat_notes

// ANCHOR: repeat_notes_run
impl<T: Tools> Tools for RepeatNotes<T> {
    fn schemas(&self) -> Vec<Value> {
        self.inner.schemas()
    }

    fn run(&mut self, call: &ToolCall) -> ToolOutput {
        let mut output = self.inner.run(call);
        let streak = self.state.lock().unwrap_or_else(PoisonError::into_inner).record(call, &output.content);
        if streak >= TELL_AT {
            output.content.push_str(&format!(
                "\n\n[mini-agent: this is the same {} call with the same result {streak} times in a row. \
                 Repeating it will not change the result: use what you have, try something different, \
                 or give your final answer. At {STOP_AT} in a row the turn is stopped.]",
                call.name
            ));
        }
        output
    }
}

// ANCHOR_END: repeat_notes_run
// ANCHOR: stop_repeats
/// Refuses the next request once the model has repeated itself [`STOP_AT`] times.
pub struct StopRepeats(Shared);

impl Observer for StopRepeats {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::Request { .. } if state.streak >= STOP_AT => {
                Err(Error::Stuck { name: state.name.clone(), repeats: state.streak })
            }
            Event::Reply(_) => {
                state.new_reply = true;
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
// ANCHOR_END: stop_repeats

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ch02_loop::{Limits, Message, Model, Outcome, Reply, Request, ToolStatus, run_turn};

    /// Always the same answer, however often it is asked.
    struct Constant(usize);
    impl Tools for Constant {
        fn schemas(&self) -> Vec<Value> {
            Vec::new()
        }
        fn run(&mut self, _: &ToolCall) -> ToolOutput {
            self.0 += 1;
            ToolOutput { content: "42".into(), status: ToolStatus::Ok }
        }
    }

    /// A model that calls `bash` with `arguments(n)` on its n-th request, forever.
    struct Caller(fn(usize) -> String, usize);
    impl Model for Caller {
        fn complete(&mut self, _: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
            self.1 += 1;
            let call =
                ToolCall { id: format!("c{}", self.1), name: "bash".into(), arguments: (self.0)(self.1) };
            Ok(Reply { tool_calls: vec![call], ..Reply::default() })
        }
    }

    fn run(arguments: fn(usize) -> String) -> (Outcome, Vec<Message>, usize) {
        let mut tools = RepeatNotes::new(Constant(0));
        let mut stopper = tools.stopper();
        let mut history = vec![Message::User { content: "go".into() }];
        let mut model = Caller(arguments, 0);
        let outcome = run_turn(&mut model, &mut tools, &mut history, &mut stopper, &Limits { max_turns: 20 });
        (outcome, history, tools.inner.0)
    }

    #[test]
    fn the_model_is_told_at_the_third_repeat_and_stopped_at_the_fifth() {
        let (outcome, history, runs) = run(|n| format!("{{\"command\": \"echo 42\"{}}}", " ".repeat(n)));
        assert!(matches!(outcome, Outcome::Failed(Error::Stuck { ref name, repeats: 5 }) if name == "bash"));
        assert_eq!(runs, 5);
        let results: Vec<&str> = history
            .iter()
            .filter_map(|m| match m {
                Message::Tool { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(results[..2], ["42", "42"]);
        assert!(results[2].contains("3 times in a row") && results[4].contains("5 times in a row"));
    }

    #[test]
    fn many_identical_calls_in_one_reply_are_one_request() {
        struct Batch(usize);
        impl Model for Batch {
            fn complete(&mut self, _: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
                self.0 += 1;
                let call = |i| ToolCall { id: format!("c{i}"), name: "bash".into(), arguments: "{}".into() };
                Ok(match self.0 {
                    1 => Reply { tool_calls: (0..20).map(call).collect(), ..Reply::default() },
                    _ => Reply { content: Some("done".into()), ..Reply::default() },
                })
            }
        }
        let mut tools = RepeatNotes::new(Constant(0));
        let mut stopper = tools.stopper();
        let mut history = vec![Message::User { content: "go".into() }];
        let outcome =
            run_turn(&mut Batch(0), &mut tools, &mut history, &mut stopper, &Limits { max_turns: 5 });
        assert!(matches!(outcome, Outcome::Completed(ref text) if text == "done"), "{outcome:?}");
        assert_eq!(tools.inner.0, 20);
    }

    #[test]
    fn different_arguments_are_not_a_loop() {
        let (outcome, _, runs) = run(|n| format!("{{\"command\": \"echo {}\"}}", n % 2));
        assert!(matches!(outcome, Outcome::TurnLimit), "{outcome:?}");
        assert_eq!(runs, 20);
    }
}
