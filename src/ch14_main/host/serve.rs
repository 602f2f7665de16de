//! `mini-agent serve` (chapter 21): the service's [`Backend`], made of the agent the terminal
//! runs.
//!
//! Chapter 21 serves HTTP and knows nothing of agents; this file gives it one. Each turn opens
//! its session as `-r` does (the journal locked, the history replayed, open calls answered),
//! runs `Agent::turn` with the `--json` events going to the session's stream, and closes the
//! session again, so between turns the journal is free for `mini-agent -r ID` at a terminal.
//! A permission question goes through the turn to the console; Ctrl+C and SIGTERM interrupt
//! every turn as they would at the terminal, and then the service stops.

use super::app::{Agent, Config};
use super::json_events;
use super::start::sessions_of;
use crate::ch14_main::args::{Command, parse, split_flags};
use crate::ch14_main::endpoint::{Connection, connect};
use crate::ch14_main::registry::Registry;
use crate::ch14_main::{build_model, help, one_line, say, workspace_root};
use mini_agent::ch02_loop::command_line::{PROMPT, ROOT, SHOW_HELP, Settings};
use mini_agent::ch02_loop::{Error, Event, Observer, Outcome, interrupted, with_turn_flag};
use mini_agent::ch03_tools::secrets::Keys;
use mini_agent::ch04_terminal::install_interrupt_handler;
use mini_agent::ch05_sessions::Answerer;
use mini_agent::ch05_sessions::{CONTINUE, RESUME, SessionStore};
use mini_agent::ch09_journal::SessionInUse;
use mini_agent::ch10_recovery::{STATUS, resume};
use mini_agent::ch12_permissions::{Answer, Asker, Prompter, Question};
use mini_agent::ch21_serve::command_line::{
    DEFAULT_MAX_RUNNING, DEFAULT_PORT, HOST, MAX_RUNNING, PORT, SERVE_TOKEN,
};
use mini_agent::ch21_serve::guard::check_bind;
use mini_agent::ch21_serve::{
    ApprovalRequest, Backend, Decision, Limits, Refusal, Token, Turn, TurnEnd, start, transcript,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// `mini-agent serve WORDS…`: serves the current directory (or `--root`) until Ctrl+C.
pub fn main(words: &[String], registry: &'static Registry, keys: &Keys) -> Result<u8, Error> {
    let (own, agent_words) = split_flags(words, "serve", registry).map_err(Error::Usage)?;
    if own.has(&SHOW_HELP) {
        return crate::ch14_main::print_stdout(&help::help(registry, ""));
    }
    let settings = agent_settings(&agent_words, registry)?;
    // Serve's own flags and token are checked before anything is built or written: a typo
    // leaves no `.mini_agent/`, no private TMPDIR and no sandbox line behind it.
    let served = served(&own, keys)?;
    let root = workspace_root(settings.value(&ROOT).map(Path::new))?;
    let connection = connect(&settings, keys, None)?;
    let store = sessions_of(&root)?;
    ensure_recordable(&store)?;
    let config = Config::new(&connection, &settings, &root, registry)?;
    // What the sandbox enforces on this machine (chapter 20): always said, as a service's log
    // is read after the fact.
    for line in config.parts.start_up_lines(true) {
        say(&line);
    }
    let backend = Arc::new(AgentBackend::new(connection, config, store, registry));
    install_interrupt_handler();
    let server = start(served, backend)?;
    say(&format!("mini-agent: serving {} (Ctrl+C stops)", root.display()));
    crate::ch14_main::print_stdout(&format!("{}\n", server.url()))?;
    // ANCHOR: main_wait
    // Ctrl+C and SIGTERM set chapter 4's flag, which every running turn sees: each is
    // interrupted and records it. Then the service stops taking requests and waits for them.
    while !interrupted() {
        std::thread::sleep(Duration::from_millis(100));
    }
    say("mini-agent: stopping: running turns are interrupted and recorded");
    server.stop();
    server.wait();
    // SIGTERM and SIGHUP make the exit code themselves (143, 129); Ctrl+C is 130.
    match crate::ch14_main::stopped_by_signal() {
        Some(_) => Ok(0),
        None => Err(Error::Interrupted),
    }
}
// ANCHOR_END: main_wait

/// The agent's flags of `serve` (the model, permissions, `--demo`…), as `-p` reads them.
fn agent_settings(words: &[String], registry: &Registry) -> Result<Settings, Error> {
    let settings = match parse(words, registry).map_err(Error::Usage)? {
        Command::Agent(settings) => settings,
        _ => return Err(Error::Usage("serve takes the agent's flags (see mini-agent --help)".into())),
    };
    let not_here = [PROMPT, CONTINUE, RESUME, STATUS, super::start::JSON];
    if let Some(flag) = not_here.iter().find(|flag| settings.has(flag)) {
        return Err(Error::Usage(format!(
            "serve runs the sessions its clients ask for: drop {} (POST /sessions/ID/messages sends a message)",
            flag.long
        )));
    }
    Ok(settings)
}

/// How to serve, from serve's own flags and `MINI_AGENT_SERVE_TOKEN`, refused as early as
/// chapter 21 would refuse it (a reachable address without a chosen token).
fn served(own: &Settings, keys: &Keys) -> Result<mini_agent::ch21_serve::Settings, Error> {
    let token = match keys.get(SERVE_TOKEN) {
        Some(value) => Token::given(&value).map_err(Error::Config)?,
        None => Token::generate().map_err(Error::Config)?,
    };
    let address = address(own)?;
    check_bind(address.ip(), &token).map_err(Error::Config)?;
    let max_running = own.count(&MAX_RUNNING).unwrap_or(DEFAULT_MAX_RUNNING);
    Ok(mini_agent::ch21_serve::Settings { address, max_running, token, limits: Limits::default() })
}

/// A service records every session, so a root whose `.mini_agent/sessions/` cannot be written
/// is refused at the start, not with a 500 for each session asked for. The check is a real
/// write: a file made and removed, as a read-only mount lets a directory that exists be seen.
fn ensure_recordable(store: &SessionStore) -> Result<(), Error> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = store.dir();
    let probe = dir.join(format!(".serve-probe-{}", std::process::id()));
    let written = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|error| (format!("cannot create {}", dir.display()), error))
        .and_then(|()| {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true).mode(0o600);
            options.open(&probe).map_err(|error| (format!("cannot write in {}", dir.display()), error))
        });
    match written {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err((what, error)) => {
            let root = store.root().display();
            Err(Error::Config(format!(
                "cannot serve {root}: {what}: {error}; a service records every session in \
                 {root}/.mini_agent/, so serve a directory that can be written (run it there, or pass --root)"
            )))
        }
    }
}

