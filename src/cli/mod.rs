//! The composition root: the one place that knows every chapter.
//!
//! `main` parses the command line, builds the pieces — a model client (retrying, streaming,
//! compacting), the workspace tools behind their permission gate, a session journal, the
//! observers that report progress — and hands them to the loop of chapter 1, once (`-p`) or
//! for every line typed (the REPL). The session wiring lives in `app.rs`, the `--json`
//! events in `json_events.rs`. Everything that can go wrong comes back here as one [`Error`], which
//! becomes one line on stderr and an exit code: 0 the agent finished, 1 something failed,
//! 2 the turn limit was reached, 130 the user pressed Ctrl+C (143 / 129 for SIGTERM / SIGHUP,
//! handled the same way). The final answer, and only
//! the final answer, goes to stdout, so `mini-agent -p … > answer.md` does what it says.

mod app;
mod args;
mod json_events;
mod sessions_table;
#[cfg(feature = "ch15")]
mod tasks;

use app::{Agent, Asker, Config};
use args::{Command, Options, Prompt};
use json_events::JsonEvents;
use mini_agent::ch02_loop::{Error, Model, Observer, Outcome, plural};
use mini_agent::ch02_model::text_calls::TextCallCheck;
use mini_agent::ch02_model::{
    ChatClient, ClientConfig, IDLE_TIMEOUT_VARIABLE, api_key_required, parse_idle_timeout,
};
use mini_agent::ch03_tools::secrets::{
    Keys, Redacted, Redactor, install, redactor, seal_memory, wipe_credentials_in_command_line,
};
use mini_agent::ch04_terminal::sanitize::sanitize;
use mini_agent::ch04_terminal::signals::stop_signal;
use mini_agent::ch04_terminal::{
    LineReader, Screen, TerminalObserver, install_interrupt_handler, render_markdown, run_repl,
};
use mini_agent::ch05_sessions::{DEMO_ENDPOINT, OPENAI_API, Origin, SessionStore, without_credentials};
use mini_agent::ch07_context::parse_context_tokens;
use mini_agent::ch08_retry::{Retrying, parse_max_retries};
use mini_agent::ch09_journal::Journal;
use mini_agent::ch10_recovery::{ResumePlan, resume, status_of};
use mini_agent::ch11_streaming::StreamingClient;
use mini_agent::ch12_permissions::Permissions;
use mini_agent::ch13_evaluation::{DEFAULT_SCENARIO_DIR, run_eval};
use mini_agent::testkit::demo::start_demo_server;
use sessions_table::sessions_table;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const DEFAULT_MODEL: &str = "gpt-4o-mini";

// ANCHOR: main
pub fn main() -> ExitCode {
    let words: Vec<String> =
        std::env::args_os().skip(1).map(|word| word.to_string_lossy().into_owned()).collect();
    // SAFETY: first thing in main, before any thread exists (chapter 3's secrets).
    let keys = unsafe {
        wipe_credentials_in_command_line(&words);
        Keys::take()
    };
    seal_memory();
    let result = run(&words, &keys);
    match (&result, stop_signal()) {
        (Err(Error::Interrupted), Some(signal)) => say(&format!(
            "mini-agent: stopped by {}; the running tool was killed and the interruption recorded",
            if signal == 1 { "SIGHUP" } else { "SIGTERM" }
        )),
        (Err(error), _) => say(&format!("mini-agent: {}", one_line(&error.to_string()))),
        (Ok(_), _) => {}
    }
    ExitCode::from(exit_code(&result))
}

/// 0 done, 1 failed, 2 turn limit (returned as `Ok(2)`) or a model stuck repeating itself,
/// 130 interrupted; 143 or 129 when SIGTERM or SIGHUP stopped the run (128 + the signal, as a
/// shell reports it).
fn exit_code(result: &Result<u8, Error>) -> u8 {
    if let Some(signal) = stop_signal() {
        return 128 + signal as u8;
    }
    match result {
        Ok(code) => *code,
        Err(Error::Interrupted) => 130,
        // A model stuck repeating one call is stopped like one that hit the turn limit.
        Err(Error::Stuck { .. }) => 2,
        Err(_) => 1,
    }
}

