//! Chapter 12 — the question: what a person sees before a call runs, and the rules of the answer.
//!
//! A permission is worth what the question that grants it shows. `edit_file wants to change
//! six.py` asks for trust without showing what is trusted, so the question shows the thing
//! itself: the whole command, or the change a write or an edit would make, as a diff with line
//! numbers (in colour at a terminal), worked out by chapter 3 from the file as it is when the
//! question is asked. Everything the model or the file wrote passes chapter 4's sanitiser first.
//! What is too long to show whole is shown as head and tail, and `y` or `a` waits until `v` has
//! shown the rest: nothing is approved unseen.
//!
//! Programs get the same question as one line and a unified diff ([`Question::headline`],
//! [`Question::diff`]): `--json`'s `approval` event, and the service's approvals.

use crate::ch02_loop::ToolCall;
use crate::ch03_tools::diff::{Diff, Mark, Row};
use crate::ch04_terminal::question_open;
use crate::ch04_terminal::ready::{Ready, read_when_ready};
use crate::ch04_terminal::sanitize::{sanitize, sanitize_command};
use crate::ch12_permissions::{Answer, Prompter, Question};
use crate::text::{head_and_tail, plural};
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};

// ANCHOR: headline
impl Question<'_> {
    /// The question in one line, safe to print: `edit_file wants to change six.py (+1 −1)`,
    /// `bash wants to run: cargo test (sandbox: workspace, no network)`. A change that cannot
    /// be shown says why after it; a command, where it would run.
    pub fn headline(&self) -> String {
        match &self.runs_in {
            Some(runs_in) => format!("{} ({})", self.subject(), sanitize_command(runs_in)),
            None => self.subject(),
        }
    }

    /// The headline without where the call runs (the terminal says that above the choices).
    fn subject(&self) -> String {
        let Some(change) = &self.change else { return call_line(self.call) };
        let stat = change.diff.as_ref().map(|diff| format!(" ({})", diff.stat())).unwrap_or_default();
        let note =
            change.note.as_deref().map(|note| format!("; {}", sanitize_command(note))).unwrap_or_default();
        let (tool, path) = (sanitize_command(&self.call.name), sanitize_command(&change.path));
        format!("{tool} wants to {} {path}{stat}{note}", change.verb)
    }

    /// The change as `diff -u` writes it, for programs; `None` when the call changes no file
    /// (or the change cannot be shown).
    pub fn diff(&self) -> Option<String> {
        let change = self.change.as_ref()?;
        Some(change.diff.as_ref()?.unified(&change.path, change.verb == "create"))
    }
}

/// A call that changes no file, in one line: the command, or the tool and its arguments.
fn call_line(call: &ToolCall) -> String {
    let arguments: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    match (call.name.as_str(), arguments["command"].as_str()) {
        ("bash", Some(command)) => format!("bash wants to run: {}", sanitize_command(command)),
        (name, _) => {
            format!("{} wants to run with {}", sanitize_command(name), sanitize_command(&call.arguments))
        }
    }
}
// ANCHOR_END: headline

// ANCHOR: describe
/// Longer than this, a command is shown as head and tail, with the count of what is hidden.
const SHOW_WHOLE_UP_TO: usize = 2_000;
const HEAD_CHARS: usize = 1_200;
const TAIL_CHARS: usize = 600;
/// A change of more rows than this is shown as its first and its last rows.
const DIFF_WHOLE_UP_TO: usize = 60;
const DIFF_HEAD_ROWS: usize = 40;
const DIFF_TAIL_ROWS: usize = 12;

/// What the question shows: `text` (whole, or head and tail), `whole` for `v`, and what `text`
/// hides (`2,400 characters`, `143 lines`), if anything.
struct Described {
    text: String,
    whole: String,
    hidden: Option<String>,
}

/// The command, or the change as rows of a diff under its headline.
fn describe(question: &Question, colour: bool) -> Described {
    let headline = question.subject();
    let diff = question.change.as_ref().and_then(|change| change.diff.as_ref());
    let Some(diff) = diff else { return head_and_tail_of(headline) };
    let rows = diff_rows(diff, colour);
    if rows.is_empty() {
        let text = format!("{headline}: no line would change");
        return Described { text: text.clone(), whole: text, hidden: None };
    }
    let whole = format!("{headline}:\n{}", rows.join("\n"));
    if rows.len() <= DIFF_WHOLE_UP_TO {
        return Described { text: whole.clone(), whole, hidden: None };
    }
    let hidden = plural(rows.len() - DIFF_HEAD_ROWS - DIFF_TAIL_ROWS, "line");
    let gap = paint(colour, DIM, &format!("       ⋮ {hidden} not shown; answer v to see them"));
    let (head, tail) = (&rows[..DIFF_HEAD_ROWS], &rows[rows.len() - DIFF_TAIL_ROWS..]);
    let text = format!("{headline}:\n{}\n{gap}\n{}", head.join("\n"), tail.join("\n"));
    Described { text, whole, hidden: Some(hidden) }
}

