//! The service against a double of the agent, over real TCP on 127.0.0.1: the HTTP layer, the
//! guard, the queues, the slots, the approvals and the streams. The double scripts its turns
//! by their message (`hello`, `ask`, `block`, `tools N`, `held`), and a test that needs a turn to be
//! running waits for the double to say it started: no test waits for a time.

use super::backend::{ApprovalRequest, Backend, Decision, TurnEnd};
use super::events::{Hub, MAX_LOG_EVENTS, Sequence};
use super::request::{Progress, parse_head, percent_decode};
use super::response::Refusal;
use super::routes::{Route, resolve};
use super::slots::Slots;
use super::turns::Turn;
use super::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "test-token-0123456789abcdef";

// ---- the double ---------------------------------------------------------------------------

#[derive(Default)]
struct Fake {
    sessions: Mutex<BTreeMap<String, Vec<String>>>,
    tasks: Mutex<Vec<Value>>,
    /// Every call that changes something, in order.
    log: Mutex<Vec<String>>,
    /// Turns started, as "session message".
    started: Mutex<Option<Sender<String>>>,
    /// `block` turns wait until this opens (or they are cancelled).
    gate: Arc<(Mutex<bool>, Condvar)>,
}

impl Fake {
    fn new() -> (Arc<Fake>, Receiver<String>) {
        let (sender, started) = channel();
        let fake = Fake { started: Mutex::new(Some(sender)), ..Fake::default() };
        (Arc::new(fake), started)
    }

