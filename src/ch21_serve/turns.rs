//! Turns: a queue per session, a thread per busy session, and the handle a turn works through.
//!
//! Sessions run side by side; a session's own messages run one after the other, in the order
//! they came. A message sent while the session is busy is queued: it becomes the session's
//! next turn, with its own answer (at the terminal a line typed during a turn joins the
//! running one instead; over HTTP every message is a request that wants its own reply). A
//! session with work has one worker thread, which takes its messages in order, waits for a
//! run slot, runs the turn, and ends when the queue is empty: an idle session costs no thread.
//!
//! The [`Turn`] given to the backend is the turn's way back to the service: `emit` appends to
//! the session's event log, `cancelled` says whether to stop, `ask` puts a question on the
//! session's approval desk and waits, giving its run slot back meanwhile.

use super::approvals::Desk;
use super::backend::{ApprovalRequest, Backend, Decision, TurnEnd};
use super::events::{Hub, Sequence};
use super::response::Refusal;
use super::slots::Slots;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// Messages one session may have waiting behind its running turn (429 beyond).
pub const MAX_QUEUED_PER_SESSION: usize = 16;

/// What the service shares with every turn.
pub struct Shared {
    pub backend: Arc<dyn Backend>,
    pub slots: Slots,
    pub sequence: Sequence,
    pub stopping: AtomicBool,
    pub turn_numbers: AtomicU64,
    /// Worker threads alive; [`Shared::wait_for_workers`] waits for 0.
    workers: Mutex<usize>,
    workers_done: Condvar,
}

impl Shared {
    pub fn new(backend: Arc<dyn Backend>, max_running: usize) -> Shared {
        Shared {
            backend,
            slots: Slots::new(max_running),
            sequence: Sequence::default(),
            stopping: AtomicBool::new(false),
            turn_numbers: AtomicU64::new(0),
            workers: Mutex::new(0),
            workers_done: Condvar::new(),
        }
    }

