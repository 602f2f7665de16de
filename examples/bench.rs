//! Benchmarks for the walking skeleton's bars, printed as a table (not timed tests).
//!
//! Run with `scripts/bench`, which builds the release binary and passes its path:
//! `cargo run --release --example bench -- target/release/mini-agent`.
//!
//! * the demo: wall time of `--demo --allow-write -p "create hello.txt containing hello"`;
//! * a 50-call task against a scripted server with zero think time: the agent's own time per
//!   turn (reply sent → next request received, as seen by the server, which includes running
//!   `bash -c true`; a second task of `list_files` calls shows the cost without a process),
//!   and the agent's peak RSS (from GNU time, else `wait4`'s rusage);
//! * the size of the first request, its system prompt and its tool schemas.

use mini_agent::ch13_scripted_server::{ScriptedServer, Step};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const RUNS: usize = 5;
const CALLS: usize = 50;

fn main() {
    let binary = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/mini-agent"));
    // Absolute, because every run starts in its own temporary directory.
    let Ok(binary) = binary.canonicalize() else {
        eprintln!("bench: {} not found — build it with cargo build --release", binary.display());
        std::process::exit(1);
    };
    let mut demo = Vec::new();
    let mut per_turn = Vec::new();
    let mut per_turn_no_process = Vec::new();
    let mut peak_rss_kb = Vec::new();
    let mut sizes = (0, 0, 0);
    for _ in 0..RUNS {
        demo.push(demo_run(&binary));
        let (turn, rss, first) = fifty_calls(&binary, "bash", r#"{"command":"true"}"#);
        per_turn_no_process.push(fifty_calls(&binary, "list_files", "{}").0);
        per_turn.push(turn);
        peak_rss_kb.push(rss);
        sizes = first;
    }
    println!("{:<52} {:>12}   (median of {RUNS}; all runs)", "measure", "value");
    row("demo hello.txt, wall", &demo, |d| format!("{:.1} ms", d * 1e3));
    row(&format!("{CALLS} bash `true` calls: mean per turn"), &per_turn, |d| format!("{:.2} ms", d * 1e3));
    row(&format!("{CALLS} list_files calls: mean per turn (no process)"), &per_turn_no_process, |d| {
        format!("{:.2} ms", d * 1e3)
    });
    let rss: Vec<f64> = peak_rss_kb.iter().map(|kb| *kb as f64).collect();
    row("peak RSS of the agent (50-call task)", &rss, |kb| format!("{:.1} MB", kb / 1024.0));
    println!("{:<52} {:>12}", "first request, bytes", sizes.0);
    println!("{:<52} {:>12}", "  its system prompt, bytes", sizes.1);
    println!("{:<52} {:>12}", "  its tool schemas (JSON), bytes", sizes.2);
    println!("{:<52} {:>12}", "  system prompt + tool schemas, bytes", sizes.1 + sizes.2);
}

fn row(name: &str, values: &[f64], show: impl Fn(f64) -> String) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let all: Vec<String> = values.iter().map(|v| show(*v)).collect();
    println!("{name:<52} {:>12}   [{}]", show(sorted[sorted.len() / 2]), all.join(", "));
}

/// Seconds for one demo run in a fresh empty directory.
fn demo_run(binary: &Path) -> f64 {
    let dir = TempDir::new("demo");
    let started = Instant::now();
    let status = Command::new(binary)
        .args(["--demo", "--allow-write", "-p", "create hello.txt containing hello"])
        .current_dir(&dir.0)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run the demo");
    let elapsed = started.elapsed().as_secs_f64();
    assert!(status.success(), "the demo failed: {status}");
    assert_eq!(
        std::fs::read_to_string(dir.0.join("hello.txt")).map(|s| s.trim().to_string()).ok(),
        Some("hello".into())
    );
    elapsed
}

