//! The slash commands the REPL knows itself (`/help`, `/exit`) and those it hands to its
//! host (`/new`, `/list`, …). Parsing is a pure function, so it is tested without a terminal.

// ANCHOR: commands
/// A slash command typed at the prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Exit,
    /// Commands that need the session, the model or the skills: the host runs them.
    Host(HostCommand),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostCommand {
    New,
    List,
    Resume(String),
    Skills,
    Compact,
    Stats,
}

pub const HELP: &str = "\
/help          this list
/new           start a new session
/list          list the sessions of this workspace
/resume <id>   switch to a session (id or unique prefix)
/skills        show AGENTS.md and the skills that were loaded, and how
/compact       replace older history with a summary
/stats         requests, tokens, tool calls and time of this session
/exit          leave (also Ctrl+C or Ctrl+D at the prompt)
During a turn: Ctrl+C stops it; lines you type are sent with the next model request.";

// ANCHOR_END: commands
// ANCHOR: parse_command
/// `None` when the line is a message, not a command. A path such as `/usr/bin/env is
/// missing` is a message: a command word has no second slash.
pub fn parse_command(line: &str) -> Option<Result<Command, String>> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    let (word, argument) = match rest.split_once(char::is_whitespace) {
        Some((word, argument)) => (word, argument.trim()),
        None => (rest, ""),
    };
    if word.contains('/') {
        return None;
    }
    let command = match word {
        "help" | "?" => Command::Help,
        "exit" | "quit" => Command::Exit,
        "new" => Command::Host(HostCommand::New),
        "list" => Command::Host(HostCommand::List),
        "resume" if argument.is_empty() => return Some(Err("usage: /resume <id> (see /list)".into())),
        "resume" => Command::Host(HostCommand::Resume(argument.to_string())),
        "skills" => Command::Host(HostCommand::Skills),
        "compact" => Command::Host(HostCommand::Compact),
        "stats" => Command::Host(HostCommand::Stats),
        _ => return Some(Err(format!("unknown command /{word}; type /help"))),
    };
    Some(Ok(command))
}
// ANCHOR_END: parse_command
