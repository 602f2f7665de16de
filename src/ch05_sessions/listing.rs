//! Chapter 5's store, finding sessions by what their files hold: "the latest one that got a
//! reply" (`-c`) and the summaries `/list` shows. Each file is read only as far as needed, a
//! line at a time with a cap, and opened the store's way (from chapter 9 on, as untrusted
//! workspace input).

use super::*;
use crate::ch02_loop::Error;
use crate::ch03_tools::bounds::read_line_capped;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// One line of `/list`.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionSummary {
    pub id: String,
    pub path: PathBuf,
    pub created: String,
    pub first_prompt: Option<String>,
    pub user_turns: usize,
}

impl SessionStore {
    /// The sessions of this root, oldest first, for `/list`.
    pub fn list(&self) -> Result<Vec<SessionSummary>, Error> {
        self.ids()?.into_iter().map(|id| self.summary(id)).collect()
    }

    /// What `/list` shows of one session; an error for a file that is not a session.
    pub fn summary(&self, id: String) -> Result<SessionSummary, Error> {
        summarize(self, &self.path_of(&id), id)
    }
}

/// Whether a journal holds a model reply, by its `type` pattern alone (no parsing). It is
/// opened the store's way (from chapter 9: no symlink, no FIFO, bounded); one that cannot be
/// is not a candidate, and opening it for real reports why.
pub(super) fn got_a_reply(store: &SessionStore, path: &Path) -> bool {
    let Ok(file) = store.open(path) else { return false };
    // The type is near the start of a record: a line's head is enough, never a whole line;
    // and a first reply comes early, so only the start of the file is looked through.
    let mut reader = BufReader::new(std::io::Read::take(file, REPLY_SCAN_BYTES));
    let mut head = Vec::new();
    while let Ok(Some(_)) = read_line_capped(&mut reader, 256, &mut head) {
        if contains(&head, br#","type":"assistant","#) {
            return true;
        }
    }
    false
}

/// How many of the newest sessions `-c` looks through for one with a reply, and how far.
pub(super) const LATEST_CANDIDATES: usize = 20;
const REPLY_SCAN_BYTES: u64 = 16 << 20;

/// Reads only what `/list` shows: records are parsed up to the first user message; the
/// remaining lines are counted by their `type` without parsing them. (A JSON string cannot
/// contain an unescaped `"`, so this pattern only matches the record's own field.)
fn summarize(store: &SessionStore, path: &Path, id: String) -> Result<SessionSummary, Error> {
    // Opened the store's way: from chapter 9, not through a symlink, not blocking on a FIFO,
    // a regular file within the size a session may have. A repository can plant anything
    // under a session's name (chapter 9 says more).
    let file = store.open(path)?;
    let mut summary = SessionSummary {
        id,
        path: path.to_path_buf(),
        created: String::new(),
        first_prompt: None,
        user_turns: 0,
    };
    // Lines are read with a cap: a list needs the start of each record, never a whole
    // 200 MB line held in memory (a longer first message shows as its size).
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    while let Some(length) = read_line_capped(&mut reader, SUMMARY_LINE_BYTES, &mut line)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?
    {
        if summary.first_prompt.is_some() {
            // The type is near the start of a record: its head is enough to count it.
            let head = &line[..line.len().min(256)];
            summary.user_turns += usize::from(contains(head, br#","type":"user","#));
            continue;
        }
        if length > line.len() as u64 && contains(&line, br#","type":"user","#) {
            summary.first_prompt = Some(format!("(a message of {length} bytes)"));
            summary.user_turns = 1;
            continue;
        }
        // Unreadable lines are the journal reader's business (chapter 9); a list skips them.
        match serde_json::from_slice::<Record>(&line).map(|record| record.body) {
            Ok(Body::Session { created, .. }) => summary.created = created,
            Ok(Body::User { content }) => {
                summary.first_prompt = Some(content);
                summary.user_turns = 1;
            }
            Ok(_) | Err(_) => {}
        }
    }
    Ok(summary)
}

/// Chapter 5 opens a session file as it is; chapter 9's store opens it as workspace input.
pub(super) fn open_session(path: &Path) -> Result<std::fs::File, Error> {
    std::fs::File::open(path).map_err(|e| Error::io(format!("cannot open {}", path.display()), e))
}

/// How much of one journal line `/list` keeps to read it.
const SUMMARY_LINE_BYTES: usize = 1 << 20;

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}
