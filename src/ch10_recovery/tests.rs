//! Tests of chapter 10: the status of a session that stopped, and resuming it.

use super::*;
use crate::ch02_loop::{Limits, Outcome, Reply, run_turn};
use crate::ch05_sessions::tests::call;
use crate::ch05_sessions::{FORMAT_VERSION, MemoryLog, Recorder, SessionStore};
use crate::ch09_journal::write_synthetic_journal;
use crate::temp_dir::TempDir;
use std::time::Instant;

fn session(bodies: Vec<Body>) -> Vec<Record> {
    let mut log = MemoryLog::default();
    let header = Body::Session {
        version: FORMAT_VERSION,
        id: "20261129-091500-7f3a".into(),
        root: "/work/project".into(),
        model: "m".into(),
        api: "openai".into(),
        endpoint: Some("http://127.0.0.1:8080/v1".into()),
        created: "2026-11-29T09:15:00.000Z".into(),
    };
    for body in std::iter::once(header).chain(bodies) {
        log.append(body).unwrap();
    }
    log.0
}
fn user(text: &str) -> Body {
    Body::User { content: text.into() }
}
fn asks(calls: Vec<ToolCall>) -> Body {
    Body::Assistant { content: None, tool_calls: calls, usage: None }
}
fn started(c: &ToolCall) -> Body {
    Body::ToolStarted { id: c.id.clone(), name: c.name.clone(), arguments: c.arguments.clone() }
}
fn finished(c: &ToolCall) -> Body {
    Body::ToolFinished { id: c.id.clone(), status: ToolStatus::Ok, content: "ok".into() }
}

