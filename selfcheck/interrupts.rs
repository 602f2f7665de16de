//! Ctrl+C and type-ahead on a real pseudo-terminal, pressed and typed as a person would.
//!
//! The agent gets the terminal as its *controlling* terminal (a new session, `TIOCSCTTY`),
//! so the byte `^C` typed on the keyboard side becomes a SIGINT sent by the kernel's line
//! discipline to the foreground process group, exactly as in a terminal window — not a
//! `kill` from the test. Then: Ctrl+C during a long `sleep` brings the prompt back and
//! leaves no process of the command's group alive; Ctrl+C during a model reply that never
//! comes, or during a slow stream, brings the prompt back (the time is printed against the
//! 0.5 s bar); a line typed while a tool runs reaches the next request; and a REPL run
//! typed at the terminal leaves the same session file as the same lines piped in.

use crate::harness::{TempDir, Test, call, messages, records, session_files, text};
use mini_agent::ch13_scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
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
    fn setsid() -> i32;
    fn ioctl(fd: i32, request: std::ffi::c_ulong, ...) -> i32;
}

/// Linux's "make this terminal my controlling terminal".
const TIOCSCTTY: std::ffi::c_ulong = 0x540E;
/// How long a wait for the screen may take before the test fails (a hang, not a slow run).
const SCREEN_TIMEOUT: Duration = Duration::from_secs(20);

/// The REPL running on a pseudo-terminal: the test types on the master side and reads
/// what the terminal shows.
struct Terminal {
    keyboard: File,
    shown: Arc<Mutex<String>>,
    /// How far the screen has been read by `wait_for`.
    seen: usize,
    child: Child,
}

impl Terminal {
    fn start(root: &Path, args: &[&str]) -> Terminal {
        Terminal::start_with_term(root, args, "dumb")
    }