fn run(words: &[String], keys: &Keys) -> Result<u8, Error> {
    let command = match args::parse(words) {
        Ok(command) => command,
        Err(message) => {
            // `--json` promises an `exit` event as the last line, also for a command line
            // that did not parse (the flag may sit next to the mistake).
            if words.iter().any(|word| word == "--json") {
                JsonEvents.exit(1, Some(&one_line(&message)));
            }
            return Err(Error::Usage(message));
        }
    };
    match command {
        Command::Help => print_stdout(&args::help()),
        Command::Version => print_stdout(&format!("mini-agent {}\n", env!("CARGO_PKG_VERSION"))),
        Command::Eval(eval) => evaluate(&eval),
        Command::Sessions { root } => {
            let store = SessionStore::new(&workspace_root(root.as_deref())?);
            print_stdout(&format!("{}\n", sessions_table(&store, None)?))
        }
        #[cfg(feature = "ch15")]
        Command::Tasks(words) => tasks::main(&words, keys),
        Command::Agent(options) if options.json => {
            // Every run ends with an `exit` event, also one that failed before it started.
            let result = agent(&options, keys);
            let error = match &result {
                Err(error) => Some(one_line(&error.to_string())),
                Ok(2) => Some(turn_limit_message(options.max_turns)),
                Ok(_) => None,
            };
            JsonEvents.exit(exit_code(&result), error.as_deref());
            result
        }
        Command::Agent(options) => agent(&options, keys),
    }
}
// ANCHOR_END: main

// ANCHOR: eval
/// `mini-agent eval`: the scenarios of chapter 13, run against this very binary.
fn evaluate(eval: &args::EvalOptions) -> Result<u8, Error> {
    let binary = std::env::current_exe().map_err(|e| Error::io("finding the mini-agent binary", e))?;
    let dir = eval.dir.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_SCENARIO_DIR));
    let all_passed = run_eval(&binary, &dir, eval.repeats, eval.verbose)?;
    Ok(if all_passed { 0 } else { 1 })
}
// ANCHOR_END: eval

// ANCHOR: agent
/// `--status`, one task (`-p`) or the REPL, in a new session or a resumed one.
fn agent(options: &Options, keys: &Keys) -> Result<u8, Error> {
    let here = workspace_root(options.root.as_deref())?;
    let store = SessionStore::new(&here);
    store.check_dirs()?; // a symlinked .mini_agent/ would move every record elsewhere
    let chosen = match (&options.resume, options.continue_latest) {
        (Some(wanted), _) => Some(store.resolve(wanted)?),
        (None, true) => Some(store.latest()?),
        (None, false) => None,
    };
    if options.status {
        // No key, no request, no lock: reading the journal is enough.
        let path = chosen.ok_or_else(|| Error::Usage("--status needs -c or -r ID".into()))?;
        // The recorded error may quote a server's body: shown, never obeyed.
        return print_stdout(&sanitize(&status_of(&path)?.to_string()));
    }
    let task = options.prompt.as_ref().map(read_prompt).transpose()?;
    let opened = chosen.map(|path| resume(&path, options.acknowledge_unknown)).transpose()?;
    let plan = opened.as_ref().map(|(_, plan)| plan);
    if let Some(warning) = plan.and_then(|plan| plan.warning.as_deref()) {
        say(&format!("mini-agent: warning: {warning}"));
    }
    let root = plan.map_or(here, |plan| plan.root.clone());
    let connection = connect(options, keys, plan.map(|plan| &plan.origin))?;
    let model = build_model(&connection.endpoint, options.stream)?;
    let origin = connection.origin.clone();
    let permissions = Permissions { allow_write: options.allow_write, allow_shell: options.allow_shell };
    let context_tokens = parse_context_tokens(std::env::var("MINI_AGENT_CONTEXT_TOKENS").ok().as_deref())?;
    let config = |asker| Config {
        origin: origin.clone(),
        permissions,
        asker,
        max_turns: options.max_turns,
        context_tokens,
    };
    match task {
        Some(task) => {
            // Ask at the terminal only when a person is there to answer (DESIGN: scripts
            // and tests get a denial that names the flag).
            let asker =
                if std::io::stdin().is_terminal() && !options.json { Asker::Tty } else { Asker::Nobody };
            one_shot(Agent::start(model, root, opened, config(asker))?, task, options)
        }
        None => repl(model, root, opened, config, options.verbose),
    }
}
// ANCHOR_END: agent

