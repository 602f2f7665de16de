//! The model-reply parser: every cut of a valid reply, random bytes, deep nesting.

use crate::{XorShift, cases, nested_json, preview};
use mini_agent::ch01_loop::Error;
use mini_agent::ch02_model::parse_reply;

/// A well-formed reply with text and one tool call: the source of truncated prefixes.
fn valid_reply() -> String {
    serde_json::json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Let me look.",
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"}}]}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
    })
    .to_string()
}

/// The parser's verdict on a body it must refuse: a model error with a short message.
fn assert_refused(body: &str) {
    match parse_reply(body) {
        Err(Error::Model(message)) => {
            assert!(message.len() < 1000, "a {}-byte message for {:?}", message.len(), preview(body));
        }
        other => panic!("{:?} was not refused as a model error: {other:?}", preview(body)),
    }
}

#[test]
fn the_parser_refuses_every_cut_of_a_valid_reply() {
    let reply = valid_reply();
    let parsed = parse_reply(&reply).expect("the whole reply parses");
    assert_eq!(parsed.tool_calls.len(), 1);
    for cut in 0..reply.len() {
        assert_refused(&reply[..cut]);
    }
}

#[test]
fn the_parser_refuses_random_bytes_and_deep_nesting() {
    let mut random = XorShift::seeded(0x9a45_e5ee);
    for _ in 0..cases(200) * 10 {
        let len = random.below(400);
        let body = String::from_utf8_lossy(&random.bytes(len)).into_owned();
        // Random bytes are JSON only by a fluke ("7", "[]"): then any verdict but a panic.
        if serde_json::from_str::<serde_json::Value>(&body).is_ok() {
            let _ = parse_reply(&body);
        } else {
            assert_refused(&body);
        }
    }
    for depth in [1_000, 100_000] {
        for objects in [false, true] {
            let nested = nested_json(depth, objects);
            assert_refused(&nested);
            assert_refused(&format!("{{\"choices\":[{{\"message\":{{\"content\":{nested}}}}}]}}"));
        }
    }
}
