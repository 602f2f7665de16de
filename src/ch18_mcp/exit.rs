//! Chapter 18 — waiting for a server to exit, with a deadline, without a poll interval.
//!
//! Stopping a server is "close its stdin, wait a grace for it to exit, SIGTERM, wait a
//! grace, SIGKILL". The waits are the part a user feels at every exit: napping in 5 ms steps
//! until `try_wait` says the child is gone costs up to a whole step after a server that quits
//! at once. On Linux a *pidfd* (a descriptor for the process, `pidfd_open`) becomes readable
//! the moment the process exits, so `poll` on it sleeps exactly as long as needed, and never
//! past the deadline. Where there is no pidfd (another OS, an old kernel) the naps remain,
//! 1 ms at a time. The descriptor is chapter 3's (`pidfd`), which `bash` waits on too.

use crate::ch03_tools::pidfd::Pidfd;
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
