//! The agent as a user meets it: a session around the loop.
//!
//! Every run — one `-p` task or a whole REPL — is a session: a journal under
//! `<root>/.mini_agent/sessions/` that holds the system prompt, each user message and
//! everything the loop did. The wiring is the lesson of this file:
//!
//! * **The journal observes first.** A [`Fanout`] gives each event to the recorder before the
//!   screen, the `/stats` counter or the `--json` printer, and the recorder's error stops
//!   the turn. That is how `tool_started` is on disk before a tool runs.
//! * **A resumed session is its journal replayed.** The history is rebuilt from the records,
//!   a compaction in force is restored as the *view* the model was being sent, tool calls
//!   left open are answered "unknown" or "not run" (chapter 10), and permissions start again
//!   from the flags: they belong to a person at a terminal, not to a file.
//! * **How a turn ended is a fact too.** Ctrl+C, an error, the turn limit: each is recorded,
//!   so `--status` can tell where a session stopped.

use super::sessions_table::sessions_table;
use mini_agent::ch02_loop::{Error, Event, Limits, Message, Model, Observer, Outcome, plural, run_turn};
use mini_agent::ch03_tools::Workspace;
use mini_agent::ch04_terminal::sanitize::sanitize;
use mini_agent::ch04_terminal::{HostCommand, Look, ReplHost, TypeAhead, render_markdown};
use mini_agent::ch05_sessions::{Origin, Recorder, SessionStore};
use mini_agent::ch06_skills::{WithSkills, build_system_prompt};
use mini_agent::ch07_context::repeats::RepeatNotes;
use mini_agent::ch07_context::{
    Compacting, CompactionRecord, CompactionState, SharedCompaction, SharedStats, Stats,
};
use mini_agent::ch09_journal::Journal;
use mini_agent::ch10_recovery::{ResumePlan, resume};
use mini_agent::ch12_permissions::{
    Answer, Gate, Permission, Permissions, Prompter, TerminalPrompter, ask_with,
};
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

// ANCHOR: opened
/// Continues a session chapter 10 opened for `-c` or `--resume`: the journal it locked records
/// from here on, the history it replayed goes on, and the compaction that was in force is the
/// view the model is sent again.
fn continue_session(
    compaction: &SharedCompaction,
    (journal, plan): (Journal, ResumePlan),
) -> (Recorder<Journal>, Vec<Message>) {
    restore_view(compaction, plan.compaction);
    (Recorder::new(journal), plan.history)
}
// ANCHOR_END: opened

/// Who answers "may this call run?" when the flags did not allow it.
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
    pub origin: Origin,
    pub permissions: Permissions,
    pub asker: Asker,
    pub max_turns: usize,
    pub context_tokens: u64,
}

// ANCHOR: start
/// The six tools behind the permission gate, with skills, watched for repetition (chapter 7).
type AgentTools = RepeatNotes<WithSkills<Gate<Workspace>>>;

/// The pieces of a running agent: the model, the tools, and the current session.
pub struct Agent {
    config: Config,
    root: PathBuf,
    store: SessionStore,
    model: Compacting<Box<dyn Model>>,
    compaction: SharedCompaction,
    tools: AgentTools,
    skills_report: String,
    system_prompt: String,
    stats: SharedStats,
    recorder: Recorder<Journal>,
    history: Vec<Message>,
}

impl Agent {
    /// Starts with `opened` (a resumed session) or a new session in `root`.
    pub fn start(
        model: Box<dyn Model>,
        root: PathBuf,
        opened: Option<(Journal, ResumePlan)>,
        config: Config,
    ) -> Result<Agent, Error> {
        let compaction = CompactionState::shared();
        let model = Compacting::with_state(model, config.context_tokens, compaction.clone());
        let (tools, system_prompt, skills_report) = build_tools(&root, &config)?;
        let store = SessionStore::new(&root);
        let (recorder, history) = match opened {
            Some(opened) => continue_session(&compaction, opened),
            None => new_session(&store, &config.origin, &system_prompt)?,
        };
        let agent = Agent {
            config,
            root,
            store,
            model,
            compaction,
            tools,
            skills_report,
            system_prompt,
            stats: SharedStats::default(),
            recorder,
            history,
        };
        agent.reset_stats();
        Ok(agent)
    }
    // ANCHOR_END: start

