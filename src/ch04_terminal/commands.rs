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
    /// The sessions of this root (chapter 5), with their state from chapter 10.
    #[cfg(feature = "ch05")]
    List,
    #[cfg(feature = "ch10")]
    Resume(String),
    /// What went into the system prompt (chapter 6).
    #[cfg(feature = "ch06")]
    Skills,
    /// Context (chapter 7): summarise now, and the session's figures.
    #[cfg(feature = "ch07")]
    Compact,
    #[cfg(feature = "ch07")]
    Stats,
    /// `/mcp`: the MCP servers, their state and their tools (chapter 18).
    #[cfg(feature = "ch18")]
    Mcp,
}
// ANCHOR_END: commands

// ANCHOR: help
/// What `/help` prints, a line per command of this chapter's state.
pub const HELP: &[&str] = &[
    "/help          this list",
    "/new           start a new session",
    #[cfg(feature = "ch05")]
    "/list          list the sessions of this workspace",
    #[cfg(feature = "ch10")]
    "/resume <id>   switch to a session (id or unique prefix)",
    #[cfg(feature = "ch06")]
    "/skills        show AGENTS.md and the skills that were loaded, and how",
    #[cfg(feature = "ch07")]
    "/compact       replace older history with a summary",
    #[cfg(feature = "ch07")]
    "/stats         requests, tokens, tool calls and time of this session",
    #[cfg(feature = "ch18")]
    "/mcp           MCP servers, their state and their tools",
    "/exit          leave (also Ctrl+C or Ctrl+D at the prompt)",
    "During a turn: Ctrl+C stops it; lines you type are sent with the next model request.",
];

// ANCHOR_END: help

// ANCHOR: parse_command
/// `None` when the line is a message, not a command. A path such as `/usr/bin/env is
/// missing` is a message: a command word has no second slash.
pub fn parse_command(line: &str) -> Option<Result<Command, String>> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    let word = rest.split(char::is_whitespace).next().unwrap_or_default();
    if word.contains('/') {
        return None;
    }
    let command = match word {
        "help" | "?" => Command::Help,
        "exit" | "quit" => Command::Exit,
        "new" => Command::Host(HostCommand::New),
        #[cfg(feature = "ch05")]
        "list" => Command::Host(HostCommand::List),
        #[cfg(feature = "ch10")]
        "resume" => match rest[word.len()..].trim() {
            "" => return Some(Err("usage: /resume <id> (see /list)".into())),
            id => Command::Host(HostCommand::Resume(id.to_string())),
        },
        #[cfg(feature = "ch06")]
        "skills" => Command::Host(HostCommand::Skills),
        #[cfg(feature = "ch07")]
        "compact" => Command::Host(HostCommand::Compact),
        #[cfg(feature = "ch07")]
        "stats" => Command::Host(HostCommand::Stats),
        #[cfg(feature = "ch18")]
        "mcp" => Command::Host(HostCommand::Mcp),
        _ => return Some(Err(format!("unknown command /{word}; type /help"))),
    };
    Some(Ok(command))
}
// ANCHOR_END: parse_command
