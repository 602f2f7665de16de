use super::compare::*;
use super::journal::*;
use super::runner::*;
use super::scenario::*;
use super::script::*;
use crate::ch02_loop::{Reply, ToolCall};
use crate::ch11_streaming::StreamAssembler;
use crate::temp_dir::TempDir;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_SCENARIO_DIR)
}

#[test]
fn every_scenario_file_parses_and_names_are_unique() {
    let scenarios = load_scenarios(&scenario_dir()).expect("the shipped scenarios load");
    assert!(scenarios.len() >= 12, "the issue asks for at least 12 scenarios, found {}", scenarios.len());
    let mut names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), scenarios.len(), "two scenarios share a name");
    for scenario in &scenarios {
        let mut ids = HashMap::new();
        for (index, run) in scenario.runs.iter().enumerate() {
            assert_eq!(server_steps(index, &run.steps, &mut ids).len(), run.steps.len());
        }
    }
}

#[test]
fn a_typo_or_an_impossible_signal_is_rejected_with_the_file_named() {
    let dir = TempDir::new("eval-malformed");
    let typo = r#"{"name": "x", "runs": [{"args": [], "expect": {"exit": 0, "stdout_contain": ["a"]}}]}"#;
    std::fs::write(dir.join("typo.json"), typo).expect("write");
    let error = load_scenarios(dir.path()).expect_err("unknown field").to_string();
    assert!(error.contains("typo.json") && error.contains("stdout_contain"), "{error}");

    let both = r#"{"name": "x", "runs": [{"args": [], "expect": {"exit": 0},
        "signal": {"signal": "INT", "after_requests": 1, "when_file": "f"}}]}"#;
    std::fs::write(dir.join("typo.json"), both).expect("write");
    let error = load_scenarios(dir.path()).expect_err("two triggers").to_string();
    assert!(error.contains("exactly one of after_requests and when_file"), "{error}");

    let outside =
        r#"{"name": "x", "files": {"../escape": ""}, "runs": [{"args": [], "expect": {"exit": 0}}]}"#;
    std::fs::write(dir.join("typo.json"), outside).expect("write");
    let error = load_scenarios(dir.path()).expect_err("path outside").to_string();
    assert!(error.contains("'../escape' must be a relative path"), "{error}");
}

fn request(messages: Value) -> Value {
    json!({"model": "m", "messages": messages})
}

fn answered_pair() -> Value {
    request(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "file text"},
        {"role": "tool", "tool_call_id": "b", "content": "[exit code 0]"}
    ]))
}

#[test]
fn tool_answers_must_follow_their_calls_once_and_in_order() {
    assert_eq!(check_tool_answers(&answered_pair()), Ok(()));
    let mut swapped = answered_pair();
    swapped["messages"].as_array_mut().expect("array").swap(2, 3);
    assert_eq!(
        check_tool_answers(&swapped),
        Err("tool call a is not answered next, in order (found b)".into())
    );
    let mut missing = answered_pair();
    missing["messages"].as_array_mut().expect("array").pop();
    assert_eq!(
        check_tool_answers(&missing),
        Err("tool call b is not answered next, in order (found no tool result)".into())
    );
    let mut twice = answered_pair();
    twice["messages"]
        .as_array_mut()
        .expect("array")
        .push(json!({"role": "tool", "tool_call_id": "b", "content": "again"}));
    assert_eq!(check_tool_answers(&twice), Err("tool result \"b\" answers no call just before it".into()));
}

fn passing() -> (Expect, Observed) {
    let expect = Expect {
        exit: 0,
        files: BTreeMap::from([("a.txt".into(), Some("hi\n".into())), ("gone".into(), None)]),
        tools: Some(vec!["read_file".into(), "bash".into()]),
        requests: Some(1),
        stdout_json_lines: false,
        stdout_contains: vec!["Done".into()],
        stderr_contains: vec!["→ bash".into()],
        tool_results_contain: vec!["exit code 0".into()],
        first_request_contains: vec!["go".into()],
    };
    let observed = Observed {
        ending: Ending::Exited(0),
        stdout: "Done.\n".into(),
        stderr: "→ read_file a.txt ✓\n→ bash ls ✓\n".into(),
        files: BTreeMap::from([("a.txt".into(), Some("hi\n".into())), ("gone".into(), None)]),
        tools: vec!["read_file".into(), "bash".into()],
        tools_witness: ToolsWitness::Journal,
        requests: vec![answered_pair()],
        journal_problems: Vec::new(),
    };
    (expect, observed)
}

