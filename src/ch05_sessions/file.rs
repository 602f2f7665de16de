//! Chapter 5 — the session file: records appended to `<id>.jsonl`, one line each.
//!
//! This is what a reader writes first: create the file, append each record as one JSON line,
//! read the lines back to continue. It is honest about what it does not do — no `sync`, no
//! lock, no check of a torn last line — and chapter 9 replaces it with the `Journal`, which
//! writes the very same lines and makes each one a promise on disk.

use super::*;
use crate::ch02_loop::Error;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

// ANCHOR: session_file
/// A session's file, open for appending.
pub struct SessionFile {
    file: File,
    path: PathBuf,
    id: String,
    next_seq: u64,
}

impl SessionFile {
    /// Starts a new session of `store`'s root: a fresh file, its `session` record first.
    pub fn create(store: &SessionStore, origin: impl Into<Origin>) -> Result<SessionFile, Error> {
        let Origin { model, api, endpoint } = origin.into();
        let (id, path, file) = store.create_file()?;
        let mut log = SessionFile { file, path, id: id.clone(), next_seq: 1 };
        let (root, created) = (store.root().display().to_string(), now_rfc3339());
        log.append(Body::Session { version: FORMAT_VERSION, id, root, model, api, endpoint, created })?;
        Ok(log)
    }
}
// ANCHOR_END: session_file

// ANCHOR: session_file_append
impl Append for SessionFile {
    /// One record, one line, one `write`. (Not yet durable: chapter 9.)
    fn append(&mut self, body: Body) -> Result<u64, Error> {
        let seq = self.next_seq;
        let record = Record { seq, ts: now_rfc3339(), body };
        let mut line = serde_json::to_string(&record)
            .map_err(|e| session_error(format!("cannot encode a record of session {}: {e}", self.id)))?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .map_err(|e| Error::io(format!("cannot write to session {}", self.path.display()), e))?;
        self.next_seq += 1;
        Ok(seq)
    }
}
// ANCHOR_END: session_file_append

// ANCHOR: session_file_open
impl SessionFile {
    /// Opens a session to continue it: its records, read back, and the file to append to.
    pub fn open(path: &Path) -> Result<(SessionFile, Vec<Record>), Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read session {}", path.display()), e))?;
        let mut records = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let record: Record = serde_json::from_str(line).map_err(|e| {
                session_error(format!("{}:{}: not a session record ({e})", path.display(), index + 1))
            })?;
            records.push(record);
        }
        let Some(Record { body: Body::Session { id, .. }, .. }) = records.first() else {
            return Err(session_error(format!(
                "{}:1: not a session file (no session record)",
                path.display()
            )));
        };
        let id = id.clone();
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
        let next_seq = records.last().map_or(1, |last| last.seq + 1);
        Ok((SessionFile { file, path: path.to_path_buf(), id, next_seq }, records))
    }
    // ANCHOR_END: session_file_open

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}
