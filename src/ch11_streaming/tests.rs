//! Tests of chapter 11's streaming client against a scripted server.

use super::*;
use crate::ch02_loop::{Message, Usage};
use crate::ch02_model::DEFAULT_IDLE_TIMEOUT;
use crate::scripted_server::{ScriptedServer, Step};
use serde_json::json;

/// Records text deltas and notices.
/// Collects what the assembler reports: text deltas and notices (the properties use it too).
#[derive(Default)]
pub(super) struct Seen {
    pub(super) deltas: Vec<String>,
    notices: Vec<(String, String)>,
}
impl Observer for Seen {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        if let Event::Notice(notice) = event {
            if let Some(StreamedText(text)) = notice.as_any().downcast_ref() {
                self.deltas.push(text.clone());
            }
            if let Some(PartialText(text)) = notice.as_any().downcast_ref() {
                self.notices.push(("partial".to_owned(), text.clone()));
            }
        }
        Ok(())
    }
}

fn stream(steps: Vec<Step>, idle: Duration) -> (Result<Reply, Error>, Seen, Vec<Value>) {
    let server = ScriptedServer::scripted(steps).expect("server");
    let config = ClientConfig { base_url: server.url.clone(), api_key: None, model: "m".into() };
    let mut model = StreamingClient::new(config).expect("client").with_idle_timeout(idle);
    let mut seen = Seen::default();
    let messages = [Message::User { content: "hi".into() }];
    let result = model.complete(&Request { messages: &messages, tools: &[] }, &mut seen);
    (result, seen, server.requests())
}

fn chunks(values: &[Value], finish: bool) -> Step {
    Step::Stream { chunks: values.iter().map(Value::to_string).collect(), delay_ms: 0, finish }
}
fn text(piece: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]})
}
fn finish(reason: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}
fn usage() -> Value {
    json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}})
}
fn call_fragment(index: u64, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut function = json!({"arguments": arguments});
    if let Some(name) = name {
        function["name"] = json!(name);
    }
    let mut call = json!({"index": index, "function": function});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
}

#[test]
fn text_is_shown_as_it_arrives_and_usage_comes_last() {
    let step = chunks(&[text("Hel"), text("lo"), finish("stop"), usage()], true);
    let (result, seen, requests) = stream(vec![step], DEFAULT_IDLE_TIMEOUT);
    assert_eq!(
        result.expect("ok"),
        Reply {
            content: Some("Hello".into()),
            tool_calls: vec![],
            usage: Some(Usage { prompt_tokens: 12, completion_tokens: 3 }),
            finish_reason: Some("stop".into()),
            cache: Default::default(),
        }
    );
    assert_eq!(seen.deltas, ["Hel", "lo"]);
    assert_eq!(requests[0]["stream"], json!(true));
    assert_eq!(requests[0]["stream_options"], json!({"include_usage": true}));
}

#[test]
fn interleaved_tool_calls_are_assembled_by_index() {
    let step = chunks(
        &[
            call_fragment(0, Some("call_a"), Some("read_file"), ""),
            call_fragment(1, Some("call_b"), Some("bash"), "{\"comm"),
            call_fragment(0, None, None, "{\"path\":"),
            call_fragment(1, None, None, "and\":\"ls\"}"),
            call_fragment(0, None, None, "\"x.rs\"}"),
            finish("tool_calls"),
            usage(),
        ],
        true,
    );
    let (result, seen, _) = stream(vec![step], DEFAULT_IDLE_TIMEOUT);
    let reply = result.expect("ok");
    assert_eq!(reply.content, None);
    assert_eq!(
        reply.tool_calls,
        vec![
            ToolCall {
                id: "call_a".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"x.rs"}"#.into()
            },
            ToolCall { id: "call_b".into(), name: "bash".into(), arguments: r#"{"command":"ls"}"#.into() },
        ]
    );
    assert!(seen.deltas.is_empty() && seen.notices.is_empty());
}

#[test]
fn a_finish_reason_then_the_end_of_the_body_is_complete() {
    let (result, _, _) = stream(vec![chunks(&[text("ok"), finish("stop")], false)], DEFAULT_IDLE_TIMEOUT);
    assert_eq!(result.expect("complete").content.as_deref(), Some("ok"));
}

