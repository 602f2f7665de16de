//! A process descriptor: waiting for a child's exit without a poll interval.
//!
//! On Linux a *pidfd* (`pidfd_open`) becomes readable the moment its process exits, that is
//! once it is a zombie that `waitpid` can reap, so `poll` on it sleeps exactly as long as
//! needed and never past a deadline. `bash` waits on one between the close of a command's
//! pipe and its exit: the pipe closes a little earlier in the kernel's exit path than the
//! zombie appears, and a fixed nap there cost a whole millisecond to most sandboxed commands.
//! Chapter 18 waits on one for an MCP server to stop. Where there is no pidfd (another OS, an
//! old kernel) the callers nap instead.

use std::time::Duration;

/// A process descriptor of a child not yet reaped (so its pid is still its own).
pub(crate) struct Pidfd(i32);

impl Pidfd {
    /// A descriptor for `pid`, which must be a child of ours not yet reaped; `None` where the
    /// kernel has none to give.
    #[cfg(target_os = "linux")]
    pub(crate) fn open(pid: u32) -> Option<Pidfd> {
        // SAFETY: a plain system call with integer arguments; the result is a new descriptor
        // we own (closed in Drop), or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        i32::try_from(fd).ok().filter(|fd| *fd >= 0).map(Pidfd)
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn open(_pid: u32) -> Option<Pidfd> {
        None
    }

    /// Sleeps until the process exits, a signal arrives, or `most` has passed (at least 1 ms).
    pub(crate) fn wait(&self, most: Duration) {
        let millis = i32::try_from(most.as_millis()).unwrap_or(i32::MAX).max(1);
        let mut poll_fd = libc::pollfd { fd: self.0, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, and we say so.
        unsafe { libc::poll(&mut poll_fd, 1, millis) };
    }
}

impl Drop for Pidfd {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(self.0) };
    }
}
