//! Chapter 13 — a scripted Chat Completions server on 127.0.0.1.
//!
//! Testing an agent against a real model is slow, costs money and never gives the same
//! answer twice. So the tests, the evaluation scenarios and the `--demo` model all talk to
//! this small HTTP server instead: it listens on a loopback port, records every request the
//! agent sent, and answers each one with a [`Step`] — a JSON reply, a stream of SSE chunks,
//! an error status, a connection that is cut or never answered. The agent cannot tell it
//! from a real server, so the real client code runs, byte for byte.
//!
//! It speaks just enough HTTP/1.1 for that: a request head, a `Content-Length` body,
//! keep-alive for plain replies, `Connection: close` after a stream.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

// ANCHOR: step
/// How the server answers one request.
#[derive(Clone, Debug)]
pub enum Step {
    /// A complete response: status, extra headers, body.
    Reply { status: u16, headers: Vec<(String, String)>, body: String },
    /// A `text/event-stream` response: each chunk is sent as `data: <chunk>\n\n` after
    /// `delay_ms`. With `finish`, a `data: [DONE]` ends it; without, the connection is
    /// simply closed (a stream cut off).
    Stream { chunks: Vec<String>, delay_ms: u64, finish: bool },
    /// Accept the request and never answer (until the server is dropped).
    Hang,
    /// Wait `delay_ms` before answering at all (not even headers), then answer with `then`:
    /// a model that thinks for a long time before its first byte.
    Delayed { delay_ms: u64, then: Box<Step> },
    /// The headers of `then` (a `Reply` or a `Stream`) at once, then its body one byte every
    /// `every_ms`: a server that drips. A large `every_ms` is a server that stalls after the
    /// headers.
    Drip { every_ms: u64, then: Box<Step> },
    /// Close the connection without a response.
    Close,
    /// These exact bytes, then close: a response no well-behaved server would send.
    Raw(Vec<u8>),
}
// ANCHOR_END: step

