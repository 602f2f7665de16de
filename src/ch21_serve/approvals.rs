//! Approvals over HTTP: a turn waits at a desk until a person answers, from any client.
//!
//! At the terminal the permission question blocks the turn until a line is typed. Here the
//! question is put on the session's desk, the turn's thread sleeps on it, and whoever answers
//! (`POST /sessions/{id}/approvals/{call_id}`) wakes it. Nobody may be watching, so a waiting
//! turn gives its run slot back ([`Turn::ask`](super::turns::Turn::ask)): a question left
//! open over lunch must not stop every other session. Cancelling the turn or stopping the
//! service ends the wait too; the call is then denied, as an unanswered question is at the
//! terminal.

use super::backend::{ApprovalRequest, Decision};
use super::response::Refusal;
use serde_json::{Value, json};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// How often a waiting turn looks at its cancel flag (a cancel also wakes it at once).
const CHECK_EVERY: Duration = Duration::from_millis(500);

struct Waiting {
    request: ApprovalRequest,
    decision: Option<Decision>,
}

/// The questions one session's turn is waiting on (one at a time in practice: a turn asks
/// about its calls in order).
#[derive(Default)]
pub struct Desk {
    waiting: Mutex<Vec<Waiting>>,
    answered: Condvar,
}

impl Desk {
    // ANCHOR: desk
    /// Puts the question up and waits for an answer, or for `give_up` to say the turn is
    /// over (`None`).
    pub fn ask(&self, request: ApprovalRequest, give_up: impl Fn() -> bool) -> Option<Decision> {
        let call_id = request.call_id.clone();
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.push(Waiting { request, decision: None });
        loop {
            let at = waiting.iter().position(|entry| entry.request.call_id == call_id)?;
            if waiting[at].decision.is_some() || give_up() {
                return waiting.remove(at).decision;
            }
            waiting =
                self.answered.wait_timeout(waiting, CHECK_EVERY).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
    // ANCHOR_END: desk

    /// Answers the question about `call_id`; a 404 if no turn is waiting on it (answered
    /// already, or never asked).
    pub fn answer(&self, call_id: &str, decision: Decision) -> Result<(), Refusal> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = waiting
            .iter_mut()
            .find(|entry| entry.request.call_id == call_id && entry.decision.is_none())
            .ok_or_else(|| {
                Refusal::new(404, format!("no call {call_id:?} is waiting for approval in this session"))
            })?;
        entry.decision = Some(decision);
        drop(waiting);
        self.answered.notify_all();
        Ok(())
    }

    /// What waits, as the API lists it.
    pub fn list(&self) -> Vec<Value> {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting
            .iter()
            .filter(|entry| entry.decision.is_none())
            .map(|entry| describe(&entry.request))
            .collect()
    }

    /// Whether a question about `call_id` is up already.
    pub fn waits_on(&self, call_id: &str) -> bool {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|entry| entry.request.call_id == call_id)
    }

    pub fn len(&self) -> usize {
        self.list().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Wakes the waiting turn so it looks at its cancel flag now.
    pub fn wake(&self) {
        let _guard = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        self.answered.notify_all();
    }
}

/// An approval as JSON: the fields of [`ApprovalRequest`].
pub fn describe(request: &ApprovalRequest) -> Value {
    json!({
        "call_id": request.call_id, "name": request.tool, "question": request.question, "diff": request.diff,
    })
}
