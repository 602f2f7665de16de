//! Chapter 2's loop, tested against the fakes of the seams.

use super::*;

#[test]
fn a_call_is_described_by_what_it_does() {
    let call = |name: &str, arguments: &str| ToolCall {
        id: "a".into(),
        name: name.into(),
        arguments: arguments.into(),
    };
    assert_eq!(describe_call(&call("list_files", "{}")), "list_files .");
    assert_eq!(
        describe_call(&call("list_files", r#"{"path":"src","pattern":"*.rs"}"#)),
        "list_files src *.rs"
    );
    assert_eq!(describe_call(&call("bash", r#"{"command":"cargo test\nmore"}"#)), "bash cargo test…");
    assert_eq!(describe_call(&call("search", r#"{"pattern":"TODO","path":"src"}"#)), "search TODO in src");
    // Control characters are left to whoever prints it: chapter 4's `sanitize` is the one way.
    assert_eq!(describe_call(&call("read_file", r#"{"path":"a\u001b[2J"}"#)), "read_file a\u{1b}[2J");
    assert_eq!(describe_call(&call("odd", "not json")), "odd");
}

use super::fakes::{Quiet, RecordingTools, ScriptedModel};

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments: "{}".into() }
}
fn calls(list: Vec<ToolCall>) -> Reply {
    Reply { tool_calls: list, ..Reply::default() }
}
fn text(t: &str) -> Reply {
    Reply { content: Some(t.into()), ..Reply::default() }
}

#[test]
fn every_tool_call_is_answered_once_in_order() {
    let mut model = ScriptedModel::new(vec![calls(vec![call("a", "one"), call("b", "two")]), text("done")]);
    let mut tools = RecordingTools::default();
    let mut history = vec![Message::User { content: "go".into() }];
    let outcome =
        run_turn(&mut model, &mut tools, &mut history, &mut Quiet::default(), &Limits { max_turns: 5 });
    assert!(matches!(outcome, Outcome::Completed(ref t) if t == "done"));
    assert_eq!(tools.names(), ["one", "two"]);
    let answered: Vec<&str> = history
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answered, ["a", "b"]);
    assert_eq!(model.sent, [1, 4]);
}

#[test]
fn the_turn_limit_stops_a_model_that_never_stops() {
    let replies = (0..3).map(|i| calls(vec![call(&i.to_string(), "x")])).collect();
    let mut model = ScriptedModel::new(replies);
    let mut history = vec![Message::User { content: "go".into() }];
    let outcome = run_turn(
        &mut model,
        &mut RecordingTools::default(),
        &mut history,
        &mut Quiet::default(),
        &Limits { max_turns: 2 },
    );
    assert!(matches!(outcome, Outcome::TurnLimit));
    assert_eq!(model.sent.len(), 2);
}

#[test]
fn queued_input_joins_the_next_request() {
    let mut model = ScriptedModel::new(vec![text("ok")]);
    let mut history = vec![Message::User { content: "first".into() }];
    let mut observer = Quiet(vec!["typed meanwhile".into()]);
    run_turn(
        &mut model,
        &mut RecordingTools::default(),
        &mut history,
        &mut observer,
        &Limits { max_turns: 1 },
    );
    assert_eq!(history[1], Message::User { content: "typed meanwhile".into() });
    assert_eq!(model.sent, [2]);
}

#[test]
fn a_model_error_fails_the_turn() {
    let mut model = ScriptedModel::new(vec![]);
    let mut history = vec![Message::User { content: "go".into() }];
    let outcome = run_turn(
        &mut model,
        &mut RecordingTools::default(),
        &mut history,
        &mut Quiet::default(),
        &Limits { max_turns: 3 },
    );
    assert!(matches!(outcome, Outcome::Failed(Error::Model(_))));
}

#[test]
fn an_interrupted_turn_leaves_a_mark_the_model_reads_next() {
    /// A model whose request the user interrupts.
    struct Interrupted;
    impl Model for Interrupted {
        fn complete(&mut self, _: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
            Err(Error::Interrupted)
        }
    }
    let mut history = vec![Message::User { content: "go".into() }];
    let outcome = run_turn(
        &mut Interrupted,
        &mut RecordingTools::default(),
        &mut history,
        &mut Quiet::default(),
        &Limits { max_turns: 5 },
    );
    assert!(matches!(outcome, Outcome::Interrupted), "{outcome:?}");
    // Without it, the next message would follow the first as a second user message in a row.
    assert_eq!(
        history,
        [
            Message::User { content: "go".into() },
            Message::Assistant { content: Some(INTERRUPTED_MARK.into()), tool_calls: vec![] },
        ]
    );
}