#[test]
fn the_state_follows_the_last_step() {
    let test = call("a", "bash", r#"{"command":"cargo test"}"#);
    let answer = Body::Assistant { content: Some("done".into()), tool_calls: vec![], usage: None };
    let cases = [
        (vec![], SessionState::New),
        (vec![user("go")], SessionState::WaitingForModel),
        (vec![user("go"), answer.clone()], SessionState::Completed),
        (vec![user("go"), Body::Interrupted {}], SessionState::Interrupted),
        (vec![user("go"), asks(vec![test.clone()])], SessionState::NotRun(vec![test.clone()])),
        (
            vec![user("go"), asks(vec![test.clone()]), started(&test)],
            SessionState::UnknownOutcomes(vec![test.clone()]),
        ),
        (
            vec![user("go"), asks(vec![test.clone()]), started(&test), finished(&test)],
            SessionState::WaitingForModel,
        ),
        (
            vec![user("go"), Body::Error { message: "model request failed: 500".into() }],
            SessionState::Failed("model request failed: 500".into()),
        ),
        (
            vec![user("go"), answer, Body::Usage { prompt_tokens: 1, completion_tokens: 1 }],
            SessionState::Completed,
        ),
    ];
    for (bodies, expected) in cases {
        assert_eq!(status(&session(bodies.clone())).unwrap().state, expected, "{bodies:?}");
    }
}

#[test]
fn status_reads_like_a_report() {
    let test = call("a", "bash", r#"{"command":"cargo test"}"#);
    let records =
        session(vec![user("first"), user("fix the tests\nplease"), asks(vec![test.clone()]), started(&test)]);
    let shown = status(&records).unwrap().to_string();
    let updated = &records.last().unwrap().ts;
    assert_eq!(
        shown,
        format!(
            "session  20261129-091500-7f3a\nroot     /work/project\nmodel    m\n\
             endpoint http://127.0.0.1:8080/v1 (openai)\ncreated  2026-11-29T09:15:00.000Z\n\
             updated  {updated}\nturns    2 (5 records)\nlast     \"fix the tests\"\n\
             state    unknown outcome: 1 tool call started and never finished:\n\
             \x20          bash cargo test\n\
             \x20        inspect the workspace, then resume with --acknowledge-unknown\n"
        )
    );
}

#[test]
fn unknown_outcomes_block_until_acknowledged() {
    let test = call("a", "bash", r#"{"command":"cargo test"}"#);
    let write = call("b", "write_file", r#"{"path":"notes.md","content":"x"}"#);
    let records = session(vec![user("go"), asks(vec![test.clone(), write.clone()]), started(&test)]);
    let refused = prepare_resume(&records, false).unwrap_err().to_string();
    assert_eq!(
        refused,
        "cannot resume 20261129-091500-7f3a: 1 tool call has an unknown outcome (bash cargo test); \
         inspect the workspace, then rerun with --acknowledge-unknown"
    );
    let plan = prepare_resume(&records, true).unwrap();
    assert_eq!(
        plan.append,
        vec![
            Body::ToolFinished {
                id: "a".into(),
                status: ToolStatus::Unknown,
                content: UNKNOWN_OUTCOME_RESULT.into()
            },
            Body::ToolFinished { id: "b".into(), status: ToolStatus::NotRun, content: NOT_RUN_RESULT.into() },
        ]
    );
    assert_eq!(plan.root, PathBuf::from("/work/project"));
    assert_eq!(
        plan.history[2..],
        [
            Message::Tool { tool_call_id: "a".into(), content: UNKNOWN_OUTCOME_RESULT.into() },
            Message::Tool { tool_call_id: "b".into(), content: NOT_RUN_RESULT.into() },
        ]
    );
}

#[test]
fn a_read_only_tool_that_started_was_only_interrupted() {
    for (tool, arguments) in
        [("read_file", r#"{"path":"a.rs"}"#), ("list_files", "{}"), ("search", r#"{"pattern":"x"}"#)]
    {
        let reading = call("a", tool, arguments);
        let later = call("b", "bash", r#"{"command":"make"}"#);
        let records =
            session(vec![user("go"), asks(vec![reading.clone(), later.clone()]), started(&reading)]);
        assert_eq!(state_of(&records), SessionState::ReadsInterrupted(vec![reading.clone()]), "{tool}");
        let plan = prepare_resume(&records, false).expect("no acknowledgement needed");
        assert_eq!(
            plan.append,
            vec![
                Body::ToolFinished {
                    id: "a".into(),
                    status: ToolStatus::Interrupted,
                    content: READ_ONLY_INTERRUPTED_RESULT.into()
                },
                Body::ToolFinished {
                    id: "b".into(),
                    status: ToolStatus::NotRun,
                    content: NOT_RUN_RESULT.into()
                },
            ],
            "{tool}"
        );
    }
}

#[test]
fn calls_that_never_started_are_answered_not_run_without_acknowledgement() {
    let first = call("a", "read_file", r#"{"path":"a.rs"}"#);
    let second = call("b", "bash", r#"{"command":"rm -rf build"}"#);
    let records = session(vec![
        user("go"),
        asks(vec![first.clone(), second.clone()]),
        started(&first),
        finished(&first),
    ]);
    let plan = prepare_resume(&records, false).unwrap();
    assert_eq!(
        plan.append,
        vec![Body::ToolFinished {
            id: "b".into(),
            status: ToolStatus::NotRun,
            content: NOT_RUN_RESULT.into()
        }]
    );
    assert_eq!(plan.history.len(), 4);
}

/// Chapter 19 needs the statuses the history drops: the plan lists every call that did not
/// end `ok`, those the journal recorded and those it answers now, and no other.
#[test]
fn the_plan_lists_the_calls_that_did_not_end_ok() {
    let (fine, broke, open) =
        (call("a", "read_file", "{}"), call("b", "read_file", "{}"), call("c", "bash", "{}"));
    let failed =
        Body::ToolFinished { id: "b".into(), status: ToolStatus::Error, content: "no such file".into() };
    let records = session(vec![
        user("go"),
        asks(vec![fine.clone(), broke.clone(), open]),
        started(&fine),
        finished(&fine),
        started(&broke),
        failed,
    ]);
    let plan = prepare_resume(&records, false).unwrap();
    assert_eq!(plan.failed, ["b", "c"], "the failed call, then the one answered not run");
}

use crate::ch02_loop::fakes::{RecordingTools, ScriptedModel};

#[test]
fn a_crashed_session_resumes_from_disk_without_running_anything_again() {
    let temp = TempDir::new("recovery-resume");
    let store = SessionStore::new(temp.path());
    let test = call("a", "bash", r#"{"command":"cargo test"}"#);
    let mut journal = Journal::create(&store, "m").unwrap();
    for body in [user("go"), asks(vec![test.clone()]), started(&test)] {
        journal.append(body).unwrap();
    }
    let path = journal.path().to_path_buf();
    assert_eq!(status_of(journal.path()).unwrap().in_use_by, Some(std::process::id()));
    drop(journal); // the crash
    let crashed = status_of(&path).unwrap();
    assert_eq!(crashed.in_use_by, None);
    assert!(matches!(crashed.state, SessionState::UnknownOutcomes(_)));
    assert!(resume(&path, false).is_err());
    let (journal, plan) = resume(&path, true).unwrap();
    assert_eq!(plan.root, temp.path());
    let mut history = plan.history.clone();
    let mut recorder = Recorder::new(journal);
    let mut model = ScriptedModel::new(vec![Reply { content: Some("checked".into()), ..Reply::default() }]);
    let mut tools = RecordingTools::default();
    let outcome = run_turn(&mut model, &mut tools, &mut history, &mut recorder, &Limits { max_turns: 3 });
    assert!(matches!(outcome, Outcome::Completed(_)));
    assert!(tools.calls.is_empty(), "no tool runs again");
    assert_eq!(model.sent, [3]);
    drop(recorder);

    let after = status_of(&path).unwrap();
    assert_eq!(after.state, SessionState::Completed);
    let (_, again) = resume(&path, false).unwrap();
    assert!(again.append.is_empty());
    assert_eq!(again.history, history);
}

#[test]
fn an_empty_session_file_cannot_be_resumed() {
    let temp = TempDir::new("recovery-empty");
    let store = SessionStore::new(temp.path());
    let (_, path, file) = store.create_file().unwrap();
    drop(file);
    let message = resume(&path, true).err().unwrap().to_string();
    assert!(
        message.starts_with(&format!("{}: the session has no session record", path.display())),
        "{message}"
    );
}

#[test]
fn status_and_resume_figures() {
    let temp = TempDir::new("recovery-figures");
    // A session's journal lives in its root's .mini_agent/sessions/ (chapter 9's trust rule).
    let sessions = temp.path().join(".mini_agent/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let big = sessions.join("20261129-091500-aaaa.jsonl");
    write_synthetic_journal(&big, 10_000).unwrap();
    let started = Instant::now();
    let shown = status_of(&big).unwrap();
    let status_ms = started.elapsed().as_secs_f64() * 1e3;
    assert_eq!((shown.records, shown.state), (10_000, SessionState::Completed));

    let medium = sessions.join("20261129-091500-bbbb.jsonl");
    write_synthetic_journal(&medium, 1_250).unwrap();
    let started = Instant::now();
    let (_, resumed) = resume(&medium, false).unwrap();
    let resume_ms = started.elapsed().as_secs_f64() * 1e3;
    eprintln!(
        "recovery: status of 10,000 records {status_ms:.1} ms; resume of {} messages {resume_ms:.1} ms",
        resumed.history.len()
    );
    assert!(resumed.history.len() >= 1_000);
}
