//! Chapter 4 — the terminal.
//!
//! The loop of chapter 1 does not know a person is watching. This chapter is everything
//! between that person and the loop: reading what they type, showing what happens, and
//! letting Ctrl+C stop a turn without killing the program. It plugs in at two places: a
//! [`TerminalObserver`] (an `Observer`) draws events, and [`run_repl`] drives turns through a
//! [`ReplHost`], a small trait that `main` implements with the pieces of later chapters.
//!
//! Who owns standard input, and when, is the design choice this file is about:
//!
//! * **At the idle prompt** rustyline owns the terminal (raw mode: arrow keys, history, wide
//!   characters). Ctrl+C and Ctrl+D arrive as keys, not signals: on an empty line they mean
//!   "leave", and Ctrl+C on a half-typed line clears it, as in a shell (`ch04_line_state`).
//! * **During a turn** rustyline is not running and the terminal is back in cooked mode, where
//!   the kernel edits the line and hands over only whole lines. A [`TypeAhead`] thread polls
//!   stdin (50 ms at a time, so it can be told to stop) and reads those whole lines into a
//!   queue; the observer hands them to the loop through `queued_input`, so they join the next
//!   model request. When the turn ends the thread is stopped and joined *before* rustyline
//!   starts again, so the two never read at the same time. A half-typed line is still in the
//!   kernel's buffer; rustyline switches to raw mode with `TCSADRAIN`, which keeps it, and the
//!   characters land in the new prompt: nothing is lost or mixed. Lines typed faster than
//!   rustyline returns (several Enters at once) stay in rustyline's own buffer, kept between
//!   calls by its `buffer-redux` feature, and become the next prompts' lines.
//! * **Ctrl+C during a turn** is a real SIGINT (cooked mode). The handler only stores to the
//!   atomic flag of chapter 1; the model client and the tools poll it. Another Ctrl+C when the
//!   first has gone unanswered for a second exits at once with 130: the escape hatch for a
//!   stuck turn (and, with piped input, the way out at the idle prompt).
//! * **Piped stdin** (not a terminal) is a script: one line, one turn, in order, with no
//!   type-ahead, so a piped run sends exactly what the same lines typed one by one would.

use crate::ch01_loop::{
    Error, Event, Observer, Outcome, ToolCall, ToolOutput, ToolStatus, describe_call, set_interrupted,
};
use crate::ch04_line_state::{Editor, LineState};
pub use crate::ch04_markdown::{Look, StreamRenderer, render_markdown};
use crate::ch04_sanitize::{sanitize, sanitize_command};
use crate::ch04_signals::{at_prompt, stop_signal};
pub use crate::ch04_spinner::question_open;
use crate::ch04_spinner::{QUESTION_OPEN, Spinner, TOOL_LINE_OPEN};
use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

// ANCHOR: commands
/// A slash command typed at the prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Exit,
    /// Commands that need the session, the model or the skills: the host runs them.
    Host(HostCommand),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostCommand {
    New,
    List,
    Resume(String),
    Skills,
    Compact,
    Stats,
}

pub const HELP: &str = "\
/help          this list
/new           start a new session
/list          list the sessions of this workspace
/resume <id>   switch to a session (id or unique prefix)
/skills        show AGENTS.md and the skills that were loaded, and how
/compact       replace older history with a summary
/stats         requests, tokens, tool calls and time of this session
/exit          leave (also Ctrl+C or Ctrl+D at the prompt)
During a turn: Ctrl+C stops it; lines you type are sent with the next model request.";

