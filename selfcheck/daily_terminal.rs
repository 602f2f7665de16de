//! A daily driver at the terminal (issue 11, items 6–9), typed on a real pseudo-terminal as
//! a person would: Ctrl+C and Ctrl+D at the prompt, a tool that takes its time, Markdown in
//! every place an answer is shown, the permission question answered in one line.

use crate::harness::{TempDir, Test, call, messages, text};
use crate::pty::Terminal;
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};

fn stream(lines: &[&str]) -> Step {
    let chunks = lines
        .iter()
        .map(|piece| json!({"choices": [{"index": 0, "delta": {"content": piece}}]}).to_string())
        .collect();
    Step::Stream { chunks, delay_ms: 30, finish: true }
}

fn user_messages(request: &Value) -> Vec<String> {
    messages(request)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

// Item 6 ----------------------------------------------------------------------------------

#[test]
fn ctrl_c_on_a_half_typed_line_clears_the_line_and_stays() {
    let server = ScriptedServer::scripted(vec![text("the real answer")]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start_with_term(workspace.path(), &["--base-url", &server.url], "xterm");
    terminal.wait_for("> ");
    terminal.type_keys("half typed, thought better of it");
    terminal.wait_for("better of it");
    terminal.type_keys("\x03");
    terminal.wait_for("> ");
    terminal.type_keys("the real question\r");
    terminal.wait_for("the real answer");
    terminal.wait_for("> ");
    terminal.exit();
    assert_eq!(user_messages(&server.requests()[0]), ["the real question"]);
}

#[test]
fn ctrl_c_or_ctrl_d_on_an_empty_prompt_leaves_and_the_first_time_says_how_to_continue() {
    let workspace = TempDir::new("selfcheck");
    let hint = "mini-agent -c";
    let mut first = Terminal::start_with_term(workspace.path(), &["--demo"], "xterm");
    first.wait_for("> ");
    first.type_keys("\x03");
    let (code, screen) = first.wait_exit();
    assert_eq!(code, Some(0), "{screen}");
    assert_eq!(screen.matches(hint).count(), 1, "{screen}");
    for key in ["\x04", "\x03"] {
        let mut again = Terminal::start_with_term(workspace.path(), &["--demo"], "xterm");
        again.wait_for("> ");
        again.type_keys(key);
        let (code, screen) = again.wait_exit();
        assert_eq!(code, Some(0), "{screen}");
        assert!(!screen.contains(hint), "said once per workspace, not at every exit: {screen}");
    }
    assert!(workspace.path().join(".mini_agent").is_dir());
}

// Item 7 ----------------------------------------------------------------------------------

#[test]
fn a_running_tool_shows_its_name_the_time_and_its_last_line_of_output() {
    // Each line stays until the test has seen its frame (a file lets the command go on), so a
    // loaded machine cannot skip one; the second comes at least a second in.
    let command = "echo step-one; until [ -e next ]; do sleep 0.02; done; sleep 1; echo step-two; \
                   until [ -e release ]; do sleep 0.02; done";
    let server = ScriptedServer::scripted(vec![call("bash", json!({ "command": command })), text("built")])
        .expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--allow-shell", "--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("build it\r");
    terminal.wait_for("s step-one");
    std::fs::write(workspace.path().join("next"), "").expect("let the command go on");
    terminal.wait_for("s step-two");
    std::fs::write(workspace.path().join("release"), "").expect("release the command");
    terminal.wait_for("✓ bash echo step-one");
    terminal.wait_for("built");
    let screen = terminal.exit();
    // A frame: spinner, the tool and its command, the seconds it has run, the last line.
    let frame =
        screen.split(['\r', '\n']).find(|line| line.contains("s step-two")).expect("a frame").to_string();
    // What runs shares the status with the output line (two thirds of the row at most, the
    // rest is for what the person types meanwhile).
    assert!(frame.contains("bash echo step-one;"), "{frame:?}");
    let seconds = frame.split("s step-two").next().unwrap_or("").rsplit(' ').next().unwrap_or("");
    assert!(seconds.parse::<f64>().is_ok_and(|s| s >= 1.0), "{frame:?}");

    // Nothing of it in a pipe: stderr gets the finished tool line only.
    let piped = Test::new()
        .args(["--allow-shell", "-p", "build it"])
        .server(vec![call("bash", json!({"command": "echo step-one; sleep 0.6"})), text("built")])
        .run();
    piped.expect_code(0);
    assert!(!piped.stderr.contains("step-one\n") && !piped.stderr.contains('\x1b'), "{:?}", piped.stderr);
}

// Item 8 ----------------------------------------------------------------------------------

#[test]
fn a_streamed_answer_is_rendered_as_markdown_a_line_at_a_time() {
    let reply = stream(&[
        "# Plan\n\nSome **bold** ",
        "words and `code`.\n\n| file | lines |\n|---|--:|\n| a.rs | 10 |\n",
        "| main.rs | 2048 |\n\n> a quoted line\n\n```sh\n",
        "cargo test\n```\nlast-line",
    ]);
    let server = ScriptedServer::scripted(vec![reply]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--stream", "--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("plan it\r");
    terminal.wait_for("last-line");
    terminal.wait_for("> ");
    let screen = terminal.exit();
    let answer = &screen[screen.find("# Plan").expect("the heading")..];
    assert!(answer.contains("Some bold words and `code`."), "{answer:?}");
    assert!(
        answer.contains("file    │ lines\r\n────────┼──────\r\na.rs    │    10\r\nmain.rs │  2048"),
        "{answer:?}"
    );
    assert!(answer.contains("│ a quoted line") && !answer.contains("> a quoted"), "{answer:?}");
    assert!(answer.contains("  cargo test\r\n") && !answer.contains("```"), "{answer:?}");
}

#[test]
fn a_long_streamed_line_shows_its_rows_as_they_fill() {
    let words: Vec<String> = (1..=40).map(|n| format!("word{n} ")).chain(["THE-END\n".to_string()]).collect();
    let pieces: Vec<&str> = words.iter().map(String::as_str).collect();
    // 150 ms between words: the end comes 5 s after the first row is full, far longer than
    // the test can take to look at the screen on a loaded machine (60 ms left it 2 s).
    let mut slow = stream(&pieces);
    if let Step::Stream { delay_ms, .. } = &mut slow {
        *delay_ms = 150;
    }
    let server = ScriptedServer::scripted(vec![slow]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--stream", "--base-url", &server.url]);
    terminal.resize(40, 24);
    terminal.wait_for("> ");
    terminal.type_keys("talk\r");
    terminal.wait_for("word5 ");
    assert!(!terminal.screen().contains("THE-END"), "a full row was shown before the line ended");
    terminal.wait_for("THE-END");
    terminal.wait_for("> ");
    let screen = terminal.exit();
    let rows: Vec<&str> = screen
        .split("\r\n")
        .filter_map(|row| row.rsplit("\x1b[2K").next())
        .filter(|row| row.contains("word"))
        .collect();
    assert!(rows.len() >= 6 && rows.iter().all(|row| row.chars().count() <= 40), "{rows:#?}");
}

#[test]
fn the_last_exchange_shown_on_resume_is_rendered() {
    let answer = "| a | b |\n|---|---|\n| 1 | 2 |\n\n> not the prompt";
    let server = ScriptedServer::scripted(vec![text(answer)]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let first = crate::harness::agent_command(workspace.path())
        .args(["--base-url", &server.url, "-p", "make a table"])
        .output()
        .expect("run -p");
    assert_eq!(String::from_utf8_lossy(&first.stdout), format!("{answer}\n"), "a pipe gets it unchanged");
    let mut terminal = Terminal::start(workspace.path(), &["-c", "--base-url", &server.url]);
    terminal.wait_for("> make a table");
    terminal.wait_for("│ not the prompt");
    terminal.wait_for("> ");
    let screen = terminal.exit();
    assert!(screen.contains("a │ b\r\n──┼──\r\n1 │ 2"), "{screen:?}");
    assert!(!screen.contains("> not the prompt"), "{screen:?}");
}

#[test]
fn answers_wrap_at_the_terminal_width_and_rewrap_after_a_resize() {
    let paragraph = "Wrapping keeps every word whole: extraordinarily long words like \
                     incomprehensibilities move to the next line instead of breaking in two, \
                     and the next answer follows the window's new width after a resize.";
    let server = ScriptedServer::scripted(vec![text(paragraph), text(paragraph)]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--base-url", &server.url]);
    terminal.resize(40, 24);
    terminal.wait_for("> ");
    terminal.type_keys("narrow\r");
    terminal.wait_for("resize.");
    terminal.wait_for("> ");
    terminal.resize(70, 24);
    terminal.type_keys("wide\r");
    terminal.wait_for("resize.");
    terminal.wait_for("> ");
    let screen = terminal.exit();
    let answers: Vec<&str> = screen.split("> ").filter(|part| part.contains("Wrapping keeps")).collect();
    assert_eq!(answers.len(), 2, "{screen:?}");
    // What each row shows in the end: a carriage return and an erase (the spinner's, shown when
    // a loaded machine makes the reply take a moment) leave only what follows them.
    let shown = |row: &str| row.rsplit('\r').next().unwrap_or_default().replace("\u{1b}[2K", "");
    for (answer, width) in answers.iter().zip([40, 70]) {
        let rows: Vec<String> = answer.split("\r\n").map(shown).collect();
        let lines: Vec<&str> = rows.iter().map(String::as_str).filter(|line| line.contains(' ')).collect();
        let longest = lines.iter().map(|line| line.chars().count()).max().unwrap_or(0);
        assert!(longest <= width && longest > width - 15, "width {width}: {lines:#?}");
        let words: Vec<&str> = lines.iter().flat_map(|line| line.split(' ')).collect();
        assert!(words.contains(&"incomprehensibilities"), "a word was broken: {lines:#?}");
    }
}

// Item 9 ----------------------------------------------------------------------------------

#[test]
fn the_question_takes_a_reason_on_its_line_and_ctrl_d_is_a_denial() {
    let server = ScriptedServer::scripted(vec![
        call("bash", json!({"command": "rm -rf tests"})),
        text("understood"),
        call("bash", json!({"command": "touch nope"})),
        text("denied again"),
    ])
    .expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("clean up\r");
    terminal.wait_for("[n] no: ");
    terminal.type_keys("n do not touch the tests\r");
    terminal.wait_for("understood");
    terminal.type_keys("try again\r");
    terminal.wait_for("[n] no: ");
    terminal.type_keys("\x04");
    terminal.wait_for("denied again");
    terminal.wait_for("> ");
    let screen = terminal.exit();
    assert!(!screen.contains("reason for the model"), "the reason was on the answer's line: {screen}");
    assert!(!workspace.path().join("nope").exists());
    let requests = server.requests();
    let result = |index: usize| messages(&requests[index]).last().expect("a tool result")["content"].clone();
    assert_eq!(
        result(1),
        "denied: the user did not allow this bash call. Their reason: do not touch the tests"
    );
    assert_eq!(
        result(3),
        "denied: the user did not allow this bash call. Their reason: no answer from the terminal"
    );
}

#[test]
fn no_blank_line_comes_before_a_follow_up_question() {
    let server =
        ScriptedServer::scripted(vec![call("bash", json!({"command": "make"})), text("ok")]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("build\r");
    terminal.wait_for("[n] no: ");
    terminal.type_keys("maybe\r");
    terminal.wait_for("[n] no: ");
    terminal.type_keys("n\r");
    terminal.wait_for("reason for the model");
    terminal.type_keys("\r");
    terminal.wait_for("ok");
    let screen = terminal.exit();
    assert!(screen.contains("no: maybe\r\nplease answer"), "{screen:?}");
    assert!(screen.contains("no: n\r\nreason for the model"), "{screen:?}");
}

#[test]
fn lines_typed_during_a_turn_go_into_the_history() {
    let server = ScriptedServer::scripted(vec![
        call("bash", json!({"command": "until [ -e go.flag ]; do sleep 0.02; done"})),
        text("noted"),
    ])
    .expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--allow-shell", "--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("wait for the flag\r");
    terminal.wait_for("→ bash");
    terminal.type_line_and_wait_until_read("typed while it ran");
    std::fs::write(workspace.path().join("go.flag"), "").expect("release the command");
    terminal.wait_for("noted");
    terminal.wait_for("> ");
    terminal.exit();
    assert_eq!(user_messages(&server.requests()[1]), ["wait for the flag", "typed while it ran"]);
    let history = std::fs::read_to_string(workspace.path().join(".mini_agent/history")).expect("history");
    assert!(history.lines().any(|line| line == "typed while it ran"), "{history}");
}
