//! The REPL on a real pseudo-terminal, typed as a person would: a permission question
//! during a turn is answered from the keyboard, `n` with a reason, `a` for the session.

use crate::harness::{TempDir, messages, text};
use crate::pty::Terminal;
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::json;

#[test]
fn permission_questions_are_answered_at_the_terminal() {
    let server = ScriptedServer::scripted(vec![
        Step::tool_calls(&[("write_file", &json!({"path": "a.txt", "content": "one"}).to_string())]),
        text("not written"),
        Step::tool_calls(&[("write_file", &json!({"path": "b.txt", "content": "two"}).to_string())]),
        text("written"),
        Step::tool_calls(&[("write_file", &json!({"path": "c.txt", "content": "three"}).to_string())]),
        text("written again"),
    ])
    .expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--base-url", &server.url]);

    terminal.wait_for("> ");
    terminal.type_keys("write a\r");
    terminal.wait_for("write_file wants to create a.txt (+1 −0):");
    terminal.wait_for("[n] no: ");
    terminal.type_keys("n\r");
    terminal.wait_for("reason for the model");
    terminal.type_keys("keep it empty\r");
    terminal.wait_for("not written");
    terminal.type_keys("write b\r");
    terminal.wait_for("[n] no: ");
    terminal.type_keys("a\r");
    terminal.wait_for("written");
    terminal.type_keys("write c\r");
    terminal.wait_for("written again");
    let shown = terminal.exit();

    assert_eq!(std::fs::read_to_string(workspace.path().join("a.txt")).ok(), None);
    assert_eq!(std::fs::read_to_string(workspace.path().join("b.txt")).ok().as_deref(), Some("two"));
    assert_eq!(std::fs::read_to_string(workspace.path().join("c.txt")).ok().as_deref(), Some("three"));
    let requests = server.requests();
    let denied = messages(&requests[1]).last().expect("a tool result")["content"].clone();
    assert_eq!(denied, "denied: the user did not allow this write_file call. Their reason: keep it empty");
    assert_eq!(requests.len(), 6, "c.txt was written without a second question");
    assert_eq!(shown.matches("allow? ").count(), 2, "{shown}");
    // What was typed at the prompt is remembered, privately; the answers to questions are not.
    let history = workspace.path().join(".mini_agent/history");
    let remembered = std::fs::read_to_string(&history).expect("a history file");
    assert!(remembered.contains("write a") && remembered.contains("write c"), "{remembered}");
    assert!(!remembered.lines().any(|line| line == "keep it empty"), "{remembered}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&history).expect("history").permissions().mode() & 0o777, 0o600);
}

/// Issue 22, item 1: a write or an edit is approved seeing the change, not a file name. The
/// edit is shown as a diff with line numbers, read from the file as it is when asked; a long
/// write as head and tail, `y` waiting until `v` has shown the rest; after each, the tool
/// line says how many lines were added and removed.
#[test]
fn an_edit_and_a_write_are_approved_seeing_their_diff() {
    let long: String = (1..=200).map(|n| format!("line {n}\n")).collect();
    let server = ScriptedServer::scripted(vec![
        Step::tool_calls(&[(
            "edit_file",
            &json!({"path": "six.py", "old_string": "return 5", "new_string": "return 6"}).to_string(),
        )]),
        text("fixed"),
        Step::tool_calls(&[("write_file", &json!({"path": "long.txt", "content": long}).to_string())]),
        text("written"),
    ])
    .expect("server");
    let workspace = TempDir::new("selfcheck");
    std::fs::write(workspace.path().join("six.py"), "def six():\n    return 5\n").unwrap();
    let mut terminal = Terminal::start(workspace.path(), &["--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("fix six\r");
    terminal.wait_for(
        "edit_file wants to change six.py (+1 −1):\r\n     1   def six():\r\n     2 -     return 5\r\n     2 +     return 6\r\nallow? [y] once  [a] all file writes this session  [n] no: ",
    );
    terminal.type_keys("y\r");
    terminal.wait_for("✓ edit_file six.py  +1 −1");
    terminal.wait_for("fixed");
    terminal.type_keys("write it\r");
    terminal.wait_for("write_file wants to create long.txt (+200 −0):\r\n     1 + line 1\r\n");
    terminal.wait_for(
        "    40 + line 40\r\n       ⋮ 148 lines not shown; answer v to see them\r\n   189 + line 189\r\n",
    );
    terminal.wait_for("[v] view all: ");
    terminal.type_keys("y\r");
    terminal.wait_for("148 lines of this call not shown yet: answer v to see all of it first");
    terminal.type_keys("v\r");
    terminal.wait_for("   100 + line 100\r\n");
    terminal.wait_for("[v] view all: ");
    terminal.type_keys("y\r");
    terminal.wait_for("✓ write_file long.txt  +200 −0");
    terminal.wait_for("written");
    terminal.exit();
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("six.py")).unwrap(),
        "def six():\n    return 6\n"
    );
    assert_eq!(std::fs::read_to_string(workspace.path().join("long.txt")).unwrap(), long);
}

/// On a terminal that takes colour, the removed lines are red and the added ones green; the
/// file's own bytes cannot redraw the question.
#[test]
fn the_diff_is_coloured_on_a_colour_terminal_and_made_safe_to_show() {
    let server = ScriptedServer::scripted(vec![
        Step::tool_calls(&[(
            "write_file",
            &json!({"path": "notes.txt", "content": "one\r\u{1b}[2Kzero\nthree\n"}).to_string(),
        )]),
        text("done"),
    ])
    .expect("server");
    let workspace = TempDir::new("selfcheck");
    std::fs::write(workspace.path().join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let env = [("TERM", "xterm-256color"), ("NO_COLOR", "")];
    let mut terminal =
        Terminal::start_with_env(workspace.path(), &["--base-url", &server.url, "-p", "edit"], &env);
    terminal.wait_for("write_file wants to replace notes.txt (+1 −2):");
    terminal.wait_for("\x1b[2m     1\x1b[0m \x1b[31m- one\x1b[0m");
    terminal.wait_for("\x1b[2m     1\x1b[0m \x1b[32m+ one\\r\\x1b[2Kzero\x1b[0m");
    terminal.wait_for("[n] no: ");
    terminal.type_keys("n\r");
    terminal.wait_for("reason for the model");
    terminal.type_keys("\r");
    terminal.wait_for("done");
    let (code, _) = terminal.wait_exit();
    assert_eq!(code, Some(0));
    assert_eq!(std::fs::read_to_string(workspace.path().join("notes.txt")).unwrap(), "one\ntwo\nthree\n");
}
