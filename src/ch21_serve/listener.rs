//! The listener: one thread that accepts connections and reads requests, never waiting on
//! any one client.
//!
//! The easy server reads each connection on a thread of its own, and a thread blocked in
//! `read` is a thread a client holds. That is the slow-loris attack: open many connections,
//! send a byte now and then, and every thread waits on one of them. So no thread here waits
//! on a client. A single thread asks the kernel (`poll(2)`) which connections have bytes,
//! reads what is there without blocking, and hands a request to a thread of its own only
//! when all of it has arrived and its head passed the [`Guard`]. A connection that has not
//! delivered its request within [`Limits::request_deadline`] is closed; when there are more
//! than [`Limits::max_pending`] unfinished ones, the oldest is closed to make room. A
//! thousand silent connections cost a thousand file descriptors and a few kilobytes each,
//! and the next real request is read as soon as it arrives.
//!
//! Why not a crate? `tiny_http` (the small synchronous server) reads each connection on a
//! pool thread, with no deadline for the head or the body, and was last released in 2022;
//! fixing that means owning this loop anyway. It is 300 lines, and the lesson of the chapter.

use super::guard::Guard;
use super::request::{Head, MAX_HEAD_BYTES, Progress, Request, parse_head};
use super::response::Refusal;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a refused connection may keep sending before it is closed (its answer is out;
/// closing at once with unread bytes would reset the connection and lose the answer).
const DRAIN: Duration = Duration::from_secs(2);
/// The most a refused connection is read for, at most.
const DRAIN_BYTES: usize = 2 * 1024 * 1024;

// ANCHOR: limits
/// The bounds on clients that have not finished their request.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Connections being read at once; the oldest is closed to admit a new one.
    pub max_pending: usize,
    /// A connection must deliver its whole request within this time of being accepted.
    pub request_deadline: Duration,
}
// ANCHOR_END: limits

impl Default for Limits {
    /// Half the file descriptors this process may open (the rest are for sessions, journals
    /// and tools), at most 4,096; 20 s for a request.
    fn default() -> Limits {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes the struct it is given; nothing else is touched.
        let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
        let descriptors = if read { limit.rlim_cur.min(1 << 20) as usize } else { 1024 };
        Limits {
            max_pending: (descriptors.saturating_sub(64) / 2).clamp(16, 4096),
            request_deadline: Duration::from_secs(20),
        }
    }
}

/// Wakes the listener from another thread (to stop it).
pub struct Waker(UnixStream);

impl Waker {
    pub fn wake(&self) {
        let _ = (&self.0).write(&[1]);
    }
}

/// A connection whose request is still arriving.
struct Pending {
    stream: TcpStream,
    since: Instant,
    buffer: Vec<u8>,
    /// How much of `buffer` was searched for the end of the head.
    searched: usize,
    /// The head, once it arrived and passed the guard, and where the body starts.
    head: Option<(Head, usize)>,
    /// Answered (refused); reading and discarding until the client is done.
    closing: bool,
}

/// What to do with a connection after reading from it.
enum Step {
    Keep,
    Close,
    Dispatch(Request),
    Refuse(Refusal),
}

pub type Dispatch = Box<dyn Fn(TcpStream, Request) + Send>;

/// The accept-and-read loop, until `stopping` is set (and the waker rung).
pub struct Listener {
    listener: TcpListener,
    wake_up: UnixStream,
    guard: Arc<Guard>,
    limits: Limits,
    pending: Vec<Pending>,
    /// Accepting is paused until then (the process is out of file descriptors).
    paused_until: Option<Instant>,
}

impl Listener {
    pub fn new(
        listener: TcpListener,
        guard: Arc<Guard>,
        limits: Limits,
    ) -> std::io::Result<(Listener, Waker)> {
        listener.set_nonblocking(true)?;
        let (wake_up, waker) = UnixStream::pair()?;
        wake_up.set_nonblocking(true)?;
        waker.set_nonblocking(true)?;
        let listener = Listener { listener, wake_up, guard, limits, pending: Vec::new(), paused_until: None };
        Ok((listener, Waker(waker)))
    }

    // ANCHOR: listener
    /// Waits for bytes on any connection (or a new one), reads them, and hands on what is whole.
    pub fn run(mut self, stopping: &AtomicBool, dispatch: &Dispatch) {
        while !stopping.load(Ordering::SeqCst) {
            let accepting = self.paused_until.is_none_or(|until| Instant::now() >= until);
            let mut fds = vec![poll_fd(&self.wake_up), poll_fd(&self.listener)];
            fds.extend(self.pending.iter().map(|pending| poll_fd(&pending.stream)));
            if !accepting {
                fds[1].events = 0;
            }
            // SAFETY: `fds` is a valid, exclusively borrowed array of `fds.len()` pollfds.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, self.timeout_ms()) };
            if ready < 0 {
                continue; // EINTR (a signal): look at `stopping` again
            }
            if fds[0].revents != 0 {
                let _ = (&self.wake_up).read(&mut [0; 64]);
            }
            // Backwards, so that removing one does not move the ones still to visit.
            for at in (0..self.pending.len()).rev() {
                if fds[at + 2].revents != 0 {
                    self.read_from(at, dispatch);
                }
            }
            self.expire();
            if accepting && fds[1].revents != 0 {
                self.accept();
            }
        }
    }
    // ANCHOR_END: listener

