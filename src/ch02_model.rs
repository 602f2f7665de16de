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

use crate::ch01_loop::{Error, Message, Model, Observer, Reply, Request, interrupted};
use serde::Serialize;
use serde_json::Value;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long to wait for a TCP (and TLS) connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the server may stay silent before we give up: the bound on the wait for the next
/// byte of any response, headers or body, streamed or not. There is deliberately no bound on
/// the *total*: a slow model that keeps sending may take as long as it needs.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// The environment variable that changes [`DEFAULT_IDLE_TIMEOUT`] (whole seconds).
pub const IDLE_TIMEOUT_VARIABLE: &str = "MINI_AGENT_IDLE_TIMEOUT_SECS";
/// How often a waiting caller looks at the Ctrl+C flag.
/// The largest reply read, streamed or not (chapter 11 applies the same cap): a server that
/// sends more gets a clear error instead of the machine's memory.
pub const MAX_REPLY_BYTES: usize = 10 << 20;
pub const INTERRUPT_POLL: Duration = Duration::from_millis(50);

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
            url: format!("{base}/chat/completions"),
            api_key,
            model: config.model,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        })
    }

    /// Changes how long the server may stay silent (`MINI_AGENT_IDLE_TIMEOUT_SECS`; tests use
    /// a short one).
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
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
    /// so it bounds silence, not the length of a reply.
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
        let per_read = per_read_timeout.unwrap_or(self.idle_timeout);
        // The same bound for sending: a server that stops taking the request body is as stuck
        // as one that stops answering.
        post = post.config().timeout_per_read(Some(per_read)).timeout_per_write(Some(per_read)).build();
        let response = post.send(body).map_err(|error| network_error(&self.url, error, per_read))?;
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
        let client = self.clone();
        let text = run_interruptibly(move || {
            let response = client.send(&body, "application/json", None)?;
            read_body(&client.url, response, client.idle_timeout)
        })??;
        parse_reply(&text)
    }
}
// ANCHOR_END: complete

// ANCHOR: interruptible
/// Runs `work` on its own thread and waits for it, giving up as soon as Ctrl+C is pressed.
/// The abandoned thread finishes (or times out) on its own; its result is dropped.
pub fn run_interruptibly<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
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
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Error::Network("the model request thread stopped unexpectedly".into()));
            }
        }
    }
}
// ANCHOR_END: interruptible

fn read_body(url: &str, response: ureq::http::Response<ureq::Body>, idle: Duration) -> Result<String, Error> {
    let bytes = read_capped(url, response, idle)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The whole body, at most [`MAX_REPLY_BYTES`]; a larger one is a model error, not a network one.
pub fn read_capped(
    url: &str,
    response: ureq::http::Response<ureq::Body>,
    idle: Duration,
) -> Result<Vec<u8>, Error> {
    response.into_body().with_config().limit(MAX_REPLY_BYTES as u64).read_to_vec().map_err(
        |error| match error {
            ureq::Error::BodyExceedsLimit(_) => reply_too_large(),
            ureq::Error::Timeout(_) => idle_error(idle),
            error => {
                Error::Network(format!("reading the reply from {url}: {error} (the server may have acted)"))
            }
        },
    )
}

pub fn reply_too_large() -> Error {
    Error::Model(format!(
        "the reply is larger than {} MiB, the limit for one reply; it was not used",
        MAX_REPLY_BYTES >> 20
    ))
}

// ANCHOR: wire
/// The body we POST. It borrows the conversation instead of copying it: each turn sends the
/// whole history, so building it must not cost a second copy of every message.
#[derive(Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    // Some servers reject an empty `tools` array, so a request without tools has none.
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tools: &'a [Value],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// Our `Message` in the shape the server expects: the same roles, with tool calls nested
/// as `{id, type: "function", function: {name, arguments}}`.
#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(message: &'a Message) -> Self {
        match message {
            Message::System { content } => WireMessage::System { content },
            Message::User { content } => WireMessage::User { content },
            Message::Assistant { content, tool_calls } => WireMessage::Assistant {
                content: content.as_deref(),
                tool_calls: tool_calls
                    .iter()
                    .map(|call| WireToolCall {
                        id: &call.id,
                        kind: "function",
                        function: WireFunction { name: &call.name, arguments: &call.arguments },
                    })
                    .collect(),
            },
            Message::Tool { tool_call_id, content } => WireMessage::Tool { tool_call_id, content },
        }
    }
}
// ANCHOR_END: wire

