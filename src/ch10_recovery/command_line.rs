//! Chapter 10's part of the command line: `--status`, `--acknowledge-unknown`, `/resume`, and
//! what `--help` says about a resumed session's model and endpoint.

use crate::ch02_loop::command_line::{Flag, Help};
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
/// recorded with another is refused, and the record of one with it is kept. (Chapter 19's
/// `choice` has the same three functions for two formats.)
pub mod one_api {
    use crate::ch02_loop::Error;
    use crate::ch02_loop::command_line::Settings;
    use crate::ch03_tools::secrets::Keys;
    use crate::ch05_sessions::{OPENAI_API, Origin};

    /// The API of this run, and the session's record: refused if it is of another API.
    pub fn api_of<'a>(
        _: &Settings,
        recorded: Option<&'a Origin>,
    ) -> Result<(&'static str, Option<&'a Origin>), Error> {
        if let Some(origin) = recorded.filter(|origin| origin.api != OPENAI_API) {
            return Err(Error::Config(format!(
                "this session was recorded with the '{}' API, which this mini-agent does not speak",
                origin.api
            )));
        }
        Ok((OPENAI_API, recorded))
    }

    /// Where the user sends the key: the environment's URL, else the default.
    pub fn configured_endpoint(_: &str, keys: &Keys) -> String {
        keys.base_url().unwrap_or_else(|| crate::ch02_model::DEFAULT_BASE_URL.to_string())
    }

    pub fn default_model(_: &str) -> &'static str {
        crate::ch02_model::DEFAULT_MODEL
    }
}
