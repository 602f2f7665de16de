//! Chapter 2 — the model of a run is a fold.
//!
//! The loop takes one [`Model`]; what stands behind it grows chapter by chapter: another
//! client in place of this chapter's (chapter 11's streaming one, chapter 19's Messages API),
//! retries around it (chapter 8), redaction around those (chapter 3), and this chapter's check
//! for a tool call written as text around it all. Each of those chapters registers its layer
//! with its [place](ModelLayer); the composition root sorts what was registered by place
//! (chapter order within one) and folds it, so it names no chapter, and a layer never knows
//! which others are there. A layer is a plain function: it gets the model so far (or the error
//! building it met) and what it needs to know of the run, a [`ModelContext`].

use super::ClientConfig;
use super::waiting::Waits;
use crate::ch02_loop::command_line::{Registry, Settings};
use crate::ch02_loop::{Error, Model};

/// The wire format of chapter 2's client, OpenAI's Chat Completions, as sessions record it.
pub const OPENAI_API: &str = "openai";

// ANCHOR: model_layer
/// Where a layer goes around the model, innermost first. Not chapter order: chapter 3's
/// redaction must see what chapter 8's retries let through, whichever client a later chapter
/// chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ModelLayer {
    /// The client: chapter 2's, or one a later chapter puts in its place, given the one
    /// before it or the error building it met (a client is judged only if it is the one used).
    Client,
    /// Another try of a request that failed before the first byte of a reply (chapter 8).
    Retries,
    /// Secrets removed from what comes back (chapter 3).
    Redaction,
    /// A final answer that is a tool call written as text fails the turn (chapter 2).
    TextCalls,
}

/// What a layer knows of the run.
pub struct ModelContext<'a> {
    /// Where the model is, which one, and the key sent with chapter 2's requests.
    pub endpoint: &'a ClientConfig,
    pub settings: &'a Settings,
    pub waits: Waits,
    /// The wire format, as sessions record it: [`OPENAI_API`], or a later chapter's.
    pub wire: &'static str,
    /// The run's secrets when they may go to this endpoint: never to the demo model, nor to
    /// an endpoint only a session file named.
    pub keys: Option<&'a dyn KeySource>,
}

/// One layer: the model so far, or the error building it met, in; the model with this layer
/// out.
pub type Layer = fn(Result<Box<dyn Model>, Error>, &ModelContext) -> Result<Box<dyn Model>, Error>;

/// What a chapter registers from this one on: its model layers, beside its flags and help,
/// and the choice of wire format (a later chapter's replaces an earlier one's).
pub trait RegisterModel: Registry {
    fn model_layer(&mut self, place: ModelLayer, layer: Layer);
    fn wire(&mut self, wire: Wire);
}
// ANCHOR_END: model_layer

/// How the endpoint chooses a run's wire format, and what follows from it: chapter 2 speaks
/// Chat Completions alone ([`CHAT_COMPLETIONS`]); chapter 10 refuses a session recorded with
/// another; chapter 19 chooses between two.
#[derive(Clone, Copy)]
pub struct Wire {
    /// The wire format of this run, given the one a resumed session recorded, if any.
    pub choose: fn(&Settings, Option<&str>) -> Result<&'static str, Error>,
    /// Where the user sends the key of a wire format: its base-URL variable, else its default.
    pub configured_endpoint: fn(&str, &dyn KeySource) -> String,
    /// The model when nothing names one.
    pub default_model: fn(&str) -> &'static str,
}

/// Chapter 2's: Chat Completions, at `OPENAI_BASE_URL` or OpenAI's.
pub const CHAT_COMPLETIONS: Wire = Wire {
    choose: |_, _| Ok(OPENAI_API),
    configured_endpoint: |_, keys| {
        keys.value_of("OPENAI_BASE_URL").unwrap_or_else(|| super::DEFAULT_BASE_URL.to_string())
    },
    default_model: |_| super::DEFAULT_MODEL,
};

/// Where a client finds a secret of the run by its variable's name: chapter 2's `Keys`, read
/// from the environment, or chapter 3's, taken out of it.
pub trait KeySource {
    fn value_of(&self, variable: &str) -> Option<String>;
}

/// Chapter 2's layers: its client, innermost, and the text-call check, outermost.
pub fn register(registry: &mut dyn RegisterModel) {
    registry.model_layer(ModelLayer::Client, |_, context| {
        let client = super::ChatClient::new(context.endpoint.clone())?
            .with_idle_timeout(context.waits.idle)
            .with_first_byte_timeout(context.waits.first_byte)
            .with_request_limit(context.waits.limit);
        Ok(Box::new(client))
    });
    registry.model_layer(ModelLayer::TextCalls, |model, _| {
        Ok(Box::new(super::text_calls::TextCallCheck { inner: model? }))
    });
}
