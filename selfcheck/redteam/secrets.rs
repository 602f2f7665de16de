//! Red-team cases: see `main.rs` for the rule this file holds.
