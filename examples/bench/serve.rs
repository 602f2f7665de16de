//! Chapter 21: the service under load, against the zero-think-time scripted server.
//!
//! One `mini-agent serve` (release build, `--max-running` at its default of 8) talks to a
//! scripted model that answers at once: each session's message makes [`TOOL_TURNS`] model
//! calls that each call `read_file` on a file of its own (a tool with no process to spawn, so the
//! figures are the agent's and the service's; ten reads with ten results, which chapter 7's
//! repeat guard rightly does not take for a loop, as it would ten equal listings), then a final
//! answer. The rows:
//!
//! * one session alone: the wall time of its message (`POST …/messages`, answered at the end);
//! * [`SESSIONS`] sessions at once: the wall time until every answer is in, all checked to
//!   have completed, and that time over one session's;
//! * the service's own latency per request: `GET /healthz` (connect, read, guard, route,
//!   answer, close) round trips, p50 and p99, on an idle service and while the sessions run;
//! * memory per idle session: the service's RSS after [`IDLE_SESSIONS`] sessions have each run
//!   a turn and gone idle, over its RSS before, per session.

use super::{Table, TempDir, load_average, median};
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const SESSIONS: usize = 50;
const TOOL_TURNS: usize = 10;
const IDLE_SESSIONS: usize = 200;
/// Round trips measured for the latency rows.
const PROBES: usize = 400;

pub(super) fn serve_rows(table: &mut Table, binary: &Path) {
    table.text("serve: load average (1, 5, 15 min) as it started", &load_average(), "");
    match measure(binary) {
        Ok(figures) => figures.report(table),
        Err(reason) => table.missing("serve: 50 sessions × 10 tool turns", &reason),
    }
}

struct Figures {
    alone: Vec<f64>,
    together: Vec<f64>,
    idle_latency: Vec<f64>,
    loaded_latency: Vec<f64>,
    per_idle_session_kb: f64,
    rss_loaded_kb: f64,
}

impl Figures {
    fn report(&self, table: &mut Table) {
        let ms = |ms: f64| format!("{ms:.1} ms");
        table.row(
            &format!("serve: one session, 1 message of {TOOL_TURNS} tool turns"),
            self.alone.clone(),
            ms,
            None,
        );
        let name = format!("serve: {SESSIONS} sessions × {TOOL_TURNS} tool turns at once, all completed");
        table.row(&name, self.together.clone(), ms, None);
        let ratio: Vec<f64> = self.together.iter().map(|t| t / median(self.alone.clone())).collect();
        table.row("  wall time over one session's", ratio, |r| format!("{r:.1}×"), None);
        let per = |values: &[f64], q: f64| percentile(values, q);
        let us = |us: f64| format!("{us:.0} µs");
        let idle = &self.idle_latency;
        table.text(
            "serve: GET /healthz round trip, idle, p50",
            &us(per(idle, 0.5)),
            &format!("{} requests", idle.len()),
        );
        table.text("  p99", &us(per(idle, 0.99)), "");
        let loaded = &self.loaded_latency;
        let note = format!("{} requests while the {SESSIONS} sessions ran", loaded.len());
        table.text("serve: GET /healthz round trip, loaded, p50", &us(per(loaded, 0.5)), &note);
        table.text("  p99", &us(per(loaded, 0.99)), "");
        table.text(
            "serve: RSS while the sessions ran (peak seen)",
            &format!("{:.1} MB", self.rss_loaded_kb / 1024.0),
            "",
        );
        let note = format!("RSS after {IDLE_SESSIONS} sessions ran a turn and went idle, over RSS before");
        table.text("serve: memory per idle session", &format!("{:.1} KB", self.per_idle_session_kb), &note);
    }
}

