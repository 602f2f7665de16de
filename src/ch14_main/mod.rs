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
//!
//! Each chapter's state builds this command line with what chapters up to it bring (the
//! `chNN` features): chapter 2 a model and `bash`, chapter 4 the REPL, chapter 5 a session file
//! per run with `-c`/`-r`/`/list`, chapter 9 the journal in its place, chapter 10 `--status` and
//! recovery, chapter 12 the permission flags, chapter 13 `eval`.
//! Chapter 14, the finished command line, adds what only it needs: `--json` (`json_events.rs`)
//! and the `sessions` subcommand.

#[cfg(feature = "ch19")]
mod api;
mod app;
mod args;
#[cfg(not(feature = "ch04"))]
mod early;
mod endpoint;
mod help;
#[cfg(feature = "ch16")]
mod hooks;
#[cfg(feature = "ch14")]
mod json_events;
#[cfg(feature = "ch18")]
mod mcp;
#[cfg(feature = "ch17")]
mod notify;
#[cfg(feature = "ch10")]
mod reopen;
#[cfg(feature = "ch04")]
mod repl;
#[cfg(feature = "ch05")]
mod sessions_table;
#[cfg(feature = "ch15")]
mod tasks;
#[cfg(feature = "ch15")]
mod tasks_words;
#[cfg(all(test, feature = "ch05"))]
mod tests;

#[cfg(feature = "ch12")]
use app::Asker;
use app::{Agent, Config};
use args::{Command, Options, Prompt};
#[cfg(not(feature = "ch04"))]
use early::{Progress, stop_signal};
use endpoint::{Connection, Keys, connect};
use mini_agent::ch02_loop::{Error, Model, Outcome, plural};
use mini_agent::ch02_model::text_calls::TextCallCheck;
use mini_agent::ch02_model::waiting::{FIRST_BYTE_VARIABLE, parse_first_byte_timeout};
use mini_agent::ch02_model::{
    ChatClient, IDLE_TIMEOUT_VARIABLE, REQUEST_LIMIT_VARIABLE, parse_idle_timeout, parse_request_limit,
};
#[cfg(feature = "ch03")]
use mini_agent::ch03_tools::secrets::{
    Redacted, SecretVariable, redactor, seal_memory, wipe_credentials_in_command_line,
};
#[cfg(feature = "ch04")]
use mini_agent::ch04_terminal::sanitize::sanitize;
#[cfg(feature = "ch04")]
use mini_agent::ch04_terminal::signals::stop_signal;
#[cfg(feature = "ch04")]
use mini_agent::ch04_terminal::{Screen, TerminalObserver, install_interrupt_handler, render_markdown};
#[cfg(feature = "ch05")]
use mini_agent::ch05_sessions::SessionStore;
#[cfg(feature = "ch07")]
use mini_agent::ch07_context::parse_context_tokens;
#[cfg(feature = "ch08")]
use mini_agent::ch08_retry::{Retrying, parse_max_retries};
#[cfg(feature = "ch10")]
use mini_agent::ch10_recovery::resume;
#[cfg(feature = "ch10")]
use mini_agent::ch10_recovery::status_of;
#[cfg(feature = "ch11")]
use mini_agent::ch11_streaming::StreamingClient;
#[cfg(feature = "ch12")]
use mini_agent::ch12_permissions::Permissions;
#[cfg(feature = "ch13")]
use mini_agent::ch13_evaluation::{DEFAULT_SCENARIO_DIR, run_eval};
#[cfg(feature = "ch04")]
use repl::stderr_only;
#[cfg(feature = "ch14")]
use sessions_table::sessions_table;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

