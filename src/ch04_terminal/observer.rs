//! Showing what happens: [`Screen`] is the one place output goes, and [`TerminalObserver`]
//! draws the loop's events on it — the answer, tool lines, the spinner, notices.

use super::markdown::{Look, render_markdown};
use super::sanitize::{sanitize, sanitize_command};
use super::spinner::{Spinner, TOOL_LINE_OPEN};
use super::type_ahead::*;
use crate::ch02_loop::{Error, Event, Observer, ToolCall, ToolOutput, ToolStatus, describe_call};
use crate::text::first_line;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Where output goes and how it looks. Cloning shares the writers.
#[derive(Clone)]
pub struct Screen {
    out: Arc<Mutex<Box<dyn Write + Send>>>,
    err: Arc<Mutex<Box<dyn Write + Send>>>,
    /// How answers on stdout look: raw for a pipe, laid out on a terminal, styled with colour.
    pub look: Look,
    /// stderr is a terminal: draw the spinner, rewrite status lines in place.
    pub live: bool,
    /// Show tool arguments and results.
    pub verbose: bool,
}

impl Screen {
    /// `color` styles answers; without it they are printed as the model wrote them.
    pub fn new(out: Box<dyn Write + Send>, err: Box<dyn Write + Send>, color: bool, live: bool) -> Screen {
        let look = if color { Look::Color } else { Look::Raw };
        Screen { out: Arc::new(Mutex::new(out)), err: Arc::new(Mutex::new(err)), look, live, verbose: false }
    }

    /// This screen with stdout silenced: in `-p` mode progress is drawn on stderr, and stdout
    /// receives the final answer alone, once, when the turn has ended.
    pub fn stderr_only(&self) -> Screen {
        let mut screen =
            Screen::new(Box::new(std::io::sink()), Box::new(std::io::stderr()), false, self.live);
        screen.verbose = self.verbose;
        screen
    }

    /// The real stdout and stderr; colour only on a terminal without `NO_COLOR`, and what the
    /// model wrote unchanged only when stdout is not a terminal.
    pub fn stdio(verbose: bool) -> Screen {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        let dumb = std::env::var_os("TERM").is_some_and(|term| term == "dumb");
        let terminal = std::io::stdout().is_terminal();
        let live = std::io::stderr().is_terminal();
        let mut screen = Screen::new(
            Box::new(std::io::stdout()),
            Box::new(std::io::stderr()),
            terminal && !no_color && !dumb,
            live,
        );
        if terminal && screen.look == Look::Raw {
            screen.look = Look::Plain;
        }
        screen.verbose = verbose;
        screen
    }

    /// Writes to stdout (answers). A closed pipe is not worth an error here.
    pub fn print(&self, text: &str) {
        write_to(&self.out, text);
    }

    /// Writes to stderr (status, tool lines, notices).
    pub fn status(&self, text: &str) {
        write_to(&self.err, text);
    }
}

pub(super) fn write_to(sink: &Mutex<Box<dyn Write + Send>>, text: &str) {
    let mut writer = sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let _ = writer.write_all(text.as_bytes());
    let _ = writer.flush();
}

/// Draws a turn: spinner while waiting, the rendered answer on stdout, one line per
/// tool call on stderr. It also hands the loop the lines typed meanwhile.
pub struct TerminalObserver {
    screen: Screen,
    type_ahead: Option<TypeAhead>,
    spinner: Option<Spinner>,
    waiting_for_model: bool,
}

impl TerminalObserver {
    /// `type_ahead` is the REPL's queue; `None` for `-p`.
    pub fn new(screen: Screen, type_ahead: Option<TypeAhead>) -> TerminalObserver {
        TerminalObserver { screen, type_ahead, spinner: None, waiting_for_model: false }
    }

    /// Where it draws.
    pub fn screen(&self) -> &Screen {
        &self.screen
    }

    /// Stops the spinner, for something else to be drawn (chapter 11's streamed text).
    pub fn stop_spinner(&mut self) {
        self.spinner = None;
    }

    fn spin(&mut self, label: &str) {
        if self.screen.live {
            self.spinner = Some(Spinner::start(&self.screen, label.to_string(), None));
        }
    }

    /// A notice between the other lines: `warning: …`, `partial: …`.
    fn notice(&mut self, kind: &str, text: &str) {
        self.spinner = None;
        self.screen.status(&format!("{kind}: {}\n", sanitize(text)));
        if self.waiting_for_model {
            self.spin("thinking…");
        }
    }

