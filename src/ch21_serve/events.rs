//! A session's recent events, kept so that a stream can start late or resume.
//!
//! A turn must never wait for a reader: a browser tab that stopped reading, a laptop that
//! went to sleep, a client that never connected. So a turn only appends to its session's
//! log, and each stream reads the log at its own pace, waking when something is appended.
//! The log is bounded ([`MAX_LOG_EVENTS`], [`MAX_LOG_BYTES`]): the oldest events go first,
//! and a reader that fell behind them is told how many it missed. The journal on disk is the
//! whole story; this is the last screenful, for live eyes.
//!
//! Every event gets a number from one counter for the whole service, so numbers only grow:
//! `Last-Event-ID: 41` means "after 41" in any session, also after the session's log was
//! trimmed, and a number from an earlier run of the service (larger than any given out yet)
//! is recognised as such.

use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// The most events a session keeps for streams.
pub const MAX_LOG_EVENTS: usize = 2_000;
/// The most bytes of events a session keeps for streams.
pub const MAX_LOG_BYTES: usize = 1024 * 1024;

/// One event as streams send it: its number, the turn it belongs to, its type and its JSON.
#[derive(Debug)]
pub struct Stored {
    pub seq: u64,
    pub turn: u64,
    pub kind: String,
    pub data: String,
}

/// The numbers events get, one counter for the service.
#[derive(Default)]
pub struct Sequence(AtomicU64);

impl Sequence {
    /// The number the last event got (0 before the first).
    pub fn last(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// What a reader gets: the events after its position, and how many it missed.
pub struct Batch {
    pub events: Vec<Arc<Stored>>,
    pub missed: u64,
}

#[derive(Default)]
struct Log {
    events: VecDeque<Arc<Stored>>,
    bytes: usize,
    /// The number of the newest event dropped for space, and how many were dropped.
    dropped_through: u64,
    dropped: u64,
}

/// A session's log and the readers' alarm clock.
#[derive(Default)]
pub struct Hub {
    log: Mutex<Log>,
    appended: Condvar,
}

impl Hub {
    // ANCHOR: push
    /// Appends an event (an object with a `"type"`), numbered under the lock so that numbers
    /// grow in the order of the log, and wakes every reader.
    pub fn push(&self, sequence: &Sequence, turn: u64, event: &Value) -> u64 {
        let kind = event["type"].as_str().unwrap_or("message").to_string();
        // The last gate before the network: no key or URL password in any event (chapter 3).
        let data = crate::ch03_tools::secrets::redactor().redact(&event.to_string()).into_owned();
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let seq = sequence.0.fetch_add(1, Ordering::SeqCst) + 1;
        log.bytes += data.len() + kind.len();
        log.events.push_back(Arc::new(Stored { seq, turn, kind, data }));
        while log.events.len() > MAX_LOG_EVENTS || (log.bytes > MAX_LOG_BYTES && log.events.len() > 1) {
            let Some(old) = log.events.pop_front() else { break };
            log.bytes -= old.data.len() + old.kind.len();
            log.dropped_through = old.seq;
            log.dropped += 1;
        }
        drop(log);
        self.appended.notify_all();
        seq
    }
    // ANCHOR_END: push

    /// The events numbered after `seq`. A `seq` from the future (an earlier run of the
    /// service) reads as "from the start". `missed` counts the events dropped that the reader
    /// had not seen.
    pub fn after(&self, sequence: &Sequence, seq: u64) -> Batch {
        let seq = if seq > sequence.last() { 0 } else { seq };
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let missed = if seq < log.dropped_through { log.dropped.min(log.dropped_through - seq) } else { 0 };
        let start = log.events.partition_point(|event| event.seq <= seq);
        Batch { events: log.events.range(start..).cloned().collect(), missed }
    }

    /// Waits until an event numbered after `seq` is appended, [`Hub::wake`] is called, or
    /// `timeout` passes; returns at once if there is one already.
    pub fn wait_after(&self, seq: u64, timeout: Duration) {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if log.events.back().is_some_and(|event| event.seq > seq) {
            return;
        }
        let _ = self.appended.wait_timeout(log, timeout).unwrap_or_else(PoisonError::into_inner);
    }

    /// Wakes every reader (the turn ended, the service is stopping).
    pub fn wake(&self) {
        let _guard = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        self.appended.notify_all();
    }

    /// Forgets the events (an idle session's log, when too many are kept); the numbering
    /// goes on, and a reader is told what it missed.
    pub fn forget(&self) {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(last) = log.events.back().map(|event| event.seq) {
            log.dropped += log.events.len() as u64;
            log.dropped_through = last;
            log.events.clear();
            log.bytes = 0;
        }
    }

    /// The bytes the log holds now.
    pub fn bytes(&self) -> usize {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).bytes
    }
}
