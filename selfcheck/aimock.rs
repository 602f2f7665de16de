//! aimock (`@copilotkit/aimock`, which `.ci/contract` installs and starts) as the contract
//! tests drive it: reset and loaded with the repository's fixtures, told to fail a request,
//! and asked what the binary sent. One copy, included by `contract.rs` (Chat Completions) and
//! `contract_anthropic.rs` (the Messages API).

use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// One aimock server shared by every case; the lock keeps the cases from interleaving.
static SERVER: Mutex<()> = Mutex::new(());

pub fn lock() -> MutexGuard<'static, ()> {
    SERVER.lock().unwrap_or_else(PoisonError::into_inner)
}

pub struct Aimock {
    /// The server's origin, without `/v1`.
    pub origin: String,
    /// The API path whose requests [`Aimock::sent`] reads back (`/v1/chat/completions`…).
    api_path: &'static str,
}

/// A request the binary sent, as aimock's journal kept it.
pub struct Sent {
    pub status: u16,
    pub headers: Value,
    pub body: Value,
}

impl Aimock {
    /// The server named by `AIMOCK_URL`, reset and loaded with `fixtures` (files of
    /// `scripts/contract/fixtures/`), its journal read at `api_path`. Without the variable the
    /// case fails: run `.ci/contract`, which starts aimock.
    pub fn fresh(case: &str, fixtures: &[PathBuf], api_path: &'static str) -> Aimock {
        let Ok(url) = std::env::var("AIMOCK_URL") else {
            panic!("{case} needs AIMOCK_URL: run .ci/contract to test against aimock");
        };
        let origin = url.trim_end_matches('/').trim_end_matches("/v1").to_string();
        let aimock = Aimock { origin, api_path };
        aimock.post("/__aimock/reset", "{}");
        for file in fixtures {
            let text = std::fs::read_to_string(file).expect("readable fixture file");
            let answer = aimock.post("/__aimock/fixtures", &text);
            assert!(answer["added"].as_u64().is_some_and(|n| n > 0), "{}: {answer}", file.display());
        }
        aimock
    }

    pub fn post(&self, path: &str, body: &str) -> Value {
        let mut response = ureq::post(format!("{}{path}", self.origin))
            .content_type("application/json")
            .send(body)
            .unwrap_or_else(|error| panic!("aimock control POST {path}: {error}"));
        let text = response.body_mut().read_to_string().expect("aimock control answer");
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("aimock {path} answered {text:?}: {error}"))
    }

    /// Queues one error that the next request gets instead of its fixture.
    #[allow(dead_code)] // the Chat Completions cases use it
    pub fn inject_error_once(&self, status: u16, message: &str) {
        let answer = self
            .post("/__aimock/error", &json!({"status": status, "body": {"message": message}}).to_string());
        assert_eq!(answer, json!({"queued": true}));
    }

    /// Every request to the API path received since the reset, oldest first.
    pub fn sent(&self) -> Vec<Sent> {
        let url = format!("{}/__aimock/journal?path={}", self.origin, self.api_path);
        let mut response = ureq::get(url).call().expect("aimock journal");
        let text = response.body_mut().read_to_string().expect("aimock journal body");
        let entries: Vec<Value> = serde_json::from_str(&text).expect("the journal is a JSON array");
        entries
            .into_iter()
            .map(|entry| Sent {
                status: entry["response"]["status"].as_u64().and_then(|s| u16::try_from(s).ok()).unwrap_or(0),
                headers: entry["headers"].clone(),
                body: entry["body"].clone(),
            })
            .collect()
    }
}

pub fn statuses(sent: &[Sent]) -> Vec<u16> {
    sent.iter().map(|request| request.status).collect()
}

/// The fixture files of `scripts/contract/fixtures/` (all of them with `name` `None`).
pub fn fixtures(name: Option<&str>) -> Vec<PathBuf> {
    let directory = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/contract/fixtures"));
    let mut files: Vec<_> = std::fs::read_dir(&directory)
        .expect("scripts/contract/fixtures exists")
        .map(|entry| entry.expect("readable fixture dir entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .filter(|path| name.is_none_or(|name| path.file_name().is_some_and(|file| file == name)))
        .collect();
    files.sort();
    files
}
