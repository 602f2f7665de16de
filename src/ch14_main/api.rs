//! Chapter 19's glue: which wire format this run speaks, and the Anthropic client built with
//! the same layers as chapter 2's (retries, redaction, the text-call check).
//!
//! The API is chosen like the endpoint: `--api`, then a resumed session's own record (so `-c`
//! goes back to the API it talked to), then `MINI_AGENT_API`, then `openai`. The demo model
//! speaks Chat Completions only.

use super::args::Options;
use super::endpoint::{DEFAULT_BASE_URL, DEFAULT_MODEL};
use mini_agent::ch02_loop::{Error, Model};
use mini_agent::ch02_model::text_calls::TextCallCheck;
use mini_agent::ch02_model::waiting::{FIRST_BYTE_VARIABLE, parse_first_byte_timeout};
use mini_agent::ch02_model::{ClientConfig, REQUEST_LIMIT_VARIABLE, parse_request_limit};
use mini_agent::ch03_tools::secrets::{Keys, Redacted, redactor};
use mini_agent::ch05_sessions::{OPENAI_API, Origin};
use mini_agent::ch08_retry::{Retrying, parse_max_retries};
use mini_agent::ch19_anthropic::{
    self as anthropic, ANTHROPIC_API, AnthropicClient, AnthropicKeys, Auth, RETRY_STATUSES, parse_max_tokens,
};
use std::time::Duration;

// ANCHOR: api
/// The wire format of this run's model: chapter 2's Chat Completions, or the Messages API with
/// the credential it sends (none for a loopback server that needs none).
#[derive(Clone)]
pub enum Api {
    OpenAi,
    Anthropic(Option<Auth>),
}

/// `--api`, else the resumed session's own API, else `MINI_AGENT_API`, else `openai`.
pub fn choose_api(options: &Options, recorded: Option<&Origin>) -> Result<&'static str, Error> {
    if options.demo {
        return match options.api.as_deref() {
            Some(ANTHROPIC_API) => Err(Error::Usage(
                "--demo speaks the Chat Completions API only: drop --api anthropic (or --demo)".into(),
            )),
            _ => Ok(OPENAI_API),
        };
    }
    let variable = std::env::var("MINI_AGENT_API").ok().filter(|value| !value.trim().is_empty());
    let (name, source) = match (&options.api, recorded, &variable) {
        (Some(flag), _, _) => (flag.as_str(), "--api"),
        (None, Some(origin), _) => (origin.api.as_str(), "the session"),
        (None, None, Some(value)) => (value.trim(), "MINI_AGENT_API"),
        (None, None, None) => (OPENAI_API, "the default"),
    };
    api_named(name).ok_or_else(|| match source {
        "the session" => Error::Config(format!(
            "this session was recorded with the '{name}' API, which this mini-agent does not speak"
        )),
        _ => Error::Config(format!("{source} must be openai or anthropic, got {name:?}")),
    })
}
// ANCHOR_END: api

/// The API of that name, as the constant sessions record.
pub fn api_named(name: &str) -> Option<&'static str> {
    match name {
        OPENAI_API => Some(OPENAI_API),
        ANTHROPIC_API => Some(ANTHROPIC_API),
        _ => None,
    }
}

/// The API of this run, and the session's record only if it is of that API: a session moved
/// to the other one continues its history, not its endpoint or model.
pub fn api_of<'a>(
    options: &Options,
    recorded: Option<&'a Origin>,
) -> Result<(&'static str, Option<&'a Origin>), Error> {
    let api = choose_api(options, recorded)?;
    Ok((api, recorded.filter(|origin| origin.api == api)))
}

/// Where the user sends the key of this API: its base-URL variable, else its default.
pub fn configured_endpoint(api: &str, keys: &Keys) -> String {
    match api {
        ANTHROPIC_API => AnthropicKeys::from_keys(keys)
            .base_url
            .clone()
            .unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.into()),
        _ => keys.base_url().unwrap_or_else(|| DEFAULT_BASE_URL.into()),
    }
}

pub fn default_model(api: &str) -> &'static str {
    if api == ANTHROPIC_API { anthropic::DEFAULT_MODEL } else { DEFAULT_MODEL }
}

// ANCHOR: anthropic_model
/// `TextCallCheck(Redacted(Retrying(AnthropicClient)))`: chapter 2's layers around the second
/// client, retrying Anthropic's 500 and 529 too.
pub fn anthropic_model(
    endpoint: &ClientConfig,
    auth: &Option<Auth>,
    options: &Options,
    idle: Duration,
) -> Result<Box<dyn Model>, Error> {
    let mut client = AnthropicClient::new(&endpoint.base_url, auth.clone(), &endpoint.model)?;
    client.idle_timeout = idle;
    client.request_limit = parse_request_limit(std::env::var(REQUEST_LIMIT_VARIABLE).ok().as_deref())?;
    client.first_byte_timeout = parse_first_byte_timeout(std::env::var(FIRST_BYTE_VARIABLE).ok().as_deref())?;
    client.stream = options.stream;
    client.max_tokens = parse_max_tokens(std::env::var("MINI_AGENT_MAX_TOKENS").ok().as_deref())?;
    let retries = parse_max_retries(std::env::var("MINI_AGENT_REQUEST_MAX_RETRIES").ok().as_deref())?;
    let retrying = Retrying::new(client, retries).with_statuses(RETRY_STATUSES);
    Ok(Box::new(TextCallCheck { inner: Redacted::new(retrying, redactor()) }))
}
// ANCHOR_END: anthropic_model
