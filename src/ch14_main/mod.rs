//! The composition root: the one place that knows every chapter.
//!
//! It reads as three lists. `registry.rs` is the list of chapters: each registers what it adds
//! to the command line (flags, `--help` lines, slash commands, secret variables), its layers of
//! the model and of a session, and the [`Hooks`] by which it replaces an earlier chapter's way;
//! the parser, `--help` and the REPL read that table. `build_model` below and `app.rs` are the
//! folds: the model client wrapped by each chapter that adds a layer to it (retries, redaction),
//! the workspace tools wrapped the same way (MCP, the permission gate, hooks, skills,
//! repetition notes), each layer at its registered place. Then `main` hands the pieces to the
//! loop of chapter 2, once (`-p`) or for every line typed (the REPL).
//!
//! Everything that can go wrong comes back here as one [`Error`], which becomes one line on
//! stderr and an exit code: 0 the agent finished, 1 something failed, 2 the turn limit was
//! reached, 130 the user pressed Ctrl+C (143 / 129 for SIGTERM / SIGHUP, handled the same
//! way). The final answer, and only the final answer, goes to stdout, so `mini-agent -p … >
//! answer.md` does what it says. Chapter 14 itself adds what only the finished command line
//! needs: `--json` (`json_events.rs`) and the `sessions` subcommand.

mod args;
mod early;
mod endpoint;
mod help;
#[cfg(feature = "ch05")]
mod host;
mod registry;

use args::Command;
use endpoint::{Connection, Keys};
use mini_agent::ch02_loop::command_line::{MAX_TURNS, Settings};
use mini_agent::ch02_loop::{Error, Model, Outcome, plural};
use mini_agent::ch02_model::layers::{KeySource, ModelContext};
use mini_agent::ch02_model::waiting::Waits;
use registry::Registry;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

/// The chapters' table, built once: it lives as long as the run, and the sessions of the REPL
/// share it.
fn registry() -> &'static Registry {
    static CHAPTERS: OnceLock<Registry> = OnceLock::new();
    CHAPTERS.get_or_init(registry::chapters)
}

// ANCHOR: hooks
/// What a chapter does in place of the earlier behaviour, registered by it; unset, the earlier
/// behaviour holds.
#[derive(Default)]
pub struct Hooks {
    /// The agent, from chapter 5 a session kept on disk (else one conversation in memory,
    /// `early.rs`, with what chapters 3 and 4 change there).
    pub agent: Option<Agent>,
    pub early: early::Early,
    /// What a usage error also says (chapter 14: `--json`'s `exit` event).
    pub usage_error: Option<fn(&[String], &Registry, &str)>,
    /// Takes the secrets out of the environment and the command line (chapter 3; else they
    /// are read like any variable).
    pub take_keys: Option<unsafe fn(&[String], &Registry) -> Keys>,
    /// Installs the run's redactor, and redacts a line printed (chapter 3).
    pub install_redactor: Option<fn(&Keys, &str)>,
    pub redact_line: Option<fn(&str) -> String>,
    /// Makes control characters visible (chapter 4's sanitiser), and says which signal stopped
    /// the run (chapter 4 handles SIGTERM and SIGHUP; before it they end the process at once).
    pub visible: Option<fn(&str) -> String>,
    pub stop_signal: Option<fn() -> Option<i32>>,
    /// How the endpoint chooses the wire format (chapter 2's Chat Completions alone; chapter 10
    /// refuses a session recorded with another, chapter 19 speaks two).
    pub wire: Option<mini_agent::ch02_model::layers::Wire>,
    /// Whether `-p` shows the replies' text on stdout as it arrives (chapter 11's `--stream`;
    /// chapter 4's `-p` reads it).
    #[cfg(feature = "ch04")]
    pub answer_streamed: Option<fn(&Settings) -> bool>,
}
// ANCHOR_END: hooks

