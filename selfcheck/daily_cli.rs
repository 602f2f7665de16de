//! The daily driver at the command line (issue 11): what a person meets when sessions are
//! continued, when `--json` is scripted, when sessions pile up, and in the small print.
//! Each test drives the real binary, through a pipe or a pseudo-terminal.

use crate::harness::{Run, Test, call, records, session_files, text};
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};

// --- 1. A session remembers where it talks -------------------------------------------------

#[test]
fn continue_goes_back_to_the_demo_model_without_a_key() {
    let first = Test::new().args(["--demo", "-p", "list the files"]).file("a.txt", "x").run();
    first.expect_code(0);
    let header = &first.only_journal()[0];
    assert_eq!(header["endpoint"], "demo");
    assert_eq!(header["api"], "openai");
    // No key, no --demo: the session's own record says where it talks.
    let second = Test::new().args(["-c", "-p", "list the files again"]).run_in(first.workspace);
    second.expect_code(0);
    assert!(!second.stderr.contains("OPENAI_API_KEY"), "{}", second.stderr);
    assert_eq!(second.journal_types().iter().filter(|t| *t == "user").count(), 2);
}

#[test]
fn continue_goes_back_to_the_recorded_base_url_and_model() {
    let server = ScriptedServer::scripted(vec![text("first"), text("second")]).expect("a server");
    let first = Test::new().args(["--model", "local-coder", "-p", "one"]).base_url(&server.url).run();
    first.expect_code(0);
    // Neither --base-url nor --model: both come from the session, not the OpenAI default.
    let second =
        Test::new().args(["-c", "-p", "two"]).env("MODEL_ID", "from-the-environment").run_in(first.workspace);
    second.expect_code(0);
    assert_eq!(second.stdout, "second\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the second run talked to the recorded server");
    assert_eq!(requests[1]["model"], "local-coder");
}

#[test]
fn a_flag_overrides_the_recorded_endpoint() {
    let first = Test::new().args(["--demo", "-p", "list the files"]).run();
    first.expect_code(0);
    let server = ScriptedServer::scripted(vec![text("elsewhere")]).expect("a server");
    let second = Test::new().args(["-c", "-p", "go on"]).base_url(&server.url).run_in(first.workspace);
    second.expect_code(0);
    assert_eq!(second.stdout, "elsewhere\n");
    // The demo's model name stays with the demo: moved elsewhere, the default model is used.
    assert_eq!(server.requests()[0]["model"], "gpt-4o-mini");
}

#[test]
fn no_key_or_url_password_is_recorded_and_status_shows_the_endpoint() {
    let server = ScriptedServer::scripted(vec![text("ok")]).expect("a server");
    let port = server.url.rsplit(':').next().and_then(|p| p.split('/').next()).expect("a port");
    let url = format!("http://ada:hunter2@127.0.0.1:{port}/v1?api-version=2&api_key=sk-secret-9");
    let run = Test::new().args(["-p", "hi"]).base_url(&url).env("OPENAI_API_KEY", "sk-env-secret-7").run();
    let journal = std::fs::read_to_string(&session_files(run.root())[0]).expect("the journal");
    for secret in ["hunter2", "sk-secret-9", "sk-env-secret-7", "ada:"] {
        assert!(!journal.contains(secret), "{secret} was recorded:\n{journal}");
    }
    let expected = format!("http://127.0.0.1:{port}/v1?api-version=2");
    assert_eq!(run.only_journal()[0]["endpoint"], expected.as_str());
    let status = Test::new().args(["-c", "--status"]).run_in(run.workspace);
    status.expect_code(0);
    assert!(status.stdout.contains(&format!("endpoint {expected} (openai)")), "{}", status.stdout);
}

#[test]
fn a_journal_written_before_endpoints_were_recorded_still_loads() {
    let first = Test::new().args(["--demo", "-p", "list the files"]).run();
    let path = &session_files(first.root())[0];
    // Rewrite the header as an older version wrote it: no `api`, no `endpoint`.
    let mut lines: Vec<serde_json::Value> = records(path);
    let header = lines[0].as_object_mut().expect("an object");
    header.remove("api");
    header.remove("endpoint");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).expect("rewrite the journal");
    let status = Test::new().args(["-c", "--status"]).run_in(first.workspace);
    status.expect_code(0);
    assert!(status.stdout.contains("endpoint not recorded"), "{}", status.stdout);
    let again = Test::new().args(["-c", "--demo", "-p", "list the files"]).run_in(status.workspace);
    again.expect_code(0);
}

