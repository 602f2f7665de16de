//! Chapter 17 — notifications and metrics: telling the world what the unattended loop did.
//!
//! Nobody watches `tasks run`, so the loop reports outward, in the two shapes operators
//! already collect: a **webhook** (one signed JSON POST when a task is completed, failed or
//! needs a human) and a **metrics file** in Prometheus' text format for node_exporter's
//! textfile collector. Both hang on chapter 15's [`TaskEvents`](crate::ch15_tasks::TaskEvents)
//! seam, as chapter 16's hooks do, and both are held to the rule of this part: a receiver
//! that is down or slow costs a bounded time and one warning, never the loop.
//!
//! * [`webhook`] — the URL check, the HMAC signature, delivery with bounded retries.
//! * [`metrics`] — the counters, the exposition format, the atomic write.
//! * [`notifier`] — the observer that does both after each attempt.

use crate::ch02_loop::command_line::{Flag, Help, Takes};
use crate::ch05_sessions::RegisterParts;
use crate::ch15_tasks::RegisterTaskLayers;

pub mod metrics;
pub mod notifier;
pub mod tasks_run;
#[cfg(test)]
mod tests;
pub mod webhook;

pub use metrics::Metrics;
pub use notifier::{MetricsOut, Notifier, SharedMetrics, event_body};
pub use webhook::{Policy, WEBHOOK_POLICY, Webhook, WebhookConfig, signature};
/// `tasks run --webhook URL` and `--metrics FILE`.
pub const WEBHOOK: Flag = Flag::value(17, "--webhook", Takes::NonEmpty("URL"), &[]).of("tasks run");
pub const METRICS: Flag = Flag::value(17, "--metrics", Takes::NonEmpty("FILE"), &[]).of("tasks run");

/// Chapter 17's command line: two flags of `tasks run`, the webhook's secret (taken out of
/// the environment like a key), `--webhook`'s URL, which is a credential itself, its layer
/// of the task loop, and chapter 16's hooks reading its `webhook` section.
pub fn register(registry: &mut (impl RegisterParts + RegisterTaskLayers)) {
    registry.part("hooks", |run| Ok(crate::ch16_hooks::part(run, &[webhook::HOOKS_SECTION])));
    registry.flag(WEBHOOK);
    registry.flag(METRICS);
    registry.task_layer(tasks_run::layer);
    registry.secret(webhook::SECRET_VARIABLE);
    registry.capability_flag(WEBHOOK.long);
    let help = |page, section, lines| Help { chapter: 17, page, section, lines };
    registry.help(help(
        "",
        "HOOKS",
        &[
            "  tasks run --webhook URL    POST task_completed / task_failed / needs_human events",
            "  tasks run --metrics FILE   Prometheus text metrics after each attempt (tasks --help)",
        ],
    ));
    registry.help(help(
        "",
        "ENVIRONMENT",
        &["  MINI_AGENT_WEBHOOK_SECRET  signs tasks run --webhook events (HMAC-SHA256 header)"],
    ));
    registry.help(help(
        "tasks",
        "NOTIFICATIONS AND METRICS (tasks run)",
        &[
            "  --webhook URL     POST a JSON event (task_completed, task_failed, needs_human) to an",
            "                    http(s) URL; signed with MINI_AGENT_WEBHOOK_SECRET if set (header",
            "                    X-Mini-Agent-Signature: sha256=HMAC). Retried on 429/5xx, at most 3 times",
            "                    and 30 s per event; a failure is a warning, never a stop. The same from",
            "                    \"webhook\": {\"url\", \"secret\", \"events\"} in an approved .mini_agent/hooks.json.",
            "  --metrics FILE    after each attempt, write Prometheus text format to FILE atomically",
            "                    (for node_exporter's textfile collector; name it *.prom)",
        ],
    ));
}
