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

pub mod metrics;
pub mod notifier;
#[cfg(test)]
mod tests;
pub mod webhook;

pub use metrics::Metrics;
pub use notifier::{MetricsOut, Notifier, SharedMetrics, event_body};
pub use webhook::{Policy, WEBHOOK_POLICY, Webhook, WebhookConfig, signature};