#[test]
fn a_stream_cut_in_the_text_is_an_error_with_the_partial_text_recorded() {
    let (result, seen, _) =
        stream(vec![chunks(&[text("Half an ans"), text("wer")], false)], DEFAULT_IDLE_TIMEOUT);
    let error = result.expect_err("cut");
    assert!(matches!(error, Error::Network(ref m) if m.starts_with("stream cut off")), "{error:?}");
    assert_eq!(seen.notices, [("partial".to_owned(), "Half an answer".to_owned())]);
}

#[test]
fn a_stream_cut_inside_tool_arguments_runs_nothing() {
    let step = chunks(
        &[text("Let me look."), call_fragment(0, Some("c"), Some("bash"), "{\"command\":\"rm")],
        false,
    );
    let (result, seen, _) = stream(vec![step], DEFAULT_IDLE_TIMEOUT);
    let error = result.expect_err("cut").to_string();
    assert!(error.contains("while receiving tool call \"bash\""), "{error}");
    assert_eq!(seen.notices, [("partial".to_owned(), "Let me look.".to_owned())]);
}

#[test]
fn a_chunked_stream_broken_mid_chunk_is_cut_off() {
    use std::io::{BufRead, BufReader, Write};
    // Real servers send chunked bodies; this one dies in the middle of its second chunk.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let server = thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("request head");
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().expect("length");
            }
            if line.trim().is_empty() {
                break;
            }
        }
        reader.read_exact(&mut vec![0; length]).expect("request body");
        let event = format!("data: {}\n\n", text("partial "));
        let mut writer = stream;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        write!(writer, "{head}{:x}\r\n{event}\r\n40\r\ndata: {{\"cho", event.len()).expect("write");
    });
    let config = ClientConfig { base_url: url, api_key: None, model: "m".into() };
    let mut model = StreamingClient::new(config).expect("client");
    let mut seen = Seen::default();
    let messages = [Message::User { content: "hi".into() }];
    let result = model.complete(&Request { messages: &messages, tools: &[] }, &mut seen);
    server.join().expect("server thread");
    let error = result.expect_err("cut");
    assert!(
        matches!(error, Error::Network(ref m) if m.starts_with("stream cut off before it finished (8 characters")),
        "{error:?}"
    );
    assert_eq!(seen.notices, [("partial".to_owned(), "partial ".to_owned())]);
}

#[test]
fn a_silent_server_hits_the_first_byte_bound() {
    let started = Instant::now();
    let (result, _, _) = stream(vec![Step::Hang], Duration::from_millis(200));
    assert!(
        matches!(result, Err(Error::Network(ref m)) if m.starts_with("no reply from the server within ")
            && m.contains("(MINI_AGENT_IDLE_TIMEOUT_SECS plus 1 s per 100 bytes of request")),
        "{result:?}"
    );
    println!("figure: a silent stream was given up after {:?} (idle timeout 200 ms)", started.elapsed());
}

/// A stream of `step` with an idle timeout of 300 ms and a first byte allowed `first_byte`.
fn stream_waiting(step: Step, first_byte: Duration) -> Result<Reply, Error> {
    let server = ScriptedServer::scripted(vec![step]).expect("server");
    let config = ClientConfig { base_url: server.url.clone(), api_key: None, model: "m".into() };
    let mut model = StreamingClient::new(config)
        .expect("client")
        .with_idle_timeout(Duration::from_millis(300))
        .with_first_byte_timeout(Some(first_byte));
    let messages = [Message::User { content: "hi".into() }];
    model.complete(&Request { messages: &messages, tools: &[] }, &mut Seen::default())
}

#[test]
fn the_first_chunk_may_take_longer_than_the_gaps_after_it() {
    // The headers come at once, then 1.5 s before each chunk: the first is within its 30 s
    // bound (a server reading the prompt), the second comes after 1.5 s of silence, more than
    // the 300 ms idle timeout.
    let chunks = vec![text("a").to_string(), text("b").to_string()];
    let step = Step::Stream { chunks, delay_ms: 1500, finish: true };
    let result = stream_waiting(step, Duration::from_secs(30));
    assert!(
        matches!(result, Err(Error::Network(ref m)) if m.starts_with("no byte from the server for 0.3 s")
            && m.contains("stream cut off (1 characters of text")),
        "{result:?}"
    );
    let step = Step::Stream { chunks: vec![text("read it").to_string()], delay_ms: 1500, finish: true };
    let reply = stream_waiting(step, Duration::from_secs(30)).expect("a first chunk after 1.5 s");
    assert_eq!(reply.content.as_deref(), Some("read it"));
}