/// `--host` and `--port`: 127.0.0.1:8421 unless told; port 0 asks for any free one.
fn address(own: &Settings) -> Result<SocketAddr, Error> {
    let host = own.value(&HOST).unwrap_or("127.0.0.1");
    let host = if host == "localhost" { "127.0.0.1" } else { host };
    let ip: IpAddr = host.trim_matches(['[', ']']).parse().map_err(|_| {
        Error::Usage(format!("--host expects an IP address such as 127.0.0.1 or ::1, got '{host}'"))
    })?;
    let port = match own.value(&PORT) {
        None => DEFAULT_PORT,
        Some(text) => text
            .parse()
            .map_err(|_| Error::Usage(format!("--port expects a number from 0 to 65535, got '{text}'")))?,
    };
    Ok(SocketAddr::new(ip, port))
}

/// The agent behind the service: the run's connection and configuration, every session of
/// the served root, and those made in its subdirectories since the service started.
struct AgentBackend {
    /// The chapters' table: what adding a task tells them (chapter 16 approves its check).
    registry: &'static Registry,
    connection: Connection,
    config: Config,
    store: SessionStore,
    /// Sessions made with a `"root"` below the served one: their journals live there.
    elsewhere: Mutex<HashMap<String, PathBuf>>,
    /// A session's fields by its journal's length and time: a listing reads each journal
    /// once per change, not once per poll.
    summaries: Mutex<HashMap<PathBuf, (u64, SystemTime, Value)>>,
}

