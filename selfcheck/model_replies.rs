//! What a model or a server can do wrong, and what the user sees then.

use crate::harness::{Test, call, text};
use mini_agent::scripted_server::Step;
use serde_json::json;

fn html(status: u16) -> Step {
    Step::Reply {
        status,
        headers: Vec::new(),
        body: "<html><head><title>Bad Gateway</title></head><body><h1>nginx says no</h1></body></html>"
            .into(),
    }
}

#[test]
fn an_unknown_tool_is_answered_as_an_error_and_the_turn_goes_on() {
    let run = Test::new().args(["-p", "x"]).server(vec![call("teleport", json!({})), text("sorry")]).run();
    run.expect_code(0);
    assert!(run.only_tool_result().contains("unknown tool `teleport`"), "{}", run.only_tool_result());
    assert_eq!(run.stdout, "sorry\n");
}

#[test]
fn invalid_json_arguments_are_answered_as_an_error() {
    let steps = vec![Step::tool_calls(&[("read_file", "{\"path\": ")]), text("retrying")];
    let run = Test::new().args(["-p", "x"]).server(steps).run();
    run.expect_code(0);
    assert!(!run.only_tool_result().is_empty());
    run.stderr_has("✗");
}

#[test]
fn several_calls_in_one_reply_are_answered_in_order() {
    let steps = vec![
        Step::tool_calls(&[("list_files", "{}"), ("read_file", "{\"path\":\"a.txt\"}"), ("nope", "{}")]),
        text("done"),
    ];
    let run = Test::new().args(["-p", "x"]).file("a.txt", "A").server(steps).run();
    run.expect_code(0);
    assert_eq!(run.tool_results().len(), 3);
}

#[test]
fn an_empty_choices_list_fails_with_one_line() {
    let body = json!({"id": "x", "choices": []}).to_string();
    let run =
        Test::new().args(["-p", "x"]).server(vec![Step::Reply { status: 200, headers: vec![], body }]).run();
    run.expect_code(1).stderr_has("mini-agent: ");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
}

#[test]
fn http_errors_show_the_status_the_servers_message_and_a_hint() {
    let unauthorized = Test::new().args(["-p", "x"]).server(vec![Step::error(401, "Invalid API Key")]).run();
    unauthorized.expect_code(1).stderr_has("401").stderr_has("Invalid API Key").stderr_has("OPENAI_API_KEY");

    let html_unauthorized = Test::new().args(["-p", "x"]).server(vec![html(401)]).run();
    html_unauthorized.expect_code(1).stderr_has("401").stderr_has("OPENAI_API_KEY");
    assert!(!html_unauthorized.stderr.contains("<html>"), "{}", html_unauthorized.stderr);

    let failed = Test::new().args(["-p", "x"]).server(vec![Step::error(500, "overloaded")]).run();
    failed.expect_code(1).stderr_has("500").stderr_has("overloaded");

    let html_failed = Test::new().args(["-p", "x"]).server(vec![html(500)]).run();
    html_failed.expect_code(1).stderr_has("500");
    for run in [&unauthorized, &html_unauthorized, &failed, &html_failed] {
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
}

#[test]
fn a_refused_connection_names_the_endpoint() {
    // Bind and drop: the port is free, and nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let run = Test::new().args(["-p", "x"]).base_url(&url).run();
    run.expect_code(1).stderr_has("mini-agent: ").stderr_has(&format!("127.0.0.1:{port}"));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn a_busy_server_is_retried_and_the_retry_is_shown() {
    let run = Test::new()
        .args(["-p", "x"])
        .env("MINI_AGENT_REQUEST_MAX_RETRIES", "1")
        .server(vec![Step::error(503, "busy"), text("fine now")])
        .run();
    run.expect_code(0).stderr_has("retry 1");
    assert_eq!(run.stdout, "fine now\n");
    assert_eq!(run.requests.len(), 2);
}

#[test]
fn a_connection_cut_before_the_reply_fails_saying_it_is_not_sent_again() {
    let run = Test::new()
        .args(["-p", "x"])
        .env("MINI_AGENT_REQUEST_MAX_RETRIES", "2")
        .server(vec![Step::Close, text("a retry would get this")])
        .run();
    run.expect_code(1).stderr_has("mini-agent: model request failed").stderr_has("it is not sent again");
    assert_eq!(run.requests.len(), 1, "a request that may have been acted on is not retried");
}
