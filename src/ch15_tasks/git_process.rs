//! Git as a child of the harness: bounded in time, and running no program that any config
//! names.
//!
//! Git reads its config and attributes files before it does anything, and a repository chooses
//! what they say. Two things follow. A FIFO planted where git reads config
//! (`[include] path = <fifo>`) blocks git forever, so every call here has a time bound: git
//! starts in a process group of its own, two threads drain its output into bounded buffers,
//! and past the bound the whole group is killed and the call is an error that says so. And git
//! runs programs that config names, so every call switches them off ([`GUARDS`], and
//! [`filter_guards`] for the filter drivers): a commit the harness makes runs nothing of the
//! repository's choosing. Output is bytes; callers that parse paths ask for `-z`.

use crate::ch02_loop::Error;
use crate::ch03_tools::secrets::remove_keys;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// The bound on one git call when `MINI_AGENT_GIT_TIMEOUT_SECS` does not set another. A
/// `git add -A` of a large tree on a cold disk takes tens of seconds; nothing takes minutes.
pub const GIT_TIMEOUT_SECS: u64 = 120;
/// The environment variable that changes [`GIT_TIMEOUT_SECS`].
pub const GIT_TIMEOUT_VARIABLE: &str = "MINI_AGENT_GIT_TIMEOUT_SECS";
/// What is kept of one stream of git's output; the rest is read and dropped.
const OUTPUT_MAX_BYTES: usize = 16 << 20;

// ANCHOR: guards
/// Settings given to every git call of the harness: no fsmonitor command, no hooks, no signing
/// program, no automatic maintenance started behind the harness's back. Filter drivers are
/// switched off by name (see [`filter_guards`]).
pub const GUARDS: [&str; 5] = [
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "commit.gpgSign=false",
    "gc.auto=0",
    "maintenance.auto=false",
];

/// Arguments that empty every filter driver defined anywhere git reads config: the system,
/// the user's, the repository's, its worktree's (`.git/config.worktree`), every file those
/// include (`include.path`, `includeIf`), and the environment (`GIT_CONFIG_COUNT`…). A
/// driver runs only when config defines it, whatever attributes file names it, and this asks
/// git's own reader — the one `git add` uses — for every definition. Reading config runs
/// nothing. Given last on the command line, these win over every other scope.
pub fn filter_guards(root: &Path, timeout: Duration) -> Result<Vec<OsString>, Error> {
    let listing = GitCall::new(["config", "-z", "--name-only", "--get-regexp", r"^filter\."]);
    // Exit code 1: no key matched, no filter is defined.
    let keys = listing.accepting(&[1]).run(root, &[], timeout)?.stdout;
    let mut names: Vec<&[u8]> = keys
        .split(|&byte| byte == 0)
        .filter_map(|key| key.strip_prefix(b"filter."))
        .filter_map(|rest| rest.iter().rposition(|&byte| byte == b'.').map(|dot| &rest[..dot]))
        .collect();
    names.sort();
    names.dedup();
    let mut arguments = Vec::new();
    for name in names {
        let name = String::from_utf8_lossy(name);
        for (key, value) in [("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")] {
            // `-c` splits at the first '=', and a driver may be named `a=b`: `--config-env`
            // splits at the last, since an environment variable's name has none.
            if name.contains('=') {
                let variable = if value.is_empty() { EMPTY_VARIABLE } else { FALSE_VARIABLE };
                arguments.push(format!("--config-env=filter.{name}.{key}={variable}").into());
            } else {
                arguments.extend(["-c".into(), format!("filter.{name}.{key}={value}").into()]);
            }
        }
    }
    Ok(arguments)
}
// ANCHOR_END: guards

/// The variables `--config-env` reads its values from.
const EMPTY_VARIABLE: &str = "MINI_AGENT_GIT_EMPTY";
const FALSE_VARIABLE: &str = "MINI_AGENT_GIT_FALSE";

/// The bound on each git call: [`GIT_TIMEOUT_SECS`], or the environment's.
pub fn git_timeout() -> Duration {
    let seconds = std::env::var(GIT_TIMEOUT_VARIABLE).ok().and_then(|text| text.trim().parse::<u64>().ok());
    Duration::from_secs(seconds.filter(|s| *s > 0).unwrap_or(GIT_TIMEOUT_SECS))
}

/// How a git call ended, when it ended by itself.
pub struct Finished {
    pub code: i32,
    pub stdout: Vec<u8>,
}