/// `None` when the line is a message, not a command. A path such as `/usr/bin/env is
/// missing` is a message: a command word has no second slash.
pub fn parse_command(line: &str) -> Option<Result<Command, String>> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    let (word, argument) = match rest.split_once(char::is_whitespace) {
        Some((word, argument)) => (word, argument.trim()),
        None => (rest, ""),
    };
    if word.contains('/') {
        return None;
    }
    let command = match word {
        "help" | "?" => Command::Help,
        "exit" | "quit" => Command::Exit,
        "new" => Command::Host(HostCommand::New),
        "list" => Command::Host(HostCommand::List),
        "resume" if argument.is_empty() => return Some(Err("usage: /resume <id> (see /list)".into())),
        "resume" => Command::Host(HostCommand::Resume(argument.to_string())),
        "skills" => Command::Host(HostCommand::Skills),
        "compact" => Command::Host(HostCommand::Compact),
        "stats" => Command::Host(HostCommand::Stats),
        _ => return Some(Err(format!("unknown command /{word}; type /help"))),
    };
    Some(Ok(command))
}
// ANCHOR_END: commands

// ANCHOR: interrupt_handler
mod sys {
    use std::ffi::{c_int, c_short, c_void};

    #[repr(C)]
    pub struct PollFd {
        pub fd: c_int,
        pub events: c_short,
        pub revents: c_short,
    }
    pub const POLLIN: c_short = 0x1;
    pub const POLLERR: c_short = 0x8;
    pub const POLLHUP: c_short = 0x10;
    pub const SIGINT: c_int = 2;
    #[cfg(target_os = "linux")]
    pub type Nfds = std::ffi::c_ulong;
    #[cfg(not(target_os = "linux"))]
    pub type Nfds = std::ffi::c_uint;

    unsafe extern "C" {
        pub fn signal(signum: c_int, handler: extern "C" fn(c_int)) -> usize;
        pub fn poll(fds: *mut PollFd, nfds: Nfds, timeout_ms: c_int) -> c_int;
        pub fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize;
        pub fn _exit(status: c_int) -> !;
    }
}

/// When the pending Ctrl+C was pressed, in milliseconds since the Unix epoch.
static FIRST_PRESS_MS: AtomicU64 = AtomicU64::new(0);
/// A turn normally stops well within this; a Ctrl+C still pending after it means a stuck turn.
const FORCE_QUIT_AFTER_MS: u64 = 1000;

/// Runs inside the signal: only async-signal-safe work (reading the clock, atomics, `_exit`).
extern "C" fn on_sigint(_signal: std::ffi::c_int) {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64);
    if !crate::ch01_loop::interrupted() {
        FIRST_PRESS_MS.store(now_ms, Ordering::SeqCst);
        set_interrupted(true);
    } else if now_ms.saturating_sub(FIRST_PRESS_MS.load(Ordering::SeqCst)) >= FORCE_QUIT_AFTER_MS {
        // Pressed again, and the turn has had its chance to stop: the user wants out now.
        // A quick double press does not land here, so it cannot cut a turn's last records.
        // SAFETY: _exit is async-signal-safe and takes no pointers.
        unsafe { sys::_exit(130) }
    }
}

/// Makes Ctrl+C set the interrupt flag instead of killing the process. Call once at start,
/// for the REPL and for `-p` alike (`-p` then exits 130 when its turn was interrupted).
pub fn install_interrupt_handler() {
    // SAFETY: the handler is a plain function that touches only an atomic and `_exit`.
    unsafe {
        sys::signal(sys::SIGINT, on_sigint);
    }
    crate::ch04_signals::install_stop_handlers();
}
// ANCHOR_END: interrupt_handler

// ANCHOR: type_ahead
/// Lines typed while a turn runs. Shared by the reader thread (which fills it), the
/// observer (which sends the lines with the next request) and [`TypeAhead::ask`] (which lets
/// a permission prompt take the next line instead).
#[derive(Clone, Default)]
pub struct TypeAhead {
    shared: Arc<(Mutex<Queue>, Condvar)>,
}

#[derive(Default)]
struct Queue {
    lines: VecDeque<String>,
    reading: bool,
    asking: bool,
    answer: Option<String>,
    /// Lines typed during the turn and sent with a request: they belong in the history.
    handed_over: Vec<String>,
    /// Ctrl+D was pressed on an empty line while a question was asked: no answer, a denial.
    declined: bool,
}

/// The running reader thread; [`TypeAheadReader::finish`] stops it and joins it.
pub struct TypeAheadReader {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    type_ahead: TypeAhead,
}

