//! Chapter 2 — talking to a model.
//!
//! Almost every model server speaks the same dialect: OpenAI's Chat Completions. We POST the
//! conversation and the tool schemas to `{base_url}/chat/completions` and read back one
//! assistant message, which either answers in text or asks for tool calls. That is all a
//! [`Model`] has to do, so this chapter is mostly about the details real servers get wrong or
//! differently: `content` that is null or missing, arguments sent as an object instead of a
//! string, extra fields, error pages in HTML. We tolerate what we can and, when we cannot,
//! say what the server said.
//!
//! Two choices shape the code. The HTTP call runs on a worker thread while the caller waits on
//! a channel and polls the Ctrl+C flag, so an interrupt abandons a slow request at once. And
//! the client keeps one `ureq::Agent`, so consecutive turns reuse the same keep-alive
//! connection. Chapter 11 (streaming) reuses the request builder and the error handling here.
//!
//! The chapter is a folder of small files, read in this order:
//! - this file: the client, its configuration, sending a request and waiting for it
//!   interruptibly;
//! - [`wire`]: the request body in the shape the server expects;
//! - [`reply`]: reading the reply, field by field;
//! - [`errors`]: turning HTTP and transport failures into messages that say where to look;
//! - [`waiting`]: how long a reply may take to begin, and to go on;
//! - [`text_calls`]: noticing a tool call the server left as text;
//! - [`layers`]: the model of a run as a fold of the layers the chapters register.

pub mod errors;
pub mod layers;
pub mod reply;
#[cfg(test)]
mod tests;
pub mod text_calls;
pub mod waiting;
pub mod wire;

use crate::ch02_loop::{Error, Model, Observer, Reply, Request, interrupted};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;
use waiting::{backstop, first_byte_timeout, read_counted, run_watched};
use wire::{RequestBody, StreamOptions, WireMessage};

pub use errors::parse_retry_after;
pub use errors::{
    error_from_response, idle_error, idle_message, limit_error, limit_message, network_error,
    parse_idle_timeout, parse_request_limit, quote, seconds, server_message,
};
/// Reading the reply, field by field, is its own file's lesson (`reply.rs`).
pub use reply::{parse_reply, parse_usage};

/// Where the model lives when nothing says otherwise, and which one it is.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// How long to wait for a TCP (and TLS) connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the server may stay silent before we give up: the bound on the wait for the next
/// byte of any response, headers or body, streamed or not. By default there is no bound on
/// the *total*: a slow model that keeps sending may take as long as it needs.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// The environment variable that changes [`DEFAULT_IDLE_TIMEOUT`] (whole seconds).
pub const IDLE_TIMEOUT_VARIABLE: &str = "MINI_AGENT_IDLE_TIMEOUT_SECS";
/// The environment variable that bounds one request's *total* time, reply included (whole
/// seconds; unset: no bound). For runs nobody watches: a server that keeps a reply alive with
/// a byte or a keep-alive now and then, but never finishes it, is given up on.
pub const REQUEST_LIMIT_VARIABLE: &str = "MINI_AGENT_REQUEST_TIMEOUT_SECS";
/// The largest reply read, streamed or not (chapter 11 applies the same cap): a server that
/// sends more gets a clear error instead of the machine's memory.
pub const MAX_REPLY_BYTES: usize = 10 << 20;
/// How often a waiting caller looks at the Ctrl+C flag (and at how long it has waited).
pub const INTERRUPT_POLL: Duration = Duration::from_millis(50);

/// The system prompt of chapter 2's agent: who it is and where it works. Chapter 6 replaces it
/// with one that carries the project's own instructions and skills.
pub fn system_prompt(root: &std::path::Path) -> String {
    format!(
        "You are mini-agent, a coding agent working in the workspace root {}. Use the tools to \
         look and to act; say plainly what you did and what failed.",
        root.display()
    )
}

/// The key and the other secrets of the run, by variable name: each that was set and not
/// blank. Chapter 2 reads OpenAI's two from the environment, like any variable; chapter 3
/// takes them out of it instead (`Keys::take`), with the later chapters' own, so that no
/// command the agent runs can read them.
#[derive(Clone, Default)]
pub struct Keys {
    pub(crate) taken: Vec<(&'static str, String)>,
}

impl Keys {
    pub fn from_environment() -> Keys {
        let read = |name: &'static str| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
        let taken = ["OPENAI_API_KEY", "OPENAI_BASE_URL"].into_iter();
        Keys { taken: taken.filter_map(|name| Some((name, read(name)?))).collect() }
    }

    /// The OpenAI key (`OPENAI_API_KEY`).
    pub fn api_key(&self) -> Option<String> {
        layers::KeySource::value_of(self, "OPENAI_API_KEY")
    }

