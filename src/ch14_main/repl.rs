//! No `-p`: the REPL of chapter 4, with the session host of `app.rs` as its host.

#[cfg(feature = "ch12")]
use super::app::Asker;
use super::app::{Agent, Config};
use super::say;
use mini_agent::ch02_loop::Error;
#[cfg(feature = "ch05")]
use mini_agent::ch04_terminal::sanitize::sanitize;
use mini_agent::ch04_terminal::{LineReader, Screen, run_repl};
use std::path::Path;

/// The largest `.mini_agent/history` the line editor loads (it keeps 1,000 lines).
const HISTORY_MAX_BYTES: u64 = 8 << 20;

// ANCHOR: repl
/// No `-p`: the REPL of chapter 4, with this session as its host.
pub fn repl(
    start: impl FnOnce(Config) -> Result<Agent, Error>,
    resumed: bool,
    history: &Path,
    config: Config,
    verbose: bool,
) -> Result<u8, Error> {
    // A history file planted as a symlink would have typed lines appended to its target.
    // A planted 1 GB one would be loaded whole by the line editor: it is read only when small.
    let history = match std::fs::symlink_metadata(history) {
        Ok(meta) if !meta.is_file() || meta.len() > HISTORY_MAX_BYTES => {
            say(&format!(
                "mini-agent: warning: {} is not a regular file of at most {} MiB; history is off",
                history.display(),
                HISTORY_MAX_BYTES >> 20
            ));
            None
        }
        _ => Some(history),
    };
    // ANCHOR_END: repl
    // ANCHOR: repl_start
    let mut reader = LineReader::stdin(history)?;
    // Permission questions need someone typing; a piped script is denied, naming the flag.
    #[cfg(feature = "ch12")]
    let config = match reader.is_terminal() {
        true => Config { asker: Asker::TypeAhead(reader.type_ahead()), ..config },
        false => config,
    };
    let mut agent = start(config)?;
    let screen = Screen::stdio(verbose);
    screen.status(&banner(&agent, resumed));
    #[cfg(feature = "ch10")]
    if resumed && let Some(last) = agent.last_exchange(screen.look) {
        screen.status(&last);
    }
    run_repl(&mut agent, &mut reader, &screen)?;
    Ok(0)
}
// ANCHOR_END: repl_start

/// The terminal's screen with stdout silenced: in `-p` mode the observer draws progress on
/// stderr, and stdout receives the final answer alone, once, when the turn has ended.
pub fn stderr_only(terminal: &Screen) -> Screen {
    let mut screen =
        Screen::new(Box::new(std::io::sink()), Box::new(std::io::stderr()), false, terminal.live);
    screen.verbose = terminal.verbose;
    screen
}

/// The first line of a REPL: the version, and from chapter 5 the session and its model.
#[cfg(feature = "ch05")]
fn banner(agent: &Agent, resumed: bool) -> String {
    let verb = if resumed { "resumed" } else { "new" };
    format!(
        "mini-agent {} · {verb} session {} · {} · /help for commands\n",
        env!("CARGO_PKG_VERSION"),
        sanitize(agent.session_id()),
        sanitize(agent.model_id())
    )
}

#[cfg(not(feature = "ch05"))]
fn banner(_: &Agent, _: bool) -> String {
    format!("mini-agent {} · /help for commands\n", env!("CARGO_PKG_VERSION"))
}