#[test]
fn help_says_a_resumed_session_keeps_its_model_and_endpoint() {
    let run = Test::new().args(["--help"]).run();
    assert!(run.stdout.contains("a resumed session's own model"), "{}", run.stdout);
    assert!(run.stdout.contains("a resumed session's own endpoint"), "{}", run.stdout);
}

#[test]
fn resuming_in_the_repl_says_when_the_session_talked_elsewhere() {
    let first = Test::new().args(["--demo", "-p", "list the files"]).run();
    let id = session_files(first.root())[0].file_stem().and_then(|s| s.to_str()).map(String::from);
    let id = id.expect("an id");
    let server = ScriptedServer::scripted(vec![]).expect("a server");
    let repl =
        Test::new().base_url(&server.url).stdin(&format!("/resume {id}\n/exit\n")).run_in(first.workspace);
    repl.expect_code(0);
    repl.stderr_has("this session talked to demo at demo");
}

// --- 2. `--json` keeps its promise -----------------------------------------------------------

/// The stdout lines of a `--json` run, parsed; every line must be JSON.
fn events(run: &Run) -> Vec<Value> {
    run.stdout.lines().map(|line| serde_json::from_str(line).expect("each stdout line is JSON")).collect()
}

fn last_event_is_exit(run: &Run, code: i64, reason: &str) {
    let events = events(run);
    let last = events.last().unwrap_or_else(|| panic!("empty stdout; stderr: {}", run.stderr));
    assert_eq!(last["type"], "exit", "{last}");
    assert_eq!(last["code"], code, "{last}");
    let error = last["error"].as_str().unwrap_or_else(|| panic!("exit {code} without an error: {last}"));
    assert!(error.contains(reason), "{error:?} lacks {reason:?}");
}

#[test]
fn json_argument_errors_still_end_with_an_exit_event() {
    let cases: [(&[&str], &str); 4] = [
        (&["--json", "-p", "x", "--max-turns", "abc"], "--max-turns expects"),
        (&["--json", "--frobnicate", "-p", "x"], "unknown flag --frobnicate"),
        (&["--json", "-p", "x", "--model"], "--model needs a value"),
        (&["--json"], "add -p"),
    ];
    for (args, reason) in cases {
        let mut test = Test::new();
        for arg in args {
            test = test.args([arg]);
        }
        let run = test.run();
        run.expect_code(1);
        last_event_is_exit(&run, 1, reason);
    }
}

#[test]
fn json_turn_limit_exit_says_why() {
    let run = Test::new()
        .args(["--json", "--max-turns", "1", "-p", "loop"])
        .server(vec![call("list_files", json!({}))])
        .run();
    run.expect_code(2);
    last_event_is_exit(&run, 2, "turn limit");
}

