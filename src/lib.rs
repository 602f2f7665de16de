//! mini-agent: a small coding agent, laid out as the chapters of the book that explains it.
//! Read the modules in order; each one uses only the chapters before it.

pub mod ch01_loop;
pub mod ch04_terminal;
pub mod ch06_skills;
pub mod ch13_scripted_server;
