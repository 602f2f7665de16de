//! The agent as a user meets it: a session around the loop.
//!
//! Every run — one `-p` task or a whole REPL — is a session: from chapter 5 on, a file under
//! `<root>/.mini_agent/sessions/` (from chapter 9 on, a journal) that holds the system prompt,
//! each user message and everything the loop did. The wiring is the lesson of this file:
//!
//! * **The journal observes first.** A [`Fanout`] gives each event to the recorder before the
//!   screen, the `/stats` counter or the `--json` printer, and the recorder's error stops
//!   the turn. That is how `tool_started` is on disk before a tool runs.
//! * **A resumed session is its journal replayed** (`reopen.rs`, chapter 10): the history is
//!   rebuilt from the records, a compaction in force is restored as the *view* the model was
//!   being sent, and permissions start again from the flags: they belong to a person at a
//!   terminal, not to a file.
//! * **How a turn ended is a fact too.** Ctrl+C, an error, the turn limit: each is recorded,
//!   so `--status` can tell where a session stopped.
//!
//! Each chapter adds its piece here under its own feature: the tools' wrappers (skills,
//! repetition, the permission gate), the compacting model, the journal.

#[cfg(feature = "ch10")]
use super::reopen::{Opened, continue_session};
#[cfg(feature = "ch05")]
use super::sessions_table::sessions_table;
#[cfg(feature = "ch05")]
use mini_agent::ch02_loop::plural;
use mini_agent::ch02_loop::{Error, Event, Limits, Message, Model, Observer, Outcome, run_turn};
#[cfg(feature = "ch12")]
use mini_agent::ch04_terminal::TypeAhead;
#[cfg(feature = "ch04")]
use mini_agent::ch04_terminal::{HostCommand, ReplHost};
#[cfg(feature = "ch05")]
use mini_agent::ch05_sessions::{Origin, Recorder, SessionStore};
#[cfg(feature = "ch06")]
use mini_agent::ch06_skills::{WithSkills, build_system_prompt};
#[cfg(feature = "ch07")]
use mini_agent::ch07_context::repeats::RepeatNotes;
#[cfg(feature = "ch07")]
use mini_agent::ch07_context::{
    Compacting, CompactionRecord, CompactionState, SharedCompaction, SharedStats, Stats,
};
/// Where a session's records go: chapter 5's plain file, chapter 9's journal.
#[cfg(all(feature = "ch05", not(feature = "ch09")))]
pub type SessionLog = mini_agent::ch05_sessions::SessionFile;
#[cfg(feature = "ch09")]
pub type SessionLog = mini_agent::ch09_journal::Journal;
/// A session reopened for `-c` or `-r` before chapter 10: its recorder and the history it replays to.
#[cfg(all(feature = "ch05", not(feature = "ch10")))]
pub type Opened = (Recorder<SessionLog>, Vec<Message>);
#[cfg(feature = "ch12")]
use mini_agent::ch12_permissions::{
    Answer, Gate, Permission, Permissions, Prompter, TerminalPrompter, ask_with,
};
use std::path::{Path, PathBuf};
#[cfg(feature = "ch07")]
use std::sync::PoisonError;

/// Who answers "may this call run?" when the flags did not allow it.
#[cfg(feature = "ch12")]
#[derive(Clone)]
pub enum Asker {
    /// Nobody: the call is denied with a result that names the flag.
    Nobody,
    /// `-p` on a terminal: ask on /dev/tty.
    Tty,
    /// The REPL: ask through the queue that reads lines during a turn.
    TypeAhead(TypeAhead),
}

/// What stays the same for the whole run, whichever session is current.
pub struct Config {
    /// The model and endpoint this run talks to, recorded in each session it starts.
    #[cfg(feature = "ch05")]
    pub origin: Origin,
    #[cfg(feature = "ch12")]
    pub permissions: Permissions,
    #[cfg(feature = "ch12")]
    pub asker: Asker,
    pub max_turns: usize,
    #[cfg(feature = "ch07")]
    pub context_tokens: u64,
    /// The workspace's hooks, if they may run (chapter 16).
    #[cfg(feature = "ch16")]
    pub hooks: mini_agent::ch16_hooks::Hooks,
    /// The MCP servers of this run (chapter 18), shared by every session.
    #[cfg(feature = "ch18")]
    pub mcp: std::sync::Arc<mini_agent::ch18_mcp::McpServers>,
}