impl TypeAhead {
    /// Starts reading whole lines from `fd` (stdin is 0) until `finish`.
    pub fn start_reading(&self, fd: i32) -> TypeAheadReader {
        self.lock().reading = true;
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, queue) = (Arc::clone(&stop), self.clone());
        let thread = std::thread::spawn(move || queue.read_lines(fd, &flag));
        TypeAheadReader { stop, thread: Some(thread), type_ahead: self.clone() }
    }

    fn read_lines(&self, fd: i32, stop: &AtomicBool) {
        let mut pending = Vec::new();
        let mut buffer = [0u8; 4096];
        while !stop.load(Ordering::SeqCst) {
            let mut poll_fd = sys::PollFd { fd, events: sys::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd, and we say so.
            if unsafe { sys::poll(&mut poll_fd, 1, 50) } <= 0 {
                continue; // timeout, or EINTR from Ctrl+C
            }
            // SAFETY: the buffer is valid for its length. In cooked mode poll says "readable"
            // only once a whole line is there, so this read does not block.
            let count = unsafe { sys::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
            if count > 0 {
                pending.extend_from_slice(&buffer[..count as usize]);
                while let Some(end) = pending.iter().position(|&byte| byte == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    self.deliver(&line[..end]);
                }
            } else if count == 0 && poll_fd.revents & (sys::POLLHUP | sys::POLLERR) != 0 {
                break; // the terminal or pipe is gone
            } else if count < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break;
            }
            // count == 0 without hangup is Ctrl+D on an empty line: nothing to keep, but
            // the answer "no" to a question being asked.
            if count == 0 {
                self.decline();
            }
        }
        if !pending.is_empty() {
            self.deliver(&pending); // Ctrl+D in the middle of a line sent it without a newline
        }
    }

    fn decline(&self) {
        let mut queue = self.lock();
        if queue.asking && queue.answer.is_none() {
            queue.declined = true;
            self.shared.1.notify_all();
        }
    }

    fn deliver(&self, bytes: &[u8]) {
        let line = String::from_utf8_lossy(bytes).trim_end_matches('\r').to_string();
        let mut queue = self.lock();
        if queue.asking && queue.answer.is_none() {
            queue.answer = Some(line);
            self.shared.1.notify_all();
        } else if !line.trim().is_empty() {
            queue.lines.push_back(line);
        }
    }

    // ANCHOR_END: type_ahead
    /// The queued lines that are messages; slash commands stay queued for after the turn.
    pub fn take_messages(&self) -> Vec<String> {
        let mut queue = self.lock();
        let (messages, kept): (Vec<String>, Vec<String>) =
            queue.lines.drain(..).partition(|line| parse_command(line).is_none());
        queue.lines = kept.into();
        queue.handed_over.extend(messages.iter().cloned());
        messages
    }

    /// The lines sent with a request since the last call, for the history.
    pub fn take_handed_over(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().handed_over)
    }

    /// Everything still queued, in the order it was typed.
    pub fn take_all(&self) -> Vec<String> {
        self.lock().lines.drain(..).collect()
    }

    /// Asks a question on stderr and returns the next line typed (for a permission prompt
    /// during a turn). `None` when there is no terminal to ask, or Ctrl+C or Ctrl+D was pressed.
    pub fn ask(&self, question: &str) -> Option<String> {
        // On a terminal the tool line (`→ bash cargo test`) is still open: start a fresh line.
        // The tool line (`→ bash cargo test`) may still be open: end it, once. A follow-up question
        // (the reason after `n`) comes after the typed answer's newline: no blank line.
        let fresh_line = if TOOL_LINE_OPEN.swap(false, Ordering::SeqCst) { "\n" } else { "" };
        {
            let mut open = QUESTION_OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            *open = true;
            eprint!("{fresh_line}{question}");
            let _ = std::io::stderr().flush();
        }
        let answer = self.wait_for_answer();
        question_open(false);
        answer
    }

    fn wait_for_answer(&self) -> Option<String> {
        let mut queue = self.lock();
        if !queue.reading {
            drop(queue);
            return read_line_from_terminal();
        }
        queue.asking = true;
        queue.answer = None;
        queue.declined = false;
        while queue.answer.is_none() && !queue.declined && !crate::ch01_loop::interrupted() {
            queue = match self.shared.1.wait_timeout(queue, Duration::from_millis(50)) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        queue.asking = false;
        if queue.declined {
            eprintln!();
        }
        queue.answer.take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // A panic elsewhere while holding the lock leaves a usable queue of lines.
        self.shared.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl TypeAheadReader {
    /// Stops the thread, waits for it (at most one poll interval), and returns every line
    /// still queued: they become the next inputs.
    pub fn finish(mut self) -> Vec<String> {
        self.stop_thread();
        self.type_ahead.take_all()
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.type_ahead.lock().reading = false;
    }
}

impl Drop for TypeAheadReader {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

fn read_line_from_terminal() -> Option<String> {
    if !std::io::stdin().is_terminal() {
        return None;
    }
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
    }
}

// ANCHOR: line_reader
/// What the prompt returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Line(String),
    /// Ctrl+C at the prompt.
    Interrupted,
    /// Ctrl+D at the prompt, or the end of piped input.
    Eof,
}

/// Reads the user's lines: rustyline on a terminal, plain lines from a pipe.
pub struct LineReader {
    source: Source,
    type_ahead: TypeAhead,
}

enum Source {
    Editor { editor: Box<Editor>, history: Option<PathBuf> },
    Plain(Box<dyn BufRead + Send>),
}

impl LineReader {
    /// Standard input: a line editor with persistent history at `history` when it is a
    /// terminal, plain line reading otherwise.
    pub fn stdin(history: Option<&Path>) -> Result<LineReader, Error> {
        if !std::io::stdin().is_terminal() {
            return Ok(LineReader::from_reader(Box::new(std::io::BufReader::new(std::io::stdin()))));
        }
        let config = rustyline::Config::builder()
            .auto_add_history(false)
            .max_history_size(1000)
            .and_then(|builder| builder.history_ignore_dups(true))
            .map_err(|error| Error::Config(format!("line editor: {error}")))?
            .build();
        let mut editor = Editor::with_config(config)
            .map_err(|error| Error::Config(format!("cannot start the line editor: {error}")))?;
        editor.set_helper(Some(LineState::default()));
        if let Some(path) = history {
            prepare_history_file(path)?;
            // A damaged history file is not worth refusing to start over.
            let _ = editor.load_history(path);
        }
        Ok(LineReader {
            source: Source::Editor { editor: Box::new(editor), history: history.map(Path::to_path_buf) },
            type_ahead: TypeAhead::default(),
        })
    }

    // ANCHOR_END: line_reader
    /// Lines from any reader: piped stdin, or a script in tests.
    pub fn from_reader(reader: Box<dyn BufRead + Send>) -> LineReader {
        LineReader { source: Source::Plain(reader), type_ahead: TypeAhead::default() }
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self.source, Source::Editor { .. })
    }

    /// The queue of lines typed during a turn (use its `ask` for questions during a turn).
    pub fn type_ahead(&self) -> TypeAhead {
        self.type_ahead.clone()
    }

    /// Reads one line; `initial` is pre-filled text the user can edit (terminal only).
    pub fn read_line(&mut self, prompt: &str, initial: &str) -> Result<Input, Error> {
        match &mut self.source {
            Source::Editor { editor, .. } => {
                let mut initial = initial;
                let read = loop {
                    let read = if initial.is_empty() || editor_can_prefill() {
                        editor.readline_with_initial(prompt, (initial, ""))
                    } else {
                        // A terminal the editor cannot drive ignores pre-filled text: show it
                        // with the prompt and keep it in front of what is typed, never lose it.
                        editor
                            .readline(&format!("{prompt}{initial}"))
                            .map(|typed| format!("{initial}{typed}"))
                    };
                    let typed = editor.helper().is_some_and(LineState::take_typed) || !initial.is_empty();
                    match read {
                        // Ctrl+C on a half-typed line clears it, as in a shell: a fresh prompt.
                        Err(rustyline::error::ReadlineError::Interrupted) if typed => initial = "",
                        read => break read,
                    }
                };
                match read {
                    Ok(line) => {
                        self.remember(&line);
                        Ok(Input::Line(line))
                    }
                    Err(rustyline::error::ReadlineError::Interrupted) => Ok(Input::Interrupted),
                    Err(rustyline::error::ReadlineError::Eof) => Ok(Input::Eof),
                    Err(error) => Err(Error::io("reading the terminal", std::io::Error::other(error))),
                }
            }
            Source::Plain(reader) => {
                let mut bytes = Vec::new();
                match reader.read_until(b'\n', &mut bytes) {
                    Ok(0) => Ok(Input::Eof),
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&bytes);
                        Ok(Input::Line(line.trim_end_matches(['\n', '\r']).to_string()))
                    }
                    Err(error) => Err(Error::io("reading standard input", error)),
                }
            }
        }
    }
}

