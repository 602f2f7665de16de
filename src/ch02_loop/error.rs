//! Chapter 2 — the crate's one error type, and the words each variant becomes: what happened,
//! to what, and what to do next. `main` turns it into one line and an exit code.

use crate::ch02_model::errors::output_not_parsed;
use std::any::Any;
use std::fmt;

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
        retry_after_ms: Option<u64>,
        code: Option<String>,
    },
    /// The connection failed, timed out or was cut after the request left: not sent again.
    Network(String),
    /// The connection was refused or could not be made: nothing was sent, a retry is safe.
    Refused(String),
    /// The reply ended for `reason` (`length`, `content_filter`) before the model finished:
    /// `chars` characters of text arrived, and `dropped_calls` unfinished tool calls were not run.
    ReplyCut { reason: String, chars: usize, dropped_calls: usize },
    /// The server answered, but not with something we can use.
    Model(String),
    /// A file operation failed; `context` names the file and what we were doing.
    Io { context: String, source: std::io::Error },
    /// The user pressed Ctrl+C.
    Interrupted,
    /// A failure a later chapter defines: a session's journal (chapter 5), a model stuck
    /// repeating a call (chapter 7).
    Other(Box<dyn Failure>),
}
// ANCHOR_END: error

// ANCHOR: failure
/// What chapter 2 needs of a later chapter's failure: its line, the exit status of a run it
/// ends, and its words cleaned (chapter 3 redacts every error before it is shown).
pub trait Failure: fmt::Display + fmt::Debug + Send + Sync + 'static {
    /// 1, unless the chapter says otherwise.
    fn exit_code(&self) -> u8 {
        1
    }
    /// The same failure with every text in it passed through `clean`.
    fn cleaned(&self, clean: &dyn Fn(&str) -> String) -> Box<dyn Failure>;
    /// For the chapter that declared it, to know its own failure again.
    fn as_any(&self) -> &dyn Any;
}

impl Error {
    /// The later chapter's failure of type `F`, if this is one.
    pub fn failure<F: Failure>(&self) -> Option<&F> {
        match self {
            Error::Other(failure) => failure.as_any().downcast_ref(),
            _ => None,
        }
    }
}
// ANCHOR_END: failure

impl Error {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }
}

impl fmt::Display for Error {
    // ANCHOR: fmt
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Error::Usage(text) | Error::Config(text) => f.write_str(text),
            Error::Http { status, message, code, .. } => {
                write!(f, "model request failed: {status} {message}")?;
                match status {
                    429 if code.as_deref() == Some("insufficient_quota") => {
                        write!(f, " — the account's quota is used up; check billing")
                    }
                    401 | 403 => write!(f, " — check OPENAI_API_KEY"),
                    404 => write!(f, " — check --base-url and --model"),
                    // A web server that is not a model API: `python -m http.server` says 501.
                    405 | 501 => write!(
                        f,
                        " — this server does not take API requests here; is --base-url an \
                         OpenAI-compatible endpoint (one usually ending in /v1)?"
                    ),
                    400 if message.contains("plain HTTP request was sent to HTTPS port") => {
                        write!(f, " — the server speaks HTTPS: use https:// in --base-url")
                    }
                    429 => write!(f, " — rate limited; wait and try again"),
                    500 if output_not_parsed(message) => write!(
                        f,
                        " — the server could not read the model's output as a reply in its \
                         tool-call format: a sampling slip of the model, nothing ran; try again \
                         (larger models slip less)"
                    ),
                    500..=599 => write!(f, " — the server failed; try again later"),
                    _ => Ok(()),
                }
            }
            Error::Network(text) | Error::Refused(text) => write!(f, "model request failed: {text}"),
            Error::ReplyCut { reason, chars, dropped_calls } => {
                match reason.as_str() {
                    "length" => write!(f, "the reply was cut off at the model's output limit")?,
                    "max_tokens" => {
                        write!(f, "the reply was cut off at max_tokens, the request's output limit")?
                    }
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
            Error::Model(text) => write!(f, "unusable model reply: {text}"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Interrupted => f.write_str("interrupted"),
            Error::Other(failure) => write!(f, "{failure}"),
        }
    }
    // ANCHOR_END: fmt
}

impl std::error::Error for Error {}
