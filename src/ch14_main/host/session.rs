//! What the chapters add to a session beyond the loop, from chapter 4 on: their layers of the
//! tools and the model with what those layers report, and the REPL's host, which runs each
//! slash command on the state of the chapter that registered it (`/list` on chapter 5's
//! store, `/compact` on chapter 7's compacting model, `/mcp` on chapter 18's servers…).

use super::app::{Agent, toolbox};
use mini_agent::ch02_loop::{Error, Message, Observer, Outcome};
use mini_agent::ch04_terminal::{HostCommand, ReplHost, TerminalObserver};

// ANCHOR: repl_host
/// A slash command on the REPL's agent, with its argument; what to show.
pub type Handler = fn(&mut Agent, &str) -> Result<String, Error>;

/// The REPL's host: the agent, and the slash commands the chapters route to it.
pub struct Host<'a> {
    pub agent: &'a mut Agent,
    pub handlers: &'a [(&'static str, Handler)],
}

impl ReplHost for Host<'_> {
    fn turn(&mut self, input: String, terminal: &mut TerminalObserver) -> Outcome {
        self.agent.turn_on(input, terminal, None)
    }

    fn command(&mut self, command: HostCommand) -> Result<String, Error> {
        match self.handlers.iter().find(|(name, _)| *name == command.name) {
            Some((_, handler)) => handler(self.agent, &command.argument),
            None if command.name == "new" => self.agent.new_conversation(),
            // What a chapter shows about the session: `/skills` (6), `/mcp` (18).
            None => match self.agent.reports.iter().find(|(report, _)| *report == command.name) {
                Some((_, report)) => Ok(report()),
                None => {
                    Err(Error::Usage(format!("/{} is not a command of this agent; type /help", command.name)))
                }
            },
        }
    }
}
// ANCHOR_END: repl_host

impl Agent {
    /// A turn drawn on chapter 4's terminal; from chapter 11, with the reply drawn as it
    /// arrives.
    pub fn turn_on(
        &mut self,
        input: String,
        terminal: &mut TerminalObserver,
        json: Option<&mut dyn Observer>,
    ) -> Outcome {
        #[cfg(feature = "ch11")]
        let terminal = &mut mini_agent::ch11_streaming::LiveText::new(terminal);
        self.turn(input, terminal, json)
    }

    /// `/new`: a fresh conversation in a fresh session.
    fn new_conversation(&mut self) -> Result<String, Error> {
        let toolbox = toolbox(&self.config)?;
        let history = vec![Message::System { content: toolbox.system_prompt.clone() }];
        let opened = super::app::new_session(&self.store, &self.config, history)?;
        self.switch_to(toolbox, opened)?;
        if !self.is_recorded() {
            return Ok(format!(
                "new session {} (not recorded: the root cannot be written)",
                self.session_id()
            ));
        }
        Ok(format!("new session {}", self.session_id()))
    }
}

impl Agent {
    pub fn session_id(&self) -> &str {
        &self.session.id
    }

    /// `/list`: the sessions of this root, the current one marked.
    pub(crate) fn list(&mut self, _: &str) -> Result<String, Error> {
        super::sessions_table::sessions_table(&self.store, Some(self.session_id()))
    }
}

/// Chapter 7's layers: the model compacts what it sends when a request would pass 80% of
/// `MINI_AGENT_CONTEXT_TOKENS`; the tools note a call repeated with the same result, and
/// the session's turns count and stop a model that goes on repeating it.
#[cfg(feature = "ch07")]
pub fn compacting(model: Box<dyn mini_agent::ch02_loop::Model>) -> Result<super::app::AgentModel, Error> {
    use mini_agent::ch07_context::{Compacting, parse_context_tokens};
    let tokens = parse_context_tokens(std::env::var("MINI_AGENT_CONTEXT_TOKENS").ok().as_deref())?;
    Ok(Compacting::new(model, tokens))
}

#[cfg(feature = "ch07")]
impl super::app::Config {
    /// Chapter 7's part of this session: `/stats`'s counters and the repetition streak.
    pub(crate) fn context(&self) -> mini_agent::ch07_context::ContextTurns {
        self.parts.find::<mini_agent::ch07_context::ContextTurns>().cloned().unwrap_or_default()
    }
}

#[cfg(feature = "ch07")]
impl Agent {
    /// `/stats` counts the session from the moment it was opened, with what its file recorded
    /// before (a resumed session); the history it holds already is what the next prompt is
    /// estimated from; the compaction it had is restored.
    pub(crate) fn start_counting(&self, reopened: mini_agent::ch07_context::Reopened) {
        use std::sync::PoisonError;
        let shared = self.model.state();
        let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
        match reopened.compaction {
            Some(record) => state.restore(record),
            None => state.clear(),
        }
        self.config.context().stats.restart(&self.history, reopened.recorded);
    }

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