// ANCHOR: main
pub fn main() -> ExitCode {
    let words: Vec<String> =
        std::env::args_os().skip(1).map(|word| word.to_string_lossy().into_owned()).collect();
    let keys = take_keys(&words);
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
// ANCHOR_END: main

/// Chapter 3: the key leaves the environment and the command line before anything runs, and
/// no other process of the user may read this one's memory.
#[cfg(feature = "ch03")]
fn take_keys(words: &[String]) -> Keys {
    // Later chapters' secret variables, and flags whose value is a credential.
    let secrets: &[&[SecretVariable]] = &[
        #[cfg(feature = "ch17")]
        mini_agent::ch17_notify::webhook::SECRETS,
        #[cfg(feature = "ch19")]
        mini_agent::ch19_anthropic::SECRETS,
    ];
    let capability_flags: &[&str] = &[
        #[cfg(feature = "ch17")]
        "--webhook",
    ];
    // SAFETY: first thing in main, before any thread exists (chapter 3's secrets).
    let keys = unsafe {
        wipe_credentials_in_command_line(words, capability_flags);
        Keys::take(&secrets.concat())
    };
    seal_memory();
    keys
}

#[cfg(not(feature = "ch03"))]
fn take_keys(_: &[String]) -> Keys {
    Keys::from_environment()
}

// ANCHOR: exit_code
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
        #[cfg(feature = "ch07")]
        Err(Error::Stuck { .. }) => 2,
        Err(_) => 1,
    }
}
// ANCHOR_END: exit_code

// ANCHOR: main_run
fn run(words: &[String], keys: &Keys) -> Result<u8, Error> {
    let command = match args::parse(words) {
        Ok(command) => command,
        Err(message) => {
            #[cfg(feature = "ch14")]
            json_events::usage_error(words, &message);
            return Err(Error::Usage(message));
        }
    };
    match command {
        Command::Help => print_stdout(&args::help()),
        Command::Version => print_stdout(&format!("mini-agent {}\n", env!("CARGO_PKG_VERSION"))),
        #[cfg(feature = "ch13")]
        Command::Eval(eval) => evaluate(&eval),
        #[cfg(feature = "ch14")]
        Command::Sessions { root } => {
            let store = sessions_of(&workspace_root(root.as_deref())?);
            print_stdout(&format!("{}\n", sessions_table(&store, None)?))
        }
        #[cfg(feature = "ch15")]
        Command::Tasks(words) => tasks::main(&words, keys),
        #[cfg(feature = "ch14")]
        Command::Agent(options) if options.json => json_events::agent(&options, keys),
        Command::Agent(options) => agent(&options, keys),
    }
}
// ANCHOR_END: main_run

// ANCHOR: eval
/// `mini-agent eval`: the scenarios of chapter 13, run against this very binary.
#[cfg(feature = "ch13")]
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
    // A symlinked .mini_agent/ would move every record elsewhere (chapter 9).
    #[cfg(feature = "ch09")]
    sessions_of(&here).check_dirs()?;
    #[cfg(feature = "ch10")]
    let chosen = match chosen_session(&sessions_of(&here), options)? {
        SessionChoice::Status(status) => return print_stdout(&status),
        SessionChoice::Session(path) => path,
    };
    #[cfg(all(feature = "ch05", not(feature = "ch10")))]
    let opened = reopen(&sessions_of(&here), options)?;
    let task = options.prompt.as_ref().map(read_prompt).transpose()?;
    #[cfg(feature = "ch10")]
    let opened = chosen.map(|path| resume(&path, options.acknowledge_unknown)).transpose()?;
    #[cfg(feature = "ch10")]
    let plan = opened.as_ref().map(|(_, plan)| plan);
    #[cfg(feature = "ch10")]
    if let Some(warning) = plan.and_then(|plan| plan.warning.as_deref()) {
        say(&format!("mini-agent: warning: {warning}"));
    }
    #[cfg(feature = "ch10")]
    let (root, recorded) = (plan.map_or(here, |plan| plan.root.clone()), plan.map(|plan| &plan.origin));
    #[cfg(feature = "ch10")]
    let connection = connect(options, keys, recorded)?;
    #[cfg(not(feature = "ch10"))]
    let (root, connection) = (here, connect(options, keys)?);
    // ANCHOR_END: agent
    // ANCHOR: agent_run
    let model = build_model(&connection, options)?;
    let config = Config {
        #[cfg(feature = "ch05")]
        origin: connection.origin.clone(),
        #[cfg(feature = "ch12")]
        permissions: permissions(options),
        #[cfg(feature = "ch12")]
        asker: Asker::Nobody,
        max_turns: options.max_turns,
        #[cfg(feature = "ch07")]
        context_tokens: parse_context_tokens(std::env::var("MINI_AGENT_CONTEXT_TOKENS").ok().as_deref())?,
        #[cfg(feature = "ch16")]
        hooks: hooks::load(&root, options.trust_hooks, std::io::stdin().is_terminal() && !options.json),
        #[cfg(feature = "ch18")]
        mcp: mcp::load_servers(&root, options)?,
    };
    #[cfg(feature = "ch05")]
    let resumed = opened.is_some();
    #[cfg(all(feature = "ch04", not(feature = "ch05")))]
    let resumed = false;
    #[cfg(feature = "ch04")]
    let history = root.join(".mini_agent").join("history");
    let start = |config| {
        Agent::start(
            model,
            root,
            #[cfg(feature = "ch05")]
            opened,
            config,
        )
    };
    match task {
        Some(task) => {
            #[cfg(feature = "ch12")]
            let config = ask_at_the_terminal(config, options);
            one_shot(start(config)?, task, options)
        }
        #[cfg(feature = "ch04")]
        None => repl::repl(start, resumed, &history, config, options.verbose),
        #[cfg(not(feature = "ch04"))]
        None => Err(Error::Usage("give the task with -p \"…\"".into())),
    }
}
// ANCHOR_END: agent_run