impl Step {
    /// A 200 whose body is a Chat Completions response with this assistant message.
    pub fn message(message: Value) -> Step {
        let body = serde_json::json!({
            "id": "scripted", "object": "chat.completion", "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        });
        Step::Reply { status: 200, headers: Vec::new(), body: body.to_string() }
    }

    /// A plain text answer.
    pub fn text(text: &str) -> Step {
        Step::message(serde_json::json!({"role": "assistant", "content": text}))
    }

    /// One or more tool calls: `(name, arguments JSON text)`; ids are `call_<n>`.
    pub fn tool_calls(calls: &[(&str, &str)]) -> Step {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| {
                serde_json::json!({"id": format!("call_{i}"), "type": "function",
                    "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        Step::message(serde_json::json!({"role": "assistant", "content": null, "tool_calls": calls}))
    }

    /// `then`, its body dripped one byte every `every_ms`.
    pub fn drip(every_ms: u64, then: Step) -> Step {
        Step::Drip { every_ms, then: Box::new(then) }
    }

    /// `then`, after `delay_ms` of silence.
    pub fn delayed(delay_ms: u64, then: Step) -> Step {
        Step::Delayed { delay_ms, then: Box::new(then) }
    }

    /// A redirect (`301`, `302`, `307`…) to `location`.
    pub fn redirect(status: u16, location: &str) -> Step {
        Step::Reply { status, headers: vec![("location".into(), location.into())], body: String::new() }
    }

    /// An error status with a JSON body in the OpenAI shape.
    pub fn error(status: u16, message: &str) -> Step {
        let body = serde_json::json!({"error": {"message": message, "type": "error"}});
        Step::Reply { status, headers: Vec::new(), body: body.to_string() }
    }
}

type Handler = Box<dyn FnMut(&Value) -> Step + Send>;

// ANCHOR: server
/// A running server. Dropping it stops accepting connections.
pub struct ScriptedServer {
    pub url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl ScriptedServer {
    /// Answers every request with `handler(request body)`. The base URL ends in `/v1`.
    pub fn start(handler: impl FnMut(&Value) -> Step + Send + 'static) -> std::io::Result<Self> {
        Self::start_on(0, handler)
    }

    /// [`start`](Self::start) on a given port of 127.0.0.1 (0: any free one).
    pub fn start_on(
        port: u16,
        handler: impl FnMut(&Value) -> Step + Send + 'static,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let url = format!("http://{}/v1", listener.local_addr()?);
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handler: Arc<Mutex<Handler>> = Arc::new(Mutex::new(Box::new(handler)));
        let (log, stopped) = (requests.clone(), stop.clone());
        thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (handler, log, stopped) = (handler.clone(), log.clone(), stopped.clone());
                thread::spawn(move || serve_connection(stream, &handler, &log, &stopped));
            }
        });
        Ok(ScriptedServer { url, requests, stop })
    }

    /// Replays `steps` in order; a request past the end gets a 500 saying so.
    pub fn scripted(steps: Vec<Step>) -> std::io::Result<Self> {
        let mut steps = steps.into_iter();
        Self::start(move |_| {
            steps.next().unwrap_or_else(|| Step::error(500, "scripted server: no step left"))
        })
    }

    /// How many requests arrived so far, without copying them.
    pub fn request_count(&self) -> usize {
        self.requests.lock().map(|r| r.len()).unwrap_or_default()
    }

    /// The JSON bodies of every request received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}
// ANCHOR_END: server

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://").trim_end_matches("/v1"));
    }
}

fn serve_connection(
    stream: TcpStream,
    handler: &Mutex<Handler>,
    log: &Mutex<Vec<Value>>,
    stopped: &std::sync::atomic::AtomicBool,
) {
    // Without this, a reply sent as head + body waits ~40 ms for a delayed ACK.
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut writer = stream;
    loop {
        let Some(body) = read_request(&mut reader) else { return };
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if let Ok(mut log) = log.lock() {
            log.push(value.clone());
        }
        let step = match handler.lock() {
            Ok(mut handler) => handler(&value),
            Err(_) => return,
        };
        if !answer(step, &mut writer, stopped) {
            return;
        }
    }
}

/// Writes the answer to one request; `false` when the connection is done with (closed by the
/// peer, or a step that ends it).
fn answer(step: Step, writer: &mut TcpStream, stopped: &std::sync::atomic::AtomicBool) -> bool {
    match step {
        Step::Reply { .. } => {
            let Some((head, body)) = wire_bytes(&step) else { return false };
            writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(&body)).is_ok()
        }
        Step::Stream { chunks, delay_ms, finish } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
            let _ = writer.write_all(head.as_bytes());
            for chunk in chunks {
                if !nap(delay_ms, stopped)
                    || writer.write_all(format!("data: {chunk}\n\n").as_bytes()).is_err()
                {
                    return false;
                }
                let _ = writer.flush();
            }
            if finish {
                let _ = writer.write_all(b"data: [DONE]\n\n");
            }
            false
        }
        Step::Hang => {
            nap(u64::MAX, stopped);
            false
        }
        Step::Close => false,
        Step::Raw(bytes) => {
            let _ = writer.write_all(&bytes);
            false
        }
        Step::Delayed { delay_ms, then } => nap(delay_ms, stopped) && answer(*then, writer, stopped),
        Step::Drip { every_ms, then } => {
            let keep_alive = matches!(*then, Step::Reply { .. });
            let Some((head, body)) = wire_bytes(&then) else { return false };
            if writer.write_all(head.as_bytes()).is_err() {
                return false;
            }
            for byte in body {
                if !nap(every_ms, stopped) || writer.write_all(&[byte]).is_err() {
                    return false;
                }
            }
            keep_alive
        }
    }
}

/// The head and body a `Reply` or a `Stream` (without its delays) puts on the wire.
fn wire_bytes(step: &Step) -> Option<(String, Vec<u8>)> {
    match step {
        Step::Reply { status, headers, body } => {
            let mut head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n",
                reason(*status),
                if body.trim_start().starts_with('<') { "text/html" } else { "application/json" },
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            Some((head, body.as_bytes().to_vec()))
        }
        Step::Stream { chunks, finish, .. } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
            let mut body: String = chunks.iter().map(|chunk| format!("data: {chunk}\n\n")).collect();
            if *finish {
                body.push_str("data: [DONE]\n\n");
            }
            Some((head.to_string(), body.into_bytes()))
        }
        _ => None,
    }
}

/// Sleeps `ms` in short slices; `false` when the server was dropped meanwhile.
fn nap(ms: u64, stopped: &std::sync::atomic::AtomicBool) -> bool {
    let until = std::time::Instant::now().checked_add(Duration::from_millis(ms));
    loop {
        if stopped.load(std::sync::atomic::Ordering::SeqCst) {
            return false;
        }
        let left = until.map_or(Duration::from_millis(50), |until| {
            until.saturating_duration_since(std::time::Instant::now())
        });
        if left.is_zero() {
            return true;
        }
        thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// Reads one request; returns its body, or `None` when the peer closed or spoke nonsense.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut length = 0usize;
    let mut first = true;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if first {
            first = false;
            if line.is_empty() {
                continue;
            }
        } else if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}
