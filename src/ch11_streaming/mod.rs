//! Chapter 11 — streaming.
//!
//! Without streaming the user stares at nothing until the whole reply exists. With
//! `stream: true` the server sends the reply as it is generated, as Server-Sent Events:
//! lines of `data: {json chunk}`, a blank line after each event, and `data: [DONE]` at the end.
//! Text arrives in small pieces we can print at once; tool calls arrive in fragments — the id
//! and name first, the arguments spread over many chunks, several calls interleaved by their
//! `index` — and must be put back together.
//!
//! Three pieces, each separately testable. [`SseParser`] turns bytes into events and knows
//! nothing about models. [`StreamAssembler`] turns chunks into a [`Reply`]. [`StreamingClient`]
//! moves bytes from a worker thread to them while watching Ctrl+C and the idle timeout.
//!
//! The rule that keeps it dependable: the reply counts only once the stream has finished.
//! A stream cut off in the middle is an error; the text that did arrive is reported as
//! partial, and none of the half-received tool calls is run.

pub mod command_line;
pub mod shown;
pub use command_line::{STREAM, register, stream_if_asked};
pub use shown::{LiveText, PartialText, StreamedText};

use crate::ch02_loop::{Error, Event, Model, Observer, Reply, Request, ToolCall, interrupted};
use crate::ch02_model::errors::SENT_NOT_REPEATED;
use crate::ch02_model::reply::content_text;
use crate::ch02_model::waiting::{backstop, first_byte_message, first_byte_timeout};
use crate::ch02_model::{
    ChatClient, ClientConfig, INTERRUPT_POLL, MAX_REPLY_BYTES, idle_message, limit_message, parse_reply,
    parse_usage, quote, read_capped, reply_too_large, server_message,
};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

// ANCHOR: sse
/// One Server-Sent Event: its `event:` name (empty when none) and its data lines joined by `\n`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// Turns a byte stream into events, whatever the chunk boundaries. It never fails: bytes that
/// are not valid UTF-8 are replaced, unknown fields are ignored.
#[derive(Default)]
pub struct SseParser {
    /// Bytes of a line not yet terminated.
    line: Vec<u8>,
    /// The previous byte was `\r`: a `\n` right after it ends the same line.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
}

/// One event (its data plus the line being read) may not grow past this: a hostile or broken
/// server that sends an endless line must not take the machine's memory with it.
pub(crate) const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

// ANCHOR_END: sse
// ANCHOR: sse_feed
impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// True once the event being gathered is larger than [`MAX_EVENT_BYTES`].
    pub fn oversized(&self) -> bool {
        self.line.len() + self.data.len() > MAX_EVENT_BYTES
    }

    /// Feeds the next bytes; returns the events they completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in bytes {
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            match byte {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    let line = std::mem::take(&mut self.line);
                    events.extend(self.line_ended(&String::from_utf8_lossy(&line)));
                }
                _ => self.line.push(byte),
            }
        }
        events
    }

    // ANCHOR_END: sse_feed
    // ANCHOR: sse_line
    fn line_ended(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            // A blank line dispatches the event gathered so far.
            let event = std::mem::take(&mut self.event);
            let data = std::mem::take(&mut self.data);
            return std::mem::take(&mut self.has_data).then_some(SseEvent { event, data });
        }
        if line.starts_with(':') {
            return None; // a comment, often sent as a keep-alive
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = value.to_owned(),
            _ => {} // `id`, `retry` and unknown fields do not matter here
        }
        None
    }
}
// ANCHOR_END: sse_line

// ANCHOR: assembler
/// Builds a reply from the chunks of a streamed Chat Completion.
#[derive(Default)]
pub struct StreamAssembler {
    text: String,
    /// Tool calls by their `index`; fragments append to the call they name.
    calls: BTreeMap<u64, PartialCall>,
    usage: Option<crate::ch02_loop::Usage>,
    /// A `finish_reason` arrived: the model is done, only usage may follow.
    finished: bool,
    /// That reason: `length` or `content_filter` means the reply was cut (chapter 1).
    finish_reason: Option<String>,
    /// `[DONE]` arrived: the stream is over.
    done: bool,
    /// Bytes held (text, arguments, names, ids, calls): at most MAX_REPLY_BYTES, as without streaming.
    received: usize,
}

