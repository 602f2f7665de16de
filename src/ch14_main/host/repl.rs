//! No `-p`: the REPL of chapter 4, with the session host of `app.rs` as its host.

use super::app::{Agent, Config};
use crate::ch14_main::say;
use mini_agent::ch02_loop::Error;
use mini_agent::ch02_loop::command_line::VERBOSE;
use mini_agent::ch04_terminal::{LineReader, Screen, history_file, run_repl};
use mini_agent::ch05_sessions::Answerer;

// ANCHOR: repl
/// No `-p`: the REPL of chapter 4, with this session as its host.
pub fn repl(
    start: impl FnOnce(Config) -> Result<Agent, Error>,
    config: Config,
    registry: &crate::ch14_main::registry::Registry,
) -> Result<u8, Error> {
    let history =
        history_file(&config.root).map_err(|warning| say(&format!("mini-agent: warning: {warning}")));
    let history = history.as_deref().ok();
    // ANCHOR_END: repl
    // ANCHOR: repl_start
    // A root that cannot be written (a read-only checkout) has no history file to keep: the
    // REPL goes on without one, and says so unless the session's own warning already did.
    let (mut reader, history_off) = match LineReader::stdin(history) {
        Err(error)
            if config.may_go_unrecorded
                && history.is_some()
                && super::unrecorded::cannot_write_here(&error) =>
        {
            (LineReader::stdin(None)?, Some(error))
        }
        other => (other?, None),
    };
    // Permission questions need someone typing; a piped script is denied, naming the flag.
    let config = match reader.is_terminal() {
        true => Config { answerer: Answerer::TypeAhead(reader.type_ahead()), ..config },
        false => config,
    };
    let mut agent = start(config)?;
    if let Some(error) = history_off.filter(|_| agent.is_recorded()) {
        say(&format!(
            "mini-agent: warning: {}; history is off",
            crate::ch14_main::one_line(&error.to_string())
        ));
    }
    let screen = Screen::stdio(agent.config.settings.has(&VERBOSE));
    screen.status(&banner(&agent));
    // A resumed session shows its last exchange again (chapter 10).
    let last_exchange =
        registry.reopening.last_exchange.filter(|_| super::start::resumed_by(&agent.config.settings));
    if let Some(last) = last_exchange.and_then(|last_exchange| last_exchange(&agent, screen.look)) {
        screen.status(&last);
    }
    let (commands, handlers) = (&registry.commands, &registry.handlers);
    run_repl(&mut super::session::Host { agent: &mut agent, handlers }, commands, &mut reader, &screen)?;
    Ok(0)
}
// ANCHOR_END: repl_start

/// The first line of a REPL: the version, the session and its model.
fn banner(agent: &Agent) -> String {
    use mini_agent::ch04_terminal::sanitize::sanitize;
    let verb = if super::start::resumed_by(&agent.config.settings) { "resumed" } else { "new" };
    let verb = if agent.is_recorded() { verb } else { "unrecorded" };
    let (id, model) = (sanitize(agent.session_id()), sanitize(&agent.config.origin.model));
    let version = format!("mini-agent {} · {verb} session {id} · {model}", env!("CARGO_PKG_VERSION"));
    let line = format!("{version} · /help for commands\n");
    // What the parts say at start-up, once, under the banner (chapter 20's sandbox).
    agent.config.parts.start_up_lines(true).fold(line, |banner, part| format!("{banner}{part}\n"))
}