/// Where this run's model is: the client's settings, the origin sessions record, and the
/// demo server (when chosen), which lives in this process as long as this value does.
struct Connection {
    endpoint: ClientConfig,
    origin: Origin,
    _demo: Option<mini_agent::testkit::scripted_server::ScriptedServer>,
}

/// Chooses the endpoint (see [`choose_endpoint`]), starts the demo model if that is the one,
/// and installs the redactor for this run.
fn connect(options: &Options, keys: &Keys, recorded: Option<&Origin>) -> Result<Connection, Error> {
    let chosen = choose_endpoint(options, keys, recorded)?;
    // The demo model is a server in this process; it stops when `demo` is dropped.
    let demo = chosen
        .demo
        .then(start_demo_server)
        .transpose()
        .map_err(|e| Error::io("starting the demo model", e))?;
    let endpoint = client_config(&chosen, keys, demo.as_ref().map(|server| server.url.as_str()));
    // One redactor for everything that leaves the process from now on (chapter 3).
    install(Redactor::for_run(keys, &endpoint.base_url));
    let recorded_url = if chosen.demo { DEMO_ENDPOINT } else { endpoint.base_url.as_str() };
    let origin = Origin::new(&endpoint.model, OPENAI_API, recorded_url);
    Ok(Connection { endpoint, origin, _demo: demo })
}

// ANCHOR: models
/// `Compacting(TextCallCheck(Redacted(Retrying(ChatClient))))`, or the same around the
/// streaming client: chapter 8 retries only failures that come before the first byte of the
/// body, so nothing shown is ever repeated. The compacting layer is added by the agent.
fn build_model(endpoint: &ClientConfig, stream: bool) -> Result<Box<dyn Model>, Error> {
    let retries = parse_max_retries(std::env::var("MINI_AGENT_REQUEST_MAX_RETRIES").ok().as_deref())?;
    let idle = parse_idle_timeout(std::env::var(IDLE_TIMEOUT_VARIABLE).ok().as_deref())?;
    // Replies, streamed text and errors are redacted once, at the seam (chapter 3).
    Ok(if stream {
        let client = StreamingClient::new(endpoint.clone())?.with_idle_timeout(idle);
        Box::new(TextCallCheck { inner: Redacted::new(Retrying::new(client, retries), redactor()) })
    } else {
        let client = ChatClient::new(endpoint.clone())?.with_idle_timeout(idle);
        Box::new(TextCallCheck { inner: Redacted::new(Retrying::new(client, retries), redactor()) })
    })
}
// ANCHOR_END: models

// ANCHOR: one_shot
/// `-p`: one task, the final answer on stdout, the outcome as the exit code.
fn one_shot(mut agent: Agent, task: String, options: &Options) -> Result<u8, Error> {
    let json = options.json.then_some(JsonEvents);
    if let Some(json) = &json {
        let root = agent.root().display().to_string();
        json.session(
            agent.session_id(),
            &root,
            agent.origin(),
            options.continue_latest || options.resume.is_some(),
        );
    }
    install_interrupt_handler();
    let terminal = Screen::stdio(options.verbose);
    // Progress on stderr; stdout gets the final answer alone — or, with --stream (and no
    // --json), the replies' text as it arrives.
    let streams_to_stdout = options.stream && json.is_none();
    let screen = if streams_to_stdout { terminal.clone() } else { stderr_only(&terminal) };
    let mut display = TerminalObserver::new(screen, None);
    let mut events = json;
    let outcome = agent.turn(task, &mut display, events.as_mut().map(|json| json as &mut dyn Observer));
    match outcome {
        Outcome::Completed(answer) if answer.trim().is_empty() => {
            say("mini-agent: the model finished without a final answer");
            if let Some(json) = &events {
                json.final_answer("");
            }
            Ok(0)
        }
        Outcome::Completed(answer) => match &events {
            Some(json) => {
                json.final_answer(&answer);
                Ok(0)
            }
            None if streams_to_stdout => Ok(0),
            // Styled on a terminal; exactly what the model wrote when piped or with NO_COLOR.
            None => print_stdout(&render_markdown(&answer, terminal.look)),
        },
        Outcome::TurnLimit => {
            say(&format!("mini-agent: {}", turn_limit_message(options.max_turns)));
            Ok(2)
        }
        Outcome::Interrupted => Err(Error::Interrupted),
        Outcome::Failed(error) => Err(error),
    }
}
// ANCHOR_END: one_shot

