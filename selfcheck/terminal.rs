//! The REPL on a real pseudo-terminal, typed as a person would: a permission question
//! during a turn is answered from the keyboard, `n` with a reason, `a` for the session.

use crate::harness::{TempDir, messages, text};
use mini_agent::ch13_scripted_server::{ScriptedServer, Step};
use serde_json::json;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

unsafe extern "C" {
    fn openpty(
        master: *mut i32,
        slave: *mut i32,
        name: *mut std::ffi::c_char,
        termios: *const std::ffi::c_void,
        size: *const std::ffi::c_void,
    ) -> i32;
}

/// A pseudo-terminal: the test holds the master side, the agent gets the slave as its
/// stdin, stdout and stderr.
struct Pty {
    master: File,
    slave: OwnedFd,
}

fn open_pty() -> Pty {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: two valid out-pointers; null name, termios and size are allowed.
    let result =
        unsafe { openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(result, 0, "openpty failed");
    // SAFETY: openpty just returned these two descriptors, owned by nobody else.
    unsafe { Pty { master: File::from_raw_fd(master), slave: OwnedFd::from_raw_fd(slave) } }
}

/// Everything the terminal showed, collected by a thread.
struct Screen(Arc<Mutex<String>>);

impl Screen {
    fn wait_for(&self, needle: &str, after: usize) -> usize {
        let started = Instant::now();
        loop {
            let text = self.0.lock().expect("screen lock").clone();
            if let Some(at) = text.get(after..).and_then(|rest| rest.find(needle)) {
                return after + at + needle.len();
            }
            assert!(started.elapsed() < Duration::from_secs(15), "never saw {needle:?} in:\n{text}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[test]
fn permission_questions_are_answered_at_the_terminal() {
    let server = ScriptedServer::scripted(vec![
        Step::tool_calls(&[("write_file", &json!({"path": "a.txt", "content": "one"}).to_string())]),
        text("not written"),
        Step::tool_calls(&[("write_file", &json!({"path": "b.txt", "content": "two"}).to_string())]),
        text("written"),
        Step::tool_calls(&[("write_file", &json!({"path": "c.txt", "content": "three"}).to_string())]),
        text("written again"),
    ])
    .expect("server");
    let workspace = TempDir::new();
    let pty = open_pty();
    let slave = || Stdio::from(pty.slave.try_clone().expect("dup the pty"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_mini-agent"))
        .args(["--base-url", &server.url])
        .current_dir(workspace.path())
        .env_remove("OPENAI_API_KEY")
        .env("NO_COLOR", "1")
        .env("TERM", "dumb")
        .stdin(slave())
        .stdout(slave())
        .stderr(slave())
        .spawn()
        .expect("start mini-agent");
    drop(pty.slave);
    let mut keyboard = pty.master.try_clone().expect("dup the master");
    let shown = Arc::new(Mutex::new(String::new()));
    let (mut master, sink) = (pty.master, shown.clone());
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(count) = master.read(&mut buffer) {
            if count == 0 {
                break;
            }
            sink.lock().expect("screen lock").push_str(&String::from_utf8_lossy(&buffer[..count]));
        }
    });
    let screen = Screen(shown.clone());
    let mut type_line = |line: &str| keyboard.write_all(format!("{line}\r").as_bytes()).expect("type");

    let mut at = screen.wait_for("> ", 0);
    type_line("write a");
    at = screen.wait_for("write_file wants to write 3 bytes to a.txt", at);
    at = screen.wait_for("[n] no: ", at);
    type_line("n");
    at = screen.wait_for("reason for the model", at);
    type_line("keep it empty");
    at = screen.wait_for("not written", at);
    type_line("write b");
    at = screen.wait_for("[n] no: ", at);
    type_line("a");
    at = screen.wait_for("written", at);
    type_line("write c");
    screen.wait_for("written again", at);
    type_line("/exit");
    let status = child.wait().expect("wait for mini-agent");
    assert!(status.success(), "{status:?}\n{}", shown.lock().expect("screen lock"));

    assert_eq!(std::fs::read_to_string(workspace.path().join("a.txt")).ok(), None);
    assert_eq!(std::fs::read_to_string(workspace.path().join("b.txt")).ok().as_deref(), Some("two"));
    assert_eq!(std::fs::read_to_string(workspace.path().join("c.txt")).ok().as_deref(), Some("three"));
    let requests = server.requests();
    let denied = messages(&requests[1]).last().expect("a tool result")["content"].clone();
    assert_eq!(denied, "denied: the user did not allow this write_file call. Their reason: keep it empty");
    assert_eq!(requests.len(), 6, "c.txt was written without a second question");
    let shown = shown.lock().expect("screen lock").clone();
    assert_eq!(shown.matches("allow? ").count(), 2, "{shown}");
    // What was typed at the prompt is remembered, privately; the answers to questions are not.
    let history = workspace.path().join(".mini_agent/history");
    let remembered = std::fs::read_to_string(&history).expect("a history file");
    assert!(remembered.contains("write a") && remembered.contains("write c"), "{remembered}");
    assert!(!remembered.lines().any(|line| line == "keep it empty"), "{remembered}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&history).expect("history").permissions().mode() & 0o777, 0o600);
}
