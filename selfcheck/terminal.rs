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
    terminal.wait_for("write_file wants to write 3 bytes to a.txt");
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
