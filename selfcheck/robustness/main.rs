//! Robustness: generated hostile input, and a program that must never panic on it.
//!
//! A user's shell and a model's server can send anything: arguments in any order, bytes
//! that are not UTF-8, replies cut in half, JSON nested a hundred thousand levels deep, a
//! session file torn by a power cut. Hand-written examples only cover what their author
//! thought of, so these tests generate inputs from a seeded xorshift generator (std only,
//! no proptest) and check what must hold for *every* input: no panic, no hang, an error
//! that says what went wrong. The parsers are tested directly (fast, thousands of cases),
//! and the binary from outside (a panic exits with 101 and prints "panicked at").
//!
//! Runs are reproducible: each test prints its seed, `MINI_AGENT_ROBUSTNESS_SEED=<n>`
//! replays it (or explores new inputs when changed), and `MINI_AGENT_ROBUSTNESS_CASES=<n>`
//! scales how many cases are generated.

// Shared with the contract target; each target uses the helpers it needs.
#[allow(dead_code)]
#[path = "../binary_run.rs"]
mod binary_run;

mod argv;
mod journal;
mod replies;
mod streams;

use binary_run::Run;

pub use mini_agent::random::{XorShift, cases, nested_json};

/// The start of a generated input, for a failure message.
pub fn preview(text: &str) -> String {
    mini_agent::text::shorten(text, 80)
}

/// What every run of the binary must satisfy, whatever it was fed.
pub fn assert_survived(run: &Run, input: &str) {
    assert!(!run.timed_out, "hung on {input}\n{}", run.describe());
    assert!(!run.panicked(), "panicked on {input}\n{}", run.describe());
    assert!(
        matches!(run.code, Some(0 | 1 | 2 | 130)),
        "exit code outside the contract (0, 1, 2, 130) on {input}\n{}",
        run.describe()
    );
    if run.code == Some(1) {
        assert!(!run.stderr.trim().is_empty(), "failed without a reason on {input}\n{}", run.describe());
    }
}

/// A clear reason is a line or two, not a dump of what the server sent.
pub const CLEAR_REASON_MAX_BYTES: usize = 4096;

/// A failure with a short reason: exit 1, and a non-empty stderr of bounded size.
pub fn assert_clear_failure(run: &Run, input: &str) {
    assert_survived(run, input);
    assert_eq!(run.code, Some(1), "expected a failure on {input}\n{}", run.describe());
    assert!(
        run.stderr.len() <= CLEAR_REASON_MAX_BYTES,
        "the reason is {} bytes long on {input}\n{}",
        run.stderr.len(),
        run.describe()
    );
}