impl AgentBackend {
    fn new(
        connection: Connection,
        config: Config,
        store: SessionStore,
        registry: &'static Registry,
    ) -> AgentBackend {
        let (elsewhere, summaries) = Default::default();
        AgentBackend { registry, connection, config, store, elsewhere, summaries }
    }

    /// The journal of session `id`.
    fn journal(&self, id: &str) -> Option<PathBuf> {
        let known = self.elsewhere.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned();
        known.or_else(|| Some(self.store.path_of(id))).filter(|path| path.is_file())
    }

    /// The run's configuration for one session: its root, its own counters, and a gate that
    /// asks through `turn` (a new session asks nobody).
    fn config_for(&self, root: &Path, turn: Option<&Turn>) -> Config {
        let mut config = self.config.clone();
        config.root = root.to_path_buf();
        config.parts = config.parts.for_another_session();
        config.answerer = match turn.cloned() {
            Some(turn) => Answerer::Host(Arc::new(Asker::Host(Arc::new(move || {
                Box::new(AskOverHttp(turn.clone())) as Box<dyn Prompter>
            })))),
            None => Answerer::Nobody,
        };
        config
    }

    /// What `mini-agent sessions` shows of a session, as JSON; read again only when its journal
    /// changed.
    fn summary(&self, store: &SessionStore, id: &str) -> Result<Value, Error> {
        let path = store.path_of(id);
        let meta =
            std::fs::metadata(&path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        let stamp = (meta.len(), meta.modified().unwrap_or(SystemTime::UNIX_EPOCH));
        let mut cache = self.summaries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((len, time, value)) = cache.get(&path)
            && (*len, *time) == stamp
        {
            return Ok(value.clone());
        }
        let summary = store.summary(id.to_string())?;
        let value = json!({
            "id": summary.id, "date": summary.created, "state": mini_agent::ch10_recovery::state_word(&path),
            "turns": summary.user_turns, "prompt": summary.first_prompt, "root": store.root(),
        });
        cache.insert(path, (stamp.0, stamp.1, value.clone()));
        Ok(value)
    }
}

// ANCHOR: run_turn
impl Backend for AgentBackend {
    fn run_turn(&self, id: &str, message: &str, turn: &Turn) -> TurnEnd {
        let Some(path) = self.journal(id) else { return TurnEnd::failed(1, format!("no session {id}")) };
        // As `-r ID` does: the journal locked (by this turn only), the history replayed.
        let (journal, plan) = match resume(&path, false) {
            Ok(opened) => opened,
            Err(error) => match error.failure::<SessionInUse>() {
                Some(in_use) => return TurnEnd::refused(open_elsewhere(in_use)),
                None => return TurnEnd::failed(1, one_line(&error.to_string())),
            },
        };
        if let Some(warning) = &plan.warning {
            turn.emit(json!({"type": "notice", "kind": "warning", "text": warning}));
        }
        let root = plan.root.clone();
        let opened = super::reopen::continue_session((journal, plan));
        let resumed = opened.history.len() > 1;
        let started = build_model(&self.connection, &self.config.settings)
            .and_then(|model| Agent::start(model, Some(opened), self.config_for(&root, Some(turn))));
        let mut agent = match started {
            Ok(agent) => agent,
            Err(error) => return TurnEnd::failed(1, one_line(&error.to_string())),
        };
        turn.emit(json_events::session_event(&agent, resumed));
        let mut events = TurnEvents(turn.clone());
        let outcome = with_turn_flag(turn.cancel_flag(), || {
            agent.turn(message.to_string(), &mut Unseen, Some(&mut events))
        });
        end_of(outcome, &self.config.settings)
        // `agent` goes here, and with it the journal's lock.
    }
    // ANCHOR_END: run_turn