#[test]
fn a_stream_that_never_ends_is_cut_at_the_request_limit_when_one_is_set() {
    // A chunk every 150 ms for ever (here: 60 of them, 9 s), each gap far under the idle
    // timeout; only MINI_AGENT_REQUEST_TIMEOUT_SECS's bound ends it.
    let step = Step::Stream { chunks: vec![text(".").to_string(); 60], delay_ms: 150, finish: true };
    let server = ScriptedServer::scripted(vec![step]).expect("server");
    let config = ClientConfig { base_url: server.url.clone(), api_key: None, model: "m".into() };
    let mut model = StreamingClient::new(config)
        .expect("client")
        .with_idle_timeout(Duration::from_secs(5))
        .with_request_limit(Some(Duration::from_millis(800)));
    let messages = [Message::User { content: "hi".into() }];
    let started = Instant::now();
    let result = model.complete(&Request { messages: &messages, tools: &[] }, &mut Seen::default());
    let took = started.elapsed();
    assert!(
        matches!(result, Err(Error::Network(ref m)) if m.contains("time limit (MINI_AGENT_REQUEST_TIMEOUT_SECS)")),
        "{result:?}"
    );
    // At least the limit; the error names it, not the stream's end (9 s) nor the idle timeout.
    assert!(took >= Duration::from_millis(800), "{took:?}");
    println!("figure: a never-ending stream was cut after {took:?} (limit 800 ms)");
}

#[test]
fn ctrl_c_abandons_a_slow_stream() {
    crate::ch02_model::in_own_process("ch11_streaming::tests::ctrl_c_abandons_a_slow_stream", || {
        let step = Step::Stream { chunks: vec![text("late").to_string()], delay_ms: 5000, finish: true };
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            crate::ch02_loop::set_interrupted(true);
        });
        let started = Instant::now();
        let (result, _, _) = stream(vec![step], DEFAULT_IDLE_TIMEOUT);
        assert!(matches!(result, Err(Error::Interrupted)), "{result:?}");
        println!("figure: stream abandoned {:?} after it started, Ctrl+C at 200 ms", started.elapsed());
    });
}

#[test]
fn an_error_status_is_reported_like_chapter_2() {
    let (result, seen, _) = stream(vec![Step::error(401, "Invalid API Key")], DEFAULT_IDLE_TIMEOUT);
    assert_eq!(
        result.expect_err("401").to_string(),
        "model request failed: 401 Invalid API Key — check OPENAI_API_KEY"
    );
    assert!(seen.notices.is_empty());
}

#[test]
fn a_server_that_ignores_stream_true_still_works() {
    let (result, seen, _) = stream(vec![Step::text("whole")], DEFAULT_IDLE_TIMEOUT);
    assert_eq!(result.expect("ok").content.as_deref(), Some("whole"));
    assert_eq!(seen.deltas, ["whole"]);
}

#[test]
fn an_error_chunk_stops_the_stream() {
    let error = json!({"error": {"message": "overloaded"}});
    let (result, seen, _) = stream(vec![chunks(&[text("so"), error], true)], DEFAULT_IDLE_TIMEOUT);
    assert_eq!(
        result.expect_err("error").to_string(),
        "unusable model reply: the server reported an error in the stream: overloaded"
    );
    assert_eq!(seen.notices, [("partial".to_owned(), "so".to_owned())]);
}

#[test]
fn a_200_that_is_not_a_stream_is_quoted() {
    let page = "<html><body>Welcome to nginx</body></html>";
    let (result, _, _) =
        stream(vec![Step::Reply { status: 200, headers: vec![], body: page.into() }], DEFAULT_IDLE_TIMEOUT);
    let error = result.expect_err("not sse").to_string();
    assert!(
        error.starts_with("unusable model reply: the server's stream held no events: \"<html>"),
        "{error}"
    );
}