/// What one more call costs to hold, beyond its strings (the map entry, three empty strings).
const CALL_OVERHEAD_BYTES: usize = 128;

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

// ANCHOR_END: assembler
// ANCHOR: assembler_apply
impl StreamAssembler {
    /// Applies one event's data; new text is reported as `TextDelta` as soon as it is known.
    pub fn apply(&mut self, data: &str, observer: &mut dyn Observer) -> Result<(), Error> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|_| Error::Model(format!("a stream chunk is not JSON: {}", quote(data))))?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            let (message, _) = server_message(data);
            let message = message.unwrap_or_default();
            return Err(Error::Model(format!("the server reported an error in the stream: {message}")));
        }
        if let Some(usage) = chunk.get("usage").and_then(parse_usage) {
            self.usage = Some(usage);
        }
        // Usage often comes in a last chunk with `choices: []`.
        let Some(choice) = chunk.get("choices").and_then(Value::as_array).and_then(|c| c.first()) else {
            return Ok(());
        };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        let text = content_text(delta.get("content"))
            .map_err(|what| Error::Model(format!("malformed stream chunk ({what}): {}", quote(data))))?;
        if let Some(text) = text.filter(|t| !t.is_empty()) {
            self.count(text.len())?;
            self.text.push_str(&text);
            observer.event(Event::Notice(&StreamedText(text)))?;
        }
        for fragment in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            self.add_fragment(fragment)?;
        }
        match choice.get("finish_reason") {
            None | Some(Value::Null) => {}
            Some(Value::String(reason)) => {
                self.finished = true;
                self.finish_reason = Some(reason.clone());
            }
            Some(_) => return Err(Error::Model(format!("malformed stream chunk: {}", quote(data)))),
        }
        Ok(())
    }
    // ANCHOR_END: assembler_apply

    // ANCHOR: add_fragment
    fn add_fragment(&mut self, fragment: &Value) -> Result<(), Error> {
        let id = fragment.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let index = match fragment.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            // Servers that omit `index` send calls one after the other: a new id starts a new
            // call, anything else continues the last one.
            None => match self.calls.last_key_value() {
                Some((&last, call)) if id.is_none_or(|id| id == call.id) => last,
                // Checked: a hostile server can put the last call at u64::MAX.
                Some((&last, _)) => last.checked_add(1).ok_or_else(|| {
                    Error::Model("a streamed tool call without an index follows the largest index".into())
                })?,
                None => 0,
            },
        };
        // Everything held is counted against the cap, not only text and arguments: a new call
        // (its entry), a longer id or name. Eighty calls with 1 MB names took 335 MB before.
        let mut held = 0;
        let call = self.calls.entry(index).or_insert_with(|| {
            held += CALL_OVERHEAD_BYTES;
            PartialCall::default()
        });
        if let Some(id) = id {
            held += id.len().saturating_sub(call.id.len());
            call.id = id.to_owned();
        }
        let function = fragment.get("function");
        // The name comes whole (some servers repeat it in later fragments): set, never append.
        if let Some(name) =
            function.and_then(|f| f.get("name")).and_then(Value::as_str).filter(|n| !n.is_empty())
        {
            held += name.len().saturating_sub(call.name.len());
            call.name = name.to_owned();
        }
        let piece = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(piece)) => Cow::Borrowed(piece.as_str()),
            Some(Value::Null) | None => return self.count(held),
            Some(whole) => Cow::Owned(whole.to_string()),
        };
        call.arguments.push_str(&piece);
        self.count(held + piece.len())
    }
    // ANCHOR_END: add_fragment

    // ANCHOR: count
    /// Counts gathered bytes against [`MAX_REPLY_BYTES`], the cap of a non-streamed reply.
    fn count(&mut self, bytes: usize) -> Result<(), Error> {
        self.received += bytes;
        if self.received > MAX_REPLY_BYTES { Err(reply_too_large()) } else { Ok(()) }
    }
    // ANCHOR_END: count

    /// The stream reached its end (`[DONE]`, or a finish reason and then the end of the body).
    pub fn is_complete(&self) -> bool {
        self.done || self.finished
    }

    /// The text received so far, for reporting a stream that was cut off.
    pub fn partial_text(&self) -> &str {
        &self.text
    }

    // ANCHOR: into_reply
    /// The reply, once the stream is complete; each call must have a name to be run.
    pub fn into_reply(self) -> Result<Reply, Error> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls {
            if call.name.is_empty() {
                return Err(Error::Model(format!("streamed tool call {index} has no function name")));
            }
            let id = if call.id.is_empty() { format!("call_{index}") } else { call.id };
            let arguments = if call.arguments.trim().is_empty() { "{}".into() } else { call.arguments };
            tool_calls.push(ToolCall { id, name: call.name, arguments });
        }
        let content = (!self.text.is_empty()).then_some(self.text);
        Ok(Reply {
            content,
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish_reason,
            cache: Default::default(),
        })
    }
    // ANCHOR_END: into_reply

    /// Describes how far a cut-off stream got, for the error message.
    fn progress(&self) -> String {
        let mut parts = vec![format!("{} characters of text", self.text.chars().count())];
        if let Some(call) = self.calls.values().last() {
            parts.push(format!("while receiving tool call {:?}", call.name));
        }
        parts.join(", ")
    }
}

