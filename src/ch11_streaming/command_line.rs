//! Chapter 11 on the command line: `--stream`, and the streaming client in place of chapter 2's
//! when it is given.

use super::StreamingClient;
use crate::ch02_loop::command_line::Flag;
use crate::ch02_loop::{Error, Model};
use crate::ch02_model::layers::{ModelContext, ModelLayer};
use crate::ch04_terminal::RegisterCommands;

/// `--stream`: chapter 11's one flag.
pub const STREAM: Flag = Flag::switch(11, "--stream", &["show the reply as it is generated"]);

/// Chapter 11's part: `--stream`, the streaming client in place of the one before it when
/// it is given, and with `-p` the replies' text on stdout as it arrives.
pub fn register(registry: &mut dyn RegisterCommands) {
    registry.flag(STREAM);
    registry.model_layer(ModelLayer::Client, stream_if_asked);
    registry.answer_streamed(|settings| settings.has(&STREAM));
}

/// Chapter 11's choice of client: with `--stream`, the streaming one in place of `model`
/// (or of the error that building it met: a client is judged only if it is the one used).
pub fn stream_if_asked(
    model: Result<Box<dyn Model>, Error>,
    context: &ModelContext,
) -> Result<Box<dyn Model>, Error> {
    if !context.settings.has(&STREAM) {
        return model;
    }
    let waits = context.waits;
    let client = StreamingClient::new(context.endpoint.clone())?
        .with_idle_timeout(waits.idle)
        .with_first_byte_timeout(waits.first_byte)
        .with_request_limit(waits.limit);
    Ok(Box::new(client))
}
