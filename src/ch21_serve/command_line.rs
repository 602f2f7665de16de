//! Chapter 21's part of the command line: `mini-agent serve`, its three flags, and the token
//! taken out of the environment like a key.
//!
//! `serve` takes the agent's own flags too (the model, `--allow-write`, `--demo`…), which mean
//! what they mean for `-p`; the composition root hands the words it does not know as
//! `serve`'s to the agent's parser.

use super::guard::TOKEN_VARIABLE;
use crate::ch02_loop::command_line::{Flag, Help, SHOW_HELP, Takes};
use crate::ch03_tools::secrets::{RegisterSecrets, SecretVariable, secret};

/// The default port, and the default number of turns working at once.
pub const DEFAULT_PORT: u16 = 8421;
pub const DEFAULT_MAX_RUNNING: usize = 8;
/// A ceiling that catches typos (`--max-running 8000`).
pub const MAX_RUNNING_CEILING: usize = 256;

pub const HOST: Flag = Flag::value(21, "--host", Takes::NonEmpty("ADDR"), &[]).of("serve");
/// `--port 0` asks for any free port, so the value is read as text, not a count from 1.
pub const PORT: Flag = Flag::value(21, "--port", Takes::NonEmpty("PORT"), &[]).of("serve");
pub const MAX_RUNNING: Flag =
    Flag::value(21, "--max-running", Takes::Count("N", MAX_RUNNING_CEILING), &[]).of("serve");
/// The token a service's clients must send, when the user chooses it.
pub const SERVE_TOKEN: SecretVariable = secret(TOKEN_VARIABLE);

pub fn register(registry: &mut dyn RegisterSecrets) {
    for flag in [HOST, PORT, MAX_RUNNING, Flag { chapter: 21, command: "serve", ..SHOW_HELP }] {
        registry.flag(flag);
    }
    registry.secret(SERVE_TOKEN);
    let help = |section, lines| Help { chapter: 21, page: "", section, lines };
    registry.help(help(
        "USAGE",
        &[
            "  mini-agent serve [--host ADDR] [--port PORT] [--max-running N] [OPTIONS]",
            "                                        sessions over HTTP, and a console in the browser",
        ],
    ));
    registry.help(help(
        "SERVE",
        &[
            "  mini-agent serve --demo                serve this directory; prints the console's URL",
            "  --host ADDR        address to listen on (default 127.0.0.1; another needs",
            "                     MINI_AGENT_SERVE_TOKEN)",
            "  --port PORT        port (default 8421; 0 picks a free one and prints it)",
            "  --max-running N    turns working at once (default 8); the others wait their turn",
            "  The agent's flags (--model, --allow-write, --demo…) apply to every session served.",
        ],
    ));
    registry.help(help(
        "ENVIRONMENT",
        &["  MINI_AGENT_SERVE_TOKEN     the token serve's clients send (default: a random one, printed)"],
    ));
}