// ANCHOR: assemble
/// What turns the events of a stream into a reply: the [`StreamAssembler`] of Chat Completions
/// chunks here, Anthropic's Messages events in chapter 19. [`receive`] drives either.
pub trait Assemble {
    /// Applies one event's data; new text is reported as `TextDelta` as soon as it is known.
    fn apply(&mut self, data: &str, observer: &mut dyn Observer) -> Result<(), Error>;
    /// The stream's own end marker arrived: the reply is ready, nothing else is read.
    fn is_done(&self) -> bool;
    /// The end of the body now would be a proper end, not a cut.
    fn is_complete(&self) -> bool;
    /// The text received so far, for reporting a stream that was cut off.
    fn partial_text(&self) -> &str;
    /// How far a cut-off stream got, for the error message.
    fn progress(&self) -> String;
    fn into_reply(self) -> Result<Reply, Error>;
    /// The reply of a server that ignored `stream: true` and sent one JSON document.
    fn whole(body: &str) -> Result<Reply, Error>;
}
// ANCHOR_END: assemble

/// The chunks of this chapter are one kind of stream; the methods are the ones shown above.
impl Assemble for StreamAssembler {
    fn apply(&mut self, data: &str, observer: &mut dyn Observer) -> Result<(), Error> {
        StreamAssembler::apply(self, data, observer)
    }
    fn is_done(&self) -> bool {
        self.done
    }
    fn is_complete(&self) -> bool {
        StreamAssembler::is_complete(self)
    }
    fn partial_text(&self) -> &str {
        StreamAssembler::partial_text(self)
    }
    fn progress(&self) -> String {
        StreamAssembler::progress(self)
    }
    fn into_reply(self) -> Result<Reply, Error> {
        StreamAssembler::into_reply(self)
    }
    fn whole(body: &str) -> Result<Reply, Error> {
        parse_reply(body)
    }
}

// ANCHOR: client
/// A Model that streams: the same request as chapter 2 plus `stream: true`.
pub struct StreamingClient {
    /// Chapter 2's client: the endpoint, the key and the idle timeout, kept in one place.
    pub client: ChatClient,
}

impl StreamingClient {
    pub fn new(config: ClientConfig) -> Result<Self, Error> {
        Ok(StreamingClient { client: ChatClient::new(config)? })
    }

    /// Changes how long the server may stay silent (chapter 2's `MINI_AGENT_IDLE_TIMEOUT_SECS`;
    /// tests use a short one).
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.client = self.client.with_idle_timeout(idle_timeout);
        self
    }

    /// Bounds each request's total time (chapter 2's `MINI_AGENT_REQUEST_TIMEOUT_SECS`).
    pub fn with_request_limit(mut self, limit: Option<Duration>) -> Self {
        self.client = self.client.with_request_limit(limit);
        self
    }

    /// Fixes the wait for the first byte (chapter 2's `MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS`).
    pub fn with_first_byte_timeout(mut self, first_byte: Option<Duration>) -> Self {
        self.client = self.client.with_first_byte_timeout(first_byte);
        self
    }
}

