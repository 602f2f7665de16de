//! `bash`: a command runs in its own session and process group, so a timeout or Ctrl+C kills
//! everything it started; its output is read by a thread into a bounded capture, and the wait
//! ends when the command exits *and* its pipe closes — or shortly after, so a daemon left
//! holding the pipe cannot hang the agent.

use super::output::{Capture, OutputStore};
use super::*;

use crate::ch02_loop::{ToolOutput, ToolStatus, interrupted};
use crate::ch03_tools::confinement::Confinement;
use crate::ch03_tools::pidfd::Pidfd;
use crate::ch03_tools::reaper::{MARK_VARIABLE, kill_escaped_or, new_mark};
use crate::ch03_tools::secrets::{redactor, remove_keys};
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use libc::{kill, setsid};

/// How a command run ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut,
    Interrupted,
    WaitFailed(io::Error),
}

// ANCHOR: process_group
/// Starts `bash -c command` (or `sh -c` where bash is missing) in its own session — hence its
/// own process group, killable as one, and no controlling terminal, so a password prompt
/// (`sudo`, `git`, `ssh`) fails at once instead of stopping the command until the timeout.
/// Stdin is /dev/null; stdout and stderr share one pipe so the model sees them interleaved.
/// `mark` goes into the environment, which every descendant inherits: what left the group is
/// found by it afterwards (`reaper`).
/// A [`Confinement`] (chapter 20's sandbox), when there is one, prepares it too; its refusal
/// comes back as the error.
fn spawn_shell(
    root: &Path,
    command: &str,
    mark: &str,
    output: io::PipeWriter,
    confinement: Option<&dyn Confinement>,
) -> io::Result<Child> {
    spawn_in_session(root, command, |shell| {
        shell
            .env(MARK_VARIABLE, mark)
            .stdin(Stdio::null())
            .stdout(output.try_clone()?)
            .stderr(output.try_clone()?);
        match confinement {
            Some(confinement) => confinement.confine(shell).map_err(io::Error::other),
            None => Ok(()),
        }
    })
    // `output` drops here: only the child holds the write end now, so EOF means it is done.
}
// ANCHOR_END: process_group

// ANCHOR: spawn_in_session
/// `bash -c command`, or `sh -c` where bash is missing, in a session of its own and without
/// the agent's key; `stdio` sets the rest. Chapter 16's hooks start the same way.
pub(crate) fn spawn_in_session(
    root: &Path,
    command: &str,
    stdio: impl Fn(&mut Command) -> io::Result<()>,
) -> io::Result<Child> {
    let mut last_error = io::Error::new(io::ErrorKind::NotFound, "no shell found");
    for shell in ["bash", "sh"] {
        let mut shell_command = Command::new(shell);
        shell_command.arg("-c").arg(command).current_dir(root);
        stdio(&mut shell_command)?;
        // The key is the agent's, not the command's: `env` must not print it.
        remove_keys(&mut shell_command);
        in_new_session(&mut shell_command);
        match shell_command.spawn() {
            Ok(child) => return Ok(child),
            Err(error) if error.kind() == io::ErrorKind::NotFound => last_error = error,
            Err(error) => return Err(error),
        }
    }
    Err(last_error)
}

// ANCHOR_END: spawn_in_session
// ANCHOR: in_new_session
/// Makes `command` start in a session of its own: its own process group, no controlling
/// terminal. Chapter 13's evaluation starts the agent the same way.
pub(crate) fn in_new_session(command: &mut Command) {
    // SAFETY: runs in the forked child before exec; setsid(2) is async-signal-safe and
    // touches no memory. It fails only for a group leader, which a fresh child is not.
    unsafe {
        command.pre_exec(|| if setsid() == -1 { Err(io::Error::last_os_error()) } else { Ok(()) });
    }
}
// ANCHOR_END: in_new_session

// ANCHOR: terminate_group
/// kill(2): sends `signal` to process `pid`, or to a whole group when `pid` is negative.
pub(crate) fn send_signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe {
        kill(pid, signal);
    }
}

fn signal_group(group: i32, signal: i32) {
    send_signal(-group, signal);
}

fn group_alive(group: i32) -> bool {
    // SAFETY: as above; signal 0 only checks whether the group still has members.
    unsafe { kill(-group, 0) == 0 }
}

/// SIGTERM to the whole group, a short grace, then SIGKILL to whatever is left.
pub(crate) fn terminate_group(group: i32, child: &mut Child) {
    signal_group(group, SIGTERM);
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline && !matches!(child.try_wait(), Ok(Some(_))) {
        thread::sleep(Duration::from_millis(10));
    }
    signal_group(group, SIGKILL);
    let _ = child.wait();
}
// ANCHOR_END: terminate_group

