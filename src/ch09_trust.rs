//! Chapter 9 (continued) — a journal is untrusted input too.
//!
//! A repository can carry a `.mini_agent/` directory of its own: a symlink that sends the
//! agent's records somewhere else, a FIFO or a 10 GB file named like a session, or a planted
//! journal dated 9999 whose header says `"root":"/"`, so that `-c` picks it up and works on
//! the whole disk. Three rules close that:
//!
//! * `.mini_agent/` and `.mini_agent/sessions/` must be real directories of the root, never
//!   symlinks ([`SessionStore::check_dirs`]);
//! * a journal is opened like any workspace file: never through a final symlink, never
//!   blocking on a FIFO, regular files only, and bounded ([`open_journal`]);
//! * **a session's root is where its journal lives**: the directory whose
//!   `.mini_agent/sessions/` holds it. The `root` recorded in the header is only a check; one
//!   that disagrees is refused ([`check_recorded_root`]), it never moves the root.

use crate::ch02_loop::{Error, ToolCall};
use crate::ch03_tools::Workspace;
use crate::ch05_sessions::{SessionStore, session_error};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// A journal larger than this is refused before it is read: a real session stays far below
/// (a long day of work is a few MB), and reading must not cost unbounded memory.
pub(crate) const JOURNAL_MAX_BYTES: u64 = 256 << 20;

// ANCHOR: check_dirs
impl SessionStore {
    /// This store as the sessions of a workspace whose files may have been planted: its
    /// directories checked ([`SessionStore::check_dirs`]), and each session file read as
    /// [`open_journal`] opens it, for `-c` and `/list` too.
    pub fn as_workspace_input(self) -> Result<SessionStore, Error> {
        self.check_dirs()?;
        Ok(self.opening_with(|path| open_journal(path, false)))
    }

    /// `.mini_agent/` and `.mini_agent/sessions/`, where they exist, must be directories of
    /// this root: a symlink would send every record (and `-c`'s choice) somewhere else.
    pub fn check_dirs(&self) -> Result<(), Error> {
        let agent_dir = self.root().join(".mini_agent");
        for dir in [agent_dir.as_path(), self.dir()] {
            match fs::symlink_metadata(dir) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(session_error(format!(
                        "{} is a symlink; mini-agent keeps its records only in a real directory of the \
                         workspace, so it stopped (remove the link to go on)",
                        dir.display()
                    )));
                }
                Ok(meta) if !meta.is_dir() => {
                    return Err(session_error(format!(
                        "{} is not a directory; remove it to go on",
                        dir.display()
                    )));
                }
                Ok(_) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(error) => return Err(Error::io(format!("cannot check {}", dir.display()), error)),
            }
        }
        Ok(())
    }
}
// ANCHOR_END: check_dirs

// ANCHOR: open_journal
/// Opens a session file for reading (and appending, with `append`): not through a symlink,
/// without blocking on a FIFO, a regular file of at most [`JOURNAL_MAX_BYTES`].
pub fn open_journal(path: &Path, append: bool) -> Result<File, Error> {
    let file = Workspace::open_no_follow(path, append).map_err(|error| match error.raw_os_error() {
        Some(libc::ELOOP) => session_error(format!(
            "{} is a symlink; a session file must be a regular file of the workspace",
            path.display()
        )),
        _ => Error::io(format!("cannot open session {}", path.display()), error),
    })?;
    let meta =
        file.metadata().map_err(|e| Error::io(format!("cannot read session {}", path.display()), e))?;
    if !meta.is_file() {
        return Err(session_error(format!(
            "{} is not a regular file, so it is not a session",
            path.display()
        )));
    }
    if meta.len() > JOURNAL_MAX_BYTES {
        return Err(session_error(format!(
            "{} is {} bytes, more than a session may hold ({JOURNAL_MAX_BYTES}); it was not read",
            path.display(),
            meta.len()
        )));
    }
    Ok(file)
}
// ANCHOR_END: open_journal

