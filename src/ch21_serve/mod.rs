//! Chapter 21 — the service: the same sessions, behind HTTP, for editors, scripts and a browser.
//!
//! Until now a person at a terminal, or a script with `-p`, drove one session at a time.
//! `mini-agent serve` lets many clients drive many sessions at once: REST for sessions,
//! messages, approvals and tasks; Server-Sent Events whose events are exactly the `--json`
//! events; the same journals as the terminal; one embedded page that is a console and a task
//! board. Nothing in the loop changes: a turn over HTTP is `Agent::turn`, as at the terminal.
//!
//! Synchronous, like the rest of the agent: one thread reads every connection
//! ([`listener`]), a request that arrived whole gets a thread of its own ([`api`]), a
//! session with work gets a worker thread ([`turns`]), and at most `--max-running` turns
//! work at once ([`slots`]).
//!
//! * [`request`], [`response`] — HTTP/1.1 as far as we need it, with limits.
//! * [`guard`] — the token, `Host` and `Origin`: who may talk to the service.
//! * [`listener`] — accept and read without ever waiting on one client.
//! * [`routes`], [`api`] — the URL table and the handlers.
//! * [`backend`] — the seam: what the service needs from the agent.
//! * [`command_line`] — `serve`'s flags and its token variable.
//! * [`turns`], [`slots`], [`approvals`] — queues, run slots, and questions waiting for a person.
//! * [`events`], [`sse`] — the events kept per session, and the stream that sends them.
//! * [`transcript`] — a journal as the events a console draws.
//! * [`console`] — the page.

pub mod api;
pub mod approvals;
pub mod backend;
pub mod command_line;
pub mod console;
pub mod events;
pub mod guard;
pub mod listener;
pub mod request;
pub mod response;
pub mod routes;
pub mod slots;
pub mod sse;
#[cfg(test)]
mod tests;
pub mod transcript;
pub mod turns;

pub use backend::{ApprovalRequest, Backend, Decision, TurnEnd};
pub use command_line::register;
pub use guard::{TOKEN_VARIABLE, Token};
pub use listener::Limits;
pub use response::Refusal;
pub use turns::Turn;

use crate::ch02_loop::Error;
use listener::{Dispatch, Listener, Waker};
use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;
use turns::{Live, Shared};

/// Requests handled at once (each on its thread); more get a 503.
pub const MAX_HANDLERS: usize = 256;
/// Idle sessions whose recent events are kept for a late stream; older ones forget theirs.
pub const KEEP_IDLE_LOGS: usize = 16;
/// How long [`Server::wait`] lets the last answers be written.
const DRAIN_ANSWERS: Duration = Duration::from_secs(3);
/// A reader that takes longer than this to accept bytes is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// How to serve.
pub struct Settings {
    /// Where to listen (port 0: any free port).
    pub address: SocketAddr,
    /// Turns working at once.
    pub max_running: usize,
    pub token: Token,
    pub limits: Limits,
}

/// What the handlers share: the turns' state, the live sessions, the page.
pub struct Service {
    pub shared: Arc<Shared>,
    lives: Mutex<HashMap<String, Arc<Live>>>,
    handlers: AtomicUsize,
    console: console::Console,
}

impl Service {
    /// The live state of session `id`, made on first use.
    pub fn live(&self, id: &str) -> Arc<Live> {
        let mut lives = self.lives.lock().unwrap_or_else(PoisonError::into_inner);
        lives.entry(id.to_string()).or_insert_with(|| Arc::new(Live::new(id))).clone()
    }

