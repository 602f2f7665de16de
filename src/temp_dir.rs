//! A scratch directory, removed when dropped: `eval` runs each scenario in one (chapter 13),
//! and the tests and benchmarks make theirs with it. No `tempfile` crate: a unique name
//! (process id, a counter, the clock) is all it takes. One copy for the whole program.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh directory `mini-agent-<label>-…` under the system's temporary directory.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates the directory, for a test: a failure is a panic.
    pub fn new(label: &str) -> TempDir {
        TempDir::create(label).expect("create a temporary directory")
    }

    /// Creates the directory. Its path is canonical, so paths the agent prints compare equal
    /// on systems where the temporary directory is reached through a link (macOS's `/tmp`).
    pub fn create(label: &str) -> std::io::Result<TempDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.subsec_nanos());
        let unique = NEXT.fetch_add(1, Ordering::SeqCst);
        let name = format!("mini-agent-{label}-{}-{unique}-{nanos}", std::process::id());
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path)?;
        match path.canonicalize() {
            Ok(canonical) => Ok(TempDir(canonical)),
            Err(error) => {
                let _ = std::fs::remove_dir_all(&path);
                Err(error)
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `relative` under the directory.
    pub fn join(&self, relative: impl AsRef<Path>) -> PathBuf {
        self.0.join(relative)
    }

    /// Writes `content` to `relative`, creating the folders on the way.
    pub fn write(&self, relative: &str, content: &str) {
        let file = self.0.join(relative);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).expect("create a folder in the temporary directory");
        }
        std::fs::write(file, content).expect("write a file in the temporary directory");
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_directory_is_new_canonical_and_removed_on_drop() {
        // Two made in the same nanosecond still differ (the counter): the copies in the
        // chapters' tests named theirs by process id and clock alone.
        let (first, second) = (TempDir::new("same"), TempDir::new("same"));
        assert_ne!(first.path(), second.path());
        assert_eq!(first.path(), first.path().canonicalize().unwrap());
        assert!(first.path().is_dir());
        first.write("a/b.txt", "hi");
        assert_eq!(std::fs::read_to_string(first.join("a/b.txt")).unwrap(), "hi");
        let kept = first.path().to_path_buf();
        drop(first);
        assert!(!kept.exists());
    }
}
