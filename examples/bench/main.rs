//! Benchmarks: what the harness itself costs, printed as a table of medians (not timed tests).
//!
//! Run with `scripts/bench` (see BENCHMARKS.md), which builds the release binaries and passes
//! their paths: `bench BINARY [--guide BUILD_GUIDE] [--clean-build-seconds S]`.
//!
//! Every agent run starts in a fresh, empty workspace and talks to the scripted server of
//! chapter 13, which answers at once: zero think time, so whatever time passes is the agent's.
//! The times are taken from the outside, the way a user would feel them: the bench notes when
//! it spawns the process and when the process exits, and the server notes when each request
//! has arrived (read and parsed). Its reply goes out right after that, so "reply sent → next
//! request arrived" is the agent's own work for one turn, the spawn of `bash` included.
//!
//! Each figure is the median of [`RUNS`] runs; all runs are printed beside it, so noise (this
//! machine is shared) shows instead of hiding in an average. The load average is printed
//! with the table: a figure taken while other work runs says so.
//!
//! `tasks` holds chapter 15's rows, `mcp` chapter 18's (this binary is also their fake MCP
//! server, run as `bench --mcp-server LOG`), `sandbox` and `git_check` chapter 20's, `serve` chapter 21's
//! (`bench BINARY --only serve` prints those alone).

mod diff;
mod git_check;
mod mcp;
mod sandbox;
mod serve;
mod tasks;

#[global_allocator]
static ALLOCATOR: diff::Counting = diff::Counting;

use mini_agent::ch05_sessions::{SessionStore, new_session_id};
use mini_agent::ch09_journal::{measure_appends, write_synthetic_journal};
use mini_agent::ch10_recovery::{resume, status_of};
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::Value;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

const RUNS: usize = 5;
/// How many records each run of the journal append benchmark writes (each one fsynced).
const APPENDS: usize = 200;

fn main() {
    let mut words = std::env::args().skip(1);
    if words.next().as_deref() == Some(mcp::SERVE_FLAG) {
        mcp::serve(&PathBuf::from(words.next().unwrap_or_default()));
    }
    let options = parse_options();
    let load_before = load_average();
    let mut table = Table::default();
    let wanted = |group: &str| options.only.as_deref().is_none_or(|only| only == group);
    if wanted("agent") {
        agent_rows(&mut table, &options.binary);
    }
    if wanted("mcp") {
        mcp::mcp_rows(&mut table, &options.binary);
    }
    if wanted("diff") {
        diff::diff_rows(&mut table, &options.binary);
    }
    if wanted("sessions") {
        session_rows(&mut table, &options.binary);
    }
    if wanted("tasks") {
        tasks::task_rows(&mut table, &options.binary);
    }
    if wanted("sandbox") {
        sandbox::sandbox_rows(&mut table);
        sandbox::sandbox_turn_rows(&mut table, &options.binary);
        git_check::git_check_rows(&mut table);
    }
    if wanted("serve") {
        serve::serve_rows(&mut table, &options.binary);
    }
    if wanted("build") {
        build_rows(&mut table, &options);
    }
    println!("mini-agent benchmarks — median of {RUNS} runs, all runs in brackets");
    println!("workspace: an empty temporary directory under {}", std::env::temp_dir().display());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!("load average (1, 5, 15 min): {load_before} before, {} after; {cores} cores", load_average());
    println!();
    table.print();
}

struct Options {
    binary: PathBuf,
    guide_builder: Option<PathBuf>,
    clean_build_seconds: Option<f64>,
    /// `--only GROUP`: one group of rows (agent, mcp, diff, sessions, tasks, sandbox, serve, build).
    only: Option<String>,
}

fn parse_options() -> Options {
    let mut words = std::env::args().skip(1);
    let mut options = Options {
        binary: Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/mini-agent"),
        guide_builder: None,
        clean_build_seconds: None,
        only: None,
    };
    while let Some(word) = words.next() {
        match word.as_str() {
            "--guide" => options.guide_builder = words.next().map(PathBuf::from),
            "--only" => options.only = words.next(),
            "--clean-build-seconds" => {
                options.clean_build_seconds = words.next().and_then(|s| s.parse().ok());
            }
            _ => options.binary = PathBuf::from(word),
        }
    }
    // Absolute, because every run starts in its own temporary directory.
    options.binary = absolute(&options.binary);
    options.guide_builder = options.guide_builder.as_deref().map(absolute);
    options
}