    /// The live state of session `id` if it has one.
    pub fn live_if_any(&self, id: &str) -> Option<Arc<Live>> {
        self.lives.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    pub fn forget_session(&self, id: &str) {
        self.lives.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
    }

    /// Keeps the recent events of the [`KEEP_IDLE_LOGS`] idle sessions used last; the others
    /// forget theirs (the journal has them), so idle sessions cost a few hundred bytes each.
    pub fn trim_logs(&self) {
        let lives: Vec<Arc<Live>> =
            self.lives.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        let mut idle: Vec<(u64, Arc<Live>)> = lives
            .into_iter()
            .filter(|live| !live.busy() && live.hub.bytes() > 0)
            .map(|live| {
                (live.hub.after(&self.shared.sequence, 0).events.last().map_or(0, |event| event.seq), live)
            })
            .collect();
        idle.sort_by_key(|(newest, _)| std::cmp::Reverse(*newest));
        for (_, live) in idle.iter().skip(KEEP_IDLE_LOGS) {
            live.hub.forget();
        }
    }

    /// Every session with a live state.
    pub fn lives(&self) -> Vec<Arc<Live>> {
        self.lives.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect()
    }
}

/// A running service.
pub struct Server {
    address: SocketAddr,
    url: String,
    service: Arc<Service>,
    waker: Waker,
    listener: Option<JoinHandle<()>>,
}

/// Binds `settings.address` and serves `backend` on a thread of its own.
pub fn start(settings: Settings, backend: Arc<dyn Backend>) -> Result<Server, Error> {
    guard::check_bind(settings.address.ip(), &settings.token).map_err(Error::Config)?;
    let socket = TcpListener::bind(settings.address).map_err(|error| bind_error(settings.address, error))?;
    let address = socket.local_addr().map_err(|error| Error::io("reading the bound address", error))?;
    let guard = Arc::new(guard::Guard::new(&settings.token, address).map_err(Error::Config)?);
    let service = Arc::new(Service {
        shared: Arc::new(Shared::new(backend, settings.max_running)),
        lives: Mutex::default(),
        handlers: AtomicUsize::new(0),
        console: console::Console::new(),
    });
    let (listener, waker) = Listener::new(socket, guard, settings.limits)
        .map_err(|error| Error::io("preparing the listening socket", error))?;
    let for_listener = service.clone();
    let thread = std::thread::Builder::new()
        .name("serve-listener".into())
        .spawn(move || {
            let dispatch = dispatcher(for_listener.clone());
            listener.run(&for_listener.shared.stopping, &dispatch);
        })
        .map_err(|error| Error::io("starting the listener thread", error))?;
    let url = console_url(address, &settings.token);
    Ok(Server { address, url, service, waker, listener: Some(thread) })
}

impl Server {
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The console's URL, with the token when it was made here (Jupyter's style).
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn service(&self) -> &Arc<Service> {
        &self.service
    }

    /// Stops accepting, cancels every turn (each records its interruption, as at Ctrl+C) and
    /// ends every stream; [`Server::wait`] then returns once the turns have ended.
    pub fn stop(&self) {
        let shared = &self.service.shared;
        shared.stopping.store(true, Ordering::SeqCst);
        for live in self.service.lives() {
            live.cancel(shared, "the service is stopping");
            live.hub.wake();
        }
        self.waker.wake();
    }

    pub fn wait(mut self) {
        if let Some(thread) = self.listener.take() {
            let _ = thread.join();
        }
        self.service.shared.wait_for_workers();
        // The answers of the turns that just ended are being written; a client that does not
        // read its answer is not waited for long.
        let deadline = std::time::Instant::now() + DRAIN_ANSWERS;
        while self.service.handlers.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.listener.is_some() {
            self.stop();
        }
    }
}

/// Hands a whole request to a thread of its own, at most [`MAX_HANDLERS`] at once.
fn dispatcher(service: Arc<Service>) -> Dispatch {
    Box::new(move |mut stream: TcpStream, request| {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
        if service.handlers.fetch_add(1, Ordering::SeqCst) >= MAX_HANDLERS {
            service.handlers.fetch_sub(1, Ordering::SeqCst);
            let busy =
                Refusal::new(503, format!("{MAX_HANDLERS} requests are being answered: try again shortly"));
            let _ = busy.response().write_to(&mut stream);
            return;
        }
        // A thread that cannot start still leaves the client an answer, on a second handle.
        let answer_here = stream.try_clone();
        let for_thread = service.clone();
        let started = std::thread::Builder::new().name("serve-request".into()).spawn(move || {
            api::handle(&for_thread, request, &mut stream);
            for_thread.handlers.fetch_sub(1, Ordering::SeqCst);
        });
        if let Err(error) = started {
            service.handlers.fetch_sub(1, Ordering::SeqCst);
            let busy = Refusal::new(503, format!("could not start a thread for the request: {error}"));
            if let Ok(mut stream) = answer_here {
                let _ = busy.response().write_to(&mut stream);
            }
        }
    })
}

fn console_url(address: SocketAddr, token: &Token) -> String {
    let host = match address.ip() {
        ip if ip.is_unspecified() => "127.0.0.1".to_string(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        ip => ip.to_string(),
    };
    match token.generated {
        true => format!("http://{host}:{}/?token={}", address.port(), token.value()),
        false => format!("http://{host}:{}/?token=${}", address.port(), guard::TOKEN_VARIABLE),
    }
}

fn bind_error(address: SocketAddr, error: std::io::Error) -> Error {
    let hint = match error.kind() {
        std::io::ErrorKind::AddrInUse => {
            ": the port is in use; choose another with --port, or --port 0 for any free one"
        }
        std::io::ErrorKind::AddrNotAvailable => ": this machine has no such address; try --host 127.0.0.1",
        std::io::ErrorKind::PermissionDenied => {
            ": ports below 1024 need privileges; choose --port 1024 or above"
        }
        _ => "",
    };
    Error::Config(format!("cannot listen on {address}: {error}{hint}"))
}