impl Workspace {
    // ANCHOR: bash
    pub(super) fn bash(&self, args: BashArgs) -> ToolOutput {
        let seconds = args.timeout_secs.unwrap_or(BASH_DEFAULT_TIMEOUT_SECS).clamp(1, BASH_MAX_TIMEOUT_SECS);
        self.shell(&args.command, seconds).0
    }
    // ANCHOR_END: bash

    // ANCHOR: shell
    /// Runs `command` under the rules above; also returns its exit code when it exited.
    fn shell(&self, command: &str, seconds: u64) -> (ToolOutput, Option<i32>) {
        let failed = |content: String| (ToolOutput { content, status: ToolStatus::Error }, None);
        let (pipe, writer) = match io::pipe() {
            Ok(ends) => ends,
            Err(error) => return failed(format!("cannot create a pipe for the command: {error}")),
        };
        let mark = new_mark();
        let confinement = self.confinement.as_deref();
        let mut child = match spawn_shell(&self.root, command, &mark, writer, confinement) {
            Ok(child) => child,
            Err(error) => return failed(format!("cannot start the shell: {error}")),
        };
        let group = child.id() as i32;
        let capture = Arc::new(Mutex::new(Capture::new(OutputStore { root: self.root.clone() })));
        // A second handle on the read end, never read: it tells whether anything still holds
        // the write end (`pipe_closes`), whatever the reader thread is doing.
        let watch = match pipe.try_clone() {
            Ok(watch) => watch,
            Err(error) => return failed(format!("cannot watch the command's output: {error}")),
        };
        let closed = start_reader(pipe, Arc::clone(&capture));
        let (ending, mut pipe_closed) = wait_for(&mut child, &closed, Duration::from_secs(seconds));
        let mut note = "";
        match &ending {
            Ending::Exited(_) => {
                if !pipe_closed {
                    pipe_closed = pipe_closes(&closed, &watch);
                    if !pipe_closed {
                        note = "\n[background processes still held the output; they were stopped]";
                    }
                }
                // A command's processes end with it: nothing is left running behind the agent.
                if group_alive(group) {
                    signal_group(group, SIGKILL);
                }
            }
            Ending::TimedOut | Ending::Interrupted | Ending::WaitFailed(_) => {
                terminate_group(group, &mut child)
            }
        }
        // What left the group (`setsid`, a daemon) was re-parented to us: it ends here too.
        let started_inside = |pid| confinement.is_some_and(|confinement| confinement.started_inside(pid));
        let escaped = kill_escaped_or(&mark, group, &started_inside);
        let escaped_note = match escaped {
            0 => String::new(),
            1 => "\n[1 process that left the command's group was stopped]".to_string(),
            n => format!("\n[{n} processes that left the command's group were stopped]"),
        };
        if !pipe_closed {
            // After the kill the pipe closes, unless a process escaped the group: then give up.
            pipe_closes(&closed, &watch);
        }
        let output = {
            let mut capture = capture.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            capture.abandoned = true;
            capture.render()
        };
        drop(watch); // a writer left behind now gets EPIPE once the reader lets go
        let output = if output.is_empty() { "(no output)".to_string() } else { output };
        // A refusal the model cannot tell from a bug: say who refused, and who can lift it.
        let sandbox_note = match confinement.and_then(|confinement| confinement.explain(&output)) {
            Some(line) => format!("\n[{line}]"),
            None => String::new(),
        };
        // Every process of the command is gone: what it left behind can be looked at now.
        let after_note = match confinement.and_then(|confinement| confinement.after_command()) {
            Some(line) => format!("\n[{line}]"),
            None => String::new(),
        };
        let code = match &ending {
            Ending::Exited(exit) => exit.code(),
            _ => None,
        };
        let (status_line, status) = describe_ending(ending, seconds);
        (
            ToolOutput {
                content: format!("{output}{note}{escaped_note}{sandbox_note}{after_note}\n[{status_line}]"),
                status,
            },
            code,
        )
    }
    // ANCHOR_END: shell

    // ANCHOR: run_command
    /// A command the agent runs for itself, not for the model (chapter 15's verify command):
    /// the same process group, timeout, bounded capture and redaction as `bash`. Returns the
    /// exit code (`None`: timed out, interrupted or killed) and the output as `bash` shows it.
    pub fn run_command(&self, command: &str, timeout_secs: u64) -> (Option<i32>, ToolOutput) {
        let (output, code) = self.shell(command, timeout_secs.clamp(1, BASH_MAX_TIMEOUT_SECS));
        (code, ToolOutput { content: redactor().redact_string(output.content), ..output })
    }
    // ANCHOR_END: run_command
}

