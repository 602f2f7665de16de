//! Chapter 5 — the store: the sessions of one workspace root.
//!
//! A session is its file under `<root>/.mini_agent/sessions/`; the store creates that
//! directory privately, finds a session by id, prefix or "the latest", and summarises one for
//! `/list` by reading only what it shows.

use super::listing::{LATEST_CANDIDATES, got_a_reply, open_session};
use super::*;
use crate::ch02_loop::Error;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

// ANCHOR: store
/// The sessions of one workspace root.
#[derive(Clone, Debug)]
pub struct SessionStore {
    root: PathBuf,
    dir: PathBuf,
    /// How a session file is opened to be read for `-c` and `/list`: as it is here; chapter 9
    /// swaps in its opener, which treats the file as untrusted workspace input.
    open: OpenSession,
}

/// Opens a session file for reading.
pub type OpenSession = fn(&Path) -> Result<File, Error>;

impl SessionStore {
    pub fn new(root: &Path) -> Self {
        let dir = root.join(".mini_agent").join("sessions");
        SessionStore { root: root.to_path_buf(), dir, open: open_session }
    }

    /// The same store, reading its session files with `open`.
    pub fn opening_with(self, open: OpenSession) -> Self {
        SessionStore { open, ..self }
    }

    /// Opens the session file at `path` for reading, as this store does.
    pub fn open(&self, path: &Path) -> Result<File, Error> {
        (self.open)(path)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    // ANCHOR_END: store
    // ANCHOR: create_file
    /// Creates a new, empty session file (0600, in a 0700 directory) under a fresh id.
    pub fn create_file(&self) -> Result<(String, PathBuf, File), Error> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| Error::io(format!("cannot create {}", self.dir.display()), e))?;
        if let Some(agent_dir) = self.dir.parent() {
            crate::ch03_tools::agent_dir::write_gitignore(agent_dir);
        }
        for salt in 0..64 {
            let id = new_session_id(SystemTime::now(), salt);
            let path = self.path_of(&id);
            // `create_new` makes two processes starting in the same second pick different ids.
            match OpenOptions::new().read(true).append(true).create_new(true).mode(0o600).open(&path) {
                Ok(file) => return Ok((id, path, file)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(format!("cannot create {}", path.display()), e)),
            }
        }
        Err(session_error(format!("cannot find a free session id in {}", self.dir.display())))
    }

    // ANCHOR_END: create_file
    // ANCHOR: list_ids
    /// Session ids of this root, oldest first (ids sort by time).
    pub fn ids(&self) -> Result<Vec<String>, Error> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(format!("cannot list {}", self.dir.display()), e)),
        };
        let mut ids: Vec<String> = entries
            .filter_map(|entry| entry.ok())
            .filter_map(|entry| entry.file_name().to_str()?.strip_suffix(".jsonl").map(str::to_string))
            // An id is shown in tables, banners and errors: a name the agent could not have
            // made (a newline, an escape sequence) is a planted file, not a session.
            .filter(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
            .collect();
        ids.sort();
        Ok(ids)
    }
    // ANCHOR_END: list_ids

    // ANCHOR: latest
    /// The session `-c` continues: the newest one that got a model reply. A start that
    /// failed (no key, a refused connection) or a REPL left at once leaves a session with no
    /// reply; skipping those keeps the last real conversation one `-c` away. When no session
    /// has a reply, the newest is taken; `-r ID` opens any of them.
    pub fn latest(&self) -> Result<PathBuf, Error> {
        let ids = self.ids()?;
        let Some(newest) = ids.last() else {
            return Err(session_error(format!(
                "no session to continue in {}; start one without -c",
                self.root.display()
            )));
        };
        // The newest few are looked at: a repository can plant hundreds of 256 MiB journals
        // with no reply, and reading each would hold `-c` for minutes.
        let replied = ids
            .iter()
            .rev()
            .take(LATEST_CANDIDATES)
            .map(|id| self.path_of(id))
            .find(|path| got_a_reply(self, path));
        Ok(replied.unwrap_or_else(|| self.path_of(newest)))
    }

    // ANCHOR_END: latest
    // ANCHOR: resolve_prefix
    /// `--resume` argument → journal path: a path to a file, an id, or a unique id prefix.
    pub fn resolve(&self, wanted: &str) -> Result<PathBuf, Error> {
        let as_path = Path::new(wanted);
        if wanted.contains('/') || wanted.ends_with(".jsonl") {
            if as_path.is_file() {
                return Ok(as_path.to_path_buf());
            }
            return Err(session_error(format!("no session file at {wanted}")));
        }
        let ids = self.ids()?;
        if ids.iter().any(|id| id == wanted) {
            return Ok(self.path_of(wanted));
        }
        let matching: Vec<&String> = ids.iter().filter(|id| id.starts_with(wanted)).collect();
        match matching.as_slice() {
            [only] => Ok(self.path_of(only)),
            [] => Err(session_error(format!(
                "no session matches '{wanted}' in {}; `mini-agent sessions` (or /list) shows them",
                self.dir.display()
            ))),
            several => {
                // The newest ten are named; a prefix such as `2026` may match hundreds.
                let newest = &several[several.len().saturating_sub(AMBIGUOUS_SHOWN)..];
                let shown: Vec<&str> = newest.iter().map(|id| id.as_str()).collect();
                let more = several.len() - shown.len();
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                Err(session_error(format!(
                    "'{wanted}' matches {} sessions: {}{more}; give more of the id",
                    several.len(),
                    shown.join(", ")
                )))
            }
        }
    }

    // ANCHOR_END: resolve_prefix
}

/// How many candidates an ambiguous prefix names.
const AMBIGUOUS_SHOWN: usize = 10;
