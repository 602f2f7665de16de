//! Test-only helpers shared with the unit tests: one copy, in `src/testkit/`, compiled into
//! the tests and never into the program.

#[path = "../src/testkit/receiver.rs"]
#[allow(dead_code)]
pub mod receiver;
