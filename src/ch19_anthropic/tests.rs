//! Tests of chapter 19's Messages client against the scripted server: the mapping both ways,
//! streaming, tool use, errors, retries, cut and hostile streams.

use super::*;
use crate::ch02_loop::{CacheUsage, Event, Message, ToolCall, Usage};
use crate::ch08_retry::{RetryNotice, Retrying};
use crate::ch11_streaming::{PartialText, StreamedText};
use crate::scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};

/// Text deltas, partial text and retries, as the observer saw them.
#[derive(Default)]
struct Seen {
    deltas: Vec<String>,
    partial: Option<String>,
    retries: Vec<(u64, String)>,
}
impl Observer for Seen {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        let Event::Notice(notice) = event else { return Ok(()) };
        let any = notice.as_any();
        if let Some(StreamedText(text)) = any.downcast_ref() {
            self.deltas.push(text.clone());
        } else if let Some(PartialText(text)) = any.downcast_ref() {
            self.partial = Some(text.clone());
        } else if let Some(RetryNotice { wait_ms, reason, .. }) = any.downcast_ref() {
            self.retries.push((*wait_ms, reason.clone()));
        }
        Ok(())
    }
}

fn client(server: &ScriptedServer, stream: bool) -> AnthropicClient {
    let mut client = AnthropicClient::new(&server.url, None, "claude-test").expect("loopback needs no key");
    client.stream = stream;
    client.with_idle(Duration::from_secs(5))
}

impl AnthropicClient {
    fn with_idle(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }
}

/// The tools a request offers (their blocks need some).
fn offered() -> [Value; 1] {
    [json!({"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}})]
}

fn history() -> Vec<Message> {
    vec![Message::System { content: "be brief".into() }, Message::User { content: "hi".into() }]
}

fn ask(steps: Vec<Step>, stream: bool) -> (Result<Reply, Error>, Seen, Vec<Value>) {
    let server = ScriptedServer::scripted(steps).expect("server");
    let mut seen = Seen::default();
    let result = client(&server, stream).complete(&Request { messages: &history(), tools: &[] }, &mut seen);
    (result, seen, server.requests())
}

fn message(content: Value, stop_reason: &str) -> Step {
    let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": 7, "output_tokens": 5, "cache_read_input_tokens": 100,
                  "cache_creation_input_tokens": 20}});
    Step::Reply { status: 200, headers: vec![], body: body.to_string() }
}

/// The events of a streamed reply: text pieces, then tool calls with their JSON in pieces.
fn events(text: &[&str], calls: &[(&str, &str, &[&str])], stop: &str) -> Vec<Value> {
    let mut events = vec![json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "content": [], "usage": {"input_tokens": 9, "output_tokens": 1,
        "cache_read_input_tokens": 50, "cache_creation_input_tokens": 0}}})];
    events.push(
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    events.push(json!({"type": "ping"}));
    for piece in text {
        events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}));
    }
    events.push(json!({"type": "content_block_stop", "index": 0}));
    for (i, (id, name, pieces)) in calls.iter().enumerate() {
        let index = i + 1;
        events.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
        for piece in *pieces {
            events.push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 15}}),
    );
    events.push(json!({"type": "message_stop"}));
    events
}

fn stream_of(events: &[Value]) -> Step {
    Step::Stream { chunks: events.iter().map(Value::to_string).collect(), delay_ms: 0, finish: false }
}

