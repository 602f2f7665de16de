//! The composition root: the one place that knows every chapter.
//!
//! `main` parses the command line, builds the pieces — a model client, the workspace tools
//! behind their permission gate, an observer that reports progress — and hands them to the
//! loop of chapter 1. Everything that can go wrong comes back here as one [`Error`], which
//! becomes one line on stderr and an exit code: 0 the agent finished, 1 something failed,
//! 2 the turn limit was reached, 130 the user pressed Ctrl+C. The final answer, and only
//! the final answer, goes to stdout, so `mini-agent -p … > answer.md` does what it says.

mod args;

use args::{Command, Options, Prompt};
use mini_agent::ch01_loop::{Error, Limits, Message, Outcome, run_turn};
use mini_agent::ch02_model::{ChatClient, ClientConfig};
use mini_agent::ch03_tools::Workspace;
use mini_agent::ch04_terminal::{Screen, TerminalObserver, install_interrupt_handler, render_markdown};
use mini_agent::ch06_skills::{WithSkills, build_system_prompt};
use mini_agent::ch08_retry::{Retrying, parse_max_retries};
use mini_agent::ch12_permissions::{Gate, Permissions};
use mini_agent::ch13_demo::start_demo_server;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const DEFAULT_MODEL: &str = "gpt-4o-mini";

// ANCHOR: main
fn main() -> ExitCode {
    let words: Vec<String> =
        std::env::args_os().skip(1).map(|word| word.to_string_lossy().into_owned()).collect();
    match run(&words) {
        Ok(code) => code,
        Err(Error::Interrupted) => {
            say("mini-agent: interrupted");
            ExitCode::from(130)
        }
        Err(error) => {
            say(&format!("mini-agent: {}", one_line(&error.to_string())));
            ExitCode::from(1)
        }
    }
}

fn run(words: &[String]) -> Result<ExitCode, Error> {
    match args::parse(words).map_err(Error::Usage)? {
        Command::Help => print_stdout(&args::help()),
        Command::Version => print_stdout(&format!("mini-agent {}\n", env!("CARGO_PKG_VERSION"))),
        Command::Eval(_) => Err(not_yet("mini-agent eval (the evaluation scenarios)")),
        Command::Agent(options) => {
            refuse_unbuilt_features(&options)?;
            one_shot(&options)
        }
    }
}
// ANCHOR_END: main

/// Flags that are parsed (so the contract is stable) but whose chapters are not built yet.
fn refuse_unbuilt_features(options: &Options) -> Result<(), Error> {
    if options.continue_latest || options.resume.is_some() || options.status || options.acknowledge_unknown {
        return Err(not_yet("sessions (-c, -r, --status, --acknowledge-unknown)"));
    }
    if options.stream {
        return Err(not_yet("--stream"));
    }
    if options.json {
        return Err(not_yet("--json"));
    }
    if options.prompt.is_none() {
        return Err(not_yet("the interactive mode (run one task with -p \"task\")"));
    }
    Ok(())
}

fn not_yet(feature: &str) -> Error {
    Error::Usage(format!("{feature} is not available yet in this build"))
}