/// Mean seconds per turn, peak RSS in KB, and (request, system prompt, schemas) bytes.
fn fifty_calls(
    binary: &Path,
    tool: &'static str,
    arguments: &'static str,
) -> (f64, i64, (usize, usize, usize)) {
    let arrivals: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let log = arrivals.clone();
    let mut served = 0;
    // The handler runs when a request has arrived; its reply is written right after it
    // returns, so the gap between two arrivals is the agent's time from reply to request.
    let server = ScriptedServer::start(move |_| {
        if let Ok(mut log) = log.lock() {
            log.push(Instant::now());
        }
        served += 1;
        if served <= CALLS { Step::tool_calls(&[(tool, arguments)]) } else { Step::text("done") }
    })
    .expect("start the server");
    let dir = TempDir::new("fifty");
    let arguments =
        ["--allow-shell", "--max-turns", "100", "-p", "run true 50 times", "--base-url", &server.url];
    let (code, max_rss_kb) = run_measuring_memory(binary, &arguments, &dir.0);
    assert_eq!(code, 0, "the 50-call task failed");
    let arrivals = arrivals.lock().map(|a| a.clone()).unwrap_or_default();
    assert_eq!(arrivals.len(), CALLS + 1);
    let gaps: Vec<Duration> = arrivals.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().map(Duration::as_secs_f64).sum::<f64>() / gaps.len() as f64;
    let first = &server.requests()[0];
    let system = first["messages"][0]["content"].as_str().map_or(0, str::len);
    let tools = first.get("tools").map_or(0, |t| t.to_string().len());
    (mean, max_rss_kb, (first.to_string().len(), system, tools))
}

/// Runs the agent and returns (exit code, its peak RSS in KB).
///
/// GNU time forks (a full fork) and then execs the agent, so the figure is the agent's own.
/// The fallback, `wait4` on a child spawned by std, over-reports: std spawns with vfork, and
/// Linux counts the parent's (this benchmark's) resident memory in the child's high-water
/// mark up to the exec.
fn run_measuring_memory(binary: &Path, arguments: &[&str], dir: &Path) -> (i32, i64) {
    let time = Path::new("/usr/bin/time");
    if time.exists() {
        let report = dir.join("peak-rss-kb");
        let status = Command::new(time)
            .args(["-f", "%M", "-o"])
            .arg(&report)
            .arg(binary)
            .args(arguments)
            .current_dir(dir)
            .env("MINI_AGENT_REQUEST_MAX_RETRIES", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run mini-agent under /usr/bin/time");
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        let kb = text.lines().last().and_then(|line| line.trim().parse().ok()).unwrap_or(-1);
        return (status.code().unwrap_or(-1), kb);
    }
    // Reaped by wait4 below, which also reports the peak memory.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(binary)
        .args(arguments)
        .current_dir(dir)
        .env("MINI_AGENT_REQUEST_MAX_RETRIES", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start mini-agent");
    wait_with_rusage(i32::try_from(child.id()).expect("pids fit in i32"))
}

/// Waits for `pid` and returns (exit code, peak RSS in KB) from the kernel's rusage.
fn wait_with_rusage(pid: i32) -> (i32, i64) {
    #[repr(C)]
    struct Rusage {
        times: [i64; 4],
        /// ru_maxrss first, then thirteen more counters we do not need.
        counters: [i64; 14],
    }
    unsafe extern "C" {
        fn wait4(pid: i32, status: *mut i32, options: i32, rusage: *mut Rusage) -> i32;
    }
    let mut status = 0;
    let mut usage = Rusage { times: [0; 4], counters: [0; 14] };
    // SAFETY: both pointers are to live, correctly sized values; the child is ours.
    let waited = unsafe { wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 failed");
    let code = if status & 0x7f == 0 { (status >> 8) & 0xff } else { 128 + (status & 0x7f) };
    (code, usage.counters[0])
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let path =
            std::env::temp_dir().join(format!("mini-agent-bench-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).expect("create a temp dir");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