    /// Until the nearest deadline, at most a second.
    fn timeout_ms(&self) -> i32 {
        let now = Instant::now();
        let nearest = self.pending.iter().map(|pending| self.deadline(pending)).min();
        let wait = nearest.map_or(Duration::from_secs(1), |at| at.saturating_duration_since(now));
        let wait = self.paused_until.map_or(wait, |until| wait.min(until.saturating_duration_since(now)));
        wait.min(Duration::from_secs(1)).as_millis() as i32 + 1
    }

    fn deadline(&self, pending: &Pending) -> Instant {
        pending.since + if pending.closing { DRAIN } else { self.limits.request_deadline }
    }

    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    if self.pending.len() >= self.limits.max_pending {
                        self.close_oldest();
                    }
                    self.pending.push(Pending {
                        stream,
                        since: Instant::now(),
                        buffer: Vec::new(),
                        searched: 0,
                        head: None,
                        closing: false,
                    });
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => return,
                // Out of file descriptors: the oldest unfinished request makes room; with none,
                // accepting pauses (the kernel keeps the new connections in its backlog).
                Err(error) if matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    if !self.close_oldest() {
                        self.paused_until = Some(Instant::now() + Duration::from_millis(100));
                    }
                    return;
                }
                Err(_) => return, // a connection reset before it was accepted
            }
        }
    }

    fn close_oldest(&mut self) -> bool {
        let oldest =
            self.pending.iter().enumerate().min_by_key(|(_, pending)| pending.since).map(|(at, _)| at);
        oldest.map(|at| self.pending.swap_remove(at)).is_some()
    }

    fn read_from(&mut self, at: usize, dispatch: &Dispatch) {
        let pending = &mut self.pending[at];
        let wanted = match (&pending.head, pending.closing) {
            (_, true) => 64 * 1024,
            (None, false) => MAX_HEAD_BYTES + 1 - pending.buffer.len().min(MAX_HEAD_BYTES),
            (Some((head, start)), false) => {
                (start + head.body_length).saturating_sub(pending.buffer.len()).max(1)
            }
        };
        let mut chunk = vec![0; wanted.min(64 * 1024)];
        let step = match pending.stream.read(&mut chunk) {
            Ok(0) => Step::Close,
            Ok(read) if pending.closing => {
                pending.searched += read;
                if pending.searched > DRAIN_BYTES { Step::Close } else { Step::Keep }
            }
            Ok(read) => {
                pending.buffer.extend_from_slice(&chunk[..read]);
                advance(pending, &self.guard)
            }
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                Step::Keep
            }
            Err(_) => Step::Close,
        };
        match step {
            Step::Keep => {}
            Step::Close => drop(self.pending.swap_remove(at)),
            Step::Refuse(refusal) => refuse(&mut self.pending[at], &refusal),
            Step::Dispatch(request) => {
                let pending = self.pending.swap_remove(at);
                dispatch(pending.stream, request);
            }
        }
    }

    /// Closes what is past its deadline: a request too slow to arrive gets a 408 first.
    fn expire(&mut self) {
        let now = Instant::now();
        for at in (0..self.pending.len()).rev() {
            if now < self.deadline(&self.pending[at]) {
                continue;
            }
            let mut pending = self.pending.swap_remove(at);
            if !pending.closing {
                let refusal = Refusal::new(408, "the request did not arrive in time");
                let _ = pending.stream.write(&refusal.response().to_bytes());
            }
        }
    }
}

// ANCHOR: advance
/// After new bytes: the head, once whole, is parsed and judged by the guard; the request,
/// once its body is whole, is handed on.
fn advance(pending: &mut Pending, guard: &Guard) -> Step {
    if pending.head.is_none() {
        match parse_head(&pending.buffer, pending.searched) {
            Err(refusal) => return Step::Refuse(refusal),
            Ok(Progress::NeedMore) => {
                pending.searched = pending.buffer.len();
                return Step::Keep;
            }
            Ok(Progress::Head(head, start)) => {
                if let Err(refusal) = guard.check(&head) {
                    return Step::Refuse(refusal);
                }
                pending.head = Some((head, start));
            }
        }
    }
    let Some((head, start)) = &pending.head else { return Step::Keep };
    let end = start + head.body_length;
    if pending.buffer.len() < end {
        return Step::Keep;
    }
    Step::Dispatch(Request { head: head.clone(), body: pending.buffer[*start..end].to_vec() })
}
// ANCHOR_END: advance

/// Answers a refused request from this thread (a small answer fits the socket's buffer, so
/// the write does not wait), then reads what the client still sends until it is done.
fn refuse(pending: &mut Pending, refusal: &Refusal) {
    let _ = pending.stream.write(&refusal.response().to_bytes());
    let _ = pending.stream.shutdown(Shutdown::Write);
    pending.closing = true;
    pending.since = Instant::now();
    pending.searched = 0;
    pending.buffer = Vec::new();
}

fn poll_fd(socket: &impl AsRawFd) -> libc::pollfd {
    libc::pollfd { fd: socket.as_raw_fd(), events: libc::POLLIN, revents: 0 }
}