// ANCHOR: start
/// The six tools behind the permission gate, with skills, watched for repetition (chapter 7).
#[cfg(feature = "ch07")]
type AgentTools = RepeatNotes<SkilledTools>;
#[cfg(not(feature = "ch07"))]
type AgentTools = SkilledTools;
#[cfg(feature = "ch06")]
type SkilledTools = WithSkills<GatedTools>;
#[cfg(not(feature = "ch06"))]
type SkilledTools = GatedTools;
#[cfg(all(feature = "ch12", not(feature = "ch16")))]
type GatedTools = Gate<GateInner>;
/// Chapter 16: the hooks wrap the gate, so a hook that refuses a call does so before anyone is asked.
#[cfg(feature = "ch16")]
type GatedTools = mini_agent::ch16_hooks::Hooked<Gate<GateInner>>;
#[cfg(all(feature = "ch12", not(feature = "ch18")))]
type GateInner = Workspace;
/// Chapter 18: the MCP servers' tools join the six, inside the gate.
#[cfg(feature = "ch18")]
type GateInner = mini_agent::ch18_mcp::WithMcp<Workspace>;
#[cfg(not(feature = "ch12"))]
type GatedTools = Workspace;
#[cfg(not(feature = "ch03"))]
use mini_agent::ch02_bash::Bash as Workspace;
#[cfg(feature = "ch03")]
use mini_agent::ch03_tools::Workspace;

/// The model, compacting what it sends from chapter 7 on.
#[cfg(feature = "ch07")]
type AgentModel = Compacting<Box<dyn Model>>;
#[cfg(not(feature = "ch07"))]
type AgentModel = Box<dyn Model>;

// ANCHOR_END: start

// ANCHOR: start_agent
/// The pieces of a running agent: the model, the tools, and the current session.
pub struct Agent {
    pub(super) config: Config,
    #[cfg(feature = "ch04")]
    root: PathBuf,
    #[cfg(feature = "ch05")]
    pub(super) store: SessionStore,
    model: AgentModel,
    #[cfg(feature = "ch07")]
    compaction: SharedCompaction,
    tools: AgentTools,
    #[cfg(feature = "ch06")]
    skills_report: String,
    #[cfg(feature = "ch04")]
    system_prompt: String,
    #[cfg(feature = "ch07")]
    stats: SharedStats,
    #[cfg(feature = "ch05")]
    pub(super) recorder: Recorder<SessionLog>,
    pub(super) history: Vec<Message>,
}
// ANCHOR_END: start_agent

// ANCHOR: agent_start
impl Agent {
    /// Starts with `opened` (a session `-c` or `-r` reopened) or a new session in `root`.
    pub fn start(
        model: Box<dyn Model>,
        root: PathBuf,
        #[cfg(feature = "ch05")] opened: Option<Opened>,
        config: Config,
    ) -> Result<Agent, Error> {
        #[cfg(feature = "ch07")]
        let compaction = CompactionState::shared();
        #[cfg(feature = "ch07")]
        let model = Compacting::with_state(model, config.context_tokens, compaction.clone());
        let toolbox = build_tools(&root, &config)?;
        #[cfg(feature = "ch05")]
        let store = super::sessions_of(&root);
        #[cfg(feature = "ch10")]
        let opened = opened.map(|opened| continue_session(&compaction, opened));
        #[cfg(feature = "ch05")]
        let (recorder, history) = match opened {
            Some(opened) => opened,
            None => new_session(&store, &config.origin, &toolbox.system_prompt)?,
        };
        #[cfg(not(feature = "ch05"))]
        let history = vec![Message::System { content: toolbox.system_prompt.clone() }];
        // ANCHOR_END: agent_start
        let agent = Agent {
            config,
            #[cfg(feature = "ch04")]
            root,
            #[cfg(feature = "ch05")]
            store,
            model,
            #[cfg(feature = "ch07")]
            compaction,
            tools: toolbox.tools,
            #[cfg(feature = "ch06")]
            skills_report: toolbox.skills_report,
            #[cfg(feature = "ch04")]
            system_prompt: toolbox.system_prompt,
            #[cfg(feature = "ch07")]
            stats: SharedStats::default(),
            #[cfg(feature = "ch05")]
            recorder,
            history,
        };
        #[cfg(feature = "ch07")]
        agent.reset_stats();
        Ok(agent)
    }

