//! From chapter 5 on, a run is a session: what the command line does with a task, or with no
//! task at all. It chooses the session (`-c`, `-r`, or a new one; `--status` stops there),
//! builds the model and the run's configuration, starts the agent of `app.rs`, and hands it
//! one task (`-p`) or the REPL. Before chapter 5, `early.rs` does the same with one
//! conversation held in memory.

use super::app::{Agent, Config, Opened};
use crate::ch14_main::endpoint::Connection;
use crate::ch14_main::endpoint::Keys;
use crate::ch14_main::registry::Registry;
use crate::ch14_main::{build_model, one_shot, read_prompt, workspace_root};
use mini_agent::ch02_loop::Error;
use mini_agent::ch02_loop::command_line::{Flag, PROMPT, ROOT, Settings, VERBOSE};
use mini_agent::ch04_terminal::Look;
use mini_agent::ch05_sessions::Answerer;
use mini_agent::ch05_sessions::SessionStore;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// `--json` (chapter 14): a program reads the events, and nobody is there to answer.
pub const JSON: Flag = Flag::switch(14, "--json", &["with -p: print events as JSON Lines on stdout"]);

/// Whether a program reads this run's events (`--json`, never given before chapter 14).
pub(crate) fn json_wanted(settings: &Settings) -> bool {
    settings.has(&JSON)
}

/// Whether a person can be asked a question at the terminal (chapter 12's permissions, and
/// the approvals of later chapters): stdin is one, and no program reads the events (`--json`).
pub(crate) fn can_ask(settings: &Settings) -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdin()) && !json_wanted(settings)
}

// ANCHOR: ask_at_the_terminal
/// `-p` asks at the terminal only when a person is there to answer (DESIGN: scripts and tests
/// get a denial that names the flag).
fn asking_at_the_terminal(config: Config) -> Config {
    let answerer = match can_ask(&config.settings) {
        true => Answerer::Terminal,
        false => Answerer::Nobody,
    };
    Config { answerer, ..config }
}
// ANCHOR_END: ask_at_the_terminal

/// The agent; from chapter 14, with `--json`'s closing `exit` event.
pub(crate) fn agent_with_events(
    settings: &Settings,
    registry: &'static Registry,
    keys: &Keys,
) -> Result<u8, Error> {
    if json_wanted(settings) {
        return super::json_events::agent(settings, registry, keys);
    }
    agent(settings, registry, keys)
}

// ANCHOR: agent
/// `--status`, one task (`-p`) or the REPL, in a new session or a resumed one.
pub(crate) fn agent(settings: &Settings, registry: &'static Registry, keys: &Keys) -> Result<u8, Error> {
    let here = workspace_root(settings.value(&ROOT).map(Path::new))?;
    // How a session is chosen and reopened is chapter 5's, or the one chapter 10 registered.
    // A symlinked .mini_agent/ would move every record elsewhere (chapter 9).
    let reopening = registry.reopening;
    let chosen = match (reopening.choose)(&sessions_of(&here)?, settings)? {
        ControlFlow::Break(status) => return crate::ch14_main::print_stdout(&status),
        ControlFlow::Continue(path) => path,
    };
    let task = settings.value(&PROMPT).map(read_prompt).transpose()?;
    let (opened, root, connection) = (reopening.open)(chosen, here, settings, keys, registry)?;
    // ANCHOR_END: agent
    // ANCHOR: agent_run
    let model = build_model(&connection, settings)?;
    let config = Config::new(&connection, settings, &root, registry)?;
    // A person's own question is answered even where no session can be recorded (14).
    let config = Config { may_go_unrecorded: registry.answers_unrecorded, ..config };
    let start = |config| Agent::start(model, opened, config);
    match task {
        Some(task) => {
            // What the parts say at start-up: chapter 20's sandbox when it falls short, or under -v.
            for line in config.parts.start_up_lines(settings.has(&VERBOSE)) {
                crate::ch14_main::say(&line);
            }
            // With `--json` the events go to stdout, and the questions to the program (14).
            if json_wanted(settings) {
                let agent = start(super::json_events::asking(config))?;
                return super::json_events::one_shot(agent, task, settings);
            }
            let config = asking_at_the_terminal(config);
            let mut agent = start(config)?;
            one_shot(settings, |display| agent.turn_on(task, display, None))
        }
        None => super::repl::repl(start, config, registry),
    }
}
// ANCHOR_END: agent_run
/// Whether `-c` or `-r` chose a session to go on with (chapter 5).
pub(crate) fn resumed_by(settings: &Settings) -> bool {
    use mini_agent::ch05_sessions::{CONTINUE, RESUME};
    settings.has(&CONTINUE) || settings.has(&RESUME)
}

