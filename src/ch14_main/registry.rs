//! The chapter list: every chapter of this state registers what it adds to the command line.
//!
//! A chapter describes its flags, `--help` lines, rules, secret variables and slash commands
//! as data (chapter 2's `Flag` and `Help`, chapter 3's `SecretVariable`, chapter 4's
//! `SlashCommand`) and hands them over in its `register` function. This is the one list of
//! those functions, one line per chapter, in reading order; the parser, `--help`, the REPL's
//! `/help` and the start-up that takes the secrets out of the environment all read the
//! [`Registry`] it fills. It runs first thing in `main`, before any thread exists.

use super::Hooks;
use super::endpoint::Keys;
use mini_agent::ch02_loop::Error;
use mini_agent::ch02_loop::command_line::{self, Check, Flag, Help};
use mini_agent::ch02_model::layers::{Layer, ModelLayer, Wire};

// ANCHOR: chapters
/// What the chapters of this state registered.
pub fn chapters() -> Registry {
    let mut registry = Registry::default();
    command_line::register(&mut registry);
    mini_agent::ch02_model::layers::register(&mut registry);
    #[cfg(feature = "ch03")]
    {
        mini_agent::ch03_tools::register(&mut registry);
        // SAFETY (of the hook): `main` calls it first thing, before any thread exists.
        registry.hooks.take_keys = Some(|words, registry| unsafe {
            mini_agent::ch03_tools::secrets::take_at_start_up(words, &registry.secrets)
        });
    }
    #[cfg(feature = "ch04")]
    {
        mini_agent::ch04_terminal::register(&mut registry);
        registry.hooks.early.one_shot = Some(super::early::terminal::one_shot);
        registry.hooks.early.repl = Some(super::early::terminal::repl);
    }
    #[cfg(feature = "ch05")]
    {
        mini_agent::ch05_sessions::register(&mut registry);
        registry.hooks.agent = Some(super::host::start::agent_with_events);
        // Heard from chapter 14 on, when `--json` is in the table.
        registry.hooks.usage_error = Some(super::host::json_events::usage_error);
        registry.handlers.push(("list", super::host::app::Agent::list));
    }
    #[cfg(feature = "ch06")]
    mini_agent::ch06_skills::register(&mut registry);
    #[cfg(feature = "ch07")]
    {
        mini_agent::ch07_context::register(&mut registry);
        registry.handlers.push(("compact", super::host::app::Agent::compact));
        registry.handlers.push(("stats", super::host::app::Agent::stats_report));
    }
    #[cfg(feature = "ch08")]
    mini_agent::ch08_retry::register(&mut registry);
    #[cfg(feature = "ch10")]
    {
        mini_agent::ch10_recovery::register(&mut registry);
        registry.handlers.push(("resume", super::host::app::Agent::resume_session));
        registry.reopening = super::host::reopen::REOPENING;
    }
    #[cfg(feature = "ch11")]
    mini_agent::ch11_streaming::register(&mut registry);
    #[cfg(feature = "ch12")]
    mini_agent::ch12_permissions::register(&mut registry);
    #[cfg(feature = "ch13")]
    {
        mini_agent::ch13_evaluation::register(&mut registry);
        registry.runs.push(("eval", super::evaluate));
    }
    #[cfg(feature = "ch14")]
    super::host::start::register(&mut registry);
    #[cfg(feature = "ch15")]
    {
        mini_agent::ch15_tasks::register(&mut registry);
        registry.runs.push(("tasks", super::host::tasks::main));
    }
    #[cfg(feature = "ch16")]
    mini_agent::ch16_hooks::register(&mut registry);
    #[cfg(feature = "ch17")]
    mini_agent::ch17_notify::register(&mut registry);
    #[cfg(feature = "ch18")]
    mini_agent::ch18_mcp::register(&mut registry);
    #[cfg(feature = "ch19")]
    mini_agent::ch19_anthropic::register(&mut registry);
    #[cfg(feature = "ch20")]
    mini_agent::ch20_sandbox::register(&mut registry);
    #[cfg(feature = "ch21")]
    {
        mini_agent::ch21_serve::register(&mut registry);
        registry.runs.push(("serve", super::host::serve::main));
    }
    registry
}
// ANCHOR_END: chapters