#[test]
fn calls_without_index_or_with_a_repeated_name_are_assembled() {
    let mut assembler = StreamAssembler::default();
    let whole = |id: &str, name: &str, arguments: &str| json!({"choices": [{"delta": {"tool_calls": [{"id": id, "function": {"name": name, "arguments": arguments}}]}}]});
    let more =
        json!({"choices": [{"delta": {"tool_calls": [{"function": {"name": "bash", "arguments": "}"}}]}}]});
    for chunk in [whole("a", "read_file", "{}"), whole("b", "bash", "{"), more, finish("tool_calls")] {
        assembler.apply(&chunk.to_string(), &mut Seen::default()).expect("valid chunk");
    }
    assert!(assembler.is_complete());
    assert_eq!(
        assembler.into_reply().expect("reply").tool_calls,
        vec![
            ToolCall { id: "a".into(), name: "read_file".into(), arguments: "{}".into() },
            ToolCall { id: "b".into(), name: "bash".into(), arguments: "{}".into() },
        ]
    );
}

fn data(text: &str) -> SseEvent {
    SseEvent { event: String::new(), data: text.into() }
}

#[test]
fn an_endless_line_is_refused_instead_of_filling_memory() {
    let mut parser = SseParser::new();
    let chunk = vec![b'x'; 1024 * 1024];
    parser.feed(b"data: ");
    for _ in 0..(MAX_EVENT_BYTES >> 20) {
        assert!(!parser.oversized());
        parser.feed(&chunk);
    }
    parser.feed(b"more");
    assert!(parser.oversized());
}

#[test]
fn sse_handles_comments_multiline_data_and_line_endings() {
    let mut parser = SseParser::new();
    let input = ": keep-alive\n\ndata: one\n\ndata: two\ndata:three\r\n\r\nevent: error\rdata: {}\r\rid: 7\nretry: 5\n\n";
    assert_eq!(
        parser.feed(input.as_bytes()),
        vec![data("one"), data("two\nthree"), SseEvent { event: "error".into(), data: "{}".into() }]
    );
}

mod properties;

#[test]
fn a_key_cut_between_two_pieces_is_redacted_before_it_is_drawn() {
    use crate::ch03_tools::secrets::Redactor;
    use crate::ch04_terminal::tests::Captured;
    use crate::ch04_terminal::{Screen, TerminalObserver};
    let (out, err) = (Captured::default(), Captured::default());
    let mut terminal =
        TerminalObserver::new(Screen::new(Box::new(out.clone()), Box::new(err), false, false), None);
    let mut live = LiveText::new(&mut terminal);
    let redactor = Redactor::new(["sk-test-0123456789abcdef".to_string()]);
    let mut held = shown::HeldBack::new(&mut live, &redactor);
    held.event(Event::Request { messages: 1 }).unwrap();
    for piece in ["the key is sk-te", "st-0123", "456789abcdef, ", "no more"] {
        held.event(Event::Notice(&StreamedText(piece.into()))).unwrap();
        assert!(!out.text().contains("sk-te"), "{:?}", out.text());
    }
    held.flush().unwrap();
    // The complete reply is not drawn again; a newline ends the streamed text.
    let reply = Reply { content: Some("the key is [redacted], no more".into()), ..Reply::default() };
    live.event(Event::Reply(&reply)).unwrap();
    assert_eq!(out.text(), "the key is [redacted], no more\n");
}

/// Issue 22: with `--stream` and stdout piped, a reply cut at the size cap was printed twice:
/// once as it streamed, once more whole in the `partial:` notice. What was shown is not shown
/// again; the notice says it was cut.
#[test]
fn a_cut_stream_is_shown_once_and_said_to_be_cut() {
    use crate::ch04_terminal::tests::Captured;
    use crate::ch04_terminal::{Look, Screen, TerminalObserver};
    for look in [Look::Raw, Look::Plain] {
        let (out, err) = (Captured::default(), Captured::default());
        let mut screen = Screen::new(Box::new(out.clone()), Box::new(err.clone()), false, false);
        screen.look = look;
        let mut terminal = TerminalObserver::new(screen, None);
        let mut observer = LiveText::new(&mut terminal);
        observer.event(Event::Request { messages: 1 }).unwrap();
        observer.event(Event::Notice(&StreamedText("first line\nsecond, cut".into()))).unwrap();
        observer.event(Event::Notice(&PartialText("first line\nsecond, cut".into()))).unwrap();
        assert_eq!(out.text(), "first line\nsecond, cut\n", "{look:?}");
        assert_eq!(
            err.text(),
            "partial: the reply above was cut off after 22 characters; it is not an answer\n",
            "{look:?}"
        );
    }
}
