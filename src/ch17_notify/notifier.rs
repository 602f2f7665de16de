//! The loop's third observer (after the screen and the hooks): it sends the webhook and
//! writes the metrics file. Neither may stop the loop: a failure is one warning line.

use super::metrics::{Metrics, write_atomically};
use super::webhook::{Delivered, Policy, WEBHOOK_POLICY, Webhook};
use crate::ch04_terminal::sanitize::sanitize;
use crate::ch05_sessions::now_rfc3339;
use crate::ch15_tasks::pick::counts;
use crate::ch15_tasks::{Task, TaskEvent, TaskEvents, TaskFile};
use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// The counters, shared with whoever runs the attempts (it adds the model's requests and
/// tokens after each session).
#[derive(Clone, Default)]
pub struct SharedMetrics(pub Arc<Mutex<Metrics>>);

impl SharedMetrics {
    pub fn add_usage(&self, requests: u64, prompt_tokens: u64, completion_tokens: u64) {
        let mut metrics = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        metrics.model_requests += requests;
        metrics.prompt_tokens += prompt_tokens;
        metrics.completion_tokens += completion_tokens;
    }

    pub fn snapshot(&self) -> Metrics {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// Where the metrics go: `--metrics FILE`, and the task list the statuses are counted from.
#[derive(Clone, Debug)]
pub struct MetricsOut {
    pub file: PathBuf,
    pub tasks: PathBuf,
}

pub struct Notifier {
    pub webhook: Option<Webhook>,
    pub policy: Policy,
    pub metrics: Option<MetricsOut>,
    pub counters: SharedMetrics,
    started: Option<Instant>,
}

impl Notifier {
    pub fn new(webhook: Option<Webhook>, metrics: Option<MetricsOut>) -> Notifier {
        let counters = SharedMetrics::default();
        Notifier { webhook, policy: WEBHOOK_POLICY, metrics, counters, started: None }
    }
}

// ANCHOR: body
/// The event as the receiver gets it: no key, no secret, only what the task file holds.
pub fn event_body(event: &str, task: &Task, reason: Option<&str>, commit: Option<&str>) -> Vec<u8> {
    let mut body = json!({
        "event": event,
        "task": task,
        "session_id": task.sessions.last(),
        "time": now_rfc3339(),
    });
    if let Some(reason) = reason {
        body["reason"] = json!(reason);
    }
    if let Some(commit) = commit {
        body["commit"] = json!(commit);
    }
    body.to_string().into_bytes()
}
// ANCHOR_END: body

// ANCHOR: observer
impl TaskEvents for Notifier {
    fn event(&mut self, event: TaskEvent<'_>) {
        let (name, task, reason, commit) = match event {
            TaskEvent::Started { .. } => {
                self.started = Some(Instant::now());
                return;
            }
            TaskEvent::SetAside { .. } => return,
            TaskEvent::AttemptFailed { .. } => {
                self.attempt_ended(false);
                return self.write_metrics();
            }
            TaskEvent::Completed { task, commit } => {
                self.attempt_ended(true);
                ("task_completed", task, None, commit)
            }
            TaskEvent::Failed { task } => ("task_failed", task, None, None),
            TaskEvent::NeedsHuman { task, reason } => ("needs_human", task, Some(reason), None),
        };
        self.write_metrics(); // after the attempt, with the statuses as they are now
        if let Err(why) = self.send(name, task, reason, commit) {
            eprintln!("mini-agent: warning: {}", sanitize(&why));
        }
    }
}
// ANCHOR_END: observer

impl Notifier {
    /// Sends `event` if there is a webhook that wants it; `Ok(None)` when there is none.
    pub fn send(
        &self,
        event: &str,
        task: &Task,
        reason: Option<&str>,
        commit: Option<&str>,
    ) -> Result<Option<Delivered>, String> {
        let Some(webhook) = self.webhook.as_ref().filter(|hook| hook.wants(event)) else { return Ok(None) };
        let body = event_body(event, task, reason, commit);
        let delivered = webhook.deliver(&body, &self.policy);
        delivered
            .map(Some)
            .map_err(|why| format!("the {event} webhook to {} was not delivered: {why}", webhook.shown()))
    }

    fn attempt_ended(&mut self, verified: bool) {
        let took = self.started.take().map(|started| started.elapsed()).unwrap_or_default();
        self.counters.0.lock().unwrap_or_else(PoisonError::into_inner).attempt(took, verified);
    }

    /// Writes the metrics file now (also once when the run ends, however it ends).
    pub fn write_metrics(&self) {
        let Some(out) = &self.metrics else { return };
        let mut metrics = self.counters.snapshot();
        match TaskFile::load(&out.tasks) {
            Ok(file) => metrics.tasks = counts(&file.tasks).to_vec(),
            Err(error) => eprintln!("mini-agent: warning: metrics: {}", sanitize(&error.to_string())),
        }
        if let Err(error) = write_atomically(&out.file, &metrics.render()) {
            eprintln!("mini-agent: warning: {}", sanitize(&error.to_string()));
        }
    }
}
