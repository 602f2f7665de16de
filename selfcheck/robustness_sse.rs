//! The SSE parser and the stream assembler of chapter 11 against generated input: whatever
//! a server sends, and however the network cuts it into pieces, parsing never panics, the
//! events do not depend on where the pieces were cut, and a stream cut short is never
//! mistaken for a complete one.
//!
//! Inputs come from a xorshift generator (reproducible): valid Chat Completions streams
//! with text and interleaved tool-call fragments, random bytes, random line endings and
//! comments, every truncated prefix, deep nesting, huge lines and odd JSON types.

use mini_agent::ch02_loop::{Error, Event, Observer};
use mini_agent::ch11_streaming::{SseEvent, SseParser, StreamAssembler};
use serde_json::json;
use std::panic::{AssertUnwindSafe, catch_unwind};

use mini_agent::testkit::xorshift::XorShift;

/// Collects the text deltas, as the terminal would show them.
#[derive(Default)]
struct Shown(String);

impl Observer for Shown {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        if let Event::TextDelta(text) = event {
            self.0.push_str(text);
        }
        Ok(())
    }
}

/// A valid stream: text in CJK and emoji, two tool calls whose fragments interleave, a
/// finish reason, usage in a last chunk with `choices: []`, and `[DONE]`; lines end in
/// `\n`, `\r\n` or `\r`, with comments and unknown fields in between.
fn valid_stream(random: &mut XorShift) -> Vec<u8> {
    let delta = |delta: serde_json::Value| json!({"choices": [{"index": 0, "delta": delta}]}).to_string();
    let chunks = vec![
        delta(json!({"role": "assistant", "content": "你好, "})),
        delta(json!({"content": "wörld 👋\nsecond line"})),
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "bash", "arguments": ""}}]}),
        ),
        delta(json!({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "read_file"}}]})),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"comm"}}]})),
        delta(json!({"tool_calls": [{"index": 1, "function": {"arguments": "{\"path\": \"说明.md\"}"}}]})),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "and\": \"ls\"}"}}]})),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).to_string(),
        json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 34}}).to_string(),
        "[DONE]".to_string(),
    ];
    let mut bytes = Vec::new();
    for chunk in chunks {
        let end = ["\n", "\r\n", "\r"][random.below(3)];
        match random.below(4) {
            0 => bytes.extend_from_slice(format!(": keep-alive{end}").as_bytes()),
            1 => bytes.extend_from_slice(format!("id: 7{end}retry: 100{end}").as_bytes()),
            _ => {}
        }
        let space = if random.below(2) == 0 { " " } else { "" };
        bytes.extend_from_slice(format!("data:{space}{chunk}{end}{end}").as_bytes());
    }
    bytes
}

/// Feeds `bytes` in pieces cut at random places (inside `\r\n` and inside characters too).
fn feed_in_pieces(bytes: &[u8], random: &mut XorShift) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let size = 1 + random.below(rest.len().min(40));
        let (piece, after) = rest.split_at(size);
        events.extend(parser.feed(piece));
        rest = after;
    }
    events
}

/// Applies events as the client does: stop at the first error or at `[DONE]`.
fn assemble(events: &[SseEvent]) -> (StreamAssembler, Shown, Option<String>) {
    let (mut assembler, mut shown) = (StreamAssembler::default(), Shown::default());
    for event in events {
        if let Err(error) = assembler.apply(&event.data, &mut shown) {
            return (assembler, shown, Some(error.to_string()));
        }
    }
    (assembler, shown, None)
}

