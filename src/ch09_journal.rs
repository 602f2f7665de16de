//! Chapter 9 — the session file becomes a journal.
//!
//! Chapter 5 appended records; this chapter makes each append a promise. An agent acts on
//! the world — it edits files, runs commands — so the order "write down what I am about to
//! do, *then* do it" must survive a crash or a power cut. Four rules carry that:
//!
//! * **One record, one `write`, then `sync_data`,** before [`Journal::append`] returns. The
//!   loop waits for the observer, so `tool_started` is on disk before the tool runs. A new
//!   file's directory is synced once too, or the file itself could vanish after a crash; its
//!   `session` header needs no sync of its own, as the first append's sync covers it.
//! * **A torn tail is expected; a torn middle is not.** Power loss can cut the last line
//!   short (or leave garbage where it was): that line is reported and cut off. Any other
//!   unreadable line means the file was damaged by something else, and guessing would be
//!   worse than stopping, so it is an error that names the file and the line.
//! * **One process per session,** enforced by an OS file lock, so two terminals cannot
//!   interleave their records in one file.
//! * **Secrets stay out.** Records hold only what the agent gives them, and every line goes
//!   through the process's redactor (chapter 3) once more before it is written: the API key
//!   and URL passwords become `[redacted]` should they ever appear in one.
//!
//! The reader is strict in the same way for everyone: `--status` and `--resume` use it.

use crate::ch02_loop::{Error, Failure, ToolCall, ToolStatus, Usage};
use crate::ch03_tools::secrets::{Redactor, redactor};
use crate::ch05_sessions::{
    Append, Body, FORMAT_VERSION, Origin, Record, SessionStore, now_rfc3339, session_error,
};
use crate::ch09_trust::{JOURNAL_MAX_BYTES, open_journal};
use std::any::Any;
use std::fmt;
use std::fs::{File, TryLockError};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

// ANCHOR: journal
/// An open, locked session file. Records are appended durably; the lock is released when
/// the journal is dropped (or the process dies: the OS releases it then, too).
pub struct Journal {
    file: File,
    path: PathBuf,
    id: String,
    next_seq: u64,
    /// The process's redactor (chapter 3); a test gives its own.
    redactor: &'static Redactor,
    /// Set when a write failed half-way: appending after a partial line would corrupt the
    /// middle of the file, so the journal refuses.
    broken: bool,
    /// The `session` record is written but not yet synced: the next append's sync covers it.
    unsynced: bool,
}
// ANCHOR_END: journal

// ANCHOR: journal_create
impl Journal {
    /// Starts a new session of `store`'s root: creates the file, locks it, writes the
    /// `session` record (with where the model lives, `origin`) and makes the new file's
    /// name durable. The record's own sync waits for the first append (see `append`).
    pub fn create(store: &SessionStore, origin: impl Into<Origin>) -> Result<Journal, Error> {
        let Origin { model, api, endpoint } = origin.into();
        store.check_dirs()?;
        // `sessions/` and `.mini_agent/` may be created now; their names need a sync too.
        let new_dirs: Vec<PathBuf> =
            store.dir().ancestors().take(2).filter(|dir| !dir.exists()).map(Path::to_path_buf).collect();
        let (id, path, file) = store.create_file()?;
        lock(&file, &path, &id)?;
        let (next_seq, redactor, broken, unsynced) = (1, redactor(), false, false);
        let mut journal = Journal { file, path, id: id.clone(), next_seq, redactor, broken, unsynced };
        let root = store.root().display().to_string();
        let created = now_rfc3339();
        journal.write(Body::Session { version: FORMAT_VERSION, id, root, model, api, endpoint, created })?;
        journal.unsynced = true;
        // The new file's name must survive a crash too, and so must the name of a directory
        // made for it; directories that were already there need no sync.
        sync_directory(store.dir())?;
        for dir in &new_dirs {
            if let Some(parent) = dir.parent() {
                sync_directory(parent)?;
            }
        }
        Ok(journal)
    }

