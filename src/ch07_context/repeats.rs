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
//! * [`AnswerWithoutTools`] wraps the model. When the streak reaches [`STOP_AT`], the next
//!   request goes out once more with no tools offered: the model is asked for its answer from
//!   what the session has (a small model stuck calling `echo 42` usually has the 42 in hand).
//!   That answer ends the turn. No answer (or a tool call, or one written as text) stops it
//!   with [`Stuck`] (exit 2, like the turn limit: the task may be unfinished, and the
//!   person decides what to say next).
//!
//! The two share one small state. Stopping happens *before the next request*, never in the
//! middle of a batch of calls: every call has its result, and the history stays valid.
//! Only identical results count: polling a file that changes, or retrying a test that starts
//! passing, is not a loop. Identical arguments do not have to: a call that changed nothing (a
//! read, or a write or edit the tool refused) with the same result is a repeat whatever its
//! arguments say (an edit whose strings are equal fails the same way with `replace_all` true
//! or false).

use crate::ch02_loop::{
    Error, Event, Failure, Model, Observer, Reply, Request, ToolCall, ToolOutput, ToolStatus, Tools,
};
use crate::ch02_model::text_calls::text_tool_call;
use serde_json::Value;
use std::any::Any;
use std::fmt;
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
    /// Counts `call` with its output; returns the length of the streak it is part of. The
    /// same call twice in *one* reply is one request, not a model going round in circles.
    fn record(&mut self, call: &ToolCall, output: &ToolOutput) -> usize {
        let mut hasher = DefaultHasher::new();
        call.name.hash(&mut hasher);
        // A call that changed nothing is the same call whatever its arguments say.
        if !changes_nothing(call, output.status) {
            // `{"a":1}` and `{ "a": 1 }` are the same call: compare the parsed arguments.
            match serde_json::from_str::<Value>(&call.arguments) {
                Ok(arguments) => arguments.to_string().hash(&mut hasher),
                Err(_) => call.arguments.hash(&mut hasher),
            }
        }
        output.content.hash(&mut hasher);
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

/// Calls with no effect, whatever their arguments: chapter 3's reading tools, and its writing
/// tools when they refused (a refused write or edit wrote nothing). A command (`bash`) or an
/// MCP tool may have changed something even when it failed: its arguments always count.
fn changes_nothing(call: &ToolCall, status: ToolStatus) -> bool {
    match call.name.as_str() {
        "read_file" | "list_files" | "search" => true,
        "write_file" | "edit_file" => status == ToolStatus::Error,
        _ => false,
    }
}

// ANCHOR_END: repeat_record

type Shared = Arc<Mutex<RepeatState>>;

/// The streak the tools and the model of a session share, for whoever holds the session: a
/// new message from the person resets it, and each turn's model is lent the stuck check.
#[derive(Clone, Default)]
pub struct Repeats(Shared);

impl Repeats {
    /// A new user message: whatever the model did before is not a loop any more.
    pub fn reset(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = RepeatState::default();
    }

    /// `model` for one turn, asked once more without tools when the streak reaches [`STOP_AT`].
    pub fn answer_without_tools<'a>(&self, model: impl Model + 'a) -> AnswerWithoutTools<'a> {
        AnswerWithoutTools { inner: Box::new(model), state: self.0.clone() }
    }
}

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

    /// `inner` watched for repetition with the streak `repeats` holds.
    pub fn sharing(inner: T, repeats: &Repeats) -> Self {
        RepeatNotes { inner, state: repeats.0.clone() }
    }

    /// A new user message: whatever the model did before is not a loop any more.
    pub fn reset(&self) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = RepeatState::default();
    }

    /// `model` for one turn, asked once more without tools when the streak reaches [`STOP_AT`].
    pub fn answer_without_tools<'a>(&self, model: impl Model + 'a) -> AnswerWithoutTools<'a> {
        AnswerWithoutTools { inner: Box::new(model), state: self.state.clone() }
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
        let streak = self.state.lock().unwrap_or_else(PoisonError::into_inner).record(call, &output);
        let next = match streak {
            s if s >= STOP_AT => "Tools are off now: give your final answer from what you have.".to_string(),
            _ => format!(
                "Repeating it will not change the result: use what you have, try something \
                 different, or give your final answer. At {STOP_AT} in a row tools are turned off."
            ),
        };
        if streak >= TELL_AT {
            output.content.push_str(&format!(
                "\n\n[mini-agent: this is the same {} call with the same result {streak} times in a row. \
                 {next}]",
                call.name
            ));
        }
        output
    }
}