fn percentile(values: &[f64], q: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(((sorted.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0.0)
}

fn measure(binary: &Path) -> Result<Figures, String> {
    // Zero think time: a tool call until the conversation holds TOOL_TURNS results, then "done".
    let model = ScriptedServer::start(|request: &Value| {
        let results =
            request["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        if results < TOOL_TURNS {
            Step::tool_calls(&[("read_file", &format!(r#"{{"path":"file{results}.txt"}}"#))])
        } else {
            Step::text("done")
        }
    })
    .map_err(|e| format!("cannot start the scripted server: {e}"))?;
    let dir = TempDir::new("serve")?;
    for n in 0..TOOL_TURNS {
        std::fs::write(dir.root().join(format!("file{n}.txt")), format!("file {n}\n"))
            .map_err(|e| format!("cannot write the bench's files: {e}"))?;
    }
    let service = Service::start(binary, &model.url, dir.root())?;
    let mut alone = Vec::new();
    for _ in 0..super::RUNS {
        let id = service.new_session()?;
        let started = Instant::now();
        service.message(&id)?;
        alone.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let idle_latency = service.probe(PROBES)?;
    let mut together = Vec::new();
    let mut loaded_latency = Vec::new();
    let mut rss_loaded_kb: f64 = 0.0;
    for _ in 0..super::RUNS {
        let ids: Vec<String> = (0..SESSIONS).map(|_| service.new_session()).collect::<Result<_, _>>()?;
        let start = Arc::new(Barrier::new(SESSIONS + 1));
        let senders: Vec<_> = ids
            .into_iter()
            .map(|id| {
                let (start, service) = (start.clone(), service.client());
                std::thread::spawn(move || {
                    start.wait();
                    service.message(&id)
                })
            })
            .collect();
        start.wait();
        let started = Instant::now();
        // Probe while they run, until every sender is done.
        while senders.iter().any(|sender| !sender.is_finished()) {
            loaded_latency.extend(service.probe(1)?);
            rss_loaded_kb = rss_loaded_kb.max(service.rss_kb());
            std::thread::sleep(Duration::from_millis(5));
        }
        let elapsed = started.elapsed();
        for sender in senders {
            sender.join().map_err(|_| "a client thread panicked".to_string())??;
        }
        together.push(elapsed.as_secs_f64() * 1e3);
    }
    let before = service.rss_kb();
    for _ in 0..IDLE_SESSIONS {
        let id = service.new_session()?;
        service.message(&id)?;
    }
    let per_idle_session_kb = (service.rss_kb() - before) / IDLE_SESSIONS as f64;
    Ok(Figures { alone, together, idle_latency, loaded_latency, per_idle_session_kb, rss_loaded_kb })
}

/// The service, and how to talk to it.
struct Service {
    child: Child,
    client: Client,
}

#[derive(Clone)]
struct Client {
    address: String,
    token: String,
}

impl Service {
    fn start(binary: &Path, model_url: &str, root: &Path) -> Result<Service, String> {
        let mut child = Command::new(binary)
            .args(["serve", "--port", "0", "--base-url", model_url, "--model", "bench"])
            .current_dir(root)
            .env("HOME", root)
            .env("XDG_CONFIG_HOME", root.join(".config"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("MINI_AGENT_SERVE_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start mini-agent serve: {e}"))?;
        let mut line = String::new();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        BufReader::new(stdout).read_line(&mut line).map_err(|e| e.to_string())?;
        let rest = line.trim().strip_prefix("http://").ok_or(format!("serve printed {line:?}"))?;
        let (address, query) = rest.split_once('/').ok_or(format!("serve printed {line:?}"))?;
        let token = query.strip_prefix("?token=").unwrap_or_default().to_string();
        Ok(Service { child, client: Client { address: address.to_string(), token } })
    }

    fn client(&self) -> Client {
        self.client.clone()
    }

    fn new_session(&self) -> Result<String, String> {
        let (status, body) = self.client.call("POST", "/sessions", None)?;
        body["id"].as_str().map(str::to_string).ok_or(format!("POST /sessions: {status} {body}"))
    }

    fn message(&self, id: &str) -> Result<(), String> {
        self.client.message(id)
    }

    /// `count` round trips of `GET /healthz`, in microseconds.
    fn probe(&self, count: usize) -> Result<Vec<f64>, String> {
        (0..count)
            .map(|_| {
                let started = Instant::now();
                let (status, _) = self.client.call("GET", "/healthz", None)?;
                (status == 200)
                    .then(|| started.elapsed().as_secs_f64() * 1e6)
                    .ok_or(format!("healthz: {status}"))
            })
            .collect()
    }

    fn rss_kb(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap_or_default();
        line.split_whitespace().nth(1).and_then(|kb| kb.parse().ok()).unwrap_or(0.0)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        // SAFETY: kill with our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

impl Client {
    fn message(&self, id: &str) -> Result<(), String> {
        let (status, body) =
            self.call("POST", &format!("/sessions/{id}/messages"), Some(json!({"message": "go"})))?;
        match (status, body["code"].as_u64()) {
            (200, Some(0)) => Ok(()),
            _ => Err(format!("a turn did not complete: {status} {body}")),
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<(u16, Value), String> {
        let body = body.map(|body| body.to_string()).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\n\r\n{body}",
            self.address,
            self.token,
            body.len()
        );
        let mut stream = TcpStream::connect(&self.address).map_err(|e| format!("connect: {e}"))?;
        stream.set_read_timeout(Some(Duration::from_secs(600))).map_err(|e| e.to_string())?;
        stream.write_all(request.as_bytes()).map_err(|e| format!("send: {e}"))?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).map_err(|e| format!("read: {e}"))?;
        let answer = String::from_utf8_lossy(&answer);
        let (head, body) = answer.split_once("\r\n\r\n").ok_or(format!("no answer to {method} {path}"))?;
        let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
        Ok((status, serde_json::from_str(body).unwrap_or(Value::Null)))
    }
}
