//! The slash commands: those the REPL knows itself (`/help`, `/exit`) and those it hands to its
//! host (`/new`, and what later chapters register: `/list`, `/compact`…). A command is data — a
//! name, an argument if it takes one, a line of `/help` — so a chapter adds one by registering
//! it, and the host routes it by name. Parsing is a pure function over the table, so it is
//! tested without a terminal.

use crate::ch02_loop::command_line::Settings;
use crate::ch03_tools::secrets::RegisterSecrets;

// ANCHOR: commands
/// A slash command a chapter registers: the REPL parses it and `/help` lists it; the host
/// runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlashCommand {
    pub chapter: u8,
    /// `list` for `/list`.
    pub name: &'static str,
    /// The argument it needs, as `/help` names it (`<id>`), or `""` for none.
    pub argument: &'static str,
    pub help: &'static str,
}

/// What a chapter registers from this one on: flags, help, model layers, secrets, and slash
/// commands. This chapter also registers how the terminal is kept safe and what stops a run:
/// `visible` makes control characters visible in what the command line prints, `stop_signal`
/// says which signal (SIGTERM 15, SIGHUP 1) stopped the run, if one did. A chapter whose flag
/// sends the replies' text to stdout as it arrives says when (`answer_streamed`; chapter 11).
pub trait RegisterCommands: RegisterSecrets {
    fn command(&mut self, command: SlashCommand);
    fn terminal(&mut self, visible: fn(&str) -> String, stop_signal: fn() -> Option<i32>);
    fn answer_streamed(&mut self, when: fn(&Settings) -> bool);
}

/// A slash command typed at the prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Exit,
    /// A registered command: the host runs it.
    Host(HostCommand),
}

/// A registered command as typed: its name and its argument (empty when it takes none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCommand {
    pub name: &'static str,
    pub argument: String,
}
// ANCHOR_END: commands

/// `/new`: this chapter's one host command.
pub const NEW: SlashCommand =
    SlashCommand { chapter: 4, name: "new", argument: "", help: "start a new conversation" };

// ANCHOR: help
/// What `/help` prints: a line per command of this chapter's state.
pub fn help(commands: &[SlashCommand]) -> String {
    let line = |usage: String, help: &str| format!("{usage:<15}{help}");
    let mut lines = vec![line("/help".into(), "this list")];
    for command in commands {
        let usage = match command.argument {
            "" => format!("/{}", command.name),
            argument => format!("/{} {argument}", command.name),
        };
        lines.push(line(usage, command.help));
    }
    lines.push(line("/exit".into(), "leave (also Ctrl+C or Ctrl+D at the prompt)"));
    lines.push("During a turn: Ctrl+C stops it; lines you type are sent with the next model request.".into());
    lines.join("\n")
}
// ANCHOR_END: help

// ANCHOR: parse_command
/// `None` when the line is a message, not a command. A path such as `/usr/bin/env is
/// missing` is a message: a command word has no second slash.
pub fn parse_command(line: &str, commands: &[SlashCommand]) -> Option<Result<Command, String>> {
    let (word, rest) = command_word(line)?;
    let command = match word {
        "help" | "?" => Command::Help,
        "exit" | "quit" => Command::Exit,
        _ => match commands.iter().find(|command| command.name == word) {
            None => return Some(Err(format!("unknown command /{word}; type /help"))),
            Some(command) if !command.argument.is_empty() && rest.is_empty() => {
                return Some(Err(format!("usage: /{word} {}: {}", command.argument, command.help)));
            }
            Some(command) => Command::Host(HostCommand { name: command.name, argument: rest.to_string() }),
        },
    };
    Some(Ok(command))
}

/// The command word of a line that is a command, and the rest of the line, trimmed.
pub fn command_word(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix('/')?;
    let word = rest.split(char::is_whitespace).next().unwrap_or_default();
    (!word.contains('/')).then(|| (word, rest[word.len()..].trim()))
}
// ANCHOR_END: parse_command