// ANCHOR_END: repeat_notes_run
// ANCHOR: answer_without_tools
/// The model of one turn, which, once the model is stuck, asks it once more with no tools
/// offered, for its answer from what the session has. It also tells the shared state when a
/// reply arrives, so that a repeat is counted once per reply.
pub struct AnswerWithoutTools<'a> {
    inner: Box<dyn Model + 'a>,
    state: Shared,
}

impl Model for AnswerWithoutTools<'_> {
    fn complete(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        let (streak, name) = {
            let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            (state.streak, state.name.clone())
        };
        if streak < STOP_AT {
            let reply = self.inner.complete(request, observer)?;
            self.state.lock().unwrap_or_else(PoisonError::into_inner).new_reply = true;
            return Ok(reply);
        }
        let text = format!(
            "the model called {name} {streak} times in a row with the same result; asking it once \
             more, with tools off, for its answer from what it has"
        );
        observer.event(Event::Warning(&text))?;
        let reply = self.inner.complete(&Request { messages: request.messages, tools: &[] }, observer)?;
        let answer = reply.content.as_deref().unwrap_or_default();
        let answered = reply.tool_calls.is_empty()
            && !answer.trim().is_empty()
            && text_tool_call(answer, request.tools).is_none();
        if answered { Ok(reply) } else { Err(Error::Other(Box::new(Stuck { name, repeats: streak }))) }
    }
}
// ANCHOR_END: answer_without_tools

// ANCHOR: stuck
/// The model repeated one call with the same result `repeats` times in a row, and gave no
/// answer when asked without tools. Exit 2, like the turn limit: the task may be unfinished.
#[derive(Debug)]
pub struct Stuck {
    pub name: String,
    pub repeats: usize,
}

impl fmt::Display for Stuck {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let Stuck { name, repeats } = self;
        write!(
            f,
            "stopped: the model called {name} {repeats} times in a row with the same result, went on \
             after being told, and gave no answer when asked once more without tools; the task may \
             be unfinished"
        )
    }
}

impl Failure for Stuck {
    fn exit_code(&self) -> u8 {
        2
    }

