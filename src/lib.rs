//! mini-agent: a small coding agent, laid out as the chapters of the book that explains it.
//! Read the modules in order; each one uses only the chapters before it.

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
#[cfg(feature = "ch10")]
mod ch10_stream;
#[cfg(feature = "ch11")]
pub mod ch11_streaming;
#[cfg(feature = "ch12")]
pub mod ch12_permissions;
#[cfg(feature = "ch13")]
pub mod ch13_evaluation;
#[cfg(feature = "ch15")]
pub mod ch15_tasks;
#[cfg(feature = "ch16")]
pub mod ch16_approval;
#[cfg(feature = "ch16")]
pub mod ch16_hooks;
#[cfg(feature = "ch16")]
pub mod ch16_task_approval;
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
pub mod testkit;
pub mod text;