#[test]
fn events_do_not_depend_on_where_the_network_cut_the_bytes() {
    let mut random = XorShift::new(0x2545_F491_4F6C_DD1D);
    let mut cases = 0;
    for round in 0..300 {
        let bytes = if round % 3 == 0 {
            // Random bytes drawn mostly from the characters that matter to SSE.
            let alphabet = b"data: \r\n:{}\"event\xe4\xbd\xa0\xff";
            (0..random.below(400)).map(|_| alphabet[random.below(alphabet.len())]).collect()
        } else {
            valid_stream(&mut random)
        };
        let whole = catch_unwind(AssertUnwindSafe(|| SseParser::new().feed(&bytes)));
        let whole = whole.unwrap_or_else(|_| panic!("the parser panicked on {bytes:?}"));
        for _ in 0..5 {
            cases += 1;
            let pieces = catch_unwind(AssertUnwindSafe(|| feed_in_pieces(&bytes, &mut random)));
            let pieces = pieces.unwrap_or_else(|_| panic!("the parser panicked on pieces of {bytes:?}"));
            assert_eq!(
                pieces,
                whole,
                "events changed with the cuts of {:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
    eprintln!("sse parser: {cases} random cuttings, the same events each time");
}

#[test]
fn a_valid_stream_assembles_and_every_prefix_of_it_is_incomplete_or_ends_cleanly() {
    let mut random = XorShift::new(0xD1B5_4A32_D192_ED03);
    let bytes = valid_stream(&mut random);
    let (assembler, shown, error) = assemble(&SseParser::new().feed(&bytes));
    assert_eq!(error, None);
    assert!(assembler.is_complete());
    let reply = assembler.into_reply().expect("a complete reply");
    let full_text = "你好, wörld 👋\nsecond line";
    assert_eq!(reply.content.as_deref(), Some(full_text));
    assert_eq!(shown.0, full_text);
    let calls: Vec<(&str, &str, &str)> =
        reply.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str())).collect();
    assert_eq!(
        calls,
        [("call_a", "bash", r#"{"command": "ls"}"#), ("call_b", "read_file", r#"{"path": "说明.md"}"#)]
    );

    let finish_at = bytes.windows(13).position(|w| w == b"finish_reason").expect("a finish reason");
    for cut in 0..bytes.len() {
        let events = feed_in_pieces(&bytes[..cut], &mut random);
        let (assembler, shown, error) = assemble(&events);
        assert_eq!(error, None, "prefix {cut}: only whole events are applied");
        assert!(full_text.starts_with(&shown.0), "prefix {cut}: shown {:?}", shown.0);
        assert_eq!(assembler.partial_text(), shown.0);
        // Before the finish reason's event was complete, the stream is cut off, never done.
        if cut <= finish_at {
            assert!(!assembler.is_complete(), "prefix {cut} taken for a complete stream");
        }
    }
    eprintln!("sse stream: {} prefixes, none taken for complete before its finish reason", bytes.len());
}

#[test]
fn hostile_chunks_are_errors_or_ignored_never_a_panic() {
    let mut random = XorShift::new(0x9E37_79B9_7F4A_7C15);
    let deep = "[".repeat(100_000);
    let huge = format!(r#"{{"choices":[{{"delta":{{"content":"{}"}}}}]}}"#, "x".repeat(8 << 20));
    let mut datas: Vec<String> = vec![
        deep.clone(),
        format!(r#"{{"choices":[{{"delta":{{"content":{deep}"#),
        huge,
        "x".repeat(4 << 20),
        r#"{"choices":[{"delta":{"tool_calls":[{"index":-1,"function":{"name":"a"}}]}}]}"#.into(),
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1.5,"function":{"name":"a"}}]}}]}"#.into(),
        r#"{"choices":[{"delta":{"tool_calls":[{"index":"0","function":{"name":7}}]}}]}"#.into(),
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":{"a":[1]}}}]}}]}"#.into(),
        r#"{"choices":"nope","usage":{"prompt_tokens":-5}}"#.into(),
        r#"{"choices":[{"delta":{"content":7,"tool_calls":{"index":0}}}]}"#.into(),
        r#"{"error":{"message":"overloaded"}}"#.into(),
        r#"{"error":"plain"}"#.into(),
        "[DONE] trailing".into(),
        "null".into(),
        "\u{0}\u{0}".into(),
    ];
    for _ in 0..300 {
        let length = random.below(200);
        let bytes: Vec<u8> = (0..length).map(|_| random.next_u64() as u8).collect();
        datas.push(String::from_utf8_lossy(&bytes).into_owned());
    }
    let mut errors = 0;
    for data in &datas {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut assembler = StreamAssembler::default();
            let applied = assembler.apply(data, &mut Shown::default());
            (applied.map_err(|e| e.to_string()), assembler.into_reply().map_err(|e| e.to_string()))
        }));
        let preview: String = data.chars().take(60).collect();
        let (applied, reply) = outcome.unwrap_or_else(|_| panic!("the assembler panicked on {preview:?}"));
        for message in applied.err().into_iter().chain(reply.err()) {
            errors += 1;
            assert!(message.len() < 2000, "an error echoing the whole input: {} bytes", message.len());
            assert!(
                message.contains("stream") || message.contains("tool call"),
                "an unclear error for {preview:?}: {message}"
            );
        }
    }
    eprintln!("sse assembler: {} hostile chunks, {errors} clear errors, no panic", datas.len());
}

/// A server may leave out `index`: then a fragment with a new id starts the call after the
/// last one. After a call at index `u64::MAX` there is no "after": that addition
/// overflowed and panicked (debug builds; release wrapped to index 0 and reordered the
/// calls). Now it is a model error that says so.
#[test]
fn a_call_without_an_index_after_index_u64_max_does_not_overflow() {
    let chunk = |fragment: serde_json::Value| {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]}).to_string()
    };
    let mut assembler = StreamAssembler::default();
    let mut shown = Shown::default();
    let first = chunk(json!({"index": u64::MAX, "id": "call_a", "function": {"name": "bash"}}));
    let second = chunk(json!({"id": "call_b", "function": {"name": "read_file"}}));
    let applied = catch_unwind(AssertUnwindSafe(|| {
        assembler.apply(&first, &mut shown).and_then(|()| assembler.apply(&second, &mut shown))
    }));
    let error = applied.expect("the assembler panicked").expect_err("no place for the second call");
    assert!(error.to_string().contains("streamed tool call without an index"), "{error}");
}
