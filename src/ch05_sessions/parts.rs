//! What a later chapter adds to every session of a run, as one value: a *run part*.
//!
//! From this chapter on, a run is sessions, and later chapters each add something to every one
//! of them: a layer around the tools (chapter 6's skills, 7's repetition notes, 12's permission
//! gate, 16's hooks, 18's MCP servers, 20's sandbox), a part in each turn (the [`TurnHook`]s of
//! 7, 16 and 19), a record in each new journal (20's sandbox), a line at start-up (20). Each
//! chapter registers a constructor for its part ([`RegisterParts`]); the command line makes the
//! parts once per run and folds them into each session, without naming a chapter.
//!
//! Two choices shape it:
//!
//! * **The order of the tools is not chapter order**, so each part names its place, a
//!   [`Layer`], and the fold sorts by it: innermost the sandbox, then the gate (with the MCP
//!   servers inside it), the hooks, the skills, and outermost the repetition notes.
//! * **A part is a value of the run, cloned into each session.** What a chapter loaded once
//!   (the hooks file, the servers) is shared; what it counts per session is its own
//!   ([`RunPart::for_another_session`]). Who answers a question during a turn is not the
//!   part's but the mode's (`-p`, the REPL, `--json`, the service): an [`Answerer`], handed to
//!   each fold.

use super::TurnHook;
use crate::ch02_loop::command_line::Settings;
use crate::ch02_loop::{Error, Message, Model, Tools};
use crate::ch03_tools::Workspace;
use crate::ch04_terminal::{RegisterCommands, TypeAhead};
use crate::ch05_sessions::Append;
use std::any::Any;
use std::path::Path;
use std::sync::Arc;

// ANCHOR: layer
/// Where a part's layer sits in the fold of a session's tools, from the inside out. A call
/// passes them from the outside in: noted, offered skills, refused by a hook, asked about,
/// and only then run, confined, by the workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    /// Around the workspace itself: where its commands run (chapter 20's sandbox).
    Confinement,
    /// Whether a call may run: the permission gate (chapter 12), with the tools that bring
    /// their own permission inside it (chapter 18's servers).
    Permission,
    /// What the workspace's hooks say before and after a call (chapter 16): outside the gate,
    /// so that a hook refuses a call before anyone is asked.
    Hooks,
    /// Tools that need no permission (chapter 6's `load_skill`), and the system prompt.
    Skills,
    /// What watches every call, whatever layer answered it (chapter 7's repetition notes).
    Watch,
}
// ANCHOR_END: layer