    fn create_session(&self, root: Option<&str>) -> Result<String, Refusal> {
        let root = match root {
            None => self.config.root.clone(),
            Some(below) => inside(&self.config.root, below)?,
        };
        let store = sessions_of(&root).map_err(|error| refusal(400, &error))?;
        let model =
            build_model(&self.connection, &self.config.settings).map_err(|error| refusal(500, &error))?;
        let agent =
            Agent::start(model, None, self.config_for(&root, None)).map_err(|error| refusal(500, &error))?;
        let id = agent.session_id().to_string();
        if root != self.config.root {
            self.elsewhere
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id.clone(), store.path_of(&id));
        }
        Ok(id)
    }

    fn list_sessions(&self) -> Result<Vec<Value>, Refusal> {
        let mut sessions = Vec::new();
        let elsewhere = self.elsewhere.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let roots: Vec<PathBuf> = elsewhere.values().filter_map(|path| journal_root(path)).collect();
        let mut stores = vec![self.store.clone()];
        for root in roots {
            stores.push(sessions_of(&root).map_err(|error| refusal(500, &error))?);
        }
        for store in stores {
            let ids = store.ids().map_err(|error| refusal(500, &error))?;
            for id in ids.iter().filter(|id| *store.root() == self.config.root || elsewhere.contains_key(*id))
            {
                // A file that is not a session is left out, as `mini-agent sessions` does.
                if let Ok(summary) = self.summary(&store, id) {
                    sessions.push(summary);
                }
            }
        }
        sessions.sort_by(|a, b| b["id"].as_str().cmp(&a["id"].as_str()));
        sessions.dedup_by(|a, b| a["id"] == b["id"]);
        Ok(sessions)
    }

    fn has_session(&self, id: &str) -> bool {
        self.journal(id).is_some()
    }

    fn session(&self, id: &str) -> Result<Value, Refusal> {
        let path = self.journal(id).ok_or_else(|| Refusal::not_found("session"))?;
        let store =
            sessions_of(&journal_root(&path).unwrap_or_default()).map_err(|error| refusal(500, &error))?;
        let mut session = self.summary(&store, id).map_err(|error| refusal(500, &error))?;
        let loaded = mini_agent::ch09_journal::read_journal(&path).map_err(|error| refusal(500, &error))?;
        let shown = transcript::transcript(&loaded.records);
        session["transcript"] = shown["transcript"].clone();
        session["omitted"] = shown["omitted"].clone();
        session["model"] = json!(self.config.origin.model);
        Ok(session)
    }

    fn delete_session(&self, id: &str) -> Result<(), Refusal> {
        let path = self.journal(id).ok_or_else(|| Refusal::not_found("session"))?;
        // Locked while it is removed: a terminal that has it open keeps it (a 409).
        let _held = mini_agent::ch09_journal::Journal::hold_for_removal(&path).map_err(|error| {
            let status = if error.failure::<SessionInUse>().is_some() { 409 } else { 500 };
            refusal(status, &error)
        })?;
        std::fs::remove_file(&path)
            .map_err(|error| Refusal::new(500, format!("removing {}: {error}", path.display())))?;
        self.elsewhere.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        Ok(())
    }

    fn tasks(&self) -> Result<Value, Refusal> {
        let file = mini_agent::ch15_tasks::TaskFile::load(&self.tasks_file())
            .map_err(|error| refusal(500, &error))?;
        Ok(json!({"tasks": file.tasks}))
    }

    fn add_task(&self, request: &Value) -> Result<Value, Refusal> {
        let task = mini_agent::ch21_serve::api::task_from_json(request)
            .map_err(|message| Refusal::new(400, message))?;
        let id = super::tasks::add_task(self.registry, &self.config.root, &self.tasks_file(), task)
            .map_err(|error| refusal(400, &error))?;
        self.find_task(&id)
    }

    fn reset_task(&self, id: &str) -> Result<Value, Refusal> {
        super::tasks::reset_task(&self.tasks_file(), id).map_err(|error| refusal(404, &error))?;
        self.find_task(id)
    }
}

impl AgentBackend {
    fn tasks_file(&self) -> PathBuf {
        self.config.root.join(mini_agent::ch15_tasks::DEFAULT_TASKS_FILE)
    }

