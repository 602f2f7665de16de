//! Chapter 11 on the command line: `--stream`, and the streaming client in place of chapter 2's
//! when it is given.

use super::StreamingClient;
use crate::ch02_loop::command_line::{Flag, Registry, Settings};
use crate::ch02_loop::{Error, Model};
use crate::ch02_model::ClientConfig;
use crate::ch02_model::waiting::Waits;

/// `--stream`: chapter 11's one flag.
pub const STREAM: Flag = Flag::switch(11, "--stream", &["show the reply as it is generated"]);

pub fn register(registry: &mut dyn Registry) {
    registry.flag(STREAM);
}

/// Chapter 11's choice of client: with `--stream`, the streaming one in place of `model`
/// (or of the error that building it met: a client is judged only if it is the one used).
pub fn stream_if_asked(
    model: Result<Box<dyn Model>, Error>,
    settings: &Settings,
    endpoint: &ClientConfig,
    waits: Waits,
) -> Result<Box<dyn Model>, Error> {
    if !settings.has(&STREAM) {
        return model;
    }
    let client = StreamingClient::new(endpoint.clone())?
        .with_idle_timeout(waits.idle)
        .with_first_byte_timeout(waits.first_byte)
        .with_request_limit(waits.limit);
    Ok(Box::new(client))
}