/// What the worker thread hands over.
pub(crate) enum Piece {
    Bytes(Vec<u8>),
    /// A server that ignored `stream: true` and sent the reply as one JSON document.
    Whole(String),
    End,
    /// Reading the body failed after the headers: the connection broke mid-stream.
    Broken(std::io::Error),
    /// The request failed before any of the body arrived.
    Failed(Error),
}

// ANCHOR_END: client
// ANCHOR: client_start
impl Model for StreamingClient {
    fn complete(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        let body = self.client.request_body(request, true);
        if interrupted() {
            return Err(Error::Interrupted);
        }
        let (client, idle) = (self.client.clone(), self.client.idle_timeout);
        let fixed = self.client.first_byte_timeout;
        let first_byte = (first_byte_timeout(fixed, idle, body.len()), fixed.is_some());
        let send = Box::new(move |read_timeout| client.send(&body, "text/event-stream", Some(read_timeout)));
        let pieces = start_worker(self.client.url.clone(), send, backstop(first_byte.0, idle), idle)?;
        receive(pieces, StreamAssembler::default(), first_byte, idle, observer)
    }
}
// ANCHOR_END: client_start

// ANCHOR: receive
/// [`receive_pieces`], its text held back where a key may be cut in two ([`shown::HeldBack`]).
pub(crate) fn receive<A: Assemble>(
    pieces: mpsc::Receiver<Piece>,
    reply: A,
    first_byte: (Duration, bool),
    idle: Duration,
    observer: &mut dyn Observer,
) -> Result<Reply, Error> {
    let mut held = shown::HeldBack::new(observer, crate::ch03_tools::secrets::redactor());
    let result = receive_pieces(pieces, reply, first_byte, idle, &mut held);
    held.flush()?;
    result
}
// ANCHOR_END: receive

// ANCHOR: receive_pieces

/// Feeds the worker's pieces to `reply` until the stream ends, watching Ctrl+C, the wait for
/// the first byte (`first_byte`: the bound, and whether the user fixed it) and the idle
/// timeout after it. `reply` is any [`Assemble`]: chapter 19 reads Anthropic's events with
/// this loop.
fn receive_pieces<A: Assemble>(
    pieces: mpsc::Receiver<Piece>,
    mut reply: A,
    first_byte: (Duration, bool),
    idle: Duration,
    observer: &mut dyn Observer,
) -> Result<Reply, Error> {
    let mut parser = SseParser::new();
    // Until the first byte, silence is the server reading the prompt (chapter 2's `waiting`).
    let (mut last_data, mut begun) = (Instant::now(), false);
    // The start of the body, kept until an event arrives, to quote a body that is not SSE.
    let (mut seen_event, mut head) = (false, Vec::new());
    loop {
        // Checked on every piece too: a fast stream must not make Ctrl+C wait.
        if interrupted() {
            return Err(cut_off(&reply, Error::Interrupted, observer));
        }
        let piece = match pieces.recv_timeout(INTERRUPT_POLL) {
            Ok(piece) => piece,
            Err(mpsc::RecvTimeoutError::Timeout)
                if last_data.elapsed() < if begun { idle } else { first_byte.0 } =>
            {
                continue;
            }
            Err(mpsc::RecvTimeoutError::Timeout) if begun => {
                let silence = format!("{}; stream cut off ({})", idle_message(idle), reply.progress());
                return Err(cut_off(&reply, Error::Network(silence), observer));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let silence = first_byte_message(first_byte.0, first_byte.1);
                return Err(Error::Network(format!("{silence}; {SENT_NOT_REPEATED}")));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Piece::Failed(Error::Network("the streaming thread stopped unexpectedly".into()))
            }
        };
        match piece {
            Piece::Bytes(bytes) => {
                (last_data, begun) = (Instant::now(), true);
                if !seen_event && head.len() < 300 {
                    head.extend_from_slice(&bytes[..bytes.len().min(300 - head.len())]);
                }
                let events = parser.feed(&bytes);
                if parser.oversized() {
                    let error = Error::Model(format!(
                        "a stream event grew past {} MiB without ending; the server sent no line break",
                        MAX_EVENT_BYTES >> 20
                    ));
                    return Err(cut_off(&reply, error, observer));
                }
                for event in events {
                    seen_event = true;
                    if let Err(error) = reply.apply(&event.data, observer) {
                        return Err(cut_off(&reply, error, observer));
                    }
                    if reply.is_done() {
                        return reply.into_reply();
                    }
                }
            }
            Piece::Whole(text) => {
                let whole = A::whole(&text)?;
                if let Some(text) = &whole.content {
                    observer.event(Event::Notice(&StreamedText(text.clone())))?;
                }
                return Ok(whole);
            }
            Piece::End if reply.is_complete() => return reply.into_reply(),
            Piece::End if !seen_event => {
                let head = String::from_utf8_lossy(&head);
                return Err(Error::Model(format!("the server's stream held no events: {}", quote(&head))));
            }
            Piece::End => {
                let error = format!("stream cut off before it finished ({})", reply.progress());
                return Err(cut_off(&reply, Error::Network(error), observer));
            }
            Piece::Broken(io) => {
                let why = if past_the_limit(&io) { limit_message() } else { io.to_string() };
                let error = format!("stream cut off before it finished ({}): {why}", reply.progress());
                return Err(cut_off(&reply, Error::Network(error), observer));
            }
            Piece::Failed(error) => return Err(cut_off(&reply, error, observer)),
        }
    }
}
// ANCHOR_END: receive_pieces

