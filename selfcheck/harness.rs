//! The harness: run the real `mini-agent` binary in a fresh temporary workspace, against a
//! scripted model server on 127.0.0.1, and hand back everything a test wants to look at:
//! the exit code, stdout, stderr, the files left behind, and the requests the binary sent.
//!
//! Tests read like sentences: `Test::new().args(["-p", "go"]).server(steps).run()`.

pub use crate::binary_run::agent_command;
use crate::binary_run::drain;
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::Value;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A run that takes longer than this is a hang: the child is killed and the test fails. It is
/// a guard, never a measure: a run normally takes well under a second, the longest a few, and
/// a test that must prove the agent did *not* wait for something makes that something endless
/// (a server that never answers, `sleep 3600`), so waiting for it is this hang.
const HANG_AFTER: Duration = Duration::from_secs(120);

pub use mini_agent::temp_dir::TempDir;

enum Endpoint {
    /// A scripted server is started and passed as `--base-url`.
    Scripted(Vec<Step>),
    /// Exactly this `--base-url` (or none at all).
    Given(Option<String>),
    /// A scripted server whose handler picks each reply when the request arrives (e.g. from
    /// what the workspace holds at that moment).
    #[allow(dead_code)] // used by the red-team target, not by every target that includes this
    Live(Box<dyn FnMut(&Value) -> Step + Send>),
}

/// A test of the workspace, polled while the agent runs.
type Condition = Box<dyn Fn(&Path) -> bool>;

pub struct Test {
    args: Vec<String>,
    stdin: String,
    files: Vec<(String, String)>,
    env: Vec<(String, String)>,
    endpoint: Endpoint,
    /// Send SIGINT (a real Ctrl+C) once the server has seen this many requests.
    interrupt_after: Option<usize>,
    /// Close the read end of stdout at once, like `mini-agent … | head -0`.
    close_stdout: bool,
    /// Send this signal once the workspace satisfies the condition (e.g. SIGKILL once a
    /// tool has started: a crash in the middle of a tool).
    signal_when: Option<(Condition, i32)>,
    /// Run the binary as a user who is not root: `nobody` when the tests run as root.
    not_root: bool,
}

impl Test {
    pub fn new() -> Test {
        Test {
            args: Vec::new(),
            stdin: String::new(),
            files: Vec::new(),
            env: Vec::new(),
            endpoint: Endpoint::Given(None),
            interrupt_after: None,
            close_stdout: false,
            signal_when: None,
            not_root: false,
        }
    }

