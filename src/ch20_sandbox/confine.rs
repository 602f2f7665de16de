//! Putting the layers on a command: everything built in the parent, only system calls in the
//! child.
//!
//! `fork` in a multi-threaded program copies one thread; the others vanish, and a lock one of
//! them held (the allocator's, say) stays locked for ever in the child. So between fork and
//! exec a child may only make async-signal-safe calls: no allocation, no opening of files by
//! name through std, no formatting. Each layer is therefore split in two. [`Parts::build`]
//! runs once per run and does all the work: Landlock's ruleset is created (a file descriptor),
//! the BPF program compiled (a vector), the namespaces made and held open. The `pre_exec` hook
//! of each command only hands those to the kernel: `setns`, `landlock_restrict_self`,
//! `seccomp`. The order matters: the mount namespace first (Landlock forbids changing mounts
//! once applied), then Landlock, then the filter.

use super::namespaces::Namespaces;
use super::{Coverage, Protected};
use super::{rules, sockets};
use landlock::RulesetCreated;
use seccompiler::BpfProgram;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

/// The layers, built and ready to apply.
pub(super) struct Parts {
    landlock: Option<RulesetCreated>,
    sockets: Option<Arc<BpfProgram>>,
    namespaces: Option<Arc<Namespaces>>,
    /// The directory a command starts in, as a C string for `chdir` after `setns`.
    root: Arc<CString>,
    /// Why the agent's state is not protected, when it is not.
    pub state_error: Option<String>,
}

impl Parts {
    // ANCHOR: build
    /// Builds every layer this machine offers, and says which it does.
    pub fn build(
        root: &Path,
        writable: &[&Path],
        protected: &Protected,
        allow_net: bool,
    ) -> (Parts, Coverage) {
        let mut coverage = rules::probe();
        let landlock = match coverage.files {
            true => rules::ruleset(writable, allow_net).ok(),
            false => None,
        };
        if landlock.is_none() {
            coverage = Coverage::default();
        }
        let sockets = sockets::socket_filter(allow_net).ok().map(Arc::new);
        coverage.sockets = sockets.is_some();
        let (namespaces, state_error) = match Namespaces::create(&protected.pinned, &protected.read_only) {
            Ok(namespaces) => (Some(Arc::new(namespaces)), None),
            Err(error) => (None, Some(error.to_string())),
        };
        coverage.state = namespaces.is_some();
        let root = Arc::new(CString::new(root.as_os_str().as_bytes()).unwrap_or_default());
        (Parts { landlock, sockets, namespaces, root, state_error }, coverage)
    }
    // ANCHOR_END: build

    // ANCHOR: apply
    /// Registers the hook that confines `command`'s child between fork and exec.
    pub fn apply(&self, command: &mut Command) -> Result<(), String> {
        // One duplicate of the ruleset's descriptor per command: the child consumes it.
        let mut landlock = match &self.landlock {
            Some(ruleset) => {
                Some(ruleset.try_clone().map_err(|error| format!("cannot prepare the sandbox: {error}"))?)
            }
            None => None,
        };
        let sockets = self.sockets.clone();
        let namespaces = self.namespaces.clone();
        let root = Arc::clone(&self.root);
        let confine = move || -> io::Result<()> {
            first_for_the_oom_killer();
            if let Some(namespaces) = &namespaces {
                // SAFETY: we are the forked child; `enter` makes system calls only.
                unsafe { namespaces.enter(&root)? };
            }
            if let Some(ruleset) = landlock.take() {
                ruleset.restrict_self().map_err(|_| io::Error::last_os_error())?;
            }
            if let Some(filter) = &sockets {
                seccompiler::apply_filter(filter).map_err(|_| io::Error::last_os_error())?;
            }
            no_inherited_descriptors();
            Ok(())
        };
        // SAFETY: `confine` allocates nothing and makes only async-signal-safe system calls
        // (open, write, setns, chdir, prctl, landlock_restrict_self, seccomp, close,
        // close_range) on data built above.
        unsafe { command.pre_exec(confine) };
        Ok(())
    }
    // ANCHOR_END: apply

    /// For a test of Landlock's network rules alone.
    #[cfg(test)]
    pub(super) fn without_socket_filter(&mut self) {
        self.sockets = None;
    }

    /// Whether `pid` was started inside the sandbox's namespaces.
    pub fn holds(&self, pid: i32) -> bool {
        self.namespaces.as_ref().is_some_and(|namespaces| namespaces.holds(pid))
    }
}

// ANCHOR: oom
/// When memory runs out, the kernel's OOM killer ends the process with the highest score. A
/// command, and everything it starts, gets the highest there is (1000), so that a command that
/// eats memory, or forks a thousand small processes each smaller than the agent, is what goes:
/// not the agent, which would lose the turn, nor the person's editor. Raising one's own score
/// needs no privilege, and children inherit it. Best effort: without `/proc` nothing changes.
fn first_for_the_oom_killer() {
    const PATH: &[u8] = b"/proc/self/oom_score_adj\0";
    // SAFETY: open, write and close on a constant path and buffer: async-signal-safe, no
    // allocation, as a forked child requires.
    unsafe {
        let fd = libc::open(PATH.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            let _ = libc::write(fd, b"1000".as_ptr().cast(), 4);
            libc::close(fd);
        }
    }
}
// ANCHOR_END: oom

/// Descriptors the agent itself inherited from whatever started it (an editor's socket, an open
/// log, a wrapper's pipe) would reach the command through `exec`, past every rule: Landlock
/// checks paths when they are opened, and these are open already. Everything above stdin,
/// stdout and stderr is marked close-on-exec (`close_range`, Linux 5.11; before it, the first
/// 1,024 one by one).
fn no_inherited_descriptors() {
    // SAFETY: close_range and fcntl on descriptor numbers: async-signal-safe, no allocation.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) != 0 {
            for fd in 3..1024 {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
}
