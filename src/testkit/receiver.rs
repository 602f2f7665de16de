//! A webhook receiver on 127.0.0.1 for tests: it records each POST exactly as it arrived
//! (headers and the raw body bytes, so a test can check a signature itself) and answers with
//! the next scripted status, or never answers at all.

use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// How the receiver answers one POST.
#[derive(Clone, Debug)]
pub enum Answer {
    /// This status, with these extra headers and an empty body.
    Status(u16, Vec<(String, String)>),
    /// Read the request, then say nothing until the receiver is dropped.
    Silent,
}

/// One POST as it arrived (read by the scripted server's reader: one HTTP reader in the crate).
pub type Received = mini_agent::scripted_server::Request;

type Shared = Arc<(Mutex<Vec<Received>>, Mutex<VecDeque<Answer>>, AtomicBool)>;

/// The receiver; answers 200 once the script is used up. Stops when dropped.
pub struct Receiver {
    pub url: String,
    shared: Shared,
}

impl Receiver {
    pub fn start(script: Vec<Answer>) -> std::io::Result<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        let shared: Shared = Arc::new((Mutex::default(), Mutex::new(script.into()), AtomicBool::new(false)));
        let inner = shared.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                if inner.2.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let inner = inner.clone();
                thread::spawn(move || serve(stream, &inner));
            }
        });
        Ok(Receiver { url, shared })
    }

    /// What arrived so far, oldest first.
    pub fn received(&self) -> Vec<Received> {
        self.shared.0.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.shared.2.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://").trim_end_matches("/hook"));
    }
}

fn serve(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(stream) => stream,
        Err(_) => return,
    });
    let mut writer = stream;
    while let Some(received) = mini_agent::scripted_server::read_request(&mut reader) {
        if let Ok(mut log) = shared.0.lock() {
            log.push(received);
        }
        let answer = shared.1.lock().ok().and_then(|mut script| script.pop_front());
        match answer.unwrap_or(Answer::Status(200, Vec::new())) {
            Answer::Silent => {
                while !shared.2.load(Ordering::SeqCst) {
                    thread::sleep(Duration::from_millis(20));
                }
                return;
            }
            Answer::Status(status, headers) => {
                let mut head = format!("HTTP/1.1 {status} Scripted\r\ncontent-length: 0\r\n");
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                if writer.write_all(head.as_bytes()).is_err() {
                    return;
                }
            }
        }
    }
}