    /// The tool name is the model's text: it could be anything.
    fn cleaned(&self, clean: &dyn Fn(&str) -> String) -> Box<dyn Failure> {
        Box::new(Stuck { name: clean(&self.name), repeats: self.repeats })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
// ANCHOR_END: stuck

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ch02_loop::{Limits, Message, Outcome, run_turn};

    /// Always the same answer, however often it is asked; `status` for every call.
    struct Constant(usize, ToolStatus, &'static str);
    impl Tools for Constant {
        fn schemas(&self) -> Vec<Value> {
            vec![serde_json::json!({"type": "function", "function": {"name": "bash"}})]
        }
        fn run(&mut self, _: &ToolCall) -> ToolOutput {
            self.0 += 1;
            ToolOutput { content: self.2.into(), status: self.1 }
        }
    }

    /// A model that calls `name` with `arguments(n)` on its n-th request while tools are
    /// offered, and answers `without_tools` (or calls again, when `None`) when none are.
    struct Caller {
        name: &'static str,
        arguments: fn(usize) -> String,
        requests: usize,
        without_tools: Option<&'static str>,
        tools_offered: Vec<bool>,
    }
    impl Model for Caller {
        fn complete(&mut self, request: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
            self.requests += 1;
            self.tools_offered.push(!request.tools.is_empty());
            if let (true, Some(answer)) = (request.tools.is_empty(), self.without_tools) {
                return Ok(Reply { content: Some(answer.into()), ..Reply::default() });
            }
            let arguments = (self.arguments)(self.requests);
            let call = ToolCall { id: format!("c{}", self.requests), name: self.name.into(), arguments };
            Ok(Reply { tool_calls: vec![call], ..Reply::default() })
        }
    }

    fn caller(
        name: &'static str,
        arguments: fn(usize) -> String,
        without_tools: Option<&'static str>,
    ) -> Caller {
        Caller { name, arguments, requests: 0, without_tools, tools_offered: Vec::new() }
    }

    /// A turn of `model` against `tools` (20 requests at most); its outcome and history.
    fn turn(model: &mut Caller, tools: Constant) -> (Outcome, Vec<Message>, RepeatNotes<Constant>) {
        let mut tools = RepeatNotes::new(tools);
        let mut history = vec![Message::User { content: "go".into() }];
        let mut model = tools.answer_without_tools(model);
        let outcome =
            run_turn(&mut model, &mut tools, &mut history, &mut Quiet::default(), &Limits { max_turns: 20 });
        (outcome, history, tools)
    }

    use crate::ch02_loop::fakes::Quiet;

    fn results(history: &[Message]) -> Vec<&str> {
        history
            .iter()
            .filter_map(|m| match m {
                Message::Tool { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_model_is_told_at_the_third_repeat_and_asked_without_tools_at_the_fifth() {
        let mut model = caller("bash", |n| format!("{{\"command\": \"echo 42\"{}}}", " ".repeat(n)), None);
        let (outcome, history, tools) = turn(&mut model, Constant(0, ToolStatus::Ok, "42"));
        // It called again when asked without tools: stopped.
        let Outcome::Failed(error) = &outcome else { panic!("{outcome:?}") };
        assert!(error.failure::<Stuck>().is_some_and(|stuck| stuck.name == "bash" && stuck.repeats == 5));
        assert_eq!(tools.inner.0, 5);
        assert_eq!(model.tools_offered, [true, true, true, true, true, false]);
        let results = results(&history);
        assert_eq!(results[..2], ["42", "42"]);
        assert!(results[2].contains("3 times in a row") && results[4].contains("5 times in a row"));
        assert!(results[4].contains("Tools are off now: give your final answer"), "{}", results[4]);
    }

    #[test]
    fn a_stuck_model_that_answers_without_tools_ends_the_turn_with_that_answer() {
        // The issue: the repeat guard stopped a run that printed nothing, the 42 in hand.
        let mut model = caller("bash", |_| r#"{"command": "echo 42"}"#.into(), Some("It prints 42."));
        let (outcome, _, _) = turn(&mut model, Constant(0, ToolStatus::Ok, "42"));
        assert!(matches!(outcome, Outcome::Completed(ref text) if text == "It prints 42."), "{outcome:?}");
        assert_eq!(model.tools_offered, [true, true, true, true, true, false]);
        // A call written as text is no answer either.
        let mut model = caller(
            "bash",
            |_| r#"{"command": "echo 42"}"#.into(),
            Some(r#"{"name": "bash", "arguments": {}}"#),
        );
        let (outcome, _, _) = turn(&mut model, Constant(0, ToolStatus::Ok, "42"));
        assert!(
            matches!(&outcome, Outcome::Failed(error) if error.failure::<Stuck>().is_some()),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_call_that_changes_nothing_is_a_repeat_whatever_its_arguments() {
        // An edit whose strings are equal, replace_all flipped each time: the same refusal.
        let flip = |n: usize| {
            format!(
                r#"{{"path": "a.py", "old_string": "x", "new_string": "x", "replace_all": {}}}"#,
                n.is_multiple_of(2)
            )
        };
        let nothing = "old_string and new_string are the same; nothing to change";
        let mut model = caller("edit_file", flip, Some("The file already says x."));
        let (outcome, _, tools) = turn(&mut model, Constant(0, ToolStatus::Error, nothing));
        assert!(matches!(outcome, Outcome::Completed(_)), "{outcome:?}");
        assert_eq!(tools.inner.0, 5, "asked without tools after the fifth");
        // A command's arguments always count: it may have changed something even when it failed.
        let mut model = caller("bash", |n| format!(r#"{{"command": "false {}"}}"#, n % 2), Some("done"));
        let (outcome, _, tools) = turn(&mut model, Constant(0, ToolStatus::Error, "[exit code 1]"));
        assert!(matches!(outcome, Outcome::TurnLimit), "{outcome:?}");
        assert_eq!(tools.inner.0, 20);
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
        let mut tools = RepeatNotes::new(Constant(0, ToolStatus::Ok, "42"));
        let mut history = vec![Message::User { content: "go".into() }];
        let mut batch = Batch(0);
        let mut model = tools.answer_without_tools(&mut batch);
        let outcome =
            run_turn(&mut model, &mut tools, &mut history, &mut Quiet::default(), &Limits { max_turns: 5 });
        assert!(matches!(outcome, Outcome::Completed(ref text) if text == "done"), "{outcome:?}");
        assert_eq!(tools.inner.0, 20);
    }

    #[test]
    fn different_arguments_are_not_a_loop() {
        let mut model = caller("bash", |n| format!("{{\"command\": \"echo {}\"}}", n % 2), None);
        let (outcome, _, tools) = turn(&mut model, Constant(0, ToolStatus::Ok, "42"));
        assert!(matches!(outcome, Outcome::TurnLimit), "{outcome:?}");
        assert_eq!(tools.inner.0, 20);
    }
}
