//! The session's own temporary directory.
//!
//! Compilers, test runners and `mktemp` write to `$TMPDIR` (else `/tmp`). A shared `/tmp` is
//! outside the workspace, so the sandbox would refuse those writes, or, if it allowed `/tmp`,
//! let a command plant files there for other programs of the user (a socket, a script another
//! tool picks up) that outlive the session. So each run gets a directory of its own: created
//! with `mkdir` (which never follows a planted symlink) and mode 0700, handed to commands as
//! `TMPDIR`, writable in every mode, and removed with everything in it when the run ends.

use std::fs::DirBuilder;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

// ANCHOR: private_temp
/// A directory that exists for as long as this value does.
pub struct PrivateTemp {
    path: PathBuf,
}

impl PrivateTemp {
    /// Creates `mini-agent-<pid>-<n>-<nanos>` in the system's temp dir, mode 0700.
    pub fn create() -> io::Result<PrivateTemp> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos =
            SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.subsec_nanos()).unwrap_or(0);
        let name =
            format!("mini-agent-{}-{}-{nanos}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let path = std::env::temp_dir().join(name);
        DirBuilder::new().mode(0o700).create(&path)?;
        // Canonical, so that the Landlock rule and `TMPDIR` name the directory itself.
        let path = path.canonicalize()?;
        Ok(PrivateTemp { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTemp {
    fn drop(&mut self) {
        // std's remove_dir_all does not follow symlinks a command left inside.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
// ANCHOR_END: private_temp
