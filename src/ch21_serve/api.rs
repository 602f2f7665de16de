//! The handlers: one function per route, each a few lines between the HTTP request and the
//! [`Backend`](super::Backend) or the service's own state.
//!
//! Each runs on the request's own thread, so a handler may wait: `POST …/messages` waits for
//! its turn to end, a stream waits for events. Input is checked before anything is done, so a
//! refused request changes nothing: a body that is not a JSON object is a 400, an unknown
//! session a 404 before a message is queued, a session still at work a 409 before it is
//! deleted. A turn that cannot start (its journal open in another process) records nothing,
//! and `POST …/messages` answers with the backend's refusal, a 409.

use super::Service;
use super::backend::Decision;
use super::request::Request;
use super::response::{Refusal, Response};
use super::routes::{Route, allowed, resolve};
use super::sse::{Until, stream};
use super::turns::{Activity, Live};
use serde_json::{Map, Value, json};
use std::net::TcpStream;
use std::sync::Arc;

/// Answers one request that passed the guard.
pub fn handle(service: &Service, request: Request, out: &mut TcpStream) {
    let head = &request.head;
    let route = match resolve(&head.method, &head.path) {
        Ok(route) => route,
        Err(refusal) => {
            let mut response = refusal.response();
            if refusal.status == 405 {
                response = response.with_header("Allow", allowed(&head.path).unwrap_or_default());
            }
            let _ = response.write_to(out);
            return;
        }
    };
    let answer = match (head.method.as_str(), route) {
        (_, Route::MessagesStream(id)) => return send_streamed(service, &id, &request, out),
        (_, Route::Events(id)) => return follow(service, &id, &request, out),
        ("GET", Route::Console) => Ok(service.console.response()),
        ("GET", Route::Health) => Ok(health(service)),
        ("GET", Route::Sessions) => list_sessions(service),
        ("POST", Route::Sessions) => create_session(service, &request),
        ("GET", Route::Session(id)) => show_session(service, &id),
        ("DELETE", Route::Session(id)) => delete_session(service, &id),
        ("POST", Route::Messages(id)) => send(service, &id, &request),
        ("POST", Route::Cancel(id)) => cancel(service, &id),
        ("GET", Route::Approvals(id)) => approvals(service, &id),
        ("POST", Route::Approval(id, call)) => answer(service, &id, &call, &request),
        ("GET", Route::Tasks) => service.shared.backend.tasks().map(|tasks| Response::json(200, &tasks)),
        ("POST", Route::Tasks) => object(&request)
            .and_then(|task| service.shared.backend.add_task(&Value::Object(task)))
            .map(|task| Response::json(201, &task)),
        ("POST", Route::TaskReset(id)) => {
            service.shared.backend.reset_task(&id).map(|task| Response::json(200, &task))
        }
        (method, route) => Err(Refusal::new(500, format!("no handler for {method} {route:?}"))),
    };
    let _ = answer.unwrap_or_else(|refusal| refusal.response()).write_to(out);
}

fn health(service: &Service) -> Response {
    let (running, waiting) = service.shared.slots.counts();
    let max = service.shared.slots.capacity();
    Response::json(200, &json!({"ok": true, "running": running, "waiting": waiting, "max_running": max}))
}

/// What the service adds to a session's fields: what it is doing now.
fn with_activity(service: &Service, mut session: Value) -> Value {
    let id = session["id"].as_str().unwrap_or_default().to_string();
    let (activity, queued, approvals) = match service.live_if_any(&id) {
        Some(live) => {
            let (activity, queued) = live.activity();
            (activity, queued, live.desk.len())
        }
        None => (Activity::Idle, 0, 0),
    };
    let word = match activity {
        Activity::Idle => "idle",
        Activity::Waiting => "waiting",
        Activity::Running => "running",
        Activity::Approval => "approval",
    };
    if let Some(fields) = session.as_object_mut() {
        fields.insert("activity".into(), json!(word));
        fields.insert("queued".into(), json!(queued));
        fields.insert("approvals".into(), json!(approvals));
    }
    session
}

fn list_sessions(service: &Service) -> Result<Response, Refusal> {
    let sessions = service.shared.backend.list_sessions()?;
    let sessions: Vec<Value> = sessions.into_iter().map(|session| with_activity(service, session)).collect();
    Ok(Response::json(200, &json!({"sessions": sessions})))
}

fn create_session(service: &Service, request: &Request) -> Result<Response, Refusal> {
    let body = object(request)?;
    let root = match body.get("root") {
        None | Some(Value::Null) => None,
        Some(Value::String(root)) => Some(root.as_str()),
        Some(_) => {
            return Err(Refusal::new(400, "\"root\" must be a string: a directory inside the served one"));
        }
    };
    let id = service.shared.backend.create_session(root)?;
    Ok(Response::json(201, &json!({"id": id})))
}

fn existing(service: &Service, id: &str) -> Result<Arc<Live>, Refusal> {
    match service.live_if_any(id) {
        Some(live) => Ok(live),
        None if service.shared.backend.has_session(id) => Ok(service.live(id)),
        None => Err(Refusal::new(404, format!("no session {id:?}: GET /sessions lists them"))),
    }
}

/// `GET /sessions/{id}`: its fields, its transcript, and `last_event`, the number to follow
/// its events after (read before the journal: an event may show twice, none is lost).
fn show_session(service: &Service, id: &str) -> Result<Response, Refusal> {
    existing(service, id)?;
    let last_event = service.shared.sequence.last();
    let mut session = service.shared.backend.session(id)?;
    session["last_event"] = json!(last_event);
    Ok(Response::json(200, &with_activity(service, session)))
}

