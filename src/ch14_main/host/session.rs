//! The REPL's side of the session host: the host of chapter 4's REPL, which runs each slash
//! command on the state of the chapter that registered it (`/list` on chapter 5's store,
//! `/compact` on chapter 7's compacting model in `context.rs`, `/skills` and `/mcp` on the
//! reports the parts left beside the tools), and `/new`.

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
