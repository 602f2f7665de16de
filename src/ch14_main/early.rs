//! The agent before chapter 5 gives it sessions (the states of chapters 2 to 4): one
//! conversation held in memory. `-p` runs one task; from chapter 4 on, the REPL goes on until
//! Ctrl+D, and `/new` forgets the conversation. The model, the endpoint and the exit codes are
//! the composition root's, as in every state; from chapter 5 on, `start.rs` and `app.rs` take
//! over, and every run is a session kept on disk.
//!
//! What chapter 4 changes here it registers (see [`Early`]): the terminal that shows a task,
//! and the REPL.

use super::endpoint::Keys;
use super::registry::Registry;
use super::{build_model, max_turns, read_prompt, workspace_root};
#[cfg(not(feature = "ch03"))]
use mini_agent::ch02_bash::Bash as Workspace;
use mini_agent::ch02_loop::command_line::{PROMPT, ROOT, Settings};
use mini_agent::ch02_loop::{Error, Limits, Message, Model, Observer, Outcome, run_turn};
#[cfg(feature = "ch03")]
use mini_agent::ch03_tools::Workspace;
use std::path::Path;

/// What chapter 4 replaces here; unset, chapter 2's way holds.
#[derive(Default)]
pub struct Early {
    /// One task (`-p`) shown: progress lines, then the answer as written; from chapter 4, the
    /// terminal's.
    pub one_shot: Option<OneShot>,
    /// No task: the REPL, from chapter 4.
    pub repl: Option<Repl>,
}

/// One task to its exit code.
pub type OneShot = fn(&mut Agent, String, &Settings) -> Result<u8, Error>;
/// The REPL in `root` to its exit code.
pub type Repl = fn(Agent, &Path, &Registry, &Settings) -> Result<u8, Error>;

/// The model, the workspace's tools, and the conversation so far.
pub struct Agent {
    model: Box<dyn Model>,
    tools: Workspace,
    history: Vec<Message>,
    limits: Limits,
}

impl Agent {
    /// A new conversation in `root`: its system prompt alone.
    fn start(model: Box<dyn Model>, root: &Path, settings: &Settings) -> Result<Agent, Error> {
        let tools = Workspace::new(root)?;
        let history = vec![Message::System { content: mini_agent::ch02_model::system_prompt(root) }];
        Ok(Agent { model, tools, history, limits: Limits { max_turns: max_turns(settings) } })
    }

    /// One user message to its end, drawn by `observer`.
    fn ask(&mut self, input: String, observer: &mut dyn Observer) -> Outcome {
        self.history.push(Message::User { content: input });
        run_turn(&mut *self.model, &mut self.tools, &mut self.history, observer, &self.limits)
    }
}

/// One task (`-p`), or from chapter 4 the REPL.
pub fn agent(settings: &Settings, registry: &'static Registry, keys: &Keys) -> Result<u8, Error> {
    let root = workspace_root(settings.value(&ROOT).map(Path::new))?;
    let task = settings.value(&PROMPT).map(read_prompt).transpose()?;
    let connection = super::endpoint::connect_afresh(settings, keys)?;
    let mut agent = Agent::start(build_model(&connection, settings)?, &root, settings)?;
    let early = &registry.hooks.early;
    match task {
        Some(task) => early.one_shot.unwrap_or(before_the_terminal::one_shot)(&mut agent, task, settings),
        None => match early.repl {
            Some(repl) => repl(agent, &root, registry, settings),
            None => Err(Error::Usage("give the task with -p \"…\"".into())),
        },
    }
}

/// Chapter 4: a task shown by the terminal, and the REPL, with this conversation as its host.
#[cfg(feature = "ch04")]
pub mod terminal {
    use super::{Agent, Path, Registry, Settings};
    use mini_agent::ch02_loop::command_line::VERBOSE;
    use mini_agent::ch02_loop::{Error, Outcome};
    use mini_agent::ch04_terminal::{HostCommand, LineReader, ReplHost, Screen, TerminalObserver};

    impl ReplHost for Agent {
        fn turn(&mut self, input: String, terminal: &mut TerminalObserver) -> Outcome {
            self.ask(input, terminal)
        }

        /// `/new` forgets the conversation (there is no session yet to start afresh).
        fn command(&mut self, command: HostCommand) -> Result<String, Error> {
            match command.name {
                "new" => {
                    self.history.truncate(1);
                    Ok("new conversation: the earlier messages are forgotten".into())
                }
                name => Err(Error::Usage(format!("/{name} is not a command of this agent; type /help"))),
            }
        }
    }

    pub fn one_shot(agent: &mut Agent, task: String, settings: &Settings) -> Result<u8, Error> {
        super::super::one_shot(settings, |display| agent.ask(task, display))
    }

    pub fn repl(
        mut agent: Agent,
        root: &Path,
        registry: &Registry,
        settings: &Settings,
    ) -> Result<u8, Error> {
        let history = mini_agent::ch04_terminal::history_file(root)
            .map_err(|warning| super::super::say(&format!("mini-agent: warning: {warning}")));
        let mut reader = LineReader::stdin(history.as_deref().ok())?;
        let screen = Screen::stdio(settings.has(&VERBOSE));
        screen.status(&format!("mini-agent {} · /help for commands\n", env!("CARGO_PKG_VERSION")));
        mini_agent::ch04_terminal::run_repl(&mut agent, &registry.commands, &mut reader, &screen)?;
        Ok(0)
    }
}

/// Before chapter 4's terminal: progress lines on stderr, the answer as the model wrote it.
mod before_the_terminal {
    use super::super::{print_stdout, stopped_early};
    use super::{Agent, Settings};
    use mini_agent::ch02_loop::command_line::VERBOSE;
    use mini_agent::ch02_loop::{Error, Event, Observer, Outcome, describe_call};

    pub fn one_shot(agent: &mut Agent, task: String, settings: &Settings) -> Result<u8, Error> {
        match agent.ask(task, &mut Progress { verbose: settings.has(&VERBOSE) }) {
            Outcome::Completed(answer) => print_stdout(&format!("{}\n", answer.trim_end())),
            stopped => stopped_early(stopped, settings),
        }
    }

    /// Progress on stderr, so that stdout holds the answer alone (with `-v`, the first line of
    /// each result too). No signals of its own: SIGTERM and SIGHUP end the process at once.
    struct Progress {
        verbose: bool,
    }

    impl Observer for Progress {
        fn event(&mut self, event: Event) -> Result<(), Error> {
            match event {
                Event::ToolStarted(call) => eprintln!("→ {}", describe_call(call)),
                Event::ToolFinished(_, output) if self.verbose => {
                    let first = output.content.lines().next().unwrap_or_default();
                    eprintln!("  {first}");
                }
                _ => {}
            }
            Ok(())
        }
    }
}
