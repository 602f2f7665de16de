//! Writing an answer: a status line, a few headers, a body whose length is known.
//!
//! Every answer closes its connection (`Connection: close`). Keep-alive would save a
//! loopback handshake per request (tens of microseconds), at the price of connections that
//! stay open between requests and a second state for the listener to track; a console that
//! polls every few seconds and an editor that sends a message now and then do not need it.
//! Errors are JSON too, `{"error": "…"}`, with a message that says what to do; every answer
//! carries `Cache-Control: no-store` (a session's data never sits in a cache) and `nosniff`.

use serde_json::{Value, json};
use std::io::Write;

/// A request turned down before it reached a handler, or by one: a status and a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
}

impl Refusal {
    pub fn new(status: u16, message: impl Into<String>) -> Refusal {
        Refusal { status, message: message.into() }
    }

    pub fn not_found(what: &str) -> Refusal {
        Refusal::new(404, format!("no {what} here"))
    }

    /// The answer that says so: `{"error": …}` with the status.
    pub fn response(&self) -> Response {
        Response::json(self.status, &json!({"error": self.message}))
    }
}

/// A whole answer, written at once.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, value: &Value) -> Response {
        let mut body = value.to_string().into_bytes();
        body.push(b'\n');
        Response { status, content_type: "application/json", headers: Vec::new(), body }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }

    /// The bytes on the wire.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut head = status_line(self.status);
        head.push_str(&format!(
            "Content-Type: {}\r\nContent-Length: {}\r\n{COMMON_HEADERS}",
            self.content_type,
            self.body.len()
        ));
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }

    pub fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(&self.to_bytes())?;
        out.flush()
    }
}

/// Headers every answer has.
pub const COMMON_HEADERS: &str =
    "Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n";

pub fn status_line(status: u16) -> String {
    format!("HTTP/1.1 {status} {}\r\n", reason(status))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}
