//! Chapter 10 in the session host: a session reopened for `-c`, `--resume` or `/resume`.
//!
//! Chapter 10 decides whether a journal may continue and answers the calls it left open;
//! here its plan becomes the host's current session: the journal to append to, the history
//! to send, the compaction that was in force, and what to show the person who came back.

use super::app::{Agent, Opened, toolbox};
use super::start::{ReopenedSession, Reopening, SessionChoice};
use crate::ch14_main::endpoint::connect;
use crate::ch14_main::registry::Registry;
use crate::ch14_main::say;
use mini_agent::ch02_loop::command_line::Settings;
use mini_agent::ch02_loop::{Error, Message};
use mini_agent::ch03_tools::secrets::Keys;
use mini_agent::ch04_terminal::sanitize::sanitize;
use mini_agent::ch04_terminal::{Look, render_markdown};
use mini_agent::ch05_sessions::{Brought, CONTINUE, Origin, RESUME, Recorder, SessionStore};
use mini_agent::ch07_context::Reopened;
use mini_agent::ch09_journal::Journal;
use mini_agent::ch10_recovery::{ACKNOWLEDGE_UNKNOWN, ResumePlan, STATUS, resume, status_of};
use std::ops::ControlFlow;
use std::path::PathBuf;

/// Chapter 10's way to choose and reopen a session, registered in its place.
pub const REOPENING: Reopening =
    Reopening { choose: chosen_session, open: resumed, last_exchange: Some(Agent::last_exchange) };

/// `-c` or `-r`'s session, or with `--status` its state.
pub fn chosen_session(store: &SessionStore, settings: &Settings) -> Result<SessionChoice, Error> {
    let chosen = match (settings.value(&RESUME), settings.has(&CONTINUE)) {
        (Some(wanted), _) => Some(store.resolve(wanted)?),
        (None, true) => Some(store.latest()?),
        (None, false) => None,
    };
    if !settings.has(&STATUS) {
        return Ok(ControlFlow::Continue(chosen));
    }
    // No key, no request, no lock: reading the journal is enough.
    let path = chosen.ok_or_else(|| Error::Usage("--status needs -c or -r ID".into()))?;
    // The recorded error may quote a server's body: shown, never obeyed.
    Ok(ControlFlow::Break(sanitize(&status_of(&path)?.to_string())))
}

/// The chosen session opened by chapter 10 (its journal locked, its open calls answered),
/// the root it works in (its own, wherever the command was typed) and the connection to its
/// model (its own, unless a flag moves it).
pub fn resumed(
    chosen: Option<PathBuf>,
    here: PathBuf,
    settings: &Settings,
    keys: &Keys,
    registry: &Registry,
) -> Result<ReopenedSession, Error> {
    let answers_unrecorded = registry.answers_unrecorded;
    let opened = chosen.map(|path| {
        // In a root that cannot be written, say why -c and -r cannot go on: the journal's
        // `.mini_agent/` (ROOT/.mini_agent/sessions/ID.jsonl) must be writable.
        resume(&path, settings.has(&ACKNOWLEDGE_UNKNOWN)).map_err(|error| {
            let state = path.parent().and_then(std::path::Path::parent).unwrap_or(&path);
            let otherwise = match answers_unrecorded {
                true => " (without -c or -r, a question is still answered, unrecorded)",
                false => "",
            };
            needs_a_journal(error, "-c and -r add to the session they continue", state, otherwise)
        })
    });
    let opened = opened.transpose()?;
    let plan = opened.as_ref().map(|(_, plan)| plan);
    if let Some(warning) = plan.and_then(|plan| plan.warning.as_deref()) {
        say(&format!("mini-agent: warning: {warning}"));
    }
    let root = plan.map_or(here, |plan| plan.root.clone());
    let connection = connect(settings, keys, plan.map(|plan| &plan.origin))?;
    Ok((opened.map(continue_session), root, connection))
}

// ANCHOR: opened
/// Continues a session chapter 10 opened for `-c` or `--resume`: the journal it locked records
/// from here on, the history it replayed goes on, and the parts get back what they need: the
/// compaction that was in force, the view the model is sent again (chapter 7), and the plan
/// (chapter 19 takes the calls that failed).
pub fn continue_session((journal, mut plan): (Journal, ResumePlan)) -> Opened {
    let history = std::mem::take(&mut plan.history);
    let reopened = Reopened { compaction: plan.compaction.clone(), recorded: plan.recorded };
    let brought = Brought(vec![Box::new(reopened), Box::new(plan)]);
    Opened { recorder: Recorder::new(super::app::SessionLog::from(journal)), history, brought }
}
// ANCHOR_END: opened

impl Agent {
    /// `/resume ID`: switches to another session of this root.
    pub(crate) fn resume_session(&mut self, wanted: &str) -> Result<String, Error> {
        let path = self.store.resolve(wanted)?;
        if path == self.session.recorder.log().path() {
            return Ok(format!("already in session {}", self.session_id()));
        }
        let (journal, plan) = resume(&path, false)?;
        if let Some(warning) = &plan.warning {
            eprintln!("mini-agent: warning: {}", sanitize(warning));
        }
        if let Some(note) = self.moved_note(&plan.origin) {
            eprintln!("mini-agent: note: {}", sanitize(&note));
        }
        let toolbox = toolbox(&self.config)?;
        self.switch_to(toolbox, continue_session((journal, plan)))?;
        let last = self.last_exchange(Look::Plain).unwrap_or_default();
        Ok(format!("resumed session {}\n{last}", self.session_id()))
    }

    /// The last user message and the answer it got, to show when a session is resumed: on the
    /// screen, so laid out (`Plain`) at least, never raw.
    pub fn last_exchange(&self, look: Look) -> Option<String> {
        let look = if look == Look::Raw { Look::Plain } else { look };
        let history = &self.history;
        let asked = history.iter().rposition(|m| matches!(m, Message::User { .. }))?;
        let Message::User { content: question } = &history[asked] else { return None };
        let mut shown = format!("> {}\n", sanitize(question.trim_end()));
        let answer = history[asked..].iter().rev().find_map(|m| match m {
            Message::Assistant { content: Some(text), .. } if !text.trim().is_empty() => Some(text),
            _ => None,
        });
        if let Some(answer) = answer {
            shown.push_str(&render_markdown(answer, look));
        }
        Some(shown)
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
}

impl super::app::SessionLog {
    /// The journal's path; empty when the session is not recorded (it equals no file's).
    pub fn path(&self) -> &std::path::Path {
        match self {
            Self::Kept(log) => log.path(),
            Self::NotKept { .. } => std::path::Path::new(""),
        }
    }
}

/// `error`, and when it says the root cannot be written, `why` a journal is needed there
/// (`-c` and `-r`, `tasks run`), that the agent's `state` directory (`ROOT/.mini_agent/`) must
/// be writable, and `otherwise`, what can be done instead (or nothing).
pub fn needs_a_journal(error: Error, why: &str, state: &std::path::Path, otherwise: &str) -> Error {
    match super::unrecorded::cannot_write_here(&error) {
        true => Error::Config(format!("{error}; {why}, so {}/ must be writable{otherwise}", state.display())),
        false => error,
    }
}
