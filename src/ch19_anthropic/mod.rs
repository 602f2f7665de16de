//! Chapter 19 — a second wire format: Anthropic's Messages API.
//!
//! The loop of chapter 1 talks to a [`Model`]; it has never known what goes over the wire. This
//! chapter proves it: [`AnthropicClient`] is a second `Model`, beside chapter 2's Chat
//! Completions client, for Anthropic's `/v1/messages` and the many servers that copy it. Only
//! the wire changes. The HTTP agent (idle timeout, no redirects, reply cap), the error
//! messages, the SSE reader and its receive loop, the retry policy and the redaction at the
//! model seam are the earlier chapters' own, reused rather than copied.
//!
//! What differs, each in a small file read in this order:
//! - this file: the client, its headers (`x-api-key` or a bearer token, `anthropic-version`),
//!   and `complete`, streamed or not;
//! - [`request`]: our history in Anthropic's shape — the system prompt apart, tool calls as
//!   `tool_use` blocks, results as `tool_result` blocks in a user turn, consecutive turns of
//!   one role merged, and two prompt-cache breakpoints;
//! - [`reply`]: a whole reply read back — content blocks, `stop_reason`, `usage` with its
//!   cache reads and writes;
//! - [`events`]: the streamed reply, event by event, for chapter 11's receive loop;
//! - [`failures`]: which results were errors, remembered from the loop's events.

pub mod choice;
pub mod events;
pub mod failures;
pub mod reply;
pub mod request;
#[cfg(test)]
mod tests;

use crate::ch02_loop::command_line::{Flag, Help, Takes};
use crate::ch02_loop::{Error, Model, Observer, Reply, Request};
use crate::ch02_model::errors::MESSAGES_API_ERROR;
use crate::ch02_model::layers::{KeySource, ModelLayer};
use crate::ch02_model::waiting::{backstop, first_byte_timeout, read_counted, run_watched};
use crate::ch02_model::{
    DEFAULT_IDLE_TIMEOUT, api_key_required, error_from_response, network_error, new_agent,
};
use crate::ch03_tools::secrets::{SecretVariable, base_url_secret, secret};
use crate::ch05_sessions::OPENAI_API;
use crate::ch05_sessions::RegisterParts;
use crate::ch11_streaming::{receive, start_worker};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The API's name in a session's record (chapter 5's `Origin`) and for `--api`.
pub const ANTHROPIC_API: &str = "anthropic";
/// The API version this client speaks; Anthropic keeps old versions working.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// The API requires an output limit on every request; `MINI_AGENT_MAX_TOKENS` changes it.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
/// `MINI_AGENT_MAX_TOKENS`: unset or empty is the default; else a whole number, at least 1.
pub fn parse_max_tokens(value: Option<&str>) -> Result<u32, Error> {
    match value.map(str::trim) {
        None | Some("") => Ok(DEFAULT_MAX_TOKENS),
        Some(text) => text.parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
            Error::Config(format!("MINI_AGENT_MAX_TOKENS must be a whole number, at least 1, got {text:?}"))
        }),
    }
}

/// Statuses worth another try here: chapter 8's, plus 500 (`api_error`) and 529 (`overloaded_error`).
pub const RETRY_STATUSES: &[u16] = &[429, 500, 502, 503, 504, 529];

// ANCHOR: keys
/// Anthropic's secret variables, which chapter 3 takes out of the environment and redacts like
/// `OPENAI_API_KEY` once the composition root hands it this list.
pub const API_KEY: SecretVariable = secret("ANTHROPIC_API_KEY");
pub const AUTH_TOKEN: SecretVariable = secret("ANTHROPIC_AUTH_TOKEN");
pub const BASE_URL: SecretVariable = base_url_secret("ANTHROPIC_BASE_URL");
pub const SECRETS: &[SecretVariable] = &[API_KEY, AUTH_TOKEN, BASE_URL];

/// Anthropic's credentials, as chapter 3's `Keys` took them.
#[derive(Clone, Debug, Default)]
pub struct AnthropicKeys {
    /// `ANTHROPIC_API_KEY`: sent as `x-api-key`.
    pub api_key: Option<String>,
    /// `ANTHROPIC_AUTH_TOKEN`: sent as `Authorization: Bearer`, as compatible gateways expect.
    pub auth_token: Option<String>,
    /// `ANTHROPIC_BASE_URL`.
    pub base_url: Option<String>,
}

