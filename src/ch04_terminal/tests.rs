//! Tests of the terminal chapter's commands, type-ahead, observer and REPL.

use super::*;
use super::{commands::*, line_reader::*, observer::*, type_ahead::*};
use crate::ch02_loop::{Error, Event, Notice, Observer, Outcome, Reply, ToolCall, ToolOutput, ToolStatus};
use std::collections::VecDeque;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The table of a host with `/new`, and a command of a later chapter with an argument.
const COMMANDS: &[SlashCommand] = &[
    NEW,
    SlashCommand { chapter: 10, name: "resume", argument: "<id>", help: "switch to a session" },
    SlashCommand { chapter: 7, name: "stats", argument: "", help: "the session's figures" },
];

fn host(name: &'static str, argument: &str) -> Option<Result<Command, String>> {
    Some(Ok(Command::Host(HostCommand { name, argument: argument.into() })))
}

#[test]
fn commands_parse_and_unknown_ones_get_a_hint() {
    assert_eq!(parse_command("/help", COMMANDS), Some(Ok(Command::Help)));
    assert_eq!(parse_command("  /exit ", COMMANDS), Some(Ok(Command::Exit)));
    assert_eq!(parse_command("/new", COMMANDS), host("new", ""));
    assert_eq!(parse_command("/foo bar", COMMANDS), Some(Err("unknown command /foo; type /help".into())));
    assert_eq!(parse_command("fix the /help page", COMMANDS), None);
    assert_eq!(parse_command("/usr/bin/env is missing", COMMANDS), None);
    // Only the host's table counts: a command no chapter of this state registered is unknown.
    assert_eq!(parse_command("/stats", &[NEW]), Some(Err("unknown command /stats; type /help".into())));
}

#[test]
fn a_registered_command_parses_with_its_argument() {
    assert_eq!(parse_command("/stats", COMMANDS), host("stats", ""));
    assert_eq!(parse_command("/resume  2026112 ", COMMANDS), host("resume", "2026112"));
    assert_eq!(
        parse_command("/resume", COMMANDS),
        Some(Err("usage: /resume <id>: switch to a session".into()))
    );
    assert_eq!(
        help(COMMANDS).lines().take(4).collect::<Vec<_>>(),
        [
            "/help          this list",
            "/new           start a new conversation",
            "/resume <id>   switch to a session",
            "/stats         the session's figures"
        ]
    );
}

/// Waits for another thread; a generous bound turns a hang into a failure.
fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn type_ahead_reads_whole_lines_and_answers_questions() {
    use std::os::fd::AsRawFd;
    let (reader, mut writer) = std::io::pipe().unwrap();
    let type_ahead = TypeAhead::default();
    let running = type_ahead.start_reading(reader.as_raw_fd());
    writer.write_all("first\n/stats\n中文 second\n".as_bytes()).unwrap();
    wait_until("three lines are queued", || type_ahead.lock().lines.len() == 3);
    let asker = type_ahead.clone();
    let answer = std::thread::spawn(move || asker.ask(""));
    wait_until("the question is asked", || type_ahead.lock().asking);
    // The next line answers the question instead of joining the queue.
    writer.write_all(b"y\nthird without newline").unwrap();
    assert_eq!(answer.join().unwrap(), Some("y".into()));
    drop(writer);
    wait_until("the reader sees the end", || running.thread.as_ref().is_some_and(|t| t.is_finished()));
    assert_eq!(type_ahead.take_messages(), ["first", "中文 second", "third without newline"]);
    assert_eq!(running.finish(), ["/stats"]);
    drop(reader);
}

#[test]
fn the_history_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let root = crate::temp_dir::TempDir::new("history");
    let path = root.join(".mini_agent").join("history");
    prepare_history_file(&path).unwrap();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(path.parent().unwrap()), mode(&path)), (0o700, 0o600));
}

/// A later chapter's notice, as chapter 8's retry reads: the terminal shows its line, made safe.
#[derive(Debug)]
struct Retried;

impl Notice for Retried {
    fn line(&self, _: Option<usize>) -> Option<String> {
        Some("retry 2 in 1.5s: 429 rate\x1b limited".into())
    }

