//! Chapter 7 in every turn of a session: the figures `/stats` shows, and the streak of a model
//! that repeats itself, both told of each new message from the person (the turn's model is lent
//! the stuck check by the session host, `Repeats::answer_without_tools`).

use super::record::CompactionRecord;
use super::record::SharedCompaction;
use super::repeats::Repeats;
use super::stats::{Recorded, SharedStats};
use crate::ch02_loop::{Event, Message, Model, Observer};
use crate::ch05_sessions::TurnHook;
use crate::ch05_sessions::parts::{Brought, Layer, RunPart, SessionInput, Stack, Toolbox};
use std::any::Any;
use std::sync::PoisonError;

/// `/stats`'s counters and the repetition streak, in one session's turns. A run keeps one
/// (the root clones it into each session), so the counters and the streak are the run's.
#[derive(Clone, Default)]
pub struct ContextTurns {
    pub stats: SharedStats,
    pub repeats: Repeats,
    /// The compaction the session's model sends by (the host builds the model with it).
    pub compaction: SharedCompaction,
}

impl TurnHook for ContextTurns {
    /// A new message from the person: it counts, and earlier repetition is not a loop any more.
    fn begin(&mut self, _: &str, message: &Message) {
        let _ = self.stats.event(Event::Message(message));
        self.repeats.reset();
    }

    fn observer(&mut self) -> Option<&mut dyn Observer> {
        Some(&mut self.stats)
    }
}

/// This chapter's part in every session: the repetition notes around all the tools, outermost,
/// and the counters and streak in each turn. A session the service runs beside others counts
/// for itself.
impl RunPart for ContextTurns {
    fn layer(&self) -> Option<Layer> {
        Some(Layer::Watch)
    }
    fn wrap(&self, toolbox: Toolbox, _: &SessionInput) -> Result<Toolbox, crate::ch02_loop::Error> {
        let notes = super::repeats::RepeatNotes::sharing(toolbox.tools.boxed(), &self.repeats);
        Ok(Toolbox { tools: Stack::Boxed(Box::new(notes)), ..toolbox })
    }
    fn turn_model<'a>(&self, model: Box<dyn Model + 'a>) -> Box<dyn Model + 'a> {
        Box::new(self.repeats.answer_without_tools(model))
    }
    fn turn_hook(&self) -> Option<Box<dyn TurnHook>> {
        Some(Box::new(self.clone()))
    }
    fn clone_part(&self) -> Box<dyn RunPart> {
        Box::new(self.clone())
    }
    fn session_opened(&self, history: &[Message], brought: &Brought) {
        // `/stats` counts the session from here, with what its file recorded before (a resumed
        // session); the compaction it had is the view its model is sent again.
        let reopened = brought.find::<Reopened>().cloned().unwrap_or_default();
        let mut compaction = self.compaction.lock().unwrap_or_else(PoisonError::into_inner);
        match reopened.compaction {
            Some(record) => compaction.restore(record),
            None => compaction.clear(),
        }
        drop(compaction);
        self.stats.restart(history, reopened.recorded);
    }
    fn for_another_session(&self) -> Box<dyn RunPart> {
        // Its own streak too: two sessions at work at once, the same call in each, is no loop.
        Box::new(ContextTurns::default())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What a reopened session brings back to chapter 7: the compaction in force when it stopped
/// (the view the model is sent again) and what its file had counted (`/stats` counts it too).
/// A new session brings nothing.
#[derive(Clone, Debug, Default)]
pub struct Reopened {
    pub compaction: Option<CompactionRecord>,
    pub recorded: Recorded,
}