/// rustyline's own rule: on these terminals it reads plain lines and drops pre-filled text.
fn editor_can_prefill() -> bool {
    let term = std::env::var("TERM").unwrap_or_default();
    !["dumb", "cons25", "emacs"].iter().any(|plain| plain.eq_ignore_ascii_case(&term))
}

impl LineReader {
    /// Said once per workspace, the first time someone leaves with Ctrl+C or Ctrl+D: how to
    /// come back. A marker file next to the history remembers that it was said.
    fn first_exit_hint(&self) -> Option<&'static str> {
        let Source::Editor { history: Some(history), .. } = &self.source else { return None };
        let marker = history.with_file_name("exit-hint-shown");
        use std::os::unix::fs::OpenOptionsExt;
        // create_new: only the first exit creates it; a refused or failed create says nothing.
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(marker).ok()?;
        Some("to continue this session later: mini-agent -c (or -r <id>; /list shows them)")
    }

    /// Adds a line to the history (and its file), so arrow-up finds lines typed during a
    /// turn as well as those typed at the prompt.
    pub fn remember(&mut self, line: &str) {
        if let Source::Editor { editor, history } = &mut self.source
            && !line.trim().is_empty()
        {
            // Failing to save history is not worth interrupting the user.
            let _ = editor.add_history_entry(line);
            if let Some(path) = history {
                let _ = editor.append_history(path);
            }
        }
    }
}

