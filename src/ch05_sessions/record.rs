//! Chapter 5 — the record format: one JSON object per line, a fact rather than a snapshot.
//!
//! The types here are the file format itself (see the table in the chapter's module doc), so
//! they are plain serde types with no behaviour of their own; [`Origin`] says where the model
//! lives, recorded without credentials.

use crate::ch02_loop::{ToolCall, ToolStatus, Usage};
use serde::{Deserialize, Serialize};

/// Written into every `session` record; a reader refuses versions it does not know.
pub const FORMAT_VERSION: u32 = 1;

// ANCHOR: record
/// One line of a session file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub seq: u64,
    pub ts: String,
    #[serde(flatten)]
    pub body: Body,
}
// ANCHOR_END: record

// ANCHOR: body
/// What a record says. The `type` field of the line picks the variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Body {
    Session {
        version: u32,
        id: String,
        root: String,
        model: String,
        /// Absent in journals written before it was recorded: those spoke `openai`.
        #[serde(default = "default_api")]
        api: String,
        /// Absent in older journals: then a resumed session uses the current defaults.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        endpoint: Option<String>,
        created: String,
    },
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: Option<String>,
        tool_calls: Vec<ToolCall>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    // ANCHOR_END: body
    // ANCHOR: record_tools
    ToolStarted {
        id: String,
        name: String,
        arguments: String,
    },
    ToolFinished {
        id: String,
        status: ToolStatus,
        content: String,
    },
    Interrupted {},
    Compaction {
        summary: String,
        replaces: usize,
        /// Messages after the system prompt sent with large tool output elided (chapter 7).
        #[serde(default, skip_serializing_if = "is_zero")]
        elided: usize,
    },
    // ANCHOR_END: record_tools
    // ANCHOR: record_later
    Retry {
        attempt: u32,
        wait_ms: u64,
        reason: String,
    },
    Partial {
        content: String,
    },
    Error {
        message: String,
    },
    Usage {
        prompt_tokens: u64,
        completion_tokens: u64,
    },
    /// A hook ran (chapter 16): for which event, which command, about which tool call, and
    /// how it ended (`exit 0`, `blocked: …`, `timed out after 30 s`).
    Hook {
        event: String,
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
        outcome: String,
    },
    /// The sandbox of the session's commands, the first time a run opens it (chapter 20):
    /// the mode, whether the network was open, and what this machine did not enforce.
    Sandbox {
        mode: String,
        network: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        not_enforced: Vec<String>,
    },
}
// ANCHOR_END: record_later

/// The pattern of a side note: a record the model never reads and that moves no conversation
/// along (the header, a compaction, a retry, a cut stream's text, usage, a hook that ran, the
/// sandbox a run opened). The
/// one list of them, used as a pattern (`side_note!() => {}`) by replaying a session (here)
/// and by reading where it stopped (chapter 10), so their matches stay exhaustive: a new
/// record kind is placed on purpose, here or in each match.
macro_rules! side_note {
    () => {
        $crate::ch05_sessions::Body::Session { .. }
            | $crate::ch05_sessions::Body::Compaction { .. }
            | $crate::ch05_sessions::Body::Retry { .. }
            | $crate::ch05_sessions::Body::Partial { .. }
            | $crate::ch05_sessions::Body::Usage { .. }
            | $crate::ch05_sessions::Body::Hook { .. }
            | $crate::ch05_sessions::Body::Sandbox { .. }
    };
}
pub(crate) use side_note;

fn is_zero(value: &usize) -> bool {
    *value == 0
}

// ANCHOR: origin
/// Where a session talks: its model, the wire format (`api`) and the endpoint, as the
/// `session` record keeps them so that `-c` and `--resume` go back to the same place.
/// The endpoint is recorded without credentials: no `user:password@`, no `key=` in the
/// query; the key itself lives in the environment and is never written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub model: String,
    pub api: String,
    /// The base URL, or [`DEMO_ENDPOINT`]; `None` when an older journal did not say.
    pub endpoint: Option<String>,
}

/// The endpoint recorded for the built-in demo model, whose port changes every run.
pub const DEMO_ENDPOINT: &str = "demo";
/// The only wire format so far: OpenAI's Chat Completions (chapter 2's client).
pub use crate::ch02_model::layers::OPENAI_API;

impl Origin {
    /// The origin of a session about to start against `base_url` (credentials removed).
    pub fn new(model: &str, api: &str, base_url: &str) -> Origin {
        Origin { model: model.into(), api: api.into(), endpoint: Some(without_credentials(base_url)) }
    }
}

/// A model id alone: the origin of test and benchmark sessions.
impl From<&str> for Origin {
    fn from(model: &str) -> Origin {
        Origin { model: model.into(), api: OPENAI_API.into(), endpoint: None }
    }
}

fn default_api() -> String {
    OPENAI_API.into()
}

/// The one definition of a URL without its credentials lives with the other secrets.
pub use crate::ch03_tools::url_credentials::without_credentials;
// ANCHOR_END: origin
