//! Reading a request: HTTP/1.1's head, then a body of a length it announced, within limits.
//!
//! The parser is fed bytes as they arrive and answers "not yet", "here is the head", or
//! "refused, with this status". Every limit is checked on what has arrived so far, so a
//! client cannot make the server hold more than [`MAX_HEAD_BYTES`] + [`MAX_BODY_BYTES`] for
//! one connection, and the head is judged (the token, the `Host`) before any of the body is
//! read: a refused client never gets to upload its megabyte.
//!
//! What it accepts is deliberately narrow: a body only with `Content-Length` (no chunked
//! uploads, so no request smuggling between two ideas of where a body ends), one such header,
//! no obsolete folded header lines, `HTTP/1.0` or `HTTP/1.1`.

use super::response::Refusal;

/// The request line and the headers together.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How many header lines a request may have.
pub const MAX_HEADERS: usize = 64;
/// The largest body accepted (413 above it): a message, a task, an answer are far smaller.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The request line and headers of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    /// The path, still percent-encoded (`/sessions/abc/approvals/call_1`).
    pub path: String,
    /// What followed `?`, or "".
    pub query: String,
    /// Header names lower-cased, values trimmed, in the order sent.
    pub headers: Vec<(String, String)>,
    /// How many body bytes follow the head.
    pub body_length: usize,
}

/// A whole request: its head and its body.
#[derive(Debug, Clone)]
pub struct Request {
    pub head: Head,
    pub body: Vec<u8>,
}

impl Head {
    /// The value of header `name` (lower case), if sent once; a repeated header reads as absent
    /// to the checks that use this, so two `Host`s or two `Authorization`s never pass them.
    pub fn header(&self, name: &str) -> Option<&str> {
        let mut values = self.headers.iter().filter(|(key, _)| key == name);
        match (values.next(), values.next()) {
            (Some((_, value)), None) => Some(value),
            _ => None,
        }
    }

    /// Whether header `name` was sent at all (once or more).
    pub fn has_header(&self, name: &str) -> bool {
        self.headers.iter().any(|(key, _)| key == name)
    }

    /// The value of `key` in the query string, percent-decoded.
    pub fn query_value(&self, key: &str) -> Option<String> {
        self.query.split('&').find_map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (name == key).then(|| percent_decode(value)).flatten()
        })
    }
}

// ANCHOR: parse_head
/// Where a connection's bytes stand.
#[derive(Debug, PartialEq, Eq)]
pub enum Progress {
    /// The head is not complete yet; keep reading.
    NeedMore,
    /// The head ends at byte `usize` of the buffer (its blank line included).
    Head(Head, usize),
}

/// Looks for a complete head at the start of `buffer`, whose first `searched` bytes were
/// looked through already (so a head that arrives a byte at a time costs linear time, not
/// quadratic).
pub fn parse_head(buffer: &[u8], searched: usize) -> Result<Progress, Refusal> {
    let from = searched.saturating_sub(3);
    let Some(end) = find(&buffer[from.min(buffer.len())..], b"\r\n\r\n").map(|at| from + at) else {
        return if buffer.len() > MAX_HEAD_BYTES {
            Err(Refusal::new(431, "the request's head is over 16 KiB"))
        } else {
            Ok(Progress::NeedMore)
        };
    };
    if end + 4 > MAX_HEAD_BYTES {
        return Err(Refusal::new(431, "the request's head is over 16 KiB"));
    }
    let text = std::str::from_utf8(&buffer[..end])
        .map_err(|_| Refusal::new(400, "the request's head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let (method, target) = request_line(lines.next().unwrap_or_default())?;
    let mut headers = Vec::new();
    for line in lines {
        if headers.len() == MAX_HEADERS {
            return Err(Refusal::new(431, "the request has more than 64 headers"));
        }
        headers.push(header_line(line)?);
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut head = Head {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        headers,
        body_length: 0,
    };
    head.body_length = body_length(&head)?;
    Ok(Progress::Head(head, end + 4))
}
// ANCHOR_END: parse_head

fn request_line(line: &str) -> Result<(&str, &str), Refusal> {
    let bad = || Refusal::new(400, "the request line is not `METHOD /path HTTP/1.1`");
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(bad());
    };
    if method.is_empty() || !method.bytes().all(|byte| byte.is_ascii_uppercase()) || !target.starts_with('/')
    {
        return Err(bad());
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(Refusal::new(505, "only HTTP/1.0 and HTTP/1.1 are spoken here"));
    }
    Ok((method, target))
}

fn header_line(line: &str) -> Result<(String, String), Refusal> {
    let bad = || Refusal::new(400, "a header line is not `Name: value`");
    // A line starting with a blank continues the previous one in old HTTP: refused, as
    // RFC 9112 allows, rather than read two ways.
    let (name, value) = line.split_once(':').ok_or_else(bad)?;
    let token = |byte: u8| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(bad());
    }
    if value.bytes().any(|byte| byte.is_ascii_control() && byte != b'\t') {
        return Err(Refusal::new(400, "a header value holds a control character"));
    }
    Ok((name.to_ascii_lowercase(), value.trim().to_string()))
}

// ANCHOR: body_length
/// How long the body is: `Content-Length`, once, at most [`MAX_BODY_BYTES`]; never chunked.
fn body_length(head: &Head) -> Result<usize, Refusal> {
    if head.has_header("transfer-encoding") {
        return Err(Refusal::new(411, "send the body with a Content-Length, not chunked"));
    }
    if !head.has_header("content-length") {
        return Ok(0);
    }
    let value = head
        .header("content-length")
        .ok_or_else(|| Refusal::new(400, "Content-Length is given more than once"))?;
    if value.is_empty() || value.len() > 19 || !value.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(Refusal::new(400, "Content-Length is not a number"));
    }
    let length: u64 = value.parse().map_err(|_| Refusal::new(400, "Content-Length is not a number"))?;
    if length > MAX_BODY_BYTES as u64 {
        return Err(Refusal::new(413, "the body is over 1 MiB"));
    }
    Ok(length as usize)
}
// ANCHOR_END: body_length

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// `%41b%2F` → `Ab/`; `None` for a broken escape or bytes that are not UTF-8. `+` stays `+`.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = bytes.get(at + 1..at + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}