/// The history holds what the user typed: private, like everything under `.mini_agent/`.
fn prepare_history_file(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|error| Error::io(format!("creating {}", parent.display()), error))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(|error| Error::io(format!("opening history {}", path.display()), error))
}

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

fn write_to(sink: &Mutex<Box<dyn Write + Send>>, text: &str) {
    let mut writer = sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let _ = writer.write_all(text.as_bytes());
    let _ = writer.flush();
}

/// Draws a turn: spinner while waiting, streamed or rendered text on stdout, one line per
/// tool call on stderr. It also hands the loop the lines typed meanwhile.
pub struct TerminalObserver {
    screen: Screen,
    type_ahead: Option<TypeAhead>,
    spinner: Option<Spinner>,
    waiting_for_model: bool,
    streamed: Option<char>,
    /// The streamed reply on a terminal, rendered a line at a time.
    stream: Option<StreamRenderer>,
}

impl TerminalObserver {
    /// `type_ahead` is the REPL's queue; `None` for `-p`.
    pub fn new(screen: Screen, type_ahead: Option<TypeAhead>) -> TerminalObserver {
        TerminalObserver {
            screen,
            type_ahead,
            spinner: None,
            waiting_for_model: false,
            streamed: None,
            stream: None,
        }
    }

    fn spin(&mut self, label: &str) {
        if self.screen.live {
            self.spinner = Some(Spinner::start(&self.screen, label.to_string(), None));
        }
    }

