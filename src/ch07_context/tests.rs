//! Tests of chapter 7's compaction and counting, driving [`Compacting`] with a scripted model.

use super::shrink::*;
use super::*;
use super::{compacting::*, record::*, stats::*};
use crate::ch02_loop::{
    Error, Event, Limits, Message, Model, Observer, Outcome, Reply, Request, ToolCall, Usage, run_turn,
};
use serde_json::json;

/// A scripted inner model: answers summary requests with `summary`, anything else with
/// "ok" and `usage`; records what it was sent.
#[derive(Default)]
struct Inner {
    summary: String,
    usage: Option<Usage>,
    fail_summary: bool,
    sent: Vec<Vec<Message>>,
    summary_requests: Vec<Vec<Message>>,
}

impl Model for Inner {
    fn complete(&mut self, request: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
        let is_summary = matches!(request.messages.first(), Some(Message::System { content }) if content == SUMMARY_INSTRUCTIONS);
        if is_summary {
            assert!(request.tools.is_empty(), "a summary request offers no tools");
            self.summary_requests.push(request.messages.to_vec());
            if self.fail_summary {
                return Err(Error::Network("connection reset".into()));
            }
            return Ok(Reply { content: Some(self.summary.clone()), ..Reply::default() });
        }
        self.sent.push(request.messages.to_vec());
        Ok(Reply { content: Some("ok".into()), usage: self.usage, ..Reply::default() })
    }
}

fn inner() -> Inner {
    Inner { summary: "The user built a parser; tests pass.".into(), ..Inner::default() }
}

/// Collects the notices (`kind`, `text`) and the compactions announced to the observer.
#[derive(Default)]
struct Notices {
    notices: Vec<(String, String)>,
    compactions: Vec<CompactionRecord>,
}

