//! Metrics for Prometheus: a text file that node_exporter's textfile collector picks up.
//!
//! No server, no port, no library: after each attempt the loop writes a few lines of the
//! Prometheus text exposition format to a file, atomically (a temporary file beside it,
//! fsynced, renamed over the old one), so the collector never reads half a file. The
//! temporary name does not end in `.prom`, so the collector never reads it either.

use crate::ch02_loop::Error;
use crate::ch15_tasks::TaskStatus;
use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

// ANCHOR: metrics
/// What one `tasks run` has counted so far (counters start at 0 with each run, which
/// Prometheus reads as a counter reset), and the task list's statuses at the last write.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics {
    pub tasks: Vec<(TaskStatus, usize)>,
    pub attempts: u64,
    pub verify_failures: u64,
    pub model_requests: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub attempt_seconds_sum: f64,
    pub last_attempt_seconds: f64,
}

impl Metrics {
    /// An attempt ended (`verified`: its verify command passed).
    pub fn attempt(&mut self, took: Duration, verified: bool) {
        self.attempts += 1;
        self.verify_failures += u64::from(!verified);
        self.attempt_seconds_sum += took.as_secs_f64();
        self.last_attempt_seconds = took.as_secs_f64();
    }
}
// ANCHOR_END: metrics

/// One metric: its name after `mini_agent_`, type, help text, and samples (label part, value).
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    samples: Vec<(String, String)>,
}

// ANCHOR: render
impl Metrics {
    /// The text exposition format: for each metric `# HELP` and `# TYPE`, then its samples.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for Family { name, kind, help, samples } in self.families() {
            let _ = writeln!(out, "# HELP mini_agent_{name} {help}");
            let _ = writeln!(out, "# TYPE mini_agent_{name} {kind}");
            for (labels, value) in samples {
                let _ = writeln!(out, "mini_agent_{name}{labels} {value}");
            }
        }
        out
    }
}
// ANCHOR_END: render

impl Metrics {
    fn families(&self) -> Vec<Family> {
        let family = |name, kind, help, value: String| Family {
            name,
            kind,
            help,
            samples: vec![(String::new(), value)],
        };
        let by_status =
            self.tasks.iter().map(|(status, n)| (format!("{{status=\"{}\"}}", status.word()), n.to_string()));
        let seconds = vec![
            ("_sum".to_string(), format!("{:.3}", self.attempt_seconds_sum)),
            ("_count".to_string(), self.attempts.to_string()),
        ];
        vec![
            Family {
                name: "tasks",
                kind: "gauge",
                help: "Tasks in the list, by status.",
                samples: by_status.collect(),
            },
            family("attempts_total", "counter", "Task attempts made.", self.attempts.to_string()),
            family(
                "verify_failures_total",
                "counter",
                "Attempts whose verify command failed.",
                self.verify_failures.to_string(),
            ),
            family(
                "model_requests_total",
                "counter",
                "Requests sent to the model.",
                self.model_requests.to_string(),
            ),
            family(
                "prompt_tokens_total",
                "counter",
                "Prompt tokens the model read.",
                self.prompt_tokens.to_string(),
            ),
            family(
                "completion_tokens_total",
                "counter",
                "Tokens the model wrote.",
                self.completion_tokens.to_string(),
            ),
            Family {
                name: "attempt_seconds",
                kind: "summary",
                help: "Time per attempt: session and verify command.",
                samples: seconds,
            },
            family(
                "last_attempt_seconds",
                "gauge",
                "Time the last attempt took.",
                format!("{:.3}", self.last_attempt_seconds),
            ),
        ]
    }
}

// ANCHOR: write
/// Replaces `path` with `text` so that a reader sees the old file or the new one, never a
/// mix: a temporary file in the same directory, fsynced, renamed over it.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), Error> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let written = (|| {
        // 0644: the collector usually runs as another user.
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        // No fsync of the directory (the task list has one): a rename lost to a power cut
        // leaves the previous sample, which the next attempt replaces.
        fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written.map_err(|e| Error::io(format!("writing the metrics file {}", path.display()), e))
}
// ANCHOR_END: write