// ANCHOR: one_shot
/// `-p`: one task, the final answer on stdout, the outcome as the exit code.
fn one_shot(options: &Options) -> Result<ExitCode, Error> {
    let root = workspace_root(options.root.as_deref())?;
    // The demo model is a server in this process; it stops when `demo` is dropped.
    let demo = options
        .demo
        .then(start_demo_server)
        .transpose()
        .map_err(|e| Error::io("starting the demo model", e))?;
    let client = ChatClient::new(client_config(options, demo.as_ref().map(|server| server.url.as_str())))?;
    let retries = parse_max_retries(std::env::var("MINI_AGENT_REQUEST_MAX_RETRIES").ok().as_deref())?;
    let mut model = Retrying::new(client, retries);
    let permissions = Permissions { allow_write: options.allow_write, allow_shell: options.allow_shell };
    // No prompter in one-shot mode: a denied call tells the model which flag would allow it.
    let gated = Gate::new(Workspace::new(&root)?, permissions, None);
    let (system_prompt, skills) = build_system_prompt(&root);
    for warning in &skills.warnings {
        say(&format!("mini-agent: warning: {warning}"));
    }
    let mut tools = WithSkills::new(gated, skills);
    let task = read_prompt(options.prompt.as_ref())?;
    let mut history = vec![Message::System { content: system_prompt }, Message::User { content: task }];
    install_interrupt_handler();
    let terminal = Screen::stdio(options.verbose);
    let mut observer = TerminalObserver::new(stderr_only(&terminal), None);
    let limits = Limits { max_turns: options.max_turns };
    let outcome = run_turn(&mut model, &mut tools, &mut history, &mut observer, &limits);
    finish(outcome, options.max_turns, terminal.color)
}
// ANCHOR_END: one_shot

/// The terminal's screen with stdout silenced: in `-p` mode the observer draws progress on
/// stderr, and stdout receives the final answer alone, once, when the turn has ended.
fn stderr_only(terminal: &Screen) -> Screen {
    let mut screen =
        Screen::new(Box::new(std::io::sink()), Box::new(std::io::stderr()), false, terminal.live);
    screen.verbose = terminal.verbose;
    screen
}

/// What the process exits with for each way a turn can end.
fn finish(outcome: Outcome, max_turns: usize, color: bool) -> Result<ExitCode, Error> {
    match outcome {
        Outcome::Completed(answer) if answer.trim().is_empty() => {
            say("mini-agent: the model finished without a final answer");
            Ok(ExitCode::SUCCESS)
        }
        // Styled on a terminal; exactly what the model wrote when piped or with NO_COLOR.
        Outcome::Completed(answer) => print_stdout(&render_markdown(&answer, color)),
        Outcome::TurnLimit => {
            say(&format!(
                "mini-agent: stopped after {max_turns} model calls (the turn limit); the task may be \
                 unfinished — rerun with a higher --max-turns"
            ));
            Ok(ExitCode::from(2))
        }
        Outcome::Interrupted => Err(Error::Interrupted),
        Outcome::Failed(error) => Err(error),
    }
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

fn read_prompt(prompt: Option<&Prompt>) -> Result<String, Error> {
    let text = match prompt {
        Some(Prompt::Text(text)) => text.clone(),
        Some(Prompt::Stdin) => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Error::io("reading the prompt from stdin (-p -)", e))?;
            text
        }
        None => String::new(),
    };
    if text.trim().is_empty() {
        return Err(Error::Usage("the prompt is empty — say what the agent should do".into()));
    }
    Ok(text)
}

/// Writes to stdout; a reader that went away (`| head`) is a quiet, successful exit.
fn print_stdout(text: &str) -> Result<ExitCode, Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(Error::io("writing to stdout", e)),
    }
}

/// One line on stderr; a closed stderr is not worth a panic.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Text squeezed onto one line, with control characters (a NUL in a path…) made visible.
fn one_line(text: &str) -> String {
    let joined = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    joined
        .chars()
        .map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() })
        .collect()
}

// ANCHOR: endpoint
/// Where the model lives: flags win over the environment, which wins over the defaults.
/// The key comes from the environment only; the client refuses to go without one unless
/// the server is on this machine.
fn client_config(options: &Options, demo_url: Option<&str>) -> ClientConfig {
    let env = |name: &str| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
    ClientConfig {
        base_url: demo_url
            .map(str::to_string)
            .or_else(|| options.base_url.clone())
            .or_else(|| env("OPENAI_BASE_URL"))
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string()),
        api_key: env("OPENAI_API_KEY"),
        model: options.model.clone().or_else(|| env("MODEL_ID")).unwrap_or_else(|| DEFAULT_MODEL.into()),
    }
}
// ANCHOR_END: endpoint