fn delete_session(service: &Service, id: &str) -> Result<Response, Refusal> {
    let live = existing(service, id)?;
    if live.busy() {
        let hint = format!("session {id} has a turn running or queued: POST /sessions/{id}/cancel first");
        return Err(Refusal::new(409, hint));
    }
    service.shared.backend.delete_session(id)?;
    service.forget_session(id);
    Ok(Response::json(200, &json!({"deleted": id})))
}

/// `POST …/messages`: queues the message as the session's next turn and answers when it ends;
/// a turn that could not start is answered with its refusal (a 409 for a session that
/// another process holds open).
fn send(service: &Service, id: &str, request: &Request) -> Result<Response, Refusal> {
    let live = existing(service, id)?;
    let message = message_of(request)?;
    service.trim_logs();
    let (_, ending) = live.enqueue(&service.shared, message)?;
    let end = ending.wait();
    if let Some(refusal) = end.refused {
        return Err(refusal);
    }
    Ok(Response::json(200, &json!({"answer": end.answer, "code": end.code, "error": end.error})))
}

/// `POST …/messages/stream`: the same, answered with the turn's events as they happen.
fn send_streamed(service: &Service, id: &str, request: &Request, out: &mut TcpStream) {
    let queued = existing(service, id).and_then(|live| {
        let message = message_of(request)?;
        service.trim_logs();
        let after = service.shared.sequence.last();
        live.enqueue(&service.shared, message).map(|(number, ending)| (live, after, number, ending))
    });
    match queued {
        Ok((live, after, number, ending)) => {
            stream(out, &live, &service.shared, after, &Until::TurnEnds(number, ending))
        }
        Err(refusal) => drop(refusal.response().write_to(out)),
    }
}

/// `GET …/events`: what the session's log holds after `Last-Event-ID` (or `?after=N`), then
/// live events until the session is idle.
fn follow(service: &Service, id: &str, request: &Request, out: &mut TcpStream) {
    let head = &request.head;
    let after = head.header("last-event-id").map(str::to_string).or_else(|| head.query_value("after"));
    let after = match after.as_deref().map(str::parse::<u64>) {
        None => Ok(0),
        Some(Ok(after)) => Ok(after),
        Some(Err(_)) => Err(Refusal::new(400, "Last-Event-ID (or ?after=) must be an event's number")),
    };
    match after.and_then(|after| existing(service, id).map(|live| (live, after))) {
        Ok((live, after)) => stream(out, &live, &service.shared, after, &Until::Idle),
        Err(refusal) => drop(refusal.response().write_to(out)),
    }
}

fn cancel(service: &Service, id: &str) -> Result<Response, Refusal> {
    let live = existing(service, id)?;
    let cancelled = live.cancel(&service.shared, "cancelled over HTTP");
    Ok(Response::json(200, &json!({"cancelled": cancelled})))
}

fn approvals(service: &Service, id: &str) -> Result<Response, Refusal> {
    let live = existing(service, id)?;
    Ok(Response::json(200, &json!({"approvals": live.desk.list()})))
}

fn answer(service: &Service, id: &str, call_id: &str, request: &Request) -> Result<Response, Refusal> {
    let live = existing(service, id)?;
    let body = object(request)?;
    let reason = match body.get("reason") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(reason)) => reason.clone(),
        Some(_) => return Err(Refusal::new(400, "\"reason\" must be a string")),
    };
    let decision = match body.get("decision").and_then(Value::as_str) {
        Some("allow") => Decision::Allow,
        Some("deny") => Decision::Deny(reason),
        _ => return Err(Refusal::new(400, "\"decision\" must be \"allow\" or \"deny\"")),
    };
    live.desk.answer(call_id, decision)?;
    Ok(Response::json(200, &json!({"answered": call_id})))
}

/// The body as a JSON object; an empty body is an empty object.
fn object(request: &Request) -> Result<Map<String, Value>, Refusal> {
    if request.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(&request.body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(Refusal::new(400, "the body must be a JSON object")),
        Err(error) => Err(Refusal::new(400, format!("the body is not valid JSON: {error}"))),
    }
}

fn message_of(request: &Request) -> Result<String, Refusal> {
    match object(request)?.get("message") {
        Some(Value::String(message)) if !message.trim().is_empty() => Ok(message.clone()),
        _ => Err(Refusal::new(400, "send {\"message\": \"…\"} with the text of the message")),
    }
}

/// A task from the service's `{"name", "verify"?, "description"?, "priority"?}` (`POST /v1/tasks`).
pub fn task_from_json(request: &serde_json::Value) -> Result<crate::ch15_tasks::Task, String> {
    let text = |key: &str| match &request[key] {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::String(text) => Ok(Some(text.trim().to_string())),
        _ => Err(format!("\"{key}\" must be a string")),
    };
    let name = text("name")?.filter(|name| !name.is_empty()).ok_or("a task needs a \"name\": what to do")?;
    let mut task = crate::ch15_tasks::Task::new(String::new(), name);
    task.verify_command = text("verify")?.filter(|command| !command.is_empty());
    task.description = text("description")?.unwrap_or_default();
    task.priority = match &request["priority"] {
        serde_json::Value::Null => 0,
        value => value.as_i64().ok_or("\"priority\" must be a whole number")?,
    };
    Ok(task)
}
