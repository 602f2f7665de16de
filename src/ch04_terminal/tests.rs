//! Tests of the terminal chapter's commands, type-ahead, observer and REPL.

use super::*;
use super::{commands::*, line_reader::*, observer::*, type_ahead::*};
use crate::ch02_loop::{Error, Event, Observer, Outcome, Reply, ToolCall, ToolOutput, ToolStatus};
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
            "/new           start a new session",
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

#[test]
fn retries_notices_and_verbose_tool_output_go_to_stderr() {
    let (out, err) = (Captured::default(), Captured::default());
    let mut screen = Screen::new(Box::new(out.clone()), Box::new(err.clone()), false, false);
    screen.verbose = true;
    let mut observer = TerminalObserver::new(screen, None);
    #[cfg(feature = "ch08")]
    observer.event(Event::Retry { attempt: 2, wait_ms: 1500, reason: "429 rate limited" }).unwrap();
    observer.event(Event::Warning("12 messages summarised")).unwrap();
    let call = ToolCall { id: "1".into(), name: "read_file".into(), arguments: r#"{"path":"a.rs"}"#.into() };
    let read = ToolOutput { content: "1 fn main() {}".into(), status: ToolStatus::Ok };
    observer.event(Event::ToolFinished(&call, &read)).unwrap();
    observer.event(Event::Reply(&Reply { content: Some("*done*".into()), ..Reply::default() })).unwrap();
    assert_eq!(out.text(), "*done*\n");
    let retried = if cfg!(feature = "ch08") { "retry 2 in 1.5s: 429 rate limited\n" } else { "" };
    assert_eq!(
        err.text(),
        format!(
            "{retried}warning: 12 messages summarised\n✓ read_file a.rs\n\
             \x20   arguments: {{\"path\":\"a.rs\"}}\n    1 fn main() {{}}\n"
        )
    );
}

/// Issue 22: retry lines were cut at 120 characters even in a log, where the whole reason is
/// what a person reads later; only a terminal's width cuts them.
#[cfg(feature = "ch08")]
#[test]
fn a_retry_line_is_cut_only_for_a_terminal() {
    let reason = format!("503 from the server: {}", "upstream connect error or disconnect ".repeat(8));
    let (out, err) = (Captured::default(), Captured::default());
    let mut observer =
        TerminalObserver::new(Screen::new(Box::new(out), Box::new(err.clone()), false, false), None);
    observer.event(Event::Retry { attempt: 1, wait_ms: 500, reason: &reason }).unwrap();
    assert_eq!(err.text(), format!("retry 1 in 0.5s: {}\n", reason.trim_end()));
}

/// Issue 22: with `--stream` and stdout piped, a reply cut at the size cap was printed twice:
/// once as it streamed, once more whole in the `partial:` notice. What was shown is not shown
/// again; the notice says it was cut.
#[cfg(feature = "ch11")]
#[test]
fn a_cut_stream_is_shown_once_and_said_to_be_cut() {
    for look in [Look::Raw, Look::Plain] {
        let (out, err) = (Captured::default(), Captured::default());
        let mut screen = Screen::new(Box::new(out.clone()), Box::new(err.clone()), false, false);
        screen.look = look;
        let mut observer = TerminalObserver::new(screen, None);
        observer.event(Event::Request { messages: 1 }).unwrap();
        observer.event(Event::TextDelta("first line\nsecond, cut")).unwrap();
        observer.event(Event::Partial("first line\nsecond, cut")).unwrap();
        assert_eq!(out.text(), "first line\nsecond, cut\n", "{look:?}");
        assert_eq!(
            err.text(),
            "partial: the reply above was cut off after 22 characters; it is not an answer\n",
            "{look:?}"
        );
    }
}

/// A host that records what the REPL asked of it and answers from a script.
struct FakeHost {
    turns: Vec<String>,
    commands: Vec<HostCommand>,
    outcomes: VecDeque<Outcome>,
}

impl ReplHost for FakeHost {
    fn turn(&mut self, input: String, observer: &mut dyn Observer) -> Outcome {
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

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);
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
    fn text(&self) -> String {
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
    #[cfg(feature = "ch11")]
    observer.event(Event::TextDelta("streamed")).unwrap();
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