    pub fn args<const N: usize>(mut self, args: [&str; N]) -> Test {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Arguments built at run time.
    #[allow(dead_code)] // used by the selfcheck target, not by every target that includes this
    pub fn args_vec(mut self, args: Vec<String>) -> Test {
        self.args.extend(args);
        self
    }

    pub fn stdin(mut self, text: &str) -> Test {
        self.stdin = text.to_string();
        self
    }

    /// A file in the workspace before the run.
    pub fn file(mut self, path: &str, content: &str) -> Test {
        self.files.push((path.to_string(), content.to_string()));
        self
    }

    pub fn env(mut self, name: &str, value: &str) -> Test {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// The model: a scripted server answering each request with the next step.
    pub fn server(mut self, steps: Vec<Step>) -> Test {
        self.endpoint = Endpoint::Scripted(steps);
        self
    }

    /// The model: a scripted server answering each request with `handler(request body)`.
    #[allow(dead_code)]
    pub fn server_fn(mut self, handler: impl FnMut(&Value) -> Step + Send + 'static) -> Test {
        self.endpoint = Endpoint::Live(Box::new(handler));
        self
    }

    pub fn base_url(mut self, url: &str) -> Test {
        self.endpoint = Endpoint::Given(Some(url.to_string()));
        self
    }

    /// Presses Ctrl+C once the model server has received `requests` requests: the agent is
    /// then waiting for the reply to the last of them.
    pub fn interrupt_after(mut self, requests: usize) -> Test {
        self.interrupt_after = Some(requests);
        self
    }

    /// Sends `signal` to the agent once `condition(workspace root)` holds.
    pub fn signal_when(mut self, condition: impl Fn(&Path) -> bool + 'static, signal: i32) -> Test {
        self.signal_when = Some((Box::new(condition), signal));
        self
    }

    /// Runs the binary as a user who is not root, as every real user is: as `nobody`, with the
    /// workspace given to it, when the tests run as root (CI); as themselves otherwise. A test
    /// that says this is ignored where such a user gets no user namespace (build.rs).
    #[allow(dead_code)] // used by the red-team target, not by every target that includes this
    pub fn run_by_a_user_who_is_not_root(mut self) -> Test {
        self.not_root = true;
        self
    }

    pub fn close_stdout(mut self) -> Test {
        self.close_stdout = true;
        self
    }

    pub fn run(self) -> Run {
        let workspace = TempDir::new("selfcheck");
        self.run_in(workspace)
    }

    /// Runs in a workspace the test prepared itself (e.g. with a symlink in it).
    pub fn run_in(mut self, workspace: TempDir) -> Run {
        for (path, content) in &self.files {
            let full = workspace.path().join(path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).expect("create parent dirs");
            }
            std::fs::write(full, content).expect("write a workspace file");
        }
        let (server, given_url) = match self.endpoint {
            Endpoint::Scripted(steps) => {
                (Some(ScriptedServer::scripted(steps).expect("start the scripted server")), None)
            }
            Endpoint::Live(handler) => {
                (Some(ScriptedServer::start(handler).expect("start the scripted server")), None)
            }
            Endpoint::Given(url) => (None, url),
        };
        let mut command = agent_command(workspace.path());
        command.args(&self.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        if let Some(server) = &server {
            command.args(["--base-url", &server.url]);
        } else if let Some(url) = &given_url {
            command.args(["--base-url", url]);
        }
        for (name, value) in &self.env {
            command.env(name, value);
        }
        // SAFETY: geteuid cannot fail.
        if self.not_root && unsafe { libc::geteuid() } == 0 {
            give_to(workspace.path(), NOBODY);
            command.uid(NOBODY).gid(NOBODY);
        }
        let started = Instant::now();
        let mut child = command.spawn().expect("start mini-agent");
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let input = self.stdin.clone();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        let stdout = child.stdout.take().expect("stdout is piped");
        let stdout = if self.close_stdout {
            drop(stdout);
            std::thread::spawn(String::new)
        } else {
            drain(stdout)
        };
        let stderr = drain(child.stderr.take().expect("stderr is piped"));
        let mut interrupt_after = self.interrupt_after;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for mini-agent") {
                break status;
            }
            if let (Some(wanted), Some(server)) = (interrupt_after, &server)
                && server.requests().len() >= wanted
            {
                send_sigint(child.id());
                interrupt_after = None;
            }
            if let Some((condition, signal)) = &self.signal_when
                && condition(workspace.path())
            {
                send_signal(child.id(), *signal);
                self.signal_when = None;
            }
            if started.elapsed() > HANG_AFTER {
                let _ = child.kill();
                let _ = child.wait();
                kill_processes_in(workspace.path());
                panic!("mini-agent {:?} hung for {HANG_AFTER:?} and was killed", self.args);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let _ = writer.join();
        let run = Run {
            code: status.code(),
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
            requests: server.as_ref().map(ScriptedServer::requests).unwrap_or_default(),
            workspace,
        };
        run.assert_every_tool_call_answered_once_in_order();
        run
    }
}

/// The user a test runs the binary as when the tests run as root.
const NOBODY: u32 = 65534;

/// Makes `user` the owner of `path` and of everything beneath it.
fn give_to(path: &Path, user: u32) {
    std::os::unix::fs::lchown(path, Some(user), Some(user)).expect("give the workspace to nobody");
    if path.symlink_metadata().is_ok_and(|meta| meta.is_dir()) {
        for entry in std::fs::read_dir(path).expect("list the workspace") {
            give_to(&entry.expect("list the workspace").path(), user);
        }
    }
}

pub const SIGINT: i32 = libc::SIGINT;
pub const SIGKILL: i32 = libc::SIGKILL;

fn send_sigint(pid: u32) {
    send_signal(pid, SIGINT);
}

fn send_signal(pid: u32, signal: i32) {
    let pid = i32::try_from(pid).expect("pids fit in i32");
    // SAFETY: kill only sends a signal; the pid is our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill({signal}) failed");
}

/// Kills every process whose working directory is `root`: what a killed agent left running
/// (SIGKILL gives it no chance to stop its command). A test that kills the agent during an
/// endless command calls this, so the command does not outlive the test.
#[allow(dead_code)] // not every target that includes this kills the agent
pub fn kill_processes_in(root: &Path) {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let Ok(entries) = std::fs::read_dir("/proc") else { return };
    for pid in entries.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
        if std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == root) {
            // SAFETY: kill takes plain integers; at worst the process is already gone.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The session files of a workspace, oldest first.
pub fn session_files(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(".mini_agent/sessions"))
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Whether the workspace's (first) journal holds `needle` yet: read as text, since the agent
/// may be in the middle of appending a line. Tests wait on this (`"tool_started"`) before a
/// signal that must land while a tool runs, rather than on a fixed sleep.
#[allow(dead_code)] // used by the red-team and contract targets, not by selfcheck
pub fn journal_has(root: &Path, needle: &str) -> bool {
    session_files(root)
        .first()
        .is_some_and(|file| std::fs::read_to_string(file).unwrap_or_default().contains(needle))
}

/// The records of a journal, parsed.
pub fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("read the journal");
    text.lines().map(|line| serde_json::from_str(line).expect("each journal line is JSON")).collect()
}

/// What one run of the binary left behind.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The JSON bodies the binary sent to the model server, in order.
    pub requests: Vec<Value>,
    pub workspace: TempDir,
}

impl Run {
    pub fn root(&self) -> &Path {
        self.workspace.path()
    }

