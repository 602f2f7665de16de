//! The compaction as recorded: a summary replacing the first messages, and the view built
//! from it. The history stays append-only; a [`CompactionRecord`] in the journal lets a
//! resumed session rebuild the very same view, and [`CompactionState`] is the one in force.

use crate::ch02_loop::{Message, Notice, Usage};
use crate::ch05_sessions::Body;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::any::Any;
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

// ANCHOR: record
/// A compaction as recorded in the session: the summary, and how many messages it replaces
/// — counted from the first message after the leading system message(s).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    pub summary: String,
    pub replaced: usize,
    /// The first `elided` messages after the system prompt are sent with large tool results
    /// and arguments cut short ([`crate::ch07_context::shrink::elided`]); those before `replaced` are in the summary anyway.
    #[serde(default)]
    pub elided: usize,
    /// Estimated tokens of the view before and after (for the user; replay ignores them).
    #[serde(default)]
    pub tokens_before: u64,
    #[serde(default)]
    pub tokens_after: u64,
    /// What the summary request cost, when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}
// ANCHOR_END: record

// ANCHOR: compacted
/// Older messages are now sent as `record` says: a summary (`summarised`), or only with large
/// tool output elided (no model call). A line on the screen, a `compaction` record in the
/// journal (and a `usage` one for what the summary cost), a `compaction` event for `--json`.
#[derive(Clone, Debug)]
pub struct Compacted {
    pub record: CompactionRecord,
    pub summarised: bool,
}

impl Notice for Compacted {
    fn line(&self, _: Option<usize>) -> Option<String> {
        let CompactionRecord { replaced, tokens_before, tokens_after, .. } = self.record;
        let what = match self.summarised {
            true => format!("{replaced} earlier messages summarised"),
            false => "large old tool output elided".to_string(),
        };
        Some(format!("compaction: {what} to save context (about {tokens_before} → {tokens_after} tokens)"))
    }

    fn records(&self) -> Vec<Value> {
        let CompactionRecord { summary, replaced, elided, usage, .. } = self.record.clone();
        let mut records = vec![json!(Body::Compaction { summary, replaces: replaced, elided })];
        // The summary was a model call of its own: its tokens count too.
        if let Some(Usage { prompt_tokens, completion_tokens }) = usage {
            records.push(json!(Body::Usage { prompt_tokens, completion_tokens }));
        }
        records
    }

    fn json(&self) -> Option<Value> {
        let CompactionRecord { summary, replaced, elided, tokens_before, tokens_after, .. } = &self.record;
        Some(json!({
            "type": "compaction", "replaced": replaced, "elided": elided, "tokens_before": tokens_before,
            "tokens_after": tokens_after, "summary": summary,
        }))
    }

    fn cleaned(&self, clean: &dyn Fn(&str) -> String) -> Box<dyn Notice> {
        let record = CompactionRecord { summary: clean(&self.record.summary), ..self.record.clone() };
        Box::new(Compacted { record, summarised: self.summarised })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
// ANCHOR_END: compacted

// ANCHOR: apply_compaction
/// The messages sent to the model once `summary` stands for the first `replaced` messages
/// after the system prompt. Replaying a recorded compaction calls this with the same
/// arguments and so rebuilds exactly the view that was sent.
pub fn apply_compaction(history: &[Message], summary: &str, replaced: usize, elided: usize) -> Vec<Message> {
    let start = system_prefix_len(history);
    let resume_at = (start + replaced).min(history.len());
    let elide_until = (start + elided).clamp(resume_at, history.len());
    let mut view = history[..start].to_vec();
    // Only elision, no summary yet: nothing stands for earlier messages.
    if replaced > 0 || !summary.is_empty() {
        view.push(Message::User { content: summary_message(summary, replaced) });
    }
    view.extend(
        history[resume_at..elide_until].iter().map(|m| crate::ch07_context::shrink::elided(m).into_owned()),
    );
    view.extend_from_slice(&history[elide_until..]);
    view
}

pub(super) fn summary_message(summary: &str, replaced: usize) -> String {
    format!(
        "[Summary of the earlier conversation: {replaced} messages were replaced by it to save \
         context.]\n{summary}"
    )
}

pub(super) fn system_prefix_len(history: &[Message]) -> usize {
    history.iter().take_while(|m| matches!(m, Message::System { .. })).count()
}
// ANCHOR_END: apply_compaction

/// The compaction in force, shared between the [`Compacting`] model and whoever restores
/// it from a journal (resume) or clears it (`/new`). `generation` changes on every change,
/// so that token counts measured against an older view are not reused.
#[derive(Clone, Debug, Default)]
pub struct CompactionState {
    pub(super) current: Option<CompactionRecord>,
    pub(super) generation: u64,
    /// The first message after the system prompt when the summary was made here: a history
    /// that starts differently is another session, and the summary must not leak into it.
    first_message: Option<Message>,
}

pub type SharedCompaction = Arc<Mutex<CompactionState>>;

impl CompactionState {
    pub fn shared() -> SharedCompaction {
        Arc::default()
    }

    pub fn current(&self) -> Option<&CompactionRecord> {
        self.current.as_ref()
    }

    /// Seeds the state from a recorded compaction (replay on resume, `/resume`).
    pub fn restore(&mut self, record: CompactionRecord) {
        self.set(record, None);
    }

    /// Forgets the compaction (`/new`, or a session without one).
    pub fn clear(&mut self) {
        self.current = None;
        self.first_message = None;
        self.generation += 1;
    }

    pub(super) fn set(&mut self, record: CompactionRecord, first_message: Option<Message>) {
        self.current = Some(record);
        self.first_message = first_message;
        self.generation += 1;
    }

    /// The messages to send for `history`. A record that does not fit the history (it belongs
    /// to another session) is ignored rather than cutting the wrong messages.
    pub fn view<'a>(&self, history: &'a [Message]) -> Cow<'a, [Message]> {
        match self.record_for(history) {
            Some(record) => {
                Cow::Owned(apply_compaction(history, &record.summary, record.replaced, record.elided))
            }
            None => Cow::Borrowed(history),
        }
    }

    /// How many messages after the system prompt are already summarised.
    pub(super) fn replaced(&self, history: &[Message]) -> usize {
        self.record_for(history).map_or(0, |record| record.replaced)
    }

    pub(super) fn record_for(&self, history: &[Message]) -> Option<&CompactionRecord> {
        let record = self.current.as_ref()?;
        let start = system_prefix_len(history);
        let same_session = match &self.first_message {
            Some(first) => history.get(start) == Some(first),
            None => true,
        };
        let fits = start + record.replaced.max(record.elided) <= history.len();
        (same_session && fits).then_some(record)
    }
}