    /// Returns once every worker has recorded how its turn ended.
    pub fn wait_for_workers(&self) {
        let mut workers = self.workers.lock().unwrap_or_else(PoisonError::into_inner);
        while *workers > 0 {
            workers = self.workers_done.wait(workers).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// What a session is doing now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Idle,
    /// Its next turn waits for a run slot.
    Waiting,
    Running,
    /// Its turn waits for a person to allow or deny a call.
    Approval,
}

/// A session as the service sees it while it is in use: its queue, its running turn, its
/// event log and its approval desk.
pub struct Live {
    pub id: String,
    pub hub: Hub,
    pub desk: Desk,
    state: Mutex<LiveState>,
}

#[derive(Default)]
struct LiveState {
    queue: VecDeque<Queued>,
    current: Option<Current>,
    worker: bool,
}

struct Current {
    cancel: Arc<AtomicBool>,
    activity: Activity,
}

struct Queued {
    number: u64,
    message: String,
    ending: Arc<Ending>,
}

/// Where a handler waits for the end of the turn its message started.
#[derive(Default)]
pub struct Ending {
    end: Mutex<Option<TurnEnd>>,
    done: Condvar,
}

impl Ending {
    fn set(&self, end: TurnEnd) {
        *self.end.lock().unwrap_or_else(PoisonError::into_inner) = Some(end);
        self.done.notify_all();
    }

    pub fn is_done(&self) -> bool {
        self.end.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    pub fn wait(&self) -> TurnEnd {
        let mut end = self.end.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(end) = end.as_ref() {
                return end.clone();
            }
            end = self.done.wait(end).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Live {
    pub fn new(id: &str) -> Live {
        Live { id: id.to_string(), hub: Hub::default(), desk: Desk::default(), state: Mutex::default() }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, LiveState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What it is doing, and how many messages wait behind that.
    pub fn activity(&self) -> (Activity, usize) {
        let state = self.state();
        (state.current.as_ref().map_or(Activity::Idle, |current| current.activity), state.queue.len())
    }

    /// Whether a turn is running or waiting to.
    pub fn busy(&self) -> bool {
        let state = self.state();
        state.current.is_some() || !state.queue.is_empty()
    }

    fn set_activity(&self, activity: Activity) {
        if let Some(current) = self.state().current.as_mut() {
            current.activity = activity;
        }
    }

    // ANCHOR: enqueue
    /// Queues `message` as the session's next turn; starts the session's worker if it has
    /// none. Returns the turn's number and where its end will be told.
    pub fn enqueue(
        self: &Arc<Live>,
        shared: &Arc<Shared>,
        message: String,
    ) -> Result<(u64, Arc<Ending>), Refusal> {
        if shared.stopping.load(Ordering::SeqCst) {
            return Err(Refusal::new(503, "the service is stopping"));
        }
        let mut state = self.state();
        if state.queue.len() >= MAX_QUEUED_PER_SESSION {
            return Err(Refusal::new(
                429,
                format!(
                    "{MAX_QUEUED_PER_SESSION} messages already wait in this session: wait for its turns to end"
                ),
            ));
        }
        let number = shared.turn_numbers.fetch_add(1, Ordering::SeqCst) + 1;
        let ending = Arc::new(Ending::default());
        state.queue.push_back(Queued { number, message, ending: ending.clone() });
        if !state.worker {
            *shared.workers.lock().unwrap_or_else(PoisonError::into_inner) += 1;
            let (live, for_worker) = (self.clone(), shared.clone());
            let started = std::thread::Builder::new()
                .name(format!("session-{}", self.id))
                .spawn(move || work(&live, &for_worker));
            match started {
                Ok(_) => state.worker = true,
                Err(error) => {
                    state.queue.pop_back();
                    drop(state);
                    worker_gone(shared);
                    return Err(Refusal::new(503, format!("could not start a thread for the turn: {error}")));
                }
            }
        }
        Ok((number, ending))
    }
    // ANCHOR_END: enqueue

    /// Cancels the running turn (as Ctrl+C does) and every message queued behind it.
    /// Returns how many turns were cancelled.
    pub fn cancel(&self, shared: &Shared, why: &str) -> usize {
        let mut state = self.state();
        let dropped: Vec<Queued> = state.queue.drain(..).collect();
        let running = state.current.as_ref().map(|current| current.cancel.store(true, Ordering::SeqCst));
        drop(state);
        for queued in &dropped {
            self.hub.push(&shared.sequence, queued.number, &exit_event(130, Some(why)));
            queued.ending.set(TurnEnd::failed(130, why));
        }
        shared.slots.wake();
        self.desk.wake();
        dropped.len() + usize::from(running.is_some())
    }
}

fn worker_gone(shared: &Shared) {
    let mut workers = shared.workers.lock().unwrap_or_else(PoisonError::into_inner);
    *workers -= 1;
    drop(workers);
    shared.workers_done.notify_all();
}

// ANCHOR: work
/// A session's worker: its queued messages, one turn at a time, until none is left. The next
/// turn is taken before this one's end is told, so a client that hears "done" finds the
/// session idle (or busy with the next message), never still busy with this one.
fn work(live: &Arc<Live>, shared: &Arc<Shared>) {
    let mut next = take_next(live);
    while let Some(queued) = next {
        let end = run_one(live, shared, &queued);
        live.hub.push(&shared.sequence, queued.number, &exit_event(end.code, end.error.as_deref()));
        next = take_next(live);
        queued.ending.set(end);
    }
    live.hub.wake();
    worker_gone(shared);
}
// ANCHOR_END: work

/// The next queued message, made the current turn; with none, the worker is done.
fn take_next(live: &Live) -> Option<Queued> {
    let mut state = live.state();
    let next = state.queue.pop_front();
    state.current = next.as_ref().map(|_| Current { cancel: Arc::default(), activity: Activity::Waiting });
    state.worker = next.is_some();
    next
}

fn run_one(live: &Arc<Live>, shared: &Arc<Shared>, queued: &Queued) -> TurnEnd {
    let cancel = live.state().current.as_ref().map(|current| current.cancel.clone()).unwrap_or_default();
    let turn = Turn(Arc::new(TurnInner {
        live: live.clone(),
        shared: shared.clone(),
        number: queued.number,
        message: queued.message.clone(),
        cancel,
        holds_slot: AtomicBool::new(false),
    }));
    if !turn.take_slot() {
        return TurnEnd::failed(130, "cancelled before it started");
    }
    live.set_activity(Activity::Running);
    let backend = shared.backend.clone();
    let end = catch_unwind(AssertUnwindSafe(|| backend.run_turn(&live.id, &queued.message, &turn)))
        .unwrap_or_else(|_| TurnEnd::failed(1, "the turn stopped on an internal error (a panic)"));
    if end.code == 0 {
        turn.emit(json!({"type": "final", "answer": end.answer.as_deref().unwrap_or_default()}));
    }
    turn.give_slot_back();
    end
}

/// The `exit` event that ends every turn's events, as it ends `--json`'s.
pub fn exit_event(code: u8, error: Option<&str>) -> Value {
    json!({"type": "exit", "code": code, "error": error})
}

/// The running turn's handle on the service (cheap to clone; the backend's permission
/// prompter keeps one).
#[derive(Clone)]
pub struct Turn(Arc<TurnInner>);

struct TurnInner {
    live: Arc<Live>,
    shared: Arc<Shared>,
    number: u64,
    message: String,
    cancel: Arc<AtomicBool>,
    holds_slot: AtomicBool,
}

impl Turn {
    pub fn session_id(&self) -> &str {
        &self.0.live.id
    }

    /// Appends an event (a `--json` event object) to the session's log. The `session` event
    /// that opens a turn gets the turn's `message`: `-p`'s caller knows its prompt, but a
    /// second client watching the session does not.
    pub fn emit(&self, mut event: Value) {
        if event["type"] == "session" && event.get("message").is_none() {
            event["message"] = json!(self.0.message);
        }
        self.0.live.hub.push(&self.0.shared.sequence, self.0.number, &event);
    }

    /// Whether the turn should stop: cancelled over HTTP, or the service is stopping.
    pub fn cancelled(&self) -> bool {
        self.0.cancel.load(Ordering::SeqCst) || self.0.shared.stopping.load(Ordering::SeqCst)
    }

    /// The flag a cancel sets, for code that polls a flag of its own.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.0.cancel.clone()
    }

    // ANCHOR: ask
    /// Asks a person about a call: the question goes on the session's desk and in its events,
    /// and the turn gives its run slot back until the answer comes. A cancelled turn is
    /// denied.
    pub fn ask(&self, mut request: ApprovalRequest) -> Decision {
        // The id names the approval in a URL: one a model made up that a URL cannot carry (or
        // that waits already) gets a name of the service's own.
        if super::routes::plain_id(&request.call_id).is_none() || self.0.live.desk.waits_on(&request.call_id)
        {
            request.call_id = format!("approval-{}", self.0.shared.sequence.last() + 1);
        }
        let mut event = super::approvals::describe(&request);
        event["type"] = json!("approval");
        self.emit(event);
        let live = &self.0.live;
        live.set_activity(Activity::Approval);
        self.give_slot_back();
        let decision = live.desk.ask(request, || self.cancelled());
        live.set_activity(Activity::Waiting);
        let resumed = self.take_slot();
        live.set_activity(Activity::Running);
        match decision {
            Some(decision) if resumed => decision,
            _ => Decision::Deny("the turn was cancelled before anyone answered".into()),
        }
    }
    // ANCHOR_END: ask

    fn take_slot(&self) -> bool {
        let capacity = self.0.shared.slots.capacity();
        let taken = self.0.shared.slots.acquire(
            |running| {
                self.emit(json!({
                    "type": "notice", "kind": "waiting",
                    "text": format!("waiting for a run slot: {running} of {capacity} turns are running (--max-running)"),
                }))
            },
            || self.cancelled(),
        );
        self.0.holds_slot.store(taken, Ordering::SeqCst);
        taken
    }

    fn give_slot_back(&self) {
        if self.0.holds_slot.swap(false, Ordering::SeqCst) {
            self.0.shared.slots.release();
        }
    }
}