/// A command longer than [`SHOW_WHOLE_UP_TO`] characters, as its head and tail.
fn head_and_tail_of(whole: String) -> Described {
    let Some((head, hidden, tail)) = head_and_tail(&whole, SHOW_WHOLE_UP_TO, HEAD_CHARS, TAIL_CHARS) else {
        return Described { text: whole.clone(), whole, hidden: None };
    };
    let text = format!("{head}\n[… {hidden} characters hidden; answer v to see them …]\n{tail}");
    Described { text, whole, hidden: Some(plural(hidden, "character")) }
}
// ANCHOR_END: describe

// ANCHOR: diff_rows
const RED: &str = "31";
const GREEN: &str = "32";
const DIM: &str = "2";

/// One line per row of the diff: the line's number in the file (in the old file for a removed
/// line), `-` or `+`, and the text made safe to print; removed lines red and added ones green at
/// a terminal. A hunk that does not start the file opens with `⋮`, and rows the diff did not
/// keep are one line that says how many.
fn diff_rows(diff: &Diff, colour: bool) -> Vec<String> {
    let row = |row: &Row| match row {
        Row::Hunk { old_start, new_start, .. } => {
            (*old_start > 1 || *new_start > 1).then(|| paint(colour, DIM, "       ⋮"))
        }
        Row::Line { mark, number, text, cut, no_newline } => {
            let (sign, style) = match mark {
                Mark::Same => (' ', None),
                Mark::Removed => ('-', Some(RED)),
                Mark::Added => ('+', Some(GREEN)),
            };
            let mut line = format!("{sign} {}", shown_text(text));
            line.push_str(if *cut { "… [line cut]" } else { "" });
            line.push_str(if *no_newline { " [no newline at the end]" } else { "" });
            let line = style.map_or_else(|| line.clone(), |style| paint(colour, style, &line));
            Some(format!("{} {line}", paint(colour, DIM, &format!("{number:>6}"))))
        }
    };
    let mut rows: Vec<String> = diff.head.iter().filter_map(row).collect();
    if diff.hidden > 0 {
        let note =
            format!("       ⋮ {} of this change not kept: too long to show", plural(diff.hidden, "line"));
        rows.push(paint(colour, DIM, &note));
    }
    rows.extend(diff.tail.iter().filter_map(row));
    rows
}
// ANCHOR_END: diff_rows

// ANCHOR: shown_text

/// A run of blanks at least this long is shown as a count (indentation is shorter).
const BLANK_RUN: usize = 40;

