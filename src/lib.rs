//! mini-agent: a small coding agent, laid out as the chapters of the book that explains it.
//! Read the modules in order; each one uses only the chapters before it (a check in
//! `build-guide --check` says so), and the composition root in `main.rs` → `ch14_main/` is the
//! one place that knows them all.
//!
//! Where each concern lives:
//!
//! | concern | where |
//! |---|---|
//! | the agent a reader types first (loop + `bash`, one file) | `ch01_agent.rs` |
//! | the loop, its vocabulary, its seams (`Model`, `Tools`, `Observer`), the one `Error` | `ch02_loop/` |
//! | the Chat Completions client; chapter 2's lone `bash` tool | `ch02_model/`, `ch02_bash.rs` |
//! | the six workspace tools, confinement, output bounds, keys kept secret | `ch03_tools/` |
//! | the terminal: REPL, rendering Markdown (whole or as it streams), Ctrl+C | `ch04_terminal/` |
//! | sessions: ids, the session file, `-c`/`-r`, listing | `ch05_sessions/` |
//! | `AGENTS.md` and skills in the system prompt | `ch06_skills.rs` |
//! | context: token estimates, compaction, `/stats`, repeated calls | `ch07_context/` |
//! | retries of failed requests | `ch08_retry.rs` |
//! | the crash-safe journal; trusting workspace files | `ch09_journal.rs`, `ch09_trust.rs` |
//! | recovery: `--status`, unknown outcomes, reading a journal as a stream | `ch10_recovery/` |
//! | streaming replies (Server-Sent Events) | `ch11_streaming/` |
//! | permissions: the gate, and the question that shows a command or a change before it runs | `ch12_permissions.rs`, `ch12_question.rs` |
//! | evaluation scenarios | `ch13_evaluation/` |
//! | the composition root: command line, `--json`, the session host (in the binary; `host/` from chapter 5, `early.rs` before) | `ch14_main/` |
//! | the unattended task loop | `ch15_tasks/` |
//! | hooks, and approving workspace files that run commands | `ch16_hooks/` |
//! | webhooks and metrics | `ch17_notify/` |
//! | MCP servers | `ch18_mcp/` |
//! | the Anthropic Messages API | `ch19_anthropic/` |
//! | what every state has, from chapter 1: the demo model, the scripted local server it and `eval` and the tests talk to, scratch directories, a small random generator, text helpers | `demo/`, `scripted_server/`, `temp_dir.rs`, `random.rs`, `text.rs` |
//! | test-only helpers (never in the program) | `testkit/` |

#[cfg(not(feature = "ch02"))]
pub mod ch01_agent;
#[cfg(all(feature = "ch02", not(feature = "ch03")))]
pub mod ch02_bash;
#[cfg(feature = "ch02")]
pub mod ch02_loop;
#[cfg(feature = "ch02")]
pub mod ch02_model;
#[cfg(feature = "ch03")]
pub mod ch03_tools;
#[cfg(feature = "ch04")]
pub mod ch04_terminal;
#[cfg(feature = "ch05")]
pub mod ch05_sessions;
#[cfg(feature = "ch06")]
pub mod ch06_skills;
#[cfg(feature = "ch07")]
pub mod ch07_context;
#[cfg(feature = "ch08")]
pub mod ch08_retry;
#[cfg(feature = "ch09")]
pub mod ch09_journal;
#[cfg(feature = "ch09")]
pub mod ch09_trust;
#[cfg(feature = "ch10")]
pub mod ch10_recovery;
#[cfg(feature = "ch11")]
pub mod ch11_streaming;
#[cfg(feature = "ch12")]
pub mod ch12_permissions;
#[cfg(feature = "ch12")]
pub mod ch12_question;
#[cfg(feature = "ch13")]
pub mod ch13_evaluation;
#[cfg(feature = "ch15")]
pub mod ch15_tasks;
#[cfg(feature = "ch16")]
pub mod ch16_hooks;
#[cfg(feature = "ch17")]
pub mod ch17_notify;
#[cfg(feature = "ch18")]
pub mod ch18_mcp;
#[cfg(feature = "ch19")]
pub mod ch19_anthropic;
#[cfg(feature = "ch20")]
pub mod ch20_sandbox;
#[cfg(feature = "ch21")]
pub mod ch21_serve;
pub mod demo;
pub mod random;
pub mod scripted_server;
pub mod temp_dir;
/// The test kit names the crate as `selfcheck` does (`mini_agent::…`), from either side.
#[cfg(test)]
extern crate self as mini_agent;
/// Shared with `selfcheck`, which uses what these unit tests do not.
#[cfg(test)]
#[allow(dead_code)]
mod testkit;
pub mod text;
