//! Running the real `mini-agent` binary from a test, the way a user would.
//!
//! The contract and robustness suites judge the program from the outside: its exit code,
//! what it printed, what it sent over the wire. So they share this one small runner. It
//! gives every run a fresh temporary workspace (removed afterwards), a scrubbed environment
//! (no key, no base URL, no model leaking in from the developer's shell, `HOME` pointed at
//! the workspace), a closed stdin (so nothing can wait for a terminal), and a deadline: a
//! run that hangs is killed and reported as a hang instead of hanging the whole test run.
//!
//! The one way a test starts the binary: [`agent_command`] is the command with its scrubbed
//! environment, which the selfcheck harness (scripted servers, signals) builds on too.

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

#[allow(unused_imports)] // the contract and robustness targets use it, the others not
pub use mini_agent::temp_dir::TempDir as Workspace;

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    /// `None` when the process was killed by a signal (or by our deadline).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    pub timed_out: bool,
}

impl Run {
    /// Everything a reader needs to understand a failed assertion.
    pub fn describe(&self) -> String {
        format!(
            "exit {:?}{} after {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code,
            if self.timed_out { " (killed: deadline passed)" } else { "" },
            self.elapsed,
            clip(&self.stdout),
            clip(&self.stderr)
        )
    }

    /// A panic in Rust exits with 101 and prints "panicked at"; either one is a bug.
    pub fn panicked(&self) -> bool {
        self.code == Some(101) || self.stderr.contains("panicked at")
    }
}

fn clip(text: &str) -> String {
    const SHOWN: usize = 3000;
    if text.len() <= SHOWN {
        return text.to_string();
    }
    format!("{}… ({} bytes in all)", mini_agent::text::cut_bytes(text, SHOWN), text.len())
}

/// The agent binary to run in `root`, with an environment of its own: no key, endpoint or
/// model (or sandbox) from the developer's shell, no retries (a test scripts every reply), no colour.
pub fn agent_command(root: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mini-agent"));
    command
        .current_dir(root)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("MODEL_ID")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("MINI_AGENT_API")
        .env_remove("MINI_AGENT_MAX_TOKENS")
        // The sandbox a test checks is the default one (chapter 20), or the one it names.
        .env_remove("MINI_AGENT_SANDBOX")
        .env("MINI_AGENT_REQUEST_MAX_RETRIES", "0")
        .env("NO_COLOR", "1")
        // The developer's own MCP servers and approvals (chapter 18) stay out of the tests.
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"));
    command
}

/// Runs the binary in `workspace` with `args` and extra `env`, killing it after `deadline`:
/// stdin closed, `HOME` in the workspace, and the default retries (a test that wants none
/// says so in `env`).
pub fn run_binary(workspace: &Path, args: &[OsString], env: &[(&str, &str)], deadline: Duration) -> Run {
    let mut command = agent_command(workspace);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("MINI_AGENT_REQUEST_MAX_RETRIES")
        .env("HOME", workspace);
    for (name, value) in env {
        command.env(name, value);
    }
    let started = Instant::now();
    let mut child = command.spawn().expect("spawn the mini-agent binary");
    // Drain both pipes on their own threads: a child that fills one pipe while we wait on
    // the other would otherwise deadlock with us.
    let stdout = drain(child.stdout.take().expect("stdout is piped"));
    let stderr = drain(child.stderr.take().expect("stderr is piped"));
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > deadline => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    let elapsed = started.elapsed();
    Run {
        code: status.and_then(|s| s.code()),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        elapsed,
        timed_out,
    }
}

/// Reads a pipe to its end on a thread of its own, as text.
pub fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Turns string literals into an argument vector.
pub fn args(list: &[&str]) -> Vec<OsString> {
    list.iter().map(OsString::from).collect()
}
