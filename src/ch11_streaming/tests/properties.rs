//! Chapter 11's properties, against generated input: however the network splits, cuts or
//! garbles the bytes, the same events come out, the same reply is assembled, a stream cut
//! short is never taken for a whole one, and nothing panics. One home for them: the
//! end-to-end suites drive the binary and leave the parser to these.
//!
//! The generator is `crate::random`'s xorshift: each test prints its seed,
//! `MINI_AGENT_ROBUSTNESS_SEED=<n>` replays it and `MINI_AGENT_ROBUSTNESS_CASES=<n>` scales
//! how many cases run.

use crate::ch02_loop::{Error, Reply, ToolCall, Usage};
use crate::ch11_streaming::{SseEvent, SseParser, StreamAssembler};
use crate::random::{XorShift, cases, nested_json};
use serde_json::json;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::tests::Seen as Deltas;

/// A stream as real servers write it: a role chunk, text in pieces, two tool calls whose
/// fragments interleave by `index`, a finish reason, usage in a chunk with `choices: []`,
/// `[DONE]` — with a keep-alive comment, an `event:` line, a `data:` split over two lines,
/// and the given line ending.
fn valid_stream(line_end: &str) -> String {
    let delta = |delta: serde_json::Value| {
        serde_json::json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}).to_string()
    };
    let call = |index: u64, id: Option<&str>, name: Option<&str>, arguments: &str| {
        let mut function = serde_json::json!({"arguments": arguments});
        if let Some(name) = name {
            function["name"] = name.into();
        }
        let mut fragment = serde_json::json!({"index": index, "function": function});
        if let Some(id) = id {
            fragment["id"] = id.into();
            fragment["type"] = "function".into();
        }
        delta(serde_json::json!({"tool_calls": [fragment]}))
    };
    let chunks = [
        delta(serde_json::json!({"role": "assistant", "content": ""})),
        delta(serde_json::json!({"content": "Reading "})),
        delta(serde_json::json!({"content": "both, 数据 ✓."})),
        call(0, Some("call_a"), Some("read_file"), ""),
        call(1, Some("call_b"), Some("list_files"), "{\"pa"),
        call(0, None, None, "{\"path\":"),
        call(1, None, None, "th\":\".\"}"),
        call(0, None, None, "\"notes.txt\"}"),
        serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
            .to_string(),
        serde_json::json!({"choices": [], "usage": {"prompt_tokens": 321, "completion_tokens": 54}})
            .to_string(),
    ];
    let mut stream = format!(": keep-alive{line_end}{line_end}");
    for (number, chunk) in chunks.iter().enumerate() {
        if number == 2 {
            stream.push_str(&format!("event: message{line_end}"));
        }
        if number == 4 {
            // One event, two data lines: joined by "\n", which JSON reads as whitespace.
            let (head, tail) = chunk.split_at(chunk.find(',').expect("a comma in the chunk") + 1);
            stream.push_str(&format!("data: {head}{line_end}data: {tail}{line_end}{line_end}"));
        } else {
            stream.push_str(&format!("data: {chunk}{line_end}{line_end}"));
        }
    }
    stream.push_str(&format!("data: [DONE]{line_end}{line_end}"));
    stream
}

fn expected_reply() -> Reply {
    let call = |id: &str, name: &str, arguments: &str| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    };
    Reply {
        content: Some("Reading both, 数据 ✓.".into()),
        tool_calls: vec![
            call("call_a", "read_file", "{\"path\":\"notes.txt\"}"),
            call("call_b", "list_files", "{\"path\":\".\"}"),
        ],
        usage: Some(Usage { prompt_tokens: 321, completion_tokens: 54 }),
        finish_reason: Some("tool_calls".into()),
        cache: Default::default(),
    }
}

/// Feeds `bytes` in pieces cut at `cuts` (sorted offsets) and returns every event.
fn events_split_at(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain([bytes.len()].iter()) {
        events.extend(parser.feed(&bytes[start..cut]));
        start = cut;
    }
    events
}

/// Applies events to a fresh assembler; returns it with the first error, if any.
fn assemble(events: &[SseEvent], deltas: &mut Deltas) -> (StreamAssembler, Option<Error>) {
    let mut assembler = StreamAssembler::default();
    for event in events {
        if let Err(error) = assembler.apply(&event.data, deltas) {
            return (assembler, Some(error));
        }
    }
    (assembler, None)
}

fn random_cuts(random: &mut XorShift, len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..random.below(12)).map(|_| random.below(len + 1)).collect();
    cuts.sort_unstable();
    cuts
}

