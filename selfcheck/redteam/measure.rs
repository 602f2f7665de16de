//! Measuring the agent's peak RSS honestly: a small wrapper process between the test and it.
//!
//! The figure is `wait4`'s `ru_maxrss` for the agent. At `exec` Linux keeps the larger of the
//! old and the new peak (`exec_mmap` copies the old memory's high-water mark), and std starts
//! a child with `vfork`, so an agent started straight from this large, multi-threaded test
//! process would report the test's own peak. So the test binary starts *itself* again as a
//! wrapper (the test [`wrapper`], with [`SPEC`] set): fresh, it peaks at about 4 MB (the
//! agent alone peaks at about 8 MB), starts the agent, waits for it — its own child, so no
//! one else can reap it — and prints the figure. The wrapper's own peak is a floor under
//! every figure; the test [`wrapper`] prints it and holds it under 16 MB.
//!
//! The measured cases are the heavy tier: `cargo test` lists them as ignored, and `.ci/run`
//! runs them with `cargo test --test redteam -- --ignored`.
//!
//! The previous detour (`sh -c 'agent & echo $!'`, this process a child subreaper adopting
//! the agent) lost its figure now and then: dash reaps a background job that exits before
//! dash does (`wait4(-1, WNOHANG)` on SIGCHLD), so a quick agent on a busy machine was gone
//! — ECHILD — before it was ours.

use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

/// The environment variable that turns the test [`wrapper`] into the wrapper: a JSON object
/// with the agent's program, arguments and the files for its stdout and stderr.
const SPEC: &str = "MINI_AGENT_TEST_MEASURE";
/// The wrapper's one line of answer on its stdout.
const ANSWER: &str = "measured: ";
/// How long the agent may run before the wrapper calls it a hang and kills it: a guard ten
/// times the slowest case on a loaded machine (the 400,000-record journal took 64 s there, and
/// failed a 90 s guard once).
const HANG_AFTER: Duration = Duration::from_secs(600);

/// What [`run_measured`] saw: exit code, both streams, peak RSS in kB, and the bytes the agent
/// read (`rchar` of `/proc/<pid>/io`, read before it is reaped): how much of a file was read
/// is counted, not timed.
pub(crate) struct MeasuredRun {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) peak_rss_kb: i64,
    pub(crate) read_bytes: u64,
    /// User and system CPU time of the agent and the commands it waited for, in ms: a cost a
    /// busy machine does not inflate the way it inflates wall-clock time.
    pub(crate) cpu_ms: i64,
}

/// Runs `mini-agent ARGS` in `root` through the wrapper (see the module doc) and reads its
/// peak RSS; asserts nothing about it, so callers choose their own bound.
pub(crate) fn run_measured(name: &str, root: &Path, args: &[&str]) -> MeasuredRun {
    run_measured_with(name, root, args, &[])
}

/// [`run_measured`] with extra environment variables for the agent.
pub(crate) fn run_measured_with(name: &str, root: &Path, args: &[&str], env: &[(&str, &str)]) -> MeasuredRun {
    let (run, wrapper_kb) = run_wrapped(name, root, args, env);
    print_baseline(wrapper_kb);
    run
}

/// Prints the wrapper's own peak RSS, once per test process: the floor under every figure.
fn print_baseline(wrapper_kb: i64) {
    static BASELINE: Once = Once::new();
    BASELINE.call_once(|| {
        eprintln!("[resources] the measuring wrapper's own peak RSS: {:.1} MB", wrapper_kb as f64 / 1000.0)
    });
}

/// [`run_measured`], also returning the wrapper's own peak RSS (kB) when it started the agent.
fn run_wrapped(name: &str, root: &Path, args: &[&str], env: &[(&str, &str)]) -> (MeasuredRun, i64) {
    let template = crate::harness::agent_command(root);
    let (out, errors) = (root.join(".mini_agent-test-stdout"), root.join(".mini_agent-test-stderr"));
    let spec =
        json!({"program": template.get_program().to_str(), "args": args, "stdout": out, "stderr": errors});
    let me = std::env::current_exe().expect("the test binary's path");
    let mut command = Command::new(me);
    command
        // The test is ignored in plain `cargo test` (the heavy tier), so it is asked for by name.
        .args(["--exact", "measure::wrapper", "--include-ignored", "--nocapture", "--test-threads=1", "-q"])
        .env(SPEC, spec.to_string())
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command.envs(env.iter().copied()); // the wrapper's environment is the agent's
    let started = Instant::now();
    let output = command.output().expect("start the measuring wrapper");
    let printed = String::from_utf8_lossy(&output.stdout);
    let answer: Value = printed
        .lines()
        .find_map(|line| line.strip_prefix(ANSWER))
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("{name}: the wrapper gave no answer ({}):\n{printed}", output.status));
    if let Some(hang) = answer["hung"].as_str() {
        panic!("{name}: the agent hung and was killed ({hang})");
    }
    let status = answer["status"].as_i64().expect("a wait status") as i32;
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let read = |path: &Path| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let _ = std::fs::remove_file(path);
        text
    };
    let (stdout, stderr) = (read(&out), read(&errors));
    let peak_rss_kb = answer["peak_kb"].as_i64().expect("a peak");
    let read_bytes = answer["read_bytes"].as_u64().expect("the bytes read");
    eprintln!(
        "[resources] {name}: peak RSS {:.1} MB, read {:.1} MB, {:.2} s, exit {code:?}",
        peak_rss_kb as f64 / 1000.0,
        read_bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let cpu_ms = answer["cpu_ms"].as_i64().expect("the CPU time");
    let run = MeasuredRun { code, stdout, stderr, peak_rss_kb, read_bytes, cpu_ms };
    (run, answer["wrapper_kb"].as_i64().unwrap_or(0))
}

