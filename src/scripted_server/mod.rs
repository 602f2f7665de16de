//! The scripted server — a Chat Completions server on 127.0.0.1 that answers from a script.
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
//!
//! This file holds what a test writes ([`Step`] and [`ScriptedServer`]); `http` holds the
//! wire side: reading a request, writing a reply or a stream, cutting or hanging.

mod http;

pub use http::{MAX_BODY, Request, read_request};

use http::serve_connection;
use serde_json::Value;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

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

/// Answers a request: its path (`/v1/chat/completions`) and its JSON body.
pub(super) type Handler = Box<dyn FnMut(&str, &Value) -> Step + Send>;

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
    // ANCHOR_END: server

    // ANCHOR: server_start_on

    /// [`start`](Self::start) on a given port of 127.0.0.1 (0: any free one).
    pub fn start_on(
        port: u16,
        mut handler: impl FnMut(&Value) -> Step + Send + 'static,
    ) -> std::io::Result<Self> {
        Self::listen(port, Box::new(move |_, body| handler(body)))
    }

    /// [`start`](Self::start) with the request's path too: a server that speaks two APIs.
    pub fn start_routed(handler: impl FnMut(&str, &Value) -> Step + Send + 'static) -> std::io::Result<Self> {
        Self::listen(0, Box::new(handler))
    }

    fn listen(port: u16, handler: Handler) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let url = format!("http://{}/v1", listener.local_addr()?);
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handler: Arc<Mutex<Handler>> = Arc::new(Mutex::new(handler));
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
    // ANCHOR_END: server_start_on

    // ANCHOR: scripted
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
// ANCHOR_END: scripted

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://").trim_end_matches("/v1"));
    }
}
