//! `mini-agent serve` (chapter 21), the real binary over real TCP: the same sessions as the
//! terminal, the `--json` events as SSE, approvals over HTTP, Ctrl+C and SIGTERM, and what an
//! attacker tries (no token, a wrong one, a rebinding `Host`, a foreign `Origin`, a body over
//! 1 MiB, a slow request, a thousand idle connections, a token read from a tool's shell).
//! Tests wait for what they can observe (a line printed, a state the API reports), never for a
//! time.

use crate::binary_run::{Workspace, agent_command, args, drain, run_binary};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest a test waits for the service to do something it will do.
const PATIENCE: Duration = Duration::from_secs(60);

/// A running `mini-agent serve` in a fresh workspace.
struct Served {
    child: Child,
    dir: Workspace,
    port: u16,
    token: String,
    stderr: Option<JoinHandle<String>>,
}

impl Served {
    fn start(flags: &[&str]) -> Served {
        Served::start_in(Workspace::new("serve"), flags, &[])
    }

    /// Starts the binary in `dir` and reads the URL it prints first.
    fn start_in(dir: Workspace, flags: &[&str], env: &[(&str, &str)]) -> Served {
        let mut command = agent_command(dir.path());
        command.arg("serve").args(["--port", "0"]).args(flags).env("HOME", dir.path());
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("start mini-agent serve");
        let stderr = Some(drain(child.stderr.take().expect("stderr is piped")));
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout is piped"))
            .read_line(&mut line)
            .expect("read the URL");
        let url = line.trim().to_string();
        let rest =
            url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("printed {url:?}, not a URL"));
        let (port, query) = rest.split_once('/').expect("a path after the port");
        let token = query.strip_prefix("?token=").unwrap_or_default().to_string();
        Served { child, dir, port: port.parse().expect("a port"), token, stderr }
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A request with the token and the right `Host`, plus `extra` header lines.
    fn raw(&self, method: &str, path: &str, body: &str, extra: &str) -> (u16, String) {
        let token = &self.token;
        let text = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            self.address(),
            body.len()
        );
        send(&self.address(), text.as_bytes())
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let body = body.map(|body| body.to_string()).unwrap_or_default();
        let (status, text) = self.raw(method, path, &body, "");
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    fn new_session(&self) -> String {
        let (status, body) = self.call("POST", "/sessions", None);
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().expect("an id").to_string()
    }