/// Why a run exits 2: on stderr, and as the `exit` event's `error` with `--json`.
fn turn_limit_message(max_turns: usize) -> String {
    format!(
        "stopped after {} (the turn limit); the task may be unfinished — continue with -c, or \
         rerun with a higher --max-turns",
        plural(max_turns, "model call")
    )
}

/// The largest `.mini_agent/history` the line editor loads (it keeps 1,000 lines).
const HISTORY_MAX_BYTES: u64 = 8 << 20;

// ANCHOR: repl
/// No `-p`: the REPL of chapter 4, with this session as its host.
fn repl(
    model: Box<dyn Model>,
    root: PathBuf,
    opened: Option<(Journal, ResumePlan)>,
    config: impl Fn(Asker) -> Config,
    verbose: bool,
) -> Result<u8, Error> {
    // A history file planted as a symlink would have typed lines appended to its target.
    let history = root.join(".mini_agent").join("history");
    // A planted 1 GB one would be loaded whole by the line editor: it is read only when small.
    let history = match std::fs::symlink_metadata(&history) {
        Ok(meta) if !meta.is_file() || meta.len() > HISTORY_MAX_BYTES => {
            say(&format!(
                "mini-agent: warning: {} is not a regular file of at most {} MiB; history is off",
                history.display(),
                HISTORY_MAX_BYTES >> 20
            ));
            None
        }
        _ => Some(history),
    };
    let mut reader = LineReader::stdin(history.as_deref())?;
    // Permission questions need someone typing; a piped script is denied, naming the flag.
    let asker = if reader.is_terminal() { Asker::TypeAhead(reader.type_ahead()) } else { Asker::Nobody };
    let resumed = opened.is_some();
    let mut agent = Agent::start(model, root, opened, config(asker))?;
    let screen = Screen::stdio(verbose);
    let verb = if resumed { "resumed" } else { "new" };
    screen.status(&format!(
        "mini-agent {} · {verb} session {} · {} · /help for commands\n",
        env!("CARGO_PKG_VERSION"),
        sanitize(agent.session_id()),
        sanitize(agent.model_id())
    ));
    if resumed && let Some(last) = agent.last_exchange(screen.look) {
        screen.status(&last);
    }
    run_repl(&mut agent, &mut reader, &screen)?;
    Ok(0)
}
// ANCHOR_END: repl

/// The terminal's screen with stdout silenced: in `-p` mode the observer draws progress on
/// stderr, and stdout receives the final answer alone, once, when the turn has ended.
fn stderr_only(terminal: &Screen) -> Screen {
    let mut screen =
        Screen::new(Box::new(std::io::sink()), Box::new(std::io::stderr()), false, terminal.live);
    screen.verbose = terminal.verbose;
    screen
}

fn workspace_root(flag: Option<&Path>) -> Result<PathBuf, Error> {
    let given = match flag {
        Some(path) => path.to_path_buf(),
        None => std::env::current_dir().map_err(|e| Error::io("reading the current directory", e))?,
    };
    let root = given.canonicalize().map_err(|e| {
        Error::Config(format!(
            "workspace root {}: {e} — pass an existing directory to --root",
            given.display()
        ))
    })?;
    if !root.is_dir() {
        return Err(Error::Config(format!("workspace root {} is not a directory", root.display())));
    }
    Ok(root)
}

fn read_prompt(prompt: &Prompt) -> Result<String, Error> {
    let text = match prompt {
        Prompt::Text(text) => text.clone(),
        Prompt::Stdin => {
            // At a terminal, `-p -` would otherwise look like a hang.
            if std::io::stdin().is_terminal() {
                say(
                    "mini-agent: reading the prompt from stdin (-p -): type it, then press Ctrl+D on an empty line",
                );
            }
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Error::io("reading the prompt from stdin (-p -)", e))?;
            text
        }
    };
    if text.trim().is_empty() {
        return Err(Error::Usage("the prompt is empty — say what the agent should do".into()));
    }
    Ok(text)
}

