//! The agent as a user meets it: a session around the loop.
//!
//! Every run — one `-p` task or a whole REPL — is a session: from chapter 5 on, a file under
//! `<root>/.mini_agent/sessions/` (from chapter 9 on, a journal) that holds the system prompt,
//! each user message and everything the loop did. The wiring is the lesson of this file:
//!
//! * **The tools are a fold.** [`toolbox`] starts from chapter 3's workspace and wraps it once
//!   per chapter that adds a layer. A session gets a fresh stack, so an "allow all" given in
//!   one session never leaks into the next.
//! * **The journal observes first.** Chapter 5's `Session` gives each event to the recorder
//!   before the later chapters' parts (chapter 7's counters, chapter 19's failures), the
//!   `--json` printer and the screen; the recorder's error stops the turn. That is how
//!   `tool_started` is on disk before a tool runs.
//! * **A resumed session is its journal replayed** (`reopen.rs`, chapter 10), and permissions
//!   start again from the flags: they belong to a person at a terminal, not to a file.
//!
//! The REPL's commands, which reach into several chapters' state, are in `commands.rs`.

use crate::ch14_main::endpoint::Connection;
use mini_agent::ch02_loop::command_line::Settings;
use mini_agent::ch02_loop::{Error, Event, Limits, Message, Model, Observer, Outcome, Tools, run_turn};
use mini_agent::ch03_tools::Workspace;
use mini_agent::ch05_sessions::parts::{RunInput, SessionInput, Stack, Toolbox as Layers};
use mini_agent::ch05_sessions::{
    Answerer, Brought, Origin, Parts, Recorder, Session, SessionStore, TurnHook,
};
use std::path::{Path, PathBuf};

/// Where a session's records go: chapter 5's plain file, chapter 9's journal.
#[cfg(not(feature = "ch09"))]
pub type KeptLog = mini_agent::ch05_sessions::SessionFile;
#[cfg(feature = "ch09")]
pub type KeptLog = mini_agent::ch09_journal::Journal;
/// The current session's log: its file, or, when chapter 14 lets a question go unrecorded,
/// nothing in a read-only root.
pub use super::unrecorded::SessionLog;

/// The model a session sends to: from chapter 7 on, behind the compacting layer, which the
/// agent keeps at hand for `/compact` and `/stats`.
#[cfg(not(feature = "ch07"))]
pub type AgentModel = Box<dyn Model>;
#[cfg(feature = "ch07")]
pub type AgentModel = mini_agent::ch07_context::Compacting<Box<dyn Model>>;

// ANCHOR: config
/// What stays the same for the whole run, whichever session is current: the flags, who
/// answers questions, and the parts the chapters made for the run.
#[derive(Clone)]
pub struct Config {
    pub settings: Settings,
    /// The workspace root the sessions work in.
    pub root: PathBuf,
    /// The model and endpoint this run talks to, recorded in each session it starts (chapter 5).
    pub origin: Origin,
    /// Whether a new session may go on unrecorded when the root cannot be written (a
    /// person's own question, chapter 14; never `tasks run` or the service).
    pub may_go_unrecorded: bool,
    /// Who answers a question during a turn ("may this call run?", chapter 12): each mode
    /// says (`-p`, the REPL, `--json`, the service); nobody until it does.
    pub answerer: Answerer,
    /// What the chapters add to every session (chapter 5's parts): the hooks and MCP servers
    /// of `root` and the sandbox, loaded once per run, chapter 7's counters, the gate.
    pub parts: Parts,
}
// ANCHOR_END: config

impl Config {
    /// The run's configuration: the flags, and the parts the chapters registered, made for
    /// `root` (asking at the terminal about its hooks and servers when someone can answer).
    pub fn new(
        connection: &Connection,
        settings: &Settings,
        root: &Path,
        registry: &crate::ch14_main::registry::Registry,
    ) -> Result<Config, Error> {
        let run = RunInput { root, settings, can_ask: super::start::can_ask(settings) };
        Ok(Config {
            settings: settings.clone(),
            root: root.to_path_buf(),
            origin: connection.origin.clone(),
            may_go_unrecorded: false,
            answerer: Answerer::Nobody,
            parts: Parts::make(&registry.parts, &run)?,
        })
    }
}