/// The agent: its settings, the table, the run's secrets; its exit code.
pub type Agent = fn(&Settings, &'static Registry, &Keys) -> Result<u8, Error>;

// ANCHOR: main
pub fn main() -> ExitCode {
    let words: Vec<String> =
        std::env::args_os().skip(1).map(|word| word.to_string_lossy().into_owned()).collect();
    let registry = registry();
    let keys = take_keys(&words, registry);
    let result = run(&words, registry, &keys);
    match (&result, stopped_by_signal()) {
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

/// Chapter 3: the key and the other secret variables the chapters registered leave the
/// environment and the command line before anything runs, and no other process of the user
/// may read this one's memory. Before chapter 3 the key is read like any variable.
fn take_keys(words: &[String], registry: &Registry) -> Keys {
    match registry.hooks.take_keys {
        // SAFETY: first thing in main, before any thread exists (chapter 3's secrets).
        Some(take) => unsafe { take(words, registry) },
        None => Keys::from_environment(),
    }
}

/// The signal (SIGTERM 15, SIGHUP 1) that stopped the run, if one did (chapter 4 handles them;
/// before it they end the process at once).
fn stopped_by_signal() -> Option<i32> {
    registry().hooks.stop_signal.and_then(|stop_signal| stop_signal())
}

// ANCHOR: exit_code
/// 0 done, 1 failed, 2 turn limit (returned as `Ok(2)`) or a model stuck repeating itself,
/// 130 interrupted; 143 or 129 when SIGTERM or SIGHUP stopped the run (128 + the signal, as a
/// shell reports it).
fn exit_code(result: &Result<u8, Error>) -> u8 {
    if let Some(signal) = stopped_by_signal() {
        return 128 + signal as u8;
    }
    match result {
        Ok(code) => *code,
        Err(Error::Interrupted) => 130,
        // A later chapter's failure says its own: chapter 7's stuck model is 2, like the
        // turn limit.
        Err(Error::Other(failure)) => failure.exit_code(),
        Err(_) => 1,
    }
}
// ANCHOR_END: exit_code

// ANCHOR: main_run
fn run(words: &[String], registry: &'static Registry, keys: &Keys) -> Result<u8, Error> {
    let command = match args::parse(words, registry) {
        Ok(command) => command,
        Err(message) => {
            // `--json` promises its `exit` event (chapter 14), also here.
            if let Some(usage_error) = registry.hooks.usage_error {
                usage_error(words, registry, &message);
            }
            return Err(Error::Usage(message));
        }
    };
    match command {
        Command::Help => print_stdout(&help::help(registry, "")),
        Command::Version => print_stdout(&format!("mini-agent {}\n", env!("CARGO_PKG_VERSION"))),
        // The subcommands the chapters of this state registered (`eval`, `tasks`…).
        Command::Sub(name, words) => match registry.runs.iter().find(|(run, _)| *run == name) {
            Some((_, run)) => run(&words, registry, keys),
            None => Err(Error::Usage(format!("mini-agent {name} is not in this state"))),
        },
        // One conversation in memory, until a chapter brings sessions.
        Command::Agent(settings) => registry.hooks.agent.unwrap_or(early::agent)(&settings, registry, keys),
    }
}
// ANCHOR_END: main_run

// ANCHOR: eval
/// `mini-agent eval`: the scenarios of chapter 13, run against this very binary.
#[cfg(feature = "ch13")]
fn evaluate(words: &[String], registry: &'static Registry, _: &Keys) -> Result<u8, Error> {
    use mini_agent::ch13_evaluation::{DEFAULT_SCENARIO_DIR, EVAL_VERBOSE, REPEATS, run_eval};
    let mut dir = None;
    let parsed =
        args::parse_flags(words, "eval", registry, |stray| match dir.replace(PathBuf::from(stray.word)) {
            None => Ok(()),
            Some(_) => Err(format!("eval takes one directory, got a second one: '{}'", stray.word)),
        });
    let settings = match parsed.map_err(Error::Usage)? {
        args::Parsed::Settings(settings) => settings,
        args::Parsed::Help | args::Parsed::Version => return print_stdout(&help::help(registry, "")),
    };
    let binary = std::env::current_exe().map_err(|e| Error::io("finding the mini-agent binary", e))?;
    let dir = dir.unwrap_or_else(|| PathBuf::from(DEFAULT_SCENARIO_DIR));
    let repeats = settings.count(&REPEATS).unwrap_or(1);
    let all_passed = run_eval(&binary, &dir, repeats, settings.has(&EVAL_VERBOSE))?;
    Ok(if all_passed { 0 } else { 1 })
}
// ANCHOR_END: eval

// ANCHOR: models
/// The model of this run: the layers the chapters registered, folded innermost first (by
/// place, then chapter order): the client chapter 2 speaks (or chapter 11's streaming one, or
/// chapter 19's Messages API), the retries of failures that come before the first byte of a
/// reply (chapter 8, so nothing shown is ever repeated), chapter 3's redaction of what comes
/// back, and chapter 2's check for a tool call written as text. Chapter 7's compacting layer is
/// added per session, by the agent.
fn build_model(connection: &Connection, settings: &Settings) -> Result<Box<dyn Model>, Error> {
    let context = ModelContext {
        endpoint: &connection.endpoint,
        settings,
        waits: Waits::from_environment()?,
        wire: connection.wire,
        keys: connection.sent_keys.as_ref().map(|keys| keys as &dyn KeySource),
    };
    let no_client = Err(Error::Config("no chapter of this state registered a model client".into()));
    let layers = registry().model_layers.iter();
    layers.fold(no_client, |model, (_place, layer)| layer(model, &context))
}
// ANCHOR_END: models

// ANCHOR: one_shot
/// `-p`: one task, the final answer on stdout, the outcome as the exit code.
#[cfg(feature = "ch04")]
fn one_shot(
    settings: &Settings,
    turn: impl FnOnce(&mut mini_agent::ch04_terminal::TerminalObserver) -> Outcome,
) -> Result<u8, Error> {
    use mini_agent::ch04_terminal::{Screen, TerminalObserver, install_interrupt_handler, render_markdown};
    install_interrupt_handler();
    let terminal = Screen::stdio(settings.has(&mini_agent::ch02_loop::command_line::VERBOSE));
    // Progress on stderr; stdout gets the final answer alone — or, with --stream, the
    // replies' text as it arrives.
    let streams_to_stdout = registry().hooks.answer_streamed.is_some_and(|streamed| streamed(settings));
    let screen = if streams_to_stdout { terminal.clone() } else { terminal.stderr_only() };
    let mut display = TerminalObserver::new(screen, None);
    match turn(&mut display) {
        Outcome::Completed(answer) if answer.trim().is_empty() => {
            say("mini-agent: the model finished without a final answer");
            Ok(0)
        }
        Outcome::Completed(_) if streams_to_stdout => Ok(0),
        // Styled on a terminal; exactly what the model wrote when piped or with NO_COLOR.
        Outcome::Completed(answer) => print_stdout(&render_markdown(&answer, terminal.look)),
        stopped => stopped_early(stopped, settings),
    }
}
// ANCHOR_END: one_shot

// ANCHOR: stopped_early
/// A turn that did not complete: the turn limit is exit 2, the rest are errors.
fn stopped_early(outcome: Outcome, settings: &Settings) -> Result<u8, Error> {
    match outcome {
        Outcome::Completed(_) => Ok(0),
        Outcome::TurnLimit => {
            say(&format!("mini-agent: {}", turn_limit_message(settings)));
            Ok(2)
        }
        Outcome::Interrupted => Err(Error::Interrupted),
        Outcome::Failed(error) => Err(error),
    }
}
// ANCHOR_END: stopped_early

/// Why a run exits 2: on stderr, and as the `exit` event's `error` with `--json`.
fn turn_limit_message(settings: &Settings) -> String {
    format!(
        "stopped after {} (the turn limit); the task may be unfinished — continue with -c, or \
         rerun with a higher --max-turns",
        plural(max_turns(settings), "model call")
    )
}

/// `--max-turns`, else the default.
fn max_turns(settings: &Settings) -> usize {
    settings.count(&MAX_TURNS).unwrap_or(mini_agent::ch02_loop::command_line::DEFAULT_MAX_TURNS)
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

/// `-p TASK`, or with `-p -` the whole of stdin.
fn read_prompt(prompt: &str) -> Result<String, Error> {
    let text = match prompt {
        "-" => {
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
        text => text.to_string(),
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
    let line = match registry().hooks.redact_line {
        Some(redact) => redact(&line),
        None => line,
    };
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
// ANCHOR_END: output

/// Control characters made visible (chapter 4's sanitiser).
fn visible(text: &str) -> String {
    match registry().hooks.visible {
        Some(visible) => visible(text),
        None => text.to_string(),
    }
}

// ANCHOR: one_line
/// Text squeezed onto one line, with control characters (a NUL in a path, an escape sequence
/// in a server's error body…) made visible by chapter 4's sanitiser.
fn one_line(text: &str) -> String {
    visible(&mini_agent::text::one_line(text))
}
// ANCHOR_END: one_line