    /// The OpenAI base URL (`OPENAI_BASE_URL`), with its credentials if it has any.
    pub fn base_url(&self) -> Option<String> {
        layers::KeySource::value_of(self, "OPENAI_BASE_URL")
    }
}

impl layers::KeySource for Keys {
    fn value_of(&self, variable: &str) -> Option<String> {
        self.taken.iter().find(|(name, _)| *name == variable).map(|(_, value)| value.clone())
    }
}

// ANCHOR: config
/// Where the model lives and who we are.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when present. Never logged, never written to disk.
    pub api_key: Option<String>,
    pub model: String,
}

/// A Chat Completions client. Cloning is cheap and shares the connection pool.
#[derive(Clone)]
pub struct ChatClient {
    pub agent: ureq::Agent,
    pub url: String,
    api_key: Option<String>,
    pub model: String,
    /// The longest wait for the next byte of a response (see [`DEFAULT_IDLE_TIMEOUT`]).
    pub idle_timeout: Duration,
    /// The longest one request may take in all, if set ([`REQUEST_LIMIT_VARIABLE`]).
    pub request_limit: Option<Duration>,
    /// The longest wait for a reply's first byte, when the user fixed it (see [`waiting`]).
    pub first_byte_timeout: Option<Duration>,
}
// ANCHOR_END: config

impl std::fmt::Debug for ChatClient {
    // Hand-written so that the key can never end up in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("ChatClient").field("url", &self.url).field("model", &self.model).finish()
    }
}

/// A key is needed unless the server is on this machine (Ollama, llama.cpp, the demo model).
pub fn api_key_required(base_url: &str) -> bool {
    let rest = base_url.split_once("://").map_or(base_url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    !loopback
}

/// `{base_url}/chat/completions`, with the path added before a query (Azure-style endpoints
/// carry `?api-version=…`), never glued onto it; a fragment is never sent, so it is dropped.
pub fn chat_completions_url(base_url: &str) -> String {
    let without_fragment = base_url.split_once('#').map_or(base_url, |(kept, _)| kept);
    match without_fragment.split_once('?') {
        Some((path, query)) => format!("{}/chat/completions?{query}", path.trim_end_matches('/')),
        None => format!("{}/chat/completions", without_fragment.trim_end_matches('/')),
    }
}

impl ChatClient {
    pub fn new(config: ClientConfig) -> Result<ChatClient, Error> {
        let base = config.base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::Config(format!(
                "the base URL must start with http:// or https:// (got {:?}); check --base-url or OPENAI_BASE_URL",
                config.base_url
            )));
        }
        let api_key = config.api_key.filter(|key| !key.trim().is_empty());
        if api_key.is_none() && api_key_required(base) {
            return Err(Error::Config(format!(
                "OPENAI_API_KEY is not set; {base} needs it (a loopback --base-url or --demo needs no key)"
            )));
        }
        Ok(ChatClient {
            agent: new_agent(),
            url: chat_completions_url(base),
            api_key,
            model: config.model,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            request_limit: None,
            first_byte_timeout: None,
        })
    }

    /// Fixes the wait for a reply's first byte (`MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS`; `None`:
    /// the idle timeout plus a second per 100 bytes of request).
    pub fn with_first_byte_timeout(mut self, first_byte: Option<Duration>) -> Self {
        self.first_byte_timeout = first_byte;
        self
    }

    /// Changes how long the server may stay silent (`MINI_AGENT_IDLE_TIMEOUT_SECS`; tests use
    /// a short one).
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }

    /// Bounds each request's total time (`MINI_AGENT_REQUEST_TIMEOUT_SECS`; `None`: no bound).
    pub fn with_request_limit(mut self, limit: Option<Duration>) -> Self {
        self.request_limit = limit;
        self
    }

    // ANCHOR: request_body
    /// The JSON we POST: the model id, the conversation in wire form, and the tool schemas.
    pub fn request_body(&self, request: &Request, stream: bool) -> Vec<u8> {
        let body = RequestBody {
            model: &self.model,
            messages: request.messages.iter().map(WireMessage::from).collect(),
            tools: request.tools,
            // Chapter 11 asks for the reply as a stream, with the token usage at its end.
            stream,
            stream_options: stream.then_some(StreamOptions { include_usage: true }),
        };
        serde_json::to_vec(&body).expect("strings and JSON values always serialise")
    }
    // ANCHOR_END: request_body

    // ANCHOR: send
    /// POSTs `body`. A 2xx response is returned for the caller to read; anything else becomes
    /// `Error::Http` with the server's own message; a transport failure becomes
    /// `Error::Network`. Every read from the socket, headers and body, waits at most
    /// `per_read_timeout` (default: the idle timeout): ureq restarts that clock on each read,
    /// so it bounds silence, not the length of a reply (callers that tell the first byte from
    /// the rest pass a backstop past both bounds, see [`waiting`]). Every write waits at most
    /// the idle timeout. The request limit, when set, is ureq's global timeout: one clock from
    /// connecting to the last byte of the body.
    pub fn send(
        &self,
        body: &[u8],
        accept: &str,
        per_read_timeout: Option<Duration>,
    ) -> Result<ureq::http::Response<ureq::Body>, Error> {
        let mut post =
            self.agent.post(&self.url).header("content-type", "application/json").header("accept", accept);
        if let Some(key) = &self.api_key {
            post = post.header("authorization", format!("Bearer {key}"));
        }
        let (per_read, idle) = (per_read_timeout.unwrap_or(self.idle_timeout), self.idle_timeout);
        // The idle bound for sending: a server that stops taking the request body is as stuck
        // as one that stops answering.
        let config = post.config().timeout_per_read(Some(per_read)).timeout_per_write(Some(idle));
        post = config.timeout_global(self.request_limit).build();
        let response = post.send(body).map_err(|error| network_error(&self.url, error, idle))?;
        if response.status().is_success() { Ok(response) } else { Err(error_from_response(response)) }
    }
    // ANCHOR_END: send
}

