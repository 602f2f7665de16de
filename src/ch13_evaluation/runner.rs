//! Running the binary: a fresh workspace per attempt, a scripted server per run, the
//! planned signal, the timeout, output read on threads with a grace period, and the table
//! `mini-agent eval` prints. Everything here is plumbing around a child process; what
//! counts as passing lives in `compare`.

use super::compare::{Ending, Observed, ToolsWitness, compare};
use super::journal::{journal_problems, journal_records, tools_answered, tools_started_since};
use super::scenario::{DEFAULT_RUN_TIMEOUT_MS, Run, Scenario, SignalName, load_scenarios};
use super::script::server_steps;
use crate::ch02_loop::Error;
use crate::scripted_server::ScriptedServer;
use crate::temp_dir::TempDir;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// How often the runner looks at the child, the server and the workspace.
pub(super) const POLL: Duration = Duration::from_millis(5);

/// How long the output pipe of an ended run must stay empty before the rest is given up on
/// (see [`collect`]).
pub(super) const OUTPUT_GRACE: Duration = Duration::from_millis(500);
/// The most that is still read from a pipe after its run ended: more than a pipe can hold, so
/// all the agent wrote is kept, and a leftover process that floods the pipe is left behind.
const AFTER_END_MAX_BYTES: usize = 2 << 20;
/// How often a reader with nothing to read looks whether its run has ended.
const READER_TICK_MS: i32 = 50;

/// One attempt at a whole scenario.
pub(super) struct Attempt {
    /// `None` when it passed; else which run failed and how.
    failure: Option<String>,
    requests: usize,
    elapsed: Duration,
    /// With `verbose`: each run's exit code, stdout and stderr.
    transcript: String,
}

// ANCHOR: run_eval
/// Runs every scenario in `dir` `repeats` times against `binary`, prints a table on stdout
/// — scenario, passed/N, turns (the model requests of all its runs), median milliseconds —
/// then what differed for each failure, and says whether everything passed. With
/// `verbose`, each run's exit code, stdout and stderr are shown too.
pub fn run_eval(binary: &Path, dir: &Path, repeats: usize, verbose: bool) -> Result<bool, Error> {
    run_eval_to(&mut std::io::stdout().lock(), binary, dir, repeats, verbose)
}
// ANCHOR_END: run_eval

// ANCHOR: run_eval_to
pub(super) fn run_eval_to(
    out: &mut dyn Write,
    binary: &Path,
    dir: &Path,
    repeats: usize,
    verbose: bool,
) -> Result<bool, Error> {
    let scenarios = load_scenarios(dir)?;
    // Each run starts in its own workspace, so a relative path would no longer lead here.
    let binary = &binary
        .canonicalize()
        .map_err(|e| Error::io(format!("finding the binary to evaluate, {}", binary.display()), e))?;
    let repeats = repeats.max(1);
    let width = scenarios.iter().map(|s| s.name.chars().count()).max().unwrap_or(8).max(8);
    let print = |out: &mut dyn Write, line: String| {
        // A closed stdout (| head) must not stop the evaluation; the result still counts.
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    };
    print(out, format!("{:<width$}  {:>7}  {:>5}  {:>6}", "scenario", "passed", "turns", "ms"));
    let mut failures = Vec::new();
    for scenario in &scenarios {
        let mut attempts = Vec::new();
        for _ in 0..repeats {
            attempts.push(attempt(binary, scenario, verbose)?);
        }
        for attempt in attempts.iter().filter(|a| !a.transcript.is_empty()) {
            print(out, attempt.transcript.trim_end().to_string());
        }
        let passed = attempts.iter().filter(|a| a.failure.is_none()).count();
        let mut times: Vec<Duration> = attempts.iter().map(|a| a.elapsed).collect();
        times.sort();
        let turns = attempts.last().map_or(0, |a| a.requests);
        let median = times[times.len() / 2].as_millis();
        let mark = if passed == repeats { "" } else { "  FAIL" };
        print(
            out,
            format!(
                "{:<width$}  {:>7}  {turns:>5}  {median:>6}{mark}",
                scenario.name,
                format!("{passed}/{repeats}")
            ),
        );
        // The first failure is shown; the passed/N column says how often it happened.
        if let Some(failure) = attempts.iter().find_map(|a| a.failure.clone()) {
            failures.push((scenario.name.clone(), failure));
        }
    }
    for (name, failure) in &failures {
        print(out, format!("\n{name}: {failure}"));
    }
    let passed = scenarios.len() - failures.len();
    print(out, format!("\n{passed} of {} scenarios passed", scenarios.len()));
    Ok(failures.is_empty())
}
// ANCHOR_END: run_eval_to

