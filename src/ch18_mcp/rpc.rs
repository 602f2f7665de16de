//! Chapter 18 — JSON-RPC 2.0 over a child's stdin and stdout.
//!
//! An MCP server over stdio is a child process that reads one JSON-RPC message per line on
//! its stdin and writes one per line on its stdout. The client side is small, and every line
//! of it is about the server being untrusted:
//!
//! * **One reader thread per server** reads stdout line by line, keeping at most
//!   [`MAX_LINE_BYTES`] of a line (a 50 MB answer costs 8 MiB, and fails its call), and hands
//!   each answer to the request waiting for its `id`. Garbage, unknown ids and notifications
//!   are dropped (and noted in the log); a request *from* the server gets a short answer.
//! * **Writes cannot block.** Stdin is non-blocking and every write has a deadline, so a
//!   server that stops reading cannot hang the agent.
//! * **A waiting request can always end**: an answer, the server's exit, its timeout, or
//!   Ctrl+C — the last two tell the server with `notifications/cancelled`.
//! * The server starts in a session of its own (chapter 3's process-group rule), without the
//!   API key in its environment, marked so that what it leaves behind is reaped (chapter 3's
//!   reaper); its stderr goes to a bounded log file.

use crate::ch02_loop::interrupted;
use crate::ch03_tools::bounds::read_line_capped;
use crate::ch03_tools::reaper::{MARK_VARIABLE, kill_escaped, new_mark};
use crate::ch03_tools::secrets::remove_keys;
use crate::ch03_tools::shell::{in_new_session, send_signal};
use crate::ch18_mcp::config::ServerConfig;
use crate::ch18_mcp::exit::exited_before;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// The longest line kept from a server; a longer one fails the request it answers.
pub(crate) const MAX_LINE_BYTES: usize = 8 << 20;
/// The most a server's stderr log grows to in one run.
pub(crate) const LOG_MAX_BYTES: u64 = 1 << 20;
/// How often a waiting request looks at Ctrl+C.
const POLL: Duration = Duration::from_millis(20);
/// How long a stopped server has to exit by itself once its stdin is closed (MCP's stdio
/// shutdown; the reference SDKs wait 2 s too). A server that exits at once costs nothing more.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// Between SIGTERM and SIGKILL when a server is stopped.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// How a request ended without a result.
#[derive(Clone, Debug, PartialEq)]
pub enum RpcError {
    /// No answer in time; the server was sent `notifications/cancelled`.
    Timeout(Duration),
    /// Ctrl+C; the server was sent `notifications/cancelled`.
    Interrupted,
    /// The server exited or closed its stdout (the text says how).
    Closed(String),
    /// The server answered with a JSON-RPC error.
    Remote(String),
    /// The answer was longer than [`MAX_LINE_BYTES`] (its length).
    TooLarge(u64),
    /// Writing the request failed.
    Write(String),
    /// The server could not be started (again), so the request was never sent.
    NotStarted(String),
}

enum Reply {
    Result(Value),
    Error(String),
    TooLarge(u64),
}

/// What the reader thread and the requests share.
struct Shared {
    pending: Mutex<HashMap<u64, mpsc::Sender<Reply>>>,
    closed: AtomicBool,
    stdin: Mutex<Option<ChildStdin>>,
    log: Mutex<Log>,
}

/// A log file that stops growing at [`LOG_MAX_BYTES`].
struct Log {
    file: Option<File>,
    written: u64,
}

