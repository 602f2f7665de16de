//! The proof: after the agent stops, the harness — not the model — runs the task's
//! `verify_command` in the root, and exit code 0 is the only thing that makes a task pass.
//!
//! The command runs with the bash tool's rules (chapter 3's `run_command`): its own process
//! group, a timeout, a bounded capture, keys removed from its environment and redacted from
//! its output. What it printed becomes the next attempt's `{{last_error}}`, so it is cut once
//! more to a size that fits a prompt and a JSON file: the head says what ran, the tail says
//! what failed. A person is shown less at once: the last [`TAIL_LINES`] lines when the check
//! fails ([`tail`]), one line in `tasks list` ([`summary`]), the whole in `tasks show`.

use crate::ch02_loop::ToolStatus;
use crate::ch03_tools::Workspace;
use crate::text::{head_and_tail, shorten};

/// The longest a verify command may run (the bash tool's own ceiling).
pub const VERIFY_TIMEOUT_SECS: u64 = 600;

/// How much of the output is kept as `last_error`: its first and last characters.
const KEPT_HEAD: usize = 1_000;
const KEPT_TAIL: usize = 3_000;
/// What a failed check shows at once: its last lines, each cut to a width.
pub const TAIL_LINES: usize = 12;
pub const TAIL_LINE_CHARS: usize = 200;

/// How a verify command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    /// It exited non-zero or timed out; the (bounded) output says how.
    Failed(String),
    /// Ctrl+C or SIGTERM stopped it: the attempt was interrupted, not failed.
    Interrupted,
}

/// Something that can check a task; the real one runs a command, tests use a script.
pub trait Verifier {
    fn verify(&mut self, command: &str) -> Verdict;
}

// ANCHOR: verify
/// Runs verify commands in a workspace root, with the bash tool's rules.
pub struct CommandVerifier<'a> {
    pub workspace: &'a Workspace,
    pub timeout_secs: u64,
}

impl Verifier for CommandVerifier<'_> {
    fn verify(&mut self, command: &str) -> Verdict {
        let (code, output) = self.workspace.run_command(command, self.timeout_secs);
        match (code, output.status) {
            (_, ToolStatus::Interrupted) => Verdict::Interrupted,
            (Some(0), _) => Verdict::Passed,
            _ => Verdict::Failed(kept(&output.content)),
        }
    }
}
// ANCHOR_END: verify

/// `text` cut to its first [`KEPT_HEAD`] and last [`KEPT_TAIL`] characters.
pub fn kept(text: &str) -> String {
    match head_and_tail(text, KEPT_HEAD + KEPT_TAIL, KEPT_HEAD, KEPT_TAIL) {
        Some((head, cut, tail)) => format!("{head}\n[… {cut} characters cut …]\n{tail}"),
        None => text.to_string(),
    }
}

// ANCHOR: tail
/// The last [`TAIL_LINES`] lines of a check's output that are not blank, each at most
/// [`TAIL_LINE_CHARS`] characters, and how many came before them. Unsanitised: the caller prints them.
pub fn tail(output: &str) -> (Vec<String>, usize) {
    let lines: Vec<&str> = output.lines().filter(|line| !line.trim().is_empty()).collect();
    let before = lines.len().saturating_sub(TAIL_LINES);
    (lines[before..].iter().map(|line| shorten(line, TAIL_LINE_CHARS)).collect(), before)
}

/// A last error on one line of at most `max_chars`: its last line that says something, with
/// the status line (`[exit code 1]`) after the line before it.
pub fn summary(error: &str, max_chars: usize) -> String {
    let mut lines = error.lines().map(str::trim).filter(|line| !line.is_empty()).rev();
    let last = lines.next().unwrap_or_default();
    let line = match lines.next() {
        Some(before) if last.starts_with('[') && last.ends_with(']') => format!("{before} {last}"),
        _ => last.to_string(),
    };
    shorten(&crate::text::one_line(&line), max_chars)
}
// ANCHOR_END: tail
