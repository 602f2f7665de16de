//! Chapter 19 — a streamed Messages reply, event by event.
//!
//! The stream is SSE, so chapter 11's parser and receive loop read it; what differs is the
//! events, each a JSON object whose `type` names it:
//!
//! `message_start` (the message, with the prompt's `usage`) → for each content block
//! `content_block_start` (a `text` block, or a `tool_use` with its id and name) →
//! `content_block_delta`s (`text_delta` pieces of text, `input_json_delta` pieces of the call's
//! JSON input) → `content_block_stop` → `message_delta` (the `stop_reason`, the output tokens) →
//! `message_stop`. `ping`s may come at any time; an `error` event ends the stream.
//!
//! The rule of chapter 11 holds: the reply exists only at `message_stop`. A stream that ends
//! before it is cut, its text partial, its calls never run. Events and delta types this client
//! does not know are skipped, as Anthropic's versioning policy asks: new ones may appear.

use super::reply::{parse_message, parse_usage, tool_use};
use crate::ch02_loop::{CacheUsage, Error, Event, Observer, Reply, ToolCall, Usage};
use crate::ch02_model::{MAX_REPLY_BYTES, quote, reply_too_large, server_message};
use crate::ch11_streaming::Assemble;
use crate::ch11_streaming::StreamedText;
use serde_json::Value;
use std::collections::BTreeMap;

// ANCHOR: assembler
/// Builds a reply from the events of a streamed Messages reply.
#[derive(Default)]
pub struct MessageAssembler {
    text: String,
    /// The tool calls by block index: the call, and its JSON input as it arrives.
    calls: BTreeMap<u64, (ToolCall, String)>,
    usage: Option<Usage>,
    cache: CacheUsage,
    stop_reason: Option<String>,
    /// `message_stop` arrived.
    done: bool,
    /// Bytes held, at most MAX_REPLY_BYTES, as for a reply that is not streamed.
    received: usize,
}
// ANCHOR_END: assembler

// ANCHOR: apply
impl Assemble for MessageAssembler {
    fn apply(&mut self, data: &str, observer: &mut dyn Observer) -> Result<(), Error> {
        let event: Value = serde_json::from_str(data)
            .map_err(|_| Error::Model(format!("a stream event is not JSON: {}", quote(data))))?;
        let index = event.get("index").and_then(Value::as_u64);
        match event.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message_start" => {
                if let Some(usage) = event.pointer("/message/usage") {
                    (self.usage, self.cache) = parse_usage(usage);
                }
            }
            "content_block_start" => self.start_block(index, &event)?,
            "content_block_delta" => self.delta(index, &event, observer)?,
            "message_delta" => self.message_delta(&event),
            "message_stop" => self.done = true,
            "error" => {
                let (message, _) = server_message(data);
                let message = message.unwrap_or_default();
                return Err(Error::Model(format!("the server reported an error in the stream: {message}")));
            }
            _ => {} // ping, content_block_stop, and events a later version adds
        }
        Ok(())
    }
    // ANCHOR_END: apply

    fn is_done(&self) -> bool {
        self.done
    }

    fn is_complete(&self) -> bool {
        self.done
    }

    fn partial_text(&self) -> &str {
        &self.text
    }

    fn progress(&self) -> String {
        let mut progress = format!("{} characters of text", self.text.chars().count());
        if let Some((call, _)) = self.calls.values().last() {
            progress.push_str(&format!(", while receiving tool call {:?}", call.name));
        }
        progress
    }

    // ANCHOR: into_reply
    fn into_reply(self) -> Result<Reply, Error> {
        let tool_calls = self
            .calls
            .into_values()
            .map(|(call, json)| match json.trim() {
                "" => call, // no deltas: the input came whole in content_block_start
                // Kept as sent, even if it does not parse: the tool then says it is invalid.
                _ => ToolCall { arguments: json, ..call },
            })
            .collect();
        let content = (!self.text.is_empty()).then_some(self.text);
        let (usage, cache) = (self.usage, self.cache);
        Ok(Reply { content, tool_calls, usage, finish_reason: self.stop_reason, cache })
    }
    // ANCHOR_END: into_reply

    fn whole(body: &str) -> Result<Reply, Error> {
        parse_message(body)
    }
}

// ANCHOR: blocks
impl MessageAssembler {
    fn start_block(&mut self, index: Option<u64>, event: &Value) -> Result<(), Error> {
        let block = event.get("content_block").unwrap_or(&Value::Null);
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            return Ok(()); // text arrives in deltas; other block types carry no answer
        }
        let index = index.ok_or_else(|| malformed("a tool_use block without an index", event))?;
        let call = tool_use(index as usize, block).ok_or_else(|| malformed("a tool_use block", event))?;
        self.count(128 + call.id.len() + call.name.len() + call.arguments.len())?;
        if self.calls.insert(index, (call, String::new())).is_some() {
            return Err(malformed("a second block with the same index", event));
        }
        Ok(())
    }

    fn delta(&mut self, index: Option<u64>, event: &Value, observer: &mut dyn Observer) -> Result<(), Error> {
        let delta = event.get("delta").unwrap_or(&Value::Null);
        let piece = |field: &str| delta.get(field).and_then(Value::as_str).unwrap_or_default();
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") if !piece("text").is_empty() => {
                self.count(piece("text").len())?;
                self.text.push_str(piece("text"));
                observer.event(Event::Notice(&StreamedText(piece("text").to_string())))
            }
            Some("input_json_delta") => {
                self.count(piece("partial_json").len())?;
                let call = index.and_then(|index| self.calls.get_mut(&index));
                let (_, json) = call.ok_or_else(|| malformed("input for no tool_use block", event))?;
                json.push_str(piece("partial_json"));
                Ok(())
            }
            _ => Ok(()), // thinking, signatures, citations, and delta types a later version adds
        }
    }
    // ANCHOR_END: blocks

    fn message_delta(&mut self, event: &Value) {
        if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
            self.stop_reason = Some(reason.to_owned());
        }
        // The output count arrives here; newer servers repeat the input counts, which then win.
        if let Some(usage) = event.get("usage") {
            let output = usage.get("output_tokens").and_then(Value::as_u64);
            let (repeated, cache) = parse_usage(usage);
            if let Some(repeated) = repeated {
                (self.usage, self.cache) = (Some(repeated), cache);
            } else if let (Some(usage), Some(output)) = (self.usage.as_mut(), output) {
                usage.completion_tokens = output;
            }
        }
    }

    /// Counts held bytes against [`MAX_REPLY_BYTES`], the cap of a reply that is not streamed.
    fn count(&mut self, bytes: usize) -> Result<(), Error> {
        self.received += bytes;
        if self.received > MAX_REPLY_BYTES { Err(reply_too_large()) } else { Ok(()) }
    }
}

fn malformed(what: &str, event: &Value) -> Error {
    Error::Model(format!("malformed stream event ({what}): {}", quote(&event.to_string())))
}
