//! mini-agent: a small coding agent, laid out as the chapters of the book that explains it.
//! Read the modules in order; each one uses only the chapters before it.

pub mod ch01_loop;
pub mod ch02_model;
pub mod ch03_tools;
pub mod ch04_terminal;
pub mod ch05_sessions;
pub mod ch06_skills;
pub mod ch07_context;
pub mod ch08_retry;
pub mod ch09_journal;
pub mod ch09_trust;
pub mod ch10_recovery;
pub mod ch11_streaming;
pub mod ch12_permissions;
pub mod ch13_demo;
pub mod ch13_evaluation;
pub mod ch13_scripted_server;