/// The sessions of `root`; from chapter 9 on, `.mini_agent/` checked and its session files
/// read as untrusted workspace input.
pub(crate) fn sessions_of(root: &Path) -> Result<SessionStore, Error> {
    let store = SessionStore::new(root);
    #[cfg(feature = "ch09")]
    let store = store.as_workspace_input()?;
    Ok(store)
}

/// What `-c`, `-r` and `--status` ask for: the journal of the session to continue, if one
/// was named, or (`Break`) what to print instead, the session's state (chapter 10's `--status`).
pub type SessionChoice = ControlFlow<String, Option<PathBuf>>;

/// A session reopened: the session (if one was chosen), the root it works in, and the
/// connection to its model.
pub type ReopenedSession = (Option<Opened>, PathBuf, Connection);

/// Opens the chosen session (if any) from where the command was typed: its root, the flags,
/// the run's secrets, the table.
pub type OpenChosen =
    fn(Option<PathBuf>, PathBuf, &Settings, &Keys, &Registry) -> Result<ReopenedSession, Error>;

/// How `-c` and `-r` choose a session and reopen it: chapter 5's way replays its file where
/// the command was typed; chapter 10 registers its own (`reopen.rs`: `--status`, the calls a
/// session left open, its own root and endpoint, its last exchange shown again).
#[derive(Clone, Copy)]
pub struct Reopening {
    /// The session `-c` or `-r` names, or what `--status` prints instead.
    pub choose: fn(&SessionStore, &Settings) -> Result<SessionChoice, Error>,
    /// The chosen session opened (nothing before the prompt was read).
    pub open: OpenChosen,
    /// The last exchange of a resumed session, for the REPL to show.
    pub last_exchange: Option<fn(&Agent, Look) -> Option<String>>,
}

impl Default for Reopening {
    fn default() -> Reopening {
        Reopening { choose: named_session, open: replayed, last_exchange: None }
    }
}

/// The session `-c` (the latest) or `-r ID` names.
pub(crate) fn named_session(store: &SessionStore, settings: &Settings) -> Result<SessionChoice, Error> {
    use mini_agent::ch05_sessions::{CONTINUE, RESUME};
    Ok(ControlFlow::Continue(match (settings.value(&RESUME), settings.has(&CONTINUE)) {
        (Some(wanted), _) => Some(store.resolve(wanted)?),
        (None, true) => Some(store.latest()?),
        (None, false) => None,
    }))
}

/// Chapter 5's reopening: the chosen session's history replayed, in the root where the command
/// was typed, talking to what the flags and the environment say.
fn replayed(
    chosen: Option<PathBuf>,
    here: PathBuf,
    settings: &Settings,
    keys: &Keys,
    _: &Registry,
) -> Result<ReopenedSession, Error> {
    let opened = chosen.map(|path| reopen(&path)).transpose()?;
    Ok((opened, here, crate::ch14_main::endpoint::connect_afresh(settings, keys)?))
}

/// A session file reopened, its history replayed.
fn reopen(path: &Path) -> Result<Opened, Error> {
    use mini_agent::ch05_sessions::{Recorder, continue_history};
    #[cfg(not(feature = "ch09"))]
    let (log, records) = super::app::KeptLog::open(path)?;
    // Chapter 9: the journal, locked, its torn last line cut off.
    #[cfg(feature = "ch09")]
    let (log, records) = {
        let (journal, loaded) = super::app::KeptLog::open(path)?;
        if let Some(warning) = &loaded.warning {
            crate::ch14_main::say(&format!("mini-agent: warning: {warning}"));
        }
        (journal, loaded.records)
    };
    let history = continue_history(log.id(), &records)?;
    Ok(Opened::new(Recorder::new(super::app::SessionLog::from(log)), history))
}

/// Chapter 14's own additions to the command line: `--json`, and `mini-agent sessions`.
#[cfg(feature = "ch14")]
pub(crate) fn register(registry: &mut Registry) {
    use mini_agent::ch02_loop::command_line::{Help, Registry as _, SHOW_HELP};
    registry.flag(JSON);
    registry.answers_unrecorded = true;
    registry.runs.push(("sessions", super::sessions_table::sessions));
    registry.flag(Flag { chapter: 14, command: "sessions", ..ROOT });
    registry.flag(Flag { chapter: 14, command: "sessions", ..SHOW_HELP });
    let help = |section, lines| Help { chapter: 14, page: "", section, lines };
    registry.help(help(
        "USAGE",
        &["  mini-agent sessions [--root DIR]      list this root's sessions: id, date, state, turns, prompt"],
    ));
    registry.help(help(
        "SESSIONS",
        &["  mini-agent sessions                   every session of this root, with its state"],
    ));
    registry.check(|settings| match json_wanted(settings) && !settings.has(&PROMPT) {
        true => Err("--json prints the events of one task: add -p \"task\"".into()),
        false => Ok(()),
    });
}