// ANCHOR: start_agent
/// The pieces of a running agent: the model, the tools, and the current session.
pub struct Agent {
    pub(crate) config: Config,
    pub(crate) model: AgentModel,
    pub(crate) tools: Box<dyn Tools>,
    pub(crate) history: Vec<Message>,
    /// What the chapters' slash commands show about this session (`/skills`, `/mcp`): the
    /// REPL asks (chapter 4).
    pub(crate) reports: Vec<Report>,
    /// The sessions of this root, and the current one: its journal and the later chapters'
    /// parts in its turns (chapter 5).
    pub(crate) store: SessionStore,
    pub(crate) session: Session<SessionLog>,
}
// ANCHOR_END: start_agent

/// A session to make current: `-c` or `-r` reopened it, or it is new. Its recorder, the
/// history it goes on with, and what its journal brought back to the parts (from chapter 10:
/// chapter 7's compaction in force and what its file had counted).
pub struct Opened {
    pub recorder: Recorder<SessionLog>,
    pub history: Vec<Message>,
    pub brought: Brought,
}

impl Opened {
    /// A session opened with `history`, nothing brought back.
    pub fn new(recorder: Recorder<SessionLog>, history: Vec<Message>) -> Opened {
        Opened { recorder, history, brought: Brought::default() }
    }
}

// ANCHOR: agent_start
impl Agent {
    /// Starts with `opened` (a session `-c` or `-r` reopened) or a new session in the root.
    pub fn start(model: Box<dyn Model>, opened: Option<Opened>, config: Config) -> Result<Agent, Error> {
        #[cfg(feature = "ch07")]
        let model = super::context::compacting(model, &config)?;
        let toolbox = toolbox(&config)?;
        let history = vec![Message::System { content: toolbox.system_prompt.clone() }];
        // The history is the session's: the one reopened, or a new one's.
        let store = super::start::sessions_of(&config.root)?;
        let mut opened = opened.map_or_else(|| new_session(&store, &config, history), Ok)?;
        let history = std::mem::take(&mut opened.history);
        let agent = Agent {
            session: current_session(opened.recorder, toolbox.turns, &config)?,
            store,
            reports: toolbox.reports,
            config,
            model,
            tools: toolbox.tools,
            history,
        };
        agent.config.parts.session_opened(&agent.history, &opened.brought);
        Ok(agent)
    }
    // ANCHOR_END: agent_start
    // ANCHOR: turn
    /// One user message to its end: recorded, run with the journal first in the fan-out,
    /// and its ending recorded. `display` draws it; `json` prints it as events.
    pub fn turn(
        &mut self,
        input: String,
        display: &mut dyn Observer,
        json: Option<&mut dyn Observer>,
    ) -> Outcome {
        let message = Message::User { content: input };
        if let Err(error) = self.session.begin(&message) {
            return Outcome::Failed(error);
        }
        self.history.push(message);
        let mut observers: Vec<&mut dyn Observer> = self.session.observers().collect();
        if let Some(json) = json {
            observers.push(json);
        }
        observers.push(display);
        let limits = Limits { max_turns: crate::ch14_main::max_turns(&self.config.settings) };
        // The model as the parts lend it for the turn: chapter 7 asks a model stuck repeating
        // a call once more, without tools, for its answer.
        let mut model = self.config.parts.turn_model(&mut self.model);
        let outcome =
            run_turn(&mut *model, &mut *self.tools, &mut self.history, &mut Fanout(observers), &limits);
        if let Err(error) = self.session.end(&outcome, limits.max_turns) {
            crate::ch14_main::say(&format!(
                "mini-agent: warning: could not record how the turn ended: {error}"
            ));
        }
        outcome
    }
    // ANCHOR_END: turn

    /// Makes another session the current one (`/new`, `/resume`): its journal, its history
    /// and its compaction; the tools, permissions and `/stats` start again, as for a new session.
    pub(crate) fn switch_to(&mut self, toolbox: Toolbox, opened: Opened) -> Result<(), Error> {
        self.session = current_session(opened.recorder, toolbox.turns, &self.config)?;
        (self.tools, self.reports, self.history) = (toolbox.tools, toolbox.reports, opened.history);
        self.config.parts.session_opened(&self.history, &opened.brought);
        Ok(())
    }
}