#[test]
fn a_run_that_matches_passes_and_each_difference_is_one_line() {
    let (expect, observed) = passing();
    assert_eq!(compare(&expect, &observed), Vec::<String>::new());

    let mut wrong = observed.clone();
    wrong.ending = Ending::Exited(1);
    wrong.files.insert("a.txt".into(), None);
    wrong.files.insert("gone".into(), Some("back".into()));
    wrong.tools = vec!["bash".into()];
    wrong.stdout = "Nope".into();
    wrong.requests.push(request(json!([{"role": "tool", "tool_call_id": "x", "content": ""}])));
    assert_eq!(
        compare(&expect, &wrong),
        [
            "exit: expected 0, got 1",
            "file a.txt: expected \"hi\\n\", got (absent)",
            "file gone: expected (absent), got \"back\"",
            "tools (from the journal): expected [\"read_file\", \"bash\"], got [\"bash\"]",
            "model requests: expected 1, got 2",
            "stdout: expected to contain \"Done\", got \"Nope\"",
            "request 2: tool result \"x\" answers no call just before it",
        ]
    );
}

#[test]
fn json_lines_output_is_checked_line_by_line() {
    let (mut expect, mut observed) = passing();
    expect.stdout_json_lines = true;
    expect.stdout_contains = vec!["read_file".into()];
    observed.stdout =
        "{\"type\":\"tool_started\",\"name\":\"read_file\"}\n{\"type\":\"exit\",\"code\":0}\n".into();
    assert_eq!(compare(&expect, &observed), Vec::<String>::new());
    observed.stdout.push_str("Done.\n");
    assert_eq!(compare(&expect, &observed), ["stdout line 3 is not a JSON object: \"Done.\""]);
}

#[test]
fn a_killed_or_timed_out_run_says_so() {
    let (mut expect, mut observed) = passing();
    observed.ending = Ending::TimedOut;
    assert_eq!(compare(&expect, &observed), ["the run did not end in time and was killed"]);
    expect.exit = 137;
    observed.ending = Ending::Signalled(9);
    assert_eq!(compare(&expect, &observed), Vec::<String>::new());
    // Dying of Ctrl+C is not the same as catching it and exiting with 130.
    expect.exit = 130;
    observed.ending = Ending::Signalled(2);
    assert_eq!(
        compare(&expect, &observed),
        ["exit: expected 130, got killed by signal 2 (a signal it should have handled, or did not expect)"]
    );
}

use crate::ch02_loop::fakes::Quiet as Ignore;

fn assemble(chunks: &[String]) -> StreamAssembler {
    let mut assembler = StreamAssembler::default();
    for chunk in chunks {
        assembler.apply(chunk, &mut Ignore::default()).expect("a valid chunk");
    }
    assembler
}

