//! The spinner shares the terminal with the person (issue 22, item 10), seen on a real
//! pseudo-terminal: the time a tool has run starts when it really starts (after its permission
//! question), a window made narrower gets frames that fit it, and text typed while a tool runs
//! stays readable after the status instead of wrapping under the next frame.

use crate::harness::{TempDir, call, text};
use crate::pty::Terminal;
use mini_agent::scripted_server::ScriptedServer;
use serde_json::json;
use std::time::{Duration, Instant};

/// A command that runs until the test creates `go` in the workspace.
const WAIT_FOR_GO: &str = "while [ ! -e go ]; do sleep 0.05; done";

/// The frames drawn after `from` in the terminal's output: each `\r`-separated piece that
/// starts with a spinner glyph, its escape codes removed.
fn frames(screen: &str) -> Vec<String> {
    screen
        .split(['\r', '\n'])
        .map(without_escapes)
        .filter(|piece| piece.starts_with(['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']))
        .collect()
}

fn without_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        // ESC 7, ESC 8, or ESC [ … final byte.
        if chars.next_if_eq(&'[').is_some() {
            chars.by_ref().find(|c| ('@'..='~').contains(c));
        } else {
            chars.next();
        }
    }
    out
}

/// The seconds a frame shows (`⠋ bash … 12.3s …`).
fn seconds(frame: &str) -> f64 {
    let at = frame.find("s ").map_or(frame.len(), |at| at);
    let before = &frame[..at];
    let number = before.rsplit(' ').next().unwrap_or_default();
    number.parse().unwrap_or_else(|_| panic!("no time in {frame:?}"))
}

/// `sleep 6` after ten seconds of thinking about the question showed 16.6 s: the question's
/// time was counted as the tool's. Whatever the first frame after the answer shows, it cannot
/// be more than the time since the answer was typed (the tool started after it): that holds
/// on any machine, however slow, and fails whenever the question's time is counted.
#[test]
fn a_tools_time_starts_after_its_permission_question() {
    let server =
        ScriptedServer::scripted(vec![call("bash", json!({ "command": WAIT_FOR_GO })), text("done")])
            .expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--base-url", &server.url]);
    terminal.wait_for("> ");
    terminal.type_keys("wait\r");
    terminal.wait_for("allow?");
    // A person takes a moment to read the command.
    std::thread::sleep(Duration::from_millis(1500));
    let answered = Instant::now();
    terminal.type_keys("y\r");
    terminal.wait_for("y\r\n");
    let shown_at = terminal.wait_for("s ");
    let upper_bound = shown_at.duration_since(answered).as_secs_f64() + 0.05;
    let screen = terminal.screen();
    let frame =
        frames(&screen[screen.rfind("y\r\n").expect("the answer")..]).into_iter().next().expect("a frame");
    std::fs::write(workspace.path().join("go"), "").expect("let the command end");
    terminal.wait_for("done");
    terminal.exit();
    assert!(seconds(&frame) <= upper_bound, "{frame:?} shown {upper_bound:.2} s after the answer");
}

/// A frame padded to the old width wrapped into two rows when the window was made narrower,
/// and the first stayed on the screen; and text typed during a tool was echoed at column 99,
/// after a status padded to the whole width, and wrapped at once under the next frame.
#[test]
fn frames_fit_a_resized_window_and_typed_text_stays_on_the_status_row() {
    let server =
        ScriptedServer::scripted(vec![call("bash", json!({ "command": WAIT_FOR_GO })), text("done")])
            .expect("server");
    let workspace = TempDir::new("selfcheck");
    let mut terminal = Terminal::start(workspace.path(), &["--allow-shell", "--base-url", &server.url]);
    terminal.resize(100, 30);
    terminal.wait_for("> ");
    terminal.type_keys("wait\r");
    terminal.wait_for("s ");
    let wide = frames(&terminal.screen()).pop().expect("a frame");
    // The status takes at most two thirds of the row, not all of it: typed text has room, and
    // starts at a column of its own (`ESC[nG`), after the status.
    assert!(wide.trim_end().chars().count() <= 66, "{wide:?}");
    let screen = terminal.screen();
    let column = screen.rsplit("\x1b[").find_map(|piece| piece.split_once('G')?.0.parse::<usize>().ok());
    assert!(column.is_some_and(|column| column <= 67), "typing starts at column {column:?}");
    // Line wrapping is off while the spinner draws: typed text past the edge stays on its row.
    assert!(terminal.screen().contains("\x1b[?7l"), "wrapping left on");
    terminal.type_keys("a line typed while it runs\r");
    terminal.wait_for("G↳");
    terminal.resize(30, 30);
    let narrowed = terminal.screen().len();
    // Frames drawn a little later, at the new width.
    terminal.wait_for("s ");
    terminal.wait_for("s ");
    let after: Vec<String> = frames(&terminal.screen()[narrowed..]);
    assert!(!after.is_empty());
    for frame in &after {
        assert!(frame.chars().count() <= 29, "wider than the window: {frame:?}");
    }
    std::fs::write(workspace.path().join("go"), "").expect("let the command end");
    terminal.wait_for("✓ bash");
    terminal.wait_for("done");
    let screen = terminal.exit();
    let tool_done = screen.rfind("✓ bash").expect("the finished tool");
    assert!(
        screen[..tool_done].rfind("\x1b[?7h") > screen[..tool_done].rfind("\x1b[?7l"),
        "wrapping restored"
    );
    assert!(screen.contains("sending with the next request: a line typed while it runs"), "{screen}");
}