impl Observer for Notices {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        match event {
            Event::Warning(text) => self.notices.push(("warning".to_string(), text.to_string())),
            Event::Notice(notice) => {
                if let Some(Compacted { record, .. }) = notice.as_any().downcast_ref() {
                    self.compactions.push(record.clone());
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// A session: a system prompt, then `turns` user turns of two steps each: one with two
/// tool calls answered by long results, one final answer.
fn session(turns: usize) -> Vec<Message> {
    let mut history = vec![Message::System { content: "You are a coding agent.".into() }];
    for turn in 0..turns {
        history.push(Message::User { content: format!("task {turn}: fix the parser") });
        let calls: Vec<ToolCall> = (0..2)
            .map(|n| ToolCall {
                id: format!("call_{turn}_{n}"),
                name: "read_file".into(),
                arguments: format!("{{\"path\":\"src/file{n}.rs\"}}"),
            })
            .collect();
        history.push(Message::Assistant { content: None, tool_calls: calls.clone() });
        for call in calls {
            let content = format!("{}: {}", call.id, "fn parse() {}\n".repeat(20));
            history.push(Message::Tool { tool_call_id: call.id, content });
        }
        history
            .push(Message::Assistant { content: Some(format!("done with task {turn}")), tool_calls: vec![] });
    }
    history
}

fn send<M: Model>(
    model: &mut Compacting<M>,
    history: &[Message],
    observer: &mut dyn Observer,
) -> Result<Reply, Error> {
    model.complete(&Request { messages: history, tools: &[json!({"name": "read_file"})] }, observer)
}

/// Every call in `view` is answered right after it, and every result answers a call.
fn assert_paired(view: &[Message]) {
    let mut open: Vec<&str> = Vec::new();
    for message in view {
        match message {
            Message::Assistant { tool_calls, .. } => {
                assert!(open.is_empty(), "calls {open:?} unanswered before the next step");
                open.extend(tool_calls.iter().map(|c| c.id.as_str()));
            }
            Message::Tool { tool_call_id, .. } => {
                assert!(open.contains(&tool_call_id.as_str()), "result {tool_call_id} without its call");
                open.retain(|id| id != tool_call_id);
            }
            Message::User { .. } | Message::System { .. } => {
                assert!(open.is_empty(), "{open:?} unanswered")
            }
        }
    }
    assert!(open.is_empty(), "calls {open:?} never answered");
}

#[test]
fn estimates_count_cjk_characters_one_token_each() {
    assert_eq!(estimate_text_tokens("hello world!"), 4);
    // Digits and line breaks are about a token each: bytes / 4 said 1,092 bytes of numbers
    // were 273 tokens where a server counted about 1,150.
    let numbers: String = (1..=300).map(|n| format!("{n}\n")).collect();
    assert!(
        estimate_text_tokens(&numbers) >= numbers.len() as u64 - 10,
        "{}",
        estimate_text_tokens(&numbers)
    );
    assert_eq!(estimate_text_tokens("你好，世界"), 5);
    assert_eq!(estimate_text_tokens("abcd你好"), 3);
    assert_eq!(estimate_text_tokens("héllo"), 2);
    assert_eq!(estimate_text_tokens(""), 0);
    // Chinese text is not undercounted the way bytes / 4 would (15 bytes → 4).
    assert!(estimate_text_tokens("你好，世界") > "你好，世界".len() as u64 / 4);
}

#[test]
fn a_prompt_under_the_share_is_sent_whole() {
    let history = session(3);
    let estimate = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
    let mut model = Compacting::new(inner(), estimate * 100 / AUTO_COMPACT_PERCENT + 10);
    send(&mut model, &history, &mut Notices::default()).expect("a reply");
    assert_eq!(model.inner.sent, [history]);
    assert!(model.inner.summary_requests.is_empty());
}

#[test]
fn past_the_share_older_turns_become_a_summary() {
    let history = session(6);
    let estimate = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
    let mut model = Compacting::new(inner(), estimate * 100 / AUTO_COMPACT_PERCENT - 10);
    let mut notices = Notices::default();
    send(&mut model, &history, &mut notices).expect("a reply");

    assert_eq!(model.inner.summary_requests.len(), 1);
    let [record] = &notices.compactions[..] else {
        panic!("one compaction expected: {:?}", notices.compactions)
    };
    assert!(notices.notices.is_empty(), "{:?}", notices.notices);
    assert_eq!(record.summary, "The user built a parser; tests pass.");
    assert!(record.replaced > 0 && record.tokens_after < record.tokens_before);
    let sent = &model.inner.sent[0];
    assert_eq!(sent, &apply_compaction(&history, &record.summary, record.replaced, record.elided));
    assert_eq!(sent[0], history[0]);
    assert!(matches!(&sent[1], Message::User { content } if content.contains(&record.summary)));
    assert_eq!(sent[2..], history[1 + record.replaced..]);
    assert!(matches!(sent[2], Message::User { .. }), "recent part starts at a user turn");
    assert_paired(sent);
}

#[test]
fn compaction_never_splits_a_call_from_its_result() {
    // Every window size cuts somewhere else; each sent view must stay paired.
    let mut history = session(5);
    // A long last turn: many steps, so cuts inside a turn are exercised too.
    for step in 0..6 {
        let id = format!("long_{step}");
        let call = ToolCall { id: id.clone(), name: "bash".into(), arguments: "{}".into() };
        history.push(Message::Assistant { content: None, tool_calls: vec![call] });
        history.push(Message::Tool { tool_call_id: id, content: "output line\n".repeat(40) });
    }
    let full = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
    let mut compacted = 0;
    for window in (full / 4..full * 2).step_by(37) {
        let mut model = Compacting::new(inner(), window);
        match send(&mut model, &history, &mut Notices::default()) {
            Ok(_) => assert_paired(&model.inner.sent[0]),
            Err(Error::Config(text)) => assert!(text.contains("start a new session"), "{text}"),
            Err(other) => panic!("unexpected error {other}"),
        }
        compacted += model.inner.summary_requests.len();
    }
    assert!(compacted > 10, "compaction ran for small windows");
}

#[test]
fn a_recorded_compaction_restores_the_same_view() {
    let history = session(6);
    let estimate = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
    let window = estimate * 100 / AUTO_COMPACT_PERCENT - 10;
    let mut live = Compacting::new(inner(), window);
    let mut notices = Notices::default();
    send(&mut live, &history, &mut notices).expect("a reply");

    // A resumed session: the journal replays the record into a fresh state.
    let record = notices.compactions[0].clone();
    let mut resumed = Compacting::new(inner(), window);
    resumed.state().lock().expect("unpoisoned").restore(record);
    let mut next = history.clone();
    next.push(Message::User { content: "and now the lexer".into() });
    send(&mut live, &next, &mut Notices::default()).expect("a reply");
    send(&mut resumed, &next, &mut Notices::default()).expect("a reply");
    assert_eq!(live.inner.sent[1], resumed.inner.sent[0]);
    assert!(resumed.inner.summary_requests.is_empty(), "no second summary needed");
}

#[test]
fn the_servers_usage_counts_more_than_the_estimate() {
    let history = session(1);
    let window = 10_000;
    assert!(estimate_request_tokens(&history, &[]) < window / 10);
    let mut model = Compacting::new(
        Inner { usage: Some(Usage { prompt_tokens: 9_000, completion_tokens: 5 }), ..inner() },
        window,
    );
    send(&mut model, &history, &mut Notices::default()).expect("a reply");
    assert!(model.inner.summary_requests.is_empty());
    let mut next = history.clone();
    next.push(Message::Assistant { content: Some("ok".into()), tool_calls: vec![] });
    next.push(Message::User { content: "next task".into() });
    assert!(model.estimate_prompt(&next, &[]) > 9_000);
    send(&mut model, &next, &mut Notices::default()).expect("a reply");
    assert_eq!(model.inner.summary_requests.len(), 1, "the server said the prompt is large");
}

#[test]
fn a_history_far_past_the_window_is_summarised_in_rounds() {
    let history = session(20);
    let window = 2_000;
    assert!(estimate_request_tokens(&history, &[]) > 2 * window);
    let mut model = Compacting::new(inner(), window);
    let mut notices = Notices::default();
    send(&mut model, &history, &mut notices).expect("a reply");
    let rounds = model.inner.summary_requests.len();
    assert!(rounds >= 2, "{rounds} rounds");
    assert_eq!(notices.compactions.len(), rounds);
    for request in &model.inner.summary_requests {
        assert!(estimate_messages_tokens(request) <= window / 2, "each summary request fits");
    }
    // Later rounds build on the earlier summary; the last record describes what was sent.
    assert!(matches!(&model.inner.summary_requests[1][1], Message::User { content }
        if content.contains("Summary of what came before it:\nThe user built a parser")));
    let last = notices.compactions[rounds - 1].clone();
    assert_eq!(model.inner.sent[0], apply_compaction(&history, &last.summary, last.replaced, last.elided));
    assert!(estimate_request_tokens(&model.inner.sent[0], &[]) <= window);
    assert_paired(&model.inner.sent[0]);
}

#[test]
fn a_summary_never_leaks_into_another_session() {
    let history = session(6);
    let estimate = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
    let mut model = Compacting::new(inner(), estimate * 100 / AUTO_COMPACT_PERCENT - 10);
    send(&mut model, &history, &mut Notices::default()).expect("a reply");
    // `/new` without clearing the state: a different first message, same length.
    let mut other = history.clone();
    other[1] = Message::User { content: "a different session".into() };
    let state = model.state();
    let state = state.lock().expect("unpoisoned");
    assert_eq!(state.view(&other)[..], other[..]);
    assert_ne!(state.view(&history)[..], history[..], "the session itself stays compacted");
}

#[test]
fn the_servers_count_calibrates_later_estimates() {
    let tools = [json!({"name": "read_file"})];
    let history = session(1);
    let raw = estimate_request_tokens(&history, &tools);
    let usage = Some(Usage { prompt_tokens: raw * 2, completion_tokens: 1 });
    let mut model = Compacting::new(Inner { usage, ..inner() }, 1_000_000);
    send(&mut model, &history, &mut Notices::default()).expect("sent");
    // Another history (no measured prefix): the plain estimate, scaled by what was learnt.
    let other = session(3);
    let plain = estimate_request_tokens(&other, &tools);
    assert_eq!(model.estimate_prompt(&other, &tools), scaled(plain, 2.0));
}

#[test]
fn a_request_that_cannot_fit_even_compacted_is_refused() {
    let mut history = session(2);
    history.push(Message::User { content: "x".repeat(40_000) });
    let mut model = Compacting::new(inner(), 5_000);
    let error = send(&mut model, &history, &mut Notices::default()).expect_err("too large");
    let Error::Config(text) = error else { panic!("a Config error expected, got {error:?}") };
    assert!(text.contains("even after compaction") && text.contains("start a new session"), "{text}");
    assert!(!text.contains("/new"), "a -p run has no /new: {text}");
    assert!(model.inner.sent.is_empty(), "nothing was sent");
}

#[test]
fn a_failed_summary_still_sends_a_history_that_fits() {
    let history = session(6);
    let estimate = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
    let mut model =
        Compacting::new(Inner { fail_summary: true, ..inner() }, estimate * 100 / AUTO_COMPACT_PERCENT - 10);
    let mut notices = Notices::default();
    send(&mut model, &history, &mut notices).expect("a reply");
    assert_eq!(model.inner.sent, [history]);
    assert_eq!(notices.notices[0].0, "warning");
    assert!(notices.notices[0].1.contains("connection reset"));
}

#[test]
fn manual_compaction_keeps_the_last_user_turn() {
    let history = session(3);
    let mut model = Compacting::new(inner(), 128_000);
    let mut notices = Notices::default();
    let record = model.compact(&history, &mut notices).expect("compacted").expect("something to compact");
    let last_user = history.iter().rposition(|m| matches!(m, Message::User { .. })).expect("a user turn");
    assert_eq!(record.replaced, last_user - 1);
    let summarised = &model.inner.summary_requests[0][1];
    assert!(
        matches!(summarised, Message::User { content } if content.contains("task 1") && !content.contains("task 2"))
    );
    // A second /compact summarises the last turn up to its final answer; then nothing is left.
    let again = model.compact(&history, &mut notices).expect("compacted").expect("the last turn");
    assert_eq!(again.replaced, history.len() - 2);
    assert!(matches!(&model.inner.summary_requests[1][1], Message::User { content }
        if content.contains("The user built a parser") && content.contains("task 2")));
    assert_eq!(model.compact(&history, &mut notices).expect("no error"), None);
    assert_eq!(notices.compactions.len(), 2);
    // One exchange is too little to compact.
    assert_eq!(Compacting::new(inner(), 128_000).compact(&session(1)[..2], &mut notices).expect("ok"), None);
}

/// Issue 22: `/compact` on a short session made the context bigger (384 → 456 tokens). A
/// summary is kept only when it makes the view smaller; a conversation whose messages are
/// smaller than an empty summary's frame is not even sent to the model.
#[test]
fn compaction_never_replaces_the_history_by_something_larger() {
    let short = |answer: &str| {
        vec![
            Message::System { content: "You are a coding agent.".into() },
            Message::User { content: "hi".into() },
            Message::Assistant { content: Some(answer.into()), tool_calls: vec![] },
            Message::User { content: "thanks".into() },
            Message::Assistant { content: Some("ok".into()), tool_calls: vec![] },
        ]
    };
    let mut notices = Notices::default();
    let mut model = Compacting::new(inner(), 128_000);
    assert_eq!(model.compact(&short("hello"), &mut notices).expect("no error"), None);
    assert!(model.inner.summary_requests.is_empty(), "two words are not worth a request");
    // Worth asking, but the summary comes back longer than what it would replace.
    let long_summary = "The user greeted the assistant. ".repeat(40);
    let mut model = Compacting::new(Inner { summary: long_summary, ..inner() }, 128_000);
    let history = short(&"hello there ".repeat(20));
    assert_eq!(model.compact(&history, &mut notices).expect("no error"), None);
    assert_eq!(model.inner.summary_requests.len(), 1);
    assert!(notices.compactions.is_empty(), "nothing was replaced");
    send(&mut model, &history, &mut notices).expect("sent");
    assert_eq!(model.inner.sent[0], history, "the history is sent whole");
}

#[test]
fn stats_count_requests_tokens_and_tool_calls() {
    use crate::ch02_loop::fakes::{RecordingTools, ScriptedModel};
    let call = |id: &str| ToolCall { id: id.into(), name: "bash".into(), arguments: "{}".into() };
    let mut model = ScriptedModel::new(vec![
        Reply {
            tool_calls: vec![call("a"), call("b")],
            usage: Some(Usage { prompt_tokens: 100, completion_tokens: 10 }),
            ..Reply::default()
        },
        Reply { content: Some("all done".into()), ..Reply::default() },
    ]);
    let mut stats = Stats::new();
    let mut history = vec![Message::User { content: "go".into() }];
    stats.event(Event::Message(&history[0])).expect("counted");
    let outcome = run_turn(
        &mut model,
        &mut RecordingTools::default(),
        &mut history,
        &mut stats,
        &Limits { max_turns: 5 },
    );
    assert!(matches!(outcome, Outcome::Completed(_)));
    assert_eq!((stats.requests, stats.tool_calls, stats.estimated_replies), (2, 2, 1));
    // The second reply had no usage: its prompt is the estimate of the four messages before it.
    let prompt_estimate = estimate_messages_tokens(&history[..4]);
    let reply_estimate = estimate_message_tokens(&history[4]);
    assert_eq!(stats.prompt_tokens, 100 + prompt_estimate);
    assert_eq!(stats.completion_tokens, 10 + reply_estimate);

    let record = CompactionRecord {
        summary: "s".into(),
        replaced: 3,
        elided: 0,
        tokens_before: 50,
        tokens_after: 20,
        usage: Some(Usage { prompt_tokens: 40, completion_tokens: 7 }),
    };
    stats.event(Event::Notice(&Compacted { record, summarised: true })).expect("counted");
    assert_eq!((stats.requests, stats.compactions, stats.completion_tokens), (3, 1, 17 + reply_estimate));
    let shown = stats.to_string();
    assert!(shown.starts_with("requests     3 (1 was a compaction)\n"), "{shown}");
    assert!(shown.contains("tool calls   2\n") && shown.contains("(1 reply estimated)"), "{shown}");
}

#[test]
fn the_window_comes_from_the_environment_value_or_the_default() {
    assert_eq!(parse_context_tokens(None).expect("default"), 128_000);
    assert_eq!(parse_context_tokens(Some(" 32_000 ")).expect("a number"), 32_000);
    for bad in ["", "lots", "12"] {
        let Err(Error::Config(text)) = parse_context_tokens(Some(bad)) else { panic!("{bad:?} accepted") };
        assert!(text.contains("MINI_AGENT_CONTEXT_TOKENS"), "{text}");
    }
}

/// A llama-server with a context of `n_ctx` tokens and a tokenizer that counts a fifth more
/// than the agent's estimate: it refuses a larger request with llama.cpp's own 400, and
/// records its count of every request (and whether it was a summary request).
struct SmallServer {
    n_ctx: u64,
    counts: Vec<(u64, bool)>,
}

impl Model for SmallServer {
    fn complete(&mut self, request: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
        let tokens = estimate_request_tokens(request.messages, request.tools) * 6 / 5;
        let summary = matches!(request.messages.first(), Some(Message::System { content }) if content == SUMMARY_INSTRUCTIONS);
        self.counts.push((tokens, summary));
        if tokens > self.n_ctx {
            return Err(Error::Http {
                status: 400,
                message: format!(
                    "request ({tokens} tokens) exceeds the available context size ({} tokens), try increasing it",
                    self.n_ctx
                ),
                retry_after_ms: None,
                code: Some("400".into()),
            });
        }
        let content = if summary { "summary" } else { "ok" };
        Ok(Reply { content: Some(content.into()), ..Reply::default() })
    }
}

#[test]
fn the_window_a_server_states_is_the_one_the_retry_fits_and_it_is_kept() {
    // The issue: a 2,048-token llama-server, MINI_AGENT_CONTEXT_TOKENS left at 128,000; the
    // first request with a long tool result was refused, and the retry sent ~11,000 tokens
    // again, after asking for a summary of the bare prompt.
    let call =
        ToolCall { id: "c1".into(), name: "bash".into(), arguments: r#"{"command":"seq 3000"}"#.into() };
    let numbers: String = (1..=3000).map(|n| format!("{n}\n")).collect();
    let mut history = vec![
        Message::System { content: "You are a coding agent.".into() },
        Message::User { content: "count to 3000".into() },
        Message::Assistant { content: None, tool_calls: vec![call] },
        Message::Tool { tool_call_id: "c1".into(), content: numbers },
    ];
    let mut model = Compacting::new(SmallServer { n_ctx: 2048, counts: Vec::new() }, DEFAULT_CONTEXT_TOKENS);
    let mut notices = Notices::default();
    send(&mut model, &history, &mut notices).expect("the retry fits");
    let counts = model.inner.counts.clone();
    println!("figure: a 2048-token server's counts (tokens, summary?): {counts:?}");
    assert!(counts[0].0 > 2048 && counts.len() == 2, "refused once, then the retry: {counts:?}");
    assert!(counts.iter().all(|&(_, summary)| !summary), "no summary of the bare prompt: {counts:?}");
    assert!(counts[1].0 <= 2048, "the retry fits the stated window: {counts:?}");
    assert!(notices.notices[0].1.contains("the server's window is 2048 tokens"), "{:?}", notices.notices);
    // The next request of the session, larger again, is fitted before it is sent.
    history.push(Message::Assistant { content: Some("counted".into()), tool_calls: vec![] });
    history.push(Message::User { content: "and again".into() });
    send(&mut model, &history, &mut notices).expect("fitted first");
    let counts = &model.inner.counts;
    assert!(counts.len() == 3 && counts[2].0 <= 2048, "the window was kept: {counts:?}");
}

#[test]
fn sessions_that_run_beside_each_other_keep_their_own_streak() {
    use crate::ch02_loop::Tools;
    use crate::ch02_loop::command_line::Settings;
    use crate::ch02_loop::fakes::{Quiet, RecordingTools, ScriptedModel};
    use crate::ch05_sessions::parts::{Answerer, RunPart, SessionInput, Stack, Toolbox};
    let run = super::turns::ContextTurns::default();
    let (root, settings) = (std::env::temp_dir(), Settings::default());
    let input = SessionInput { root: &root, settings: &settings, answerer: &Answerer::Nobody };
    // A session of the service: its tools and its model as chapter 7's part lends them.
    let session = || {
        let part = run.for_another_session();
        let toolbox = Toolbox {
            tools: Stack::Boxed(Box::new(RecordingTools::default())),
            system_prompt: String::new(),
            reports: Vec::new(),
            warnings: Vec::new(),
        };
        let tools = part.wrap(toolbox, &input).expect("wrapped").tools.boxed();
        let replies = (0..4).map(|_| Reply { content: Some("again".into()), ..Reply::default() }).collect();
        (tools, part.turn_model(Box::new(ScriptedModel::new(replies))))
    };
    let (mut first, mut second) = (session(), session());
    let call = ToolCall { id: "1".into(), name: "bash".into(), arguments: r#"{"command": "ls"}"#.into() };
    let step = |(tools, model): &mut (Box<dyn Tools>, Box<dyn Model>)| {
        let request = Request { messages: &[], tools: &[] };
        model.complete(&request, &mut Quiet::default()).expect("a reply");
        tools.run(&call).content
    };
    // A reply with the same call, twice in each session, interleaved: in neither is it a
    // third repeat; a third in one session is.
    for _ in 0..2 {
        for session in [&mut first, &mut second] {
            let result = step(session);
            assert!(!result.contains("in a row"), "{result}");
        }
    }
    assert!(step(&mut first).contains("3 times in a row"));
}