    fn open_gate(&self) {
        *self.gate.0.lock().unwrap() = true;
        self.gate.1.notify_all();
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Backend for Fake {
    fn create_session(&self, root: Option<&str>) -> Result<String, Refusal> {
        if root.is_some_and(|root| root.contains("..") || root.starts_with('/')) {
            return Err(Refusal::new(400, "the root must be inside the served directory"));
        }
        let mut sessions = self.sessions.lock().unwrap();
        let id = format!("s{}", sessions.len() + 1);
        sessions.insert(id.clone(), Vec::new());
        self.log.lock().unwrap().push(format!("create {id}"));
        Ok(id)
    }

    fn list_sessions(&self) -> Result<Vec<Value>, Refusal> {
        let sessions = self.sessions.lock().unwrap();
        Ok(sessions.iter().rev().map(|(id, turns)| json!({"id": id, "turns": turns.len()})).collect())
    }

    fn has_session(&self, id: &str) -> bool {
        self.sessions.lock().unwrap().contains_key(id)
    }

    fn session(&self, id: &str) -> Result<Value, Refusal> {
        let sessions = self.sessions.lock().unwrap();
        let turns = sessions.get(id).ok_or_else(|| Refusal::not_found("session"))?;
        let transcript: Vec<Value> = turns.iter().map(|text| json!({"type": "user", "text": text})).collect();
        Ok(json!({"id": id, "transcript": transcript}))
    }

    fn delete_session(&self, id: &str) -> Result<(), Refusal> {
        self.sessions.lock().unwrap().remove(id);
        self.log.lock().unwrap().push(format!("delete {id}"));
        Ok(())
    }

    fn run_turn(&self, id: &str, message: &str, turn: &Turn) -> TurnEnd {
        self.log.lock().unwrap().push(format!("turn {id} {message}"));
        if message == "held" {
            // As for a journal another process holds: the turn cannot start, nothing is kept.
            return TurnEnd::refused(Refusal::new(409, format!("session {id} is open elsewhere")));
        }
        if let Some(turns) = self.sessions.lock().unwrap().get_mut(id) {
            turns.push(message.to_string());
        }
        if let Some(started) = self.started.lock().unwrap().as_ref() {
            let _ = started.send(format!("{id} {message}"));
        }
        turn.emit(json!({"type": "session", "id": id}));
        turn.emit(json!({"type": "request", "messages": 2}));
        let words: Vec<&str> = message.split(' ').collect();
        match words.as_slice() {
            ["ask", ..] => {
                let request = ApprovalRequest {
                    call_id: words.get(1).map_or("call_1", |id| id).into(),
                    tool: "bash".into(),
                    question: "bash wants to run: ls".into(),
                    diff: None,
                };
                match turn.ask(request) {
                    Decision::Allow => TurnEnd::completed("allowed"),
                    Decision::Deny(reason) => TurnEnd::completed(format!("denied: {reason}")),
                }
            }
            ["block"] => {
                let (open, opened) = &*self.gate;
                let mut open = open.lock().unwrap();
                while !*open && !turn.cancelled() {
                    open = opened.wait_timeout(open, Duration::from_millis(5)).unwrap().0;
                }
                if turn.cancelled() {
                    TurnEnd::failed(130, "interrupted")
                } else {
                    TurnEnd::completed("unblocked")
                }
            }
            ["tools", count] => {
                for at in 0..count.parse::<usize>().unwrap() {
                    let id = format!("call_{at}");
                    turn.emit(json!({"type": "tool_started", "id": id, "name": "bash", "arguments": "{}"}));
                    turn.emit(json!({"type": "tool_finished", "id": id, "name": "bash", "status": "ok", "content": "x"}));
                }
                TurnEnd::completed("done")
            }
            _ => {
                turn.emit(json!({"type": "assistant", "text": "hi", "tool_calls": []}));
                TurnEnd::completed("hi")
            }
        }
    }

    fn tasks(&self) -> Result<Value, Refusal> {
        Ok(json!({"tasks": *self.tasks.lock().unwrap()}))
    }

    fn add_task(&self, task: &Value) -> Result<Value, Refusal> {
        let name = task["name"].as_str().ok_or_else(|| Refusal::new(400, "a task needs a name"))?;
        let mut tasks = self.tasks.lock().unwrap();
        let task = json!({"id": (tasks.len() + 1).to_string(), "name": name, "status": "pending"});
        tasks.push(task.clone());
        Ok(task)
    }

    fn reset_task(&self, id: &str) -> Result<Value, Refusal> {
        let mut tasks = self.tasks.lock().unwrap();
        let task =
            tasks.iter_mut().find(|task| task["id"] == id).ok_or_else(|| Refusal::not_found("task"))?;
        task["status"] = json!("pending");
        Ok(task.clone())
    }
}

// ---- a client -----------------------------------------------------------------------------

fn serve(fake: &Arc<Fake>, max_running: usize, limits: Limits) -> Server {
    let settings = Settings {
        address: "127.0.0.1:0".parse().unwrap(),
        max_running,
        token: Token::given(TOKEN).unwrap(),
        limits,
    };
    start(settings, fake.clone()).unwrap()
}

fn server(fake: &Arc<Fake>) -> Server {
    serve(fake, 8, Limits::default())
}

/// Sends `raw` as is and reads the whole answer (every answer closes its connection).
fn raw(address: SocketAddr, raw: &[u8]) -> (u16, String, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.write_all(raw).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

fn request(
    address: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
    extra: &str,
) -> (u16, String, String) {
    let body = body.map(Value::to_string).unwrap_or_default();
    let text = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    raw(address, text.as_bytes())
}

fn call(server: &Server, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let (status, _, body) = request(server.address(), method, path, body.as_ref(), "");
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// `(id, type, data)` of each event of an SSE body.
fn events(body: &str) -> Vec<(Option<u64>, String, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let field =
                |name: &str| block.lines().find_map(|line| line.strip_prefix(name)).map(str::to_string);
            let data = field("data: ")?;
            Some((
                field("id: ").and_then(|id| id.parse().ok()),
                field("event: ")?,
                serde_json::from_str(&data).unwrap(),
            ))
        })
        .collect()
}

/// Sends `message` to session `id` on a thread of its own, for a turn the test will hold up
/// (an approval, a gate); join it for the answer.
fn send_in_background(
    server: &Server,
    id: &str,
    message: &str,
) -> std::thread::JoinHandle<(u16, String, String)> {
    let (address, path, body) =
        (server.address(), format!("/sessions/{id}/messages"), json!({"message": message}));
    std::thread::spawn(move || request(address, "POST", &path, Some(&body), ""))
}

fn new_session(server: &Server) -> String {
    let (status, body) = call(server, "POST", "/sessions", None);
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_string()
}

/// Asks `what` until it is true: waiting for a state change the test cannot be told of.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(120), "never happened: {what}");
        std::thread::yield_now();
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn activity(server: &Server, id: &str) -> (String, u64) {
    let (_, body) = call(server, "GET", &format!("/sessions/{id}"), None);
    (body["activity"].as_str().unwrap_or_default().to_string(), body["queued"].as_u64().unwrap_or(0))
}

// ---- the guard ----------------------------------------------------------------------------

#[test]
fn every_request_needs_the_token() {
    let (fake, _) = Fake::new();
    let server = server(&fake);
    let address = server.address();
    let bare = format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\n\r\n");
    let (status, _, body) = raw(address, bare.as_bytes());
    assert_eq!((status, body.contains("no token")), (401, true), "{body}");
    let wrong = format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}x\r\n\r\n");
    assert_eq!(raw(address, wrong.as_bytes()).0, 401);
    let short = format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer test\r\n\r\n");
    assert_eq!(raw(address, short.as_bytes()).0, 401);
    assert_eq!(
        call(&server, "GET", "/healthz", None),
        (200, json!({"ok": true, "running": 0, "waiting": 0, "max_running": 8}))
    );
    // The query carries the token for the console's page only.
    let in_query = format!("GET /healthz?token={TOKEN} HTTP/1.1\r\nHost: {address}\r\n\r\n");
    assert_eq!(raw(address, in_query.as_bytes()).0, 401);
    let page = format!("GET /?token={TOKEN} HTTP/1.1\r\nHost: {address}\r\n\r\n");
    assert_eq!(raw(address, page.as_bytes()).0, 200);
    // Two Authorization headers are none.
    let twice = format!(
        "GET /healthz HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\nAuthorization: Bearer x\r\n\r\n"
    );
    assert_eq!(raw(address, twice.as_bytes()).0, 401);
}

#[test]
fn the_host_must_name_the_bound_address_and_a_foreign_origin_is_refused() {
    let (fake, _) = Fake::new();
    let server = server(&fake);
    let address = server.address();
    let port = address.port();
    let with_host = |host: &str, extra: &str| {
        let text =
            format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n{extra}\r\n");
        raw(address, text.as_bytes())
    };
    let (status, _, body) = with_host(&format!("evil.example:{port}"), "");
    assert_eq!((status, body.contains("evil.example")), (403, true), "{body}");
    assert_eq!(with_host(&format!("127.0.0.1:{}", port + 1), "").0, 403);
    assert_eq!(with_host(&format!("localhost:{port}"), "").0, 200);
    assert_eq!(with_host(&format!("LOCALHOST:{port}"), "").0, 200);
    let no_host = format!("GET /healthz HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    assert_eq!(raw(address, no_host.as_bytes()).0, 400);
    let same = format!("Origin: http://{address}\r\n");
    assert_eq!(with_host(&address.to_string(), &same).0, 200);
    for origin in
        ["http://evil.example", "null", &format!("https://{address}"), &format!("http://localhost:{port}")]
    {
        let (status, _, body) = with_host(&address.to_string(), &format!("Origin: {origin}\r\n"));
        assert_eq!(status, 403, "Origin {origin}: {body}");
    }
}

#[test]
fn a_bind_other_machines_can_reach_needs_a_token_the_user_set() {
    let generated = Token::generate().unwrap();
    assert_eq!(generated.value().len(), 64);
    assert!(guard::check_bind("0.0.0.0".parse().unwrap(), &generated).unwrap_err().contains(TOKEN_VARIABLE));
    assert!(guard::check_bind("192.168.1.5".parse().unwrap(), &generated).is_err());
    assert!(guard::check_bind("127.0.0.1".parse().unwrap(), &generated).is_ok());
    assert!(guard::check_bind("::1".parse().unwrap(), &generated).is_ok());
    assert!(guard::check_bind("0.0.0.0".parse().unwrap(), &Token::given(TOKEN).unwrap()).is_ok());
    assert!(Token::given("short").unwrap_err().contains("at least 16"));
    assert!(Token::given("a token with blanks in it").is_err());
    let settings = Settings {
        address: "0.0.0.0:0".parse().unwrap(),
        max_running: 1,
        token: generated,
        limits: Limits::default(),
    };
    let (fake, _) = Fake::new();
    assert!(start(settings, fake).is_err());
}

#[test]
fn accepted_hosts_follow_the_bind() {
    assert_eq!(
        guard::accepted_hosts("127.0.0.1:8421".parse().unwrap()),
        ["127.0.0.1:8421", "localhost:8421"]
    );
    assert_eq!(
        guard::accepted_hosts("[::1]:80".parse().unwrap()),
        ["[::1]:80", "localhost:80", "[::1]", "localhost"]
    );
    assert_eq!(guard::accepted_hosts("10.0.0.2:9000".parse().unwrap()), ["10.0.0.2:9000"]);
    assert!(guard::accepted_hosts("0.0.0.0:9000".parse().unwrap()).is_empty());
}

// ---- bad input ----------------------------------------------------------------------------

#[test]
fn bad_requests_get_a_json_error_with_the_right_status_and_change_nothing() {
    let (fake, _) = Fake::new();
    let server = server(&fake);
    let address = server.address();
    let id = new_session(&server);
    let before = fake.log();
    let error = |(status, body): (u16, Value)| (status, body["error"].is_string());
    assert_eq!(error(call(&server, "GET", "/nowhere", None)), (404, true));
    assert_eq!(error(call(&server, "GET", "/sessions/nope", None)), (404, true));
    assert_eq!(
        error(call(&server, "POST", "/sessions/nope/messages", Some(json!({"message": "hi"})))),
        (404, true)
    );
    assert_eq!(error(call(&server, "GET", "/sessions/..%2Fetc", None)), (404, true));
    assert_eq!(
        error(call(&server, "POST", "/sessions/s1/approvals/missing", Some(json!({"decision": "allow"})))),
        (404, true)
    );
    let (status, head, _) = request(address, "PUT", "/sessions", None, "");
    assert_eq!(status, 405);
    assert!(head.contains("Allow: GET, POST"), "{head}");
    let broken = format!(
        "POST /sessions/{id}/messages HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 9\r\n\r\n{{\"message"
    );
    let (status, _, body) = raw(address, broken.as_bytes());
    assert_eq!((status, body.contains("not valid JSON")), (400, true), "{body}");
    assert_eq!(
        error(call(&server, "POST", &format!("/sessions/{id}/messages"), Some(json!(["a list"])))),
        (400, true)
    );
    assert_eq!(
        error(call(&server, "POST", &format!("/sessions/{id}/messages"), Some(json!({"message": " "})))),
        (400, true)
    );
    assert_eq!(error(call(&server, "POST", "/sessions", Some(json!({"root": "../outside"})))), (400, true));
    assert_eq!(error(call(&server, "POST", "/sessions", Some(json!({"root": 7})))), (400, true));
    // Over 1 MiB: refused from the head, before the body is sent.
    let big = format!(
        "POST /sessions/{id}/messages HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n",
        2 * 1024 * 1024
    );
    let (status, _, body) = raw(address, big.as_bytes());
    assert_eq!((status, body.contains("1 MiB")), (413, true), "{body}");
    let chunked = format!(
        "POST /sessions HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    );
    assert_eq!(raw(address, chunked.as_bytes()).0, 411);
    let huge_head =
        format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\nX-Pad: {}\r\n\r\n", "a".repeat(20_000));
    assert_eq!(raw(address, huge_head.as_bytes()).0, 431);
    assert_eq!(raw(address, b"HELLO\r\n\r\n").0, 400);
    assert_eq!(raw(address, b"GET /healthz HTTP/2.0\r\n\r\n").0, 505);
    assert_eq!(fake.log(), before, "a refused request reached the agent");
}

#[test]
fn a_body_of_exactly_one_mebibyte_is_read() {
    let (fake, _) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let message = "x".repeat(super::request::MAX_BODY_BYTES - 20);
    let body = json!({"message": message});
    let (status, _, answer) =
        request(server.address(), "POST", &format!("/sessions/{id}/messages"), Some(&body), "");
    assert_eq!(status, 200, "{answer}");
}

// The turns, the slow clients and the console: tests/running.rs.
mod running;
