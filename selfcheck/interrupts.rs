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
use crate::pty::{SCREEN_TIMEOUT, Terminal};
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

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
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--allow-shell", "--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("sleep for a while\r");
    wait_until("the sleep to start", || !processes_with(marker).is_empty());
    let command_group = processes_with(marker)[0].group;
    let agent_group = process_info(terminal.pid()).expect("the agent runs").group;
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
    // The sleep would have lasted 31 s: the prompt back with its group gone is the Ctrl+C.
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
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("think hard\r");
    wait_until("the request", || server.requests().len() == 1);

    let pressed = Instant::now();
    terminal.type_keys("\x03");
    terminal.wait_for("interrupted");
    let prompt_back = terminal.wait_for("> ");
    let took = prompt_back.duration_since(pressed);
    // The server never answers: the prompt back at all is the Ctrl+C (the time is a figure).
    eprintln!("interrupt to prompt during a model request: {} ms (bar 500 ms)", took.as_millis());

    terminal.type_keys("try again\r");
    terminal.wait_for("answered this time");
    terminal.exit();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent: Vec<Value> = messages(&requests[1]).iter().map(|m| m["content"].clone()).collect();
    // The model reads that its turn was cut short (issue 22), not two user messages in a row.
    let mark = json!(mini_agent::ch02_loop::INTERRUPTED_MARK);
    assert_eq!(sent[1..], [json!("think hard"), mark, json!("try again")]);
}

#[test]
fn ctrl_c_during_a_slow_stream_brings_the_prompt_back() {
    // On a terminal a streamed reply is shown a complete line at a time (rendered Markdown).
    let words =
        ["Once upon a time,\n", "upon ", "a ", "time ", "there ", "was ", "a ", "very ", "slow ", "server."];
    let chunks = words
        .iter()
        .map(|word| json!({"choices": [{"index": 0, "delta": {"content": word}}]}).to_string())
        .collect();
    let server = ScriptedServer::scripted(vec![
        Step::Stream { chunks, delay_ms: 700, finish: true },
        text("short answer"),
    ])
    .expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--stream", "--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("tell a story\r");
    terminal.wait_for("Once upon");

    let pressed = Instant::now();
    terminal.type_keys("\x03");
    terminal.wait_for("interrupted");
    let prompt_back = terminal.wait_for("> ");
    let took = prompt_back.duration_since(pressed);
    // The stream's last word comes 7 s in: the prompt back without it is the Ctrl+C.
    eprintln!("interrupt to prompt during a slow stream: {} ms (bar 500 ms)", took.as_millis());
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
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--allow-shell", "--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("wait for the flag\r");
    wait_until("the command to start", || !processes_with("27.1828").is_empty());
    terminal.type_line_and_wait_until_read("and also mention the weather");
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
                for varying in ["ts", "id", "root", "created", "endpoint"] {
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
    let typed_workspace = TempDir::new("selfcheck");
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
    assert_eq!(typed.len(), 13, "{typed:#?}");
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
        let workspace = TempDir::new("selfcheck");
        let mut terminal = Terminal::start_with_term(workspace.path(), &["--base-url", &server.url], term);
        terminal.wait_for("> ");
        terminal.type_keys("first question\r");
        wait_until("the request", || server.requests().len() == 1);
        // The agent has the line before Ctrl+C (the terminal holds nothing unread).
        terminal.type_line_and_wait_until_read("typed while waiting");
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