#[test]
fn scripted_streams_assemble_into_the_reply_they_describe_and_cut_ones_do_not() {
    let calls = vec![("call_0_0_0".to_string(), "write_file".to_string(), r#"{"path":"é.txt"}"#.to_string())];
    let assembler = assemble(&stream_chunks(Some("Writing it now."), &calls, true));
    assert!(assembler.is_complete());
    let reply = assembler.into_reply().expect("a whole reply");
    let expected_call = ToolCall {
        id: "call_0_0_0".into(),
        name: "write_file".into(),
        arguments: r#"{"path":"é.txt"}"#.into(),
    };
    assert_eq!(
        reply,
        Reply {
            content: Some("Writing it now.".into()),
            tool_calls: vec![expected_call],
            usage: Some(crate::ch02_loop::Usage { prompt_tokens: 10, completion_tokens: 5 }),
            finish_reason: Some("tool_calls".into()),
            cache: Default::default(),
        }
    );
    let cut = assemble(&stream_chunks(Some("Writing it now."), &calls, false));
    assert!(!cut.is_complete());
    assert_eq!(cut.partial_text(), "Writing it now.");
}

#[test]
fn tools_started_are_read_from_the_journal_as_the_journal_writes_them() {
    use crate::ch05_sessions::{Append, Body, SessionStore};
    use crate::ch09_journal::Journal;
    let root = TempDir::new("eval-journal");
    let store = SessionStore::new(root.path());
    let started = |name: &str| Body::ToolStarted {
        id: format!("id_{name}"),
        name: name.into(),
        arguments: "{}".into(),
    };
    let mut first = Journal::create(&store, "m").expect("a journal");
    first.append(started("bash")).expect("append");
    let before = journal_records(root.path());
    first.append(started("read_file")).expect("append");
    first
        .append(Body::ToolFinished {
            id: "id_read_file".into(),
            status: crate::ch02_loop::ToolStatus::Ok,
            content: "x".into(),
        })
        .expect("append");
    assert_eq!(tools_started_since(&before, &journal_records(root.path())), ["read_file"]);
    drop(first);
    let before = journal_records(root.path());
    let mut second = Journal::create(&store, "m").expect("a second journal");
    second.append(started("edit_file")).expect("append");
    assert_eq!(tools_started_since(&before, &journal_records(root.path())), ["edit_file"]);
    let mut everything = tools_started_since(&[], &journal_records(root.path()));
    everything.sort();
    assert_eq!(everything, ["bash", "edit_file", "read_file"]);
}

#[test]
fn a_journal_with_a_torn_middle_or_a_tool_started_twice_is_a_difference() {
    let root = TempDir::new("eval-promises");
    let dir = root.join(".mini_agent").join("sessions");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let lines = [
        r#"{"seq":1,"type":"session"}"#,
        r#"{"seq":2,"type":"tool_started","id":"call_0_0_0","name":"bash"}"#,
        r#"{"seq":3,"ty"#,
        r#"{"seq":4,"type":"tool_started","id":"call_0_0_0","name":"bash"}"#,
        r#"{"seq":5,"type":"tool_fin"#,
    ];
    std::fs::write(dir.join("20261129-100000-abcd.jsonl"), lines.join("\n")).expect("write");
    assert_eq!(
        journal_problems(root.path(), false),
        [
            "20261129-100000-abcd.jsonl line 3 is not a record",
            "tool call call_0_0_0 was started a second time (20261129-100000-abcd.jsonl line 4)",
            "20261129-100000-abcd.jsonl line 5 is not a record",
        ]
    );
    // Only a killed process may leave a torn last line.
    assert_eq!(journal_problems(root.path(), true).len(), 2);
}

#[test]
fn without_a_journal_the_answers_of_this_run_name_the_tools() {
    let names = HashMap::from([
        ("call_0_0_0".to_string(), "read_file".to_string()),
        ("call_1_0_0".to_string(), "bash".to_string()),
        ("call_1_1_0".to_string(), "search".to_string()),
    ]);
    let messages = json!([
        {"role": "tool", "tool_call_id": "call_0_0_0", "content": ""},
        {"role": "tool", "tool_call_id": "call_1_0_0", "content": ""}
    ]);
    let mut later = messages.clone();
    later
        .as_array_mut()
        .expect("array")
        .push(json!({"role": "tool", "tool_call_id": "call_1_1_0", "content": ""}));
    let requests = [request(messages), request(later)];
    assert_eq!(tools_answered(&requests, 1, &names), ["bash", "search"]);
    assert_eq!(tools_answered(&requests, 0, &names), ["read_file"]);
}

/// A stand-in binary: a shell script, so the runner's plumbing (arguments, stdin, exit
/// codes, files, signals, timeouts) is tested without the agent.
///
/// A child process writes it. Had this process written it, another test's thread could fork
/// while the file was open for writing, its child would hold that descriptor until its
/// `exec`, and starting the script in that moment fails with "Text file busy" (ETXTBSY).
fn script(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("fake-agent");
    let mut writer = Command::new("sh")
        .args(["-c", r#"cat > "$1" && chmod 755 "$1""#, "sh"])
        .arg(&path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("start sh");
    let mut stdin = writer.stdin.take().expect("piped");
    stdin.write_all(format!("#!/bin/sh\n{body}\n").as_bytes()).expect("write the script");
    drop(stdin);
    assert!(writer.wait().expect("wait for sh").success(), "sh could not write the script");
    path
}

fn run_with(body: &str, run: &str) -> (Observed, Vec<String>) {
    let bin = TempDir::new("eval-bin");
    let root = TempDir::new("eval-root");
    let config = TempDir::new("eval-config");
    let run: Run = serde_json::from_str(run).expect("a valid run");
    let observed =
        run_once(&script(bin.path(), body), (root.path(), config.path()), 0, &run, &mut HashMap::new())
            .expect("ran");
    let differences = compare(&run.expect, &observed);
    (observed, differences)
}

#[test]
fn the_runner_passes_arguments_and_stdin_and_sees_exit_code_output_and_files() {
    let (observed, differences) = run_with(
        r#"echo "args: $*"; read line; echo "stdin: $line" >&2; printf 'x\n' > made.txt; exit 3"#,
        r#"{"args": ["-p", "hi"], "stdin": "typed\n", "expect": {"exit": 3,
            "files": {"made.txt": "x\n", "other.txt": null},
            "stdout_contains": ["-p hi", "--base-url http://127.0.0.1:"],
            "stderr_contains": ["stdin: typed"], "requests": 0, "tools": []}}"#,
    );
    assert_eq!(differences, Vec::<String>::new(), "{observed:?}");
}

#[test]
fn the_binary_has_no_terminal_to_ask_even_when_the_evaluation_has_one() {
    let (observed, differences) = run_with(
        "if (exec < /dev/tty) 2>/dev/null; then echo tty; else echo no-tty; fi",
        r#"{"args": [], "expect": {"exit": 0, "stdout_contains": ["no-tty"]}}"#,
    );
    assert_eq!(differences, Vec::<String>::new(), "{observed:?}");
}

#[test]
fn the_binary_gets_the_scenarios_config_directory_not_the_evaluators() {
    // Approvals (chapter 16) and user MCP servers (chapter 18) live in the config directory:
    // a scenario must neither write the evaluator's nor read it.
    let (observed, differences) = run_with(
        r#"case "$XDG_CONFIG_HOME" in *eval-config*) echo own;; *) echo "other: $XDG_CONFIG_HOME";; esac"#,
        r#"{"args": [], "expect": {"exit": 0, "stdout_contains": ["own"]}}"#,
    );
    assert_eq!(differences, Vec::<String>::new(), "{observed:?}");
}

#[test]
fn the_runner_kills_when_the_file_appears_and_reports_signal_exit_codes() {
    let (observed, differences) = run_with(
        "touch ready; exec sleep 10",
        r#"{"args": [], "signal": {"signal": "KILL", "when_file": "ready"}, "expect": {"exit": 137}}"#,
    );
    assert_eq!(differences, Vec::<String>::new(), "{observed:?}");
    let (observed, differences) = run_with(
        "trap 'exit 130' INT; touch ready; while :; do sleep 0.01; done",
        r#"{"args": [], "signal": {"signal": "INT", "when_file": "ready", "delay_ms": 20}, "expect": {"exit": 130}}"#,
    );
    assert_eq!(differences, Vec::<String>::new(), "{observed:?}");
}

#[test]
fn the_table_counts_passes_per_scenario_and_failures_say_what_differed() {
    let dir = TempDir::new("eval-scenarios");
    let scenario = |name: &str, exit: i32| {
        format!(
            r#"{{"name": "{name}", "runs": [{{"args": ["-p", "x"], "expect": {{"exit": {exit}, "stdout_contains": ["hello"]}}}}]}}"#
        )
    };
    std::fs::write(dir.join("a.json"), scenario("passes", 0)).expect("write");
    std::fs::write(dir.join("b.json"), scenario("fails", 5)).expect("write");
    let binary = script(dir.path(), "echo hello");
    let mut out = Vec::new();
    let all_passed = run_eval_to(&mut out, &binary, dir.path(), 2, false).expect("ran");
    let out = String::from_utf8(out).expect("utf-8");
    assert!(!all_passed, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("scenario") && lines[0].ends_with("ms"), "{out}");
    assert!(lines[1].starts_with("passes    ") && lines[1].contains(" 2/2 "), "{out}");
    assert!(
        lines[2].starts_with("fails     ") && lines[2].contains(" 0/2 ") && lines[2].ends_with("FAIL"),
        "{out}"
    );
    assert!(out.contains("fails: run 1 (-p x) differed:\n  - exit: expected 5, got 0\n"), "{out}");
    assert!(out.ends_with("1 of 2 scenarios passed\n"), "{out}");
}

#[test]
fn a_run_that_never_ends_is_killed_at_its_timeout() {
    let (observed, differences) =
        run_with("exec sleep 10", r#"{"args": [], "timeout_ms": 200, "expect": {"exit": 0}}"#);
    assert_eq!(observed.ending, Ending::TimedOut);
    assert_eq!(differences, ["the run did not end in time and was killed"]);
}