// ANCHOR: registry
/// Everything registered, in chapter order.
#[derive(Default)]
pub struct Registry {
    pub flags: Vec<Flag>,
    pub help: Vec<Help>,
    pub checks: Vec<Check>,
    /// The model's layers, by place (chapter order within one): `build_model` folds them.
    pub model_layers: Vec<(ModelLayer, Layer)>,
    /// What a chapter does in place of the earlier behaviour (see [`Hooks`]).
    pub hooks: Hooks,
    /// Whether a person's own question is answered where no session can be recorded (a
    /// read-only checkout): chapter 14 says yes. From chapter 5, which brings sessions.
    #[cfg(feature = "ch05")]
    pub answers_unrecorded: bool,
    /// The subcommands this state runs: `eval` (13), `sessions` (14), `tasks` (15), `serve` (21).
    pub runs: Vec<(&'static str, Run)>,
    /// Secret variables (chapter 3), and flags whose value is a credential.
    #[cfg(feature = "ch03")]
    pub secrets: (Vec<mini_agent::ch03_tools::secrets::SecretVariable>, Vec<&'static str>),
    /// The REPL's slash commands (chapter 4).
    #[cfg(feature = "ch04")]
    pub commands: Vec<mini_agent::ch04_terminal::SlashCommand>,
    /// The layers of the task loop (chapter 15): chapter 16's approval and hooks, chapter 17's
    /// notifications, chapter 20's sandbox, in chapter order.
    #[cfg(feature = "ch15")]
    pub task_layers: mini_agent::ch15_tasks::TaskLayers,
    /// What runs each on the session's agent (chapter 5; `/new` and the reports of a
    /// session's tools, `/skills` and `/mcp`, are the agent's own).
    #[cfg(feature = "ch05")]
    pub handlers: Vec<(&'static str, super::host::session::Handler)>,
    /// How `-c` and `-r` choose and reopen a session: chapter 5's, or chapter 10's.
    #[cfg(feature = "ch05")]
    pub reopening: super::host::start::Reopening,
    /// What the chapters add to every session, each made once per run (chapter 5's parts).
    #[cfg(feature = "ch05")]
    pub parts: Vec<(&'static str, mini_agent::ch05_sessions::parts::MakePart)>,
}

/// A subcommand: its words after the name, the table, the run's secrets; its exit code.
pub type Run = fn(&[String], &'static Registry, &Keys) -> Result<u8, Error>;

impl command_line::Registry for Registry {
    fn flag(&mut self, flag: Flag) {
        self.flags.push(flag);
    }
    fn help(&mut self, help: Help) {
        self.help.push(help);
    }
    fn check(&mut self, check: Check) {
        self.checks.push(check);
    }
}
// ANCHOR_END: registry

#[cfg(feature = "ch03")]
impl mini_agent::ch03_tools::secrets::RegisterSecrets for Registry {
    fn secret(&mut self, variable: mini_agent::ch03_tools::secrets::SecretVariable) {
        self.secrets.0.push(variable);
    }
    fn capability_flag(&mut self, long: &'static str) {
        self.secrets.1.push(long);
    }
    fn redactor(&mut self, install: fn(&Keys, &str), line: fn(&str) -> String) {
        (self.hooks.install_redactor, self.hooks.redact_line) = (Some(install), Some(line));
    }
}

#[cfg(feature = "ch04")]
impl mini_agent::ch04_terminal::RegisterCommands for Registry {
    fn command(&mut self, command: mini_agent::ch04_terminal::SlashCommand) {
        self.commands.push(command);
    }
    fn terminal(&mut self, visible: fn(&str) -> String, stop_signal: fn() -> Option<i32>) {
        (self.hooks.visible, self.hooks.stop_signal) = (Some(visible), Some(stop_signal));
    }
    fn answer_streamed(&mut self, when: fn(&command_line::Settings) -> bool) {
        self.hooks.answer_streamed = Some(when);
    }
}

impl mini_agent::ch02_model::layers::RegisterModel for Registry {
    /// Kept sorted by place; a layer goes after those of earlier chapters in its place.
    fn model_layer(&mut self, place: ModelLayer, layer: Layer) {
        let at = self.model_layers.partition_point(|(earlier, _)| *earlier <= place);
        self.model_layers.insert(at, (place, layer));
    }
    fn wire(&mut self, wire: Wire) {
        self.hooks.wire = Some(wire);
    }
}

/// A part registered under an earlier chapter's name replaces it, and is made in its own
/// chapter's turn (after what it builds on).
#[cfg(feature = "ch05")]
impl mini_agent::ch05_sessions::RegisterParts for Registry {
    fn part(&mut self, name: &'static str, make: mini_agent::ch05_sessions::parts::MakePart) {
        self.parts.retain(|(registered, _)| *registered != name);
        self.parts.push((name, make));
    }
}

impl Registry {
    /// The subcommand named `word` (`eval`, `tasks`…): one that registered flags of its own
    /// (each has `--help`).
    pub fn subcommand(&self, word: &str) -> Option<&'static str> {
        let names = self.flags.iter().map(|flag| flag.command.split(' ').next().unwrap_or_default());
        names.filter(|name| !name.is_empty()).find(|name| *name == word)
    }
}