impl Log {
    fn write(&mut self, bytes: &[u8]) {
        let Some(file) = self.file.as_mut() else { return };
        let room = LOG_MAX_BYTES.saturating_sub(self.written) as usize;
        let _ = file.write_all(&bytes[..bytes.len().min(room)]);
        self.written += bytes.len().min(room) as u64;
        if bytes.len() > room {
            let _ = file.write_all(b"\n[mini-agent: log cut at 1 MiB]\n");
            self.file = None;
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running server and the requests waiting for it.
pub struct Connection {
    child: Child,
    group: i32,
    mark: String,
    shared: Arc<Shared>,
    next_id: u64,
    /// A write was cut halfway: the stream is out of step and the server must be restarted.
    broken: bool,
}

impl Connection {
    /// Starts the server: its own session and process group, the key removed from its
    /// environment, stdin non-blocking, a reader thread on stdout, stderr to `log`.
    pub fn spawn(config: &ServerConfig, log: Option<File>) -> io::Result<Connection> {
        // ANCHOR: spawn
        let mark = new_mark();
        let mut command = Command::new(&config.command);
        command
            .args(&config.args)
            .current_dir(&config.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        remove_keys(&mut command);
        command.envs(config.env.iter().map(|(k, v)| (k, v))).env(MARK_VARIABLE, &mark);
        in_new_session(&mut command);
        // ANCHOR_END: spawn
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(io::Error::other("the server's pipes are missing"));
        };
        set_nonblocking(&stdin)?;
        let group = child.id() as i32;
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            stdin: Mutex::new(Some(stdin)),
            log: Mutex::new(Log {
                written: log.as_ref().and_then(|f| f.metadata().ok()).map_or(0, |m| m.len()),
                file: log,
            }),
        });
        let reader = Arc::clone(&shared);
        thread::spawn(move || read_loop(stdout, &reader));
        let logger = Arc::clone(&shared);
        thread::spawn(move || copy_stderr(stderr, &logger));
        Ok(Connection { child, group, mark, shared, next_id: 1, broken: false })
    }

    /// Whether requests can still be sent.
    pub(crate) fn is_alive(&self) -> bool {
        !self.broken && !self.shared.closed.load(Ordering::SeqCst)
    }

    // ANCHOR: request
    /// Sends `method` and waits for its answer, the timeout, Ctrl+C or the server's end.
    pub fn request(&mut self, method: &str, params: Value, timeout: Duration) -> Result<Value, RpcError> {
        if !self.is_alive() {
            return Err(RpcError::Closed(self.how_it_ended()));
        }
        let id = self.next_id;
        self.next_id += 1;
        let (sender, answers) = mpsc::channel();
        lock(&self.shared.pending).insert(id, sender);
        let deadline = Instant::now() + timeout;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(error) = self.send(&message, deadline) {
            lock(&self.shared.pending).remove(&id);
            return Err(error);
        }
        // ANCHOR_END: request
        // ANCHOR: request_wait
        loop {
            match answers.recv_timeout(POLL) {
                Ok(Reply::Result(value)) => return Ok(value),
                Ok(Reply::Error(message)) => return Err(RpcError::Remote(message)),
                Ok(Reply::TooLarge(bytes)) => return Err(RpcError::TooLarge(bytes)),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(RpcError::Closed(self.how_it_ended()));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if interrupted() {
                self.cancel(id, "the user interrupted the request (Ctrl+C)");
                return Err(RpcError::Interrupted);
            }
            if Instant::now() >= deadline {
                self.cancel(id, "the client's timeout passed");
                return Err(RpcError::Timeout(timeout));
            }
        }
    }
    // ANCHOR_END: request_wait

    /// A notification: no answer expected.
    pub(crate) fn notify(&mut self, method: &str, params: Value) -> Result<(), RpcError> {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send(&message, Instant::now() + Duration::from_secs(1))
    }

    /// Forgets request `id` and tells the server it may stop working on it.
    fn cancel(&mut self, id: u64, reason: &str) {
        lock(&self.shared.pending).remove(&id);
        let _ = self.notify("notifications/cancelled", json!({"requestId": id, "reason": reason}));
    }

    /// One line on stdin, before `deadline`. A write cut halfway leaves the server reading
    /// half a message, so the connection is marked broken and will be restarted.
    fn send(&mut self, message: &Value, deadline: Instant) -> Result<(), RpcError> {
        let mut line = serde_json::to_vec(message).map_err(|e| RpcError::Write(e.to_string()))?;
        line.push(b'\n');
        let written = write_before(&mut lock(&self.shared.stdin), &line, deadline);
        if written.is_err() {
            self.broken = true;
        }
        match written {
            // The server is gone: say how it ended (its exit status), not which pipe broke.
            Err(RpcError::Closed(how)) if how == BROKEN_PIPE => {
                Err(RpcError::Closed(self.ended_after_broken_pipe()))
            }
            written => written,
        }
    }

    /// [`Connection::how_it_ended`] for a server whose input pipe broke: it has exited or is
    /// exiting, so wait a moment for its status (a race the write just lost).
    fn ended_after_broken_pipe(&mut self) -> String {
        exited_before(&mut self.child, Instant::now() + Duration::from_millis(500));
        self.how_it_ended()
    }

    /// "exited with status 3", "killed by signal 9", or "closed its output".
    pub(crate) fn how_it_ended(&mut self) -> String {
        let until = Instant::now() + Duration::from_millis(200);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    use std::os::unix::process::ExitStatusExt;
                    return match (status.code(), status.signal()) {
                        (Some(code), _) => format!("the server exited with status {code}"),
                        (None, Some(signal)) => format!("the server was killed by signal {signal}"),
                        _ => "the server exited".into(),
                    };
                }
                Ok(None) if Instant::now() < until && self.shared.closed.load(Ordering::SeqCst) => {
                    thread::sleep(Duration::from_millis(5));
                }
                _ if self.broken => return "the server stopped reading its input".into(),
                _ => return "the server closed its output".into(),
            }
        }
    }
}

// ANCHOR: stop
impl Drop for Connection {
    /// Closes stdin and lets the server exit by itself, as MCP's stdio shutdown asks: it still
    /// reads what was written before the end (a `notifications/cancelled` just sent on Ctrl+C).
    /// A server still running after a grace gets SIGTERM to its whole group, then SIGKILL;
    /// what left the group is reaped too: no server outlives the agent.
    fn drop(&mut self) {
        lock(&self.shared.stdin).take();
        // Woken by the exit itself, not by a timer: a server that stops at once costs nothing.
        if !exited_before(&mut self.child, Instant::now() + EXIT_GRACE) {
            send_signal(-self.group, libc::SIGTERM);
            exited_before(&mut self.child, Instant::now() + STOP_GRACE);
        }
        send_signal(-self.group, libc::SIGKILL);
        let _ = self.child.wait();
        kill_escaped(&self.mark, self.group);
    }
}
// ANCHOR_END: stop

