//! Running one hook command with the bash tool's rules (chapter 3): `bash -c` (or `sh -c`)
//! in the workspace, in a session of its own so a timeout kills everything it started, with
//! the API keys removed from its environment, and its output read by threads into bounded
//! buffers. Unlike the bash tool it gets one JSON object on stdin, and its stdout and stderr
//! stay apart: stderr is the reason a blocking hook gives, stdout what a PostToolUse hook adds.
//! What a hook leaves running outside its group (`setsid daemon &`) is found by the bash tool's
//! mark and killed when the hook ends (chapter 3's reaper): a hook cannot plant a process that
//! outlives it.

use crate::ch02_loop::interrupted;
use crate::ch03_tools::reaper::{MARK_VARIABLE, kill_escaped, new_mark};
use crate::ch03_tools::shell::{spawn_in_session, terminate_group, writers_gone};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

/// At most this much of each stream is kept; the rest is read and dropped.
pub(crate) const CAPTURE_BYTES: usize = 16 * 1024;
/// After the command exits, how long its pipes may stay open (a daemon holding them).
const PIPE_GRACE: Duration = Duration::from_secs(1);

/// How one hook command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    /// The exit code; `None` when it was killed (timeout, Ctrl+C) or could not start.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// Why it has no code, when it has none: `timed out after 30 s`, `could not start: …`.
    pub failure: Option<String>,
}

// ANCHOR: run_hook
/// Runs `command` in `root` with `input` on its stdin, for at most `timeout`.
pub(crate) fn run_hook(root: &std::path::Path, command: &str, input: &[u8], timeout: Duration) -> Ran {
    let mark = new_mark();
    let mut child = match spawn(root, command, &mark) {
        Ok(child) => child,
        Err(error) => return failed(format!("could not start: {error}")),
    };
    let group = child.id() as i32;
    let mut stdin = child.stdin.take();
    let input = input.to_vec();
    // A hook that never reads its stdin must not block us: the write has a thread of its own.
    thread::spawn(move || stdin.as_mut().map(|pipe| pipe.write_all(&input)));
    let stdout = read_bounded(child.stdout.take());
    let stderr = read_bounded(child.stderr.take());
    // ANCHOR_END: run_hook
    // ANCHOR: run_hook_wait
    let deadline = Instant::now() + timeout;
    let failure = loop {
        match child.try_wait() {
            Ok(Some(_)) => break None,
            Ok(None) if interrupted() => break Some("interrupted".to_string()),
            Ok(None) if Instant::now() >= deadline => {
                break Some(format!("timed out after {} s", timeout.as_secs()));
            }
            Ok(None) => thread::sleep(Duration::from_millis(5)),
            Err(error) => break Some(format!("could not wait: {error}")),
        }
    };
    let code = match &failure {
        None => child.wait().ok().and_then(|status| status.code()),
        Some(_) => None,
    };
    // Whatever it left running (or the whole group, when it timed out) goes now, and so does
    // what left the group.
    terminate_group(group, &mut child);
    kill_escaped(&mark, group);
    Ran { code, stdout: collect(stdout), stderr: collect(stderr), failure }
}
// ANCHOR_END: run_hook_wait

fn spawn(root: &std::path::Path, command: &str, mark: &str) -> io::Result<Child> {
    spawn_in_session(root, command, |hook| {
        hook.env(MARK_VARIABLE, mark).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        Ok(())
    })
}

fn failed(failure: String) -> Ran {
    Ran { code: None, stdout: String::new(), stderr: String::new(), failure: Some(failure) }
}

/// A pipe read on a thread (see [`read_bounded`]), and a second handle on it, never read, that
/// tells whether anything still holds its write end.
struct Reading {
    pieces: mpsc::Receiver<Vec<u8>>,
    watch: Option<OwnedFd>,
}

/// Reads a pipe on a thread and hands each piece over as it comes, up to [`CAPTURE_BYTES`];
/// the rest is read and dropped. Pieces, not the whole at the end: the pipe's end can come
/// late (a process the hook left outside its group, or a child that another thread forked and
/// that holds a copy until its `exec`), and what the hook said before that must not be lost
/// with the wait: a blocking hook's reason, or what a `PostToolUse` hook adds.
fn read_bounded(pipe: Option<impl Read + AsFd + Send + 'static>) -> Reading {
    let (sender, pieces) = mpsc::channel();
    let watch = pipe.as_ref().and_then(|pipe| pipe.as_fd().try_clone_to_owned().ok());
    if let Some(mut pipe) = pipe {
        thread::spawn(move || {
            let mut buffer = [0u8; 8192];
            let mut room = CAPTURE_BYTES;
            loop {
                match pipe.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(read) if room > 0 => {
                        let kept = read.min(room);
                        room -= kept;
                        if sender.send(buffer[..kept].to_vec()).is_err() {
                            break;
                        }
                    }
                    Ok(_) => {}
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        });
    }
    Reading { pieces, watch }
}

/// What arrived by the pipe's end, or by the end of the grace if something still holds the
/// pipe open. When nothing does, the reader is only behind (a loaded machine), and is waited
/// for: a grace alone lost what the hook said when 64 test threads kept the reader waiting.
fn collect(reading: Reading) -> String {
    let deadline = Instant::now() + PIPE_GRACE;
    let mut bytes = Vec::new();
    loop {
        match reading.pieces.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(piece) => bytes.extend(piece),
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                if reading.watch.as_ref().is_some_and(writers_gone) {
                    bytes.extend(reading.pieces.iter().flatten());
                }
                break;
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}