#[test]
fn any_split_of_a_stream_gives_the_same_events_and_reply() {
    let mut random = XorShift::seeded(0x55e5_9a17);
    for line_end in ["\n", "\r\n", "\r"] {
        let stream = valid_stream(line_end);
        let bytes = stream.as_bytes();
        let whole = events_split_at(bytes, &[]);
        assert_eq!(whole.len(), 11, "ten chunks and [DONE] for line ending {line_end:?}");
        assert_eq!(whole[2].event, "message");
        let mut cuts_to_try: Vec<Vec<usize>> = (0..bytes.len()).map(|cut| vec![cut]).collect();
        cuts_to_try.extend((0..cases(200)).map(|_| random_cuts(&mut random, bytes.len())));
        // Every byte on its own: the hardest split of all.
        cuts_to_try.push((1..bytes.len()).collect());
        for cuts in cuts_to_try {
            let events = events_split_at(bytes, &cuts);
            assert_eq!(events, whole, "line ending {line_end:?}, cuts {cuts:?}");
        }
        let mut deltas = Deltas::default();
        let (assembler, error) = assemble(&whole, &mut deltas);
        assert!(error.is_none(), "{error:?}");
        assert!(assembler.is_complete());
        assert_eq!(assembler.into_reply().expect("a complete reply"), expected_reply());
        assert_eq!(deltas.deltas.concat(), "Reading both, 数据 ✓.");
    }
}

#[test]
fn every_cut_of_a_stream_is_incomplete_or_whole_never_a_panic() {
    let stream = valid_stream("\n");
    let bytes = stream.as_bytes();
    let finish_at = stream.find("\"finish_reason\":\"tool_calls\"").expect("the finish chunk");
    for cut in 0..=bytes.len() {
        let events = events_split_at(&bytes[..cut], &[]);
        let mut deltas = Deltas::default();
        let (assembler, error) = assemble(&events, &mut deltas);
        assert!(error.is_none(), "cut at {cut}: whole events are valid chunks: {error:?}");
        assert!(
            "Reading both, 数据 ✓.".starts_with(&deltas.deltas.concat()),
            "cut at {cut}: {:?}",
            deltas.deltas
        );
        if cut < finish_at {
            // The client must report this as a cut stream, not as a reply.
            assert!(!assembler.is_complete(), "complete after only {cut} bytes");
        }
    }
}

/// The bytes that carry meaning in a stream, mixed into the noise so that lines and fields occur.
const SALT: [&str; 7] = ["\n", "\r", "data: ", ":", "event:", "{\"choices\":[", "\n\n"];

#[test]
fn garbage_bytes_and_garbage_chunks_never_panic() {
    let mut random = XorShift::seeded(0x6a7b_a9e5);
    for _ in 0..cases(200) * 5 {
        let len = random.below(600);
        let mut bytes = random.bytes(len);
        for _ in 0..random.below(20) {
            let at = random.below(bytes.len() + 1);
            let piece = random.pick(&SALT).as_bytes();
            bytes.splice(at..at, piece.iter().copied());
        }
        let cuts = random_cuts(&mut random, bytes.len());
        let events = events_split_at(&bytes, &cuts);
        assert_eq!(events, events_split_at(&bytes, &[]), "the split changed the events");
        let mut deltas = Deltas::default();
        let (assembler, error) = assemble(&events, &mut deltas);
        match error {
            None | Some(Error::Model(_)) => {}
            Some(other) => panic!("garbage data is a model error, not {other:?}"),
        }
        if assembler.is_complete() {
            let _ = assembler.into_reply();
        }
    }
}

#[test]
fn deeply_nested_or_wrongly_typed_chunks_are_model_errors() {
    let wrong = [
        nested_json(100_000, false),
        nested_json(100_000, true),
        format!("{{\"choices\":[{{\"delta\":{}}}]}}", nested_json(50_000, true)),
        "{\"choices\":[{\"delta\":{\"content\":".to_string(),
        "not json at all".to_string(),
    ];
    for data in wrong {
        let mut assembler = StreamAssembler::default();
        match assembler.apply(&data, &mut Deltas::default()) {
            Err(Error::Model(message)) => assert!(message.len() < 1000, "{} bytes of message", message.len()),
            other => panic!("{} bytes of bad chunk gave {other:?}", data.len()),
        }
    }
    // Well-formed JSON of odd types is skipped or refused, never a panic.
    for data in
        ["{\"choices\":5}", "{\"choices\":[5]}", "{\"choices\":[{\"delta\":{\"tool_calls\":[7]}}]}", "[]"]
    {
        let _ = StreamAssembler::default().apply(data, &mut Deltas::default());
    }
}

#[test]
fn a_huge_data_line_arrives_whole() {
    let text = "x".repeat(5_000_000);
    let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]}).to_string();
    let stream = format!("data: {chunk}\n\ndata: [DONE]\n\n");
    let mut random = XorShift::seeded(0x0b16_11e5);
    let events = events_split_at(stream.as_bytes(), &random_cuts(&mut random, stream.len()));
    let mut deltas = Deltas::default();
    let (assembler, error) = assemble(&events, &mut deltas);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(assembler.into_reply().expect("complete").content.map(|c| c.len()), Some(5_000_000));
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
    let mut deltas = Deltas::default();
    let first = chunk(json!({"index": u64::MAX, "id": "call_a", "function": {"name": "bash"}}));
    let second = chunk(json!({"id": "call_b", "function": {"name": "read_file"}}));
    let applied = catch_unwind(AssertUnwindSafe(|| {
        assembler.apply(&first, &mut deltas).and_then(|()| assembler.apply(&second, &mut deltas))
    }));
    let error = applied.expect("the assembler panicked").expect_err("no place for the second call");
    assert!(error.to_string().contains("streamed tool call without an index"), "{error}");
}