#[test]
fn the_history_is_mapped_to_turns_of_blocks_with_two_cache_breakpoints() {
    let call = |id: &str, arguments: &str| ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: arguments.into(),
    };
    let messages = vec![
        Message::System { content: "system prompt".into() },
        Message::User { content: "read both".into() },
        Message::Assistant {
            content: Some("Reading.".into()),
            tool_calls: vec![call("call.1", r#"{"path":"a"}"#), call("c2", "{oops")],
        },
        Message::Tool { tool_call_id: "call.1".into(), content: "alpha".into() },
        Message::Tool { tool_call_id: "c2".into(), content: "invalid arguments".into() },
        Message::User { content: "typed meanwhile".into() },
    ];
    let tools = [json!({"type": "function", "function": {"name": "read_file", "description": "Read",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}})];
    let body: Value = serde_json::from_slice(&request::body(
        "m",
        100,
        &Request { messages: &messages, tools: &tools },
        false,
    ))
    .unwrap();
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "system prompt", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(body["max_tokens"], json!(100));
    assert_eq!(body.get("stream"), None);
    assert_eq!(
        body["tools"],
        json!([{"name": "read_file", "description": "Read",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}])
    );
    let turns = body["messages"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{turns:#?}");
    assert_eq!(
        turns[1],
        json!({"role": "assistant", "content": [
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "a"}},
        {"type": "tool_use", "id": "c2", "name": "read_file", "input": {}}]})
    );
    // Both results and the line typed meanwhile are one user turn; the breakpoint is on its end.
    assert_eq!(
        turns[2],
        json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "alpha"},
        {"type": "tool_result", "tool_use_id": "c2", "content": "invalid arguments", "is_error": true},
        {"type": "text", "text": "typed meanwhile", "cache_control": {"type": "ephemeral"}}]})
    );
}