/// Runs a scenario once in a fresh workspace, which is removed afterwards.
pub(super) fn attempt(binary: &Path, scenario: &Scenario, verbose: bool) -> Result<Attempt, Error> {
    let workspace = temp_workspace(&scenario.name)?;
    // The user's config directory is the scenario's too: approvals and servers a run records
    // there stay with the scenario, and the evaluator's own never reach it.
    let config = temp_workspace("config")?;
    let started = Instant::now();
    let mut requests = 0;
    let mut transcript = String::new();
    let mut names = HashMap::new();
    for (path, content) in &scenario.files {
        let full = workspace.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::io(format!("creating {}", parent.display()), e))?;
        }
        std::fs::write(&full, content).map_err(|e| Error::io(format!("writing {}", full.display()), e))?;
    }
    for (index, run) in scenario.runs.iter().enumerate() {
        let observed = run_once(binary, (workspace.path(), config.path()), index, run, &mut names)?;
        requests += observed.requests.len();
        if verbose {
            transcript.push_str(&format!(
                "--- {} run {} ({}): exit {}\n{}{}",
                scenario.name,
                index + 1,
                run.args.join(" "),
                observed.ending.code().map_or("none (timed out)".to_string(), |code| code.to_string()),
                observed.stdout,
                observed.stderr
            ));
        }
        let differences = compare(&run.expect, &observed);
        if !differences.is_empty() {
            let stderr_tail: Vec<&str> =
                observed.stderr.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect();
            let failure = format!(
                "run {} ({}) differed:\n  - {}\n  stderr ends: {}",
                index + 1,
                run.args.join(" "),
                differences.join("\n  - "),
                stderr_tail.join(" | ")
            );
            return Ok(Attempt { failure: Some(failure), requests, elapsed: started.elapsed(), transcript });
        }
    }
    Ok(Attempt { failure: None, requests, elapsed: started.elapsed(), transcript })
}

// ANCHOR: run_once
// ANCHOR: run_once_signature
/// One run: a scripted server, the binary in the workspace (with the scenario's own config
/// directory), the signal if any, and what could be seen afterwards.
pub(super) fn run_once(
    binary: &Path,
    (root, config): (&Path, &Path),
    index: usize,
    run: &Run,
    names: &mut HashMap<String, String>,
) -> Result<Observed, Error> {
    // ANCHOR_END: run_once_signature
    let server = ScriptedServer::scripted(server_steps(index, &run.steps, names))
        .map_err(|e| Error::io("starting the scripted model server", e))?;
    let journal_before = journal_records(root);
    let mut command = Command::new(binary);
    let demo = run.args.iter().any(|arg| arg == "--demo");
    let place = model_flag_place(&run.args);
    if !demo && place == FlagPlace::First {
        command.args(["--base-url", &server.url]);
    }
    command.args(&run.args);
    if !demo && place == FlagPlace::Last {
        command.args(["--base-url", &server.url]);
    }
    // Scenarios speak Chat Completions to their scripted server (chapter 19 adds another API).
    command.env_remove("MINI_AGENT_API");
    command
        .current_dir(root)
        // The scenario decides everything the binary sees: no key, no endpoint, no model and
        // no config directory from the environment of whoever runs the evaluation.
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("MODEL_ID")
        .env_remove("MINI_AGENT_REQUEST_MAX_RETRIES")
        .env("XDG_CONFIG_HOME", config)
        .env("NO_COLOR", "1")
        .envs(&run.env)
        .stdin(if run.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    without_terminal(&mut command);
    let mut child = command.spawn().map_err(|e| Error::io(format!("starting {}", binary.display()), e))?;
    if let (Some(text), Some(mut stdin)) = (run.stdin.clone(), child.stdin.take()) {
        thread::spawn(move || stdin.write_all(text.as_bytes()));
    }
    let stdout = collect(child.stdout.take());
    let stderr = collect(child.stderr.take());
    let ending = wait(&mut child, run, root, &server)?;
    let mut observed = Observed {
        ending,
        stdout: finish_collecting(stdout),
        stderr: finish_collecting(stderr),
        files: BTreeMap::new(),
        tools: Vec::new(),
        tools_witness: ToolsWitness::Journal,
        requests: server.requests(),
        journal_problems: journal_problems(root, ending == Ending::Signalled(SignalName::Kill.number())),
    };
    drop(server);
    for path in run.expect.files.keys() {
        observed.files.insert(path.clone(), std::fs::read_to_string(root.join(path)).ok());
    }
    let journal_after = journal_records(root);
    if journal_after.is_empty() {
        observed.tools = tools_answered(&observed.requests, index, names);
        observed.tools_witness = ToolsWitness::Requests;
    } else {
        observed.tools = tools_started_since(&journal_before, &journal_after);
    }
    Ok(observed)
}
// ANCHOR_END: run_once

/// Where a run's `--base-url` goes: before the agent's words, after a subcommand's own, or
/// nowhere (a subcommand that talks to no model).
#[derive(Clone, Copy, PartialEq, Eq)]
enum FlagPlace {
    First,
    Last,
    Nowhere,
}

/// Where the finished binary takes them: `tasks run` (chapter 15) after its subcommand, the
/// other `tasks` commands nowhere, everything else first. A state without `tasks` refuses
/// the word anyway.
fn model_flag_place(args: &[String]) -> FlagPlace {
    if args.first().is_some_and(|word| word == "tasks") {
        return if args.get(1).is_some_and(|word| word == "run") {
            FlagPlace::Last
        } else {
            FlagPlace::Nowhere
        };
    }
    FlagPlace::First
}

/// Waits for the child, sends the planned signal when its moment comes, and kills the
/// child if it outlives its timeout.
pub(super) fn wait(
    child: &mut Child,
    run: &Run,
    root: &Path,
    server: &ScriptedServer,
) -> Result<Ending, Error> {
    let deadline = Instant::now() + Duration::from_millis(run.timeout_ms.unwrap_or(DEFAULT_RUN_TIMEOUT_MS));
    let mut signal = run.signal.clone();
    let mut send_at: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| Error::io("waiting for the binary", e))? {
            use std::os::unix::process::ExitStatusExt;
            return Ok(match (status.code(), status.signal()) {
                (Some(code), _) => Ending::Exited(code),
                (None, Some(signal)) => Ending::Signalled(signal),
                (None, None) => Ending::TimedOut,
            });
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Ending::TimedOut);
        }
        if let Some(plan) = &signal {
            let ready = match (&plan.after_requests, &plan.when_file) {
                (Some(count), _) => server.request_count() >= *count,
                (None, Some(path)) => root.join(path).exists(),
                (None, None) => true,
            };
            if ready && send_at.is_none() {
                send_at = Some(Instant::now() + Duration::from_millis(plan.delay_ms));
            }
            if send_at.is_some_and(|at| Instant::now() >= at) {
                send_signal(child.id(), plan.signal.number());
                signal = None;
            }
        }
        thread::sleep(POLL);
    }
}

