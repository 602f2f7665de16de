//! The sessions of a root as one table, for `/list` in the REPL and `mini-agent sessions`.
//!
//! A person looking for "the session where I fixed the parser" needs the date, the first
//! thing they asked, and how it ended: a failed start (no key, a refused connection) looks
//! like any other session until its state is shown. The state (from chapter 10) is the
//! `--status` verdict in one word, so the list and `--status` can never disagree; reading each
//! journal for it is the cost of a command a person types, never of a turn.

use mini_agent::ch02_loop::{Error, plural};
use mini_agent::ch04_terminal::sanitize::sanitize;
use mini_agent::ch05_sessions::SessionStore;
use mini_agent::text::take_chars;

// ANCHOR: table
/// One line per session, oldest first; `current` is marked `*`.
pub fn sessions_table(store: &SessionStore, current: Option<&str>) -> Result<String, Error> {
    // A symlinked `.mini_agent/` would list (and read) another directory's files (chapter 9).
    #[cfg(feature = "ch09")]
    store.check_dirs()?;
    // A file that is not a session (a FIFO or a link planted under a session's name) is
    // named on stderr and left out; the others are still listed.
    let mut sessions = Vec::new();
    for id in store.ids()? {
        match store.summary(id) {
            Ok(summary) => sessions.push(summary),
            Err(error) => eprintln!("mini-agent: warning: {}", sanitize(&error.to_string())),
        }
    }
    if sessions.is_empty() {
        return Ok(sanitize(&format!("no sessions yet in {}", store.root().display())));
    }
    let lines: Vec<String> = sessions
        .iter()
        .map(|s| {
            let mark = if Some(s.id.as_str()) == current { '*' } else { ' ' };
            let prompt = s.first_prompt.as_deref().unwrap_or("(no messages)");
            let prompt = take_chars(prompt.lines().next().unwrap_or_default(), 60);
            let date = s.created.get(..16).unwrap_or(&s.created).replace('T', " ");
            let turns = plural(s.user_turns, "turn");
            #[cfg(feature = "ch10")]
            let turns = format!("{:<11}  {turns:>9}", mini_agent::ch10_recovery::state_word(&s.path));
            format!("{mark} {}  {date}  {turns:>9}  {prompt}", s.id)
        })
        .collect();
    // Ids are file names and dates come from the header: the repository's text, like the
    // prompt. The table is printed as it is by `mini-agent sessions`, so it is made safe here.
    Ok(sanitize(&lines.join("\n")))
}
// ANCHOR_END: table

/// `mini-agent sessions [--root DIR]` (chapter 14): the sessions of a root, as `/list` shows them.
#[cfg(feature = "ch14")]
pub fn sessions(
    words: &[String],
    registry: &'static crate::ch14_main::registry::Registry,
    _: &crate::ch14_main::endpoint::Keys,
) -> Result<u8, Error> {
    use crate::ch14_main::args::{Parsed, parse_flags};
    use mini_agent::ch02_loop::command_line::ROOT;
    let parsed = parse_flags(words, "sessions", registry, |stray| {
        Err(format!("sessions takes no argument, got '{}' (use --root DIR)", stray.word))
    });
    let settings = match parsed.map_err(Error::Usage)? {
        Parsed::Settings(settings) => settings,
        Parsed::Help | Parsed::Version => {
            return crate::ch14_main::print_stdout(&crate::ch14_main::help::help(registry, ""));
        }
    };
    let root = crate::ch14_main::workspace_root(settings.value(&ROOT).map(std::path::Path::new))?;
    crate::ch14_main::print_stdout(&format!(
        "{}\n",
        sessions_table(&super::start::sessions_of(&root)?, None)?
    ))
}
