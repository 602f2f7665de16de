//! The webhook: one signed JSON POST per task event, retried within a fixed bound.
//!
//! The receiver is somebody else's server, so everything about it is bounded: the time to
//! connect, the time of one try, the number of retries and the time of the whole delivery.
//! A receiver that is down, slow or silent costs the loop at most [`WEBHOOK_POLICY`]'s
//! `total`, then one warning line. Which statuses are worth another try is a parameter of
//! the policy, not chapter 8's list: a model's 500 is a bug that repeats, a webhook
//! receiver's 500 is often a restart.

use crate::ch02_loop::{Error, interrupted};
use crate::ch02_model::errors::parse_retry_after;
use crate::ch02_model::run_interruptibly;
use crate::ch03_tools::secrets::{SecretVariable, secret};
use crate::ch04_terminal::sanitize::sanitize_command;
use crate::ch08_retry::sleep_interruptibly;
use crate::ch16_hooks::approval::shown_word;
use crate::ch16_hooks::{Hooks, Section};
use ring::hmac;
use serde::Deserialize;
use serde_json::Value;
use std::time::{Duration, Instant, SystemTime};

/// The header that carries the body's HMAC-SHA256 when a secret is set.
pub const SIGNATURE_HEADER: &str = "X-Mini-Agent-Signature";
/// The environment variable that holds `--webhook`'s secret (a flag would show it in `ps`).
/// A command that read it could sign forged task events, so chapter 3 takes it out of the
/// environment and redacts it like a key.
pub const SECRET_VARIABLE: SecretVariable = secret("MINI_AGENT_WEBHOOK_SECRET");
pub const SECRETS: &[SecretVariable] = &[SECRET_VARIABLE];

/// `"webhook": {"url", "secret", "events"}` in `.mini_agent/hooks.json`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct WebhookConfig {
    pub url: String,
    #[serde(default)]
    pub secret: Option<String>,
    /// Which events to send (`task_completed`, `task_failed`, `needs_human`); absent: all.
    #[serde(default)]
    pub events: Option<Vec<String>>,
}

/// The `webhook` key of `.mini_agent/hooks.json`: chapter 16 approves it with the hooks,
/// showing where the data would go.
pub const HOOKS_SECTION: Section = Section { key: "webhook", summary: summary_of };

fn summary_of(value: &Value) -> Result<String, String> {
    let webhook = WebhookConfig::from_value(value)?;
    let events = webhook.events.as_ref().map_or("every task event".into(), |events| {
        events.iter().map(|event| shown_word(event)).collect::<Vec<_>>().join(", ")
    });
    Ok(format!("POST {events} to {}", sanitize_command(&webhook.url)))
}

impl WebhookConfig {
    fn from_value(value: &Value) -> Result<WebhookConfig, String> {
        WebhookConfig::deserialize(value).map_err(|error| format!("webhook: {error}"))
    }
}

impl Hooks {
    /// The file's webhook, if the file may be obeyed and has one.
    pub fn webhook(&self) -> Option<WebhookConfig> {
        self.section(HOOKS_SECTION.key).and_then(|value| WebhookConfig::from_value(value).ok())
    }
}

// ANCHOR: policy
/// How hard to try, and for how long at most.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// Statuses worth another try. Chapter 8 leaves 500 out for the model; a webhook takes it.
    pub retry_statuses: &'static [u16],
    pub max_retries: u32,
    pub connect_timeout: Duration,
    /// One try, from connecting to the last byte of the answer.
    pub try_timeout: Duration,
    /// The whole delivery, waits included: nothing starts that would end after it.
    pub total: Duration,
    /// The first wait; each retry doubles it (a `Retry-After` replaces it).
    pub first_backoff: Duration,
}

pub const WEBHOOK_POLICY: Policy = Policy {
    retry_statuses: &[429, 500, 502, 503, 504],
    max_retries: 3,
    connect_timeout: Duration::from_secs(5),
    try_timeout: Duration::from_secs(10),
    total: Duration::from_secs(30),
    first_backoff: Duration::from_secs(1),
};
// ANCHOR_END: policy

/// A checked webhook, ready to send.
#[derive(Clone, Debug)]
pub struct Webhook {
    url: String,
    secret: Option<String>,
    events: Option<Vec<String>>,
}