    fn tool_line(&self, call: &ToolCall, output: Option<&ToolOutput>) -> String {
        // Short enough not to wrap, so a live line can be rewritten in place.
        let summary = first_line(&sanitize_command(&describe_call(call)), 72);
        let Some(output) = output else { return format!("→ {summary}") };
        let (mark, word) = match output.status {
            ToolStatus::Ok => ("✓", ""),
            ToolStatus::Error => ("✗", ""),
            ToolStatus::Denied => ("⊘", " denied"),
            ToolStatus::Interrupted => ("✗", " interrupted"),
            ToolStatus::NotRun => ("·", " not run"),
            ToolStatus::Unknown => ("?", " unknown outcome"),
        };
        let mut line = format!("{mark} {summary}{word}");
        // A write or an edit says how much it changed: `✓ edit_file six.py  +1 −1` (chapter 3).
        let changes_a_file = matches!(call.name.as_str(), "write_file" | "edit_file");
        if let Some(stat) = crate::ch03_tools::change_stat(&output.content).filter(|_| changes_a_file) {
            line.push_str(&format!("  {stat}"));
        }
        if output.status == ToolStatus::Error && !self.screen.verbose {
            line.push_str(&format!(" — {}", first_line(&sanitize(&output.content), 100)));
        }
        line
    }
}

impl Observer for TerminalObserver {
    // ANCHOR: event
    fn event(&mut self, event: Event) -> Result<(), Error> {
        match event {
            Event::Request { .. } => {
                self.waiting_for_model = true;
                self.spin("thinking…");
            }
            Event::Reply(reply) => {
                self.waiting_for_model = false;
                self.spinner = None;
                match reply.content.as_deref() {
                    None => {}
                    Some(text) if text.trim().is_empty() => {}
                    Some(text) => self.screen.print(&render_markdown(text, self.screen.look)),
                }
            }
            Event::Warning(text) => self.notice("warning", text),
            // A later chapter's notice: its line, between the others (a retry, a compaction).
            Event::Notice(notice) => {
                // Cut to the width only where there is one: a log keeps a line whole.
                let width = self.screen.live.then(super::markdown::terminal_width);
                if let Some(line) = notice.line(width) {
                    self.spinner = None;
                    self.screen.status(&format!("{}\n", sanitize(&line)));
                    if self.waiting_for_model {
                        self.spin(notice.spinner());
                    }
                }
            }
            Event::ToolStarted(call) => {
                self.spinner = None;
                if self.screen.live {
                    let line = self.tool_line(call, None);
                    self.screen.status(&line);
                    TOOL_LINE_OPEN.store(true, Ordering::SeqCst);
                    // The same line, with the time it has run (and for bash the last line of
                    // output), redrawn in place until the tool finishes.
                    let detail = (call.name == "bash")
                        .then_some(crate::ch03_tools::progress::last_line as fn() -> String);
                    let label = line.trim_start_matches("→ ").to_string();
                    self.spinner = Some(Spinner::start(&self.screen, label, detail));
                }
            }
            Event::ToolFinished(call, output) => {
                self.spinner = None;
                TOOL_LINE_OPEN.store(false, Ordering::SeqCst);
                let clear = if self.screen.live { "\r\x1b[2K" } else { "" };
                self.screen.status(&format!("{clear}{}\n", self.tool_line(call, Some(output))));
                if self.screen.verbose {
                    self.screen.status(&indented(&sanitize(&format!("arguments: {}", call.arguments)), 40));
                    self.screen.status(&indented(&sanitize(&output.content), 40));
                }
            }
            Event::Message(_) => {} // the reply, the tool lines and the notices show it all
        }
        Ok(())
    }
    // ANCHOR_END: event

    // ANCHOR: observer_queued
    fn queued_input(&mut self) -> Vec<String> {
        let lines = self.type_ahead.as_ref().map(TypeAhead::take_messages).unwrap_or_default();
        for line in &lines {
            self.screen
                .status(&format!("↳ sending with the next request: {}\n", first_line(&sanitize(line), 100)));
        }
        lines
    }
}
// ANCHOR_END: observer_queued

pub(super) fn indented(text: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: String = lines.iter().take(max_lines).map(|line| format!("    {line}\n")).collect();
    if lines.len() > max_lines {
        out.push_str(&format!("    … {} more lines\n", lines.len() - max_lines));
    }
    out
}
