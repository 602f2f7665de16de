//! Chapter 2 — the request as the server expects it.
//!
//! Our [`Message`] is the loop's own shape; the wire shape nests tool calls as
//! `{id, type: "function", function: {name, arguments}}` and leaves out empty fields some
//! servers reject. The types here borrow the conversation instead of copying it, because every
//! turn sends the whole history.

use crate::ch02_loop::Message;
use serde::Serialize;
use serde_json::Value;

// ANCHOR: wire
/// The body we POST. It borrows the conversation instead of copying it: each turn sends the
/// whole history, so building it must not cost a second copy of every message.
#[derive(Serialize)]
pub(super) struct RequestBody<'a> {
    pub(super) model: &'a str,
    pub(super) messages: Vec<WireMessage<'a>>,
    // Some servers reject an empty `tools` array, so a request without tools has none.
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    pub(super) tools: &'a [Value],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
pub(super) struct StreamOptions {
    pub(super) include_usage: bool,
}

// ANCHOR_END: wire
// ANCHOR: wire_message
/// Our `Message` in the shape the server expects: the same roles, with tool calls nested
/// as `{id, type: "function", function: {name, arguments}}`.
#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(super) enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}
// ANCHOR_END: wire_message

// ANCHOR: wire_tool_call
#[derive(Serialize)]
pub(super) struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
pub(super) struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

// ANCHOR_END: wire_tool_call
// ANCHOR: wire_from
impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(message: &'a Message) -> Self {
        match message {
            Message::System { content } => WireMessage::System { content },
            Message::User { content } => WireMessage::User { content },
            Message::Assistant { content, tool_calls } => WireMessage::Assistant {
                content: content.as_deref(),
                tool_calls: tool_calls
                    .iter()
                    .map(|call| WireToolCall {
                        id: &call.id,
                        kind: "function",
                        function: WireFunction { name: &call.name, arguments: &call.arguments },
                    })
                    .collect(),
            },
            Message::Tool { tool_call_id, content } => WireMessage::Tool { tool_call_id, content },
        }
    }
}
// ANCHOR_END: wire_from