// ANCHOR: journal_root
/// The root of the session whose journal is at `path`: the directory whose
/// `.mini_agent/sessions/` holds it (those two checked as in `check_dirs`).
pub fn journal_root(path: &Path) -> Result<PathBuf, Error> {
    let absolute =
        std::path::absolute(path).map_err(|e| Error::io(format!("cannot use {}", path.display()), e))?;
    let sessions = absolute.parent().filter(|dir| dir.file_name().is_some_and(|name| name == "sessions"));
    let agent_dir =
        sessions.and_then(Path::parent).filter(|dir| dir.file_name().is_some_and(|n| n == ".mini_agent"));
    let Some(root) = agent_dir.and_then(Path::parent) else {
        return Err(session_error(format!(
            "{} is not in a .mini_agent/sessions/ directory; a session belongs to the workspace whose \
             .mini_agent/sessions/ holds it (move the file there, or run in that workspace)",
            path.display()
        )));
    };
    SessionStore::new(root).check_dirs()?;
    fs::canonicalize(root).map_err(|e| Error::io(format!("cannot use workspace root {}", root.display()), e))
}
// ANCHOR_END: journal_root

// ANCHOR: check_recorded_root

/// Checks that the header's `recorded` root is `root`, the one [`journal_root`] found for the
/// journal at `path`: a journal copied or planted from elsewhere is refused, never followed.
pub fn check_recorded_root(path: &Path, root: &Path, recorded: &str) -> Result<(), Error> {
    let recorded_path = Path::new(recorded);
    if recorded_path == root || fs::canonicalize(recorded_path).is_ok_and(|real| real == root) {
        return Ok(());
    }
    Err(session_error(format!(
        "{}: the session says its root is {recorded:?}, but its journal lives in {}; a session works only \
         where its journal lives, so it was not opened (a copied or planted journal? start a new session)",
        path.display(),
        root.display()
    )))
}
// ANCHOR_END: check_recorded_root

/// A `write_file` or `edit_file` that never finished (the agent was killed mid-write) may
/// have left its temporary file next to the target: removed when the session is resumed.
/// Says how many were removed, if any.
pub fn remove_leftover_temps(root: &Path, unknown: &[ToolCall]) -> Option<String> {
    let workspace = Workspace::new(root).ok()?;
    let removed: usize = unknown
        .iter()
        .filter(|call| call.name == "write_file" || call.name == "edit_file")
        .filter_map(|call| serde_json::from_str::<serde_json::Value>(&call.arguments).ok())
        .filter_map(|arguments| Some(workspace.remove_temp_files(arguments["path"].as_str()?)))
        .sum();
    (removed > 0).then(|| format!("removed {removed} temporary file(s) left by an interrupted write"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::temp_dir::TempDir;
    use std::os::unix::fs::symlink;

    #[test]
    fn the_root_is_where_the_journal_lives() {
        let temp = TempDir::new("trust-root");
        let root = fs::canonicalize(temp.path()).unwrap();
        fs::create_dir_all(root.join(".mini_agent/sessions")).unwrap();
        let path = root.join(".mini_agent/sessions/x.jsonl");
        assert_eq!(journal_root(&path).unwrap(), root);
        check_recorded_root(&path, &root, &root.display().to_string()).unwrap();
        let refused = check_recorded_root(&path, &root, "/").unwrap_err().to_string();
        assert!(refused.contains("says its root is \"/\""), "{refused}");
        let loose = journal_root(&root.join("x.jsonl")).unwrap_err().to_string();
        assert!(loose.contains("not in a .mini_agent/sessions/ directory"), "{loose}");
    }

    #[test]
    fn symlinked_record_directories_and_odd_files_are_refused() {
        let temp = TempDir::new("trust-dirs");
        let elsewhere = TempDir::new("trust-elsewhere");
        fs::create_dir_all(elsewhere.path().join("sessions")).unwrap();
        symlink(elsewhere.path(), temp.path().join(".mini_agent")).unwrap();
        let store = SessionStore::new(temp.path());
        assert!(store.check_dirs().unwrap_err().to_string().contains("is a symlink"));
        fs::write(elsewhere.path().join("real.jsonl"), "{}\n").unwrap();
        symlink(elsewhere.path().join("real.jsonl"), elsewhere.path().join("link.jsonl")).unwrap();
        assert!(
            open_journal(&elsewhere.path().join("link.jsonl"), false)
                .unwrap_err()
                .to_string()
                .contains("symlink")
        );
        assert!(open_journal(&elsewhere.path().join("sessions"), false).is_err());
        assert!(
            open_journal(Path::new("/dev/zero"), false).unwrap_err().to_string().contains("not a regular")
        );
    }
}