    pub fn session_id(&self) -> &str {
        self.recorder.log().id()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The model and endpoint this run talks to.
    pub fn origin(&self) -> &Origin {
        &self.config.origin
    }

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
        if let Err(error) = self.recorder.message(&message) {
            return Outcome::Failed(error);
        }
        let mut stats = self.stats.clone();
        let _ = stats.event(Event::Message(&message));
        self.history.push(message);
        // A new message from the person: earlier repetition is not a loop any more. The
        // stopper comes first, so that a refused request is not announced to anyone else.
        self.tools.reset();
        let mut stop_repeats = self.tools.stopper();
        let mut others: Vec<&mut dyn Observer> = vec![&mut stop_repeats, &mut stats];
        if let Some(json) = json {
            others.push(json);
        }
        others.push(display);
        let mut observer = Fanout { recorder: &mut self.recorder, others };
        let limits = Limits { max_turns: self.config.max_turns };
        let outcome = run_turn(&mut self.model, &mut self.tools, &mut self.history, &mut observer, &limits);
        self.record_ending(&outcome);
        outcome
    }
    // ANCHOR_END: turn

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
            eprintln!(
                "mini-agent: warning: could not record how the turn ended: {}",
                sanitize(&error.to_string())
            );
        }
    }

    /// The last user message and the answer it got, to show when a session is resumed: on the
    /// screen, so laid out (`Plain`) at least, never raw.
    pub fn last_exchange(&self, look: Look) -> Option<String> {
        let look = if look == Look::Raw { Look::Plain } else { look };
        let asked = self.history.iter().rposition(|m| matches!(m, Message::User { .. }))?;
        let Message::User { content: question } = &self.history[asked] else { return None };
        let mut shown = format!("> {}\n", sanitize(question.trim_end()));
        let answer = self.history[asked..].iter().rev().find_map(|m| match m {
            Message::Assistant { content: Some(text), .. } if !text.trim().is_empty() => Some(text),
            _ => None,
        });
        if let Some(answer) = answer {
            shown.push_str(&render_markdown(answer, look));
        }
        Some(shown)
    }

    /// Makes another session the current one (`/new`, `/resume`): its journal, its history
    /// and its compaction; permissions and `/stats` start again, as for a new session.
    fn switch_to(
        &mut self,
        recorder: Recorder<Journal>,
        history: Vec<Message>,
        view: Option<CompactionRecord>,
    ) -> Result<(), Error> {
        let (tools, system_prompt, skills_report) = build_tools(&self.root, &self.config)?;
        self.tools = tools;
        self.system_prompt = system_prompt;
        self.skills_report = skills_report;
        self.recorder = recorder;
        self.history = history;
        restore_view(&self.compaction, view);
        self.reset_stats();
        Ok(())
    }

    /// `/stats` counts this session from the moment it was opened; the history it holds
    /// already is what the next prompt is estimated from.
    fn reset_stats(&self) {
        let mut stats = Stats::new();
        for message in &self.history {
            let _ = stats.event(Event::Message(message));
        }
        *self.stats.0.lock().unwrap_or_else(PoisonError::into_inner) = stats;
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

    fn compact(&mut self) -> Result<String, Error> {
        let mut stats = self.stats.clone();
        let mut observer = Fanout { recorder: &mut self.recorder, others: vec![&mut stats] };
        match self.model.compact(&self.history, &mut observer)? {
            Some(record) => Ok(format!(
                "compacted: {} replaced by a summary (about {} → {} tokens)",
                plural(record.replaced, "earlier message"),
                record.tokens_before,
                record.tokens_after
            )),
            None => Ok("nothing to compact yet".into()),
        }
    }

    fn stats_report(&self) -> String {
        let schemas = mini_agent::ch02_loop::Tools::schemas(&self.tools);
        let next_prompt = self.model.estimate_prompt(&self.history, &schemas);
        format!(
            "session      {}\n{}\ncontext      about {next_prompt} of {} tokens in the next request",
            self.session_id(),
            self.stats.snapshot(),
            self.config.context_tokens
        )
    }
}