    // ANCHOR_END: journal_create
    // ANCHOR: journal_open
    /// Opens an existing session to continue it: locks it, reads every record, and cuts a
    /// torn last line off the file (the returned `Loaded::warning` says so).
    pub fn open(path: &Path) -> Result<(Journal, Loaded), Error> {
        let mut file = open_journal(path, true)?;
        let id = id_of(path);
        lock(&file, path, &id)?;
        let mut bytes = Vec::new();
        (&mut file)
            .take(JOURNAL_MAX_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
        let loaded = parse_journal(path, &bytes, "it was removed")?;
        if loaded.good_len < bytes.len() as u64 {
            file.set_len(loaded.good_len)
                .and_then(|()| file.sync_data())
                .map_err(|e| Error::io(format!("cannot cut the torn last line of {}", path.display()), e))?;
        }
        let next_seq = loaded.records.last().map_or(1, |last| last.seq + 1);
        let (path, redactor, broken, unsynced) = (path.to_path_buf(), redactor(), false, false);
        let journal = Journal { file, path, id, next_seq, redactor, broken, unsynced };
        Ok((journal, loaded))
    }
    // ANCHOR_END: journal_open

    /// Holds the session at `path` for removing it: its lock, without reading a record, so a
    /// journal too damaged to open can still be removed, and one another process holds
    /// ([`SessionInUse`]) cannot. Keep the file until the removal is done.
    pub fn hold_for_removal(path: &Path) -> Result<File, Error> {
        let file = crate::ch03_tools::Workspace::open_no_follow(path, false)
            .map_err(|e| Error::io(format!("cannot open session {}", path.display()), e))?;
        lock(&file, path, &id_of(path))?;
        Ok(file)
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Redacts with `redactor` instead of the process's (which only `main` installs).
    #[cfg(test)]
    fn redacting_with(mut self, redactor: &'static Redactor) -> Journal {
        self.redactor = redactor;
        self
    }
}

// ANCHOR: journal_append
impl Append for Journal {
    /// Writes the record as one line with one `write`, then `sync_data`: when this returns
    /// `Ok`, the record survives a crash — and so does the `session` record `create` wrote,
    /// since `sync_data` pushes every earlier write of the file.
    fn append(&mut self, body: Body) -> Result<u64, Error> {
        let seq = self.write(body)?;
        self.sync()?;
        Ok(seq)
    }
}
// ANCHOR_END: journal_append

// ANCHOR: journal_write
impl Journal {
    /// One record, one line, one `write` (no sync).
    fn write(&mut self, body: Body) -> Result<u64, Error> {
        if self.broken {
            return Err(session_error(format!(
                "session {} stopped recording after a failed write; resume it to continue",
                self.id
            )));
        }
        let seq = self.next_seq;
        let record = Record { seq, ts: now_rfc3339(), body };
        let mut line = serde_json::to_string(&record)
            .map_err(|e| session_error(format!("cannot encode a record of session {}: {e}", self.id)))?;
        // The process's secrets (chapter 3): plain tokens, which JSON leaves unescaped, so
        // they match verbatim.
        line = self.redactor.redact_string(line);
        line.push('\n');
        if let Err(e) = self.file.write_all(line.as_bytes()) {
            self.broken = true;
            return Err(Error::io(format!("cannot write to session {}", self.path.display()), e));
        }
        self.next_seq += 1;
        Ok(seq)
    }
}
// ANCHOR_END: journal_write

// ANCHOR: journal_sync
impl Journal {
    /// `sync_data`: every write so far survives a crash. A failure breaks the journal too.
    fn sync(&mut self) -> Result<(), Error> {
        if let Err(e) = self.file.sync_data() {
            self.broken = true;
            return Err(Error::io(format!("cannot write to session {}", self.path.display()), e));
        }
        self.unsynced = false;
        Ok(())
    }
}

/// A journal dropped before its first append still makes its `session` record durable.
/// It releases the lock by name: a child that another thread forked this moment holds a copy
/// of the descriptor until its `exec`, and closing ours alone would leave the session locked.
impl Drop for Journal {
    fn drop(&mut self) {
        if self.unsynced {
            let _ = self.file.sync_data();
        }
        let _ = self.file.unlock();
    }
}
// ANCHOR_END: journal_sync

fn id_of(path: &Path) -> String {
    path.file_stem().map_or_else(|| path.display().to_string(), |stem| stem.to_string_lossy().into_owned())
}

fn sync_directory(dir: &Path) -> Result<(), Error> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(format!("cannot sync {}", dir.display()), e))
}

