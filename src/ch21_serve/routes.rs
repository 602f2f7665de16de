//! The routes: every URL the service answers, in one table a reader can scan.
//!
//! A path is split at `/` and each piece percent-decoded, then matched as a slice pattern;
//! the methods each route allows come with it, so a known path asked with the wrong method
//! is a 405 that lists the right ones (`Allow:`), and anything else a 404. Ids are checked
//! for shape here, once: a session id or a call id with `..`, a slash or a control character
//! never reaches the backend.

use super::request::percent_decode;
use super::response::Refusal;

// ANCHOR: routes
/// A request's destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Console,
    Health,
    Sessions,
    Session(String),
    Messages(String),
    MessagesStream(String),
    Events(String),
    Cancel(String),
    Approvals(String),
    Approval(String, String),
    Tasks,
    TaskReset(String),
}

/// The route for `path` and the methods it allows.
pub fn route(path: &str) -> Result<(Route, &'static [&'static str]), Refusal> {
    let pieces: Vec<String> = match path {
        "/" => Vec::new(),
        _ => path[1..]
            .split('/')
            .map(|piece| percent_decode(piece).ok_or_else(not_found))
            .collect::<Result<_, _>>()?,
    };
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let id = |text: &str| plain_id(text).ok_or_else(not_found);
    Ok(match pieces.as_slice() {
        [] => (Route::Console, &["GET"]),
        ["healthz"] => (Route::Health, &["GET"]),
        ["sessions"] => (Route::Sessions, &["GET", "POST"]),
        ["sessions", session] => (Route::Session(id(session)?), &["GET", "DELETE"]),
        ["sessions", session, "messages"] => (Route::Messages(id(session)?), &["POST"]),
        ["sessions", session, "messages", "stream"] => (Route::MessagesStream(id(session)?), &["POST"]),
        ["sessions", session, "events"] => (Route::Events(id(session)?), &["GET"]),
        ["sessions", session, "cancel"] => (Route::Cancel(id(session)?), &["POST"]),
        ["sessions", session, "approvals"] => (Route::Approvals(id(session)?), &["GET"]),
        ["sessions", session, "approvals", call] => (Route::Approval(id(session)?, id(call)?), &["POST"]),
        ["tasks"] => (Route::Tasks, &["GET", "POST"]),
        ["tasks", task, "reset"] => (Route::TaskReset(id(task)?), &["POST"]),
        _ => return Err(not_found()),
    })
}
// ANCHOR_END: routes

/// The route of a request with `method`, or the 404 or 405 that says why there is none.
pub fn resolve(method: &str, path: &str) -> Result<Route, Refusal> {
    let (route, methods) = route(path)?;
    if methods.contains(&method) {
        Ok(route)
    } else {
        Err(Refusal::new(405, format!("{path} answers {}, not {method}", methods.join(" and "))))
    }
}

/// The `Allow` header's value for a path that exists.
pub fn allowed(path: &str) -> Option<String> {
    route(path).ok().map(|(_, methods)| methods.join(", "))
}

/// Ids are short and plain: letters, digits, `-`, `_`, `.`, `:` (tool call ids from some
/// servers have them), not starting with a dot.
pub fn plain_id(text: &str) -> Option<String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.:".contains(c);
    (!text.is_empty() && text.len() <= 128 && !text.starts_with('.') && text.chars().all(plain))
        .then(|| text.to_string())
}

fn not_found() -> Refusal {
    Refusal::new(404, "no such URL here: see GET / for the console, or the README for the API")
}
