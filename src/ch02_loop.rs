//! Chapter 1 — the loop.
//!
//! A coding agent is a loop: send the conversation to a model, and if the reply asks for
//! tools, run them, append their results and ask again; stop when the model answers in
//! plain text. Everything else in this crate is a piece that plugs into one of the three
//! seams this file defines:
//!
//! * [`Model`] completes a request. Chapter 2 speaks HTTP; chapter 8 wraps it with retries,
//!   chapter 11 streams, chapter 7 compacts what is sent.
//! * [`Tools`] lists schemas and runs a call. Chapter 3 implements the six tools; chapter 12
//!   wraps them in a permission gate.
//! * [`Observer`] sees every event. The terminal prints them (chapter 4), the journal writes
//!   them to disk before the loop goes on (chapter 9), `--json` prints them as lines.
//!
//! Because the seams are traits, later chapters add code instead of editing this file: the
//! loop you read here is the loop that runs.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

// ANCHOR: messages
/// One entry of the conversation, in the order the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System { content: String },
    User { content: String },
    Assistant { content: Option<String>, tool_calls: Vec<ToolCall> },
    Tool { tool_call_id: String, content: String },
}

/// A request from the model to run one tool. `arguments` is the JSON text as the model
/// wrote it: it is parsed (and may be invalid) only when the tool runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}
// ANCHOR_END: messages

// ANCHOR: tool_output
/// What a tool run produced: the text the model will read, and how it ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub content: String,
    pub status: ToolStatus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Error,
    /// The permission gate refused the call (chapter 12).
    #[cfg(feature = "ch12")]
    Denied,
    Interrupted,
    /// Recovery answers a call that never started (chapter 10).
    #[cfg(feature = "ch10")]
    NotRun,
    /// Recovery answers a call that started and never finished (chapter 10).
    #[cfg(feature = "ch10")]
    Unknown,
}
// ANCHOR_END: tool_output

// ANCHOR: request_reply
/// What one model call is asked: the whole conversation and the tool schemas.
pub struct Request<'a> {
    pub messages: &'a [Message],
    pub tools: &'a [Value],
}

/// What one model call answered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    /// Why the model stopped (`stop`, `tool_calls`, `length`…), when the server said.
    pub finish_reason: Option<String>,
    #[cfg(feature = "ch19")]
    pub cache: CacheUsage,
}

impl Reply {
    /// `Some(reason)` when the model stopped before it finished (the output limit, a content
    /// filter): not an answer, and its tool calls may be cut in the middle of their arguments.
    pub(crate) fn cut_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref().filter(|reason| CUT_REASONS.contains(reason))
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}
// ANCHOR_END: request_reply

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

/// The finish reasons of a cut reply: chapter 2's `length` and `content_filter`.
#[cfg(not(feature = "ch19"))]
const CUT_REASONS: &[&str] = &["length", "content_filter"];
/// Chapter 19's Messages API adds `max_tokens`, and `refusal` when the model declines.
#[cfg(feature = "ch19")]
const CUT_REASONS: &[&str] = &["length", "content_filter", "max_tokens", "refusal"];

/// A reply's `cache` (chapter 19): prompt tokens read from the server's prompt cache, and
/// written to it.
#[cfg(feature = "ch19")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUsage {
    pub read: u64,
    pub written: u64,
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
        usage: Option<Usage>,
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

/// Tool calls kept from one reply; the rest are dropped before they reach the history (a reply
/// of a thousand calls must not run a thousand commands, nor cost the history a thousand results).
pub(crate) const MAX_CALLS_PER_REPLY: usize = 64;

// ANCHOR: run_turn
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
        #[cfg(feature = "ch04")]
        for content in observer.queued_input() {
            append(history, observer, Message::User { content })?;
        }
        check_interrupt()?;
        observer.event(Event::Request { messages: history.len() })?;
        let request = Request { messages: history, tools: &schemas };
        let mut reply = model.complete(&request, observer)?;
        // ANCHOR_END: run_turn
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
            Err(Error::Interrupted) => return Outcome::Interrupted,
            Err(error) => return Outcome::Failed(error),
        }
    }
    Outcome::TurnLimit
}

fn append(history: &mut Vec<Message>, observer: &mut dyn Observer, message: Message) -> Result<(), Error> {
    history.push(message);
    observer.event(Event::Message(history.last().expect("just pushed")))
}
// ANCHOR_END: turn_loop

// ANCHOR: interrupt
/// The one piece of global state: set by Ctrl+C, polled by everything that waits.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

pub fn set_interrupted(value: bool) {
    INTERRUPTED.store(value, Ordering::SeqCst);
}

fn check_interrupt() -> Result<(), Error> {
    if interrupted() { Err(Error::Interrupted) } else { Ok(()) }
}
// ANCHOR_END: interrupt

