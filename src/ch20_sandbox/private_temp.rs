//! The session's own temporary directory.
//!
//! Compilers, test runners and `mktemp` write to `$TMPDIR` (else `/tmp`). A shared `/tmp` is
//! outside the workspace, so the sandbox would refuse those writes, or, if it allowed `/tmp`,
//! let a command plant files there for other programs of the user (a socket, a script another
//! tool picks up) that outlive the session. So each run gets a directory of its own: created
//! with `mkdir` (which never follows a planted symlink) and mode 0700, handed to commands as
//! `TMPDIR`, writable in every mode, and removed with everything in it when the run ends.
//! A run killed with `kill -9` cannot remove its own; the next run to end sweeps those of
//! runs that are gone ([`sweep_dead_runs`]).

use std::fs::DirBuilder;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

// ANCHOR: private_temp
/// A directory that exists for as long as this value does.
pub struct PrivateTemp {
    path: PathBuf,
}

impl PrivateTemp {
    /// Creates `mini-agent-<pid>-<n>-<nanos>-<pid namespace>` in the system's temp dir, mode
    /// 0700.
    pub fn create() -> io::Result<PrivateTemp> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos =
            SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.subsec_nanos()).unwrap_or(0);
        let (pid, n) = (std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let name = format!("mini-agent-{pid}-{n}-{nanos}-{}", pid_namespace().unwrap_or(0));
        let path = std::env::temp_dir().join(name);
        DirBuilder::new().mode(0o700).create(&path)?;
        // Canonical, so that the Landlock rule and `TMPDIR` name the directory itself.
        match path.canonicalize() {
            Ok(path) => Ok(PrivateTemp { path }),
            Err(error) => {
                let _ = std::fs::remove_dir(&path);
                Err(error)
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTemp {
    fn drop(&mut self) {
        // std's remove_dir_all does not follow symlinks a command left inside.
        let _ = std::fs::remove_dir_all(&self.path);
        // Then what runs killed with `kill -9` left, as the run ends rather than as one starts:
        // reading a temp dir of thousands of entries costs a millisecond or two, better spent
        // after the answer is out than before the first request.
        if let Some(temp_dir) = self.path.parent() {
            sweep_dead_runs(temp_dir, SWEEP_AT_MOST);
        }
    }
}
// ANCHOR_END: private_temp

// ANCHOR: sweep
/// How many leftover directories one start removes at most, so that a temp dir holding
/// thousands of them costs one start a bounded pause, not a long one.
const SWEEP_AT_MOST: usize = 64;

/// Removes, from `temp_dir`, private temp dirs whose run is gone, trying at most `at_most`: named by a
/// run in this pid namespace (a container sharing `/tmp` numbers its processes apart), a real
/// directory (not a symlink) owned by this user, and no process has that pid any more. A live
/// process with the pid (ours, another user's, or a reused number) keeps its directory; so
/// does anything another user owns. What cannot be read or removed is left as it is: sweeping
/// is housekeeping, never a reason to fail a start.
pub fn sweep_dead_runs(temp_dir: &Path, at_most: usize) -> usize {
    let Some(namespace) = pid_namespace() else { return 0 };
    let Ok(entries) = std::fs::read_dir(temp_dir) else { return 0 };
    // SAFETY: getuid cannot fail and touches no memory.
    let me = unsafe { libc::getuid() };
    // Tries, not successes, are bounded: a leftover that cannot be removed (a tree deeper than
    // the descriptors a process may hold) would otherwise cost every later run its walk.
    let (mut tried, mut removed) = (0, 0);
    for entry in entries.flatten() {
        if tried == at_most {
            break;
        }
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| run_pid(name, namespace)) else { continue };
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        if !meta.is_dir() || meta.uid() != me || process_exists(pid) {
            continue;
        }
        tried += 1;
        if std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}
// ANCHOR_END: sweep

/// The pid in `mini-agent-<pid>-<n>-<nanos>-<namespace>`, the name [`PrivateTemp::create`]
/// gives, when the run was in `namespace`.
fn run_pid(name: &str, namespace: u64) -> Option<libc::pid_t> {
    let mut parts = name.strip_prefix("mini-agent-")?.split('-');
    let pid = parts.next()?.parse().ok().filter(|pid| *pid > 0)?;
    let well_formed = parts.next()?.parse::<u64>().is_ok() && parts.next()?.parse::<u32>().is_ok();
    let same_namespace = parts.next()?.parse::<u64>().ok() == Some(namespace);
    (well_formed && same_namespace && parts.next().is_none()).then_some(pid)
}

/// This process's pid namespace (the inode of `/proc/self/ns/pid`), if `/proc` says.
fn pid_namespace() -> Option<u64> {
    std::fs::metadata("/proc/self/ns/pid").ok().map(|meta| meta.ino())
}

/// Whether a process has `pid`: signal 0 checks without sending; EPERM means it exists and
/// belongs to someone else.
fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 sends nothing; kill only reads its arguments.
    let status = unsafe { libc::kill(pid, 0) };
    status == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}
