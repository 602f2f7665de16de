//! The proof: after the agent stops, the harness — not the model — runs the task's
//! `verify_command` in the root, and exit code 0 is the only thing that makes a task pass.
//!
//! The command runs with the bash tool's rules (chapter 3's `run_command`): its own process
//! group, a timeout, a bounded capture, keys removed from its environment and redacted from
//! its output. What it printed becomes the next attempt's `{{last_error}}`, so it is cut once
//! more to a size that fits a prompt and a JSON file: the head says what ran, the tail says
//! what failed.

use crate::ch02_loop::ToolStatus;
use crate::ch03_tools::Workspace;

/// The longest a verify command may run (the bash tool's own ceiling).
pub const VERIFY_TIMEOUT_SECS: u64 = 600;

/// How much of the output is kept as `last_error`: head and tail.
const KEPT_HEAD: usize = 1_000;
const KEPT_TAIL: usize = 3_000;

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
            _ => Verdict::Failed(head_and_tail(&output.content)),
        }
    }
}
// ANCHOR_END: verify

/// `text` cut to its first [`KEPT_HEAD`] and last [`KEPT_TAIL`] bytes, on character boundaries.
pub fn head_and_tail(text: &str) -> String {
    if text.len() <= KEPT_HEAD + KEPT_TAIL {
        return text.to_string();
    }
    let mut head = KEPT_HEAD;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - KEPT_TAIL;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}\n[… {} bytes cut …]\n{}", &text[..head], tail - head, &text[tail..])
}
