//! The wire side of the scripted server: just enough HTTP/1.1 to read a request (head and
//! `Content-Length` body) and answer it as a [`Step`] says — a reply kept alive, a stream
//! closed after its last chunk, a status, a cut connection or one never answered.

use super::{Handler, Step};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

pub(super) fn serve_connection(
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
        let Some(Request { path, body, .. }) = read_request(&mut reader) else { return };
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if let Ok(mut log) = log.lock() {
            log.push(value.clone());
        }
        let step = match handler.lock() {
            Ok(mut handler) => handler(&path, &value),
            Err(_) => return,
        };
        if !answer(step, &mut writer, stopped) {
            return;
        }
    }
}

/// Writes the answer to one request; `false` when the connection is done with (closed by the
/// peer, or a step that ends it).
pub(super) fn answer(step: Step, writer: &mut TcpStream, stopped: &std::sync::atomic::AtomicBool) -> bool {
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
pub(super) fn wire_bytes(step: &Step) -> Option<(String, Vec<u8>)> {
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
pub(super) fn nap(ms: u64, stopped: &std::sync::atomic::AtomicBool) -> bool {
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

/// One HTTP request as it arrived: its path, its headers (names in lower case) and its body.
#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The value of header `name`, in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }
}

/// The largest body read: a request that says it is longer is refused (the connection closed).
pub const MAX_BODY: usize = 256 << 20;

/// Reads one request (a blank line left over before it is skipped); `None` when the peer
/// closed, spoke nonsense or announced a body over [`MAX_BODY`]. The test kit's webhook
/// receiver reads its POSTs with it too.
pub fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    while line.trim_end().is_empty() {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
    }
    let path = line.split_whitespace().nth(1).unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let Some((name, value)) = line.trim_end().split_once(':') else { break };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length = match headers.iter().find(|(name, _)| name == "content-length") {
        Some((_, value)) => value.parse().ok().filter(|length| *length <= MAX_BODY)?,
        None => 0,
    };
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request { path, headers, body })
}

pub(super) fn reason(status: u16) -> &'static str {
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