    #[cfg(feature = "ch05")]
    pub fn session_id(&self) -> &str {
        self.recorder.log().id()
    }

    #[cfg(feature = "ch14")]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The model and endpoint this run talks to.
    #[cfg(feature = "ch14")]
    pub fn origin(&self) -> &Origin {
        &self.config.origin
    }

    /// What this session has used: requests, tokens (chapter 17's metrics add them up).
    #[cfg(feature = "ch17")]
    pub fn stats(&self) -> Stats {
        self.stats.snapshot()
    }

    #[cfg(feature = "ch05")]
    pub fn model_id(&self) -> &str {
        &self.config.origin.model
    }

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
        #[cfg(feature = "ch05")]
        if let Err(error) = self.recorder.message(&message) {
            return Outcome::Failed(error);
        }
        #[cfg(feature = "ch07")]
        let mut stats = self.stats.clone();
        #[cfg(feature = "ch07")]
        let _ = stats.event(Event::Message(&message));
        self.history.push(message);
        #[cfg(feature = "ch16")]
        self.config.hooks.log().set_session(self.recorder.log().id());
        // ANCHOR_END: turn
        // ANCHOR: turn_run
        // A new message from the person: earlier repetition is not a loop any more. A model
        // stuck repeating a call is asked once more, without tools, for its answer.
        let model: &mut dyn Model = &mut self.model;
        #[cfg(feature = "ch07")]
        self.tools.reset();
        #[cfg(feature = "ch07")]
        let mut stuck_check = self.tools.answer_without_tools(model);
        #[cfg(feature = "ch07")]
        let model: &mut dyn Model = &mut stuck_check;
        let mut observers: Vec<&mut dyn Observer> = Vec::new();
        #[cfg(feature = "ch05")]
        observers.push(&mut self.recorder);
        #[cfg(feature = "ch07")]
        observers.push(&mut stats);
        if let Some(json) = json {
            observers.push(json);
        }
        observers.push(display);
        // Chapter 19: the Messages API marks failed results, and only events know which failed.
        #[cfg(feature = "ch19")]
        let mut failures = mini_agent::ch19_anthropic::failures::ToolFailures;
        #[cfg(feature = "ch19")]
        observers.push(&mut failures);
        let limits = Limits { max_turns: self.config.max_turns };
        let outcome = run_turn(model, &mut self.tools, &mut self.history, &mut Fanout(observers), &limits);
        #[cfg(feature = "ch16")]
        super::hooks::after_turn(&self.config.hooks, &mut self.recorder, &outcome);
        #[cfg(feature = "ch05")]
        self.record_ending(&outcome);
        outcome
    }
    // ANCHOR_END: turn_run

    #[cfg(feature = "ch05")]
    fn record_ending(&mut self, outcome: &Outcome) {
        let written = match outcome {
            Outcome::Completed(_) => Ok(()),
            Outcome::Interrupted => self.recorder.interrupted(),
            Outcome::TurnLimit => self.recorder.error(&format!(
                "stopped after {} (the turn limit)",
                plural(self.config.max_turns, "model call")
            )),
            Outcome::Failed(error) => self.recorder.error(&error.to_string()),
        };
        if let Err(error) = written {
            super::say(&format!("mini-agent: warning: could not record how the turn ended: {error}"));
        }
    }

    /// `/new`: a fresh history (from chapter 5, in a fresh session file).
    #[cfg(feature = "ch04")]
    fn new_conversation(&mut self) -> Result<String, Error> {
        #[cfg(feature = "ch05")]
        {
            let (recorder, history) = new_session(&self.store, &self.config.origin, &self.system_prompt)?;
            self.switch_to(
                recorder,
                history,
                #[cfg(feature = "ch07")]
                None,
            )?;
            Ok(format!("new session {}", self.session_id()))
        }
        #[cfg(not(feature = "ch05"))]
        {
            let toolbox = build_tools(&self.root, &self.config)?;
            self.history = vec![Message::System { content: toolbox.system_prompt.clone() }];
            self.tools = toolbox.tools;
            self.system_prompt = toolbox.system_prompt;
            #[cfg(feature = "ch06")]
            {
                self.skills_report = toolbox.skills_report;
            }
            #[cfg(feature = "ch07")]
            {
                restore_view(&self.compaction, None);
                self.reset_stats();
            }
            Ok("new session".into())
        }
    }

    /// Makes another session the current one (`/new`, `/resume`): its journal, its history
    /// and its compaction; permissions and `/stats` start again, as for a new session.
    #[cfg(feature = "ch05")]
    pub(super) fn switch_to(
        &mut self,
        recorder: Recorder<SessionLog>,
        history: Vec<Message>,
        #[cfg(feature = "ch07")] view: Option<CompactionRecord>,
    ) -> Result<(), Error> {
        let toolbox = build_tools(&self.root, &self.config)?;
        self.tools = toolbox.tools;
        self.system_prompt = toolbox.system_prompt;
        #[cfg(feature = "ch06")]
        {
            self.skills_report = toolbox.skills_report;
        }
        self.recorder = recorder;
        self.history = history;
        #[cfg(feature = "ch07")]
        {
            restore_view(&self.compaction, view);
            self.reset_stats();
        }
        Ok(())
    }

    /// `/stats` counts this session from the moment it was opened; the history it holds
    /// already is what the next prompt is estimated from.
    #[cfg(feature = "ch07")]
    fn reset_stats(&self) {
        let mut stats = Stats::new();
        for message in &self.history {
            let _ = stats.event(Event::Message(message));
        }
        *self.stats.0.lock().unwrap_or_else(PoisonError::into_inner) = stats;
    }

    #[cfg(feature = "ch07")]
    fn compact(&mut self) -> Result<String, Error> {
        let mut stats = self.stats.clone();
        let mut observers: Vec<&mut dyn Observer> = Vec::new();
        #[cfg(feature = "ch05")]
        observers.push(&mut self.recorder);
        observers.push(&mut stats);
        match self.model.compact(&self.history, &mut Fanout(observers))? {
            Some(record) => Ok(format!(
                "compacted: {} replaced by a summary (about {} → {} tokens)",
                mini_agent::ch02_loop::plural(record.replaced, "earlier message"),
                record.tokens_before,
                record.tokens_after
            )),
            None => Ok("nothing to compact yet".into()),
        }
    }

    #[cfg(feature = "ch07")]
    fn stats_report(&self) -> String {
        let schemas = mini_agent::ch02_loop::Tools::schemas(&self.tools);
        let next_prompt = self.model.estimate_prompt(&self.history, &schemas);
        #[cfg(feature = "ch05")]
        let report = format!("session      {}\n", self.session_id());
        #[cfg(not(feature = "ch05"))]
        let report = String::new();
        format!(
            "{report}{}\ncontext      about {next_prompt} of {} tokens in the next request",
            self.stats.snapshot(),
            self.config.context_tokens
        )
    }
}