/// How the credential travels.
#[derive(Clone)]
pub enum Auth {
    ApiKey(String),
    Bearer(String),
}

impl AnthropicKeys {
    pub fn from_keys(keys: &dyn KeySource) -> AnthropicKeys {
        AnthropicKeys {
            api_key: keys.value_of(API_KEY.name),
            auth_token: keys.value_of(AUTH_TOKEN.name),
            base_url: keys.value_of(BASE_URL.name),
        }
    }

    /// The key wins over the token when both are set, as in Anthropic's own tools.
    pub fn auth(&self) -> Option<Auth> {
        let key = self.api_key.clone().map(Auth::ApiKey);
        key.or_else(|| self.auth_token.clone().map(Auth::Bearer))
    }
}
// ANCHOR_END: keys

// ANCHOR: client
/// A Messages API client. Cloning is cheap and shares the connection pool.
#[derive(Clone)]
pub struct AnthropicClient {
    agent: ureq::Agent,
    pub url: String,
    auth: Option<Auth>,
    pub model: String,
    pub max_tokens: u32,
    /// Ask for the reply as a stream of events (chapter 11's `--stream`).
    pub stream: bool,
    pub idle_timeout: Duration,
    /// Chapter 2's bound on a request's total time (`MINI_AGENT_REQUEST_TIMEOUT_SECS`).
    pub request_limit: Option<Duration>,
    /// Chapter 2's fixed wait for the first byte (`MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS`), if set.
    pub first_byte_timeout: Option<Duration>,
}
// ANCHOR_END: client

impl std::fmt::Debug for AnthropicClient {
    // Hand-written so that the key can never end up in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("AnthropicClient").field("url", &self.url).field("model", &self.model).finish()
    }
}

/// `{base_url}/v1/messages`; a base that already ends in `/v1` gets `/messages` only.
pub fn messages_url(base_url: &str) -> String {
    let without_fragment = base_url.split_once('#').map_or(base_url, |(kept, _)| kept);
    let (path, query) = match without_fragment.split_once('?') {
        Some((path, query)) => (path, format!("?{query}")),
        None => (without_fragment, String::new()),
    };
    let path = path.trim_end_matches('/');
    let suffix = if path.ends_with("/v1") { "/messages" } else { "/v1/messages" };
    format!("{path}{suffix}{query}")
}

impl AnthropicClient {
    pub fn new(base_url: &str, auth: Option<Auth>, model: &str) -> Result<Self, Error> {
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(Error::Config(format!(
                "the base URL must start with http:// or https:// (got {base_url:?}); check --base-url or ANTHROPIC_BASE_URL"
            )));
        }
        if auth.is_none() && api_key_required(base_url) {
            return Err(Error::Config(format!(
                "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) is not set; {base_url} needs it"
            )));
        }
        Ok(AnthropicClient {
            agent: new_agent(),
            url: messages_url(base_url),
            auth,
            model: model.to_owned(),
            max_tokens: DEFAULT_MAX_TOKENS,
            stream: false,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            request_limit: None,
            first_byte_timeout: None,
        })
    }

    // ANCHOR: send
    /// POSTs `body` with Anthropic's headers; the rest is chapter 2's `send`: a per-read bound
    /// on silence (the backstop past the first-byte and idle bounds), the idle bound on
    /// writing, and an error status turned into the server's own words.
    pub fn send(
        &self,
        body: &[u8],
        accept: &str,
        per_read: Duration,
    ) -> Result<ureq::http::Response<ureq::Body>, Error> {
        let mut post = self.agent.post(&self.url).header("content-type", "application/json");
        post = post.header("accept", accept).header("anthropic-version", ANTHROPIC_VERSION);
        post = match &self.auth {
            Some(Auth::ApiKey(key)) => post.header("x-api-key", key),
            Some(Auth::Bearer(token)) => post.header("authorization", format!("Bearer {token}")),
            None => post,
        };
        let idle = self.idle_timeout;
        let config = post.config().timeout_per_read(Some(per_read)).timeout_per_write(Some(idle));
        post = config.timeout_global(self.request_limit).build();
        let response = post.send(body).map_err(|error| network_error(&self.url, error, idle))?;
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(own_words(error_from_response(response), &self.url))
        }
    }
    // ANCHOR_END: send
}

