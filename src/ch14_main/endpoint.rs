//! Where the model lives: flags, then (from chapter 10) a resumed session's own record, then
//! the environment, then the defaults. The key goes only where the user sends it.

use mini_agent::ch02_loop::Error;
use mini_agent::ch02_loop::command_line::{BASE_URL, DEMO, MODEL, Settings};
use mini_agent::ch02_model::ClientConfig;
/// The key and the other secrets of the run: read from the environment (chapter 2), from
/// chapter 3 on taken out of it at start-up.
pub use mini_agent::ch02_model::Keys;
use mini_agent::ch02_model::layers::CHAT_COMPLETIONS;
#[cfg(feature = "ch05")]
use mini_agent::ch05_sessions::{DEMO_ENDPOINT, Origin};
use mini_agent::demo::start_demo_server;
use mini_agent::scripted_server::ScriptedServer;

/// Where this run's model is: the client's settings, the origin sessions record (chapter 5),
/// and the demo server (when chosen), which lives in this process as long as this value does.
pub struct Connection {
    pub endpoint: ClientConfig,
    #[cfg(feature = "ch05")]
    pub origin: Origin,
    /// The wire format, as sessions record it: chapter 2's `openai`, or from chapter 19
    /// `anthropic`.
    pub wire: &'static str,
    /// The run's secrets, when they may go to this endpoint: only where the user sends the key,
    /// never to the demo model (a client other than chapter 2's finds its credential here).
    pub sent_keys: Option<Keys>,
    _demo: Option<ScriptedServer>,
}

/// The connection of a run that goes back to no session (`-p`, the REPL, a task): the flags,
/// the environment, the defaults (see [`choose_afresh`]).
pub fn connect_afresh(settings: &Settings, keys: &Keys) -> Result<Connection, Error> {
    connect_to(choose_afresh(settings, keys)?, keys)
}

/// The connection of a run that may continue a session (chapter 10): the flags, then what the
/// session recorded, then as afresh (see [`choose_endpoint`]).
#[cfg(feature = "ch10")]
pub fn connect(settings: &Settings, keys: &Keys, recorded: Option<&Origin>) -> Result<Connection, Error> {
    connect_to(choose_endpoint(settings, keys, recorded)?, keys)
}

/// Starts the demo model if that is the one chosen, and installs the redactor for this run
/// (chapter 3).
fn connect_to(chosen: Chosen, keys: &Keys) -> Result<Connection, Error> {
    // The demo model is a server in this process; it stops when `demo` is dropped.
    let demo = chosen
        .demo
        .then(start_demo_server)
        .transpose()
        .map_err(|e| Error::io("starting the demo model", e))?;
    let endpoint = client_config(&chosen, keys, demo.as_ref().map(|server| server.url.as_str()));
    // One redactor for everything that leaves the process from now on (chapter 3).
    if let Some(install_redactor) = super::registry().hooks.install_redactor {
        install_redactor(keys, &endpoint.base_url);
    }
    // Another wire format's credential goes where the OpenAI key would: only where the user
    // sends it, never to the demo model.
    let sent_keys = (chosen.send_key && demo.is_none()).then(|| keys.clone());
    Ok(Connection {
        // What a session records of where its model lives: never a key, and the demo model as
        // `demo` (its port changes every run).
        #[cfg(feature = "ch05")]
        origin: Origin::new(
            &endpoint.model,
            chosen.api,
            match chosen.demo {
                true => DEMO_ENDPOINT,
                false => &endpoint.base_url,
            },
        ),
        endpoint,
        wire: chosen.api,
        sent_keys,
        _demo: demo,
    })
}

// ANCHOR: endpoint
/// Where the model of this run lives, before the demo server (if any) has started.
pub struct Chosen {
    pub demo: bool,
    base_url: String,
    model: String,
    /// Whether the key goes with the requests: never to an endpoint only a journal named.
    send_key: bool,
    /// The wire format sessions record: `openai`, or from chapter 19 `anthropic`.
    pub api: &'static str,
}

