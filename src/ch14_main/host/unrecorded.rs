//! A session that cannot be recorded: a read-only checkout can still be asked about.
//!
//! A session's journal lives in the workspace, under `.mini_agent/sessions/`. In a read-only
//! checkout (a mounted image, a directory of someone else's, a full disk) it cannot be
//! created, and refusing to answer would make the agent useless exactly where a person only
//! wants to read. So a question (`-p`, the REPL) goes on without a record, and says so once,
//! with why and what to do; the journal's rule holds for what it records, and here nothing is.
//! Only a *new* session of a person's own question goes on this way: `-c` and `-r` need the
//! journal they continue, `tasks run` and the service keep their sessions for whoever looks
//! later, and a journal that fails mid-session still stops the turn (chapter 9).

use super::app::{Config, KeptLog, Opened};
use mini_agent::ch02_loop::{Error, Message};
use mini_agent::ch05_sessions::{Append, Body, new_session_id};

use std::sync::atomic::{AtomicBool, Ordering};

/// Where a session's records go: its journal, or nowhere (the id is made like a journal's,
/// for the banner and `--json`, but no file has it).
pub enum SessionLog {
    Kept(KeptLog),
    NotKept { id: String, next_seq: u64 },
}

impl From<KeptLog> for SessionLog {
    fn from(log: KeptLog) -> Self {
        SessionLog::Kept(log)
    }
}

impl Append for SessionLog {
    fn append(&mut self, body: Body) -> Result<u64, Error> {
        match self {
            SessionLog::Kept(log) => log.append(body),
            SessionLog::NotKept { next_seq, .. } => {
                *next_seq += 1;
                Ok(*next_seq - 1)
            }
        }
    }
}

impl SessionLog {
    pub fn id(&self) -> &str {
        match self {
            SessionLog::Kept(log) => log.id(),
            SessionLog::NotKept { id, .. } => id,
        }
    }
}

impl super::app::Agent {
    /// Whether the current session has a journal.
    pub fn is_recorded(&self) -> bool {
        matches!(self.session.recorder.log(), SessionLog::Kept(_))
    }
}

/// A new session (`kept`, with its journal, or the error creating it); if the journal cannot be
/// created because the root cannot be written, and `config` allows it, a session that is not
/// recorded, going on with `history`, with a warning.
pub fn or_unrecorded(
    kept: Result<Opened, Error>,
    config: &Config,
    history: Vec<Message>,
) -> Result<Opened, Error> {
    match kept {
        Err(error) if config.may_go_unrecorded && cannot_write_here(&error) => {
            // Once a run: the REPL's `/new` says "not recorded" in its own line.
            static WARNED: AtomicBool = AtomicBool::new(false);
            if !WARNED.swap(true, Ordering::Relaxed) {
                // Sessions live in the workspace root, which is not always the current directory.
                let root = config.root.display();
                crate::ch14_main::say(&format!(
                    "mini-agent: warning: this session is not recorded: the workspace root {root} cannot be \
                     written ({}); sessions are kept in {root}/.mini_agent/, so -c and -r will not find \
                     this one — use a writable --root to keep them",
                    crate::ch14_main::one_line(&error.to_string())
                ));
            }
            let id = new_session_id(std::time::SystemTime::now(), 0);
            let recorder = mini_agent::ch05_sessions::Recorder::new(SessionLog::NotKept { id, next_seq: 1 });
            Ok(Opened::new(recorder, history))
        }
        other => other,
    }
}

/// Whether `error` says the workspace cannot be written: read-only, not ours, or full. Other
/// failures (a planted symlink, a file where `.mini_agent/` should be) stay errors.
pub fn cannot_write_here(error: &Error) -> bool {
    use std::io::ErrorKind::{PermissionDenied, QuotaExceeded, ReadOnlyFilesystem, StorageFull};
    match error {
        Error::Io { source, .. } => {
            matches!(source.kind(), ReadOnlyFilesystem | PermissionDenied | StorageFull | QuotaExceeded)
        }
        _ => false,
    }
}
