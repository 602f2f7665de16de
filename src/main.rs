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
use mini_agent::ch01_loop::{
    Error, Event, Limits, Message, Observer, Outcome, ToolCall, ToolOutput, ToolStatus, run_turn,
    set_interrupted,
};
use mini_agent::ch02_model::{ChatClient, ClientConfig};
use mini_agent::ch03_tools::Workspace;
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
    let mut tools = Gate::new(Workspace::new(&root)?, permissions, None);
    let task = read_prompt(options.prompt.as_ref())?;
    let mut history =
        vec![Message::System { content: system_prompt(&root) }, Message::User { content: task }];
    install_interrupt_handler();
    let mut progress = Progress { verbose: options.verbose };
    let limits = Limits { max_turns: options.max_turns };
    let outcome = run_turn(&mut model, &mut tools, &mut history, &mut progress, &limits);
    finish(outcome, options.max_turns)
}
// ANCHOR_END: one_shot

/// The standing instructions of every conversation. Chapter 6 adds AGENTS.md and skills.
fn system_prompt(root: &Path) -> String {
    format!(
        "You are mini-agent, a coding agent working in the directory {root}.\n\
         Use the tools to do the user's task: list_files, search and read_file to look before \
         you change anything; edit_file and write_file to change files; bash to run commands \
         such as builds and tests. Paths are relative to that directory. Prefer small, exact \
         edits. When the task is done, or cannot be done, stop calling tools and reply with a \
         short summary of what you did and what the user should check.",
        root = root.display()
    )
}

/// What the process exits with for each way a turn can end.
fn finish(outcome: Outcome, max_turns: usize) -> Result<ExitCode, Error> {
    match outcome {
        Outcome::Completed(answer) if answer.trim().is_empty() => {
            say("mini-agent: the model finished without a final answer");
            Ok(ExitCode::SUCCESS)
        }
        Outcome::Completed(answer) => {
            let answer = if answer.ends_with('\n') { answer } else { answer + "\n" };
            print_stdout(&answer)
        }
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

// ANCHOR: progress
/// Reports the turn on stderr: one line per tool call, and with `-v` its arguments and
/// result. Stdout stays reserved for the final answer.
struct Progress {
    verbose: bool,
}

impl Observer for Progress {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        let mut err = std::io::stderr().lock();
        // Progress is best effort: a closed stderr must not stop the agent.
        let _ = match event {
            Event::ToolStarted(call) => {
                write!(err, "→ {}{}", call.name, argument_summary(call)).and_then(|()| err.flush())
            }
            Event::ToolFinished(call, output) => self.finished(&mut err, call, output),
            Event::Reply(reply) if !reply.tool_calls.is_empty() => match reply.content.as_deref() {
                Some(text) if !text.trim().is_empty() => writeln!(err, "{}", text.trim()),
                _ => Ok(()),
            },
            Event::Retry { attempt, wait_ms, reason } => {
                writeln!(err, "… retry {attempt} in {wait_ms} ms: {}", one_line(reason))
            }
            Event::Notice { kind, text } => writeln!(err, "{kind}: {text}"),
            Event::Message(_) | Event::Request { .. } | Event::Reply(_) | Event::TextDelta(_) => Ok(()),
        };
        Ok(())
    }
}

impl Progress {
    fn finished(&self, err: &mut impl Write, call: &ToolCall, output: &ToolOutput) -> std::io::Result<()> {
        let gist = clip(&one_line(result_gist(&output.content)), 100);
        let status = match output.status {
            // A command that ran but failed is still a tool success; its exit code matters.
            ToolStatus::Ok if gist.starts_with('[') && gist != "[exit code 0]" => format!("✓ {gist}"),
            ToolStatus::Ok => "✓".to_string(),
            ToolStatus::Error => format!("✗ {gist}"),
            ToolStatus::Denied if gist.to_lowercase().starts_with("denied") => format!("✗ {gist}"),
            ToolStatus::Denied => format!("✗ denied: {gist}"),
            ToolStatus::Interrupted => "✗ interrupted".to_string(),
            ToolStatus::NotRun => "✗ not run".to_string(),
            ToolStatus::Unknown => "? unknown outcome".to_string(),
        };
        if output.status == ToolStatus::Interrupted || output.status == ToolStatus::NotRun {
            // These never had a ToolStarted line.
            write!(err, "→ {}{}", call.name, argument_summary(call))?;
        }
        writeln!(err, "  {status}")?;
        if self.verbose {
            writeln!(err, "    arguments: {}", clip(&call.arguments, 2000))?;
            let lines: Vec<&str> = output.content.lines().collect();
            for line in lines.iter().take(VERBOSE_RESULT_LINES) {
                writeln!(err, "    │ {line}")?;
            }
            if lines.len() > VERBOSE_RESULT_LINES {
                writeln!(err, "    │ … {} more lines", lines.len() - VERBOSE_RESULT_LINES)?;
            }
        }
        Ok(())
    }
}

const VERBOSE_RESULT_LINES: usize = 30;

/// The line of a result that says how it went: a closing `[exit code 1]` or
/// `[timed out …]` note if the tool wrote one, else the first line.
fn result_gist(content: &str) -> &str {
    let last = content.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or_default();
    if last.starts_with('[') && last.ends_with(']') {
        last
    } else {
        content.lines().next().unwrap_or_default()
    }
}

/// The one argument that tells a reader what a call does: its path, command or pattern.
fn argument_summary(call: &ToolCall) -> String {
    let Ok(serde_json::Value::Object(arguments)) = serde_json::from_str(&call.arguments) else {
        return " (unreadable arguments)".into();
    };
    ["command", "path", "pattern"]
        .iter()
        .find_map(|key| arguments.get(*key).and_then(|v| v.as_str()))
        .map(|value| format!(" {}", clip(&one_line(value), 80)))
        .unwrap_or_default()
}

fn clip(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
// ANCHOR_END: progress

// ANCHOR: interrupt
/// Ctrl+C sets the loop's interrupt flag, so the turn stops at the next safe point and a
/// running shell command is killed with its group. A second Ctrl+C leaves at once.
fn install_interrupt_handler() {
    unsafe extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
        fn _exit(status: i32) -> !;
    }
    extern "C" fn on_interrupt(_signum: i32) {
        if mini_agent::ch01_loop::interrupted() {
            // SAFETY: _exit is async-signal-safe and ends the process without unwinding.
            unsafe { _exit(130) }
        }
        set_interrupted(true);
    }
    const SIGINT: i32 = 2;
    // SAFETY: the handler only touches an atomic flag or calls _exit, both signal-safe.
    unsafe {
        signal(SIGINT, on_interrupt as extern "C" fn(i32) as usize);
    }
}
// ANCHOR_END: interrupt

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_what_a_call_touches() {
        let call =
            |arguments: &str| ToolCall { id: "1".into(), name: "x".into(), arguments: arguments.into() };
        assert_eq!(argument_summary(&call(r#"{"path":"a.txt","content":"hi"}"#)), " a.txt");
        assert_eq!(argument_summary(&call(r#"{"command":"ls\n-la"}"#)), " ls -la");
        assert_eq!(argument_summary(&call("{}")), "");
        assert_eq!(argument_summary(&call("{oops")), " (unreadable arguments)");
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(argument_summary(&call("{\"path\":\"a\\u0000b\"}")), " a\\0b");
        assert_eq!(result_gist("(no output)\n[timed out after 1 s]\n"), "[timed out after 1 s]");
        assert_eq!(result_gist("no such file\nmore"), "no such file");
    }
}
