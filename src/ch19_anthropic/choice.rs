//! Chapter 19 on the command line: which wire format this run speaks, and the Messages API client
//! in place of chapter 2's, with the same layers around it (retries, redaction, the text-call
//! check), which the composition root adds as for any client.
//!
//! The API is chosen like the endpoint: `--api`, then a resumed session's own record (so `-c`
//! goes back to the API it talked to), then `MINI_AGENT_API`, then `openai`. The demo model
//! speaks both (`--demo --api anthropic`), and is never sent a credential.

use super::{ANTHROPIC_API, API, AnthropicClient, AnthropicKeys, Auth, parse_max_tokens};
use crate::ch02_loop::command_line::Settings;
use crate::ch02_loop::{Error, Model};
use crate::ch02_model::DEFAULT_MODEL;
use crate::ch02_model::layers::{CHAT_COMPLETIONS, KeySource, ModelContext, Wire};
use crate::ch05_sessions::OPENAI_API;
use crate::ch11_streaming::STREAM;

// ANCHOR: api
/// The wire format of this run's model: chapter 2's Chat Completions, or the Messages API with
/// the credential it sends (none for a loopback server that needs none).
#[derive(Clone)]
pub enum Api {
    OpenAi,
    Anthropic(Option<Auth>),
}

impl Api {
    /// The wire format `api` (as sessions record it) of this run; Anthropic's credential goes
    /// where the OpenAI key would: only where the user sends it (`keys` is `None` elsewhere).
    pub fn of_run(api: &str, keys: Option<&dyn KeySource>) -> Api {
        match api {
            ANTHROPIC_API => Api::Anthropic(keys.and_then(|keys| AnthropicKeys::from_keys(keys).auth())),
            _ => Api::OpenAi,
        }
    }
}

/// `--api`, else the resumed session's own API, else `MINI_AGENT_API`, else `openai`.
pub fn choose_api(settings: &Settings, recorded: Option<&str>) -> Result<&'static str, Error> {
    let variable = std::env::var("MINI_AGENT_API").ok().filter(|value| !value.trim().is_empty());
    let (name, source) = match (settings.value(&API), recorded, &variable) {
        (Some(flag), _, _) => (flag, "--api"),
        (None, Some(api), _) => (api, "the session"),
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

/// Chapter 19's wire formats: chosen by [`choose_api`], each with its own base-URL variable
/// and default model.
pub const TWO_APIS: Wire = Wire {
    choose: choose_api,
    configured_endpoint: |api, keys| match api {
        ANTHROPIC_API => {
            AnthropicKeys::from_keys(keys).base_url.clone().unwrap_or_else(|| super::DEFAULT_BASE_URL.into())
        }
        _ => (CHAT_COMPLETIONS.configured_endpoint)(api, keys),
    },
    default_model: |api| if api == ANTHROPIC_API { super::DEFAULT_MODEL } else { DEFAULT_MODEL },
};

// ANCHOR: anthropic_model
/// Chapter 19's choice of client: the Messages API in place of `model` when this run speaks
/// it, streaming with `--stream`; the layers of the other chapters go around it all the same.
/// The Chat Completions client it replaces may have failed to build (its key check names
/// `OPENAI_API_KEY`): that failure is not this run's.
pub fn anthropic_if_chosen(
    model: Result<Box<dyn Model>, Error>,
    context: &ModelContext,
) -> Result<Box<dyn Model>, Error> {
    let Api::Anthropic(auth) = Api::of_run(context.wire, context.keys) else { return model };
    let (endpoint, settings, waits) = (context.endpoint, context.settings, context.waits);
    let mut client = AnthropicClient::new(&endpoint.base_url, auth, &endpoint.model)?;
    client.idle_timeout = waits.idle;
    client.first_byte_timeout = waits.first_byte;
    client.request_limit = waits.limit;
    client.stream = settings.has(&STREAM);
    client.max_tokens = parse_max_tokens(std::env::var("MINI_AGENT_MAX_TOKENS").ok().as_deref())?;
    Ok(Box::new(client))
}
// ANCHOR_END: anthropic_model
