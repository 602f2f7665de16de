//! Chapter 3 (continued) — the agent's own reads of the workspace.
//!
//! The six tools are not the only readers of the workspace: at start the agent reads
//! `AGENTS.md` and `skills/` into the system prompt, with no tool call and no permission.
//! Those files come from whatever repository was cloned, so they are as untrusted as a
//! path the model gives. They go through the same gate: [`Workspace::read_workspace_file`]
//! resolves the path with chapter 3's resolver (a symlink out of the root is refused), opens
//! it without following a last-moment symlink and without blocking on a FIFO, accepts
//! regular files only (`/dev/zero`, a FIFO, a directory are refused), and reads at most
//! `cap + 1` bytes, so a huge file costs no more than the part that is used.

use crate::ch03_tools::Workspace;
use crate::ch03_tools::output::temp_prefix;
use crate::ch03_tools::resolve::{regular_file, through_fd};
use std::ffi::OsString;
use std::fs::{self, FileType};
use std::io::Read;

/// A file of the workspace, read up to a cap.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkspaceFile {
    /// At most `cap` bytes of the file, cut at a character boundary.
    pub text: String,
    /// The size of the whole file.
    pub size: u64,
    /// Whether `text` stops short of the whole file.
    pub cut: bool,
}

// ANCHOR: read_workspace_file
impl Workspace {
    /// Reads `path` (relative to the root) as `read_file` would resolve it: `Ok(None)` when
    /// it does not exist, an error that names the path when it is refused.
    pub fn read_workspace_file(&self, path: &str, cap: usize) -> Result<Option<WorkspaceFile>, String> {
        let real = self.resolve(path)?;
        if fs::symlink_metadata(&real).is_err() {
            return Ok(None);
        }
        let file = self.open_confined(&real)?;
        let size = regular_file(&file, path)?.len();
        let mut bytes = Vec::with_capacity(cap.min(size as usize) + 1);
        file.take(cap as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read `{path}`: {e}"))?;
        let cut = bytes.len() > cap;
        if cut {
            bytes.truncate(cap);
            // A character cut in half by the cap is dropped, not shown as garbage.
            if let Err(error) = std::str::from_utf8(&bytes)
                && error.error_len().is_none()
            {
                bytes.truncate(error.valid_up_to());
            }
        }
        Ok(Some(WorkspaceFile { text: String::from_utf8_lossy(&bytes).into_owned(), size, cut }))
    }

    // ANCHOR_END: read_workspace_file
    // ANCHOR: list_workspace_dir
    /// The names in directory `path` with their types (a symlink is reported as a symlink,
    /// not followed), sorted: `Ok(None)` when it does not exist.
    pub fn list_workspace_dir(&self, path: &str) -> Result<Option<Vec<(OsString, FileType)>>, String> {
        let real = self.resolve(path)?;
        if fs::symlink_metadata(&real).is_err() {
            return Ok(None);
        }
        let directory = self.open_confined(&real)?;
        if !directory.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(format!("`{path}` is not a directory"));
        }
        let listing =
            fs::read_dir(through_fd(&directory, &real)).map_err(|e| format!("cannot list `{path}`: {e}"))?;
        let mut names: Vec<(OsString, FileType)> = listing
            .flatten()
            .filter_map(|entry| Some((entry.file_name(), entry.file_type().ok()?)))
            .collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Some(names))
    }

    // ANCHOR_END: list_workspace_dir
    /// Removes the temporary files (`.mini-agent-tmp.<name>.*`) that a write to `path`
    /// left next to it when it was killed mid-write; returns how many.
    pub fn remove_temp_files(&self, path: &str) -> usize {
        let Ok(real) = self.resolve(path) else { return 0 };
        let (Some(parent), Some(name)) = (real.parent(), real.file_name()) else { return 0 };
        let Ok(directory) = self.open_confined(parent) else { return 0 };
        let inside = through_fd(&directory, parent);
        let prefix = temp_prefix(name);
        let Ok(entries) = fs::read_dir(&inside) else { return 0 };
        entries
            .flatten()
            .filter(|entry| entry.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)))
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
            .filter(|entry| fs::remove_file(inside.join(entry.file_name())).is_ok())
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    use crate::temp_dir::TempDir;

    #[test]
    fn reads_are_confined_regular_and_bounded() {
        let root = TempDir::new("reads-confined");
        let workspace = Workspace::new(root.path()).unwrap();
        assert_eq!(workspace.read_workspace_file("AGENTS.md", 10), Ok(None));
        fs::write(root.join("AGENTS.md"), "0123456789abcdef").unwrap();
        let read = workspace.read_workspace_file("AGENTS.md", 10).unwrap().unwrap();
        assert_eq!(read, WorkspaceFile { text: "0123456789".into(), size: 16, cut: true });
        fs::write(root.join("utf8.md"), "ééé").unwrap();
        assert_eq!(workspace.read_workspace_file("utf8.md", 3).unwrap().unwrap().text, "é");
        symlink("/etc/hostname", root.join("out.md")).unwrap();
        let refused = workspace.read_workspace_file("out.md", 10).unwrap_err();
        assert!(refused.starts_with("refused:") && !refused.contains("/etc"), "{refused}");
        symlink("/dev/zero", root.join("zero.md")).unwrap();
        assert!(workspace.read_workspace_file("zero.md", 10).is_err());
        fs::create_dir(root.join("dir.md")).unwrap();
        assert!(workspace.read_workspace_file("dir.md", 10).is_err());
        symlink("AGENTS.md", root.join("inside.md")).unwrap();
        assert_eq!(workspace.read_workspace_file("inside.md", 100).unwrap().unwrap().size, 16);
        let names = workspace.list_workspace_dir(".").unwrap().unwrap();
        let kind =
            |wanted: &str| names.iter().find(|(name, _)| name == wanted).map(|(_, kind)| *kind).unwrap();
        assert!(kind("dir.md").is_dir() && kind("out.md").is_symlink());
        symlink("/etc", root.join("skills")).unwrap();
        assert!(workspace.list_workspace_dir("skills").unwrap_err().starts_with("refused:"));
    }
}