// ANCHOR: lock
/// Takes the session's exclusive lock without waiting: a second process fails at once,
/// with the holder's pid when the OS tells us.
fn lock(file: &File, path: &Path, id: &str) -> Result<(), Error> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => {
            Err(Error::Other(Box::new(SessionInUse { id: id.to_string(), holder: lock_holder(file) })))
        }
        Err(TryLockError::Error(e)) => Err(Error::io(format!("cannot lock {}", path.display()), e)),
    }
}

/// A session another process holds open: a failure of its own type, so that a caller can
/// tell it from every other failure to open a journal (a service answers it differently).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInUse {
    pub id: String,
    /// The pid holding the lock, when the OS tells us.
    pub holder: Option<u32>,
}

impl fmt::Display for SessionInUse {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let holder = self.holder.map_or_else(|| "another process".to_string(), |pid| format!("pid {pid}"));
        write!(
            f,
            "session {} is in use by another mini-agent process ({holder}); finish or quit that one first",
            self.id
        )
    }
}
// ANCHOR_END: lock

impl Failure for SessionInUse {
    fn cleaned(&self, clean: &dyn Fn(&str) -> String) -> Box<dyn Failure> {
        Box::new(SessionInUse { id: clean(&self.id), holder: self.holder })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

// ANCHOR: lock_holder

/// The pid of the process that holds the session at `path` open, if any (Linux only).
/// Looking takes no lock, so it never gets in the way of the process that holds it.
pub fn lock_holder_of(path: &Path) -> Option<u32> {
    lock_holder(&File::open(path).ok()?)
}

/// The pid holding a lock on `file`, from Linux's `/proc/locks`
/// (`1: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF`). `None` elsewhere.
fn lock_holder(file: &File) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let metadata = file.metadata().ok()?;
    let dev = metadata.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let wanted = format!("{major:02x}:{minor:02x}:{}", metadata.ino());
    let locks = settled_proc_locks()?;
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, _, pid, file, ..] if *file == wanted => pid.parse().ok(),
            _ => None,
        }
    })
}

/// `/proc/locks`, read until two reads agree. The kernel hands the file out a page at a
/// time, and a lock released between two pages shifts the list under the reader, so a line
/// can be skipped; when nothing changed between two whole reads, nothing was skipped.
fn settled_proc_locks() -> Option<String> {
    let mut last = std::fs::read_to_string("/proc/locks").ok()?;
    for _ in 0..4 {
        let again = std::fs::read_to_string("/proc/locks").ok()?;
        if again == last {
            break;
        }
        last = again;
    }
    Some(last)
}
// ANCHOR_END: lock_holder

/// What `--status` does with a torn last line.
pub(crate) const TORN_IGNORED: &str = "it is ignored, and will be removed when the session is resumed";

// ANCHOR: reader
/// The records of a session file, and what the reader had to say about its end.
#[derive(Debug)]
pub struct Loaded {
    pub records: Vec<Record>,
    /// Set when a torn last line was found (and, by `Journal::open`, cut off).
    pub warning: Option<String>,
    /// Bytes up to the end of the last good line.
    good_len: u64,
}

/// Reads a session file without locking or changing it (for `--status`).
/// A torn last line is ignored with a warning; it is cut when the session is resumed.
pub fn read_journal(path: &Path) -> Result<Loaded, Error> {
    let mut bytes = Vec::new();
    open_journal(path, false)?
        .take(JOURNAL_MAX_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(format!("cannot read session {}", path.display()), e))?;
    parse_journal(path, &bytes, TORN_IGNORED)
}