    fn tool_line(&self, call: &ToolCall, output: Option<&ToolOutput>) -> String {
        // Short enough not to wrap, so a live line can be rewritten in place.
        let summary = one_line(&sanitize_command(&describe_call(call)), 72);
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
        if output.status == ToolStatus::Error && !self.screen.verbose {
            line.push_str(&format!(" — {}", one_line(&sanitize(&output.content), 100)));
        }
        line
    }
}

// ANCHOR: observer
impl Observer for TerminalObserver {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        match event {
            Event::Request { .. } => {
                self.waiting_for_model = true;
                self.streamed = None;
                self.stream = None;
                self.spin("thinking…");
            }
            Event::TextDelta(text) => {
                if self.screen.look == Look::Raw {
                    self.spinner = None;
                    self.screen.print(text);
                    self.streamed = text.chars().last().or(self.streamed);
                } else {
                    // Rendered a complete line at a time; the spinner runs until the first.
                    let look = self.screen.look;
                    let lines = self.stream.get_or_insert_with(|| StreamRenderer::new(look)).push(text);
                    if !lines.is_empty() {
                        self.spinner = None;
                        self.screen.print(&lines);
                    }
                    self.streamed = Some('\n');
                }
            }
            Event::Reply(reply) => {
                self.waiting_for_model = false;
                self.spinner = None;
                if let Some(mut stream) = self.stream.take() {
                    self.screen.print(&stream.finish());
                }
                match (self.streamed, reply.content.as_deref()) {
                    (Some(last), _) if last != '\n' => self.screen.print("\n"),
                    (Some(_), _) | (None, None) => {}
                    (None, Some(text)) if text.trim().is_empty() => {}
                    (None, Some(text)) => self.screen.print(&render_markdown(text, self.screen.look)),
                }
            }
            Event::Message(_) => {}
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
            Event::Retry { attempt, wait_ms, reason } => {
                self.spinner = None;
                let seconds = wait_ms as f64 / 1000.0;
                self.screen.status(&format!(
                    "retry {attempt} in {seconds:.1}s: {}\n",
                    one_line(&sanitize(reason), 120)
                ));
                if self.waiting_for_model {
                    self.spin("retrying…");
                }
            }
            Event::Compaction { replaced, summarised, tokens_before, tokens_after, .. } => {
                self.spinner = None;
                let what = if summarised {
                    format!("{replaced} earlier messages summarised")
                } else {
                    "large old tool output elided".to_string()
                };
                self.screen.status(&format!(
                    "compaction: {what} to save context (about {tokens_before} → {tokens_after} tokens)\n"
                ));
                if self.waiting_for_model {
                    self.spin("thinking…");
                }
            }
            Event::Notice { kind, text } => {
                self.spinner = None;
                self.screen.status(&format!("{kind}: {}\n", sanitize(text)));
                if self.waiting_for_model {
                    self.spin("thinking…");
                }
            }
        }
        Ok(())
    }

    fn queued_input(&mut self) -> Vec<String> {
        let lines = self.type_ahead.as_ref().map(TypeAhead::take_messages).unwrap_or_default();
        for line in &lines {
            self.screen
                .status(&format!("↳ sending with the next request: {}\n", one_line(&sanitize(line), 100)));
        }
        lines
    }
}
// ANCHOR_END: observer

/// The argument a person recognises a call by: the command, the path or the pattern.
fn one_line(text: &str, max_chars: usize) -> String {
    let first = text.trim().lines().next().unwrap_or("");
    let more = text.trim().lines().nth(1).is_some();
    let mut line: String = first.chars().take(max_chars).collect();
    if more || first.chars().count() > max_chars {
        line.push('…');
    }
    line
}

fn indented(text: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: String = lines.iter().take(max_lines).map(|line| format!("    {line}\n")).collect();
    if lines.len() > max_lines {
        out.push_str(&format!("    … {} more lines\n", lines.len() - max_lines));
    }
    out
}

// ANCHOR: repl
/// What `main` provides to the REPL: running a turn and the commands that need a session.
pub trait ReplHost {
    /// Runs one user message to its end: append it to the history (and the session), then
    /// `run_turn` with `observer` (alone or fanned out with the journal).
    fn turn(&mut self, input: String, observer: &mut dyn Observer) -> Outcome;
    /// Runs a command and returns what to show (or an error to print; the REPL goes on).
    fn command(&mut self, command: HostCommand) -> Result<String, Error>;
}

