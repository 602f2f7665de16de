//! Chapter 18 — waiting for a server to exit, with a deadline, without a poll interval.
//!
//! Stopping a server is "close its stdin, wait a grace for it to exit, SIGTERM, wait a
//! grace, SIGKILL". The waits are the part a user feels at every exit: napping in 5 ms steps
//! until `try_wait` says the child is gone costs up to a whole step after a server that quits
//! at once. On Linux a *pidfd* (a descriptor for the process, `pidfd_open`) becomes readable
//! the moment the process exits, so `poll` on it sleeps exactly as long as needed, and never
//! past the deadline. Where there is no pidfd (another OS, an old kernel) the naps remain,
//! 1 ms at a time.

use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

// ANCHOR: exited_before
/// Waits until `child` has exited or `deadline` has passed; true if it exited (it is then
/// reaped, and `try_wait` returns its status).
pub(crate) fn exited_before(child: &mut Child, deadline: Instant) -> bool {
    // Checked first: once reaped, the pid may belong to another process.
    if !matches!(child.try_wait(), Ok(None)) {
        return true;
    }
    let pidfd = Pidfd::open(child.id());
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return !matches!(child.try_wait(), Ok(None));
        }
        match &pidfd {
            Some(pidfd) => pidfd.wait(left),
            None => thread::sleep(left.min(Duration::from_millis(1))),
        }
        if !matches!(child.try_wait(), Ok(None)) {
            return true;
        }
    }
}
// ANCHOR_END: exited_before

/// A process descriptor of a child not yet reaped (so its pid is still its own).
struct Pidfd(i32);

impl Pidfd {
    #[cfg(target_os = "linux")]
    fn open(pid: u32) -> Option<Pidfd> {
        // SAFETY: a plain system call with integer arguments; the result is a new descriptor
        // we own (closed in Drop), or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        i32::try_from(fd).ok().filter(|fd| *fd >= 0).map(Pidfd)
    }

    #[cfg(not(target_os = "linux"))]
    fn open(_pid: u32) -> Option<Pidfd> {
        None
    }

    /// Sleeps until the process exits or `most` has passed.
    fn wait(&self, most: Duration) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn wakes_when_the_child_exits_not_at_the_deadline() {
        // The deadline is an hour away: waking at it, not at the exit, would be a hang.
        let mut child = Command::new("sh").args(["-c", "sleep 0.05"]).spawn().unwrap();
        let started = Instant::now();
        assert!(exited_before(&mut child, started + Duration::from_secs(3600)));
        eprintln!("exited_before: a 50 ms child took {:?}", started.elapsed());
    }

    #[test]
    fn gives_up_at_the_deadline_and_says_so() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let started = Instant::now();
        assert!(!exited_before(&mut child, started + Duration::from_millis(50)));
        assert!(started.elapsed() >= Duration::from_millis(50));
        child.kill().unwrap();
        assert!(exited_before(&mut child, Instant::now() + Duration::from_secs(20)));
        assert!(child.try_wait().unwrap().is_some());
    }
}
