//! The binary. Chapter 1's state runs the agent a reader types in (`ch01_agent`); from
//! chapter 2 on, the command line in `cli/` composes the chapters' pieces.

#[cfg(feature = "ch02")]
mod cli;

#[cfg(feature = "ch02")]
fn main() -> std::process::ExitCode {
    cli::main()
}

#[cfg(not(feature = "ch02"))]
fn main() -> std::process::ExitCode {
    mini_agent::ch01_agent::main()
}