/// Reading the reply, field by field, is the next file's lesson (`ch02_reply.rs`).
pub use crate::ch02_reply::{parse_reply, parse_usage};

// ANCHOR: errors
/// Turns a non-2xx response into `Error::Http` with the server's own words.
pub fn error_from_response(response: ureq::http::Response<ureq::Body>) -> Error {
    let status = response.status();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let retry_after_ms = header("retry-after-ms")
        .and_then(|ms| ms.trim().parse::<f64>().ok())
        .map(|ms| ms.max(0.0) as u64)
        .or_else(|| header("retry-after").and_then(|value| parse_retry_after(&value, SystemTime::now())));
    if status.is_redirection() {
        return redirected(status.as_u16(), header("location"));
    }
    let body = response.into_body().read_to_vec().map(|b| String::from_utf8_lossy(&b).into_owned());
    let (message, code) = server_message(&body.unwrap_or_default());
    let message = message.unwrap_or_else(|| status.canonical_reason().unwrap_or("(no message)").to_owned());
    // Error pages often repeat the status ("<title>502 Bad Gateway</title>"); say it once.
    let message = match message.strip_prefix(status.as_str()).and_then(|rest| rest.strip_prefix(' ')) {
        Some(rest) if !rest.is_empty() => rest.to_owned(),
        _ => message,
    };
    Error::Http { status: status.as_u16(), message, retry_after_ms, code }
}

/// A 3xx: we do not follow it (see [`new_agent`]); the user learns where the server pointed,
/// so that they can check the address and pass the right one.
fn redirected(status: u16, location: Option<String>) -> Error {
    let target = location.map_or_else(|| "no Location given".to_owned(), |to| quote(&to));
    Error::Http {
        status,
        message: format!(
            "redirect to {target} not followed (API requests are never redirected); \
             if that is the right server, pass it as --base-url"
        ),
        retry_after_ms: None,
        code: None,
    }
}

/// The message and error code in an error body: OpenAI's `{"error": {"message", "code",
/// "type"}}`, the `{"error": "…"}` or `{"message": …}` or `{"detail": …}` of other servers,
/// the `<title>` of an HTML page, or else the text itself, shortened.
pub fn server_message(body: &str) -> (Option<String>, Option<String>) {
    let text = body.trim();
    if text.is_empty() {
        return (None, None);
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let error = value.get("error").unwrap_or(&value);
        let message =
            [error.get("message"), error.as_str().map(|_| error), value.get("message"), value.get("detail")]
                .into_iter()
                .flatten()
                .find_map(|m| {
                    m.as_str().map(str::to_owned).or_else(|| (!m.is_null()).then(|| m.to_string()))
                });
        let code = [error.get("code"), error.get("type")]
            .into_iter()
            .flatten()
            .find_map(|c| c.as_str().map(str::to_owned).or_else(|| c.as_u64().map(|n| n.to_string())));
        return (Some(shorten(&message.unwrap_or_else(|| text.to_owned()), 300)), code);
    }
    if text.starts_with('<') {
        let lower = text.to_ascii_lowercase();
        if let (Some(start), Some(end)) = (lower.find("<title>"), lower.find("</title>"))
            && start + 7 < end
        {
            let title = collapse_spaces(&text[start + 7..end]);
            if !title.is_empty() {
                return (Some(shorten(&title, 300)), None);
            }
        }
        return (Some(shorten(&collapse_spaces(&strip_tags(text)), 300)), None);
    }
    (Some(shorten(&collapse_spaces(text), 300)), None)
}
// ANCHOR_END: errors

/// `Retry-After` is either seconds or an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(seconds.saturating_mul(1000));
    }
    let at = parse_http_date(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64;
    Some(at.saturating_mul(1000).saturating_sub(now))
}

