//! The text a summary is made from: the previous summary, then each older message as a
//! paragraph, long texts clipped to head and tail so that the summary request fits too.

use super::compacting::*;
use crate::ch02_loop::{Error, Event, Message, Observer};
use std::borrow::Cow;

/// The text to summarise opens with the summary of what came before, if any…
pub(super) fn transcript_header(previous: Option<&str>, words: u64) -> String {
    let limit = if words < 300 {
        format!(" Use at most {words} words: the context window is small.")
    } else {
        String::new()
    };
    match previous {
        Some(previous) => format!(
            "Summarise this earlier part of the session.{limit}\n\nSummary of what came before it:\n{previous}\n\n"
        ),
        None => format!("Summarise this earlier part of the session.{limit}\n\n"),
    }
}

/// …then shows each older message as a paragraph, long texts clipped to head and tail.
pub(super) fn transcript_piece(message: &Message) -> String {
    match message {
        Message::System { content } => format!("System: {}\n\n", clip(content)),
        Message::User { content } => format!("User: {}\n\n", clip(content)),
        Message::Assistant { content, tool_calls } => {
            let mut text = String::new();
            if let Some(content) = content.as_deref().filter(|c| !c.is_empty()) {
                text.push_str(&format!("Assistant: {}\n\n", clip(content)));
            }
            for call in tool_calls {
                text.push_str(&format!("Assistant called {} {}\n\n", call.name, clip(&call.arguments)));
            }
            // A reply of a thousand calls is one message: clipped as a whole too.
            if text.len() > 4 * SUMMARY_CLIP_CHARS { format!("{}\n\n", clip(&text)) } else { text }
        }
        Message::Tool { content, .. } => format!("Tool result: {}\n\n", clip(content)),
    }
}

pub(super) fn clip(text: &str) -> Cow<'_, str> {
    let half = SUMMARY_CLIP_CHARS / 2;
    match crate::text::head_and_tail(text, SUMMARY_CLIP_CHARS, half, half) {
        None => Cow::Borrowed(text),
        Some((head, cut, tail)) => Cow::Owned(format!("{head}\n[… {cut} characters cut …]\n{tail}")),
    }
}

/// Passes on what the summary request reports for the record (a retry, a cut stream), not
/// what is only drawn (streamed text, chapter 11): a summary is not the answer to show.
pub(super) struct WithoutText<'a>(pub(super) &'a mut dyn Observer);

impl Observer for WithoutText<'_> {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        match event {
            Event::Notice(notice) if notice.records().is_empty() => Ok(()),
            other => self.0.event(other),
        }
    }
}