/// `-c` or `-r` before chapter 10: the session reopened, its history replayed.
#[cfg(all(feature = "ch05", not(feature = "ch10")))]
fn reopen(store: &SessionStore, options: &Options) -> Result<Option<app::Opened>, Error> {
    let path = match (&options.resume, options.continue_latest) {
        (Some(wanted), _) => store.resolve(wanted)?,
        (None, true) => store.latest()?,
        (None, false) => return Ok(None),
    };
    #[cfg(not(feature = "ch09"))]
    let (log, records) = mini_agent::ch05_sessions::SessionFile::open(&path)?;
    // Chapter 9: the journal, locked, its torn last line cut off.
    #[cfg(feature = "ch09")]
    let (log, records) = {
        let (journal, loaded) = mini_agent::ch09_journal::Journal::open(&path)?;
        if let Some(warning) = &loaded.warning {
            say(&format!("mini-agent: warning: {warning}"));
        }
        (journal, loaded.records)
    };
    let history = mini_agent::ch05_sessions::continue_history(log.id(), &records)?;
    Ok(Some((mini_agent::ch05_sessions::Recorder::new(log), history)))
}

/// What `-c`, `-r` and `--status` ask for (chapter 10).
#[cfg(feature = "ch10")]
enum SessionChoice {
    /// `--status`: the session's state, to print.
    Status(String),
    /// The journal of the session to continue, if one was named.
    Session(Option<PathBuf>),
}

#[cfg(feature = "ch10")]
fn chosen_session(store: &SessionStore, options: &Options) -> Result<SessionChoice, Error> {
    let chosen = match (&options.resume, options.continue_latest) {
        (Some(wanted), _) => Some(store.resolve(wanted)?),
        (None, true) => Some(store.latest()?),
        (None, false) => None,
    };
    if !options.status {
        return Ok(SessionChoice::Session(chosen));
    }
    // No key, no request, no lock: reading the journal is enough.
    let path = chosen.ok_or_else(|| Error::Usage("--status needs -c or -r ID".into()))?;
    // The recorded error may quote a server's body: shown, never obeyed.
    Ok(SessionChoice::Status(sanitize(&status_of(&path)?.to_string())))
}

