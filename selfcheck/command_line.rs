//! The command-line contract: help, usage errors, configuration, exit codes, stdout vs stderr.

use crate::harness::{Test, call, messages, text};
use serde_json::json;

#[test]
fn help_explains_usage_and_exits_zero() {
    let run = Test::new().args(["--help"]).run();
    run.expect_code(0);
    for must in ["USAGE", "--demo", "OPENAI_API_KEY", "EXIT CODES"] {
        assert!(run.stdout.contains(must), "help lacks {must}");
    }
    let version = Test::new().args(["-V"]).run();
    assert_eq!(version.stdout, format!("mini-agent {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn an_unknown_flag_fails_with_the_nearest_known_one() {
    let run = Test::new().args(["--alow-write", "-p", "x"]).run();
    run.expect_code(1);
    assert_eq!(run.stderr, "mini-agent: unknown flag --alow-write — did you mean --allow-write?\n");
    assert_eq!(run.stdout, "");
}

#[test]
fn command_line_slips_get_the_command_that_was_meant() {
    // Issue 22, item 7: the hint is the corrected command whole, never a half-quoted task.
    let slips: [(&[&str], &str); 5] = [
        (
            &["--demo", "-p", "list", "files"],
            "unexpected argument 'files' after -p's value — quote the whole value: \
             mini-agent --demo -p \"list files\"",
        ),
        (
            &["help"],
            "unknown command 'help' — did you mean: mini-agent --help? \
             (to run one task, write: mini-agent -p \"help\")",
        ),
        (
            &["task", "list"],
            "unknown command 'task' — did you mean: mini-agent tasks list? \
             (to run one task, write: mini-agent -p \"task list\")",
        ),
        (
            &["session"],
            "unknown command 'session' — did you mean: mini-agent sessions? \
             (to run one task, write: mini-agent -p \"session\")",
        ),
        (
            &["tasks", "add", "fix", "the", "bug"],
            "tasks add takes one NAME, and 'the' is a second word; quote it: tasks add \"fix the bug\"",
        ),
    ];
    for (words, message) in slips {
        let run = Test::new().args_vec(words.iter().map(|word| word.to_string()).collect()).run();
        run.expect_code(1);
        assert_eq!(run.stderr, format!("mini-agent: {message}\n"), "{words:?}");
        assert_eq!(run.stdout, "");
    }
    // Each suggestion does what it says.
    let meant = Test::new().args(["--demo", "-p", "list files"]).file("a.txt", "x").run();
    meant.expect_code(0).stderr_has("✓ list_files");
    Test::new().args(["tasks", "list"]).run().expect_code(0);
    Test::new().args(["sessions"]).run().expect_code(0);
}

#[test]
fn a_remote_endpoint_without_a_key_fails_before_any_request() {
    let run = Test::new().base_url("https://api.example.invalid/v1").args(["-p", "hi"]).run();
    run.expect_code(1).stderr_has("OPENAI_API_KEY is not set").stderr_has("--demo");
}

#[test]
fn the_final_answer_alone_goes_to_stdout() {
    let run = Test::new()
        .args(["-p", "list the files"])
        .file("a.txt", "x")
        .server(vec![call("list_files", json!({})), text("There is one file: a.txt")])
        .run();
    run.expect_code(0).stderr_has("✓ list_files");
    assert_eq!(run.stdout, "There is one file: a.txt\n");
    assert_eq!(run.requests.len(), 2);
}

#[test]
fn the_first_request_has_a_system_prompt_the_task_and_six_tools() {
    let run = Test::new().args(["-p", "hello", "--model", "m-test"]).server(vec![text("hi")]).run();
    run.expect_code(0);
    let request = &run.requests[0];
    assert_eq!(request["model"], "m-test");
    let roles: Vec<_> =
        messages(request).iter().map(|m| m["role"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(roles, ["system", "user"]);
    assert_eq!(messages(request)[1]["content"], "hello");
    let mut names: Vec<String> = request["tools"]
        .as_array()
        .expect("tools are sent")
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["bash", "edit_file", "list_files", "read_file", "search", "write_file"]);
}

#[test]
fn dash_p_dash_reads_the_prompt_from_stdin() {
    let run = Test::new().args(["-p", "-"]).stdin("summarise\nthis diff\n").server(vec![text("ok")]).run();
    run.expect_code(0);
    assert_eq!(messages(&run.requests[0])[1]["content"], "summarise\nthis diff\n");
    let empty = Test::new().args(["-p", "-"]).stdin("  \n").server(vec![text("unused")]).run();
    empty.expect_code(1).stderr_has("the prompt is empty");
    assert!(empty.requests.is_empty());
}

#[test]
fn the_model_env_var_and_base_url_env_var_are_used() {
    let server = mini_agent::scripted_server::ScriptedServer::scripted(vec![text("ok")]).expect("server");
    let run =
        Test::new().env("OPENAI_BASE_URL", &server.url).env("MODEL_ID", "from-env").args(["-p", "hi"]).run();
    run.expect_code(0);
    assert_eq!(server.requests()[0]["model"], "from-env");
}

#[test]
fn the_turn_limit_exits_2() {
    let steps = (0..5).map(|_| call("list_files", json!({}))).collect();
    let run = Test::new().args(["-p", "loop forever", "--max-turns", "3"]).server(steps).run();
    run.expect_code(2).stderr_has("--max-turns");
    assert_eq!(run.requests.len(), 3);
    assert_eq!(run.stdout, "");
}

#[test]
fn continuing_with_no_session_says_how_to_start_one() {
    let run = Test::new().args(["-c", "-p", "go on"]).server(vec![text("never sent")]).run();
    run.expect_code(1).stderr_has("no session to continue").stderr_has("start one without -c");
    assert!(run.requests.is_empty());
}

#[test]
fn writes_are_denied_without_allow_write_and_the_model_is_told_the_flag() {
    let run = Test::new()
        .args(["-p", "write it"])
        .server(vec![call("write_file", json!({"path": "x.txt", "content": "x"})), text("could not")])
        .run();
    run.expect_code(0);
    assert!(run.only_tool_result().contains("--allow-write"), "{}", run.only_tool_result());
    assert_eq!(run.read("x.txt"), None);
}

#[test]
fn shell_commands_are_denied_without_allow_shell() {
    let run = Test::new()
        .args(["-p", "run it", "--allow-write"])
        .server(vec![call("bash", json!({"command": "touch made-by-bash"})), text("could not")])
        .run();
    run.expect_code(0);
    assert!(run.only_tool_result().contains("--allow-shell"), "{}", run.only_tool_result());
    assert_eq!(run.read("made-by-bash"), None);
}

#[test]
fn the_demo_creates_hello_txt_offline() {
    let run = Test::new().args(["--demo", "--allow-write", "-p", "create hello.txt containing hello"]).run();
    run.expect_code(0).stderr_has("✓ write_file hello.txt");
    assert_eq!(run.read("hello.txt").as_deref().map(str::trim_end), Some("hello"));
    assert!(!run.stdout.trim().is_empty(), "the demo prints a summary");
}

#[test]
fn verbose_shows_arguments_and_results() {
    let run = Test::new()
        .args(["-p", "read", "-v"])
        .file("notes.txt", "first line of notes\n")
        .server(vec![call("read_file", json!({"path": "notes.txt"})), text("done")])
        .run();
    run.expect_code(0).stderr_has("\"path\":\"notes.txt\"").stderr_has("first line of notes");
    assert_eq!(run.stdout, "done\n");
}

#[test]
fn ctrl_c_while_waiting_for_the_model_exits_130() {
    let run = Test::new()
        .args(["-p", "x"])
        .server(vec![mini_agent::scripted_server::Step::Hang])
        .interrupt_after(1)
        .run();
    run.expect_code(130).stderr_has("interrupted");
    assert_eq!(run.stdout, "");
}

#[test]
fn ctrl_c_kills_a_running_shell_command_and_exits_130() {
    // Without the interrupt reaching the tool, `sleep 3600` would be a hang (the harness's guard).
    // Ctrl+C is pressed once the command has certainly started (it leaves a file), however
    // loaded the machine: a fixed delay could land before the tool ran and test nothing.
    let run = Test::new()
        .args(["-p", "x", "--allow-shell"])
        .server(vec![call("bash", json!({"command": "touch started; sleep 3600"})), text("unreachable")])
        .signal_when(|root| root.join("started").exists(), crate::harness::SIGINT)
        .run();
    run.expect_code(130).stderr_has("interrupted");
    let runs: Vec<_> = run.only_journal().into_iter().filter(|r| r["type"] == "tool_finished").collect();
    assert_eq!(runs.len(), 1, "the command ran: {runs:?}");
    assert_eq!(runs[0]["status"], "interrupted", "and was stopped: {runs:?}");
}

#[test]
fn a_closed_stdout_is_a_quiet_exit() {
    let run = Test::new().args(["-p", "x"]).server(vec![text("an answer nobody reads")]).close_stdout().run();
    run.expect_code(0);
    assert_eq!(run.stderr, "");
}

#[test]
fn root_selects_the_workspace_and_must_exist() {
    let run = Test::new()
        .args(["-p", "x", "--allow-write", "--root", "project"])
        .file("project/keep.txt", "")
        .server(vec![call("write_file", json!({"path": "made.txt", "content": "m"})), text("ok")])
        .run();
    run.expect_code(0);
    assert_eq!(run.read("project/made.txt").as_deref(), Some("m"));
    assert_eq!(run.read("made.txt"), None);

    let missing = Test::new().args(["-p", "x", "--root", "no-such-dir"]).server(vec![text("unused")]).run();
    missing.expect_code(1).stderr_has("no-such-dir").stderr_has("--root");
    assert!(missing.requests.is_empty());
}

#[test]
fn an_empty_final_answer_is_said_on_stderr_not_printed() {
    let run = Test::new().args(["-p", "x"]).server(vec![text("")]).run();
    run.expect_code(0).stderr_has("without a final answer");
    assert_eq!(run.stdout, "");
}

#[test]
fn agents_md_joins_the_system_prompt() {
    let run = Test::new()
        .args(["-p", "hi"])
        .file("AGENTS.md", "Run `make check` before you finish.\n")
        .server(vec![text("ok")])
        .run();
    run.expect_code(0);
    let system = messages(&run.requests[0])[0]["content"].as_str().unwrap_or_default().to_string();
    assert!(system.contains("Run `make check` before you finish."), "{system}");
}

#[test]
fn eval_runs_scenarios_and_fails_when_one_fails() {
    let scenario = |name: &str, exit: i32| {
        json!({
            "name": name,
            "runs": [{
                "args": ["-p", "say hello"],
                "steps": [{"text": "Hello."}],
                "expect": {"exit": exit, "requests": 1, "stdout_contains": ["Hello."]}
            }]
        })
        .to_string()
    };
    let passing =
        Test::new().args(["eval", "scenarios"]).file("scenarios/ok.json", &scenario("says_hello", 0)).run();
    passing.expect_code(0);
    assert!(passing.stdout.contains("says_hello"), "{}", passing.stdout);
    assert!(passing.stdout.contains("1/1"), "{}", passing.stdout);

    let failing = Test::new()
        .args(["eval", "scenarios"])
        .file("scenarios/ok.json", &scenario("says_hello", 0))
        .file("scenarios/wrong.json", &scenario("expects_a_failure", 1))
        .run();
    failing.expect_code(1);
    assert!(failing.stdout.contains("expects_a_failure"), "{}", failing.stdout);
    assert!(failing.stdout.contains("0/1"), "{}", failing.stdout);
}