// ANCHOR: output
/// Writes to stdout; a reader that went away (`| head`) is a quiet, successful exit.
fn print_stdout(text: &str) -> Result<u8, Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(0),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(Error::io("writing to stdout", e)),
    }
}

/// One line on stderr; a closed stderr is not worth a panic.
fn say(line: &str) {
    // What the host says quotes the workspace (a path, a journal's id or model): shown, never
    // obeyed, like model text.
    let _ = writeln!(std::io::stderr().lock(), "{}", redactor().redact_line(&sanitize(line)));
}

/// Text squeezed onto one line, with control characters (a NUL in a path, an escape sequence
/// in a server's error body…) made visible by chapter 4's sanitiser.
fn one_line(text: &str) -> String {
    let joined = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    sanitize(&joined)
}
// ANCHOR_END: output

// ANCHOR: endpoint
/// Where the model of this run lives, before the demo server (if any) has started.
struct Chosen {
    demo: bool,
    base_url: String,
    model: String,
    /// Whether the key goes with the requests: never to an endpoint only a journal named.
    send_key: bool,
}

/// Flags win. Then a resumed session's own record (chapter 5's `Origin`): `-c` goes back to
/// the server and model it talked to, the demo included. Then the environment, then the
/// defaults. The recorded model goes with the recorded endpoint: a `--base-url` or `--demo`
/// that moves a session elsewhere takes its model from `--model`, `MODEL_ID` or the default.
/// The key comes from the environment only (taken at start-up, chapter 3); the demo model
/// is never sent one.
fn choose_endpoint(options: &Options, keys: &Keys, recorded: Option<&Origin>) -> Result<Chosen, Error> {
    let env = |name: &str| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
    if let Some(origin) = recorded.filter(|origin| origin.api != OPENAI_API) {
        return Err(Error::Config(format!(
            "this session was recorded with the '{}' API, which this mini-agent does not speak",
            origin.api
        )));
    }
    let moved = options.demo || options.base_url.is_some();
    let kept = recorded.filter(|_| !moved);
    let kept_endpoint = kept.and_then(|origin| origin.endpoint.as_deref());
    let demo = options.demo || kept_endpoint == Some(DEMO_ENDPOINT);
    // Where the user sends the key: the environment's URL, else the default.
    let configured = keys.base_url.clone().unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
    let (base_url, send_key) = match (&options.base_url, kept_endpoint) {
        (Some(flag), _) => (flag.clone(), true),
        // The record has no password; the environment's URL may hold it for the same server.
        (None, Some(endpoint)) if without_credentials(&configured) == endpoint => (configured, true),
        (None, Some(endpoint)) if demo => (endpoint.to_string(), false),
        // A journal is a file of the workspace: a cloned repository can plant one that names
        // its author's server. It may bring the session back to a local model server (a
        // loopback address, no key needed), never send the key or the conversation away.
        (None, Some(endpoint)) if !api_key_required(endpoint) => (endpoint.to_string(), false),
        (None, Some(endpoint)) => {
            return Err(Error::Config(format!(
                "this session talked to {endpoint}, not to {} where your key goes; a session file \
                 cannot choose where the key and the conversation are sent: run with --base-url \
                 {endpoint} to continue there",
                without_credentials(&configured)
            )));
        }
        (None, None) => (configured, true),
    };
    let model = options
        .model
        .clone()
        .or_else(|| kept.map(|origin| origin.model.clone()))
        .or_else(|| demo.then(|| "demo".to_string()))
        .or_else(|| env("MODEL_ID"))
        .unwrap_or_else(|| DEFAULT_MODEL.into());
    Ok(Chosen { demo, base_url, model, send_key })
}

/// The client's settings, once the demo server (when chosen) listens at `demo_url`.
fn client_config(chosen: &Chosen, keys: &Keys, demo_url: Option<&str>) -> ClientConfig {
    match demo_url {
        Some(url) => ClientConfig { base_url: url.to_string(), api_key: None, model: chosen.model.clone() },
        None => ClientConfig {
            base_url: chosen.base_url.clone(),
            api_key: keys.api_key.clone().filter(|_| chosen.send_key),
            model: chosen.model.clone(),
        },
    }
}
// ANCHOR_END: endpoint
