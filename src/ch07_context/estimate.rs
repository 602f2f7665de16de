//! Counting tokens without a tokenizer: a conservative estimate per character class
//! (letters about four bytes a token, punctuation two, a digit, line break or CJK character
//! one). It only has to be on the safe side; the server's `usage`, when sent, corrects it.

use crate::ch02_loop::{Message, ToolCall};
use serde_json::Value;

// ANCHOR: estimate
/// Estimated tokens of a text, on the high side: letters and spaces at four bytes per token,
/// other punctuation at two, and a token for each digit, line break and CJK character
/// (Chinese, Japanese, Korean, full-width forms). Tokenizers split numbers into single digits
/// or small groups and rarely merge CJK characters, so bytes / 4 undercounted digit-heavy
/// output about four times. Counted in quarter tokens.
pub fn estimate_text_tokens(text: &str) -> u64 {
    let quarters = |b: u8| -> u64 {
        match b {
            b'0'..=b'9' | b'\n' => 4,
            b'a'..=b'z' | b'A'..=b'Z' | b' ' | b'\t' | b'_' => 1,
            0x21..=0x7e => 2,
            _ => 1,
        }
    };
    if text.is_ascii() {
        return text.bytes().map(quarters).sum::<u64>().div_ceil(4);
    }
    let mut total = 0u64;
    for c in text.chars() {
        total += if is_cjk(c) {
            4
        } else if c.is_ascii() {
            quarters(c as u8)
        } else {
            c.len_utf8() as u64
        };
    }
    total.div_ceil(4)
}

pub(super) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF | 0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF
        | 0x20000..=0x3FFFF)
}

// ANCHOR_END: estimate
// ANCHOR: estimate_messages
/// A few tokens per message for the role and separators a chat template adds.
pub(super) const PER_MESSAGE: u64 = 4;

/// Estimated tokens of one message as the model reads it.
pub fn estimate_message_tokens(message: &Message) -> u64 {
    PER_MESSAGE
        + match message {
            Message::System { content } | Message::User { content } => estimate_text_tokens(content),
            Message::Assistant { content, tool_calls } => {
                let text = estimate_text_tokens(content.as_deref().unwrap_or_default());
                text + tool_calls.iter().map(estimate_call_tokens).sum::<u64>()
            }
            Message::Tool { tool_call_id, content } => {
                estimate_text_tokens(tool_call_id) + estimate_text_tokens(content)
            }
        }
}

pub(super) fn estimate_call_tokens(call: &ToolCall) -> u64 {
    PER_MESSAGE
        + estimate_text_tokens(&call.id)
        + estimate_text_tokens(&call.name)
        + estimate_text_tokens(&call.arguments)
}

pub fn estimate_messages_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(estimate_message_tokens).sum()
}

/// Estimated tokens of a whole request: the messages and the tool schemas.
pub fn estimate_request_tokens(messages: &[Message], tools: &[Value]) -> u64 {
    let schemas = if tools.is_empty() { 0 } else { estimate_text_tokens(&Value::from(tools).to_string()) };
    estimate_messages_tokens(messages) + schemas
}
// ANCHOR_END: estimate_messages