fn set_nonblocking(stdin: &ChildStdin) -> io::Result<()> {
    let fd = stdin.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own, with plain integer arguments.
    let done = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags != -1 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) != -1
    };
    if done { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// What [`write_before`] says when the server's end of the pipe is gone; the connection then
/// asks the process how it ended.
const BROKEN_PIPE: &str = "the server stopped reading its input";

/// Writes all of `bytes` to the server's stdin before `deadline`, waiting with `poll` while
/// the pipe is full; Ctrl+C stops the wait.
fn write_before(stdin: &mut Option<ChildStdin>, bytes: &[u8], deadline: Instant) -> Result<(), RpcError> {
    let Some(pipe) = stdin.as_mut() else {
        return Err(RpcError::Closed("the server's input is closed".into()));
    };
    let mut rest = bytes;
    while !rest.is_empty() {
        match pipe.write(rest) {
            Ok(0) => return Err(RpcError::Write("the server's input is closed".into())),
            Ok(n) => rest = &rest[n..],
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(RpcError::Write("the server did not read its input in time".into()));
                }
                if interrupted() {
                    return Err(RpcError::Interrupted);
                }
                let mut poll_fd = libc::pollfd { fd: pipe.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
                let wait = left.min(POLL).as_millis() as i32;
                // SAFETY: one valid pollfd, and we say so.
                unsafe { libc::poll(&mut poll_fd, 1, wait.max(1)) };
            }
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                return Err(RpcError::Closed(BROKEN_PIPE.into()));
            }
            Err(error) => return Err(RpcError::Write(format!("writing to the server: {error}"))),
        }
    }
    Ok(())
}

// ANCHOR: read_loop
/// The reader thread: one bounded line at a time, until the server closes its stdout; then
/// every request still waiting hears that the server is gone.
fn read_loop(stdout: impl Read, shared: &Shared) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    while let Ok(Some(length)) = read_line_capped(&mut reader, MAX_LINE_BYTES, &mut line) {
        if length > MAX_LINE_BYTES as u64 {
            // Only one request per server is ever waiting: the oversized line answers it.
            for (_, waiting) in lock(&shared.pending).drain() {
                let _ = waiting.send(Reply::TooLarge(length));
            }
        } else {
            handle_line(&line, shared);
        }
        if line.capacity() > 1 << 20 {
            line = Vec::new(); // a big answer's buffer is not kept for the server's lifetime
        }
    }
    shared.closed.store(true, Ordering::SeqCst);
    lock(&shared.pending).clear(); // the senders drop: every waiting request wakes up
}
// ANCHOR_END: read_loop

/// One line from the server: an answer to one of ours, a request of its own, a
/// notification, or garbage.
fn handle_line(line: &[u8], shared: &Shared) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
        lock(&shared.log).write(b"[mini-agent: a line on stdout that is not JSON-RPC was ignored]\n");
        return;
    };
    let id = message.get("id");
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        // The server asks us something: only `ping` is ours to answer; we offer no other
        // capability (no sampling, no roots), so anything else is "method not found".
        if let Some(id) = id.filter(|id| id.is_u64() || id.is_string()) {
            let answer = if method == "ping" {
                json!({"jsonrpc": "2.0", "id": id, "result": {}})
            } else {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})
            };
            let mut bytes = answer.to_string().into_bytes();
            bytes.push(b'\n');
            // Never waits for a request of ours that is writing: the answer is dropped then.
            if let Ok(mut stdin) = shared.stdin.try_lock() {
                let _ = write_before(&mut stdin, &bytes, Instant::now() + Duration::from_millis(200));
            }
        }
        return;
    }
    let number = id.and_then(|id| id.as_u64().or_else(|| id.as_str()?.parse().ok()));
    let Some(waiting) = number.and_then(|id| lock(&shared.pending).remove(&id)) else {
        return; // an answer nobody waits for (cancelled, timed out, or made up)
    };
    let reply = match (message.get("result"), message.get("error")) {
        (Some(result), None) => Reply::Result(result.clone()),
        (_, Some(error)) => {
            let text = error.get("message").and_then(Value::as_str).unwrap_or("no message");
            let code = error.get("code").and_then(Value::as_i64).map_or(String::new(), |c| format!(" ({c})"));
            Reply::Error(format!("{}{code}", crate::text::shorten(text, 500)))
        }
        (None, None) => Reply::Error("the server's answer has neither result nor error".into()),
    };
    let _ = waiting.send(reply);
}

/// Copies the server's stderr into its log, bounded; keeps reading past the bound so the
/// server never blocks on a full pipe.
fn copy_stderr(mut stderr: impl Read, shared: &Shared) {
    let mut buffer = [0u8; 8 * 1024];
    loop {
        match stderr.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => lock(&shared.log).write(&buffer[..n]),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}
