//! Chapter 17 in `tasks run`: the `--webhook` and `--metrics` flags, the webhook of an approved
//! `.mini_agent/hooks.json`, and the observer that sends and writes them.
//!
//! `--webhook URL` is the person's own choice and needs no approval; its secret comes from
//! `MINI_AGENT_WEBHOOK_SECRET`, not from a flag that `ps` would show, and like the model's key
//! it is taken out of the environment at start-up: no command the agent runs can read it. The file's webhook
//! comes through chapter 16's rule: untrusted, the whole file is skipped, webhook included.

use super::webhook::SECRET_VARIABLE;
use super::{METRICS, MetricsOut, Notifier, SharedMetrics, WEBHOOK, Webhook, WebhookConfig};
use crate::ch02_loop::Error;
use crate::ch02_loop::command_line::Settings;
use crate::ch03_tools::secrets::Keys;
use crate::ch05_sessions::Parts;
use crate::ch07_context::Stats;
use crate::ch15_tasks::{TaskEvent, TaskEvents, TaskLayer, TaskRun, shared};
use crate::ch16_hooks::Hooks;
use std::path::{Path, PathBuf};

/// `--metrics FILE` from the current directory, its directory made canonical (so that git,
/// which sees the root's real path, can leave the file out of the task commits).
pub fn metrics_file(extra: &Settings) -> Result<Option<PathBuf>, Error> {
    extra.value(&METRICS).map(|file| resolve(Path::new(file)).map_err(Error::Usage)).transpose()
}

fn resolve(file: &Path) -> Result<PathBuf, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("reading the current directory: {e}"))?;
    let path = cwd.join(file);
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(format!("--metrics {}: not a file name", file.display()));
    };
    let parent = parent.canonicalize().map_err(|e| format!("--metrics {}: {e}", file.display()))?;
    Ok(parent.join(name))
}

// ANCHOR: build
/// The observer for this run: `--webhook` (else the approved file's webhook) and `--metrics`.
pub fn notifier(
    extra: &Settings,
    metrics: Option<PathBuf>,
    hooks: &Hooks,
    tasks: &Path,
    keys: &Keys,
) -> Result<Notifier, Error> {
    let flag = extra.value(&WEBHOOK);
    let webhook = match flag {
        Some(url) => Some(WebhookConfig {
            url: url.to_string(),
            // Taken out of the environment at start-up, like the model's key (chapter 3).
            secret: keys.get(SECRET_VARIABLE),
            events: None,
        }),
        None => hooks.webhook(),
    };
    let webhook = match webhook.map(Webhook::new).transpose() {
        Ok(webhook) => webhook,
        // The flag was typed now: a usage error. The file's: a warning, and the loop runs.
        Err(error) if flag.is_some() => return Err(error),
        Err(error) => {
            eprintln!("mini-agent: warning: the webhook of .mini_agent/hooks.json is ignored: {error}");
            None
        }
    };
    let metrics = metrics.map(|file| MetricsOut { file, tasks: tasks.into() });
    Ok(Notifier::new(webhook, metrics))
}
// ANCHOR_END: build

/// The loop's observers in order: the screen (and hooks), then the notifier, which writes the
/// metrics once more when the run ends, however it ends.
pub struct WithNotifier<'a> {
    pub inner: Box<dyn TaskEvents + 'a>,
    pub notifier: Notifier,
}

impl TaskEvents for WithNotifier<'_> {
    fn event(&mut self, event: TaskEvent<'_>) {
        self.inner.event(event);
        self.notifier.event(event);
    }

    fn run_ended(&mut self) {
        self.inner.run_ended();
        self.notifier.write_metrics();
    }
}

// ANCHOR: layer
/// This chapter's layer of `tasks run`: `--metrics` is read (and checked) as the run starts,
/// since git must leave the file out; the notifier is built after the hooks were approved,
/// and each attempt's session adds its requests and tokens (chapter 7's `Stats`) to it.
pub fn layer<'a>(run: &TaskRun<'a>) -> Result<Box<dyn TaskLayer + 'a>, Error> {
    let metrics = metrics_file(run.extra)?;
    Ok(Box::new(Notifications { run: *run, metrics, usage: None }))
}

struct Notifications<'a> {
    run: TaskRun<'a>,
    metrics: Option<PathBuf>,
    /// The notifier's counters, once it is built.
    usage: Option<SharedMetrics>,
}

impl TaskLayer for Notifications<'_> {
    fn harness_file(&self) -> Option<&Path> {
        self.metrics.as_deref()
    }

    fn events<'v>(
        &mut self,
        inner: Box<dyn TaskEvents + 'v>,
        parts: &Parts,
    ) -> Result<Box<dyn TaskEvents + 'v>, Error> {
        let TaskRun { extra, tasks, keys, .. } = self.run;
        let notifier = notifier(extra, self.metrics.take(), shared::<Hooks>(parts)?, tasks, keys)?;
        self.usage = Some(notifier.counters.clone());
        Ok(Box::new(WithNotifier { inner, notifier }))
    }

    fn attempt_ended(&self, stats: &Stats) {
        if let Some(counters) = &self.usage {
            counters.add_usage(stats.requests, stats.prompt_tokens, stats.completion_tokens);
        }
    }
}
// ANCHOR_END: layer