impl Webhook {
    /// Checks the URL: `http://` or `https://` and a host, nothing else.
    pub fn new(config: WebhookConfig) -> Result<Webhook, Error> {
        let url = config.url.trim().to_string();
        let lower = url.to_ascii_lowercase();
        let rest = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://"));
        let host = rest.map(|rest| rest.split(['/', '?', '#']).next().unwrap_or_default());
        if host.is_none_or(str::is_empty) || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::Usage(format!(
                "the webhook URL must be http:// or https:// with a host, got {:?}",
                crate::text::shorten(&url, 80)
            )));
        }
        let secret = config.secret.filter(|secret| !secret.is_empty());
        Ok(Webhook { url, secret, events: config.events })
    }

    /// Scheme and host only: the path of a webhook URL is often a secret of its own.
    pub fn shown(&self) -> String {
        let (scheme, rest) = self.url.split_once("://").unwrap_or(("", &self.url));
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let host = host.rsplit('@').next().unwrap_or_default();
        format!("{scheme}://{host}")
    }

    pub fn signed(&self) -> bool {
        self.secret.is_some()
    }

    /// Whether `event` (`task_completed`…) is one the configuration asked for. The hook
    /// names (`TaskCompleted`…) are accepted too.
    pub fn wants(&self, event: &str) -> bool {
        let fold = |name: &str| name.replace('_', "").to_ascii_lowercase();
        self.events.as_ref().is_none_or(|events| events.iter().any(|e| fold(e) == fold(event)))
    }
}

// ANCHOR: sign
/// `sha256=<hex>`: the HMAC-SHA256 of exactly the bytes sent, keyed with the secret.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256={hex}")
}
// ANCHOR_END: sign

/// A delivery that was answered with 2xx: its status and how many tries it took.
#[derive(Debug, PartialEq, Eq)]
pub struct Delivered {
    pub status: u16,
    pub tries: u32,
}

/// What one try came back with.
enum Answer {
    Status {
        status: u16,
        retry_after: Option<Duration>,
    },
    /// Nothing was sent (connection refused): as safe to retry as a 503.
    Refused(String),
    /// Anything else (a timeout, a cut): the receiver may have it, so no second copy.
    Failed(String),
}

impl Webhook {
    // ANCHOR: deliver
    /// POSTs `body` until a 2xx, a status not worth retrying, the retries or the time are
    /// used up. The error is one line for the warning.
    pub fn deliver(&self, body: &[u8], policy: &Policy) -> Result<Delivered, String> {
        let started = Instant::now();
        let mut wait = policy.first_backoff;
        for tries in 1.. {
            let left = policy.total.saturating_sub(started.elapsed());
            let why = match self.try_once(body, policy, left) {
                Answer::Status { status, .. } if (200..300).contains(&status) => {
                    return Ok(Delivered { status, tries });
                }
                Answer::Status { status, retry_after } if policy.retry_statuses.contains(&status) => {
                    wait = retry_after.unwrap_or(wait);
                    format!("HTTP {status}")
                }
                Answer::Status { status, .. } => return Err(format!("HTTP {status}, not retried")),
                Answer::Refused(why) => why,
                Answer::Failed(why) => return Err(why),
            };
            if tries > policy.max_retries {
                return Err(format!("{why} after {tries} tries"));
            }
            if started.elapsed() + wait >= policy.total {
                let total = policy.total.as_secs();
                return Err(format!("{why}; the next try would end after the {total} s bound"));
            }
            sleep_interruptibly(wait).map_err(|_| "interrupted".to_string())?;
            wait = wait.saturating_mul(2);
        }
        unreachable!("the loop returns")
    }
    // ANCHOR_END: deliver

    fn try_once(&self, body: &[u8], policy: &Policy, left: Duration) -> Answer {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(policy.connect_timeout.min(left)))
            .timeout_global(Some(policy.try_timeout.min(left)))
            .user_agent(concat!("mini-agent/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let mut post = agent.post(&self.url).header("content-type", "application/json");
        if let Some(secret) = &self.secret {
            post = post.header(SIGNATURE_HEADER, signature(secret, body));
        }
        let body = body.to_vec();
        let sent = run_interruptibly(move || post.send(&body[..]));
        match sent {
            Err(_) => Answer::Failed("interrupted".into()),
            Ok(Ok(response)) => {
                let header = |name: &str| response.headers().get(name)?.to_str().ok().map(str::to_string);
                let retry_after = header("retry-after")
                    .and_then(|value| parse_retry_after(&value, SystemTime::now()))
                    .map(Duration::from_millis);
                Answer::Status { status: response.status().as_u16(), retry_after }
            }
            Ok(Err(ureq::Error::ConnectionFailed)) => Answer::Refused("cannot connect".into()),
            Ok(Err(ureq::Error::Io(io))) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                Answer::Refused("connection refused".into())
            }
            Ok(Err(ureq::Error::Timeout(_))) if !interrupted() => {
                Answer::Failed(format!("no answer within {} s", policy.try_timeout.min(left).as_secs_f32()))
            }
            Ok(Err(error)) => Answer::Failed(error.to_string()),
        }
    }
}