// ANCHOR: repl_host
#[cfg(feature = "ch04")]
impl ReplHost for Agent {
    fn turn(&mut self, input: String, observer: &mut dyn Observer) -> Outcome {
        Agent::turn(self, input, observer, None)
    }

    fn command(&mut self, command: HostCommand) -> Result<String, Error> {
        match command {
            HostCommand::New => self.new_conversation(),
            #[cfg(feature = "ch05")]
            HostCommand::List => sessions_table(&self.store, Some(self.session_id())),
            #[cfg(feature = "ch10")]
            HostCommand::Resume(wanted) => self.resume_session(&wanted),
            #[cfg(feature = "ch06")]
            HostCommand::Skills => Ok(self.skills_report.clone()),
            #[cfg(feature = "ch07")]
            HostCommand::Compact => self.compact(),
            #[cfg(feature = "ch07")]
            HostCommand::Stats => Ok(self.stats_report()),
            #[cfg(feature = "ch18")]
            HostCommand::Mcp => Ok(self.config.mcp.report()),
        }
    }
}
// ANCHOR_END: repl_host

/// A new session of `store`'s root (a journal from chapter 9), the system prompt its first message.
#[cfg(feature = "ch05")]
fn new_session(
    store: &SessionStore,
    origin: &Origin,
    system_prompt: &str,
) -> Result<(Recorder<SessionLog>, Vec<Message>), Error> {
    let mut recorder = Recorder::new(SessionLog::create(store, origin.clone())?);
    let system = Message::System { content: system_prompt.to_string() };
    recorder.message(&system)?;
    Ok((recorder, vec![system]))
}

