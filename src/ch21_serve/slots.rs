//! Run slots: at most N turns at work at once, the others waiting their turn in order.
//!
//! Each running turn is a thread calling a model and running tools; fifty at once would share
//! two cores, one API rate limit and one disk. `--max-running` (default 8) bounds them. A turn
//! takes a ticket and waits until it is first in line and a slot is free: first come, first
//! served, so no session starves behind a busy one. Waiting is visible (the session's
//! `activity` is `waiting`, and its stream gets a `notice`), and a cancelled turn leaves the
//! line at once.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// How often a waiting turn looks at its cancel flag (a cancel also wakes the line at once).
const CHECK_EVERY: Duration = Duration::from_millis(500);

#[derive(Default)]
struct Line {
    running: usize,
    waiting: VecDeque<u64>,
    next_ticket: u64,
}

/// A counting semaphore that serves its waiters in order.
pub struct Slots {
    capacity: usize,
    line: Mutex<Line>,
    changed: Condvar,
}

impl Slots {
    pub fn new(capacity: usize) -> Slots {
        Slots { capacity: capacity.max(1), line: Mutex::default(), changed: Condvar::new() }
    }

    // ANCHOR: slots
    /// Takes a slot, waiting in line if none is free (`on_wait` is called once, then), until
    /// `give_up` says the turn is over: `false` then, and no slot is held.
    pub fn acquire(&self, on_wait: impl FnOnce(usize), give_up: impl Fn() -> bool) -> bool {
        let mut line = self.line.lock().unwrap_or_else(PoisonError::into_inner);
        let ticket = line.next_ticket;
        line.next_ticket += 1;
        line.waiting.push_back(ticket);
        let mut on_wait = Some(on_wait);
        loop {
            if line.running < self.capacity && line.waiting.front() == Some(&ticket) {
                line.waiting.pop_front();
                line.running += 1;
                drop(line);
                // The next in line may find a slot free too.
                self.changed.notify_all();
                return true;
            }
            if give_up() {
                line.waiting.retain(|waiting| *waiting != ticket);
                drop(line);
                self.changed.notify_all();
                return false;
            }
            if let Some(on_wait) = on_wait.take() {
                on_wait(line.running);
            }
            line = self.changed.wait_timeout(line, CHECK_EVERY).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
    // ANCHOR_END: slots

    pub fn release(&self) {
        let mut line = self.line.lock().unwrap_or_else(PoisonError::into_inner);
        line.running = line.running.saturating_sub(1);
        drop(line);
        self.changed.notify_all();
    }

    /// Wakes the line so each waiter looks at its cancel flag now.
    pub fn wake(&self) {
        let _guard = self.line.lock().unwrap_or_else(PoisonError::into_inner);
        self.changed.notify_all();
    }

    /// How many turns hold a slot, and how many wait for one.
    pub fn counts(&self) -> (usize, usize) {
        let line = self.line.lock().unwrap_or_else(PoisonError::into_inner);
        (line.running, line.waiting.len())
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}