/// Did the read fail because the request's total time (ureq's global timeout) ran out?
fn past_the_limit(io: &std::io::Error) -> bool {
    let error = io.get_ref().and_then(|inner| inner.downcast_ref::<ureq::Error>());
    matches!(error, Some(ureq::Error::Timeout(ureq::Timeout::Global)))
}

// ANCHOR: cut_off

/// Records the text that did arrive as partial, then hands back the error: nothing runs.
fn cut_off(reply: &impl Assemble, error: Error, observer: &mut dyn Observer) -> Error {
    if !reply.partial_text().is_empty()
        && let Err(observer_error) = observer.event(Event::Notice(&PartialText(reply.partial_text().into())))
    {
        return observer_error;
    }
    error
}
// ANCHOR_END: cut_off

/// Pieces of a stream read ahead of the parser (16 KB each).
const STREAM_QUEUE_PIECES: usize = 16;
/// How a worker makes its request, given the read timeout: chapter 2's `send`, or chapter 19's.
pub(crate) type SendRequest =
    Box<dyn FnOnce(Duration) -> Result<ureq::http::Response<ureq::Body>, Error> + Send>;

// ANCHOR: worker
/// Sends the request on a worker thread that forwards the body as it arrives. The caller can
/// then stop waiting at any moment (Ctrl+C, idle timeout); the worker ends on its own.
pub(crate) fn start_worker(
    url: String,
    send: SendRequest,
    read_timeout: Duration,
    idle: Duration,
) -> Result<mpsc::Receiver<Piece>, Error> {
    // Bounded: a server faster than the parser waits in its socket, not in our memory.
    let (deliver, pieces) = mpsc::sync_channel(STREAM_QUEUE_PIECES);
    // `read_timeout` is a backstop, a little past our own bounds (chapter 2's `backstop`), so
    // that an abandoned worker cannot hang for ever.
    thread::Builder::new()
        .name("model-stream".into())
        .spawn(move || {
            let response = match send(read_timeout) {
                Ok(response) => response,
                Err(error) => {
                    let _ = deliver.send(Piece::Failed(error));
                    return;
                }
            };
            let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok());
            if content_type.is_some_and(|t| t.starts_with("application/json")) {
                let whole = read_capped(&url, response, idle);
                let piece =
                    whole.map_or_else(Piece::Failed, |b| Piece::Whole(String::from_utf8_lossy(&b).into()));
                let _ = deliver.send(piece);
                return;
            }
            let mut reader = response.into_body().into_reader();
            let mut buffer = vec![0; 16 * 1024];
            loop {
                let piece = match reader.read(&mut buffer) {
                    Ok(0) => Piece::End,
                    Ok(n) => Piece::Bytes(buffer[..n].to_vec()),
                    Err(error) => Piece::Broken(error),
                };
                let last = !matches!(piece, Piece::Bytes(_));
                if deliver.send(piece).is_err() || last {
                    return;
                }
            }
        })
        .map_err(|error| Error::io("starting the model stream thread", error))?;
    Ok(pieces)
}
// ANCHOR_END: worker

#[cfg(test)]
mod tests;