/// Starts the child in a session of its own, with no controlling terminal. Otherwise an
/// evaluation started from a terminal would let the agent open `/dev/tty` and ask the
/// person at the keyboard whether a write is allowed — and the answer would depend on them.
pub(super) fn without_terminal(command: &mut Command) {
    crate::ch03_tools::shell::in_new_session(command);
}

pub(super) fn send_signal(pid: u32, signal: i32) {
    if let Ok(pid) = i32::try_from(pid) {
        crate::ch03_tools::shell::send_signal(pid, signal);
    }
}

/// A pipe being read on a thread of its own (see [`collect`]).
pub(super) struct Collecting {
    pieces: mpsc::Receiver<Vec<u8>>,
    ended: Arc<AtomicBool>,
}

/// Reads a pipe on a thread, keeping each piece as it comes. The run's end is not the pipe's:
/// a process the agent started and that outlived it (a killed agent's `sleep`) may hold the
/// pipe open long after, so once the run has ended ([`finish_collecting`]) the reader stops
/// when the pipe has been empty for [`OUTPUT_GRACE`]. Whatever the agent wrote is in the pipe
/// by then and is read first, however late the reader gets to run: a grace counted from the
/// run's end instead lost a whole stdout when 64 test threads kept the reader waiting.
pub(super) fn collect(pipe: Option<impl Read + AsRawFd + Send + 'static>) -> Collecting {
    let (sender, pieces) = mpsc::channel();
    let ended = Arc::new(AtomicBool::new(false));
    if let Some(pipe) = pipe {
        let ended = Arc::clone(&ended);
        thread::spawn(move || read_pieces(pipe, &ended, &sender));
    }
    Collecting { pieces, ended }
}

fn read_pieces(mut pipe: impl Read + AsRawFd, ended: &AtomicBool, sender: &mpsc::Sender<Vec<u8>>) {
    let mut buffer = [0u8; 8192];
    let (mut empty_since, mut after_end) = (None::<Instant>, 0);
    loop {
        let mut poll_fd = libc::pollfd { fd: pipe.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, and we say so.
        let ready = unsafe { libc::poll(&mut poll_fd, 1, READER_TICK_MS) };
        if ready <= 0 {
            // Nothing to read (or a signal): after the run's end, that starts the grace.
            if ready == 0
                && ended.load(Ordering::SeqCst)
                && empty_since.get_or_insert_with(Instant::now).elapsed() >= OUTPUT_GRACE
            {
                break;
            }
            continue;
        }
        match pipe.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => {
                if ended.load(Ordering::SeqCst) {
                    after_end += read;
                }
                if sender.send(buffer[..read].to_vec()).is_err() || after_end > AFTER_END_MAX_BYTES {
                    break;
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Everything the pipe gave, once the run has ended: the reader ends by itself (the pipe's end,
/// or the grace after the agent's output was read).
pub(super) fn finish_collecting(collecting: Collecting) -> String {
    collecting.ended.store(true, Ordering::SeqCst);
    let bytes: Vec<u8> = collecting.pieces.iter().flatten().collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A fresh workspace for one scenario: a `crate::temp_dir` directory, named after it.
pub(super) fn temp_workspace(label: &str) -> Result<TempDir, Error> {
    let safe: String =
        label.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).take(40).collect();
    TempDir::create(&format!("eval-{safe}"))
        .map_err(|e| Error::io(format!("creating the workspace for {label}"), e))
}
