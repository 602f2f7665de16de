//! Chapter 2 — how long to wait for a reply: its first byte, and the gaps after it.
//!
//! A server that has received a request may say nothing for a long time and still be working.
//! A local model reads the whole prompt before it writes a token: at 40 tokens a second, a
//! 16,000-token prompt takes 400 s, and a reply that is not streamed comes only once it is
//! all written. After the first byte, silence means something else: a reply that has begun
//! keeps coming, or the server is stuck. So the two waits have two bounds. The gaps after the
//! first byte are bounded by the idle timeout (`MINI_AGENT_IDLE_TIMEOUT_SECS`, 300 s). The
//! first byte may take longer: `MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS` when it is set, else the
//! idle timeout plus a second for every [`REQUEST_BYTES_PER_SECOND`] bytes of the request,
//! which grows with the prompt the server has to read.
//!
//! ureq bounds each read of the socket, headers and body alike, with one number; it cannot
//! tell a first byte from a later one. So the request runs on a worker thread that counts the
//! bytes it receives, and the caller, which already polls for Ctrl+C, looks at the count and
//! at the clock ([`run_watched`]). ureq's own bound stays, as a backstop a little past both,
//! so that an abandoned worker ends too.

use super::errors::{SENT_NOT_REPEATED, idle_error, limit_error, seconds, whole_seconds};
use super::{IDLE_TIMEOUT_VARIABLE, MAX_REPLY_BYTES, reply_too_large, wait_for};
use crate::ch02_loop::Error;
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that fixes the wait for a reply's first byte (whole seconds;
/// unset: [`first_byte_timeout`]'s rule).
pub const FIRST_BYTE_VARIABLE: &str = "MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS";

// ANCHOR: first_byte
/// The request bytes a slow local server is given a second for, before its first byte:
/// about 25 tokens a second, slower than a small model on two CPU cores reads a prompt.
pub const REQUEST_BYTES_PER_SECOND: usize = 100;

/// How long the first byte of a reply may take: `fixed` when the user set it, else the idle
/// timeout plus a second for every [`REQUEST_BYTES_PER_SECOND`] bytes of the request.
pub fn first_byte_timeout(fixed: Option<Duration>, idle: Duration, request_bytes: usize) -> Duration {
    let reading = Duration::from_millis((request_bytes * 1000 / REQUEST_BYTES_PER_SECOND) as u64);
    fixed.unwrap_or(idle + reading)
}

/// "no reply from the server within 940 s of the request (…)": names what sets the bound.
pub fn first_byte_message(bound: Duration, fixed: bool) -> String {
    let why = match fixed {
        true => FIRST_BYTE_VARIABLE.to_string(),
        false => format!(
            "{IDLE_TIMEOUT_VARIABLE} plus 1 s per {REQUEST_BYTES_PER_SECOND} bytes of request, for a \
             server that reads the prompt first; {FIRST_BYTE_VARIABLE} sets it"
        ),
    };
    format!("no reply from the server within {} s of the request ({why})", seconds(bound))
}
// ANCHOR_END: first_byte

/// How long a model request may wait, as the environment says: between two bytes, for the
/// first byte (unset: scaled to the request), and in all (unset: no bound). Read once per run and
/// handed to each client the run builds.
#[derive(Clone, Copy, Debug)]
pub struct Waits {
    pub idle: Duration,
    pub first_byte: Option<Duration>,
    pub limit: Option<Duration>,
}

impl Waits {
    pub fn from_environment() -> Result<Waits, Error> {
        let var = |name: &str| std::env::var(name).ok();
        Ok(Waits {
            idle: super::parse_idle_timeout(var(super::IDLE_TIMEOUT_VARIABLE).as_deref())?,
            first_byte: parse_first_byte_timeout(var(FIRST_BYTE_VARIABLE).as_deref())?,
            limit: super::parse_request_limit(var(super::REQUEST_LIMIT_VARIABLE).as_deref())?,
        })
    }
}

/// `MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS`'s value: unset or empty is the rule of
/// [`first_byte_timeout`]; anything but a whole number of seconds, at least 1, is an error.
pub fn parse_first_byte_timeout(value: Option<&str>) -> Result<Option<Duration>, Error> {
    whole_seconds(FIRST_BYTE_VARIABLE, value, "unset: the idle timeout plus 1 s per 100 bytes of request")
}

// ANCHOR: run_watched
/// Runs `work` (a request and the reading of its reply) on its own thread, as
/// [`run_interruptibly`](super::run_interruptibly) does, and watches the reply arrive: `work`
/// adds the bytes it receives to the count it is given. No byte within `first_byte` of the
/// start, or none for `idle` after the last one, and the wait ends with an error saying which.
pub fn run_watched<T: Send + 'static>(
    first_byte: (Duration, bool),
    idle: Duration,
    work: impl FnOnce(Arc<AtomicUsize>) -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    let received = Arc::new(AtomicUsize::new(0));
    let counter = received.clone();
    let (mut seen, mut since) = (0, Instant::now());
    let watch = move || {
        let now = received.load(Ordering::SeqCst);
        if now != seen {
            (seen, since) = (now, Instant::now());
            return Ok(());
        }
        match seen {
            0 if since.elapsed() >= first_byte.0 => {
                let message = first_byte_message(first_byte.0, first_byte.1);
                Err(Error::Network(format!("{message}; {SENT_NOT_REPEATED}")))
            }
            1.. if since.elapsed() >= idle => Err(idle_error(idle)),
            _ => Ok(()),
        }
    };
    wait_for(move || work(counter), watch)?
}
// ANCHOR_END: run_watched

/// The backstop for ureq's own per-read bound: a little past both of ours.
pub fn backstop(first_byte: Duration, idle: Duration) -> Duration {
    first_byte.max(idle) + Duration::from_secs(5)
}

/// The whole body, at most [`MAX_REPLY_BYTES`], adding each piece's size to `received` as it
/// arrives; a larger body is a model error, not a network one.
pub fn read_counted(
    url: &str,
    response: ureq::http::Response<ureq::Body>,
    idle: Duration,
    received: &AtomicUsize,
) -> Result<Vec<u8>, Error> {
    let mut body = response.into_body();
    let mut reader = body.with_config().limit(MAX_REPLY_BYTES as u64).reader();
    let (mut bytes, mut piece) = (Vec::new(), vec![0; 16 * 1024]);
    loop {
        match reader.read(&mut piece) {
            Ok(0) => return Ok(bytes),
            Ok(n) => {
                bytes.extend_from_slice(&piece[..n]);
                received.fetch_add(n, Ordering::SeqCst);
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                return Err(match ureq::Error::from(error) {
                    ureq::Error::BodyExceedsLimit(_) => reply_too_large(),
                    ureq::Error::Timeout(ureq::Timeout::Global) => limit_error(),
                    ureq::Error::Timeout(_) => idle_error(idle),
                    error => Error::Network(format!(
                        "reading the reply from {url}: {error} — {SENT_NOT_REPEATED}; check the server, \
                         then try again"
                    )),
                });
            }
        }
    }
}