// ANCHOR: own_words
/// Chapter 2's advice is for Chat Completions; here the user needs other words. A 401 names
/// this API's variables. A 404, 405 or 501 that is not about the model is a server with no
/// Messages API at this address: most often an OpenAI-compatible one (llama.cpp, vLLM, Ollama
/// and OpenAI answer `/v1/messages` so, or not at all). Chapter 2's note that an error has this
/// API's shape is expected here, and dropped.
fn own_words(error: Error, url: &str) -> Error {
    match error {
        Error::Http { status: status @ (401 | 403), message, .. } => Error::Config(format!(
            "model request failed: {status} {message} — check ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"
        )),
        Error::Http { status: status @ (404 | 405 | 501), message, .. } if !message.starts_with("model:") => {
            Error::Config(format!(
                "model request failed: {status} {} — {url} is not a Messages API endpoint; if the \
                 server speaks OpenAI's Chat Completions (llama.cpp, vLLM, Ollama, OpenAI), drop \
                 --api anthropic, else check --base-url",
                message.trim_end_matches(MESSAGES_API_ERROR)
            ))
        }
        Error::Http { status, message, retry_after_ms, code } => Error::Http {
            status,
            message: message.trim_end_matches(MESSAGES_API_ERROR).to_owned(),
            retry_after_ms,
            code,
        },
        other => other,
    }
}
// ANCHOR_END: own_words

// ANCHOR: complete
impl Model for AnthropicClient {
    fn complete(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        let body = request::body(&self.model, self.max_tokens, request, self.stream);
        let (client, idle) = (self.clone(), self.idle_timeout);
        let fixed = self.first_byte_timeout;
        let first_byte = (first_byte_timeout(fixed, idle, body.len()), fixed.is_some());
        let read_timeout = backstop(first_byte.0, idle);
        if self.stream {
            // Chapter 11's worker and receive loop; only the events are Anthropic's.
            let send = Box::new(move |per_read| client.send(&body, "text/event-stream", per_read));
            let pieces = start_worker(self.url.clone(), send, read_timeout, idle)?;
            return receive(pieces, events::MessageAssembler::default(), first_byte, idle, observer);
        }
        // Chapter 2's wait: the first byte bounded apart from the gaps after it.
        let text = run_watched(first_byte, idle, move |received| {
            let response = client.send(&body, "application/json", read_timeout)?;
            received.fetch_add(1, Ordering::SeqCst);
            read_counted(&client.url, response, idle, &received)
        })?;
        reply::parse_message(&String::from_utf8_lossy(&text))
    }
}
// ANCHOR_END: complete
/// `--api openai|anthropic`: the model's wire format.
pub const API: Flag = Flag::value(
    19,
    "--api",
    Takes::OneOf("NAME", &[OPENAI_API, ANTHROPIC_API]),
    &[
        "the model's wire format: openai (Chat Completions, the",
        "default) or anthropic (the Messages API); default: a resumed",
        "session's own, else $MINI_AGENT_API, else openai",
    ],
);

// ANCHOR: register
/// Chapter 19's part: `--api`, Anthropic's secrets, the Messages API client in place of the one
/// before it when the run speaks it, chapter 8's retries around it with its statuses, and the
/// failures noted in each turn of a session.
pub fn register(registry: &mut dyn RegisterParts) {
    registry.part("failures", |_| Ok(Box::new(failures::ToolFailures)));
    registry.flag(API);
    registry.wire(choice::TWO_APIS);
    registry.model_layer(ModelLayer::Client, choice::anthropic_if_chosen);
    registry.model_layer(ModelLayer::Retries, |model, context| match context.wire {
        ANTHROPIC_API => crate::ch08_retry::retrying(model?, RETRY_STATUSES),
        _ => model,
    });
    for variable in SECRETS {
        registry.secret(*variable);
    }
    registry.help(Help {
        chapter: 19,
        page: "",
        section: "ENVIRONMENT",
        lines: &[
            "  MINI_AGENT_API             default for --api (openai or anthropic)",
            "  ANTHROPIC_API_KEY          with --api anthropic: the key, sent as x-api-key",
            "  ANTHROPIC_AUTH_TOKEN       with --api anthropic: a token sent as Authorization: Bearer",
            "  ANTHROPIC_BASE_URL         with --api anthropic: default for --base-url",
            "                             (https://api.anthropic.com; /v1/messages is appended)",
            "  MINI_AGENT_MAX_TOKENS      with --api anthropic: the reply's output limit (default 8192)",
        ],
    });
}
// ANCHOR_END: register