/// One agent for the client's whole life: keep-alive connections, our timeouts, and status
/// codes left to us so that we can read the error body. Redirects are not followed: a 302
/// would turn our POST into a GET to wherever the server pointed, and take a stranger's
/// reply as the model's answer. The 3xx comes back to us, and we say where it pointed.
pub fn new_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .user_agent(concat!("mini-agent/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent()
}

// ANCHOR: complete
impl Model for ChatClient {
    fn complete(&mut self, request: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
        let body = self.request_body(request, false);
        let (client, idle) = (self.clone(), self.idle_timeout);
        let first_byte = first_byte_timeout(self.first_byte_timeout, idle, body.len());
        let fixed = self.first_byte_timeout.is_some();
        let text = run_watched((first_byte, fixed), idle, move |received| {
            let response = client.send(&body, "application/json", Some(backstop(first_byte, idle)))?;
            received.fetch_add(1, Ordering::SeqCst); // the headers are a first byte
            read_counted(&client.url, response, idle, &received)
        })?;
        parse_reply(&String::from_utf8_lossy(&text))
    }
}
// ANCHOR_END: complete

// ANCHOR: interruptible
/// Runs `work` on its own thread and waits for it, giving up as soon as Ctrl+C is pressed.
/// The abandoned thread finishes (or times out) on its own; its result is dropped.
pub fn run_interruptibly<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    wait_for(work, || Ok(()))
}

/// The waiting itself: `watch` is asked between slices whether to go on (chapter 2's
/// [`waiting`] bounds the first byte and the gaps there).
pub(crate) fn wait_for<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
    mut watch: impl FnMut() -> Result<(), Error>,
) -> Result<T, Error> {
    if interrupted() {
        return Err(Error::Interrupted);
    }
    let (done, result) = mpsc::sync_channel(1);
    thread::Builder::new()
        .name("model-request".into())
        .spawn(move || {
            let _ = done.send(work());
        })
        .map_err(|error| Error::io("starting the model request thread", error))?;
    loop {
        match result.recv_timeout(INTERRUPT_POLL) {
            Ok(value) => return Ok(value),
            Err(mpsc::RecvTimeoutError::Timeout) if interrupted() => return Err(Error::Interrupted),
            Err(mpsc::RecvTimeoutError::Timeout) => watch()?,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Error::Network("the model request thread stopped unexpectedly".into()));
            }
        }
    }
}
// ANCHOR_END: interruptible

/// The whole body, at most [`MAX_REPLY_BYTES`]; a larger one is a model error, not a network one.
pub fn read_capped(
    url: &str,
    response: ureq::http::Response<ureq::Body>,
    idle: Duration,
) -> Result<Vec<u8>, Error> {
    read_counted(url, response, idle, &AtomicUsize::new(0))
}

pub fn reply_too_large() -> Error {
    Error::Model(format!(
        "the reply is larger than {} MiB, the limit for one reply; it was not used",
        MAX_REPLY_BYTES >> 20
    ))
}

/// Runs `body` in a fresh copy of the test binary, so that it may set the process-wide Ctrl+C
/// flag without disturbing the tests running beside it. `test_path` is the test's own path.
#[cfg(test)]
pub(crate) fn in_own_process(test_path: &str, body: impl FnOnce()) {
    const CHILD: &str = "MINI_AGENT_TEST_IN_OWN_PROCESS";
    if std::env::var_os(CHILD).is_some() {
        return body();
    }
    let test_binary = std::env::current_exe().expect("the test binary has a path");
    let output = std::process::Command::new(test_binary)
        .args([test_path, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("the test binary runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success() && stdout.contains("1 passed"), "{stdout}\n{stderr}");
    // Pass on the figures the child printed.
    stdout
        .lines()
        .filter_map(|line| line.find("figure:").map(|at| &line[at..]))
        .for_each(|f| println!("{f}"));
}