/// What a chapter's slash command shows about the current session: the command's name, and
/// how to say it (chapter 6's skills as loaded for the session, chapter 18's servers as they are).
pub type Report = (&'static str, Box<dyn Fn() -> String + Send>);

/// The tools as the fold hands them on: chapter 3's workspace itself while the layers that
/// need it (where its commands run, what a call would change) wrap it, boxed after that.
pub enum Stack {
    Workspace(Workspace),
    Boxed(Box<dyn Tools>),
}

impl Stack {
    /// The tools, whatever wraps them, for a layer that needs only `Tools`.
    pub fn boxed(self) -> Box<dyn Tools> {
        match self {
            Stack::Workspace(workspace) => Box::new(workspace),
            Stack::Boxed(tools) => tools,
        }
    }

    /// The workspace, for a layer that must sit right on it (`layer` names it in the error).
    pub fn workspace(self, layer: Layer) -> Result<Workspace, Error> {
        match self {
            Stack::Workspace(workspace) => Ok(workspace),
            Stack::Boxed(_) => Err(Error::Config(format!(
                "the {layer:?} layer must wrap the workspace itself, but another layer is inside it"
            ))),
        }
    }
}

/// A session's tools while the fold builds them: the tools, the system prompt they are
/// offered with, what the slash commands report, and warnings for the person (a skill that
/// could not be read).
pub struct Toolbox {
    pub tools: Stack,
    pub system_prompt: String,
    pub reports: Vec<Report>,
    pub warnings: Vec<String>,
}

/// Who answers a question a part asks during a turn (chapter 12's "may this call run?"),
/// chosen by the mode once the run's parts are made.
#[derive(Clone)]
pub enum Answerer {
    /// Nobody: the call is denied with a result that names the flag (scripts, `tasks run`).
    Nobody,
    /// `-p` with a person at the terminal: ask on /dev/tty.
    Terminal,
    /// The REPL: ask through the queue that reads lines during a turn.
    TypeAhead(TypeAhead),
    /// A program reads this run's events (`--json`): each question is printed as one
    /// (through this function), and nobody answers.
    Events(fn(serde_json::Value)),
    /// The mode's own way to ask, a value of the asking chapter's type (the service's
    /// client, chapter 21): that chapter downcasts it, and asks nobody if it cannot.
    Host(Arc<dyn Any + Send + Sync>),
}

/// What a reopened session's journal brings back to the parts (chapter 7's compaction and
/// counts, chapter 10's plan with the calls that failed): each part finds its own by type.
#[derive(Default)]
pub struct Brought(pub Vec<Box<dyn Any + Send>>);

impl Brought {
    /// What was brought back of type `T`, if anything.
    pub fn find<T: Any>(&self) -> Option<&T> {
        self.0.iter().find_map(|brought| brought.downcast_ref::<T>())
    }
}

/// What a part's constructor reads, once per run.
pub struct RunInput<'a> {
    pub root: &'a Path,
    pub settings: &'a Settings,
    /// Whether a person at the terminal can approve a workspace's file (hooks, servers).
    pub can_ask: bool,
}

/// What a part's layer reads, once per session: the root, the flags, who answers.
pub struct SessionInput<'a> {
    pub root: &'a Path,
    pub settings: &'a Settings,
    pub answerer: &'a Answerer,
}

// ANCHOR: run_part
/// A later chapter's part in every session of a run. Each method has a default that adds
/// nothing, so a part says only what it does.
pub trait RunPart: Send + Sync {
    /// Its place in the fold of the tools; `None`: it adds no layer.
    fn layer(&self) -> Option<Layer> {
        None
    }
    /// `toolbox` with this part's layer around it.
    fn wrap(&self, toolbox: Toolbox, _session: &SessionInput) -> Result<Toolbox, Error> {
        Ok(toolbox)
    }
    /// Its part in each turn of a new session.
    fn turn_hook(&self) -> Option<Box<dyn TurnHook>> {
        None
    }
    /// The model of one turn, as this part lends it (chapter 7 asks a model that is stuck
    /// repeating a call once more, without tools).
    fn turn_model<'a>(&self, model: Box<dyn Model + 'a>) -> Box<dyn Model + 'a> {
        model
    }
    /// A session becomes the current one, new or reopened (with what its journal `brought`
    /// back), holding `history` (chapter 7 restores its compaction and counts from here).
    fn session_opened(&self, _history: &[Message], _brought: &Brought) {}
    /// Records what the journal of session `session` must say before its first turn.
    fn record(&self, _session: &str, _log: &mut dyn Append) -> Result<(), Error> {
        Ok(())
    }
    /// A line for stderr when the run starts; `asked`: the person asked for it (`-v`, the
    /// REPL's banner, the service's log), else only what they must know.
    fn start_up_line(&self, _asked: bool) -> Option<String> {
        None
    }
    /// A line `/stats` adds about this part (chapter 7), `name   value`.
    fn stats_line(&self) -> Option<String> {
        None
    }
    /// The same part for a session of the same run (a clone: what the run loaded is shared).
    fn clone_part(&self) -> Box<dyn RunPart>;
    /// The part for a session that runs beside others (the service's): what it counts is its
    /// own. By default the same as a clone.
    fn for_another_session(&self) -> Box<dyn RunPart> {
        self.clone_part()
    }
    /// The part itself, for a later chapter's code that needs its own state (downcast).
    fn as_any(&self) -> &dyn Any;
}
// ANCHOR_END: run_part