/// Seconds since the epoch for an IMF-fixdate; the other two legacy forms are not worth it.
fn parse_http_date(value: &str) -> Option<u64> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [_weekday, day, month, year, time, "GMT"] = parts.as_slice() else { return None };
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let mut clock = time.split(':').map(|n| n.parse::<i64>().ok());
    let (hour, minute, second) = (clock.next()??, clock.next()??, clock.next()??);
    // Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    u64::try_from(days * 86_400 + hour * 3600 + minute * 60 + second).ok()
}

// ANCHOR: network_error
/// A transport failure, said in a way that tells the user where to look.
pub fn network_error(url: &str, error: ureq::Error, idle: Duration) -> Error {
    use ureq::Timeout;
    let text = match &error {
        // Nothing was sent: chapter 8 may try again.
        ureq::Error::ConnectionFailed => {
            return Error::Refused(format!(
                "cannot connect to {url} — is the server running? check --base-url"
            ));
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Error::Refused(format!(
                "cannot connect to {url} (connection refused) — is the server running? check --base-url"
            ));
        }
        // std reports a failed DNS lookup as a plain I/O error with this text; the request
        // never left this machine, so it is not "the server may have acted".
        ureq::Error::Io(io) if io.to_string().starts_with("failed to lookup address information") => {
            format!("cannot resolve the host of {url} — check --base-url and your network")
        }
        ureq::Error::HostNotFound => {
            format!("cannot resolve the host of {url} — check --base-url and your network")
        }
        ureq::Error::Timeout(Timeout::Connect | Timeout::Resolve) => {
            format!(
                "cannot connect to {url} within {} s — check --base-url and your network",
                CONNECT_TIMEOUT.as_secs()
            )
        }
        ureq::Error::Timeout(Timeout::PerWrite) => {
            format!(
                "the server took no byte of the request for {} s ({IDLE_TIMEOUT_VARIABLE}); the server may have acted",
                seconds(idle)
            )
        }
        // The only other timeout we set is the per-read one: the server fell silent.
        ureq::Error::Timeout(_) => return idle_error(idle),
        other => format!("{url}: {other} (the server may have acted)"),
    };
    Error::Network(text)
}

/// The server sent nothing for `idle`: one line that names the variable that sets the bound.
pub fn idle_error(idle: Duration) -> Error {
    Error::Network(format!("{}; the server may have acted", idle_message(idle)))
}

/// "no byte from the server for 300 s (MINI_AGENT_IDLE_TIMEOUT_SECS)".
pub fn idle_message(idle: Duration) -> String {
    format!("no byte from the server for {} s ({IDLE_TIMEOUT_VARIABLE})", seconds(idle))
}

/// `300` for whole seconds, `0.2` for the short bounds tests use.
pub fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 { format!("{secs:.0}") } else { format!("{secs}") }
}

/// The idle timeout from `MINI_AGENT_IDLE_TIMEOUT_SECS`'s value: unset or empty is the
/// default; anything but a whole number of seconds, at least 1, is a clear error.
pub fn parse_idle_timeout(value: Option<&str>) -> Result<Duration, Error> {
    match value.map(str::trim) {
        None | Some("") => Ok(DEFAULT_IDLE_TIMEOUT),
        Some(text) => match text.parse::<u64>() {
            Ok(secs) if secs >= 1 => Ok(Duration::from_secs(secs)),
            _ => Err(Error::Config(format!(
                "{IDLE_TIMEOUT_VARIABLE} must be a whole number of seconds, at least 1 (default {}), got {text:?}",
                DEFAULT_IDLE_TIMEOUT.as_secs()
            ))),
        },
    }
}
// ANCHOR_END: network_error

/// At most `max_chars` characters of `text`, then `…` when something was cut.
pub fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// A short, one-line quote of a body, for "this is not what we expected" errors.
pub fn quote(body: &str) -> String {
    let text = collapse_spaces(body);
    if text.is_empty() { "(empty body)".into() } else { format!("{:?}", shorten(&text, 300)) }
}