// ANCHOR: ask_at_the_terminal
/// `-p` asks at the terminal only when a person is there to answer (DESIGN: scripts and tests
/// get a denial that names the flag).
#[cfg(feature = "ch12")]
fn ask_at_the_terminal(config: Config, options: &Options) -> Config {
    let asker =
        if std::io::stdin().is_terminal() && !json_wanted(options) { Asker::Tty } else { Asker::Nobody };
    Config { asker, ..config }
}
// ANCHOR_END: ask_at_the_terminal

// ANCHOR: models
/// `Compacting(TextCallCheck(Redacted(Retrying(ChatClient))))`, or the same around the
/// streaming client: chapter 8 retries only failures that come before the first byte of the
/// body, so nothing shown is ever repeated. The compacting layer is added by the agent.
fn build_model(connection: &Connection, options: &Options) -> Result<Box<dyn Model>, Error> {
    let idle = parse_idle_timeout(std::env::var(IDLE_TIMEOUT_VARIABLE).ok().as_deref())?;
    let limit = parse_request_limit(std::env::var(REQUEST_LIMIT_VARIABLE).ok().as_deref())?;
    let first_byte = parse_first_byte_timeout(std::env::var(FIRST_BYTE_VARIABLE).ok().as_deref())?;
    let endpoint = &connection.endpoint;
    // Chapter 19: the same layers around the Messages API client.
    #[cfg(feature = "ch19")]
    if let api::Api::Anthropic(auth) = &connection.api {
        return api::anthropic_model(endpoint, auth, options, idle);
    }
    #[cfg(feature = "ch11")]
    if options.stream {
        return layers(
            StreamingClient::new(endpoint.clone())?
                .with_idle_timeout(idle)
                .with_first_byte_timeout(first_byte)
                .with_request_limit(limit),
        );
    }
    #[cfg(not(feature = "ch11"))]
    let _ = options; // --stream comes with chapter 11
    layers(
        ChatClient::new(endpoint.clone())?
            .with_idle_timeout(idle)
            .with_first_byte_timeout(first_byte)
            .with_request_limit(limit),
    )
}

/// The same layers around either client.
fn layers(client: impl Model + 'static) -> Result<Box<dyn Model>, Error> {
    Ok(Box::new(TextCallCheck { inner: redacted(retrying(client)?) }))
}

/// Replies, streamed text and errors are redacted once, at the seam (chapter 3).
#[cfg(feature = "ch03")]
fn redacted<M: Model>(model: M) -> Redacted<M> {
    Redacted::new(model, redactor())
}

#[cfg(feature = "ch08")]
fn retrying<M: Model>(client: M) -> Result<Retrying<M>, Error> {
    let retries = parse_max_retries(std::env::var("MINI_AGENT_REQUEST_MAX_RETRIES").ok().as_deref())?;
    Ok(Retrying::new(client, retries))
}
// ANCHOR_END: models

#[cfg(not(feature = "ch03"))]
fn redacted<M: Model>(model: M) -> M {
    model
}

/// Before chapter 8 a failed request fails the turn.
#[cfg(not(feature = "ch08"))]
fn retrying<M: Model>(client: M) -> Result<M, Error> {
    Ok(client)
}

// ANCHOR: one_shot
/// `-p`: one task, the final answer on stdout, the outcome as the exit code.
#[cfg(feature = "ch04")]
fn one_shot(mut agent: Agent, task: String, options: &Options) -> Result<u8, Error> {
    #[cfg(feature = "ch14")]
    if options.json {
        return json_events::one_shot(agent, task, options);
    }
    install_interrupt_handler();
    let terminal = Screen::stdio(options.verbose);
    // Progress on stderr; stdout gets the final answer alone — or, with --stream, the
    // replies' text as it arrives.
    let streams_to_stdout = streams(options);
    let screen = if streams_to_stdout { terminal.clone() } else { stderr_only(&terminal) };
    let mut display = TerminalObserver::new(screen, None);
    match agent.turn(task, &mut display, None) {
        Outcome::Completed(answer) if answer.trim().is_empty() => {
            say("mini-agent: the model finished without a final answer");
            Ok(0)
        }
        Outcome::Completed(_) if streams_to_stdout => Ok(0),
        // Styled on a terminal; exactly what the model wrote when piped or with NO_COLOR.
        Outcome::Completed(answer) => print_stdout(&render_markdown(&answer, terminal.look)),
        stopped => stopped_early(stopped, options.max_turns),
    }
}
// ANCHOR_END: one_shot