/// A chapter's constructor of its part, called once per run.
pub type MakePart = fn(&RunInput) -> Result<Box<dyn RunPart>, Error>;

/// Where a chapter registers its part. A later chapter may register under an earlier one's
/// name: its constructor then builds that part with what the later chapter adds (chapter 17's
/// `webhook` section in chapter 16's hooks, chapter 18's servers inside chapter 12's gate).
pub trait RegisterParts: RegisterCommands {
    fn part(&mut self, name: &'static str, make: MakePart);
}

/// The parts of one run, in registration (chapter) order.
#[derive(Default)]
pub struct Parts(pub Vec<Box<dyn RunPart>>);

impl Clone for Parts {
    fn clone(&self) -> Parts {
        Parts(self.0.iter().map(|part| part.clone_part()).collect())
    }
}

impl Parts {
    /// Makes each registered part for this run, in order.
    pub fn make(registered: &[(&'static str, MakePart)], input: &RunInput) -> Result<Parts, Error> {
        registered.iter().map(|(_, make)| make(input)).collect::<Result<_, _>>().map(Parts)
    }

    /// The parts for a session that runs beside others (see [`RunPart::for_another_session`]).
    pub fn for_another_session(&self) -> Parts {
        Parts(self.0.iter().map(|part| part.for_another_session()).collect())
    }

    /// The parts with a layer, from the inside out.
    pub fn layers(&self) -> Vec<&dyn RunPart> {
        let mut layered: Vec<&dyn RunPart> = self.0.iter().map(|part| &**part).collect();
        layered.retain(|part| part.layer().is_some());
        layered.sort_by_key(|part| part.layer());
        layered
    }

    /// Their parts in each turn of a new session, in chapter order.
    pub fn turn_hooks(&self) -> Vec<Box<dyn TurnHook>> {
        self.0.iter().filter_map(|part| part.turn_hook()).collect()
    }

    /// The session's `model` for one turn, lent through each part.
    pub fn turn_model<'a>(&self, model: &'a mut dyn Model) -> Box<dyn Model + 'a> {
        self.0.iter().fold(Box::new(model), |model, part| part.turn_model(model))
    }

    /// Tells each part that a session became the current one.
    pub fn session_opened(&self, history: &[Message], brought: &Brought) {
        self.0.iter().for_each(|part| part.session_opened(history, brought));
    }

    /// What each part records in a new journal.
    pub fn record(&self, session: &str, log: &mut dyn Append) -> Result<(), Error> {
        self.0.iter().try_for_each(|part| part.record(session, log))
    }

    /// The start-up lines of the parts (see [`RunPart::start_up_line`]).
    pub fn start_up_lines(&self, asked: bool) -> impl Iterator<Item = String> + '_ {
        self.0.iter().filter_map(move |part| part.start_up_line(asked))
    }

    /// The lines the parts add to `/stats`.
    pub fn stats_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.0.iter().filter_map(|part| part.stats_line())
    }

    /// The part of type `P`, if a chapter of this state made one.
    pub fn find<P: RunPart + 'static>(&self) -> Option<&P> {
        self.0.iter().find_map(|part| part.as_any().downcast_ref::<P>())
    }

    /// `workspace` as the parts confine it: the commands of a harness (chapter 15's verify
    /// commands) run where the agent's `bash` does.
    pub fn confine(&self, workspace: Workspace, settings: &Settings) -> Result<Workspace, Error> {
        let root = workspace.root().to_path_buf();
        let session = SessionInput { root: &root, settings, answerer: &Answerer::Nobody };
        let mut toolbox = Toolbox {
            tools: Stack::Workspace(workspace),
            system_prompt: String::new(),
            reports: Vec::new(),
            warnings: Vec::new(),
        };
        for part in self.layers().into_iter().filter(|part| part.layer() == Some(Layer::Confinement)) {
            toolbox = part.wrap(toolbox, &session)?;
        }
        toolbox.tools.workspace(Layer::Confinement)
    }
}
