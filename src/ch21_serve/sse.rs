//! Server-Sent Events, written by hand: the `--json` events as a stream a browser can read.
//!
//! Chapter 11 read this format; here we write it. An event is a few `field: value` lines and
//! a blank line:
//!
//! ```text
//! id: 42
//! event: tool_started
//! data: {"type":"tool_started","id":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}
//!
//! ```
//!
//! `id` is the event's number: a client that lost the connection asks again with
//! `Last-Event-ID: 42` and gets what came after. `event` is the type, so a browser's
//! `EventSource` can listen per type. `data` is the very JSON line `--json` prints, and one
//! line always: serde_json escapes every newline inside a string. A comment line (`:`) every
//! [`HEARTBEAT`] keeps proxies from closing a quiet stream and finds a reader that left.
//!
//! The stream never makes a turn wait: it reads the session's log ([`Hub`](super::events::Hub))
//! at its own pace, and a reader too slow to keep up is told how many events it missed.

use super::events::Stored;
use super::response::{COMMON_HEADERS, status_line};
use super::turns::{Ending, Live, Shared};
use serde_json::json;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The longest a stream stays silent: then a comment line is sent.
pub const HEARTBEAT: Duration = Duration::from_secs(15);

/// When a stream ends.
pub enum Until {
    /// After the `exit` event of this turn (`POST …/messages/stream`).
    TurnEnds(u64, Arc<Ending>),
    /// Once the session has nothing running or queued (`GET …/events`).
    Idle,
}

// ANCHOR: event_text
/// One event on the wire.
pub fn event_text(event: &Stored) -> String {
    format!("id: {}\nevent: {}\ndata: {}\n\n", event.seq, event.kind, event.data)
}
// ANCHOR_END: event_text

// ANCHOR: stream
/// Sends the session's events numbered after `after` to `out`, then the new ones as they
/// come, until `until` says the stream is done, the reader leaves, or the service stops.
pub fn stream(out: &mut impl Write, live: &Live, shared: &Shared, after: u64, until: &Until) {
    let head = format!(
        "{}Content-Type: text/event-stream\r\n{COMMON_HEADERS}X-Accel-Buffering: no\r\n\r\nretry: 2000\n\n",
        status_line(200)
    );
    if out.write_all(head.as_bytes()).and_then(|()| out.flush()).is_err() {
        return;
    }
    let mut last = after;
    loop {
        // Read before the batch: a session idle now has all its events in the log already.
        let busy = live.busy();
        let batch = live.hub.after(&shared.sequence, last);
        let mut text = String::new();
        if batch.missed > 0 {
            let note = format!(
                "{} events were dropped before this reader got them; GET /sessions/{} has the whole transcript",
                batch.missed, live.id
            );
            let notice = json!({"type": "notice", "kind": "gap", "text": note});
            text.push_str(&format!("event: notice\ndata: {notice}\n\n"));
        }
        // ANCHOR_END: stream
        // ANCHOR: stream_events
        let mut done = false;
        for event in &batch.events {
            last = event.seq;
            if let Until::TurnEnds(number, _) = until {
                if event.turn != *number {
                    continue;
                }
                done |= event.kind == "exit";
            }
            text.push_str(&event_text(event));
        }
        done |= match until {
            Until::TurnEnds(_, ending) => ending.is_done() && batch.events.is_empty(),
            Until::Idle => !busy,
        };
        if !text.is_empty() && out.write_all(text.as_bytes()).and_then(|()| out.flush()).is_err() {
            return; // the reader went away
        }
        if done || shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        live.hub.wait_after(last, HEARTBEAT);
        let quiet = live.hub.after(&shared.sequence, last).events.is_empty();
        if quiet && out.write_all(b": keep-alive\n\n").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}
// ANCHOR_END: stream_events