// ANCHOR_END: reader
// ANCHOR: parse_journal
fn parse_journal(path: &Path, bytes: &[u8], torn_action: &str) -> Result<Loaded, Error> {
    let mut records = Vec::new();
    let mut good_len = 0usize;
    let mut warning = None;
    let mut rest = bytes;
    let mut number = 0usize;
    while !rest.is_empty() {
        number += 1;
        let (line, complete) = match rest.iter().position(|&b| b == b'\n') {
            Some(end) => (&rest[..end], true),
            None => (rest, false),
        };
        rest = if complete { &rest[line.len() + 1..] } else { &[] };
        match serde_json::from_slice::<Record>(line) {
            Ok(record) if complete => {
                check_record(path, number, &record)?;
                records.push(record);
                good_len += line.len() + 1;
            }
            Err(e) if !rest.is_empty() => return Err(corrupt_line(path, number, &e)),
            // The last line: without its newline the write that made it did not finish, and
            // garbage in its place is what a crash leaves behind. Either way it is torn.
            Ok(_) | Err(_) => {
                let bytes = line.len() + usize::from(complete);
                warning = Some(torn_line(path, number, bytes as u64, torn_action));
            }
        }
    }
    Ok(Loaded { records, warning, good_len: good_len as u64 })
}
// ANCHOR_END: parse_journal

/// The error for a line that is not a record and is not the last one.
pub(crate) fn corrupt_line(path: &Path, number: usize, error: &serde_json::Error) -> Error {
    session_error(format!(
        "{}:{number}: corrupt session record ({error}); the lines after it cannot be trusted, \
         so the session was not opened — repair or remove that line",
        path.display()
    ))
}

/// The warning for a last line that a write did not finish.
pub(crate) fn torn_line(path: &Path, number: usize, bytes: u64, action: &str) -> String {
    format!("{}: line {number} was cut off mid-write ({bytes} bytes); {action}", path.display())
}

/// A line can parse and still be wrong for its place: the first must be the header of a
/// format version we know.
pub(crate) fn check_record(path: &Path, number: usize, record: &Record) -> Result<(), Error> {
    match (&record.body, number) {
        (Body::Session { version, .. }, 1) if *version > FORMAT_VERSION => Err(session_error(format!(
            "{}: written by a newer mini-agent (session format {version}, this one reads {FORMAT_VERSION})",
            path.display()
        ))),
        (Body::Session { .. }, 1) => Ok(()),
        (_, 1) => Err(session_error(format!("{}:1: not a session file (no session record)", path.display()))),
        _ => Ok(()),
    }
}

// ANCHOR: measure
/// Appends `count` records to a fresh journal in `dir` and returns records per second.
/// Each append is one write plus `sync_data`, so this measures the disk, not serde.
pub fn measure_appends(dir: &Path, count: usize) -> Result<f64, Error> {
    let store = SessionStore::new(dir);
    let mut journal = Journal::create(&store, "bench")?;
    let started = Instant::now();
    for index in 0..count {
        journal.append(Body::User { content: format!("record {index} of the append benchmark") })?;
    }
    Ok(count as f64 / started.elapsed().as_secs_f64().max(1e-9))
}
// ANCHOR_END: measure

