//! Chapter 7 in the session host: the compacting model the agent keeps at hand, `/stats`'s
//! counters from the moment a session is opened, and `/compact`. The model layer and the
//! slash commands need the agent itself (its model, its history, its journal), so they live
//! here, beside it; chapter 7's part in every session (`ContextTurns`) holds the counters and
//! the streak the tools and turns share.

use super::app::Agent;
use mini_agent::ch02_loop::{Error, Observer};

/// Chapter 7's layers: the model compacts what it sends when a request would pass 80% of
/// `MINI_AGENT_CONTEXT_TOKENS`; the tools note a call repeated with the same result, and
/// the session's turns count and stop a model that goes on repeating it.
pub fn compacting(
    model: Box<dyn mini_agent::ch02_loop::Model>,
    config: &super::app::Config,
) -> Result<super::app::AgentModel, Error> {
    use mini_agent::ch07_context::{Compacting, parse_context_tokens};
    let tokens = parse_context_tokens(std::env::var("MINI_AGENT_CONTEXT_TOKENS").ok().as_deref())?;
    // The compaction chapter 7's part restores or clears when a session becomes current.
    Ok(Compacting::with_state(model, tokens, config.context().compaction))
}

impl super::app::Config {
    /// Chapter 7's part of this session: `/stats`'s counters and the repetition streak.
    pub(crate) fn context(&self) -> mini_agent::ch07_context::ContextTurns {
        self.parts.find::<mini_agent::ch07_context::ContextTurns>().cloned().unwrap_or_default()
    }
}

impl Agent {
    /// `/compact`: the conversation so far replaced by a summary, now.
    pub(crate) fn compact(&mut self, _: &str) -> Result<String, Error> {
        let mut stats = self.config.context().stats;
        let mut observers: Vec<&mut dyn Observer> = vec![&mut self.session.recorder, &mut stats];
        let mut fanout = super::app::Fanout(std::mem::take(&mut observers));
        match self.model.compact(&self.history, &mut fanout)? {
            Some(record) => Ok(format!(
                "compacted: {} replaced by a summary (about {} → {} tokens)",
                mini_agent::ch02_loop::plural(record.replaced, "earlier message"),
                record.tokens_before,
                record.tokens_after
            )),
            None => {
                Ok("nothing to compact: the conversation is too short for a summary to make it smaller"
                    .into())
            }
        }
    }

    /// `/stats`: what the session sent and received, and the size of the next request.
    pub(crate) fn stats_report(&mut self, _: &str) -> Result<String, Error> {
        let next_prompt =
            self.model.estimate_prompt(&self.history, &mini_agent::ch02_loop::Tools::schemas(&*self.tools));
        let mut report = format!(
            "session      {}\n{}\ncontext      about {next_prompt} of {} tokens in the next request",
            self.session_id(),
            self.config.context().stats.snapshot(),
            self.model.context_tokens()
        );
        // What the later chapters' parts add (chapter 20's sandbox).
        for line in self.config.parts.stats_lines() {
            report = format!("{report}\n{line}");
        }
        Ok(report)
    }
}