fn absolute(binary: &Path) -> PathBuf {
    binary.canonicalize().unwrap_or_else(|_| {
        eprintln!("bench: {} not found — build it with cargo build --release", binary.display());
        std::process::exit(1);
    })
}

/// Start-up, per-turn overhead, shutdown, memory and request sizes of one-shot runs.
fn agent_rows(table: &mut Table, binary: &Path) {
    // Each call differs (`true # n`): identical calls in a row now stop the turn (chapter 7's
    // repeat detector), and the bench measures turns, not that.
    let bash_true = |n: usize| Step::tool_calls(&[("bash", &format!(r#"{{"command":"true # {n}"}}"#))]);
    let mut first_request = None;
    for calls in [1, 10, 50] {
        let runs = repeat(|| run_task(binary, calls, &bash_true, Wrap::None));
        let runs = match runs {
            Ok(runs) => runs,
            Err(reason) => {
                table.missing(&format!("{calls} bash `true` calls"), &reason);
                continue;
            }
        };
        if calls == 1 {
            let startups = runs.iter().map(|r| r.startup);
            table.millis("start-up to first request (no .mcp.json)", startups, Some(10.0));
        }
        let per_turn = runs.iter().map(|r| mean(&r.turns));
        table.millis(&format!("per-turn overhead, N = {calls} bash `true`"), per_turn, Some(5.0));
        if calls == 50 {
            table.millis("shutdown after the last response", runs.iter().map(|r| r.shutdown), None);
            let last = runs[0].requests.last().map_or(0, |r| r.to_string().len());
            table.bytes("last request at N = 50, bytes", last, None);
        }
        first_request = first_request.or_else(|| runs[0].requests.first().cloned());
    }
    // The same turns without a process: what the agent itself costs, and what is `bash`.
    // A search for a word that is nowhere: no process, and each result names its own word (equal
    // results of a reading tool are a loop to chapter 7, whatever the arguments).
    let search = |n: usize| Step::tool_calls(&[("search", &format!(r#"{{"pattern":"nowhere{n}"}}"#))]);
    match repeat(|| run_task(binary, 50, &search, Wrap::None)) {
        Ok(runs) => table.millis(
            "  for comparison: N = 50 search (no process)",
            runs.iter().map(|r| mean(&r.turns)),
            None,
        ),
        Err(reason) => table.missing("N = 50 search", &reason),
    }
    match repeat(spawn_bash_true) {
        Ok(times) => table.millis("  for comparison: spawn and wait `bash -c true`", times.into_iter(), None),
        Err(reason) => table.missing("bash -c true", &reason),
    }
    match repeat(|| peak_rss_kb(binary, &bash_true)) {
        Ok(kilobytes) => table.row(
            "peak RSS at N = 50, MB",
            kilobytes.iter().map(|kb| kb / 1024.0).collect(),
            |mb| format!("{mb:.1} MB"),
            Some(10.0),
        ),
        Err(reason) => table.missing("peak RSS", &reason),
    }
    if let Some(first) = first_request {
        let system = first["messages"][0]["content"].as_str().map_or(0, str::len);
        let tools = first.get("tools").map_or(0, |t| t.to_string().len());
        table.bytes("first request, bytes", first.to_string().len(), None);
        table.bytes("  its system prompt, bytes", system, None);
        table.bytes("  its tool schemas (JSON), bytes", tools, None);
        table.bytes("  system prompt + tool schemas, bytes", system + tools, Some(4000));
    }
}

/// What the outside world saw of one agent run.
struct Run {
    /// Spawn → the first request arrived at the server.
    startup: Duration,
    /// For each reply but the last: reply sent → the next request arrived.
    turns: Vec<Duration>,
    /// The last reply sent → the process exited.
    shutdown: Duration,
    /// The request bodies, as the server parsed them.
    requests: Vec<Value>,
}

/// How the agent is started: as itself, under GNU time (its peak RSS goes to the file), or
/// under `strace -f` counting fsyncs (the trace goes to the file).
#[derive(Clone, Copy)]
enum Wrap<'a> {
    None,
    Time(&'a Path),
    Strace(&'a Path),
}

/// One `-p` task in a fresh empty workspace: the server answers `calls` times with `step`,
/// then with a final text.
fn run_task(binary: &Path, calls: usize, step: &dyn Fn(usize) -> Step, wrap: Wrap) -> Result<Run, String> {
    run_task_with(binary, calls, step, wrap, &[])
}

/// [`run_task`] with more flags (`--sandbox off`).
fn run_task_with(
    binary: &Path,
    calls: usize,
    step: &dyn Fn(usize) -> Step,
    wrap: Wrap,
    flags: &[&str],
) -> Result<Run, String> {
    let mut replies: Vec<Step> = (0..calls).map(step).collect();
    replies.push(Step::text("done"));
    let workspace = TempDir::new("task")?;
    let mut words = vec!["--allow-shell", "--max-turns", "100", "-p", "run the tool until told to stop"];
    words.extend_from_slice(flags);
    run_agent(binary, &workspace, &words, replies, wrap)
}

/// Runs the agent with `words` plus `--base-url` of a scripted server answering `replies`,
/// with `workspace.root()` as its current directory. The exit code must be 0.
fn run_agent(
    binary: &Path,
    workspace: &TempDir,
    words: &[&str],
    replies: Vec<Step>,
    wrap: Wrap,
) -> Result<Run, String> {
    let arrivals: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let log = arrivals.clone();
    let mut replies = replies.into_iter();
    // The handler runs once a request has arrived; its reply is written as soon as it returns.
    let server = ScriptedServer::start(move |_| {
        if let Ok(mut log) = log.lock() {
            log.push(Instant::now());
        }
        replies.next().unwrap_or_else(|| Step::error(500, "bench: no reply left"))
    })
    .map_err(|e| format!("cannot start the scripted server: {e}"))?;
    let mut command = match wrap {
        // GNU time forks and execs the agent, so the peak it reports is the agent's own.
        Wrap::Time(report) => {
            let mut time = Command::new("/usr/bin/time");
            time.args(["-f", "%M", "-o"]).arg(report).arg(binary);
            time
        }
        Wrap::Strace(log) => {
            let mut strace = Command::new("strace");
            strace.args(["-f", "-e", "trace=fsync,fdatasync", "-o"]).arg(log).arg(binary);
            strace
        }
        Wrap::None => Command::new(binary),
    };
    command.args(words).args(["--base-url", &server.url]).current_dir(workspace.root());
    let spawned = Instant::now();
    let code = run_quietly(&mut command, workspace)?;
    let exited = Instant::now();
    let arrivals = arrivals.lock().map(|a| a.clone()).unwrap_or_default();
    if code != 0 {
        return Err(format!("exit {code}: {}", workspace.stderr_line()));
    }
    let (Some(first), Some(last)) = (arrivals.first(), arrivals.last()) else {
        return Err("the agent sent no request".into());
    };
    Ok(Run {
        startup: *first - spawned,
        turns: arrivals.windows(2).map(|w| w[1] - w[0]).collect(),
        shutdown: exited - *last,
        requests: server.requests(),
    })
}

/// Spawns `command` with no stdin, stdout discarded and stderr kept beside the workspace, and
/// waits for it; returns the exit code.
fn run_quietly(command: &mut Command, workspace: &TempDir) -> Result<i32, String> {
    let stderr = File::create(workspace.stderr_path()).map_err(|e| format!("cannot create a file: {e}"))?;
    let status = command
        .env("MINI_AGENT_REQUEST_MAX_RETRIES", "0")
        .env("NO_COLOR", "1")
        // The user's own mcp.json and approvals stay out of the figures.
        .env("XDG_CONFIG_HOME", workspace.config_dir())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("MODEL_ID")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .status()
        .map_err(|e| format!("cannot start {:?}: {e}", command.get_program()))?;
    Ok(status.code().unwrap_or(-1))
}

/// Peak resident memory of a 50-call task, in KB, from GNU time.
fn peak_rss_kb(binary: &Path, step: &dyn Fn(usize) -> Step) -> Result<f64, String> {
    if !Path::new("/usr/bin/time").exists() {
        return Err("needs GNU time at /usr/bin/time".into());
    }
    let report = TempDir::new("rss")?;
    let report_path = report.root().join("peak-rss-kb");
    run_task(binary, 50, step, Wrap::Time(&report_path))?;
    let text = std::fs::read_to_string(&report_path).map_err(|e| format!("no report from time: {e}"))?;
    text.lines().last().and_then(|line| line.trim().parse().ok()).ok_or(format!("time said: {text}"))
}

fn spawn_bash_true() -> Result<Duration, String> {
    let started = Instant::now();
    let status = Command::new("bash").args(["-c", "true"]).stdin(Stdio::null()).status();
    match status {
        Ok(status) if status.success() => Ok(started.elapsed()),
        other => Err(format!("bash -c true: {other:?}")),
    }
}

/// `--status` and resume on synthetic journals, and the journal's fsynced append rate.
fn session_rows(table: &mut Table, binary: &Path) {
    for records in [1_000, 10_000] {
        match repeat(|| status_time(binary, records)) {
            Ok(times) => table.millis(&format!("--status, {records} records"), times.into_iter(), None),
            Err(reason) => table.missing(&format!("--status, {records} records"), &reason),
        }
        let target = (records == 10_000).then_some(100.0);
        match repeat(|| resume_run(binary, records)) {
            Ok(runs) => {
                let name = format!("resume, {records} records, to first request");
                table.millis(&name, runs.iter().map(|r| r.startup), target);
                let first = runs[0].requests.first().map_or(0, |r| r.to_string().len());
                let name = format!("  its first request, bytes ({} requests in all)", runs[0].requests.len());
                table.bytes(&name, first, None);
            }
            Err(reason) => table.missing(&format!("resume, {records} records"), &reason),
        }
        match repeat(|| library_times(records)) {
            Ok(times) => {
                let (status, resume): (Vec<Duration>, Vec<Duration>) = times.into_iter().unzip();
                let name = format!("  in-process: ch10 status_of, {records} records");
                table.millis(&name, status.into_iter(), None);
                let name = format!("  in-process: ch10 resume (lock, read, replay), {records} records");
                table.millis(&name, resume.into_iter(), None);
            }
            Err(reason) => table.missing(&format!("in-process status/resume, {records}"), &reason),
        }
    }
    let rates = repeat(|| {
        let dir = TempDir::new("appends")?;
        measure_appends(dir.root(), APPENDS).map_err(|e| e.to_string())
    });
    match rates {
        Ok(rates) => table.row("journal appends per second (fsync)", rates, |r| format!("{r:.0} /s"), None),
        Err(reason) => table.missing("journal appends", &reason),
    }
}

/// A workspace holding one completed session of `records` records; returns it and the id.
fn workspace_with_session(records: usize) -> Result<(TempDir, String), String> {
    let workspace = TempDir::new("session")?;
    let store = SessionStore::new(workspace.root());
    let id = new_session_id(SystemTime::now(), 0);
    std::fs::create_dir_all(store.dir())
        .map_err(|e| format!("cannot create {}: {e}", store.dir().display()))?;
    write_synthetic_journal(&store.path_of(&id), records).map_err(|e| e.to_string())?;
    Ok((workspace, id))
}

/// The library's share of `--status` and resume, without a process or a request: reading
/// and checking the journal (`status_of`), and locking, reading and replaying it (`resume`).
fn library_times(records: usize) -> Result<(Duration, Duration), String> {
    let (workspace, id) = workspace_with_session(records)?;
    let path = SessionStore::new(workspace.root()).path_of(&id);
    let started = Instant::now();
    status_of(&path).map_err(|e| e.to_string())?;
    let status = started.elapsed();
    let started = Instant::now();
    let resumed = resume(&path, false).map_err(|e| e.to_string())?;
    let resume = started.elapsed();
    drop(resumed);
    Ok((status, resume))
}

/// Spawn → exit of `mini-agent --root DIR --status -r ID`.
fn status_time(binary: &Path, records: usize) -> Result<Duration, String> {
    let (workspace, id) = workspace_with_session(records)?;
    let mut command = Command::new(binary);
    command.arg("--root").arg(workspace.root()).args(["--status", "-r", &id]);
    let started = Instant::now();
    let code = run_quietly(&mut command, &workspace)?;
    let elapsed = started.elapsed();
    match code {
        0 => Ok(elapsed),
        code => Err(format!("exit {code}: {}", workspace.stderr_line())),
    }
}

/// `mini-agent --root DIR -r ID -p …` (the journal is fresh each time, since resuming
/// appends to it); its start-up is spawn → first request.
fn resume_run(binary: &Path, records: usize) -> Result<Run, String> {
    let (workspace, id) = workspace_with_session(records)?;
    let root = workspace.root().display().to_string();
    let words = ["--root", &root, "-r", &id, "-p", "one more thing: say done"];
    // A long history may be compacted first (chapter 7): up to 8 rounds, each one request.
    run_agent(binary, &workspace, &words, vec![Step::text("done"); 12], Wrap::None)
}

/// Guide build time, release binary size, and the clean build time measured by the script.
fn build_rows(table: &mut Table, options: &Options) {
    match &options.guide_builder {
        Some(builder) => match repeat(|| guide_build_time(builder)) {
            Ok(times) => table.millis("guide build (build-guide)", times.into_iter(), None),
            Err(reason) => table.missing("guide build", &reason),
        },
        None => table.missing("guide build", "no build-guide binary on this branch"),
    }
    match std::fs::metadata(&options.binary) {
        Ok(meta) => table.row(
            "release binary size, MB",
            vec![meta.len() as f64 / 1e6],
            |mb| format!("{mb:.2} MB"),
            None,
        ),
        Err(e) => table.missing("release binary size", &e.to_string()),
    }
    match options.clean_build_seconds {
        Some(seconds) => {
            table.row("clean release build (one run)", vec![seconds], |s| format!("{s:.0} s"), None)
        }
        None => table.missing("clean release build", "run scripts/bench --clean-build"),
    }
}

/// Spawn → exit of the guide builder in a copy of `guide/` and `src/`, so that the page it
/// writes does not touch the repository.
fn guide_build_time(builder: &Path) -> Result<Duration, String> {
    let copy = TempDir::new("guide")?;
    let repository = Path::new(env!("CARGO_MANIFEST_DIR"));
    for part in ["guide", "src"] {
        copy_tree(&repository.join(part), &copy.root().join(part))
            .map_err(|e| format!("cannot copy {part}/: {e}"))?;
    }
    let mut command = Command::new(builder);
    command.current_dir(copy.root());
    let started = Instant::now();
    let code = run_quietly(&mut command, &copy)?;
    let elapsed = started.elapsed();
    match code {
        0 => Ok(elapsed),
        code => Err(format!("exit {code}: {}", copy.stderr_line())),
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// [`RUNS`] runs of `measure`; the first failure ends them.
fn repeat<T>(mut measure: impl FnMut() -> Result<T, String>) -> Result<Vec<T>, String> {
    (0..RUNS).map(|_| measure()).collect()
}

/// The middle value (the upper one of an even count); 0 for none.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// `/proc/loadavg`'s first three fields, or "unknown".
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    if fields.len() == 3 { fields.join(" ") } else { "unknown".into() }
}

fn mean(durations: &[Duration]) -> Duration {
    let count = u32::try_from(durations.len().max(1)).unwrap_or(u32::MAX);
    durations.iter().sum::<Duration>() / count
}

/// The printed table: measure, median, target and whether it is met, every run.
#[derive(Default)]
struct Table {
    lines: Vec<[String; 4]>,
}

impl Table {
    /// A figure measured in several runs; `target` is an upper bound in the same unit.
    fn row(&mut self, name: &str, values: Vec<f64>, show: impl Fn(f64) -> String, target: Option<f64>) {
        let median = median(values.clone());
        let verdict = match target {
            Some(bound) if median <= bound => format!("≤ {} ✓", show(bound)),
            Some(bound) => format!("≤ {} ✗", show(bound)),
            None => String::new(),
        };
        let runs = if values.len() > 1 {
            format!("[{}]", values.iter().map(|v| show(*v)).collect::<Vec<_>>().join(", "))
        } else {
            String::new()
        };
        self.lines.push([name.to_string(), show(median), verdict, runs]);
    }

    /// Several values per run: the median of them all, each run's median in brackets.
    fn pooled(&mut self, name: &str, runs: &[Vec<Duration>], target_ms: Option<f64>) {
        let ms = |values: &[Duration]| -> Vec<f64> { values.iter().map(|d| d.as_secs_f64() * 1e3).collect() };
        let all: Vec<f64> = runs.iter().flat_map(|run| ms(run)).collect();
        if all.is_empty() {
            return self.missing(name, "no values");
        }
        let show = |ms: f64| format!("{ms:.2} ms");
        let verdict = match target_ms {
            Some(bound) if median(all.clone()) <= bound => format!("≤ {} ✓", show(bound)),
            Some(bound) => format!("≤ {} ✗", show(bound)),
            None => String::new(),
        };
        let per_run: Vec<String> = runs.iter().map(|run| show(median(ms(run)))).collect();
        let runs = format!("{} values; per run [{}]", all.len(), per_run.join(", "));
        self.lines.push([name.to_string(), show(median(all)), verdict, runs]);
    }

    /// A line with a value and a note, no target.
    fn text(&mut self, name: &str, value: &str, note: &str) {
        self.lines.push([name.to_string(), value.to_string(), String::new(), note.to_string()]);
    }

    fn millis(&mut self, name: &str, durations: impl Iterator<Item = Duration>, target_ms: Option<f64>) {
        let values = durations.map(|d| d.as_secs_f64() * 1e3).collect();
        self.row(name, values, |ms| format!("{ms:.2} ms"), target_ms);
    }

    /// Sizes are the same in every run, so one value stands for all.
    fn bytes(&mut self, name: &str, bytes: usize, target: Option<usize>) {
        self.row(name, vec![bytes as f64], |b| format!("{b:.0}"), target.map(|t| t as f64));
    }

    fn missing(&mut self, name: &str, reason: &str) {
        self.lines.push([name.to_string(), "n/a".into(), String::new(), reason.to_string()]);
    }

    fn print(&self) {
        let width = |column: usize| self.lines.iter().map(|l| l[column].chars().count()).max().unwrap_or(0);
        let (name, value, target) = (width(0).max(7), width(1).max(6), width(2).max(6));
        println!("| {:<name$} | {:>value$} | {:<target$} | runs", "measure", "median", "target");
        println!("|{}|{}:|{}|---", "-".repeat(name + 2), "-".repeat(value + 1), "-".repeat(target + 2));
        for [n, v, t, runs] in &self.lines {
            println!("| {n:<name$} | {v:>value$} | {t:<target$} | {runs}");
        }
    }
}

/// A fresh directory under the system temp dir (`mini_agent::temp_dir`): `root()` is the (empty)
/// workspace, and the agent's stderr is kept beside it, outside the workspace.
struct TempDir {
    base: mini_agent::temp_dir::TempDir,
    root: PathBuf,
}

impl TempDir {
    fn new(tag: &str) -> Result<TempDir, String> {
        let base = mini_agent::temp_dir::TempDir::create(&format!("bench-{tag}"))
            .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
        let root = base.join("workspace");
        std::fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
        Ok(TempDir { base, root })
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn stderr_path(&self) -> PathBuf {
        self.base.join("stderr")
    }

    /// The agent's `XDG_CONFIG_HOME`, beside the workspace (it need not exist).
    fn config_dir(&self) -> PathBuf {
        self.beside("config")
    }

    /// A path next to the workspace, not in it.
    fn beside(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    /// The agent's last stderr line, which says why it failed.
    fn stderr_line(&self) -> String {
        let text = std::fs::read_to_string(self.stderr_path()).unwrap_or_default();
        text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("(no stderr)").trim().to_string()
    }
}
