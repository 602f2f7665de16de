//! The model-reply parser: every cut of a valid reply, random bytes, deep nesting, wrong
//! shapes — first straight into `parse_reply`, then through the binary and a scripted server.

use crate::binary_run::{Run, Workspace, args, run_binary};
use crate::{XorShift, assert_clear_failure, assert_survived, cases, nested_json, preview};
use mini_agent::ch02_loop::Error;
use mini_agent::ch02_model::parse_reply;
use mini_agent::scripted_server::{ScriptedServer, Step};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);

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

/// Runs `-p` against a server that answers every request with `status` and `body`.
fn run_against_reply(status: u16, body: String) -> Run {
    let server =
        ScriptedServer::start(move |_| Step::Reply { status, headers: Vec::new(), body: body.clone() })
            .expect("loopback server");
    let workspace = Workspace::new("robust-reply");
    workspace.write("notes.txt", "notes\n");
    let argv = args(&["--base-url", &server.url, "--max-turns", "2", "-p", "hello"]);
    run_binary(workspace.path(), &argv, &[("MINI_AGENT_REQUEST_MAX_RETRIES", "0")], DEADLINE)
}

#[test]
fn every_truncated_prefix_of_a_reply_fails_clearly() {
    let reply = valid_reply();
    // Every cut through the binary is a few hundred processes; a stride keeps plain
    // `cargo test` quick while still cutting inside every kind of token.
    let stride = if cases(200) >= 600 { 1 } else { 3 };
    for cut in (0..reply.len()).step_by(stride) {
        let run = run_against_reply(200, reply[..cut].to_string());
        assert_clear_failure(&run, &format!("the reply cut at byte {cut}: {:?}", &reply[..cut]));
    }
}

#[test]
fn random_bytes_as_a_reply_fail_clearly() {
    let mut random = XorShift::seeded(0xb17e_5eed);
    for case in 0..cases(200) / 5 {
        let len = random.below(3000);
        let body = String::from_utf8_lossy(&random.bytes(len)).into_owned();
        let run = run_against_reply(200, body.clone());
        assert_clear_failure(&run, &format!("case {case}: {len} random bytes {:?}", preview(&body)));
    }
}

#[test]
fn deeply_nested_json_fails_clearly() {
    for depth in [1_000, 100_000] {
        for objects in [false, true] {
            let nested = nested_json(depth, objects);
            let bodies = [
                nested.clone(),
                format!("{{\"choices\":[{{\"message\":{nested}}}]}}"),
                format!("{{\"choices\":[{{\"message\":{{\"role\":\"assistant\",\"content\":{nested}}}}}]}}"),
            ];
            for body in bodies {
                let run = run_against_reply(200, body);
                assert_clear_failure(
                    &run,
                    &format!("{} nested {depth} deep", if objects { "objects" } else { "arrays" }),
                );
            }
        }
    }
}

#[test]
fn well_formed_json_of_the_wrong_shape_fails_clearly() {
    let unusable = [
        "{}",
        "[]",
        "null",
        "\"text\"",
        "{\"choices\":null}",
        "{\"choices\":\"many\"}",
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\"}]}}]}",
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":7}]}}]}",
    ];
    for body in unusable {
        let run = run_against_reply(200, body.to_string());
        assert_clear_failure(&run, &format!("reply {body}"));
    }
}

#[test]
fn odd_fields_in_a_reply_never_crash() {
    // A tolerant reader may take these as an empty answer or refuse them; either way the
    // binary must end within the contract, never panic.
    let odd = [
        "{\"choices\":[{\"message\":null}]}",
        "{\"choices\":[{\"message\":5}]}",
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":5}}]}",
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"tool_calls\":\"call\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"ok\"}}],\"usage\":{\"prompt_tokens\":-1}}",
        "{\"choices\":[{\"message\":{\"content\":\"ok\"}}],\"usage\":\"lots\"}",
    ];
    for body in odd {
        let run = run_against_reply(200, body.to_string());
        assert_survived(&run, &format!("reply {body}"));
    }
}

#[test]
fn error_statuses_with_garbage_bodies_fail_clearly() {
    let mut random = XorShift::seeded(0xe440_5eed);
    for status in [400, 401, 404, 422, 500, 502] {
        let len = random.below(500);
        let garbage = String::from_utf8_lossy(&random.bytes(len)).into_owned();
        for body in [garbage, String::new(), "<html><body>Bad Gateway</body></html>".to_string()] {
            let run = run_against_reply(status, body.clone());
            assert_clear_failure(&run, &format!("status {status} with body {:?}", preview(&body)));
            assert!(run.stderr.contains(&status.to_string()), "the status is named\n{}", run.describe());
        }
    }
}

#[test]
fn a_huge_text_reply_is_printed_whole() {
    let text = "long line ".repeat(200_000);
    let body = serde_json::json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": text}}]})
    .to_string();
    let run = run_against_reply(200, body);
    assert_survived(&run, "a 2 MB reply");
    assert_eq!(run.code, Some(0), "{}", run.describe());
    // Counted, not compared: a renderer may wrap the paragraph, but must not drop any of it.
    assert_eq!(run.stdout.matches("long line").count(), 200_000, "the whole answer reaches stdout");
}