    /// The one session this workspace holds, as records.
    pub fn only_journal(&self) -> Vec<Value> {
        let files = session_files(self.root());
        assert_eq!(files.len(), 1, "expected one session file, got {files:?}");
        records(&files[0])
    }

    /// The `type` of each record of the only session.
    pub fn journal_types(&self) -> Vec<String> {
        self.only_journal().iter().map(|r| r["type"].as_str().unwrap_or("?").to_string()).collect()
    }

    pub fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root().join(path)).ok()
    }

    pub fn expect_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code,
            Some(code),
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    pub fn stderr_has(&self, needle: &str) -> &Run {
        assert!(self.stderr.contains(needle), "stderr lacks {needle:?}:\n{}", self.stderr);
        self
    }

    /// The tool results (in order) that the last request carried back to the model.
    pub fn tool_results(&self) -> Vec<String> {
        let Some(last) = self.requests.last() else { return Vec::new() };
        messages(last)
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The one tool result of a run that made exactly one tool call.
    pub fn only_tool_result(&self) -> String {
        let results = self.tool_results();
        assert_eq!(results.len(), 1, "expected one tool result, got {results:#?}\nstderr:\n{}", self.stderr);
        results[0].clone()
    }

    /// The pairing rule of chapter 1, checked on every request the binary sent: each
    /// assistant tool call is followed by exactly one tool message with its id, in order,
    /// before anything else.
    fn assert_every_tool_call_answered_once_in_order(&self) {
        for (number, request) in self.requests.iter().enumerate() {
            let messages = messages(request);
            for (index, message) in messages.iter().enumerate() {
                let Some(calls) = message["tool_calls"].as_array() else { continue };
                let ids: Vec<&str> = calls.iter().map(|c| c["id"].as_str().unwrap_or_default()).collect();
                let answers: Vec<&str> = messages[index + 1..]
                    .iter()
                    .take_while(|m| m["role"] == "tool")
                    .map(|m| m["tool_call_id"].as_str().unwrap_or_default())
                    .collect();
                assert_eq!(answers, ids, "request {number}: tool calls not answered once, in order");
            }
        }
    }
}

pub fn messages(request: &Value) -> Vec<Value> {
    request["messages"].as_array().cloned().unwrap_or_default()
}

/// A scripted reply calling one tool.
pub fn call(name: &str, arguments: Value) -> Step {
    Step::tool_calls(&[(name, &arguments.to_string())])
}

pub fn text(answer: &str) -> Step {
    Step::text(answer)
}
