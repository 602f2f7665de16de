//! Tests of chapter 5: the record format, replay, the recorder, ids and the store.

use super::ids::civil_from_days;
use super::*;
use crate::ch02_loop::{Event, Message, Observer, ToolCall, ToolStatus, Usage};
use crate::ch02_loop::{Limits, Outcome, Reply, ToolOutput, run_turn};
use crate::temp_dir::TempDir;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use crate::ch02_loop::fakes::{RecordingTools, ScriptedModel};

pub(crate) fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
}

#[test]
fn a_recorded_turn_replays_to_the_same_history() {
    let mut recorder = Recorder::new(MemoryLog::default());
    let mut history = vec![
        Message::System { content: "be brief".into() },
        Message::User { content: "list and read".into() },
    ];
    for message in &history {
        recorder.message(message).unwrap();
    }
    let usage = Some(Usage { prompt_tokens: 10, completion_tokens: 3 });
    let mut model = ScriptedModel::new(vec![
        Reply {
            content: Some("looking".into()),
            tool_calls: vec![call("a", "list_files", "{}"), call("b", "read_file", r#"{"path":"x"}"#)],
            usage,
            finish_reason: None,
            cache: Default::default(),
        },
        Reply { content: Some("done".into()), ..Reply::default() },
    ]);
    let outcome = run_turn(
        &mut model,
        &mut RecordingTools::default(),
        &mut history,
        &mut recorder,
        &Limits { max_turns: 5 },
    );
    assert!(matches!(outcome, Outcome::Completed(_)));

    let records = recorder.into_log().0;
    let types: Vec<String> = records
        .iter()
        .map(|r| serde_json::to_value(r).unwrap()["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        types,
        [
            "system",
            "user",
            "assistant",
            "tool_started",
            "tool_finished",
            "tool_started",
            "tool_finished",
            "assistant"
        ]
    );
    assert!(matches!(&records[2].body, Body::Assistant { usage: Some(u), .. } if Some(*u) == usage));
    assert_eq!(replay(records.iter().map(|r| &r.body)), history);
}

#[test]
fn an_interrupted_turn_is_recorded_once_and_replays_valid() {
    let mut recorder = Recorder::new(MemoryLog::default());
    let (ran, skipped) = (call("a", "bash", r#"{"command":"sleep 60"}"#), call("b", "read_file", "{}"));
    let asked = Message::Assistant { content: None, tool_calls: vec![ran.clone(), skipped.clone()] };
    let killed = ToolOutput { content: "killed by Ctrl+C".into(), status: ToolStatus::Interrupted };
    let never = ToolOutput { content: "interrupted by user before this tool ran".into(), ..killed.clone() };
    recorder.message(&Message::User { content: "wait".into() }).unwrap();
    recorder.message(&asked).unwrap();
    // The events the loop sends when Ctrl+C arrives during the first call.
    recorder.event(Event::ToolStarted(&ran)).unwrap();
    recorder.event(Event::ToolFinished(&ran, &killed)).unwrap();
    recorder.message(&Message::Tool { tool_call_id: "a".into(), content: killed.content.clone() }).unwrap();
    recorder.event(Event::ToolFinished(&skipped, &never)).unwrap();
    recorder.message(&Message::Tool { tool_call_id: "b".into(), content: never.content.clone() }).unwrap();
    recorder.interrupted().unwrap();
    let records = recorder.into_log().0;
    assert_eq!(records.len(), 6, "{records:#?}");
    assert_eq!(records[5].body, Body::Interrupted {});
    let history = replay(records.iter().map(|r| &r.body));
    assert_eq!(history.len(), 4);
    assert_eq!(history[3], Message::Tool { tool_call_id: "b".into(), content: never.content });
}

#[test]
fn records_survive_a_trip_through_json_lines() {
    let mut log = MemoryLog::default();
    log.append(Body::User { content: "naïve \"quotes\"\nand 中文".into() }).unwrap();
    log.append(Body::Interrupted {}).unwrap();
    log.append(Body::Assistant { content: None, tool_calls: vec![call("a", "bash", "{}")], usage: None })
        .unwrap();
    let records = log.0;
    for record in &records {
        let line = serde_json::to_string(record).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(&serde_json::from_str::<Record>(&line).unwrap(), record);
    }
    let line = serde_json::to_string(&records[0]).unwrap();
    assert!(line.starts_with(r#"{"seq":1,"ts":""#) && line.contains(r#","type":"user","#), "{line}");
}

#[test]
fn a_compaction_is_a_fact_and_replay_keeps_every_message() {
    let user = |c: &str| Body::User { content: c.into() };
    let bodies = vec![
        Body::System { content: "sys".into() },
        user("one"),
        user("two"),
        user("three"),
        Body::Compaction { summary: "summary of one and two".into(), replaces: 2, elided: 0 },
        user("four"),
        Body::Compaction { summary: "summary of all before four".into(), replaces: 2, elided: 0 },
    ];
    let message = |c: &str| Message::User { content: c.into() };
    assert_eq!(
        replay(&bodies),
        vec![
            Message::System { content: "sys".into() },
            message("one"),
            message("two"),
            message("three"),
            message("four")
        ]
    );
}

#[test]
fn dates_are_civil_dates() {
    assert_eq!(civil_from_days(0), (1970, 1, 1));
    assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    assert_eq!(civil_from_days(-1), (1969, 12, 31));
    // Chapter 8 parses HTTP dates with the inverse: one calendar, both ways.
    for days in (-800_000..800_000).step_by(997) {
        let (year, month, day) = civil_from_days(days);
        assert_eq!(crate::ch02_model::errors::days_from_civil(year, month.into(), day.into()), days);
    }
    let time = UNIX_EPOCH + Duration::from_millis(1_795_943_700_123);
    assert_eq!(rfc3339(time), "2026-11-29T09:15:00.123Z");
    assert!(new_session_id(time, 0).starts_with("20261129-091500-"));
}

#[test]
fn ids_sort_by_time() {
    let times = [1_700_000_000u64, 1_700_000_001, 1_700_003_600, 1_800_000_000];
    let ids: Vec<String> = times
        .iter()
        .enumerate()
        .map(|(i, s)| new_session_id(UNIX_EPOCH + Duration::new(*s, 999_999_000 - i as u32 * 7919), 0))
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    assert_eq!(ids[0].len(), "20261129-091500-7f3a".len());
}

#[test]
fn two_sessions_in_the_same_second_sort_in_the_order_they_started() {
    let earlier = new_session_id(UNIX_EPOCH + Duration::new(1_700_000_000, 100_000_000), 0);
    let later = new_session_id(UNIX_EPOCH + Duration::new(1_700_000_000, 100_050_000), 0);
    assert!(earlier < later, "{earlier} should sort before {later}");
}

fn write_session(store: &SessionStore, id: &str, prompts: &[&str]) {
    let mut log = MemoryLog::default();
    let created = "2026-11-29T09:15:00.000Z".to_string();
    let root = store.root().display().to_string();
    log.append(Body::Session {
        version: FORMAT_VERSION,
        id: id.into(),
        root,
        model: "m".into(),
        api: OPENAI_API.into(),
        endpoint: None,
        created,
    })
    .unwrap();
    for prompt in prompts {
        log.append(Body::User { content: prompt.to_string() }).unwrap();
        log.append(Body::Assistant { content: Some("ok".into()), tool_calls: vec![], usage: None }).unwrap();
    }
    let lines: String = log.0.iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect();
    fs::create_dir_all(store.dir()).unwrap();
    fs::write(store.path_of(id), lines).unwrap();
}

#[test]
fn prefixes_resolve_when_unique_and_list_candidates_when_not() {
    let temp = TempDir::new("resolve");
    let store = SessionStore::new(temp.path());
    for id in ["20261129-091500-aaaa", "20261129-091502-bbbb", "20261130-080000-cccc"] {
        write_session(&store, id, &["hi"]);
    }
    assert_eq!(store.resolve("20261130").unwrap(), store.path_of("20261130-080000-cccc"));
    assert_eq!(store.resolve("20261129-091502-bbbb").unwrap(), store.path_of("20261129-091502-bbbb"));
    let path = store.path_of("20261129-091500-aaaa");
    assert_eq!(store.resolve(path.to_str().unwrap()).unwrap(), path);
    let ambiguous = store.resolve("20261129-0915").unwrap_err().to_string();
    assert_eq!(
        ambiguous,
        "'20261129-0915' matches 2 sessions: 20261129-091500-aaaa, 20261129-091502-bbbb; give more of the id"
    );
    assert!(store.resolve("2025").unwrap_err().to_string().starts_with("no session matches '2025'"));
    assert_eq!(store.latest().unwrap(), store.path_of("20261130-080000-cccc"));
}

#[test]
fn list_shows_the_first_prompt_and_counts_turns() {
    let temp = TempDir::new("list");
    let store = SessionStore::new(temp.path());
    assert!(store.list().unwrap().is_empty());
    assert!(store.latest().is_err());
    write_session(&store, "20261129-091500-aaaa", &["fix the \"type\":\"user\", bug", "again", "more"]);
    let listed = store.list().unwrap();
    assert_eq!(
        listed,
        vec![SessionSummary {
            id: "20261129-091500-aaaa".into(),
            path: store.path_of("20261129-091500-aaaa"),
            created: "2026-11-29T09:15:00.000Z".into(),
            first_prompt: Some("fix the \"type\":\"user\", bug".into()),
            user_turns: 3,
        }]
    );
}

#[test]
fn an_endpoint_is_recorded_without_credentials() {
    let clean = without_credentials;
    assert_eq!(clean("https://api.openai.com/v1"), "https://api.openai.com/v1");
    assert_eq!(clean("http://ada:pw@127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
    assert_eq!(
        clean("http://a:b@c@host/v1?api-version=2&api_key=sk&Token=t#k=1"),
        "http://host/v1?api-version=2"
    );
    assert_eq!(Origin::new("m", OPENAI_API, DEMO_ENDPOINT).endpoint.as_deref(), Some("demo"));
    let old =
        r#"{"seq":1,"ts":"t","type":"session","version":1,"id":"x","root":"/r","model":"m","created":"c"}"#;
    let Ok(Record { body: Body::Session { api, endpoint, .. }, .. }) = serde_json::from_str(old) else {
        panic!("an old header must still parse")
    };
    assert_eq!((api.as_str(), endpoint), (OPENAI_API, None));
}

#[test]
fn session_files_are_private() {
    let temp = TempDir::new("perms");
    let store = SessionStore::new(temp.path());
    let (id, path, _file) = store.create_file().unwrap();
    assert_eq!(path, store.path_of(&id));
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(store.dir()), 0o700);
    assert_eq!(mode(&temp.path().join(".mini_agent")), 0o700);
    let (second, _, _) = store.create_file().unwrap();
    assert_ne!(id, second);
}

/// Chapter 5's session file (chapter 9's journal replaces it and has tests of its own).
mod session_file {
    use super::*;

    fn types(path: &Path) -> Vec<String> {
        let text = fs::read_to_string(path).unwrap();
        text.lines()
            .map(|line| {
                serde_json::from_str::<serde_json::Value>(line).unwrap()["type"].as_str().unwrap().into()
            })
            .collect()
    }

    #[test]
    fn a_recorded_turn_is_one_line_per_record_and_reads_back() {
        let temp = TempDir::new("session-file");
        let store = SessionStore::new(temp.path());
        let mut recorder = Recorder::new(SessionFile::create(&store, "m").unwrap());
        let (id, path) = (recorder.log().id().to_string(), recorder.log().path().to_path_buf());
        assert_eq!(path, store.path_of(&id));
        let call = call("a", "list_files", "{}");
        let output = ToolOutput { content: "x.rs".into(), status: ToolStatus::Ok };
        recorder.message(&Message::System { content: "be brief".into() }).unwrap();
        recorder.message(&Message::User { content: "list".into() }).unwrap();
        let asked = Message::Assistant { content: None, tool_calls: vec![call.clone()] };
        recorder.event(Event::Message(&asked)).unwrap();
        recorder.event(Event::ToolStarted(&call)).unwrap();
        recorder.event(Event::ToolFinished(&call, &output)).unwrap();
        drop(recorder);
        assert_eq!(types(&path), ["session", "system", "user", "assistant", "tool_started", "tool_finished"]);

        let (mut file, records) = SessionFile::open(&path).unwrap();
        assert_eq!((file.id(), records.len()), (id.as_str(), 6));
        assert_eq!(file.append(Body::User { content: "again".into() }).unwrap(), 7);
        let history = continue_history(&id, &SessionFile::open(&path).unwrap().1).unwrap();
        assert_eq!(history.len(), 5, "system, user, assistant, tool result, user");
        assert_eq!(store.latest().unwrap(), path, "a session with a reply is the one -c continues");
    }

    #[test]
    fn a_session_stopped_inside_a_tool_is_not_continued() {
        let temp = TempDir::new("session-file-open-call");
        let store = SessionStore::new(temp.path());
        let mut recorder = Recorder::new(SessionFile::create(&store, "m").unwrap());
        let call = call("a", "bash", r#"{"command":"make"}"#);
        let asked = Message::Assistant { content: None, tool_calls: vec![call.clone()] };
        recorder.event(Event::Message(&asked)).unwrap();
        recorder.event(Event::ToolStarted(&call)).unwrap();
        let (id, path) = (recorder.log().id().to_string(), recorder.log().path().to_path_buf());
        drop(recorder);
        let records = SessionFile::open(&path).unwrap().1;
        let error = continue_history(&id, &records).unwrap_err().to_string();
        assert_eq!(
            error,
            format!("cannot continue session {id}: it stopped while a tool call (bash make) had no result")
        );
    }

    #[test]
    fn a_file_that_is_not_a_session_is_refused_naming_the_line() {
        let temp = TempDir::new("session-file-bad");
        let path = temp.path().join("x.jsonl");
        fs::write(&path, "{\"seq\":1,\"ts\":\"t\",\"type\":\"user\",\"content\":\"hi\"}\nnot json\n")
            .unwrap();
        let error = SessionFile::open(&path).err().unwrap().to_string();
        assert!(error.starts_with(&format!("{}:2: not a session record", path.display())), "{error}");
        fs::write(&path, "{\"seq\":1,\"ts\":\"t\",\"type\":\"user\",\"content\":\"hi\"}\n").unwrap();
        let error = SessionFile::open(&path).err().unwrap().to_string();
        assert_eq!(error, format!("{}:1: not a session file (no session record)", path.display()));
    }
}
