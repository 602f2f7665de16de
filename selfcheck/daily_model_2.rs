//! A daily driver, part 2 (issue 22, items 9, 12 and 14): what a person trips on with real
//! servers and small local models, replayed through the scripted server against the binary,
//! with the bodies those servers send.
//!
//! * errors that say what to do: a web server that is not a model API, llama.cpp's 500 for
//!   output it could not parse (retried: a sampling slip, nothing ran).

use crate::harness::{Test, text};
use mini_agent::scripted_server::Step;
use serde_json::json;

/// llama-server's body when the model's tool call does not parse (`common/chat.cpp`).
fn unparsed_output() -> Step {
    let body = json!({"error": {"code": 500, "message":
        "The model produced output that does not match the expected peg-native format", "type": "server_error"}});
    Step::Reply { status: 500, headers: vec![], body: body.to_string() }
}

// ---- item 9: errors that say what to do ----

#[test]
fn a_web_server_that_is_not_a_model_api_is_asked_about_not_retried_later() {
    let page = "<html><head><title>Error response</title></head><body><p>Error code: 501</p>\
                <p>Message: Unsupported method ('POST').</p></body></html>";
    let run = Test::new()
        .args(["-p", "hi"])
        .server(vec![Step::Reply { status: 501, headers: vec![], body: page.into() }])
        .run();
    run.expect_code(1).stderr_has("is --base-url an OpenAI-compatible endpoint (one usually ending in /v1)?");
    assert!(!run.stderr.contains("try again later"), "{}", run.stderr);
}

// ---- item 14: llama.cpp's unparsed output is a sampling slip ----

#[test]
fn llama_cpps_unparsed_output_is_asked_again_and_said_what_it_is() {
    let run = Test::new()
        .args(["-p", "hi"])
        .env("MINI_AGENT_REQUEST_MAX_RETRIES", "2")
        .server(vec![unparsed_output(), text("hello")])
        .run();
    run.expect_code(0).stderr_has("retry 1").stderr_has("a sampling slip of the model");
    assert_eq!((run.stdout.trim(), run.requests.len()), ("hello", 2));
}
