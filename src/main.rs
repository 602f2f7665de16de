//! The binary. Chapter 1's state runs the agent a reader types in (`ch01_agent`); from
//! chapter 2 on, the composition root in `ch14_main/` composes the chapters' pieces.

#[cfg(feature = "ch02")]
mod ch14_main;

#[cfg(feature = "ch02")]
fn main() -> std::process::ExitCode {
    ch14_main::main()
}

#[cfg(not(feature = "ch02"))]
fn main() -> std::process::ExitCode {
    mini_agent::ch01_agent::main()
}