/// Flags win. Then a resumed session's own record (chapter 5's `Origin`): `-c` goes back to
/// the server and model it talked to, the demo included. Then the environment, then the
/// defaults. The recorded model goes with the recorded endpoint: a `--base-url` or `--demo`
/// that moves a session elsewhere takes its model from `--model`, `MODEL_ID` or the default.
/// The key comes from the environment only (taken at start-up, chapter 3); the demo model
/// is never sent one.
#[cfg(feature = "ch10")]
pub fn choose_endpoint(settings: &Settings, keys: &Keys, recorded: Option<&Origin>) -> Result<Chosen, Error> {
    use mini_agent::{ch02_model::api_key_required, ch05_sessions::without_credentials};
    let env = |name: &str| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
    // The wire format (chapter 19 brings a second), and the record only if it is of that one:
    // a session moved to the other continues its history, not its endpoint or model.
    let wire = super::registry().hooks.wire.unwrap_or(CHAT_COMPLETIONS);
    let api = (wire.choose)(settings, recorded.map(|origin| origin.api.as_str()))?;
    let recorded = recorded.filter(|origin| origin.api == api);
    let moved = settings.has(&DEMO) || settings.has(&BASE_URL);
    let kept = recorded.filter(|_| !moved);
    let kept_endpoint = kept.and_then(|origin| origin.endpoint.as_deref());
    let demo = settings.has(&DEMO) || kept_endpoint == Some(DEMO_ENDPOINT);
    // ANCHOR_END: endpoint
    // ANCHOR: endpoint_url
    // Where the user sends the key: the environment's URL, else the default.
    let configured = (wire.configured_endpoint)(api, keys);
    let (base_url, send_key) = match (settings.value(&BASE_URL), kept_endpoint) {
        (Some(flag), _) => (flag.to_string(), true),
        // The record has no password; the environment's URL may hold it for the same server.
        (None, Some(endpoint)) if without_credentials(&configured) == endpoint => (configured, true),
        (None, Some(endpoint)) if demo => (endpoint.to_string(), false),
        // A journal is a file of the workspace: a cloned repository can plant one that names
        // its author's server. It may bring the session back to a local model server (a
        // loopback address, no key needed), never send the key or the conversation away.
        (None, Some(endpoint)) if !api_key_required(endpoint) => (endpoint.to_string(), false),
        (None, Some(endpoint)) => {
            return Err(Error::Config(format!(
                "this session talked to {endpoint}, not to {} where your key goes; a session file \
                 cannot choose where the key and the conversation are sent: run with --base-url \
                 {endpoint} to continue there",
                without_credentials(&configured)
            )));
        }
        (None, None) => (configured, true),
    };
    // ANCHOR_END: endpoint_url
    // ANCHOR: endpoint_model
    let model = settings
        .value(&MODEL)
        .map(str::to_string)
        .or_else(|| kept.map(|origin| origin.model.clone()))
        .or_else(|| demo.then(|| "demo".to_string()))
        .or_else(|| env("MODEL_ID"))
        .unwrap_or_else(|| (wire.default_model)(api).into());
    Ok(Chosen { demo, base_url, model, send_key, api })
}

/// The client's settings, once the demo server (when chosen) listens at `demo_url`.
pub fn client_config(chosen: &Chosen, keys: &Keys, demo_url: Option<&str>) -> ClientConfig {
    match demo_url {
        Some(url) => ClientConfig { base_url: url.to_string(), api_key: None, model: chosen.model.clone() },
        None => ClientConfig {
            base_url: chosen.base_url.clone(),
            api_key: keys.api_key().filter(|_| chosen.send_key),
            model: chosen.model.clone(),
        },
    }
}
// ANCHOR_END: endpoint_model

/// A run that goes back to no recorded session (every run before chapter 10): flags, the
/// environment, the defaults.
pub fn choose_afresh(settings: &Settings, keys: &Keys) -> Result<Chosen, Error> {
    let env = |name: &str| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
    let wire = super::registry().hooks.wire.unwrap_or(CHAT_COMPLETIONS);
    let api = (wire.choose)(settings, None)?;
    let base_url = settings.value(&BASE_URL).map(str::to_string);
    let base_url = base_url.unwrap_or_else(|| (wire.configured_endpoint)(api, keys));
    let demo = settings.has(&DEMO);
    let model = settings
        .value(&MODEL)
        .map(str::to_string)
        .or_else(|| demo.then(|| "demo".to_string()))
        .or_else(|| env("MODEL_ID"))
        .unwrap_or_else(|| (wire.default_model)(api).into());
    Ok(Chosen { demo, base_url, model, send_key: true, api })
}