/// A line of a file as the question shows it: control and invisible characters made visible
/// (chapter 4), and a run of blanks long enough to push the rest of the line out of sight
/// shown as `[400 blanks]`.
fn shown_text(text: &str) -> String {
    let text = sanitize(text);
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        let count = run.chars().count();
        if count >= BLANK_RUN {
            out.push_str(&format!("[{count} blanks]"))
        } else {
            out.push_str(run)
        }
        run.clear();
    };
    for c in text.chars() {
        if c == ' ' || c == '\t' {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// `text` in a terminal style, or as it is without colour.
fn paint(colour: bool, style: &str, text: &str) -> String {
    if colour { format!("\x1b[{style}m{text}\x1b[0m") } else { text.to_string() }
}

/// Whether a question on a terminal may use colour: not with `NO_COLOR` set, nor on a dumb terminal.
pub fn colour_wanted(terminal: bool) -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    let dumb = std::env::var_os("TERM").is_some_and(|term| term == "dumb");
    terminal && !no_color && !dumb
}
// ANCHOR_END: shown_text

// ANCHOR: terminal_prompter
/// Asks on a terminal: one line describing the call, then `y` / `a` / `n`, and after `n` an
/// optional reason. Reads from any line source, so tests can script it; `open_tty` uses
/// /dev/tty, which works even when stdin is a pipe.
pub struct TerminalPrompter {
    input: Box<dyn BufRead + Send>,
    output: Box<dyn Write + Send>,
    /// The terminal's descriptor, when `input` is /dev/tty: waited on with `poll`, so that
    /// Ctrl+C, SIGTERM or SIGHUP ends the wait (a blocking read would just be retried).
    tty: Option<i32>,
    /// Whether the diff of a change is shown in colour.
    colour: bool,
}

impl TerminalPrompter {
    pub fn new(input: Box<dyn BufRead + Send>, output: Box<dyn Write + Send>) -> TerminalPrompter {
        TerminalPrompter { input, output, tty: None, colour: false }
    }

    /// The controlling terminal, or `None` when there is none (CI, daemons, `setsid`).
    pub fn open_tty() -> Option<TerminalPrompter> {
        let reader: File = OpenOptions::new().read(true).open("/dev/tty").ok()?;
        let writer: File = OpenOptions::new().write(true).open("/dev/tty").ok()?;
        let tty = Some(std::os::fd::AsRawFd::as_raw_fd(&reader));
        Some(TerminalPrompter {
            tty,
            colour: colour_wanted(true),
            ..TerminalPrompter::new(Box::new(BufReader::new(reader)), Box::new(writer))
        })
    }

    // ANCHOR_END: terminal_prompter
    /// One line read, trimmed; `None` at end of input or on error, or when the user (Ctrl+C)
    /// or a signal (SIGTERM, SIGHUP) stopped the turn while it waited: a denial, after which
    /// the loop records the interruption.
    fn read_line(&mut self) -> Option<String> {
        if let Some(fd) = self.tty {
            return read_terminal_line(fd);
        }
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim().to_string()),
        }
    }

    fn say(&mut self, text: &str) {
        let _ = self.output.write_all(text.as_bytes());
        let _ = self.output.flush();
    }
}

// ANCHOR: read_terminal_line

/// Reads one line from the terminal `fd` (canonical mode: `poll` says readable once a whole
/// line is there), checking the interrupt flag every 50 ms while nothing is typed.
fn read_terminal_line(fd: i32) -> Option<String> {
    let mut line = Vec::new();
    let mut buffer = [0u8; 1024];
    loop {
        match read_when_ready(fd, &mut buffer, crate::ch02_loop::interrupted) {
            Ready::Bytes(count) => {
                line.extend_from_slice(&buffer[..count]);
                if line.ends_with(b"\n") {
                    break;
                }
            }
            Ready::End { .. } if !line.is_empty() => break,
            Ready::End { .. } | Ready::Stopped | Ready::Failed => return None,
        }
    }
    Some(String::from_utf8_lossy(&line).trim().to_string())
}
// ANCHOR_END: read_terminal_line

// ANCHOR: ask
impl Prompter for TerminalPrompter {
    fn ask(&mut self, question: &Question) -> Answer {
        self.say("\n");
        let colour = self.colour;
        let answer = ask_with(question, colour, |question| {
            question_open(true);
            self.say(question);
            self.read_line()
        });
        question_open(false);
        answer
    }
}

