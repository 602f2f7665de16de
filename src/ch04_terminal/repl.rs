//! The REPL: read a line, run a command or a turn through the [`ReplHost`] (which `main`
//! implements with the pieces of later chapters), and keep the terminal in the right hands.

use super::sanitize::sanitize;
use super::signals::{at_prompt, stop_signal};
use crate::ch02_loop::{Error, Outcome, set_interrupted};
use std::collections::VecDeque;

use super::commands::*;
use super::interrupt::*;
use super::line_reader::*;
use super::observer::*;
use super::type_ahead::*;

// ANCHOR: repl_host
/// What `main` provides to the REPL: running a turn and the commands that need a session.
pub trait ReplHost {
    /// Runs one user message to its end: append it to the history (and the session), then
    /// `run_turn` drawn by `terminal` (alone, or fanned out with the journal; a later chapter
    /// may draw more on it).
    fn turn(&mut self, input: String, terminal: &mut TerminalObserver) -> Outcome;
    /// Runs a command and returns what to show (or an error to print; the REPL goes on).
    fn command(&mut self, command: HostCommand) -> Result<String, Error>;
}
// ANCHOR_END: repl_host

// ANCHOR: run_repl
/// The REPL: read a line, run it as a command or a turn, repeat until /exit, Ctrl+C or
/// Ctrl+D at the prompt, or the end of piped input.
/// `commands` are the host's: what `/help` lists and the prompt accepts.
pub fn run_repl(
    host: &mut dyn ReplHost,
    commands: &[SlashCommand],
    reader: &mut LineReader,
    screen: &Screen,
) -> Result<(), Error> {
    install_interrupt_handler();
    let mut next_inputs: VecDeque<String> = VecDeque::new();
    let mut carried_text = String::new();
    loop {
        let line = match next_inputs.pop_front() {
            Some(line) => {
                screen.status(&format!("> {line}\n"));
                reader.remember(&line);
                line
            }
            None => {
                // SIGTERM or SIGHUP at the prompt ends the REPL at once (chapter 4's signals).
                at_prompt(true);
                let input = match stop_signal() {
                    Some(_) => Ok(Input::Eof),
                    None => reader.read_line("> ", &std::mem::take(&mut carried_text)),
                };
                at_prompt(false);
                match input? {
                    Input::Line(line) => line,
                    Input::Interrupted | Input::Eof => {
                        if let Some(hint) = reader.first_exit_hint() {
                            screen.status(&format!("{hint}\n"));
                        }
                        return Ok(());
                    }
                }
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        // A shell habit: `exit` alone would be sent to the model as a task.
        if ["exit", "quit", "exit()", "quit()", ":q"].contains(&line.trim().to_lowercase().as_str()) {
            screen.status("to leave, type /exit or press Ctrl+D (nothing was sent)\n");
            continue;
        }
        match parse_command(&line, commands) {
            Some(Ok(Command::Exit)) => return Ok(()),
            Some(Ok(Command::Help)) => screen.status(&format!("{}\n", help(commands))),
            Some(Ok(Command::Host(command))) => match host.command(command) {
                Ok(text) if text.is_empty() => {}
                Ok(text) => screen.print(&format!("{}\n", sanitize(text.trim_end()))),
                Err(error) => screen.status(&format!("error: {}\n", sanitize(&error.to_string()))),
            },
            Some(Err(hint)) => screen.status(&format!("{hint}\n")),
            None => {
                set_interrupted(false);
                let type_ahead = reader.type_ahead();
                let typing = reader.is_terminal().then(|| type_ahead.start_reading(0));
                let mut observer = TerminalObserver::new(screen.clone(), Some(type_ahead));
                let outcome = host.turn(line, &mut observer);
                drop(observer);
                let typed_meanwhile = typing.map(TypeAheadReader::finish).unwrap_or_default();
                for sent in reader.type_ahead().take_handed_over() {
                    reader.remember(&sent);
                }
                match outcome {
                    Outcome::Completed(_) => next_inputs.extend(typed_meanwhile),
                    Outcome::TurnLimit => {
                        screen
                            .status("stopped: the turn limit was reached (--max-turns); say how to go on\n");
                        next_inputs.extend(typed_meanwhile);
                    }
                    Outcome::Interrupted if stop_signal().is_some() => {
                        screen.status("interrupted\n");
                        return Ok(()); // SIGTERM or SIGHUP: the turn was stopped, now leave
                    }
                    Outcome::Interrupted => {
                        screen.status("interrupted\n");
                        // After a Ctrl+C nothing is sent without a look: lines typed
                        // meanwhile come back as editable text at the prompt.
                        carried_text = typed_meanwhile.join(" ");
                    }
                    Outcome::Failed(error) => {
                        screen.status(&format!("error: {}\n", sanitize(&error.to_string())));
                        next_inputs.extend(typed_meanwhile);
                    }
                }
            }
        }
        set_interrupted(false);
    }
}
// ANCHOR_END: run_repl
