//! Rehearsed faults: two requests make the demo server fail as real servers do, so the
//! chapters on retries (8) and streams (11) run offline, with no server of your own.
//!
//! | request | what the server does |
//! |---|---|
//! | `be overloaded` | answers every request `503` with `Retry-After: 2`, as a busy server does |
//! | `break the stream` | streamed, sends some text and the first fragment of a `bash` call (cut after `rm -rf`), then closes the connection; not streamed, closes it without a response |
//!
//! A fault answers the request, not the conversation so far: a retry sends the same request
//! and meets the same fault, and the client's own rules decide what happens next, which is
//! what those chapters show.

use super::plan::{message_text, request_of};
use crate::scripted_server::Step;
use serde_json::Value;

/// A fault the user's last message asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fault {
    Overloaded,
    BrokenStream,
}

/// The text a broken stream sends before it breaks.
pub(super) const CUT_TEXT: &str = "Let me clean up.";
/// The tool call a broken stream is cut in: its name, and its arguments as far as they came.
pub(super) const CUT_CALL: (&str, &str) = ("bash", "{\"command\": \"rm -rf");

/// The fault a Chat Completions request asks for in its last message, if that is the user's.
pub(super) fn rehearsed(request: &Value) -> Option<Fault> {
    let last = request["messages"].as_array()?.last()?;
    if last["role"] != "user" {
        return None;
    }
    let text = message_text(last);
    match request_of(&text).trim().trim_end_matches(['.', '!']).to_lowercase().as_str() {
        "be overloaded" => Some(Fault::Overloaded),
        "break the stream" => Some(Fault::BrokenStream),
        _ => None,
    }
}

/// `503` with `Retry-After: 2`, a busy server's answer, with the error `body` of the wire.
pub(super) fn overloaded(body: Value) -> Step {
    Step::Reply { status: 503, headers: vec![("retry-after".into(), "2".into())], body: body.to_string() }
}