// ANCHOR: error
/// The crate's one error type. Each variant carries what a user needs to act:
/// which file, which request, which flag. `main` turns it into one line and an exit code.
#[derive(Debug)]
pub enum Error {
    /// The command line was wrong; the text says how to fix it.
    Usage(String),
    /// Configuration (environment, files) is missing or wrong.
    Config(String),
    /// The server answered with a non-success status.
    Http {
        status: u16,
        message: String,
        /// How long the server asked us to wait (`Retry-After`, chapter 8).
        #[cfg(feature = "ch08")]
        retry_after_ms: Option<u64>,
        code: Option<String>,
    },
    /// The connection failed, timed out or was cut; the server may have acted.
    Network(String),
    /// The connection was refused or could not be made: nothing was sent, a retry is safe.
    Refused(String),
    /// The reply ended for `reason` (`length`, `content_filter`) before the model finished:
    /// `chars` characters of text arrived, and `dropped_calls` unfinished tool calls were not run.
    ReplyCut { reason: String, chars: usize, dropped_calls: usize },
    /// The model repeated one call with the same result `repeats` times in a row (chapter 7).
    #[cfg(feature = "ch07")]
    Stuck { name: String, repeats: usize },
    /// The server answered, but not with something we can use.
    Model(String),
    /// A file operation failed; `context` names the file and what we were doing.
    Io { context: String, source: std::io::Error },
    /// A session or journal problem (corrupt line, lock held, unknown outcomes…).
    #[cfg(feature = "ch05")]
    Session(String),
    /// The user pressed Ctrl+C.
    Interrupted,
}
// ANCHOR_END: error

impl Error {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }
}