/// The session to make current: its journal, with what the parts record first (chapter 20's
/// sandbox), and the later chapters' parts in its turns.
fn current_session(
    mut recorder: Recorder<SessionLog>,
    hooks: Vec<Box<dyn TurnHook>>,
    config: &Config,
) -> Result<Session<SessionLog>, Error> {
    let id: String = recorder.log().id().into();
    config.parts.record(&id, recorder.log_mut())?;
    Ok(Session { id, recorder, hooks })
}

/// A new session of `store`'s root that goes on with `history` (the system prompt): from
/// chapter 14 on, a person's question goes on unrecorded where the root cannot be written.
pub(crate) fn new_session(
    store: &SessionStore,
    config: &Config,
    history: Vec<Message>,
) -> Result<Opened, Error> {
    let kept = kept_session(store, &config.origin, history.clone());
    super::unrecorded::or_unrecorded(kept, config, history)
}

/// A new session with its journal (a file from chapter 5, a journal from chapter 9), `history`
/// recorded first.
pub(crate) fn kept_session(
    store: &SessionStore,
    origin: &Origin,
    history: Vec<Message>,
) -> Result<Opened, Error> {
    let mut recorder = Recorder::new(SessionLog::from(KeptLog::create(store, origin.clone())?));
    for message in &history {
        recorder.message(message)?;
    }
    Ok(Opened::new(recorder, history))
}

// ANCHOR: build_tools
/// The tools of one session, and the system prompt they are offered with.
pub(crate) struct Toolbox {
    pub(crate) tools: Box<dyn Tools>,
    pub(crate) system_prompt: String,
    /// What the chapters' slash commands show about these tools (`/skills`, `/mcp`).
    pub(crate) reports: Vec<Report>,
    /// The later chapters' parts in each turn of the session these tools serve (chapter 5).
    pub(crate) turns: Vec<Box<dyn TurnHook>>,
}

/// The tools of `root` for one session: chapter 3's workspace with chapter 2's prompt, folded
/// through each part's layer from the inside out, in the order of chapter 5's `Layer`: the
/// sandbox (20) confines the workspace's commands; the gate (12), with MCP's tools inside it
/// (18), asks whoever the mode said answers; the hooks (16) refuse a call before anyone is
/// asked; skills (6) add `load_skill`, which needs no permission, and their prompt; the
/// repetition notes (7) watch everything. Then each part's share of every turn.
pub(crate) fn toolbox(config: &Config) -> Result<Toolbox, Error> {
    let root = &config.root;
    let (tools, system_prompt) = (Workspace::new(root)?, mini_agent::ch02_model::system_prompt(root));
    let mut layers =
        Layers { tools: Stack::Workspace(tools), system_prompt, reports: vec![], warnings: vec![] };
    let session = SessionInput { root, settings: &config.settings, answerer: &config.answerer };
    for part in config.parts.layers() {
        layers = part.wrap(layers, &session)?;
    }
    for warning in &layers.warnings {
        crate::ch14_main::say(&format!("mini-agent: warning: {warning}"));
    }
    Ok(Toolbox {
        tools: layers.tools.boxed(),
        system_prompt: layers.system_prompt,
        reports: layers.reports,
        // Their parts in each turn: chapter 7 counts and stops a model repeating itself,
        // chapter 16 runs the `Stop` hooks, chapter 19 notes which results failed.
        turns: config.parts.turn_hooks(),
    })
}
// ANCHOR_END: build_tools

pub(crate) use mini_agent::ch05_sessions::parts::Report;

// ANCHOR: fanout
/// Hands each event to each observer in order: the journal first (chapter 9). An error
/// stops the turn before anyone after it acts on an unrecorded event.
pub struct Fanout<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Fanout<'_> {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        for observer in &mut self.0 {
            observer.event(event)?;
        }
        Ok(())
    }

    fn queued_input(&mut self) -> Vec<String> {
        self.0.iter_mut().flat_map(|observer| observer.queued_input()).collect()
    }
}
// ANCHOR_END: fanout
