//! Test-only helpers, compiled into tests alone (never into the program).
//!
//! * [`receiver`]: a plain HTTP receiver that records what was POSTed to it (webhooks). The
//!   end-to-end checks include the same file (`selfcheck/kit.rs`), so there is one copy.
//!
//! What the program itself runs offline lives beside the chapters, with product names:
//! [`crate::scripted_server`] (the local Chat Completions server behind `--demo`, `eval` and
//! the tests), [`crate::demo`] (the rules of the demo model), [`crate::temp_dir`] (scratch
//! directories for `eval`'s scenarios and the tests) and [`crate::random`] (retry jitter, and
//! generated inputs in tests).

pub mod receiver;