// ANCHOR: error_display
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Error::Usage(text) | Error::Config(text) => f.write_str(text),
            #[cfg(feature = "ch05")]
            Error::Session(text) => f.write_str(text),
            Error::Http { status, message, code, .. } => {
                write!(f, "model request failed: {status} {message}")?;
                match status {
                    429 if code.as_deref() == Some("insufficient_quota") => {
                        write!(f, " — the account's quota is used up; check billing")
                    }
                    401 | 403 => write!(f, " — check OPENAI_API_KEY"),
                    404 => write!(f, " — check --base-url and --model"),
                    429 => write!(f, " — rate limited; wait and try again"),
                    500..=599 => write!(f, " — the server failed; try again later"),
                    _ => Ok(()),
                }
            }
            Error::Network(text) | Error::Refused(text) => write!(f, "model request failed: {text}"),
            // ANCHOR_END: error_display
            // ANCHOR: error_display_rest
            Error::ReplyCut { reason, chars, dropped_calls } => {
                match reason.as_str() {
                    "length" => write!(f, "the reply was cut off at the model's output limit")?,
                    #[cfg(feature = "ch19")]
                    "max_tokens" => {
                        write!(f, "the reply was cut off at max_tokens, the request's output limit")?
                    }
                    #[cfg(feature = "ch19")]
                    "refusal" => write!(f, "the model refused to go on")?,
                    _ => write!(f, "the reply was stopped by the server's content filter")?,
                }
                write!(f, " (finish_reason {reason:?}) after {chars} characters")?;
                match dropped_calls {
                    0 => {}
                    1 => write!(f, "; its unfinished tool call was not run")?,
                    n => write!(f, "; its {n} unfinished tool calls were not run")?,
                }
                match reason.as_str() {
                    #[cfg(feature = "ch19")]
                    "max_tokens" => {
                        write!(f, " — not a finished answer: raise MINI_AGENT_MAX_TOKENS, or ask for less")
                    }
                    "length" => write!(
                        f,
                        " — not a finished answer: raise the server's output-token limit, or ask for less"
                    ),
                    _ => write!(f, " — not a finished answer"),
                }
            }
            #[cfg(feature = "ch07")]
            Error::Stuck { name, repeats } => write!(
                f,
                "stopped: the model called {name} {repeats} times in a row with the same arguments and \
                 the same result, and went on after being told; the task may be unfinished"
            ),
            Error::Model(text) => write!(f, "unusable model reply: {text}"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for Error {}
// ANCHOR_END: error_display_rest

/// `bash cargo test`, `read_file src/main.rs`, `list_files .`: a tool call as a person reads
/// it, for progress lines and `--status` alike. The argument that says what the call does,
/// on one line (`…` marks what was cut); the screen's sanitiser (chapter 4) shows control
/// characters when it is printed.
pub fn describe_call(call: &ToolCall) -> String {
    let arguments: serde_json::Map<String, Value> = serde_json::from_str(&call.arguments).unwrap_or_default();
    let text = |key: &str| arguments.get(key).and_then(Value::as_str).filter(|value| !value.is_empty());
    let what = match call.name.as_str() {
        "list_files" => {
            [text("path").or(Some(".")), text("pattern")].into_iter().flatten().collect::<Vec<_>>().join(" ")
        }
        "search" => match (text("pattern"), text("path")) {
            (Some(pattern), Some(path)) => format!("{pattern} in {path}"),
            (pattern, _) => pattern.unwrap_or_default().to_string(),
        },
        _ => match ["command", "path", "pattern", "name"].iter().find_map(|key| text(key)) {
            Some(value) => value.to_string(),
            None if arguments.is_empty() => String::new(),
            None => call.arguments.clone(),
        },
    };
    let shown = crate::text::first_line(&what, 80);
    if shown.is_empty() { call.name.clone() } else { format!("{} {shown}", call.name) }
}

pub use crate::text::plural;

/// Test doubles of the seams, shared by every chapter's tests.
#[cfg(test)]
#[path = "ch02_fakes.rs"]
pub(crate) mod fakes;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_described_by_what_it_does() {
        let call = |name: &str, arguments: &str| ToolCall {
            id: "a".into(),
            name: name.into(),
            arguments: arguments.into(),
        };
        assert_eq!(describe_call(&call("list_files", "{}")), "list_files .");
        assert_eq!(
            describe_call(&call("list_files", r#"{"path":"src","pattern":"*.rs"}"#)),
            "list_files src *.rs"
        );
        assert_eq!(describe_call(&call("bash", r#"{"command":"cargo test\nmore"}"#)), "bash cargo test…");
        assert_eq!(
            describe_call(&call("search", r#"{"pattern":"TODO","path":"src"}"#)),
            "search TODO in src"
        );
        // Control characters are left to whoever prints it: chapter 4's `sanitize` is the one way.
        assert_eq!(describe_call(&call("read_file", r#"{"path":"a\u001b[2J"}"#)), "read_file a\u{1b}[2J");
        assert_eq!(describe_call(&call("odd", "not json")), "odd");
    }

    use super::fakes::{Quiet, RecordingTools, ScriptedModel};

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall { id: id.into(), name: name.into(), arguments: "{}".into() }
    }
    fn calls(list: Vec<ToolCall>) -> Reply {
        Reply { tool_calls: list, ..Reply::default() }
    }
    fn text(t: &str) -> Reply {
        Reply { content: Some(t.into()), ..Reply::default() }
    }

    #[test]
    fn every_tool_call_is_answered_once_in_order() {
        let mut model =
            ScriptedModel::new(vec![calls(vec![call("a", "one"), call("b", "two")]), text("done")]);
        let mut tools = RecordingTools::default();
        let mut history = vec![Message::User { content: "go".into() }];
        let outcome =
            run_turn(&mut model, &mut tools, &mut history, &mut Quiet::default(), &Limits { max_turns: 5 });
        assert!(matches!(outcome, Outcome::Completed(ref t) if t == "done"));
        assert_eq!(tools.names(), ["one", "two"]);
        let answered: Vec<&str> = history
            .iter()
            .filter_map(|m| match m {
                Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(answered, ["a", "b"]);
        assert_eq!(model.sent, [1, 4]);
    }

    #[test]
    fn the_turn_limit_stops_a_model_that_never_stops() {
        let replies = (0..3).map(|i| calls(vec![call(&i.to_string(), "x")])).collect();
        let mut model = ScriptedModel::new(replies);
        let mut history = vec![Message::User { content: "go".into() }];
        let outcome = run_turn(
            &mut model,
            &mut RecordingTools::default(),
            &mut history,
            &mut Quiet::default(),
            &Limits { max_turns: 2 },
        );
        assert!(matches!(outcome, Outcome::TurnLimit));
        assert_eq!(model.sent.len(), 2);
    }

    #[cfg(feature = "ch04")]
    #[test]
    fn queued_input_joins_the_next_request() {
        let mut model = ScriptedModel::new(vec![text("ok")]);
        let mut history = vec![Message::User { content: "first".into() }];
        let mut observer = Quiet(vec!["typed meanwhile".into()]);
        run_turn(
            &mut model,
            &mut RecordingTools::default(),
            &mut history,
            &mut observer,
            &Limits { max_turns: 1 },
        );
        assert_eq!(history[1], Message::User { content: "typed meanwhile".into() });
        assert_eq!(model.sent, [2]);
    }

    #[test]
    fn a_model_error_fails_the_turn() {
        let mut model = ScriptedModel::new(vec![]);
        let mut history = vec![Message::User { content: "go".into() }];
        let outcome = run_turn(
            &mut model,
            &mut RecordingTools::default(),
            &mut history,
            &mut Quiet::default(),
            &Limits { max_turns: 3 },
        );
        assert!(matches!(outcome, Outcome::Failed(Error::Model(_))));
    }
}