    fn find_task(&self, id: &str) -> Result<Value, Refusal> {
        let file = mini_agent::ch15_tasks::TaskFile::load(&self.tasks_file())
            .map_err(|error| refusal(500, &error))?;
        let task =
            file.tasks.into_iter().find(|task| task.id == id).ok_or_else(|| Refusal::not_found("task"))?;
        Ok(json!(task))
    }
}

/// `below`, a directory inside `root` (a 400 otherwise): no `..` out, no link out, not the
/// agent's own `.mini_agent/` or git's `.git/`.
fn inside(root: &Path, below: &str) -> Result<PathBuf, Refusal> {
    let refused = |why: &str| Refusal::new(400, format!("\"root\" {below:?} {why}"));
    if Path::new(below).is_absolute() {
        return Err(refused("must be relative to the served directory"));
    }
    let path =
        root.join(below).canonicalize().map_err(|error| refused(&format!("cannot be used: {error}")))?;
    let inner = path.strip_prefix(root).map_err(|_| refused("is outside the served directory"))?;
    if inner
        .components()
        .any(|part| [".mini_agent", ".git"].contains(&part.as_os_str().to_str().unwrap_or_default()))
    {
        return Err(refused("is inside .mini_agent or .git"));
    }
    if !path.is_dir() {
        return Err(refused("is not a directory"));
    }
    Ok(path)
}

/// The workspace root a journal belongs to: `<root>/.mini_agent/sessions/<id>.jsonl`.
fn journal_root(path: &Path) -> Option<PathBuf> {
    path.parent()?.parent()?.parent().map(Path::to_path_buf)
}

fn refusal(status: u16, error: &Error) -> Refusal {
    Refusal::new(status, one_line(&error.to_string()))
}

/// The answer for a session whose journal another process holds (a terminal's `mini-agent -r
/// ID`, or a second service): 409, with what to do. Nothing was recorded: the lock comes first.
fn open_elsewhere(in_use: &SessionInUse) -> Refusal {
    let holder = in_use.holder.map_or_else(String::new, |pid| format!(" (pid {pid})"));
    Refusal::new(
        409,
        format!(
            "session {} is open in another process{holder}: a terminal's mini-agent -r, or another \
             mini-agent serve; nothing was recorded: send the message again once it is closed there, or \
             send it to another session (POST /sessions starts one)",
            in_use.id
        ),
    )
}

/// How a turn ended, as `-p` says it: its exit code and the one-line reason.
fn end_of(outcome: Outcome, settings: &Settings) -> TurnEnd {
    match outcome {
        Outcome::Completed(answer) => TurnEnd::completed(answer),
        Outcome::TurnLimit => TurnEnd::failed(2, crate::ch14_main::turn_limit_message(settings)),
        Outcome::Interrupted => TurnEnd::failed(130, "interrupted"),
        Outcome::Failed(error) => {
            let message = one_line(&error.to_string());
            TurnEnd::failed(crate::ch14_main::exit_code(&Err(error)), message)
        }
    }
}

// ANCHOR: prompter
/// The permission gate's way to ask when the question goes to a browser: the terminal's
/// question and, for a write or an edit, the change as a unified diff (chapter 12's
/// `Question`, whose change chapter 3 worked out from the file as it is now), on the turn's
/// approval desk, answered by `allow` or `deny`.
struct AskOverHttp(Turn);

impl Prompter for AskOverHttp {
    fn ask(&mut self, question: &Question) -> Answer {
        let request = ApprovalRequest {
            call_id: question.call.id.clone(),
            tool: question.call.name.clone(),
            question: question.headline(),
            diff: question.diff(),
        };
        match self.0.ask(request) {
            Decision::Allow => Answer::Once,
            Decision::Deny(reason) => Answer::Deny(reason),
        }
    }
}
// ANCHOR_END: prompter

/// The `--json` events of a turn, to its session's stream.
struct TurnEvents(Turn);

impl Observer for TurnEvents {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        if let Some(value) = json_events::event_json(event) {
            self.0.emit(value);
        }
        Ok(())
    }
}

/// Nobody watches a served turn at the terminal: its events go to its stream.
struct Unseen;

impl Observer for Unseen {
    fn event(&mut self, _event: Event) -> Result<(), Error> {
        Ok(())
    }
}
