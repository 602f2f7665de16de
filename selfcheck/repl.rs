//! The REPL driven through a pipe, as a script would: slash commands, turns, sessions.

use crate::harness::{Test, call, messages, records, session_files, text};
use serde_json::json;

#[test]
fn slash_commands_and_a_turn_through_a_pipe() {
    let run = Test::new()
        .stdin("/help\n/stats\n/bogus\nlist the files\n/list\n/new\n/skills\n/exit\nnever read\n")
        .file("a.txt", "x")
        .server(vec![call("list_files", json!({})), text("There is a.txt.")])
        .run();
    run.expect_code(0);
    run.stderr_has("/resume <id>")
        .stderr_has("unknown command /bogus; type /help")
        .stderr_has("✓ list_files")
        .stderr_has("new session");
    assert!(run.stdout.contains("requests     0"), "{}", run.stdout);
    assert!(run.stdout.contains("There is a.txt.\n"), "{}", run.stdout);
    assert!(run.stdout.contains("completed       1 turn  list the files"), "{}", run.stdout);
    assert!(run.stdout.contains("new session "), "{}", run.stdout);
    assert!(run.stdout.contains("AGENTS.md: none"), "{}", run.stdout);
    assert_eq!(run.requests.len(), 2, "the line after /exit is never read");
    let sessions = session_files(run.root());
    assert_eq!(sessions.len(), 2, "the first session and the one /new started");
    let turns: Vec<usize> =
        sessions.iter().map(|path| records(path).iter().filter(|r| r["type"] == "user").count()).collect();
    assert_eq!(turns.iter().sum::<usize>(), 1);
    assert!(run.root().join(".mini_agent").is_dir());
}

#[test]
fn writes_in_a_piped_repl_are_denied_naming_the_flag() {
    let run = Test::new()
        .stdin("write it\n")
        .server(vec![call("write_file", json!({"path": "x.txt", "content": "x"})), text("denied")])
        .run();
    run.expect_code(0);
    assert!(run.only_tool_result().contains("--allow-write"), "{}", run.only_tool_result());
    assert_eq!(run.read("x.txt"), None);
}

#[test]
fn a_resumed_repl_shows_the_last_exchange_and_continues_exactly() {
    let first = Test::new().args(["-p", "remember 42"]).server(vec![text("I will remember 42.")]).run();
    first.expect_code(0);
    let mut expected = messages(&first.requests[0]);
    expected.push(json!({"role": "assistant", "content": "I will remember 42."}));
    expected.push(json!({"role": "user", "content": "what number?"}));

    let resumed =
        Test::new().args(["-c"]).stdin("what number?\n").server(vec![text("42")]).run_in(first.workspace);
    resumed.expect_code(0).stderr_has("resumed session").stderr_has("> remember 42\nI will remember 42.");
    assert_eq!(resumed.stdout, "42\n");
    let sent: Vec<_> = messages(&resumed.requests[0])
        .into_iter()
        .map(|m| json!({"role": m["role"], "content": m["content"]}))
        .collect();
    assert_eq!(sent, expected);
}

#[test]
fn compact_is_recorded_and_a_resumed_session_sends_the_same_view() {
    // Long enough that a summary makes it smaller (else `/compact` says there is nothing to do).
    let (question, answer) = ("first, a long question ".repeat(20), "answer one, at length ".repeat(20));
    let first = Test::new()
        .stdin(&format!("{question}\nsecond\n/compact\n"))
        .server(vec![text(&answer), text("answer two"), text("SUMMARY OF ONE")])
        .run();
    first.expect_code(0);
    assert!(first.stdout.contains("compacted: 2 earlier messages"), "{}", first.stdout);
    let journal = first.only_journal();
    let at = journal.iter().position(|r| r["type"] == "compaction").expect("a compaction record");
    assert_eq!(journal[at]["replaces"], 2);
    assert_eq!(journal[at]["summary"], "SUMMARY OF ONE");
    // The summary request's tokens are recorded right after it.
    assert_eq!(journal[at + 1]["type"], "usage");
    assert_eq!(journal[at + 1]["prompt_tokens"], 10);

    let resumed = Test::new().args(["-c", "-p", "third"]).server(vec![text("ok")]).run_in(first.workspace);
    resumed.expect_code(0);
    let sent = messages(&resumed.requests[0]);
    let roles: Vec<_> = sent.iter().map(|m| m["role"].as_str().unwrap_or("?")).collect();
    assert_eq!(roles, ["system", "user", "user", "assistant", "user"]);
    assert!(sent[1]["content"].as_str().is_some_and(|c| c.contains("SUMMARY OF ONE")), "{}", sent[1]);
    assert_eq!(sent[2]["content"], "second");
    assert_eq!(sent[3]["content"], "answer two");
    assert_eq!(sent[4]["content"], "third");
}

#[test]
fn slash_resume_switches_to_a_session_and_continues_it() {
    let first = Test::new().args(["-p", "one"]).server(vec![text("answer one")]).run();
    let id = first.only_journal()[0]["id"].as_str().expect("an id").to_string();
    let script = format!("/resume {id}\n/resume {id}\nnext\n/resume nosuch\n");
    let repl = Test::new().stdin(&script).server(vec![text("answer two")]).run_in(first.workspace);
    repl.expect_code(0).stderr_has("error: no session matches 'nosuch'");
    assert!(repl.stdout.contains(&format!("resumed session {id}\n> one\nanswer one")), "{}", repl.stdout);
    assert!(repl.stdout.contains(&format!("already in session {id}")), "{}", repl.stdout);
    let sent: Vec<_> = messages(&repl.requests[0]).iter().map(|m| m["content"].clone()).collect();
    assert_eq!(sent[1..], [json!("one"), json!("answer one"), json!("next")]);
}

#[test]
fn ctrl_c_during_a_repl_turn_is_recorded_and_the_repl_goes_on() {
    let run = Test::new()
        .stdin("wait for it\n")
        .server(vec![mini_agent::scripted_server::Step::Hang])
        .interrupt_after(1)
        .run();
    run.expect_code(0).stderr_has("interrupted");
    // The mark the model reads next (an assistant message), then the fact, for --status.
    assert_eq!(run.journal_types(), ["session", "system", "sandbox", "user", "assistant", "interrupted"]);
}

/// Issue 22: `/stats` after `-c` or `-r` counted only this process, as if the session had just
/// begun. It counts what the session's file recorded too, and says which part came before this
/// run; times are this run's.
#[test]
fn stats_of_a_resumed_session_count_what_its_file_recorded() {
    let first =
        Test::new().args(["-p", "list"]).server(vec![call("list_files", json!({})), text("one file")]).run();
    first.expect_code(0);
    let resumed = Test::new().args(["-c"]).stdin("/stats\n").server(vec![]).run_in(first.workspace);
    resumed.expect_code(0);
    let stats = &resumed.stdout;
    assert!(stats.contains("requests     2 (2 before this run)\n"), "{stats}");
    assert!(stats.contains("tokens       20 prompt + 10 completion (20 + 10 before this run)\n"), "{stats}");
    assert!(stats.contains("tool calls   1 (1 before this run)\n"), "{stats}");
    assert!(stats.contains("model time") && stats.contains("s (this run)\nwall time"), "{stats}");
}
