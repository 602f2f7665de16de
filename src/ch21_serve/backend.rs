//! The seam between the service and the agent: what HTTP needs from sessions and tasks.
//!
//! The service knows requests, streams and turns waiting for a slot; it does not know how a
//! model is called or where a journal lives. Everything it needs from the agent is this one
//! trait, written in JSON values because JSON is what it sends on: the composition root
//! implements it with the real `Agent`, the real journals and the task list, and the tests
//! of this chapter with a double that scripts its turns. It is the `Tools` and `Model` idea
//! of chapter 2 once more: the loop did not know what a tool was, the server does not know
//! what an agent is.
//!
//! What the service keeps itself, because it is about HTTP and not about agents: the queue
//! of messages per session, the run slots, the events kept for a stream to resume, and the
//! approvals a turn is waiting for. A turn reaches those through the [`Turn`] it is given.

use super::response::Refusal;
use super::turns::Turn;
use serde_json::Value;

// ANCHOR: backend
/// What the service asks of the agent. Every method may be called from many threads at once,
/// for different sessions; `run_turn` is never called twice at once for one session.
pub trait Backend: Send + Sync + 'static {
    /// Starts a session in `root` (a subdirectory of the served directory, or the directory
    /// itself for `None`) and returns its id. A root outside the served directory is a 400.
    fn create_session(&self, root: Option<&str>) -> Result<String, Refusal>;

    /// The sessions, newest first, each an object with at least `"id"` (the fields of
    /// `mini-agent sessions`).
    fn list_sessions(&self) -> Result<Vec<Value>, Refusal>;

    /// Whether `id` names a session (cheap: no journal is read).
    fn has_session(&self, id: &str) -> bool;

    /// One session: its fields and `"transcript"`, its messages as events a console draws.
    fn session(&self, id: &str) -> Result<Value, Refusal>;

    /// Removes a session that no turn is using.
    fn delete_session(&self, id: &str) -> Result<(), Refusal>;

    /// Runs one user message to its end, giving each event of the turn to `turn.emit` (the
    /// `--json` events: `session`, `request`, `assistant`, `tool_started`, …; `final` and
    /// `exit` are the service's) and asking `turn.ask` when a call needs permission. The turn
    /// stops early when `turn.cancelled()` becomes true, as at Ctrl+C.
    fn run_turn(&self, id: &str, message: &str, turn: &Turn) -> TurnEnd;

    /// The task list (`{"tasks": [...]}`, the fields of `tasks.json`).
    fn tasks(&self) -> Result<Value, Refusal>;

    /// Adds a task from `{"name", "verify"?, "priority"?}` and returns it.
    fn add_task(&self, task: &Value) -> Result<Value, Refusal>;

    /// Puts a task back to pending (`mini-agent tasks reset ID`) and returns it.
    fn reset_task(&self, id: &str) -> Result<Value, Refusal>;
}
// ANCHOR_END: backend

/// How a turn ended, as `-p` ends: the exit code (0 completed, 1 failed, 2 turn limit, 130
/// interrupted), the final answer of a completed turn, and the one-line reason otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEnd {
    pub code: u8,
    pub answer: Option<String>,
    pub error: Option<String>,
    /// For a turn that could not start, for a reason the client can act on: the refusal
    /// `POST …/messages` answers with instead of 200 (409: the session is open elsewhere).
    pub refused: Option<Refusal>,
}

impl TurnEnd {
    pub fn completed(answer: impl Into<String>) -> TurnEnd {
        TurnEnd { code: 0, answer: Some(answer.into()), error: None, refused: None }
    }

    pub fn failed(code: u8, error: impl Into<String>) -> TurnEnd {
        TurnEnd { code, answer: None, error: Some(error.into()), refused: None }
    }

    /// A turn that never started, and recorded nothing: exit 1 for its events, `refusal` for
    /// the plain request.
    pub fn refused(refusal: Refusal) -> TurnEnd {
        TurnEnd { code: 1, answer: None, error: Some(refusal.message.clone()), refused: Some(refusal) }
    }
}

/// A call waiting for a person: what the terminal would show before `allow?`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// The tool call's id, which names the approval in the URL.
    pub call_id: String,
    /// The tool (`bash`, `write_file`, …).
    pub tool: String,
    /// The question's text (`bash wants to run: cargo test`).
    pub question: String,
    /// The change, as a unified diff, for a write or an edit.
    pub diff: Option<String>,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Deny, with a reason for the model (maybe empty).
    Deny(String),
}