impl Finished {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// One git call: its arguments, and what else it needs.
pub struct GitCall {
    args: Vec<OsString>,
    /// `GIT_INDEX_FILE`: a private index, so the person's own is never touched.
    index: Option<OsString>,
    /// Written to git's standard input (for `--stdin` commands).
    input: Vec<u8>,
    /// Exit codes other than 0 that are answers, not failures (`rev-parse -q` says 1).
    accepted: Vec<i32>,
    /// More environment (the author of a commit).
    env: Vec<(&'static str, &'static str)>,
}

impl GitCall {
    pub fn new<S: Into<OsString>>(args: impl IntoIterator<Item = S>) -> GitCall {
        GitCall {
            args: args.into_iter().map(Into::into).collect(),
            index: None,
            input: Vec::new(),
            accepted: vec![],
            env: vec![],
        }
    }

    pub fn index(mut self, index: &Path) -> GitCall {
        self.index = Some(index.as_os_str().to_owned());
        self
    }

    pub fn input(mut self, input: Vec<u8>) -> GitCall {
        self.input = input;
        self
    }

    pub fn env(mut self, name: &'static str, value: &'static str) -> GitCall {
        self.env.push((name, value));
        self
    }

    pub fn accepting(mut self, codes: &[i32]) -> GitCall {
        self.accepted = codes.to_vec();
        self
    }

    fn what(&self) -> String {
        format!("git {}", self.args.first().map(|a| a.to_string_lossy()).unwrap_or_default())
    }

    // ANCHOR: run_git
    /// `git -C root guards… args…`, within `timeout`: its exit code and output, or an error
    /// that names the command and the first line git wrote to stderr.
    pub fn run(mut self, root: &Path, guards: &[OsString], timeout: Duration) -> Result<Finished, Error> {
        let mut command = Command::new("git");
        command.arg("-C").arg(root);
        for guard in GUARDS {
            command.arg("-c").arg(guard);
        }
        command.args(guards).args(&self.args);
        command
            .env("GIT_TERMINAL_PROMPT", "0")
            .env(EMPTY_VARIABLE, "")
            .env(FALSE_VARIABLE, "false")
            // `GIT_CONFIG` would make `git config` read one file where `git add` reads them all.
            .env_remove("GIT_CONFIG")
            .stdin(if self.input.is_empty() { Stdio::null() } else { Stdio::piped() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        command.envs(self.env.iter().copied());
        if let Some(index) = &self.index {
            command.env("GIT_INDEX_FILE", index);
        }
        remove_keys(&mut command);
        // ANCHOR_END: run_git
        // ANCHOR: run_git_bounded
        let mut child = command.spawn().map_err(|e| Error::io("running git (is it installed?)", e))?;
        let group = child.id() as i32;
        let (done, streams) = mpsc::channel();
        let stdout = drain(child.stdout.take(), done.clone());
        let stderr = drain(child.stderr.take(), done);
        if let Some(mut stdin) = child.stdin.take() {
            let input = std::mem::take(&mut self.input);
            // On a thread: git may write more than a pipe holds before it reads all of this.
            thread::spawn(move || drop(stdin.write_all(&input)));
        }
        let ended = wait_bounded(&mut child, &streams, timeout);
        // Nothing git started outlives the call.
        kill_group(group);
        let Some(status) = ended else {
            let _ = child.wait();
            return Err(Error::Config(format!(
                "{} did not finish within {} s in {}, and was stopped: something git reads there (its \
                 config, an attributes file) may be a FIFO or on a stalled disk; {GIT_TIMEOUT_VARIABLE} \
                 sets the bound",
                self.what(),
                timeout.as_secs(),
                root.display()
            )));
        };
        let (stdout, stderr) = (stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default());
        let code = status.code().unwrap_or(-1);
        if code != 0 && !self.accepted.contains(&code) {
            let stderr = String::from_utf8_lossy(&stderr);
            let reason = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message");
            return Err(Error::Config(format!("{} failed: {reason}", self.what())));
        }
        Ok(Finished { code, stdout })
    }
    // ANCHOR_END: run_git_bounded
}

/// Reads a stream to its end on a thread, keeping at most [`OUTPUT_MAX_BYTES`]; says on
/// `done` when the stream closed.
fn drain(stream: Option<impl Read + Send + 'static>, done: mpsc::Sender<()>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(mut stream) = stream {
            let mut buffer = [0u8; 64 * 1024];
            loop {
                match stream.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => {
                        let room = OUTPUT_MAX_BYTES.saturating_sub(kept.len());
                        kept.extend_from_slice(&buffer[..n.min(room)]);
                    }
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        let _ = done.send(());
        kept
    })
}

/// Waits for both streams to close and the child to exit, until `timeout`; `None` when it
/// did not end in time.
fn wait_bounded(
    child: &mut Child,
    streams: &mpsc::Receiver<()>,
    timeout: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    for _ in 0..2 {
        streams.recv_timeout(deadline.saturating_duration_since(Instant::now())).ok()?;
    }
    // Both streams closed: git is exiting. A process that closed them and went on is
    // waited for until the deadline all the same.
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(2)),
            _ => return None,
        }
    }
}

/// SIGKILL to the call's whole process group (git is its leader).
fn kill_group(group: i32) {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}