    /// `term` is `TERM`: "dumb" makes the line editor read plain lines; a real terminal
    /// type gives its raw-mode editing.
    fn start_with_term(root: &Path, args: &[&str], term: &str) -> Terminal {
        let (mut master, mut slave) = (-1, -1);
        // SAFETY: two valid out-pointers; null name, termios and size are allowed.
        let opened = unsafe {
            openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null())
        };
        assert_eq!(opened, 0, "openpty failed");
        // SAFETY: openpty just returned these two descriptors, owned by nobody else.
        let (master, slave) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let slave_io = || Stdio::from(slave.try_clone().expect("dup the pty"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_mini-agent"));
        command
            .args(args)
            .current_dir(root)
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("MODEL_ID")
            .env("MINI_AGENT_REQUEST_MAX_RETRIES", "0")
            .env("NO_COLOR", "1")
            .env("TERM", term)
            .stdin(slave_io())
            .stdout(slave_io())
            .stderr(slave_io());
        // SAFETY: between fork and exec only async-signal-safe calls: setsid and ioctl on
        // fd 0, which is the terminal by then.
        unsafe {
            command.pre_exec(|| {
                if setsid() < 0 || ioctl(0, TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("start mini-agent on the terminal");
        drop(slave);
        let keyboard = master.try_clone().expect("dup the master");
        let shown = Arc::new(Mutex::new(String::new()));
        let (mut screen, sink) = (master, shown.clone());
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // Ends with EIO once the agent (the last holder of the terminal) has exited.
            while let Ok(count) = screen.read(&mut buffer) {
                if count == 0 {
                    break;
                }
                sink.lock().expect("screen lock").push_str(&String::from_utf8_lossy(&buffer[..count]));
            }
        });
        Terminal { keyboard, shown, seen: 0, child }
    }

    fn screen(&self) -> String {
        self.shown.lock().expect("screen lock").clone()
    }

    /// Waits until `needle` appears after what was already seen, and moves past it.
    /// Returns when it was seen.
    fn wait_for(&mut self, needle: &str) -> Instant {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if let Some(at) = screen.get(self.seen..).and_then(|rest| rest.find(needle)) {
                self.seen += at + needle.len();
                return Instant::now();
            }
            assert!(
                started.elapsed() < SCREEN_TIMEOUT,
                "never saw {needle:?} after:\n{}",
                &screen[self.seen..]
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn type_keys(&mut self, keys: &str) {
        self.keyboard.write_all(keys.as_bytes()).expect("type on the terminal");
    }

    /// Types `/exit` at the prompt and expects a clean exit.
    fn exit(mut self) -> String {
        self.type_keys("/exit\r");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for mini-agent") {
                break status;
            }
            if started.elapsed() > SCREEN_TIMEOUT {
                let _ = self.child.kill();
                panic!("mini-agent did not exit after /exit:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(status.success(), "{status:?}\n{}", self.screen());
        self.screen()
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // A failed test must not leave an agent behind; after `exit` this is a no-op.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A process seen in /proc: pid, process group, state letter (R, S, Z…).
struct ProcessInfo {
    pid: u32,
    group: u32,
    state: char,
}

fn process_info(pid: u32) -> Option<ProcessInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp …`; comm may hold spaces, so split after its last ')'.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
    Some(ProcessInfo { pid, state: fields.first()?.chars().next()?, group: fields.get(2)?.parse().ok()? })
}

fn all_processes() -> Vec<ProcessInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(process_info)
        .collect()
}

/// Live (not zombie) processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<ProcessInfo> {
    all_processes()
        .into_iter()
        .filter(|p| p.state != 'Z')
        .filter(|p| {
            std::fs::read(format!("/proc/{}/cmdline", p.pid))
                .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " ").contains(marker))
        })
        .collect()
}

/// Live processes in process group `group`.
fn alive_in_group(group: u32) -> Vec<u32> {
    all_processes().into_iter().filter(|p| p.group == group && p.state != 'Z').map(|p| p.pid).collect()
}

fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < SCREEN_TIMEOUT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn ctrl_c_during_a_long_sleep_kills_its_whole_group_and_brings_the_prompt_back() {
    // A marker no other process on this machine carries, to find the command in /proc.
    let marker = "31.4159";
    let server = ScriptedServer::scripted(vec![
        call("bash", json!({"command": format!("sleep {marker}; echo after > after.txt")})),
        text("still here"),
    ])
    .expect("server");
    let workspace = TempDir::new();
    let mut terminal = Terminal::start(workspace.path(), &["--allow-shell", "--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("sleep for a while\r");
    wait_until("the sleep to start", || !processes_with(marker).is_empty());
    let command_group = processes_with(marker)[0].group;
    let agent_group = process_info(terminal.child.id()).expect("the agent runs").group;
    assert_ne!(command_group, agent_group, "the command runs in its own process group");

    let pressed = Instant::now();
    terminal.type_keys("\x03");
    terminal.wait_for("interrupted");
    let prompt_back = terminal.wait_for("> ");
    let survivors_at_prompt = alive_in_group(command_group);
    eprintln!(
        "interrupt to prompt during a bash sleep: {} ms (bar 500 ms); processes of the group alive at the \
         prompt: {}",
        prompt_back.duration_since(pressed).as_millis(),
        survivors_at_prompt.len()
    );
    assert!(prompt_back.duration_since(pressed) < Duration::from_secs(5));
    assert_eq!(survivors_at_prompt, Vec::<u32>::new(), "the command's group survived Ctrl+C");
    assert!(processes_with(marker).is_empty());

    terminal.type_keys("are you there?\r");
    terminal.wait_for("still here");
    let screen = terminal.exit();
    assert!(!workspace.path().join("after.txt").exists(), "the command went on after Ctrl+C");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{screen}");
    let sent = messages(&requests[1]);
    let result = sent.iter().find(|m| m["role"] == "tool").expect("the sleep's result");
    assert!(result["content"].as_str().is_some_and(|c| c.contains("interrupted")), "{result}");
    assert_eq!(sent.last().expect("a message")["content"], "are you there?");
    let types: Vec<Value> =
        records(&session_files(workspace.path())[0]).iter().map(|r| r["type"].clone()).collect();
    assert!(types.contains(&json!("interrupted")), "{types:?}");
}

#[test]
fn ctrl_c_during_a_model_reply_that_never_comes_brings_the_prompt_back() {
    let server = ScriptedServer::scripted(vec![Step::Hang, text("answered this time")]).expect("server");
    let workspace = TempDir::new();
    let mut terminal = Terminal::start(workspace.path(), &["--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("think hard\r");
    wait_until("the request", || server.requests().len() == 1);

    let pressed = Instant::now();
    terminal.type_keys("\x03");
    terminal.wait_for("interrupted");
    let prompt_back = terminal.wait_for("> ");
    let took = prompt_back.duration_since(pressed);
    eprintln!("interrupt to prompt during a model request: {} ms (bar 500 ms)", took.as_millis());
    assert!(took < Duration::from_secs(5), "{took:?}");

    terminal.type_keys("try again\r");
    terminal.wait_for("answered this time");
    terminal.exit();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent: Vec<Value> = messages(&requests[1]).iter().map(|m| m["content"].clone()).collect();
    assert_eq!(sent[1..], [json!("think hard"), json!("try again")]);
}

#[test]
fn ctrl_c_during_a_slow_stream_brings_the_prompt_back() {
    let words = ["Once ", "upon ", "a ", "time ", "there ", "was ", "a ", "very ", "slow ", "server."];
    let chunks = words
        .iter()
        .map(|word| json!({"choices": [{"index": 0, "delta": {"content": word}}]}).to_string())
        .collect();
    let server = ScriptedServer::scripted(vec![
        Step::Stream { chunks, delay_ms: 700, finish: true },
        text("short answer"),
    ])
    .expect("server");
    let workspace = TempDir::new();
    let mut terminal = Terminal::start(workspace.path(), &["--stream", "--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("tell a story\r");
    terminal.wait_for("Once ");

    let pressed = Instant::now();
    terminal.type_keys("\x03");
    terminal.wait_for("interrupted");
    let prompt_back = terminal.wait_for("> ");
    let took = prompt_back.duration_since(pressed);
    eprintln!("interrupt to prompt during a slow stream: {} ms (bar 500 ms)", took.as_millis());
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(!terminal.screen().contains("server."), "the stream went on after Ctrl+C");

    terminal.type_keys("shorter please\r");
    terminal.wait_for("short answer");
    terminal.exit();
    let types: Vec<Value> =
        records(&session_files(workspace.path())[0]).iter().map(|r| r["type"].clone()).collect();
    assert!(types.contains(&json!("interrupted")), "{types:?}");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_line_typed_while_a_tool_runs_reaches_the_next_request() {
    // The command waits for the test's signal (a file), so the line is typed, and read by
    // the agent, while the turn is certainly still running.
    let server = ScriptedServer::scripted(vec![
        call("bash", json!({"command": "until [ -e go.flag ]; do sleep 0.02; done; echo waited 27.1828"})),
        text("noted both"),
    ])
    .expect("server");
    let workspace = TempDir::new();
    let mut terminal = Terminal::start(workspace.path(), &["--allow-shell", "--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("wait for the flag\r");
    wait_until("the command to start", || !processes_with("27.1828").is_empty());
    terminal.type_keys("and also mention the weather\r");
    // The agent reads typed lines every 50 ms; give it ample time before the turn goes on.
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(workspace.path().join("go.flag"), "").expect("release the command");
    terminal.wait_for("noted both");
    terminal.exit();

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the typed line joined the turn instead of starting another");
    let sent = messages(&requests[1]);
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap_or("?")).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert!(sent[3]["content"].as_str().is_some_and(|c| c.contains("waited 27.1828")), "{}", sent[3]);
    assert_eq!(sent[4]["content"], "and also mention the weather");
    let users: Vec<Value> = records(&session_files(workspace.path())[0])
        .into_iter()
        .filter(|r| r["type"] == "user")
        .map(|r| r["content"].clone())
        .collect();
    assert_eq!(users, [json!("wait for the flag"), json!("and also mention the weather")]);
}

/// The steps and lines of the REPL run that is typed once and piped once.
fn same_run_steps() -> Vec<Step> {
    vec![
        call("list_files", json!({})),
        call("read_file", json!({"path": "notes.txt"})),
        text("The notes say hello."),
        text("Nothing else."),
    ]
}
const SAME_RUN_LINES: [&str; 3] = ["what do the notes say?", "/stats", "anything else?"];

/// A journal's records with what differs between two runs taken out: times, the session
/// id, the workspace path, the creation time.
fn comparable(root: &Path) -> Vec<Value> {
    let files = session_files(root);
    assert_eq!(files.len(), 1, "{files:?}");
    let root_text = root.display().to_string();
    records(&files[0])
        .into_iter()
        .map(|mut record| {
            if let Some(object) = record.as_object_mut() {
                for varying in ["ts", "id", "root", "created"] {
                    if record_field_varies(object, varying) {
                        object.remove(varying);
                    }
                }
            }
            serde_json::from_str(&record.to_string().replace(&root_text, "<root>")).expect("JSON")
        })
        .collect()
}

/// `id` varies only in the session header; a tool call's id is part of what happened.
fn record_field_varies(record: &serde_json::Map<String, Value>, field: &str) -> bool {
    field != "id" || record.get("type").is_some_and(|t| t == "session")
}

#[test]
fn a_repl_run_typed_at_a_terminal_leaves_the_same_session_as_the_same_lines_piped() {
    let server = ScriptedServer::scripted(same_run_steps()).expect("server");
    let typed_workspace = TempDir::new();
    std::fs::write(typed_workspace.path().join("notes.txt"), "hello\n").expect("a file");
    let mut terminal = Terminal::start(typed_workspace.path(), &["--base-url", &server.url]);
    terminal.wait_for("> ");
    for (line, until) in SAME_RUN_LINES.iter().zip(["The notes say hello.", "requests", "Nothing else."]) {
        terminal.type_keys(&format!("{line}\r"));
        terminal.wait_for(until);
        terminal.wait_for("> ");
    }
    terminal.exit();

    let mut script: String = SAME_RUN_LINES.iter().map(|line| format!("{line}\n")).collect();
    script.push_str("/exit\n");
    let piped = Test::new().stdin(&script).file("notes.txt", "hello\n").server(same_run_steps()).run();
    piped.expect_code(0);

    let (typed, piped_records) = (comparable(typed_workspace.path()), comparable(piped.root()));
    assert_eq!(typed.len(), 12, "{typed:#?}");
    assert_eq!(typed, piped_records);
    let sent = |requests: Vec<Value>, root: &Path| {
        requests
            .iter()
            .map(|r| r.to_string().replace(&root.display().to_string(), "<root>"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        sent(server.requests(), typed_workspace.path()),
        sent(piped.requests.clone(), piped.root()),
        "the model was sent the same requests too"
    );
}

/// After Ctrl+C, lines typed during the turn come back at the prompt for a look before
/// they are sent. On a terminal the line editor cannot drive (TERM=dumb) it silently
/// dropped that pre-filled text, so the lines were lost.
#[test]
fn lines_typed_during_an_interrupted_turn_are_not_lost_on_a_dumb_terminal() {
    for term in ["xterm", "dumb"] {
        let server = ScriptedServer::scripted(vec![Step::Hang, text("got it")]).expect("server");
        let workspace = TempDir::new();
        let mut terminal = Terminal::start_with_term(workspace.path(), &["--base-url", &server.url], term);
        terminal.wait_for("> ");
        terminal.type_keys("first question\r");
        wait_until("the request", || server.requests().len() == 1);
        terminal.type_keys("typed while waiting\r");
        // The agent reads typed lines every 50 ms; let it have this one before Ctrl+C.
        std::thread::sleep(Duration::from_millis(300));
        terminal.type_keys("\x03");
        terminal.wait_for("interrupted");
        terminal.wait_for("> ");
        terminal.wait_for("typed while waiting");
        terminal.type_keys(" and more\r");
        terminal.wait_for("got it");
        terminal.exit();
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "TERM={term}");
        let sent = messages(&requests[1]).last().expect("a message")["content"].clone();
        assert_eq!(sent, "typed while waiting and more", "TERM={term}");
    }
}