/// Before chapter 4's terminal: progress lines on stderr, the answer as the model wrote it.
#[cfg(not(feature = "ch04"))]
fn one_shot(mut agent: Agent, task: String, options: &Options) -> Result<u8, Error> {
    let mut progress = Progress { verbose: options.verbose };
    match agent.turn(task, &mut progress, None) {
        Outcome::Completed(answer) => print_stdout(&format!("{}\n", answer.trim_end())),
        stopped => stopped_early(stopped, options.max_turns),
    }
}

// ANCHOR: stopped_early
/// A turn that did not complete: the turn limit is exit 2, the rest are errors.
fn stopped_early(outcome: Outcome, max_turns: usize) -> Result<u8, Error> {
    match outcome {
        Outcome::Completed(_) => Ok(0),
        Outcome::TurnLimit => {
            say(&format!("mini-agent: {}", turn_limit_message(max_turns)));
            Ok(2)
        }
        Outcome::Interrupted => Err(Error::Interrupted),
        Outcome::Failed(error) => Err(error),
    }
}
// ANCHOR_END: stopped_early

/// `--json` (chapter 14): a program reads the events, nobody is there to answer a question.
#[cfg(feature = "ch14")]
fn json_wanted(options: &Options) -> bool {
    options.json
}

#[cfg(all(feature = "ch12", not(feature = "ch14")))]
fn json_wanted(_: &Options) -> bool {
    false
}

/// `--stream` (chapter 11) shows the reply on stdout as it arrives.
#[cfg(feature = "ch11")]
fn streams(options: &Options) -> bool {
    options.stream
}

#[cfg(all(feature = "ch04", not(feature = "ch11")))]
fn streams(_: &Options) -> bool {
    false
}

/// Why a run exits 2: on stderr, and as the `exit` event's `error` with `--json`.
fn turn_limit_message(max_turns: usize) -> String {
    format!(
        "stopped after {} (the turn limit); the task may be unfinished — continue with -c, or \
         rerun with a higher --max-turns",
        plural(max_turns, "model call")
    )
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
    let line = visible(line);
    #[cfg(feature = "ch03")]
    let line = redactor().redact_line(&line);
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
// ANCHOR_END: output

/// Control characters made visible (chapter 4's sanitiser).
#[cfg(feature = "ch04")]
fn visible(text: &str) -> String {
    sanitize(text)
}

#[cfg(not(feature = "ch04"))]
fn visible(text: &str) -> String {
    text.to_string()
}

// ANCHOR: one_line
/// Text squeezed onto one line, with control characters (a NUL in a path, an escape sequence
/// in a server's error body…) made visible by chapter 4's sanitiser.
fn one_line(text: &str) -> String {
    visible(&mini_agent::text::one_line(text))
}
// ANCHOR_END: one_line

/// The sessions of `root`; from chapter 9 on, their files are read as untrusted workspace input.
#[cfg(feature = "ch05")]
fn sessions_of(root: &Path) -> SessionStore {
    let store = SessionStore::new(root);
    #[cfg(feature = "ch09")]
    let store = SessionStore::of_workspace(store.root());
    store
}

/// The permissions granted up front by the flags; the rest is asked for (chapter 12).
#[cfg(feature = "ch12")]
pub(super) fn permissions(options: &Options) -> Permissions {
    let given = [
        (options.allow_write, "--allow-write"),
        (options.allow_shell, "--allow-shell"),
        #[cfg(feature = "ch18")]
        (options.mcp.allow, "--allow-mcp"),
    ];
    Permissions::granting(given.into_iter().filter(|(given, _)| *given).map(|(_, flag)| flag))
}