/// Writes a realistic session of `records` records to `path` (no fsync: it is test data):
/// a header, a system prompt, then turns of user → assistant with a tool call →
/// tool_started → tool_finished → assistant answer; it ends completed. For benchmarks of `--status` and resume.
pub fn write_synthetic_journal(path: &Path, records: usize) -> Result<(), Error> {
    let io_error = |e| Error::io(format!("cannot write {}", path.display()), e);
    let mut out = BufWriter::new(File::create(path).map_err(io_error)?);
    // The workspace the session belongs to, as a real one records it: `<root>` for a journal
    // at `<root>/.mini_agent/sessions/<id>.jsonl`, else the journal's own directory.
    let sessions = path.parent();
    let root = sessions
        .filter(|dir| dir.ends_with(".mini_agent/sessions"))
        .and_then(|dir| dir.parent()?.parent())
        .or(sessions)
        .map_or_else(String::new, |p| p.display().to_string());
    let mut seq = 0;
    let mut write = |body: Body| -> Result<(), Error> {
        seq += 1;
        let record = Record { seq, ts: now_rfc3339(), body };
        let line = serde_json::to_string(&record).map_err(|e| session_error(e.to_string()))?;
        writeln!(out, "{line}").map_err(io_error)
    };
    let id = id_of(path);
    write(Body::Session {
        version: FORMAT_VERSION,
        id,
        root,
        model: "synthetic".into(),
        api: "openai".into(),
        endpoint: None,
        created: now_rfc3339(),
    })?;
    write(Body::System { content: "You are mini-agent, a coding agent. ".repeat(20) })?;
    let turns = records.saturating_sub(2);
    // Whole turns only, so the session ends completed; the few records left over are
    // earlier user lines.
    for index in 0..turns % 5 {
        write(Body::User { content: format!("Note {index}: keep the public API unchanged.") })?;
    }
    for turn in 0..turns - turns % 5 {
        let call = ToolCall {
            id: format!("call_{turn}"),
            name: "read_file".into(),
            arguments: format!(r#"{{"path":"src/file_{turn}.rs"}}"#),
        };
        let body = match turn % 5 {
            0 => Body::User { content: format!("Please look at file {turn} and fix the failing test.") },
            1 => Body::Assistant {
                content: Some("Let me read it.".into()),
                tool_calls: vec![call.clone()],
                usage: Some(Usage { prompt_tokens: 1200, completion_tokens: 40 }),
            },
            2 => Body::ToolStarted {
                id: format!("call_{}", turn - 1),
                name: call.name,
                arguments: call.arguments,
            },
            3 => Body::ToolFinished {
                id: format!("call_{}", turn - 2),
                status: ToolStatus::Ok,
                content: "   1\tfn main() {\n   2\t    println!(\"hello\");\n   3\t}\n".repeat(4),
            },
            _ => Body::Assistant {
                content: Some("Fixed: the test passes now.".into()),
                tool_calls: vec![],
                usage: None,
            },
        };
        write(body)?;
    }
    out.flush().map_err(io_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ch02_loop::{Event, Message, Observer, ToolOutput};
    use crate::ch05_sessions::{Recorder, replay};
    use crate::temp_dir::TempDir;

    fn user(text: &str) -> Body {
        Body::User { content: text.into() }
    }

    fn bodies(records: &[Record]) -> Vec<Body> {
        records.iter().map(|r| r.body.clone()).collect()
    }

    #[test]
    fn appended_records_read_back_in_order() {
        let temp = TempDir::new("journal-roundtrip");
        let store = SessionStore::new(temp.path());
        let mut journal = Journal::create(&store, "m").unwrap();
        assert_eq!(journal.append(user("one")).unwrap(), 2);
        assert_eq!(journal.append(user("two")).unwrap(), 3);
        let path = journal.path().to_path_buf();
        drop(journal);
        let (mut journal, loaded) = Journal::open(&path).unwrap();
        assert_eq!(loaded.warning, None);
        assert_eq!(&bodies(&loaded.records)[1..], [user("one"), user("two")]);
        assert_eq!(journal.append(user("three")).unwrap(), 4);
        let seqs: Vec<u64> = read_journal(&path).unwrap().records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
    }

    #[test]
    fn the_header_is_synced_by_the_first_append_or_on_drop() {
        let temp = TempDir::new("journal-header-sync");
        let store = SessionStore::new(temp.path());
        let mut journal = Journal::create(&store, "m").unwrap();
        assert!(journal.unsynced, "create leaves its header to the first append's sync");
        journal.append(user("one")).unwrap();
        assert!(!journal.unsynced, "the first append's sync_data covers the header");
        let path = Journal::create(&store, "m").unwrap().path().to_path_buf();
        let (_journal, loaded) = Journal::open(&path).unwrap();
        assert_eq!((loaded.records.len(), loaded.warning), (1, None), "a dropped journal keeps its header");
    }

    #[test]
    fn a_torn_last_line_is_reported_and_cut_off() {
        let temp = TempDir::new("journal-torn");
        let store = SessionStore::new(temp.path());
        let mut journal = Journal::create(&store, "m").unwrap();
        journal.append(user("kept")).unwrap();
        let path = journal.path().to_path_buf();
        drop(journal);
        let intact = std::fs::read(&path).unwrap();
        let mut torn = intact.clone();
        torn.extend_from_slice(br#"{"seq":3,"ts":"2026-11-29T09:15:00.000Z","type":"user","con"#);
        std::fs::write(&path, &torn).unwrap();

        let status_view = read_journal(&path).unwrap();
        assert_eq!(status_view.records.len(), 2);
        assert!(status_view.warning.unwrap().contains("line 3 was cut off mid-write"));
        assert_eq!(std::fs::read(&path).unwrap(), torn, "reading for --status changes nothing");

        let (mut journal, loaded) = Journal::open(&path).unwrap();
        assert!(loaded.warning.unwrap().ends_with("it was removed"));
        assert_eq!(std::fs::read(&path).unwrap(), intact);
        assert_eq!(journal.append(user("after")).unwrap(), 3);
        assert_eq!(bodies(&read_journal(&path).unwrap().records)[1..], [user("kept"), user("after")]);
    }

    #[test]
    fn a_complete_but_garbled_last_line_is_torn_too() {
        let temp = TempDir::new("journal-garbled-tail");
        let store = SessionStore::new(temp.path());
        let path = Journal::create(&store, "m").unwrap().path().to_path_buf();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"\0\0\0\0\n");
        std::fs::write(&path, &bytes).unwrap();
        let (_journal, loaded) = Journal::open(&path).unwrap();
        assert_eq!(loaded.records.len(), 1);
        assert!(loaded.warning.unwrap().contains("line 2 was cut off mid-write (5 bytes)"));
    }

    #[test]
    fn a_corrupt_middle_line_is_an_error_naming_the_line() {
        let temp = TempDir::new("journal-corrupt");
        let store = SessionStore::new(temp.path());
        let mut journal = Journal::create(&store, "m").unwrap();
        for text in ["a", "b", "c"] {
            journal.append(user(text)).unwrap();
        }
        let path = journal.path().to_path_buf();
        drop(journal);
        let text = std::fs::read_to_string(&path).unwrap();
        let damaged = text.replacen(r#""content":"b"}"#, r#""content":"b""#, 1);
        std::fs::write(&path, &damaged).unwrap();
        for error in [read_journal(&path).unwrap_err(), Journal::open(&path).err().unwrap()] {
            let message = error.to_string();
            assert!(
                message.starts_with(&format!("{}:3: corrupt session record", path.display())),
                "{message}"
            );
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), damaged, "a corrupt journal is never rewritten");
    }

    #[test]
    fn a_second_opener_is_refused_with_a_clear_message() {
        let temp = TempDir::new("journal-lock");
        let store = SessionStore::new(temp.path());
        let journal = Journal::create(&store, "m").unwrap();
        let error = Journal::open(journal.path()).err().unwrap();
        let expected = format!(
            "session {} is in use by another mini-agent process (pid {}); finish or quit that one first",
            journal.id(),
            std::process::id()
        );
        assert_eq!(error.to_string(), expected);
        // Its own type, which a caller can tell from the other failures (a service's 409).
        let in_use = SessionInUse { id: journal.id().to_string(), holder: Some(std::process::id()) };
        assert_eq!(error.failure::<SessionInUse>(), Some(&in_use));
        let path = journal.path().to_path_buf();
        drop(journal);
        assert!(Journal::open(&path).is_ok(), "the lock goes with the journal");
    }

    #[test]
    fn a_file_without_a_session_header_is_refused() {
        let temp = TempDir::new("journal-header");
        let path = temp.path().join("x.jsonl");
        std::fs::write(&path, "{\"seq\":1,\"ts\":\"t\",\"type\":\"user\",\"content\":\"hi\"}\n").unwrap();
        let message = read_journal(&path).unwrap_err().to_string();
        assert_eq!(message, format!("{}:1: not a session file (no session record)", path.display()));
    }

    #[test]
    fn the_api_key_never_reaches_the_session_directory() {
        let temp = TempDir::new("journal-secret");
        let fake_key = "sk-test-0123456789abcdef";
        let store = SessionStore::new(temp.path());
        let only_this_key = Box::leak(Box::new(Redactor::new([fake_key.to_string()])));
        let journal = Journal::create(&store, "m").unwrap().redacting_with(only_this_key);
        let mut recorder = Recorder::new(journal);
        // A tool whose output echoed the environment, the way `env` would.
        let call = ToolCall { id: "a".into(), name: "bash".into(), arguments: r#"{"command":"env"}"#.into() };
        let output =
            ToolOutput { content: format!("HOME=/x\nOPENAI_API_KEY={fake_key}\n"), status: ToolStatus::Ok };
        recorder.message(&Message::User { content: "print the env".into() }).unwrap();
        recorder.event(Event::ToolStarted(&call)).unwrap();
        recorder.event(Event::ToolFinished(&call, &output)).unwrap();
        drop(recorder);
        let mut found = Vec::new();
        let mut stack = vec![temp.path().join(".mini_agent")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let text = std::fs::read_to_string(&path).unwrap();
                    assert!(!text.contains(fake_key), "{} holds the key", path.display());
                    if path.extension().is_some_and(|extension| extension == "jsonl") {
                        found.push(text);
                    }
                }
            }
        }
        assert_eq!(found.len(), 1);
        assert!(found[0].contains("OPENAI_API_KEY=[redacted]"));
    }

    #[test]
    fn a_synthetic_journal_reads_and_replays() {
        let temp = TempDir::new("journal-synthetic");
        let path = temp.path().join("20261129-091500-aaaa.jsonl");
        write_synthetic_journal(&path, 1_000).unwrap();
        let loaded = read_journal(&path).unwrap();
        assert_eq!((loaded.records.len(), loaded.warning), (1_000, None));
        let history = replay(loaded.records.iter().map(|r| &r.body));
        let answered = history.iter().filter(|m| matches!(m, Message::Tool { .. })).count();
        let asked: usize = history
            .iter()
            .map(|m| if let Message::Assistant { tool_calls, .. } = m { tool_calls.len() } else { 0 })
            .sum();
        assert_eq!(answered, asked);
        assert!(history.len() > 700);
    }

    #[test]
    fn a_synthetic_journal_in_a_workspace_records_that_workspace_as_its_root() {
        let temp = TempDir::new("journal-synthetic-root");
        let store = SessionStore::new(temp.path());
        std::fs::create_dir_all(store.dir()).unwrap();
        let path = store.path_of("20261129-091500-aaaa");
        write_synthetic_journal(&path, 10).unwrap();
        let records = read_journal(&path).unwrap().records;
        let Body::Session { root, .. } = &records[0].body else { panic!("no session record first") };
        assert_eq!(root, &temp.path().display().to_string());
    }

    #[test]
    fn appends_per_second_are_measured() {
        let temp = TempDir::new("journal-measure");
        let rate = measure_appends(temp.path(), 50).unwrap();
        eprintln!("journal: {rate:.0} appends/s with sync_data (50 records)");
        let records = read_journal(&SessionStore::new(temp.path()).latest().unwrap()).unwrap().records;
        assert_eq!(records.len(), 51);
    }
}