// ANCHOR_END: ask
// ANCHOR: ask_with
/// The question and its rules, whatever the line source: `ask` shows a question and returns
/// the next line typed, or `None` when nobody can answer (Ctrl+D, no terminal), which is a
/// denial. `n` may carry the reason on the same line (`n use cargo check`). A command or a
/// change too long to show whole is shown as head and tail, and `y`/`a` are refused until `v`
/// has shown all of it: nothing is approved unseen.
pub fn ask_with(question: &Question, colour: bool, mut ask: impl FnMut(&str) -> Option<String>) -> Answer {
    let shown = describe(question, colour);
    let mut viewed = shown.hidden.is_none();
    let view = if viewed { "" } else { "  [v] view all" };
    // Where a command would run (chapter 20's sandbox), above the choices.
    let runs_in =
        question.runs_in.as_deref().map_or(String::new(), |words| format!("({})\n", sanitize_command(words)));
    let allow =
        format!("{runs_in}allow? [y] once  [a] all {} this session  [n] no{view}: ", question.needed.scope);
    let mut asking = format!("{}\n{allow}", shown.text);
    loop {
        let Some(answer) = ask(&asking) else {
            return Answer::Deny("no answer from the terminal".into());
        };
        let answer = answer.trim();
        let (word, reason) = answer.split_once(char::is_whitespace).unwrap_or((answer, ""));
        match (word.to_lowercase().as_str(), reason.trim()) {
            ("y" | "yes" | "a" | "always", "") if !viewed => {
                let hidden = shown.hidden.as_deref().unwrap_or_default();
                asking =
                    format!("{hidden} of this call not shown yet: answer v to see all of it first\n{allow}");
            }
            ("y" | "yes", "") => return Answer::Once,
            ("a" | "always", "") => return Answer::Always,
            ("n" | "no", "") => {
                return Answer::Deny(
                    ask("reason for the model (optional, Enter to skip): ").unwrap_or_default(),
                );
            }
            ("n" | "no", reason) => return Answer::Deny(reason.to_string()),
            ("v" | "view", "") => {
                viewed = true;
                asking = format!("{}\n{allow}", shown.whole);
            }
            _ => {
                let or_view = if viewed { "" } else { "; v shows all of it" };
                asking = format!("please answer y, a or n (n may be followed by a reason){or_view}\n{allow}")
            }
        }
    }
}
// ANCHOR_END: ask_with

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ch02_loop::ToolCall;
    use crate::ch03_tools::Workspace;
    use crate::ch12_permissions::{Permission, SHELL, WRITE};
    use crate::temp_dir::TempDir;
    use std::io::Cursor;
    use std::sync::{Arc, Mutex};

    /// Output that the test can read after the prompter wrote to it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn terminal(input: &str) -> (TerminalPrompter, Shared) {
        let screen = Shared::default();
        let prompter =
            TerminalPrompter::new(Box::new(Cursor::new(input.to_string())), Box::new(screen.clone()));
        (prompter, screen)
    }

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall { id: "1".into(), name: name.into(), arguments: arguments.into() }
    }

    /// The question about a call that changes no file.
    fn about(call: &ToolCall, needed: Permission) -> Question<'_> {
        Question { call, needed, change: None, runs_in: None }
    }

    /// The question about a write or an edit in `workspace`, with the change worked out.
    fn about_change<'a>(workspace: &Workspace, call: &'a ToolCall) -> Question<'a> {
        Question { call, needed: WRITE, change: workspace.proposed_change(call), runs_in: None }
    }

    #[test]
    fn the_terminal_prompt_reads_y_a_n_and_a_reason() {
        let bash = call("bash", r#"{"command":"rm -rf build"}"#);
        let (mut prompter, screen) = terminal("maybe\ny\n");
        assert_eq!(prompter.ask(&about(&bash, SHELL)), Answer::Once);
        assert!(screen.text().contains("bash wants to run: rm -rf build"));
        assert!(screen.text().contains("please answer y, a or n"));
        let (mut prompter, _) = terminal("n keep the build dir\n");
        assert_eq!(prompter.ask(&about(&bash, SHELL)), Answer::Deny("keep the build dir".into()));
        let (mut prompter, _) = terminal("A\n");
        assert_eq!(prompter.ask(&about(&bash, SHELL)), Answer::Always);
        let (mut prompter, _) = terminal("n\nkeep the build dir\n");
        assert_eq!(prompter.ask(&about(&bash, SHELL)), Answer::Deny("keep the build dir".into()));
        let (mut prompter, _) = terminal("");
        assert_eq!(prompter.ask(&about(&bash, SHELL)), Answer::Deny("no answer from the terminal".into()));
        // Where the command would run (chapter 20's sandbox) is said above the choices, and in
        // the one line programs get.
        let sandboxed =
            Question { runs_in: Some("sandbox: workspace, no network".into()), ..about(&bash, SHELL) };
        let (mut prompter, screen) = terminal("y\n");
        prompter.ask(&sandboxed);
        let shown = screen.text();
        assert!(shown.contains("rm -rf build\n(sandbox: workspace, no network)\nallow? [y] once"), "{shown}");
        assert_eq!(sandboxed.headline(), "bash wants to run: rm -rf build (sandbox: workspace, no network)");
    }

    #[test]
    fn nothing_is_approved_unseen() {
        let hidden = format!("echo {}; touch X; {}", "a".repeat(2_000), "b".repeat(2_000));
        let long = call("bash", &serde_json::json!({ "command": hidden }).to_string());
        let (mut prompter, screen) = terminal("y\na\nv\ny\n");
        assert_eq!(prompter.ask(&about(&long, SHELL)), Answer::Once);
        let shown = screen.text();
        let (before, after) = shown.split_once("[v] view all").unwrap();
        assert!(!before.contains("touch X") && before.contains("characters hidden; answer v"), "{before}");
        let refusal = "characters of this call not shown yet: answer v to see all of it first";
        assert_eq!(after.matches(refusal).count(), 2, "{after}");
        assert!(after.contains(&hidden), "v shows the whole command");
        let rewritten = call("bash", r#"{"command":"rm -rf ~\r\u001b[2Kls"}"#);
        let (mut prompter, screen) = terminal("");
        assert_eq!(
            prompter.ask(&about(&rewritten, SHELL)),
            Answer::Deny("no answer from the terminal".into())
        );
        assert!(screen.text().contains("bash wants to run: rm -rf ~\\r\\x1b[2Kls"), "{}", screen.text());
    }

    #[test]
    fn an_edit_is_shown_as_its_diff_with_line_numbers() {
        let root = TempDir::new("question");
        std::fs::write(root.join("six.py"), "def six():\n    return 5\n").unwrap();
        let workspace = Workspace::new(root.path()).unwrap();
        let edit = call("edit_file", r#"{"path":"six.py","old_string":"return 5","new_string":"return 6"}"#);
        let question = about_change(&workspace, &edit);
        let (mut prompter, screen) = terminal("y\n");
        assert_eq!(prompter.ask(&question), Answer::Once);
        let expected = "edit_file wants to change six.py (+1 −1):\n     1   def six():\n     2 -     return 5\n     2 +     return 6\nallow? [y] once  [a] all file writes this session  [n] no: ";
        assert_eq!(screen.text(), format!("\n{expected}"));
        // At a terminal that wants colour: removed red, added green, numbers dim.
        let shown = describe(&question, true).text;
        assert!(shown.contains("\x1b[2m     2\x1b[0m \x1b[31m-     return 5\x1b[0m"), "{shown:?}");
        assert!(shown.contains("\x1b[32m+     return 6\x1b[0m"), "{shown:?}");
        // Programs get the same question as one line and a unified diff.
        assert_eq!(question.headline(), "edit_file wants to change six.py (+1 −1)");
        assert_eq!(
            question.diff().unwrap(),
            "--- a/six.py\n+++ b/six.py\n@@ -1,2 +1,2 @@\n def six():\n-    return 5\n+    return 6\n"
        );
        // An edit that will fail says so, with the tool's reason, and shows no diff.
        let missing = call("edit_file", r#"{"path":"six.py","old_string":"return 7","new_string":"x"}"#);
        let failing = about_change(&workspace, &missing);
        assert!(
            failing.headline().starts_with(
                "edit_file wants to change six.py; the call will fail: old_string was not found"
            ),
            "{}",
            failing.headline()
        );
        assert_eq!(failing.diff(), None);
    }

    #[test]
    fn a_long_write_shows_head_and_tail_and_waits_for_v() {
        let root = TempDir::new("question");
        let workspace = Workspace::new(root.path()).unwrap();
        let content: String = (1..=200).map(|n| format!("line {n}\n")).collect();
        let write =
            call("write_file", &serde_json::json!({"path": "long.txt", "content": content}).to_string());
        let question = about_change(&workspace, &write);
        assert_eq!(question.headline(), "write_file wants to create long.txt (+200 −0)");
        assert!(
            question
                .diff()
                .unwrap()
                .starts_with("--- /dev/null\n+++ b/long.txt\n@@ -0,0 +1,200 @@\n+line 1\n")
        );
        let (mut prompter, screen) = terminal("y\nv\ny\n");
        assert_eq!(prompter.ask(&question), Answer::Once);
        let shown = screen.text();
        let (first, rest) = shown.split_once("[v] view all: ").unwrap();
        assert!(
            first.contains(
                "    40 + line 40\n       ⋮ 148 lines not shown; answer v to see them\n   189 + line 189\n"
            ),
            "{first}"
        );
        assert!(!first.contains("line 100\n"), "{first}");
        assert!(
            rest.starts_with("148 lines of this call not shown yet: answer v to see all of it first"),
            "{rest}"
        );
        assert!(rest.contains("   100 + line 100\n"), "v shows every line: {rest}");
    }

    #[test]
    fn a_line_of_the_file_cannot_redraw_the_question_or_hide_its_end() {
        let root = TempDir::new("question");
        let workspace = Workspace::new(root.path()).unwrap();
        let content = format!("ok\r\x1b[2Kfine\nharmless{}; rm -rf ~\n\tindented  twice\n", " ".repeat(300));
        let write = call("write_file", &serde_json::json!({"path": "a.sh", "content": content}).to_string());
        let shown = describe(&about_change(&workspace, &write), false).text;
        assert!(shown.contains("     1 + ok\\r\\x1b[2Kfine\n"), "{shown}");
        assert!(shown.contains("     2 + harmless[300 blanks]; rm -rf ~\n"), "{shown}");
        assert!(shown.contains("     3 + \tindented  twice"), "{shown}");
        assert!(!shown.contains('\r') && !shown.contains('\x1b'), "{shown:?}");
    }
}
