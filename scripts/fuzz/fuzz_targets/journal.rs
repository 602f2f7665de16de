//! Fuzz target: the journal reader of chapter 9 and the recovery rules of chapter 10.
//!
//! Any bytes as a session file: reading never panics; a refusal names the file; what is
//! read can be told by `--status` and planned for a resume without a panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mini_agent::ch09_journal::read_journal;
use mini_agent::ch10_recovery::{prepare_resume, status};
use std::path::PathBuf;
use std::sync::OnceLock;

/// One file per fuzzing process, rewritten for every input.
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("mini-agent-fuzz-journal-{}.jsonl", std::process::id()))
    })
}

fuzz_target!(|bytes: &[u8]| {
    let path = scratch();
    std::fs::write(path, bytes).expect("write the scratch journal");
    match read_journal(path) {
        Ok(loaded) => {
            let _ = status(&loaded.records).map(|s| s.to_string());
            let _ = prepare_resume(&loaded.records, false);
            let _ = prepare_resume(&loaded.records, true);
        }
        Err(error) => {
            let message = error.to_string();
            assert!(
                message.contains(&*path.to_string_lossy()),
                "an error that does not name the file: {message}"
            );
        }
    }
});