#[cfg(feature = "ch07")]
pub(super) fn restore_view(state: &SharedCompaction, record: Option<CompactionRecord>) {
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    match record {
        Some(record) => state.restore(record),
        None => state.clear(),
    }
}

/// The tools and the system prompt they are offered with.
struct Toolbox {
    tools: AgentTools,
    system_prompt: String,
    /// What `/skills` shows (chapter 6).
    #[cfg(feature = "ch06")]
    skills_report: String,
}

// ANCHOR: build_tools
/// The tools of `root` behind a fresh permission gate, and the system prompt with skills.
#[cfg(feature = "ch06")]
fn build_tools(root: &Path, config: &Config) -> Result<Toolbox, Error> {
    let gate = gated_tools(root, config)?;
    let (system_prompt, skills) = build_system_prompt(root);
    for warning in &skills.warnings {
        super::say(&format!("mini-agent: warning: {warning}"));
    }
    let skills_report = skills.to_string();
    let tools = WithSkills::new(gate, skills);
    #[cfg(feature = "ch07")]
    let tools = RepeatNotes::new(tools);
    Ok(Toolbox { tools, system_prompt, skills_report })
}

/// Chapter 12: the workspace's tools behind a permission gate that asks `config.asker`.
#[cfg(feature = "ch12")]
fn gated_tools(root: &Path, config: &Config) -> Result<GatedTools, Error> {
    let prompter: Option<Box<dyn Prompter>> = match &config.asker {
        Asker::Nobody => None,
        Asker::Tty => TerminalPrompter::open_tty().map(|tty| Box::new(tty) as Box<dyn Prompter>),
        Asker::TypeAhead(queue) => Some(Box::new(TypeAheadPrompter(queue.clone()))),
    };
    let tools = Workspace::new(root)?;
    #[cfg(feature = "ch18")]
    let tools = mini_agent::ch18_mcp::WithMcp::new(tools, config.mcp.clone(), Workspace::new(root)?);
    let gate = Gate::new(tools, config.permissions.clone(), prompter);
    #[cfg(feature = "ch16")]
    let gate = mini_agent::ch16_hooks::Hooked::new(gate, config.hooks.clone());
    Ok(gate)
}
// ANCHOR_END: build_tools

/// Before chapter 12 every call the model makes runs.
#[cfg(not(feature = "ch12"))]
fn gated_tools(root: &Path, _config: &Config) -> Result<GatedTools, Error> {
    Workspace::new(root)
}

/// Before chapter 6 the system prompt says who the agent is, and nothing of the project.
#[cfg(not(feature = "ch06"))]
fn build_tools(root: &Path, config: &Config) -> Result<Toolbox, Error> {
    let system_prompt = format!(
        "You are mini-agent, a coding agent working in the workspace root {}. Use the tools to \
         look and to act; say plainly what you did and what failed.",
        root.display()
    );
    Ok(Toolbox { tools: gated_tools(root, config)?, system_prompt })
}

// ANCHOR: fanout
/// Hands each event to each observer in order: the journal first (chapter 9). An error
/// stops the turn before anyone after it acts on an unrecorded event.
pub struct Fanout<'a>(Vec<&'a mut dyn Observer>);

impl Observer for Fanout<'_> {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        for observer in &mut self.0 {
            observer.event(event)?;
        }
        Ok(())
    }

    #[cfg(feature = "ch04")]
    fn queued_input(&mut self) -> Vec<String> {
        self.0.iter_mut().flat_map(|observer| observer.queued_input()).collect()
    }
}
// ANCHOR_END: fanout

// ANCHOR: prompter
/// Asks for a permission during a REPL turn: the question on stderr, the answer from the
/// queue of lines typed meanwhile (the REPL's reader thread owns stdin then).
#[cfg(feature = "ch12")]
struct TypeAheadPrompter(TypeAhead);

#[cfg(feature = "ch12")]
impl Prompter for TypeAheadPrompter {
    fn ask(&mut self, call: &mini_agent::ch02_loop::ToolCall, needed: Permission) -> Answer {
        ask_with(call, needed, |question| self.0.ask(question))
    }
}
// ANCHOR_END: prompter