#[test]
fn a_request_without_tools_says_its_calls_and_results_in_text() {
    // The API refuses tool blocks in a request that defines no tools; chapter 7 asks a stuck
    // model once more with none.
    let call =
        ToolCall { id: "c1".into(), name: "bash".into(), arguments: r#"{"command":"echo 42"}"#.into() };
    let messages = vec![
        Message::User { content: "go".into() },
        Message::Assistant { content: None, tool_calls: vec![call] },
        Message::Tool { tool_call_id: "c1".into(), content: "42".into() },
    ];
    let body: Value =
        serde_json::from_slice(&request::body("m", 100, &Request { messages: &messages, tools: &[] }, false))
            .expect("JSON");
    assert!(body.get("tools").is_none());
    let text = body["messages"].to_string();
    assert!(!text.contains("tool_use") && !text.contains("tool_result"), "{text}");
    assert_eq!(body["messages"][1]["content"][0]["text"], r#"[called bash with {"command":"echo 42"}]"#);
    assert_eq!(body["messages"][2]["content"][0]["text"], "[the call's result]\n42");
}

#[test]
fn a_history_that_starts_with_the_assistant_gets_a_user_turn_first() {
    let messages = [Message::Assistant { content: Some("hello".into()), tool_calls: vec![] }];
    let body: Value =
        serde_json::from_slice(&request::body("m", 1, &Request { messages: &messages, tools: &[] }, true))
            .unwrap();
    assert_eq!(body["messages"][0]["role"], json!("user"));
    assert_eq!(body["messages"][1]["content"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body.get("system"), None);
}

#[test]
fn a_whole_reply_gives_text_calls_usage_and_cache() {
    let content = json!([{"type": "thinking", "thinking": "hm", "signature": "s"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {"path": "."}},
        {"type": "some_future_block", "x": 1}]);
    let (reply, _, requests) = ask(vec![message(content, "tool_use")], false);
    let reply = reply.expect("ok");
    assert_eq!(reply.content.as_deref(), Some("Let me look."));
    assert_eq!(
        reply.tool_calls,
        [ToolCall { id: "toolu_1".into(), name: "list_files".into(), arguments: r#"{"path":"."}"#.into() }]
    );
    assert_eq!(reply.usage, Some(Usage { prompt_tokens: 127, completion_tokens: 5 }));
    assert_eq!(reply.cache, CacheUsage { read: 100, written: 20 });
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(requests[0]["model"], json!("claude-test"));
    assert_eq!(
        requests[0]["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])
    );
}

#[test]
fn max_tokens_and_refusal_are_cuts_not_answers() {
    for reason in ["max_tokens", "refusal"] {
        let (reply, _, _) = ask(vec![message(json!([{"type": "text", "text": "The first"}]), reason)], false);
        let reply = reply.expect("well formed");
        assert_eq!(reply.cut_reason(), Some(reason));
        let error = Error::ReplyCut { reason: reason.into(), chars: 9, dropped_calls: 0 }.to_string();
        assert!(error.contains("not a finished answer"), "{error}");
    }
    let (reply, _, _) = ask(vec![message(json!([{"type": "text", "text": "Done."}]), "end_turn")], false);
    assert_eq!(reply.expect("ok").cut_reason(), None);
}

#[test]
fn a_stream_gives_text_as_it_arrives_and_calls_at_message_stop() {
    let mut list = events(
        &["Hel", "lo"],
        &[("toolu_a", "read_file", &["{\"pa", "th\":\"x\"}"]), ("toolu_b", "list_files", &[])],
        "tool_use",
    );
    // Events and deltas a later API version may add are skipped.
    list.insert(3, json!({"type": "brand_new_event", "index": 0}));
    list.insert(
        4,
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "new_delta", "x": 1}}),
    );
    let (reply, seen, requests) = ask(vec![stream_of(&list)], true);
    let reply = reply.expect("ok");
    assert_eq!(seen.deltas, ["Hel", "lo"]);
    assert_eq!(reply.content.as_deref(), Some("Hello"));
    let calls: Vec<(&str, &str)> =
        reply.tool_calls.iter().map(|c| (c.id.as_str(), c.arguments.as_str())).collect();
    assert_eq!(calls, [("toolu_a", r#"{"path":"x"}"#), ("toolu_b", "{}")]);
    assert_eq!(reply.usage, Some(Usage { prompt_tokens: 59, completion_tokens: 15 }));
    assert_eq!(reply.cache, CacheUsage { read: 50, written: 0 });
    assert_eq!(requests[0]["stream"], json!(true));
}

#[test]
fn a_stream_cut_before_message_stop_runs_nothing_and_keeps_the_text_as_partial() {
    let list =
        events(&["Half an ", "answer"], &[("toolu_a", "bash", &["{\"command\":\"rm -rf bu"])], "tool_use");
    let cut = &list[..list.len() - 3]; // before the call's block ends
    let (reply, seen, _) = ask(vec![stream_of(cut)], true);
    let error = reply.expect_err("cut");
    assert!(
        matches!(error, Error::Network(ref m) if m.contains("cut off") && m.contains("\"bash\"")),
        "{error}"
    );
    assert_eq!(seen.partial.as_deref(), Some("Half an answer"));
    // Even with message_delta, no message_stop is no reply.
    let (reply, _, _) = ask(vec![stream_of(&list[..list.len() - 1])], true);
    assert!(matches!(reply, Err(Error::Network(_))), "{reply:?}");
}

#[test]
fn an_error_event_mid_stream_fails_the_request() {
    let mut list = events(&["Start"], &[], "end_turn");
    list.truncate(4);
    list.push(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    let (reply, seen, _) = ask(vec![stream_of(&list)], true);
    let error = reply.expect_err("error event");
    assert!(error.to_string().contains("Overloaded"), "{error}");
    assert_eq!(seen.partial.as_deref(), Some("Start"));
}

#[test]
fn invalid_json_input_reaches_the_tool_as_text_and_goes_back_as_an_error_result() {
    let list = events(&[], &[("toolu_x", "bash", &["{\"command\": tru"])], "tool_use");
    let (reply, _, _) = ask(vec![stream_of(&list)], true);
    let reply = reply.expect("the stream itself is whole");
    assert_eq!(reply.tool_calls[0].arguments, "{\"command\": tru");
    let messages = [
        Message::User { content: "go".into() },
        Message::Assistant { content: None, tool_calls: reply.tool_calls.clone() },
        Message::Tool { tool_call_id: "toolu_x".into(), content: "invalid arguments for bash".into() },
    ];
    let body: Value = serde_json::from_slice(&request::body(
        "m",
        1,
        &Request { messages: &messages, tools: &offered() },
        false,
    ))
    .unwrap();
    assert_eq!(body["messages"][1]["content"][0]["input"], json!({}));
    assert_eq!(body["messages"][2]["content"][0]["is_error"], json!(true));
}

#[test]
fn overloaded_and_server_errors_are_retried_honouring_retry_after() {
    fn no_wait(_: Duration) -> Result<(), Error> {
        Ok(())
    }
    let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let steps = vec![
        Step::Reply {
            status: 529,
            headers: vec![("retry-after".into(), "3".into())],
            body: overloaded.to_string(),
        },
        Step::Reply { status: 500, headers: vec![], body: overloaded.to_string() },
        message(json!([{"type": "text", "text": "at last"}]), "end_turn"),
    ];
    let server = ScriptedServer::scripted(steps).expect("server");
    let mut model =
        Retrying::new(client(&server, false), 3).with_statuses(RETRY_STATUSES).with_sleep(no_wait);
    let mut seen = Seen::default();
    let reply = model.complete(&Request { messages: &history(), tools: &[] }, &mut seen).expect("retried");
    assert_eq!(reply.content.as_deref(), Some("at last"));
    assert_eq!(seen.retries[0], (3000, "529 Overloaded".to_string()));
    assert!(seen.retries[1].1.starts_with("500 "), "{:?}", seen.retries);
    // A 400 is the request's fault: not retried, and the server's words are kept.
    let bad = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}});
    let (reply, _, _) = ask(vec![Step::Reply { status: 400, headers: vec![], body: bad.to_string() }], false);
    assert!(reply.expect_err("400").to_string().contains("400 max_tokens: too large"));
}

#[test]
fn a_refused_key_names_the_anthropic_variables() {
    let body =
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
    let (reply, _, _) = ask(vec![Step::Reply { status: 401, headers: vec![], body: body.to_string() }], true);
    let error = reply.expect_err("401").to_string();
    assert!(error.contains("invalid x-api-key") && error.contains("ANTHROPIC_API_KEY"), "{error}");
}

#[test]
fn an_openai_style_server_is_named_as_one() {
    // OpenAI's, llama.cpp's (older builds) and vLLM's answers to POST /v1/messages.
    for body in [
        json!({"error": {"message": "Invalid URL (POST /v1/messages)", "type": "invalid_request_error",
            "param": null, "code": null}}),
        json!({"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}),
        json!({"detail": "Not Found"}),
    ] {
        let (reply, _, _) =
            ask(vec![Step::Reply { status: 404, headers: vec![], body: body.to_string() }], false);
        let error = reply.expect_err("404").to_string();
        assert!(
            error.contains("/v1/messages is not a Messages API endpoint")
                && error.contains("drop --api anthropic"),
            "{error}"
        );
    }
    // A server that answers any path with a Chat Completions reply.
    let (reply, _, _) = ask(vec![Step::text("hello")], false);
    let error = reply.expect_err("chat completions").to_string();
    assert!(
        error.contains("in the shape of OpenAI's Chat Completions") && error.contains("drop --api anthropic"),
        "{error}"
    );
    // Anthropic's own 404 for an unknown model keeps its words, without chapter 2's note.
    let body =
        json!({"type": "error", "error": {"type": "not_found_error", "message": "model: claude-nine"}});
    let (reply, _, _) =
        ask(vec![Step::Reply { status: 404, headers: vec![], body: body.to_string() }], false);
    let error = reply.expect_err("404").to_string();
    assert!(error.contains("404 model: claude-nine") && !error.contains("shape"), "{error}");
}

#[test]
fn hostile_servers_cannot_hang_the_agent_or_take_its_memory() {
    // A stream that never begins: the first-byte bound cuts it.
    let list = events(&["tick"], &[], "end_turn");
    let endless = Step::drip(60_000, stream_of(&list[..3]));
    let server = ScriptedServer::scripted(vec![endless]).expect("server");
    let mut model = client(&server, true).with_idle(Duration::from_millis(300));
    model.first_byte_timeout = Some(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let reply = model.complete(&Request { messages: &history(), tools: &[] }, &mut Seen::default());
    assert!(
        matches!(reply, Err(Error::Network(ref m)) if m.contains("no reply from the server within 0.3 s")),
        "{reply:?}"
    );
    println!("figure: a silent stream was given up after {:?} (first byte 300 ms)", started.elapsed());
    // 50 MB, whole or streamed: refused at the 10 MiB cap.
    let big = "x".repeat(50 << 20);
    let whole = message(json!([{"type": "text", "text": big}]), "end_turn");
    let (reply, _, _) = ask(vec![whole], false);
    assert!(reply.expect_err("too large").to_string().contains("larger than 10 MiB"));
    let piece = "y".repeat(1 << 20);
    let pieces: Vec<&str> = (0..50).map(|_| piece.as_str()).collect();
    let (reply, _, _) = ask(vec![stream_of(&events(&pieces, &[], "end_turn"))], true);
    assert!(reply.expect_err("too large").to_string().contains("larger than 10 MiB"));
}

/// Accepts one request, keeps its head, and answers with a short reply.
fn capture_head() -> (String, std::thread::JoinHandle<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut head = String::new();
        while reader.read_line(&mut head).is_ok_and(|n| n > 2) && !head.ends_with("\r\n\r\n") {}
        let body = r#"{"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}"#;
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        (&stream).write_all(reply.as_bytes()).expect("reply");
        head.to_ascii_lowercase()
    });
    (url, handle)
}

#[test]
fn the_key_travels_as_x_api_key_or_as_a_bearer_token_with_the_version() {
    for (auth, expected) in [
        (Auth::ApiKey("sk-ant-test-key".into()), "x-api-key: sk-ant-test-key"),
        (Auth::Bearer("gateway-token".into()), "authorization: bearer gateway-token"),
    ] {
        let (url, head) = capture_head();
        let mut model = AnthropicClient::new(&url, Some(auth), "m").expect("client");
        let reply = model.complete(&Request { messages: &history(), tools: &[] }, &mut Seen::default());
        assert_eq!(reply.expect("ok").content.as_deref(), Some("ok"));
        let head = head.join().expect("head");
        assert!(head.starts_with("post /v1/messages http/1.1"), "{head}");
        assert!(head.contains(expected) && head.contains("anthropic-version: 2023-06-01"), "{head}");
    }
}

#[test]
fn urls_keys_and_their_absence() {
    assert_eq!(messages_url("https://api.anthropic.com"), "https://api.anthropic.com/v1/messages");
    assert_eq!(messages_url("https://gw.example/anthropic/"), "https://gw.example/anthropic/v1/messages");
    assert_eq!(messages_url("http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1/messages");
    assert_eq!(messages_url("https://h/x?k=1#f"), "https://h/x/v1/messages?k=1");
    let missing = AnthropicClient::new(DEFAULT_BASE_URL, None, "m").expect_err("a key is needed");
    assert!(missing.to_string().contains("ANTHROPIC_API_KEY"), "{missing}");
    let keys = AnthropicKeys { api_key: Some("k".into()), auth_token: Some("t".into()), base_url: None };
    assert!(matches!(keys.auth(), Some(Auth::ApiKey(ref k)) if k == "k"));
    let taken =
        crate::ch03_tools::secrets::Keys::default().with(AUTH_TOKEN, "t").with(BASE_URL, "https://gw");
    let keys = AnthropicKeys::from_keys(&taken);
    assert!(matches!(keys.auth(), Some(Auth::Bearer(ref t)) if t == "t"));
    assert_eq!(keys.base_url.as_deref(), Some("https://gw"));
}

#[test]
fn a_result_the_loop_saw_fail_goes_back_with_is_error() {
    use crate::ch02_loop::{ToolOutput, ToolStatus};
    let call = ToolCall {
        id: "toolu_fails_19".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"x"}"#.into(),
    };
    let output = ToolOutput { content: "no such file: x".into(), status: ToolStatus::Error };
    failures::ToolFailures.event(Event::ToolFinished(&call, &output)).expect("observed");
    let fine = ToolCall { id: "toolu_fine_19".into(), ..call.clone() };
    let messages = [
        Message::User { content: "go".into() },
        Message::Assistant { content: None, tool_calls: vec![call, fine] },
        Message::Tool { tool_call_id: "toolu_fails_19".into(), content: "no such file: x".into() },
        Message::Tool { tool_call_id: "toolu_fine_19".into(), content: "ok".into() },
    ];
    let body: Value = serde_json::from_slice(&request::body(
        "m",
        1,
        &Request { messages: &messages, tools: &offered() },
        false,
    ))
    .unwrap();
    let results = &body["messages"][2]["content"];
    assert_eq!(results[0]["is_error"], json!(true), "{results}");
    assert_eq!(results[1].get("is_error"), None, "{results}");
}

#[test]
fn max_tokens_comes_from_the_environment_value_or_the_default() {
    assert_eq!(parse_max_tokens(None).unwrap(), DEFAULT_MAX_TOKENS);
    assert_eq!(parse_max_tokens(Some(" ")).unwrap(), DEFAULT_MAX_TOKENS);
    assert_eq!(parse_max_tokens(Some("64000")).unwrap(), 64000);
    for bad in ["0", "-1", "many", "1.5"] {
        let error = parse_max_tokens(Some(bad)).expect_err(bad).to_string();
        assert!(error.contains("MINI_AGENT_MAX_TOKENS"), "{error}");
    }
}

#[test]
fn the_demo_model_speaks_the_messages_api_whole_and_streamed() {
    let server = crate::demo::start_demo_server().expect("the demo server");
    let tools =
        [json!({"type": "function", "function": {"name": "list_files", "parameters": {"type": "object"}}})];
    for stream in [false, true] {
        let mut history = vec![
            Message::System { content: "be brief".into() },
            Message::User { content: "list files".into() },
        ];
        let mut client = client(&server, stream);
        let reply = client.complete(&Request { messages: &history, tools: &tools }, &mut Seen::default());
        let reply = reply.expect("a reply");
        let calls: Vec<(&str, &str)> =
            reply.tool_calls.iter().map(|call| (call.name.as_str(), call.arguments.as_str())).collect();
        assert_eq!(calls, [("list_files", "{}")], "stream: {stream}");
        let id = reply.tool_calls[0].id.clone();
        history.push(Message::Assistant { content: None, tool_calls: reply.tool_calls });
        history.push(Message::Tool { tool_call_id: id, content: "a.txt\nb.txt".into() });
        let reply = client.complete(&Request { messages: &history, tools: &tools }, &mut Seen::default());
        let answer = reply.expect("an answer").content.unwrap_or_default();
        assert!(
            answer.starts_with("Files in `.`:") && answer.contains("b.txt"),
            "stream: {stream}: {answer}"
        );
    }
    assert!(server.requests().iter().all(|request| request["max_tokens"].is_u64()), "Messages requests");
}

#[test]
fn the_demo_models_rehearsed_faults_reach_the_messages_client_too() {
    let server = crate::demo::start_demo_server().expect("the demo server");
    let ask = |text: &str, stream: bool| {
        let history = [Message::User { content: text.into() }];
        let mut seen = Seen::default();
        let reply =
            client(&server, stream).complete(&Request { messages: &history, tools: &offered() }, &mut seen);
        (reply.map(|reply| reply.content), seen.partial)
    };
    let (overloaded, _) = ask("be overloaded", false);
    assert!(matches!(overloaded, Err(ref error) if error.to_string().contains("503")), "{overloaded:?}");
    let (cut, partial) = ask("break the stream", true);
    assert!(
        matches!(cut, Err(Error::Network(ref m)) if m.contains("cut off") && m.contains("\"bash\"")),
        "{cut:?}"
    );
    assert_eq!(partial.as_deref(), Some("Let me clean up."));
}
