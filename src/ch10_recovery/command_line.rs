//! Chapter 10's part of the command line: `--status`, `--acknowledge-unknown`, `/resume`, and
//! what `--help` says about a resumed session's model and endpoint.

use crate::ch02_loop::Error;
use crate::ch02_loop::command_line::{Flag, Help};
use crate::ch02_model::layers::{CHAT_COMPLETIONS, OPENAI_API, Wire};
use crate::ch04_terminal::{RegisterCommands, SlashCommand};
use crate::ch05_sessions::{CONTINUE, RESUME};
/// `--status` prints where a session stopped; `--acknowledge-unknown` lets it go on.
pub const STATUS: Flag = Flag::switch(10, "--status", &["with -c/-r: print the session's state and exit"]);
pub const ACKNOWLEDGE_UNKNOWN: Flag = Flag::switch(
    10,
    "--acknowledge-unknown",
    &["allow resuming a session with tool calls of unknown outcome"],
);

pub fn register(registry: &mut dyn RegisterCommands) {
    registry.flag(STATUS);
    registry.flag(ACKNOWLEDGE_UNKNOWN);
    registry.wire(ONE_API);
    registry.help(Help {
        chapter: 10,
        page: "",
        section: "SESSIONS",
        lines: &[
            "  Without --model, -c and -r talk to a resumed session's own model; without --base-url,",
            "  to a resumed session's own endpoint (never a key or a URL password is recorded). A",
            "  session file never sends the key elsewhere: a recorded remote endpoint that is not the",
            "  one your key goes to needs --base-url; --demo moves a session to the demo model.",
            "  mini-agent -r 20261129-09 --status    where a session stopped (no key, nothing sent)",
        ],
    });
    registry.command(SlashCommand {
        chapter: 10,
        name: "resume",
        argument: "<id>",
        help: "switch to a session (id or unique prefix)",
    });
    registry.check(|settings| {
        match settings.has(&STATUS) && !settings.has(&CONTINUE) && !settings.has(&RESUME) {
            true => Err("--status shows a session: add -c (the latest one) or -r ID".into()),
            false => Ok(()),
        }
    });
}

/// Before chapter 19 a run speaks one wire format, chapter 2's Chat Completions: a session
/// recorded with another is refused. (Chapter 19 registers a choice of two.)
pub const ONE_API: Wire = Wire {
    choose: |_, recorded| match recorded {
        Some(api) if api != OPENAI_API => Err(Error::Config(format!(
            "this session was recorded with the '{api}' API, which this mini-agent does not speak"
        ))),
        _ => Ok(OPENAI_API),
    },
    ..CHAT_COMPLETIONS
};