    fn cleaned(&self, _: &dyn Fn(&str) -> String) -> Box<dyn Notice> {
        Box::new(Retried)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[test]
fn retries_notices_and_verbose_tool_output_go_to_stderr() {
    let (out, err) = (Captured::default(), Captured::default());
    let mut screen = Screen::new(Box::new(out.clone()), Box::new(err.clone()), false, false);
    screen.verbose = true;
    let mut observer = TerminalObserver::new(screen, None);
    observer.event(Event::Notice(&Retried)).unwrap();
    observer.event(Event::Warning("12 messages summarised")).unwrap();
    let call = ToolCall { id: "1".into(), name: "read_file".into(), arguments: r#"{"path":"a.rs"}"#.into() };
    let read = ToolOutput { content: "1 fn main() {}".into(), status: ToolStatus::Ok };
    observer.event(Event::ToolFinished(&call, &read)).unwrap();
    observer.event(Event::Reply(&Reply { content: Some("*done*".into()), ..Reply::default() })).unwrap();
    assert_eq!(out.text(), "*done*\n");
    let retried = "retry 2 in 1.5s: 429 rate\\x1b limited\n";
    assert_eq!(
        err.text(),
        format!(
            "{retried}warning: 12 messages summarised\n✓ read_file a.rs\n\
             \x20   arguments: {{\"path\":\"a.rs\"}}\n    1 fn main() {{}}\n"
        )
    );
}

/// A host that records what the REPL asked of it and answers from a script.
struct FakeHost {
    turns: Vec<String>,
    commands: Vec<HostCommand>,
    outcomes: VecDeque<Outcome>,
}

impl ReplHost for FakeHost {
    fn turn(&mut self, input: String, observer: &mut TerminalObserver) -> Outcome {
        self.turns.push(input);
        let outcome = self.outcomes.pop_front().unwrap_or(Outcome::Completed(String::new()));
        if let Outcome::Completed(text) = &outcome {
            let reply = Reply { content: Some(text.clone()), ..Reply::default() };
            observer.event(Event::Request { messages: 1 }).unwrap();
            observer.event(Event::Reply(&reply)).unwrap();
        }
        outcome
    }
    fn command(&mut self, command: HostCommand) -> Result<String, Error> {
        self.commands.push(command.clone());
        match command.name {
            "stats" => Ok("requests: 3".into()),
            "resume" => Err(Error::Config(format!("no session matches {}", command.argument))),
            _ => Ok(String::new()),
        }
    }
}

/// What a screen wrote, shared with the test (chapter 11's tests draw on it too).
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);
impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
impl Captured {
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// Runs the REPL over `script` as piped input; returns the host, stdout and stderr.
fn run_script(script: &str, outcomes: Vec<Outcome>) -> (FakeHost, String, String) {
    let (out, err) = (Captured::default(), Captured::default());
    let screen = Screen::new(Box::new(out.clone()), Box::new(err.clone()), false, false);
    let mut host = FakeHost { turns: vec![], commands: vec![], outcomes: outcomes.into() };
    let mut reader = LineReader::from_reader(Box::new(std::io::Cursor::new(script.to_string())));
    run_repl(&mut host, COMMANDS, &mut reader, &screen).unwrap();
    (host, out.text(), err.text())
}

#[test]
fn a_piped_script_runs_turns_and_new_in_order() {
    let (host, out, err) = run_script("hello\n/new\n/nope\nsecond\n", vec![]);
    assert_eq!(host.turns, ["hello", "second"]);
    assert_eq!(host.commands, [HostCommand { name: "new", argument: String::new() }]);
    assert_eq!(out, "");
    assert_eq!(err, "unknown command /nope; type /help\n");
}

#[test]
fn a_piped_script_runs_turns_and_commands_in_order() {
    let (host, out, err) = run_script(
        "hello\n\n/stats\n/resume 2026\n/nope\nsecond\n",
        vec![Outcome::Completed("# Hi\n".into()), Outcome::Failed(Error::Model("bad json".into()))],
    );
    assert_eq!(host.turns, ["hello", "second"]);
    let stats = HostCommand { name: "stats", argument: String::new() };
    assert_eq!(host.commands, [stats, HostCommand { name: "resume", argument: "2026".into() }]);
    assert_eq!(out, "# Hi\nrequests: 3\n");
    assert_eq!(
        err,
        "error: no session matches 2026\nunknown command /nope; type /help\n\
         error: unusable model reply: bad json\n"
    );
}

#[test]
fn exit_stops_the_repl_and_an_interrupted_turn_does_not() {
    let (host, _, err) =
        run_script("one\ntwo\n/exit\nnever\n", vec![Outcome::Interrupted, Outcome::TurnLimit]);
    assert_eq!(host.turns, ["one", "two"]);
    assert!(err.starts_with("interrupted\nstopped: the turn limit"), "{err}");
}

#[test]
fn the_observer_draws_tool_calls_and_hands_over_queued_lines() {
    let (out, err) = (Captured::default(), Captured::default());
    let screen = Screen::new(Box::new(out.clone()), Box::new(err.clone()), false, false);
    let type_ahead = TypeAhead::default();
    type_ahead.lock().lines.extend(["/stats".to_string(), "also this".to_string()]);
    let mut observer = TerminalObserver::new(screen, Some(type_ahead.clone()));
    assert_eq!(observer.queued_input(), ["also this"]);
    let call =
        ToolCall { id: "1".into(), name: "bash".into(), arguments: r#"{"command":"cargo test"}"#.into() };
    let failed = ToolOutput { content: "exit 101\nmore".into(), status: ToolStatus::Error };
    observer.event(Event::ToolStarted(&call)).unwrap();
    observer.event(Event::ToolFinished(&call, &failed)).unwrap();
    observer.event(Event::Reply(&Reply { content: Some("streamed".into()), ..Reply::default() })).unwrap();
    assert_eq!(out.text(), "streamed\n");
    assert_eq!(err.text(), "↳ sending with the next request: also this\n✗ bash cargo test — exit 101…\n");
    assert_eq!(type_ahead.take_all(), ["/stats"]);
    // A control character in a call is shown by the sanitiser, the one way it is shown
    // (chapter 2's describe_call once escaped it itself, as `\u{1b}`; `sanitize`'s `\x1b` won).
    let planted =
        ToolCall { id: "2".into(), name: "read_file".into(), arguments: r#"{"path":"a\u001b[2J"}"#.into() };
    observer.event(Event::ToolStarted(&planted)).unwrap();
    observer
        .event(Event::ToolFinished(&planted, &ToolOutput { content: "x".into(), status: ToolStatus::Ok }))
        .unwrap();
    assert!(err.text().ends_with("✓ read_file a\\x1b[2J\n"), "{:?}", err.text());
}