fn collapse_spaces(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn strip_tags(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ch01_loop::{Event, ToolCall, Usage};
    use crate::ch13_scripted_server::{ScriptedServer, Step};
    use serde_json::json;

    struct Quiet;
    impl Observer for Quiet {
        fn event(&mut self, _: Event) -> Result<(), Error> {
            Ok(())
        }
    }

    fn client(server: &ScriptedServer) -> ChatClient {
        ChatClient::new(ClientConfig { base_url: server.url.clone(), api_key: None, model: "m".into() })
            .expect("loopback needs no key")
    }

    fn ask(steps: Vec<Step>) -> (Result<Reply, Error>, Vec<Value>) {
        let server = ScriptedServer::scripted(steps).expect("server starts");
        let messages = [Message::User { content: "hi".into() }];
        let result = client(&server).complete(&Request { messages: &messages, tools: &[] }, &mut Quiet);
        (result, server.requests())
    }

    fn reply_with(body: &str) -> Step {
        Step::Reply { status: 200, headers: Vec::new(), body: body.into() }
    }

    #[test]
    fn a_plain_answer_is_text_with_usage() {
        let (reply, _) = ask(vec![Step::text("hello")]);
        assert_eq!(
            reply.expect("ok"),
            Reply {
                content: Some("hello".into()),
                tool_calls: vec![],
                usage: Some(Usage { prompt_tokens: 10, completion_tokens: 5 }),
                finish_reason: Some("stop".into()),
            }
        );
    }

    #[test]
    fn tool_calls_keep_string_arguments_and_serialise_object_arguments() {
        let message = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"x\"}"}},
            {"id": "b", "type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}
        ]});
        let (reply, _) = ask(vec![Step::message(message)]);
        let reply = reply.expect("ok");
        assert_eq!(reply.content, None);
        assert_eq!(
            reply.tool_calls,
            vec![
                ToolCall { id: "a".into(), name: "read_file".into(), arguments: r#"{"path":"x"}"#.into() },
                ToolCall { id: "b".into(), name: "bash".into(), arguments: r#"{"command":"ls"}"#.into() },
            ]
        );
    }

    #[test]
    fn missing_content_extra_fields_and_reasoning_are_tolerated() {
        let body = json!({"id": "x", "system_fingerprint": "fp", "choices": [{"index": 0, "logprobs": null,
            "finish_reason": "stop", "message": {"role": "assistant", "reasoning_content": "hmm", "refusal": null,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "list_files"}}]}}]});
        let (reply, _) = ask(vec![reply_with(&body.to_string())]);
        let reply = reply.expect("ok");
        assert_eq!((reply.content, reply.usage), (None, None));
        assert_eq!(
            reply.tool_calls,
            vec![ToolCall { id: "c".into(), name: "list_files".into(), arguments: "{}".into() }]
        );
    }

    #[test]
    fn empty_choices_and_non_json_are_model_errors_quoting_the_body() {
        let (reply, _) = ask(vec![reply_with(r#"{"choices": []}"#)]);
        assert!(matches!(reply, Err(Error::Model(ref m)) if m.contains("choices")), "{reply:?}");
        let (reply, _) = ask(vec![reply_with("Bad gateway, try later")]);
        let error = reply.expect_err("not json").to_string();
        assert_eq!(
            error,
            r#"unusable model reply: the server's reply is not JSON: "Bad gateway, try later""#
        );
    }

    #[test]
    fn a_401_reports_the_servers_message_and_the_hint() {
        let (reply, _) = ask(vec![Step::error(401, "Invalid API Key")]);
        assert_eq!(
            reply.expect_err("401").to_string(),
            "model request failed: 401 Invalid API Key — check OPENAI_API_KEY"
        );
    }

    #[test]
    fn an_html_500_reports_its_title() {
        let page =
            "<html><head><title>500 Internal Server Error</title></head><body><h1>oops</h1></body></html>";
        let (reply, _) = ask(vec![Step::Reply { status: 500, headers: vec![], body: page.into() }]);
        assert_eq!(
            reply.expect_err("500").to_string(),
            "model request failed: 500 Internal Server Error — the server failed; try again later"
        );
    }

    #[test]
    fn error_codes_and_retry_after_are_kept() {
        let body = json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
            "code": "insufficient_quota"}});
        let headers = vec![("Retry-After".into(), "7".into())];
        let (reply, _) = ask(vec![Step::Reply { status: 429, headers, body: body.to_string() }]);
        match reply {
            Err(Error::Http { status, message, retry_after_ms, code }) => {
                assert_eq!((status, message.as_str()), (429, "You exceeded your current quota"));
                assert_eq!((retry_after_ms, code.as_deref()), (Some(7000), Some("insufficient_quota")));
            }
            other => panic!("expected Http, got {other:?}"),
        }
    }

    #[test]
    fn a_refused_connection_names_the_url() {
        let port =
            std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
        let mut client = ChatClient::new(ClientConfig {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            api_key: None,
            model: "m".into(),
        })
        .expect("client");
        let error = client.complete(&Request { messages: &[], tools: &[] }, &mut Quiet).expect_err("refused");
        assert!(matches!(error, Error::Refused(_)), "{error:?}");
        let text = error.to_string();
        assert!(
            text.contains(&format!("127.0.0.1:{port}/v1/chat/completions")) && text.contains("--base-url"),
            "{text}"
        );
    }

    #[test]
    fn the_request_carries_roles_tool_pairing_and_tools() {
        let server = ScriptedServer::scripted(vec![Step::text("done")]).expect("server");
        let call =
            ToolCall { id: "call_1".into(), name: "bash".into(), arguments: r#"{"command":"ls"}"#.into() };
        let messages = [
            Message::System { content: "be brief".into() },
            Message::User { content: "list".into() },
            Message::Assistant { content: None, tool_calls: vec![call] },
            Message::Tool { tool_call_id: "call_1".into(), content: "a.txt".into() },
        ];
        let tools = [json!({"type": "function", "function": {"name": "bash"}})];
        client(&server).complete(&Request { messages: &messages, tools: &tools }, &mut Quiet).expect("ok");
        assert_eq!(
            server.requests(),
            vec![json!({"model": "m", "tools": tools, "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "list"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
            ]})]
        );
    }

    #[test]
    fn a_request_without_tools_sends_no_tools_field() {
        let (_, requests) = ask(vec![Step::text("ok")]);
        assert_eq!(requests[0].get("tools"), None);
    }

    #[test]
    fn ctrl_c_abandons_a_request_the_server_never_answers() {
        in_own_process("ch02_model::tests::ctrl_c_abandons_a_request_the_server_never_answers", || {
            let server = ScriptedServer::scripted(vec![Step::Hang]).expect("server");
            let pressed = std::sync::Arc::new(std::sync::Mutex::new(None));
            let press = pressed.clone();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(200));
                *press.lock().expect("lock") = Some(std::time::Instant::now());
                crate::ch01_loop::set_interrupted(true);
            });
            let messages = [Message::User { content: "hi".into() }];
            let result = client(&server).complete(&Request { messages: &messages, tools: &[] }, &mut Quiet);
            assert!(matches!(result, Err(Error::Interrupted)), "{result:?}");
            let pressed_at = pressed.lock().expect("lock").expect("Ctrl+C was pressed");
            println!("figure: request abandoned {:?} after Ctrl+C", pressed_at.elapsed());
        });
    }

    fn ask_within(idle: Duration, steps: Vec<Step>) -> (Result<Reply, Error>, Duration) {
        let server = ScriptedServer::scripted(steps).expect("server starts");
        let messages = [Message::User { content: "hi".into() }];
        let started = std::time::Instant::now();
        let result = client(&server)
            .with_idle_timeout(idle)
            .complete(&Request { messages: &messages, tools: &[] }, &mut Quiet);
        (result, started.elapsed())
    }

    #[test]
    fn silence_before_the_headers_or_inside_the_body_hits_the_idle_timeout() {
        let idle = Duration::from_millis(300);
        for (what, step) in [
            ("no headers", Step::delayed(60_000, Step::text("late"))),
            ("stalled body", Step::drip(60_000, Step::text("never whole"))),
        ] {
            let (result, took) = ask_within(idle, vec![step]);
            let error = result.expect_err(what).to_string();
            assert_eq!(
                error,
                "model request failed: no byte from the server for 0.3 s (MINI_AGENT_IDLE_TIMEOUT_SECS); the server may have acted",
                "{what}"
            );
            assert!(took < Duration::from_secs(5), "{what}: {took:?}");
            println!("figure: {what}: idle timeout of 300 ms fired after {took:?}");
        }
    }

    #[test]
    fn a_slow_reply_that_keeps_coming_is_never_cut() {
        // Silent for 200 ms, then a byte every 10 ms: the whole reply takes several times the
        // idle timeout, and each wait is well under it (issue 11: no hidden total limit).
        let idle = Duration::from_millis(400);
        let (result, took) =
            ask_within(idle, vec![Step::delayed(200, Step::drip(10, Step::text("slow but sure")))]);
        assert_eq!(result.expect("a reply that keeps coming").content.as_deref(), Some("slow but sure"));
        assert!(took > idle * 3, "{took:?}");
        println!("figure: a dripped reply took {took:?} under an idle timeout of {idle:?}");
    }

    #[test]
    fn a_server_that_stops_taking_the_request_hits_the_idle_timeout() {
        // Accepts the connection and never reads: once the socket buffers are full, the
        // request cannot be sent any further.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("address"));
        let held = thread::spawn(move || listener.accept().map(|(socket, _)| socket));
        let client = ChatClient::new(ClientConfig { base_url: url, api_key: None, model: "m".into() })
            .expect("client")
            .with_idle_timeout(Duration::from_millis(300));
        let messages = [Message::User { content: "x".repeat(32 << 20) }];
        let started = std::time::Instant::now();
        let error = client.clone().complete(&Request { messages: &messages, tools: &[] }, &mut Quiet);
        let took = started.elapsed();
        let error = error.expect_err("stuck").to_string();
        assert!(
            error.contains("took no byte of the request for 0.3 s (MINI_AGENT_IDLE_TIMEOUT_SECS)"),
            "{error}"
        );
        assert!(took < Duration::from_secs(10), "{took:?}");
        println!("figure: a server that stopped reading the request was given up after {took:?}");
        drop(held.join());
    }

    #[test]
    fn the_idle_timeout_variable_takes_whole_seconds() {
        assert_eq!(parse_idle_timeout(None).expect("default"), DEFAULT_IDLE_TIMEOUT);
        assert_eq!(parse_idle_timeout(Some(" ")).expect("default"), Duration::from_secs(300));
        assert_eq!(parse_idle_timeout(Some("3")).expect("3"), Duration::from_secs(3));
        for bad in ["0", "-1", "1.5", "soon"] {
            let error = parse_idle_timeout(Some(bad)).expect_err(bad).to_string();
            assert!(error.contains("MINI_AGENT_IDLE_TIMEOUT_SECS must be a whole number"), "{error}");
        }
    }

    #[test]
    fn only_loopback_hosts_need_no_key() {
        for url in
            ["http://127.0.0.1:8080/v1", "http://localhost/v1", "http://[::1]:11434/v1", "http://127.1.2.3"]
        {
            assert!(!api_key_required(url), "{url}");
        }
        for url in ["https://api.openai.com/v1", "http://localhost.evil.com/v1", "http://10.0.0.1/v1"] {
            assert!(api_key_required(url), "{url}");
        }
        let missing = ChatClient::new(ClientConfig {
            base_url: "https://api.openai.com/v1".into(),
            api_key: None,
            model: "m".into(),
        });
        assert!(matches!(missing, Err(Error::Config(ref m)) if m.contains("OPENAI_API_KEY")));
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("120", now), Some(120_000));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now), Some(10_000));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now), Some(0));
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn server_messages_come_from_every_common_shape() {
        assert_eq!(server_message(r#"{"error": "model not found"}"#).0.as_deref(), Some("model not found"));
        assert_eq!(server_message(r#"{"detail": "bad"}"#).0.as_deref(), Some("bad"));
        assert_eq!(
            server_message("<html><body><p>Gateway\n  broke</p></body></html>").0.as_deref(),
            Some("Gateway broke")
        );
        assert_eq!(server_message("").0, None);
    }
}
