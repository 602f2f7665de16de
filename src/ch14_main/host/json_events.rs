//! `--json`: the events of one task as JSON Lines on stdout, for programs.
//!
//! A script that drives the agent wants facts it can parse, not a spinner: one JSON object
//! per line, each with a `type`, written as the event happens and flushed at once. It is one
//! more [`Observer`] in the fan-out, so it sees exactly what the journal and the screen see;
//! human progress stays on stderr. The `exit` event is always the last line, also when the
//! command line itself was wrong (exit 1) or the turn limit stopped the run (exit 2): its
//! `error` then says why, as stderr does. The field names are a contract (documented in the README):
//! add fields if needed, never rename one.
//!
//! | `type` | fields |
//! |---|---|
//! | `session` | `id`, `root`, `model`, `api`, `endpoint`, `resumed`, `recorded` (false when the root cannot be written and nothing is kept) |
//! | `request` | `messages` (how many are sent) |
//! | `assistant` | `text` (the reply's text, or null when it has none), `tool_calls` (`[{id, name, arguments}]`) |
//! | `tool_started` | `id`, `name`, `arguments` |
//! | `approval` | `call_id`, `name`, `question` (one line), `diff` (a unified diff for a write or an edit, else null): a call needs a permission not granted; nobody answers, so the next event is its denial |
//! | `tool_finished` | `id`, `name`, `status`, `content` |
//! | `retry` | `attempt`, `wait_ms`, `reason` |
//! | `compaction` | `replaced`, `tokens_before`, `tokens_after`, `summary` |
//! | `notice` | `kind`, `text` |
//! | `final` | `answer` |
//! | `exit` | `code`, `error` (a one-line reason, null only for exit 0) |

use super::app::Agent;
use crate::ch14_main::registry::Registry;
use crate::ch14_main::{exit_code, one_line, say, stopped_early, turn_limit_message};
use mini_agent::ch02_loop::command_line::{Settings, VERBOSE};
use mini_agent::ch02_loop::{Error, Event, Observer, Outcome};
use mini_agent::ch03_tools::secrets::Keys;
use mini_agent::ch03_tools::secrets::redactor;
use mini_agent::ch04_terminal::{Screen, TerminalObserver, install_interrupt_handler};
use mini_agent::ch05_sessions::{CONTINUE, RESUME};
use serde_json::{Value, json};
use std::io::Write;

/// Prints events as JSON Lines on stdout. A reader that went away is not an error.
pub struct JsonEvents;

impl JsonEvents {
    pub fn emit(&self, line: Value) {
        let mut out = std::io::stdout().lock();
        // The last gate before stdout: no key or URL password in any event (chapter 3).
        let line = line.to_string();
        let _ = writeln!(out, "{}", redactor().redact(&line)).and_then(|()| out.flush());
    }

    pub fn session(&self, agent: &Agent, resumed: bool) {
        self.emit(session_event(agent, resumed));
    }

    pub fn final_answer(&self, answer: &str) {
        self.emit(json!({"type": "final", "answer": answer}));
    }

    pub fn exit(&self, code: u8, error: Option<&str>) {
        self.emit(json!({"type": "exit", "code": code, "error": error}));
    }
}

/// With `--json` nobody is asked at a terminal: the program reading the events sees each
/// question (chapter 12's `approval` event), and the call is denied.
pub fn asking(config: super::app::Config) -> super::app::Config {
    let answerer = mini_agent::ch05_sessions::Answerer::Events(|event| JsonEvents.emit(event));
    super::app::Config { answerer, ..config }
}

/// `--json` promises an `exit` event as the last line, also for a command line that did not
/// parse (the flag may sit next to the mistake).
pub fn usage_error(words: &[String], registry: &Registry, message: &str) {
    let json_registered = registry.flags.iter().any(|flag| flag.long == super::start::JSON.long);
    if json_registered && words.iter().any(|word| word == "--json") {
        JsonEvents.exit(1, Some(&one_line(message)));
    }
}

/// The agent with `--json`: every run ends with an `exit` event, also one that failed before
/// it started.
pub fn agent(settings: &Settings, registry: &'static Registry, keys: &Keys) -> Result<u8, Error> {
    let result = super::start::agent(settings, registry, keys);
    let error = match &result {
        Err(error) => Some(one_line(&error.to_string())),
        Ok(2) => Some(turn_limit_message(settings)),
        Ok(_) => None,
    };
    JsonEvents.exit(exit_code(&result), error.as_deref());
    result
}

/// `-p … --json`: the session, the loop's events, then the final answer, on stdout; the
/// progress a person reads stays on stderr.
pub fn one_shot(mut agent: Agent, task: String, settings: &Settings) -> Result<u8, Error> {
    let mut json = JsonEvents;
    let resumed = settings.has(&CONTINUE) || settings.has(&RESUME);
    json.session(&agent, resumed);
    install_interrupt_handler();
    let mut display = TerminalObserver::new(Screen::stdio(settings.has(&VERBOSE)).stderr_only(), None);
    match agent.turn_on(task, &mut display, Some(&mut json)) {
        Outcome::Completed(answer) => {
            if answer.trim().is_empty() {
                say("mini-agent: the model finished without a final answer");
            }
            json.final_answer(&answer);
            Ok(0)
        }
        stopped => stopped_early(stopped, settings),
    }
}

/// The `session` event that opens a task's events (and, in chapter 21's service, each turn's).
/// `recorded` is false for a question asked where the root cannot be written (`unrecorded.rs`):
/// a program cannot read stderr's warning, and its `id` is then no journal's.
pub fn session_event(agent: &Agent, resumed: bool) -> Value {
    let origin = &agent.config.origin;
    json!({
        "type": "session", "id": agent.session_id(), "root": agent.config.root.display().to_string(),
        "model": origin.model, "api": origin.api, "endpoint": origin.endpoint, "resumed": resumed,
        "recorded": agent.is_recorded(),
    })
}

impl Observer for JsonEvents {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        if let Some(line) = event_json(event) {
            self.emit(line);
        }
        Ok(())
    }
}

// ANCHOR: events
/// An event as `--json` prints it; `None` for those it leaves out.
pub fn event_json(event: Event) -> Option<Value> {
    Some(match event {
        Event::Request { messages } => json!({"type": "request", "messages": messages}),
        // No text is `null`, whether the server sent `""`, `null` or (streaming) nothing.
        Event::Reply(reply) => json!({
            "type": "assistant",
            "text": reply.content.as_deref().filter(|text| !text.is_empty()),
            "tool_calls": reply.tool_calls,
        }),
        Event::ToolStarted(call) => json!({
            "type": "tool_started", "id": call.id, "name": call.name, "arguments": call.arguments,
        }),
        Event::ToolFinished(call, output) => json!({
            "type": "tool_finished", "id": call.id, "name": call.name,
            "status": output.status, "content": output.content,
        }),
        // ANCHOR_END: events
        // ANCHOR: events_notes
        // Notices keep the one `notice` type, with a kind, in the contract; a later chapter's
        // notice says its own event (a retry, a compaction, partial text), or none.
        Event::Warning(text) => json!({"type": "notice", "kind": "warning", "text": text}),
        Event::Notice(notice) => return notice.json(), // streamed text: none, it is for eyes
        // Messages repeat what the events above said.
        Event::Message(_) => return None,
    })
}
// ANCHOR_END: events_notes