    /// Asks the API until `done` says yes.
    fn until(&self, what: &str, mut done: impl FnMut(&Served) -> bool) {
        let started = Instant::now();
        while !done(self) {
            assert!(started.elapsed() < PATIENCE, "never happened: {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The approval a session's turn waits on, once there is one.
    fn waiting_call(&self, id: &str) -> Value {
        let mut found = Value::Null;
        self.until("a call waits for approval", |served| {
            found = served.call("GET", &format!("/sessions/{id}/approvals"), None).1["approvals"][0].clone();
            !found.is_null()
        });
        found
    }

    /// Sends `signal` and returns the exit code and what the service said on stderr.
    fn stop(&mut self, signal: i32) -> (Option<i32>, String) {
        // SAFETY: kill with our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, signal) };
        let status = self.child.wait().expect("wait for mini-agent serve");
        let stderr = self.stderr.take().map(|thread| thread.join().unwrap_or_default()).unwrap_or_default();
        (status.code(), stderr)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes `raw` and reads the whole answer (the service closes each connection).
fn send(address: &str, raw: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.write_all(raw).expect("send");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (head.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0), body.to_string())
}

/// The `(id, type, data)` of each SSE event.
fn events(body: &str) -> Vec<(Option<u64>, String, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let field =
                |name: &str| block.lines().find_map(|line| line.strip_prefix(name)).map(str::to_string);
            let data = serde_json::from_str(&field("data: ")?).expect("data is JSON");
            Some((field("id: ").and_then(|id| id.parse().ok()), field("event: ")?, data))
        })
        .collect()
}

#[test]
fn a_session_over_http_is_a_session_of_the_terminal_and_the_other_way_round() {
    let dir = Workspace::new("serve-sessions");
    let made = run_binary(dir.path(), &args(&["--demo", "-p", "list files"]), &[], PATIENCE);
    assert_eq!(made.code, Some(0), "{}", made.describe());
    let served = Served::start_in(dir, &["--demo", "--allow-write"], &[]);
    let (_, listed) = served.call("GET", "/sessions", None);
    let terminal_id =
        listed["sessions"][0]["id"].as_str().expect("the terminal's session is listed").to_string();
    assert_eq!(listed["sessions"][0]["prompt"], "list files");
    // The terminal's session goes on over HTTP.
    let path = format!("/sessions/{terminal_id}/messages");
    let (status, answer) = served.call("POST", &path, Some(json!({"message": "create a.txt containing a"})));
    assert_eq!((status, &answer["code"]), (200, &json!(0)), "{answer}");
    assert_eq!(std::fs::read_to_string(served.dir.path().join("a.txt")).unwrap(), "a");
    // A session made over HTTP is listed by the terminal, and goes on there (-r) while the
    // service runs: between turns its journal is free.
    let id = served.new_session();
    served.call("POST", &format!("/sessions/{id}/messages"), Some(json!({"message": "read a.txt"})));
    let listing = run_binary(served.dir.path(), &args(&["sessions"]), &[], PATIENCE);
    assert!(listing.stdout.contains(&id) && listing.stdout.contains(&terminal_id), "{}", listing.describe());
    let resumed =
        run_binary(served.dir.path(), &args(&["--demo", "-r", &id, "-p", "list files"]), &[], PATIENCE);
    assert_eq!(resumed.code, Some(0), "{}", resumed.describe());
    let (_, session) = served.call("GET", &format!("/sessions/{id}"), None);
    let said: Vec<&str> = session["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["type"] == "user")
        .map(|event| event["text"].as_str().unwrap())
        .collect();
    assert_eq!(said, ["read a.txt", "list files"], "{session}");
}

/// A session a terminal holds (`mini-agent -r ID`, its journal locked) is refused with 409 and
/// what to do, and nothing is recorded; once the terminal quits, the same message goes through.
#[test]
fn a_message_for_a_session_a_terminal_holds_is_a_409_and_records_nothing() {
    let served = Served::start(&["--demo"]);
    let id = served.new_session();
    let journal = served.dir.path().join(format!(".mini_agent/sessions/{id}.jsonl"));
    let mut terminal = agent_command(served.dir.path());
    terminal.args(["--demo", "-r", &id]).env("HOME", served.dir.path());
    terminal.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut terminal = terminal.spawn().expect("start mini-agent -r");
    let mut stderr = BufReader::new(terminal.stderr.take().expect("stderr is piped"));
    // The banner comes once the journal is open, and locked.
    let mut line = String::new();
    while !line.contains("resumed session") {
        line.clear();
        assert!(stderr.read_line(&mut line).expect("read the banner") > 0, "mini-agent -r ended");
    }
    // What the terminal recorded as it opened the session (its `sandbox` record) is there now.
    let before = std::fs::read(&journal).expect("the session's journal");
    let path = format!("/sessions/{id}/messages");
    let (status, body) = served.call("POST", &path, Some(json!({"message": "list files"})));
    let expected = format!(
        "session {id} is open in another process (pid {}): a terminal's mini-agent -r, or another \
         mini-agent serve; nothing was recorded: send the message again once it is closed there, or \
         send it to another session (POST /sessions starts one)",
        terminal.id()
    );
    assert_eq!((status, body), (409, json!({"error": expected})));
    // Nor can it be deleted from under the terminal.
    let (status, body) = served.call("DELETE", &format!("/sessions/{id}"), None);
    let in_use = format!(
        "session {id} is in use by another mini-agent process (pid {}); finish or quit that one first",
        terminal.id()
    );
    assert_eq!((status, body), (409, json!({"error": in_use})));
    assert_eq!(std::fs::read(&journal).expect("the journal"), before, "nothing was recorded");
    let (_, session) = served.call("GET", &format!("/sessions/{id}"), None);
    assert_eq!(session["activity"], "idle", "{session}");
    // The terminal quits; the message goes through.
    drop(terminal.stdin.take());
    assert!(terminal.wait().expect("wait for mini-agent -r").success());
    let (status, body) = served.call("POST", &path, Some(json!({"message": "list files"})));
    assert_eq!((status, &body["code"]), (200, &json!(0)), "{body}");
}

/// A journal too damaged to open (a torn middle) is still the person's to delete.
#[test]
fn a_damaged_session_can_be_deleted() {
    let served = Served::start(&["--demo"]);
    let id = served.new_session();
    let journal = served.dir.path().join(format!(".mini_agent/sessions/{id}.jsonl"));
    let mut text = std::fs::read_to_string(&journal).expect("the session's journal");
    text.push_str("{not a record\n{\"seq\": 99}\n");
    std::fs::write(&journal, text).expect("damage the journal");
    let (status, _) = served.call("GET", &format!("/sessions/{id}"), None);
    assert_ne!(status, 200, "a damaged journal does not read as a session");
    let (status, body) = served.call("DELETE", &format!("/sessions/{id}"), None);
    assert_eq!((status, body), (200, json!({"deleted": id})));
    assert!(!journal.exists(), "the journal is gone");
}

#[test]
fn the_stream_sends_the_json_events_of_p() {
    let served = Served::start(&["--demo", "--allow-write"]);
    let id = served.new_session();
    let body = json!({"message": "create b.txt containing b"}).to_string();
    let (status, text) = served.raw("POST", &format!("/sessions/{id}/messages/stream"), &body, "");
    assert_eq!(status, 200);
    let streamed: Vec<String> = events(&text).into_iter().map(|(_, kind, _)| kind).collect();
    let dir = Workspace::new("serve-json");
    let printed = run_binary(
        dir.path(),
        &args(&["--demo", "--allow-write", "--json", "-p", "create b.txt containing b"]),
        &[],
        PATIENCE,
    );
    let json_types: Vec<String> = printed
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(streamed, json_types, "the SSE events are --json's");
    // The `session` event has --json's fields (one function makes both), and the turn's message.
    let keys = |event: &Value| {
        let mut keys: Vec<String> = event.as_object().expect("an object").keys().cloned().collect();
        keys.sort();
        keys
    };
    let first_line = printed.stdout.lines().next().unwrap_or_default();
    let mut printed_session = serde_json::from_str::<Value>(first_line).expect("JSON");
    printed_session["message"] = json!("create b.txt containing b");
    let session = &events(&text)[0].2;
    assert_eq!(keys(session), keys(&printed_session));
    assert_eq!(session["recorded"], true, "a served session is always recorded");
    let ids: Vec<u64> = events(&text).iter().map(|(id, ..)| id.expect("every event has an id")).collect();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
    // Resumed after the third event: the rest, and only the rest.
    let (_, resumed) =
        served.raw("GET", &format!("/sessions/{id}/events"), "", &format!("Last-Event-ID: {}\r\n", ids[2]));
    let resumed_ids: Vec<u64> = events(&resumed).iter().filter_map(|(id, ..)| *id).collect();
    assert_eq!(resumed_ids, ids[3..]);
}

/// The console's question names where a command runs (chapter 20), as the terminal's does;
/// `serve` takes the sandbox's flags as `-p` does, and says the sandbox once as it starts.
#[test]
fn a_commands_question_names_the_sandbox_and_serve_takes_its_flags() {
    for (flags, runs_in, said) in [
        (&["--demo"][..], "bash wants to run: echo hi (sandbox: workspace", "mini-agent: sandbox workspace"),
        (
            &["--demo", "--sandbox", "off"][..],
            "bash wants to run: echo hi (no sandbox: --sandbox off)",
            "mini-agent: sandbox off: bash and verify commands run with all your rights",
        ),
    ] {
        let mut served = Served::start(flags);
        let id = served.new_session();
        let (address, token) = (served.address(), served.token.clone());
        let path = format!("/sessions/{id}/messages");
        let sent = std::thread::spawn(move || {
            let body = json!({"message": "run echo hi"}).to_string();
            let text = format!(
                "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            send(&address, text.as_bytes())
        });
        let waiting = served.waiting_call(&id);
        let question = waiting["question"].as_str().unwrap_or_default();
        assert!(question.starts_with(runs_in), "{flags:?}: {waiting}");
        let call_id = waiting["call_id"].as_str().unwrap();
        let decision = Some(json!({"decision": "deny"}));
        let (status, _) = served.call("POST", &format!("/sessions/{id}/approvals/{call_id}"), decision);
        assert_eq!(status, 200);
        assert_eq!(sent.join().unwrap().0, 200);
        let (_, stderr) = served.stop(libc::SIGTERM);
        assert_eq!(stderr.lines().filter(|line| line.starts_with(said)).count(), 1, "{stderr}");
    }
}

#[test]
fn a_call_waits_for_approval_over_http_and_runs_when_allowed() {
    let served = Served::start(&["--demo"]);
    let id = served.new_session();
    let (address, token) = (served.address(), served.token.clone());
    let path = format!("/sessions/{id}/messages");
    let sent = std::thread::spawn(move || {
        let body = json!({"message": "create c.txt containing c"}).to_string();
        let text = format!(
            "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        send(&address, text.as_bytes())
    });
    let waiting = served.waiting_call(&id);
    assert_eq!(waiting["question"], "write_file wants to create c.txt (+1 −0)", "{waiting}");
    let diff = waiting["diff"].as_str().expect("a write carries its diff");
    assert!(diff.starts_with("--- /dev/null\n+++ b/c.txt\n") && diff.contains("\n+c\n"), "{diff}");
    assert!(!served.dir.path().join("c.txt").exists(), "written before it was allowed");
    let call_id = waiting["call_id"].as_str().unwrap();
    let (status, _) = served.call(
        "POST",
        &format!("/sessions/{id}/approvals/{call_id}"),
        Some(json!({"decision": "allow"})),
    );
    assert_eq!(status, 200);
    let (status, answer) = sent.join().unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(std::fs::read_to_string(served.dir.path().join("c.txt")).unwrap(), "c");
}

#[test]
fn every_request_needs_the_token_the_right_host_and_no_foreign_origin() {
    let served = Served::start(&["--demo"]);
    let address = served.address();
    let bare = format!("GET /sessions HTTP/1.1\r\nHost: {address}\r\n\r\n");
    assert_eq!(send(&address, bare.as_bytes()).0, 401);
    let wrong = format!(
        "GET /sessions HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}0\r\n\r\n",
        served.token
    );
    assert_eq!(send(&address, wrong.as_bytes()).0, 401);
    let rebound = served.raw("GET", "/sessions", "", "").0;
    assert_eq!(rebound, 200);
    let evil_host = format!(
        "GET /sessions HTTP/1.1\r\nHost: evil.example:{}\r\nAuthorization: Bearer {}\r\n\r\n",
        served.port, served.token
    );
    assert_eq!(send(&address, evil_host.as_bytes()).0, 403);
    assert_eq!(served.raw("POST", "/sessions", "", "Origin: http://evil.example\r\n").0, 403);
    let sessions = served.dir.path().join(".mini_agent/sessions");
    let before = std::fs::read_dir(&sessions).map_or(0, |dir| dir.count());
    let big = "x".repeat(1024 * 1024 + 1);
    let (status, said) = served.raw("POST", "/sessions", &big, "");
    assert_eq!(status, 413, "{said}");
    let (status, _) = served.raw("POST", "/sessions", "{\"root\": \"..\"}", "");
    assert_eq!(status, 400);
    assert_eq!(std::fs::read_dir(&sessions).map_or(0, |dir| dir.count()), before, "a refused request wrote");
}

#[test]
fn the_token_is_never_shown_to_the_tools_nor_recorded() {
    let token = "a-token-chosen-by-the-user-1234";
    let dir = Workspace::new("serve-token");
    let mut served =
        Served::start_in(dir, &["--demo", "--allow-shell"], &[("MINI_AGENT_SERVE_TOKEN", token)]);
    assert_eq!(served.token, "$MINI_AGENT_SERVE_TOKEN", "the URL names the variable, not its value");
    served.token = token.to_string();
    let id = served.new_session();
    let (_, answer) =
        served.call("POST", &format!("/sessions/{id}/messages"), Some(json!({"message": "run env"})));
    assert_eq!(answer["code"], 0, "{answer}");
    let journal =
        std::fs::read_to_string(served.dir.path().join(format!(".mini_agent/sessions/{id}.jsonl"))).unwrap();
    assert!(journal.contains("PATH="), "env ran: {journal}");
    assert!(!journal.contains(token), "the token reached a tool");
}

#[test]
fn a_bind_other_machines_can_reach_needs_a_token_the_user_set() {
    let dir = Workspace::new("serve-bind");
    let run = run_binary(
        dir.path(),
        &args(&["serve", "--demo", "--host", "0.0.0.0", "--port", "0"]),
        &[],
        PATIENCE,
    );
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert!(run.stderr.contains("MINI_AGENT_SERVE_TOKEN"), "{}", run.describe());
}

/// A start serve refuses: its flags, its environment, what it says, and whether it is refused
/// before anything is built.
type Refused<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str, bool);

#[test]
fn a_refused_start_builds_nothing_and_leaves_nothing_behind() {
    // Serve's own flags and token are checked before the sandbox is built or the directory
    // touched: one line, exit 1, no sandbox line, no `.mini_agent/`, and the private TMPDIR
    // (made in this test's own TMPDIR, so another process's cannot be mistaken for it) gone.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("hold a port");
    let taken_port = taken.local_addr().expect("its address").port().to_string();
    let cases: [Refused; 5] = [
        (&["--port", "abc"], &[], "mini-agent: --port expects a number from 0 to 65535, got 'abc'", true),
        (
            &["--max-running", "0"],
            &[],
            "mini-agent: --max-running expects a whole number from 1 to 256",
            true,
        ),
        (
            &[],
            &[("MINI_AGENT_SERVE_TOKEN", "short")],
            "mini-agent: MINI_AGENT_SERVE_TOKEN must be at least 16",
            true,
        ),
        (
            &["--host", "0.0.0.0"],
            &[],
            "mini-agent: refusing to listen on 0.0.0.0, which other machines",
            true,
        ),
        // Refused once the sandbox is built: the port is taken.
        (&["--port", &taken_port], &[], "the port is in use", false),
    ];
    for (flags, env, said, before_anything) in cases {
        let dir = Workspace::new("serve-refused");
        let temp = Workspace::new("serve-refused-tmp");
        let mut env = env.to_vec();
        env.push(("TMPDIR", temp.path().to_str().expect("a UTF-8 path")));
        let run = run_binary(dir.path(), &args(&[&["serve", "--demo"], flags].concat()), &env, PATIENCE);
        let what = format!("{flags:?} {env:?}: {}", run.describe());
        assert_eq!(run.code, Some(1), "{what}");
        assert_eq!(run.stdout, "", "no URL: {what}");
        assert!(run.stderr.contains(said), "{what}");
        let left: Vec<_> =
            std::fs::read_dir(temp.path()).expect("list TMPDIR").flatten().map(|e| e.path()).collect();
        assert!(left.is_empty(), "the private TMPDIR is removed, but {left:?} is left: {what}");
        if before_anything {
            assert_eq!(run.stderr.lines().count(), 1, "one line, no sandbox line: {what}");
            assert!(!dir.path().join(".mini_agent").exists(), ".mini_agent/ was made: {what}");
        }
    }
    drop(taken);
}

#[test]
fn slow_and_silent_clients_do_not_block_the_others() {
    raise_descriptor_limit(4096);
    let served = Served::start(&["--demo"]);
    let address = served.address();
    // A slow-loris: a head that never ends, a byte at a time.
    let mut slow = TcpStream::connect(&address).unwrap();
    slow.write_all(b"POST /sessions HTTP/1.1\r\nHost: ").unwrap();
    // A thousand connections that say nothing.
    let idle: Vec<TcpStream> = (0..1000).filter_map(|_| TcpStream::connect(&address).ok()).collect();
    assert_eq!(idle.len(), 1000, "could not open 1,000 connections");
    slow.write_all(b"1").unwrap();
    let started = Instant::now();
    let (status, body) = served.call("GET", "/healthz", None);
    assert_eq!(status, 200, "{body}");
    let id = served.new_session();
    let (_, answer) =
        served.call("POST", &format!("/sessions/{id}/messages"), Some(json!({"message": "list files"})));
    assert_eq!(answer["code"], 0, "{answer}");
    eprintln!("with 1,000 idle connections and a slow one: healthz and a turn in {:?}", started.elapsed());
    drop(idle);
}

#[test]
fn sigterm_interrupts_the_running_turns_records_it_and_exits_143() {
    let mut served = Served::start(&["--demo", "--allow-shell"]);
    let id = served.new_session();
    let (address, token) = (served.address(), served.token.clone());
    let path = format!("/sessions/{id}/messages");
    let marker = format!("{}", 31_000 + std::process::id() % 1000);
    let message = format!("run sleep {marker}");
    let sent = std::thread::spawn(move || {
        let body = json!({"message": message}).to_string();
        let text = format!(
            "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        send(&address, text.as_bytes())
    });
    served.until("the command runs", |served| {
        let (_, session) = served.call("GET", &format!("/sessions/{id}"), None);
        session["transcript"]
            .as_array()
            .is_some_and(|events| events.iter().any(|event| event["type"] == "tool_started"))
    });
    let (code, stderr) = served.stop(libc::SIGTERM);
    assert_eq!(code, Some(143), "{stderr}");
    let (status, answer) = sent.join().unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(serde_json::from_str::<Value>(&answer).unwrap()["code"], 130);
    let status = run_binary(served.dir.path(), &args(&["-r", &id, "--status"]), &[], PATIENCE);
    assert!(status.stdout.contains("interrupted"), "{}", status.describe());
    let left = std::process::Command::new("pgrep").args(["-f", &format!("sleep {marker}")]).output().unwrap();
    assert!(
        left.stdout.is_empty(),
        "the command outlived the service: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

#[test]
fn past_max_running_a_turn_waits_and_says_so() {
    let served = Served::start(&["--demo", "--max-running", "1"]);
    let (a, b) = (served.new_session(), served.new_session());
    let (address, token) = (served.address(), served.token.clone());
    let send_in = |id: &str, message: &str, stream: bool| {
        let (address, token) = (address.clone(), token.clone());
        let path = format!("/sessions/{id}/messages{}", if stream { "/stream" } else { "" });
        let body = json!({"message": message}).to_string();
        std::thread::spawn(move || {
            let text = format!(
                "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            send(&address, text.as_bytes())
        })
    };
    let first = send_in(&a, "run sleep 600", false);
    // While the question about `sleep` is up, a's turn holds no slot; allowed, it takes it.
    let call = served.waiting_call(&a);
    let call_id = call["call_id"].as_str().unwrap().to_string();
    served.call("POST", &format!("/sessions/{a}/approvals/{call_id}"), Some(json!({"decision": "allow"})));
    served.until("a runs its command", |served| served.call("GET", "/healthz", None).1["running"] == 1);
    let second = send_in(&b, "list files", true);
    served.until("b waits for the slot", |served| {
        served.call("GET", &format!("/sessions/{b}"), None).1["activity"] == "waiting"
    });
    served.call("POST", &format!("/sessions/{a}/cancel"), None);
    let streamed = events(&second.join().unwrap().1);
    assert_eq!(streamed[0].2["kind"], "waiting", "{streamed:?}");
    assert_eq!(streamed.last().unwrap().2["code"], 0);
    assert_eq!(serde_json::from_str::<Value>(&first.join().unwrap().1).unwrap()["code"], 130);
}

/// Lets this process hold `wanted` descriptors, if the hard limit allows (the 1,000 idle
/// connections are this process's too).
fn raise_descriptor_limit(wanted: u64) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < wanted {
            limit.rlim_cur = wanted.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
