//! Fuzz target: the SSE parser and the stream assembler of chapter 11.
//!
//! The first input byte chooses how the rest is cut into network pieces; the parser must
//! give the same events whole and in pieces, and assembling them must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mini_agent::ch02_loop::{Error, Event, Observer};
use mini_agent::ch11_streaming::{SseParser, StreamAssembler};

struct Ignore;

impl Observer for Ignore {
    fn event(&mut self, _event: Event) -> Result<(), Error> {
        Ok(())
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&piece, bytes)) = input.split_first() else { return };
    let whole = SseParser::new().feed(bytes);
    let mut parser = SseParser::new();
    let mut pieces = Vec::new();
    for chunk in bytes.chunks(usize::from(piece % 17) + 1) {
        pieces.extend(parser.feed(chunk));
    }
    assert_eq!(whole, pieces, "events depend on where the bytes were cut");
    let mut assembler = StreamAssembler::default();
    for event in &whole {
        if assembler.apply(&event.data, &mut Ignore).is_err() {
            return;
        }
    }
    if assembler.is_complete() {
        let _ = assembler.into_reply();
    }
});