/// The REPL: read a line, run it as a command or a turn, repeat until /exit, Ctrl+C or
/// Ctrl+D at the prompt, or the end of piped input.
pub fn run_repl(host: &mut dyn ReplHost, reader: &mut LineReader, screen: &Screen) -> Result<(), Error> {
    install_interrupt_handler();
    let mut next_inputs: VecDeque<String> = VecDeque::new();
    let mut carried_text = String::new();
    loop {
        let line = match next_inputs.pop_front() {
            Some(line) => {
                screen.status(&format!("> {line}\n"));
                reader.remember(&line);
                line
            }
            None => {
                // SIGTERM or SIGHUP at the prompt ends the REPL at once (chapter 4's signals).
                at_prompt(true);
                let input = match stop_signal() {
                    Some(_) => Ok(Input::Eof),
                    None => reader.read_line("> ", &std::mem::take(&mut carried_text)),
                };
                at_prompt(false);
                match input? {
                    Input::Line(line) => line,
                    Input::Interrupted | Input::Eof => {
                        if let Some(hint) = reader.first_exit_hint() {
                            screen.status(&format!("{hint}\n"));
                        }
                        return Ok(());
                    }
                }
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        // A shell habit: `exit` alone would be sent to the model as a task.
        if ["exit", "quit", "exit()", "quit()", ":q"].contains(&line.trim().to_lowercase().as_str()) {
            screen.status("to leave, type /exit or press Ctrl+D (nothing was sent)\n");
            continue;
        }
        match parse_command(&line) {
            Some(Ok(Command::Exit)) => return Ok(()),
            Some(Ok(Command::Help)) => screen.status(&format!("{HELP}\n")),
            Some(Ok(Command::Host(command))) => match host.command(command) {
                Ok(text) if text.is_empty() => {}
                Ok(text) => screen.print(&format!("{}\n", sanitize(text.trim_end()))),
                Err(error) => screen.status(&format!("error: {}\n", sanitize(&error.to_string()))),
            },
            Some(Err(hint)) => screen.status(&format!("{hint}\n")),
            None => {
                set_interrupted(false);
                let type_ahead = reader.type_ahead();
                let typing = reader.is_terminal().then(|| type_ahead.start_reading(0));
                let mut observer = TerminalObserver::new(screen.clone(), Some(type_ahead));
                let outcome = host.turn(line, &mut observer);
                drop(observer);
                let typed_meanwhile = typing.map(TypeAheadReader::finish).unwrap_or_default();
                for sent in reader.type_ahead().take_handed_over() {
                    reader.remember(&sent);
                }
                match outcome {
                    Outcome::Completed(_) => next_inputs.extend(typed_meanwhile),
                    Outcome::TurnLimit => {
                        screen
                            .status("stopped: the turn limit was reached (--max-turns); say how to go on\n");
                        next_inputs.extend(typed_meanwhile);
                    }
                    Outcome::Interrupted if stop_signal().is_some() => {
                        screen.status("interrupted\n");
                        return Ok(()); // SIGTERM or SIGHUP: the turn was stopped, now leave
                    }
                    Outcome::Interrupted => {
                        screen.status("interrupted\n");
                        // After a Ctrl+C nothing is sent without a look: lines typed
                        // meanwhile come back as editable text at the prompt.
                        carried_text = typed_meanwhile.join(" ");
                    }
                    Outcome::Failed(error) => {
                        screen.status(&format!("error: {}\n", sanitize(&error.to_string())));
                        next_inputs.extend(typed_meanwhile);
                    }
                }
            }
        }
        set_interrupted(false);
    }
}
// ANCHOR_END: repl

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ch01_loop::Reply;
    use std::time::Instant;

    #[test]
    fn commands_parse_and_unknown_ones_get_a_hint() {
        assert_eq!(parse_command("/help"), Some(Ok(Command::Help)));
        assert_eq!(parse_command("  /exit "), Some(Ok(Command::Exit)));
        assert_eq!(parse_command("/new"), Some(Ok(Command::Host(HostCommand::New))));
        assert_eq!(parse_command("/list"), Some(Ok(Command::Host(HostCommand::List))));
        assert_eq!(parse_command("/skills"), Some(Ok(Command::Host(HostCommand::Skills))));
        assert_eq!(parse_command("/compact"), Some(Ok(Command::Host(HostCommand::Compact))));
        assert_eq!(parse_command("/stats"), Some(Ok(Command::Host(HostCommand::Stats))));
        assert_eq!(
            parse_command("/resume  2026112 "),
            Some(Ok(Command::Host(HostCommand::Resume("2026112".into()))))
        );
        assert_eq!(parse_command("/resume"), Some(Err("usage: /resume <id> (see /list)".into())));
        assert_eq!(parse_command("/foo bar"), Some(Err("unknown command /foo; type /help".into())));
        assert_eq!(parse_command("fix the /help page"), None);
        assert_eq!(parse_command("/usr/bin/env is missing"), None);
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
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let root = std::env::temp_dir().join(format!("mini-agent-history-{}-{nanos}", std::process::id()));
        let path = root.join(".mini_agent").join("history");
        prepare_history_file(&path).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(path.parent().unwrap()), mode(&path)), (0o700, 0o600));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn retries_notices_and_verbose_tool_output_go_to_stderr() {
        let (out, err) = (Captured::default(), Captured::default());
        let mut screen = Screen::new(Box::new(out.clone()), Box::new(err.clone()), false, false);
        screen.verbose = true;
        let mut observer = TerminalObserver::new(screen, None);
        observer.event(Event::Retry { attempt: 2, wait_ms: 1500, reason: "429 rate limited" }).unwrap();
        observer.event(Event::Notice { kind: "compaction", text: "12 messages summarised" }).unwrap();
        let call =
            ToolCall { id: "1".into(), name: "read_file".into(), arguments: r#"{"path":"a.rs"}"#.into() };
        let read = ToolOutput { content: "1 fn main() {}".into(), status: ToolStatus::Ok };
        observer.event(Event::ToolFinished(&call, &read)).unwrap();
        observer.event(Event::Reply(&Reply { content: Some("*done*".into()), ..Reply::default() })).unwrap();
        assert_eq!(out.text(), "*done*\n");
        assert_eq!(
            err.text(),
            "retry 2 in 1.5s: 429 rate limited\ncompaction: 12 messages summarised\n✓ read_file a.rs\n\
             \x20   arguments: {\"path\":\"a.rs\"}\n    1 fn main() {}\n"
        );
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
            match command {
                HostCommand::Stats => Ok("requests: 3".into()),
                HostCommand::Resume(id) => Err(Error::Session(format!("no session matches {id}"))),
                HostCommand::New | HostCommand::List | HostCommand::Skills | HostCommand::Compact => {
                    Ok(String::new())
                }
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
        run_repl(&mut host, &mut reader, &screen).unwrap();
        (host, out.text(), err.text())
    }

    #[test]
    fn a_piped_script_runs_turns_and_commands_in_order() {
        let (host, out, err) = run_script(
            "hello\n\n/stats\n/resume 2026\n/nope\nsecond\n",
            vec![Outcome::Completed("# Hi\n".into()), Outcome::Failed(Error::Model("bad json".into()))],
        );
        assert_eq!(host.turns, ["hello", "second"]);
        assert_eq!(host.commands, [HostCommand::Stats, HostCommand::Resume("2026".into())]);
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
        observer.event(Event::TextDelta("streamed")).unwrap();
        observer
            .event(Event::Reply(&Reply { content: Some("streamed".into()), ..Reply::default() }))
            .unwrap();
        assert_eq!(out.text(), "streamed\n");
        assert_eq!(err.text(), "↳ sending with the next request: also this\n✗ bash cargo test — exit 101…\n");
        assert_eq!(type_ahead.take_all(), ["/stats"]);
    }
}