// ANCHOR: repl_host
impl ReplHost for Agent {
    fn turn(&mut self, input: String, observer: &mut dyn Observer) -> Outcome {
        Agent::turn(self, input, observer, None)
    }

    fn command(&mut self, command: HostCommand) -> Result<String, Error> {
        match command {
            HostCommand::New => {
                let (recorder, history) = new_session(&self.store, &self.config.origin, &self.system_prompt)?;
                self.switch_to(recorder, history, None)?;
                Ok(format!("new session {}", self.session_id()))
            }
            HostCommand::List => sessions_table(&self.store, Some(self.session_id())),
            HostCommand::Resume(wanted) => {
                let path = self.store.resolve(&wanted)?;
                if path == self.recorder.log().path() {
                    return Ok(format!("already in session {}", self.session_id()));
                }
                let (journal, plan) = resume(&path, false)?;
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
            HostCommand::Skills => Ok(self.skills_report.clone()),
            HostCommand::Compact => self.compact(),
            HostCommand::Stats => Ok(self.stats_report()),
        }
    }
}
// ANCHOR_END: repl_host

/// A new journal for `store`'s root, with the system prompt as its first message.
fn new_session(
    store: &SessionStore,
    origin: &Origin,
    system_prompt: &str,
) -> Result<(Recorder<Journal>, Vec<Message>), Error> {
    let mut recorder = Recorder::new(Journal::create(store, origin.clone())?);
    let system = Message::System { content: system_prompt.to_string() };
    recorder.message(&system)?;
    Ok((recorder, vec![system]))
}

fn restore_view(state: &SharedCompaction, record: Option<CompactionRecord>) {
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    match record {
        Some(record) => state.restore(record),
        None => state.clear(),
    }
}

// ANCHOR: build_tools
/// The tools of `root` behind a fresh permission gate, and the system prompt with skills.
fn build_tools(root: &Path, config: &Config) -> Result<(AgentTools, String, String), Error> {
    let prompter: Option<Box<dyn Prompter>> = match &config.asker {
        Asker::Nobody => None,
        Asker::Tty => TerminalPrompter::open_tty().map(|tty| Box::new(tty) as Box<dyn Prompter>),
        Asker::TypeAhead(queue) => Some(Box::new(TypeAheadPrompter(queue.clone()))),
    };
    let gate = Gate::new(Workspace::new(root)?, config.permissions, prompter);
    let (system_prompt, skills) = build_system_prompt(root);
    for warning in &skills.warnings {
        eprintln!("mini-agent: warning: {}", sanitize(warning));
    }
    let report = skills.to_string();
    Ok((RepeatNotes::new(WithSkills::new(gate, skills)), system_prompt, report))
}
// ANCHOR_END: build_tools

// ANCHOR: fanout
/// Hands each event to the journal first, then to the others. An error from the journal
/// stops the turn before anyone acts on an unrecorded event.
pub struct Fanout<'a> {
    recorder: &'a mut Recorder<Journal>,
    others: Vec<&'a mut dyn Observer>,
}

impl Observer for Fanout<'_> {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        self.recorder.event(event)?;
        for other in &mut self.others {
            other.event(event)?;
        }
        Ok(())
    }

    fn queued_input(&mut self) -> Vec<String> {
        self.others.iter_mut().flat_map(|other| other.queued_input()).collect()
    }
}
// ANCHOR_END: fanout

// ANCHOR: prompter
/// Asks for a permission during a REPL turn: the question on stderr, the answer from the
/// queue of lines typed meanwhile (the REPL's reader thread owns stdin then).
struct TypeAheadPrompter(TypeAhead);

impl Prompter for TypeAheadPrompter {
    fn ask(&mut self, call: &mini_agent::ch02_loop::ToolCall, needed: Permission) -> Answer {
        ask_with(call, needed, |question| self.0.ask(question))
    }
}
// ANCHOR_END: prompter
