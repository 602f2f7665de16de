//! Reading the idle prompt: rustyline on a terminal (history, editing, wide characters),
//! plain lines from a pipe. Ctrl+C and Ctrl+D arrive here as keys, not signals.

use super::line_state::{Editor, LineState};
use super::type_ahead::*;
use crate::ch02_loop::Error;
use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};

// ANCHOR: input
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

pub(super) enum Source {
    Editor { editor: Box<Editor>, history: Option<PathBuf> },
    Plain(Box<dyn BufRead + Send>),
}
// ANCHOR_END: input

/// The largest `.mini_agent/history` the line editor loads (it keeps 1,000 lines).
pub const HISTORY_MAX_BYTES: u64 = 8 << 20;

/// `root`'s `.mini_agent/history`, when the line editor may keep its history there; else the
/// warning to show, and the REPL goes on without one. A history file planted as a symlink
/// would have typed lines appended to its target; a planted 1 GB one would be loaded whole.
pub fn history_file(root: &Path) -> Result<PathBuf, String> {
    let history = root.join(".mini_agent").join("history");
    match std::fs::symlink_metadata(&history) {
        Ok(meta) if !meta.is_file() || meta.len() > HISTORY_MAX_BYTES => Err(format!(
            "{} is not a regular file of at most {} MiB; history is off",
            history.display(),
            HISTORY_MAX_BYTES >> 20
        )),
        _ => Ok(history),
    }
}

// ANCHOR: line_reader
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
    pub(crate) fn from_reader(reader: Box<dyn BufRead + Send>) -> LineReader {
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
pub(super) fn editor_can_prefill() -> bool {
    let term = std::env::var("TERM").unwrap_or_default();
    !["dumb", "cons25", "emacs"].iter().any(|plain| plain.eq_ignore_ascii_case(&term))
}

impl LineReader {
    /// Said once per workspace, the first time someone leaves with Ctrl+C or Ctrl+D: how to
    /// come back. A marker file next to the history remembers that it was said.
    pub(super) fn first_exit_hint(&self) -> Option<&'static str> {
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
            // The history file is a record like the journal: a pasted key is `[redacted]`.
            let line = crate::ch03_tools::secrets::redactor().redact(line);
            // Failing to save history is not worth interrupting the user.
            let _ = editor.add_history_entry(line.as_ref());
            if let Some(path) = history {
                let _ = editor.append_history(path);
            }
        }
    }
}

/// The history holds what the user typed: private, like everything under `.mini_agent/`.
pub(super) fn prepare_history_file(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|error| Error::io(format!("creating {}", parent.display()), error))?;
        if parent.file_name().is_some_and(|name| name == ".mini_agent") {
            crate::ch03_tools::agent_dir::write_gitignore(parent);
        }
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(|error| Error::io(format!("opening history {}", path.display()), error))
}