/// This process's peak RSS so far, in kB (`VmHWM`).
fn own_peak_kb() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find_map(|line| line.strip_prefix("VmHWM:")).unwrap_or("0");
    line.trim().trim_end_matches("kB").trim().parse().unwrap_or(0)
}

/// `rchar` of an exited, not yet reaped child: every byte its `read`s returned.
fn read_bytes_of(pid: libc::pid_t) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    let line = io.lines().find_map(|line| line.strip_prefix("rchar:")).unwrap_or("0");
    line.trim().parse().unwrap_or(0)
}

/// The wrapper's work: start the agent the spec names, wait for it, print the answer line.
#[allow(clippy::zombie_processes, reason = "reaped by wait4, which also gives its rusage")]
fn be_the_wrapper(spec: &str) {
    let spec: Value = serde_json::from_str(spec).expect("the wrapper's spec");
    let file = |key: &str| std::fs::File::create(spec[key].as_str().expect("a path")).expect("create");
    let args: Vec<&str> = spec["args"].as_array().expect("args").iter().filter_map(Value::as_str).collect();
    let wrapper_kb = own_peak_kb();
    let child = Command::new(spec["program"].as_str().expect("a program"))
        .args(args)
        .env_remove(SPEC)
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("start the agent");
    let pid = child.id() as libc::pid_t;
    let started = Instant::now();
    let answer = loop {
        // SAFETY: siginfo is plain data; waitid with WNOWAIT only looks, leaving the child (a
        // zombie once it has exited) to be reaped below, so its /proc/<pid>/io is still there.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        let looked = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
        // SAFETY: filled by waitid (zero when the child has not exited yet).
        if looked == 0 && unsafe { info.si_pid() } == pid {
            let read_bytes = read_bytes_of(pid);
            let mut status = 0;
            // SAFETY: rusage is plain data; wait4 fills it for our own child, which has exited.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            // ru_maxrss is in kilobytes on Linux.
            let peak_kb = usage.ru_maxrss;
            let ms = |time: libc::timeval| time.tv_sec * 1000 + time.tv_usec / 1000;
            let cpu_ms = ms(usage.ru_utime) + ms(usage.ru_stime);
            break json!({"status": status, "peak_kb": peak_kb, "read_bytes": read_bytes, "cpu_ms": cpu_ms,
                "wrapper_kb": wrapper_kb});
        }
        if looked == -1 || started.elapsed() > HANG_AFTER {
            // Say where it was (state, kernel wait channel) before killing it.
            let proc =
                |file: &str| std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default();
            let error = std::io::Error::last_os_error();
            let hung = format!("waitid: {looked}, {error}; stat: {}; wchan: {}", proc("stat"), proc("wchan"));
            // SAFETY: kill and waitpid take plain integers; `pid` is our child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            break json!({"hung": hung});
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    println!("{ANSWER}{answer}");
}

/// With [`SPEC`] set, this is the measuring wrapper (see the module doc). Run as a test, it
/// measures `mini-agent --version` through the wrapper and holds the wrapper's own peak —
/// the floor under every figure — well under the agent's.
#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn wrapper() {
    if let Ok(spec) = std::env::var(SPEC) {
        return be_the_wrapper(&spec);
    }
    let workspace = crate::harness::TempDir::new("selfcheck");
    let (run, wrapper_kb) = run_wrapped("mini-agent --version", workspace.path(), &["--version"], &[]);
    print_baseline(wrapper_kb);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.starts_with("mini-agent "), "{}", run.stdout);
    assert!(0 < wrapper_kb && wrapper_kb < 16_000, "the wrapper itself peaked at {wrapper_kb} kB");
    assert!(wrapper_kb <= run.peak_rss_kb, "the agent's figure includes the wrapper's floor");
}