#[test]
fn json_assistant_text_is_the_same_with_and_without_stream() {
    let plain = Step::message(json!({"role": "assistant", "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}]}));
    let chunk = |delta: Value, finish: Value| {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string()
    };
    let streamed = Step::Stream {
        chunks: vec![
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                "function": {"name": "list_files", "arguments": "{}"}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
        ],
        delay_ms: 0,
        finish: true,
    };
    let answer = |stream: bool| {
        let args: &[&str] = if stream { &["--stream"] } else { &[] };
        let mut test = Test::new().args(["--json", "-p", "list"]);
        for arg in args {
            test = test.args([arg]);
        }
        let first = if stream { streamed.clone() } else { plain.clone() };
        let run = test.server(vec![first, text("done")]).run();
        run.expect_code(0);
        events(&run)
            .into_iter()
            .filter(|e| e["type"] == "assistant")
            .map(|e| e["text"].clone())
            .collect::<Vec<_>>()
    };
    let (without, with) = (answer(false), answer(true));
    assert_eq!(without, [Value::Null, json!("done")]);
    assert_eq!(with, without);
}

// --- 4. Failed starts don't bury the last good session ---------------------------------------

/// A workspace with a good demo session and, after it, a start that failed to connect.
fn good_then_failed() -> (Run, String) {
    let good = Test::new().args(["--demo", "-p", "list the files"]).run();
    good.expect_code(0);
    let id = good.only_journal()[0]["id"].as_str().expect("an id").to_string();
    let failed =
        Test::new().args(["-p", "this start fails"]).base_url("http://127.0.0.1:1/v1").run_in(good.workspace);
    failed.expect_code(1);
    assert_eq!(session_files(failed.root()).len(), 2);
    (failed, id)
}

#[test]
fn continue_skips_a_start_that_never_got_a_reply() {
    let (failed, good) = good_then_failed();
    let status = Test::new().args(["-c", "--status"]).run_in(failed.workspace);
    status.expect_code(0);
    assert!(status.stdout.starts_with(&format!("session  {good}\n")), "{}", status.stdout);
    let again = Test::new().args(["-c", "-p", "list them again"]).run_in(status.workspace);
    again.expect_code(0);
}

#[test]
fn sessions_lists_each_session_with_its_state_like_slash_list() {
    let (failed, good) = good_then_failed();
    let listed = Test::new().args(["sessions"]).run_in(failed.workspace);
    listed.expect_code(0);
    let lines: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", listed.stdout);
    assert!(lines[0].contains(&good) || lines[1].contains(&good), "{}", listed.stdout);
    let good_line = lines.iter().find(|l| l.contains(&good)).expect("the good session");
    let failed_line = lines.iter().find(|l| !l.contains(&good)).expect("the failed one");
    assert!(good_line.contains(" completed ") && good_line.contains(" 1 turn "), "{good_line}");
    assert!(failed_line.contains(" failed ") && failed_line.contains("this start fails"), "{failed_line}");
    // The REPL's /list shows the same columns, with the current session marked.
    let repl = Test::new().args(["--demo"]).stdin("/list\n/exit\n").run_in(listed.workspace);
    repl.expect_code(0);
    assert!(repl.stdout.contains(good_line.trim_start()), "{}", repl.stdout);
    assert!(repl.stdout.lines().any(|l| l.starts_with("* ") && l.contains(" new ")), "{}", repl.stdout);
}

#[test]
fn an_ambiguous_prefix_names_ten_candidates_and_counts_the_rest() {
    let first = Test::new().args(["--demo", "-p", "list the files"]).run();
    let journal = std::fs::read_to_string(&session_files(first.root())[0]).expect("the journal");
    let dir = first.root().join(".mini_agent/sessions");
    for n in 0..12 {
        std::fs::write(dir.join(format!("20990101-0000{n:02}-abcd.jsonl")), &journal).expect("a copy");
    }
    let run = Test::new().args(["-r", "2099", "--status"]).run_in(first.workspace);
    run.expect_code(1)
        .stderr_has("'2099' matches 12 sessions: ")
        .stderr_has(" and 2 more; give more of the id");
    assert!(
        !run.stderr.contains("20990101-000001-abcd"),
        "the oldest two are counted, not named: {}",
        run.stderr
    );
    assert!(run.stderr.contains("20990101-000011-abcd"), "{}", run.stderr);
    let missing = Test::new().args(["-r", "nosuch"]).run_in(run.workspace);
    missing.expect_code(1).stderr_has("mini-agent sessions");
}

#[test]
fn a_fifo_named_like_a_session_is_named_on_stderr_not_waited_on() {
    let good = Test::new().args(["--demo", "-p", "list the files"]).run();
    let fifo = good.root().join(".mini_agent/sessions/20990101-000000-ffff.jsonl");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(status.success());
    let listed = Test::new().args(["sessions"]).run_in(good.workspace);
    listed.expect_code(0);
    listed.stderr_has("20990101-000000-ffff.jsonl is not a regular file");
    assert_eq!(listed.stdout.lines().count(), 1, "the good session is still listed:\n{}", listed.stdout);
    // -c passes over it to the session that got a reply.
    let again = Test::new().args(["-c", "-p", "list them again"]).run_in(listed.workspace);
    again.expect_code(0);
}

// --- 5. The small print ------------------------------------------------------------------------

fn repository() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn cargo_install_path_dot_installs_only_mini_agent() {
    let output = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--no-deps", "--format-version", "1", "--offline"])
        .current_dir(repository())
        .output()
        .expect("cargo metadata");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata JSON");
    let bins = |package: &str| -> Vec<String> {
        let packages = metadata["packages"].as_array().expect("packages");
        let found = packages.iter().find(|p| p["name"] == package).expect("the package");
        let targets = found["targets"].as_array().expect("targets");
        targets
            .iter()
            .filter(|t| t["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "bin")))
            .map(|t| t["name"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(bins("mini-agent"), ["mini-agent"], "`cargo install --path .` installs these");
    // The book's builder is still one `cargo run --bin build-guide` away, in its own package.
    assert_eq!(bins("build-guide"), ["build-guide"]);
}

#[test]
fn gitignore_lists_no_tracked_file() {
    let output = std::process::Command::new("git")
        .args(["ls-files", "--cached", "--ignored", "--exclude-standard"])
        .current_dir(repository())
        .output()
        .expect("git ls-files (the tests run in a checkout)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "", "tracked files that .gitignore lists");
}

#[test]
fn dash_p_dash_on_a_terminal_says_it_reads_until_ctrl_d() {
    let workspace = crate::harness::TempDir::new("selfcheck");
    let mut terminal = crate::pty::Terminal::start(workspace.path(), &["--demo", "-p", "-"]);
    terminal.wait_for("press Ctrl+D");
    terminal.type_keys("list the files\r\x04");
    let (code, screen) = terminal.wait_exit();
    assert_eq!(code, Some(0), "{screen}");
}

#[test]
fn a_value_given_twice_an_empty_model_and_combined_short_flags() {
    Test::new().args(["-p", "a", "-p", "b"]).run().expect_code(1).stderr_has("--prompt was given twice");
    Test::new().args(["--model", "", "-p", "a"]).run().expect_code(1).stderr_has("--model needs a value");
    let combined = Test::new().args(["--demo", "-vp", "list the files"]).file("a.txt", "x").run();
    combined.expect_code(0).stderr_has("list_files");
    Test::new()
        .args(["-vx"])
        .run()
        .expect_code(1)
        .stderr_has("unknown flag -x in -vx: one-letter flags combine");
}

#[test]
fn progress_lines_say_what_a_call_does() {
    let run = Test::new()
        .args(["--allow-shell", "-p", "look around"])
        .server(vec![
            call("list_files", json!({})),
            call("bash", json!({"command": "echo hi"})),
            text("done"),
        ])
        .run();
    run.expect_code(0).stderr_has("✓ list_files .\n").stderr_has("✓ bash echo hi\n");
    assert!(!run.stderr.contains("list_files: {}"), "{}", run.stderr);
}

#[test]
fn typing_exit_or_quit_in_the_repl_says_how_to_leave() {
    let server = ScriptedServer::scripted(vec![]).expect("a server");
    let run = Test::new().base_url(&server.url).stdin("exit\nquit\n/exit\n").run();
    run.expect_code(0).stderr_has("to leave, type /exit or press Ctrl+D");
    assert_eq!(server.requests().len(), 0, "`exit` was sent to the model");
    // At a terminal too.
    let workspace = crate::harness::TempDir::new("selfcheck");
    let mut terminal = crate::pty::Terminal::start(workspace.path(), &["--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("quit\r");
    terminal.wait_for("type /exit or press Ctrl+D");
    terminal.exit();
}

#[test]
fn counts_of_one_are_singular() {
    let limited = Test::new()
        .args(["--max-turns", "1", "-p", "loop"])
        .server(vec![call("list_files", json!({}))])
        .run();
    limited.expect_code(2).stderr_has("stopped after 1 model call (the turn limit)");
    let wrote = Test::new()
        .args(["--allow-write", "-p", "write"])
        .server(vec![call("write_file", json!({"path": "one.txt", "content": "x"})), text("done")])
        .run();
    wrote.expect_code(0);
    assert!(wrote.tool_results()[0].ends_with("wrote 1 byte (+1 −0)"), "{:?}", wrote.tool_results());
    let status = Test::new().args(["-c", "--status"]).run_in(limited.workspace);
    assert!(
        !status.stdout.contains(" 1 turns") && status.stdout.contains("turns    1 ("),
        "{}",
        status.stdout
    );
}

#[test]
fn sessions_refuses_a_symlinked_session_directory() {
    let elsewhere = Test::new().args(["--demo", "-p", "list the files"]).run();
    let workspace = crate::harness::TempDir::new("selfcheck");
    std::os::unix::fs::symlink(elsewhere.root().join(".mini_agent"), workspace.path().join(".mini_agent"))
        .expect("a symlink");
    let run = Test::new().args(["sessions"]).run_in(workspace);
    run.expect_code(1).stderr_has("is a symlink");
    assert_eq!(run.stdout, "", "nothing of the other directory is listed");
}

#[test]
fn the_json_session_event_names_the_endpoint() {
    let run = Test::new().args(["--demo", "--json", "-p", "list the files"]).run();
    run.expect_code(0);
    let first = &events(&run)[0];
    assert_eq!(
        (first["type"].as_str(), first["endpoint"].as_str(), first["api"].as_str()),
        (Some("session"), Some("demo"), Some("openai"))
    );
}