/// Reads the command's output on a thread into `capture`; the receiver hears when the pipe
/// closed, which is when every process holding it has exited.
fn start_reader(mut pipe: io::PipeReader, capture: Arc<Mutex<Capture>>) -> mpsc::Receiver<()> {
    let (closed_tx, closed_rx) = mpsc::channel();
    crate::ch03_tools::progress::clear();
    thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        // Redacted as it arrives, so that the spill file never holds a secret either.
        let mut redacting = redactor().stream();
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) => {
                    let rest = redacting.finish();
                    capture.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(&rest);
                    break;
                }
                Ok(n) => {
                    let chunk = redacting.push(&buffer[..n]);
                    crate::ch03_tools::progress::note(&chunk);
                    if !capture.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(&chunk) {
                        break; // closing our end: a writer left behind gets EPIPE
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = closed_tx.send(());
    });
    closed_rx
}

/// Whether the output pipe closes: at once when nothing holds its write end any more (then the
/// reader thread only has to catch up, however late a loaded machine lets it run), else within
/// [`PIPE_GRACE`]. A grace alone lost the end of a command's output and blamed background
/// processes there were none of, when 64 test threads kept the reader waiting.
fn pipe_closes(closed: &mpsc::Receiver<()>, watch: &io::PipeReader) -> bool {
    if closed.recv_timeout(PIPE_GRACE).is_ok() {
        return true;
    }
    // The reader sends when it reaches the end, or drops its sender if it stops early.
    writers_gone(watch) && closed.recv().is_ok()
}

/// Whether nothing holds the write end of the pipe whose read end this is (poll's `POLLHUP`),
/// whether or not bytes are still waiting to be read.
pub(crate) fn writers_gone(read_end: impl AsFd) -> bool {
    let mut poll_fd = libc::pollfd { fd: read_end.as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, and we say so; a timeout of 0 only looks.
    let ready = unsafe { libc::poll(&mut poll_fd, 1, 0) };
    ready > 0 && poll_fd.revents & libc::POLLHUP != 0
}

// ANCHOR: wait_for
/// Waits for the shell to exit, for the timeout, or for Ctrl+C, whichever comes first.
/// Also says whether the output pipe has closed already.
fn wait_for(child: &mut Child, closed: &mpsc::Receiver<()>, timeout: Duration) -> (Ending, bool) {
    let started = Instant::now();
    let mut pipe_closed = false;
    // Opened before the first look: once reaped, the pid may belong to another process.
    let exit = Pidfd::open(child.id());
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return (Ending::Exited(status), pipe_closed),
            Ok(None) => {}
            Err(error) => return (Ending::WaitFailed(error), pipe_closed),
        }
        if interrupted() {
            return (Ending::Interrupted, pipe_closed);
        }
        if started.elapsed() >= timeout {
            return (Ending::TimedOut, pipe_closed);
        }
        if pipe_closed {
            // Output done: the exit is imminent, but not always there yet. The kernel closes a
            // process's files a little before it becomes a zombie, so woken by the close the
            // first look often finds it still running; a 1 ms nap here cost most sandboxed
            // commands a whole millisecond. The pidfd wakes us the moment it has exited.
            match &exit {
                Some(exit) => exit.wait(POLL),
                None => thread::sleep(Duration::from_millis(1)),
            }
        } else {
            // Waking on the pipe's close makes a quick command cost ~1 ms, not a whole POLL.
            pipe_closed = closed.recv_timeout(POLL).is_ok();
        }
    }
}
// ANCHOR_END: wait_for

/// The last line of a bash answer, and the status the loop records.
fn describe_ending(ending: Ending, seconds: u64) -> (String, ToolStatus) {
    match ending {
        Ending::Exited(exit) => match (exit.code(), exit.signal()) {
            (Some(code), _) => (format!("exit code {code}"), ToolStatus::Ok),
            (None, Some(signal)) => (format!("killed by signal {signal}"), ToolStatus::Ok),
            (None, None) => ("ended".to_string(), ToolStatus::Ok),
        },
        Ending::TimedOut => (
            format!("timed out after {seconds} s; the command and its process group were killed"),
            ToolStatus::Error,
        ),
        Ending::Interrupted => (
            "interrupted by the user; the command and its process group were killed".to_string(),
            ToolStatus::Interrupted,
        ),
        Ending::WaitFailed(error) => {
            (format!("lost track of the command ({error}); it was killed"), ToolStatus::Error)
        }
    }
}
