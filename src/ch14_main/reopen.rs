//! Chapter 10 in the session host: a session reopened for `-c`, `--resume` or `/resume`.
//!
//! Chapter 10 decides whether a journal may continue and answers the calls it left open;
//! here its plan becomes the host's current session: the journal to append to, the history
//! to send, the compaction that was in force, and what to show the person who came back.

use super::app::{Agent, restore_view};
use mini_agent::ch02_loop::{Error, Message};
use mini_agent::ch04_terminal::sanitize::sanitize;
use mini_agent::ch04_terminal::{Look, render_markdown};
use mini_agent::ch05_sessions::{Origin, Recorder};
use mini_agent::ch07_context::SharedCompaction;
use mini_agent::ch09_journal::Journal;
use mini_agent::ch10_recovery::{ResumePlan, resume};

/// A session chapter 10 opened: its journal, locked and repaired, and the plan to go on.
pub type Opened = (Journal, ResumePlan);

// ANCHOR: opened
/// Continues a session chapter 10 opened for `-c` or `--resume`: the journal it locked records
/// from here on, the history it replayed goes on, and the compaction that was in force is the
/// view the model is sent again.
pub fn continue_session(
    compaction: &SharedCompaction,
    (journal, plan): Opened,
) -> (Recorder<Journal>, Vec<Message>) {
    restore_view(compaction, plan.compaction);
    #[cfg(feature = "ch19")]
    mini_agent::ch19_anthropic::failures::remember(&plan.failed);
    (Recorder::new(journal), plan.history)
}
// ANCHOR_END: opened

impl Agent {
    /// `/resume ID`: switches to another session of this root.
    pub(super) fn resume_session(&mut self, wanted: &str) -> Result<String, Error> {
        let path = self.store.resolve(wanted)?;
        if path == self.recorder.log().path() {
            return Ok(format!("already in session {}", self.session_id()));
        }
        let (journal, plan) = resume(&path, false)?;
        #[cfg(feature = "ch19")]
        mini_agent::ch19_anthropic::failures::remember(&plan.failed);
        if let Some(warning) = &plan.warning {
            eprintln!("mini-agent: warning: {}", sanitize(warning));
        }
        if let Some(note) = self.moved_note(&plan.origin) {
            eprintln!("mini-agent: note: {}", sanitize(&note));
        }
        self.switch_to(Recorder::new(journal), plan.history, plan.compaction)?;
        let last = self.last_exchange(Look::Plain).unwrap_or_default();
        Ok(format!("resumed session {}\n{last}", self.session_id()))
    }

    /// The last user message and the answer it got, to show when a session is resumed: on the
    /// screen, so laid out (`Plain`) at least, never raw.
    pub fn last_exchange(&self, look: Look) -> Option<String> {
        let look = if look == Look::Raw { Look::Plain } else { look };
        let history = &self.history;
        let asked = history.iter().rposition(|m| matches!(m, Message::User { .. }))?;
        let Message::User { content: question } = &history[asked] else { return None };
        let mut shown = format!("> {}\n", sanitize(question.trim_end()));
        let answer = history[asked..].iter().rev().find_map(|m| match m {
            Message::Assistant { content: Some(text), .. } if !text.trim().is_empty() => Some(text),
            _ => None,
        });
        if let Some(answer) = answer {
            shown.push_str(&render_markdown(answer, look));
        }
        Some(shown)
    }

    /// The REPL keeps its one model client: a session recorded elsewhere is told so.
    fn moved_note(&self, recorded: &Origin) -> Option<String> {
        let current = &self.config.origin;
        let same_place = recorded.endpoint.is_none() || recorded.endpoint == current.endpoint;
        if same_place && recorded.model == current.model {
            return None;
        }
        let endpoint = recorded.endpoint.as_deref().unwrap_or("its endpoint");
        Some(format!(
            "this session talked to {} at {endpoint}; here it continues with {} (quit and run \
             mini-agent -r <id> to go back there)",
            recorded.model, current.model
        ))
    }
}
