//! Chapter 7 — shrinking what is large, and hearing the server say "too long".
//!
//! A summary replaces old *turns*, but the bulk of a coding session is rarely in the turns'
//! words: it is in tool results (a file read, a test log) and in the arguments of tool calls
//! (a whole file written). One reply that writes a 9 MB file, or calls a tool a thousand
//! times, is larger than any window, and summarising the words around it does not help.
//! So before asking for a summary, compaction **elides**: every tool result and every
//! tool-call argument older than the last exchange, when over [`ELIDE_OVER`] bytes, is sent
//! as its head and a note of how much was left out. It costs no model call, it is
//! deterministic (a resumed session rebuilds the same view from one number in the journal),
//! and the history itself stays whole.
//!
//! Two more pieces make the count honest. The estimate is **conservative** (digits and line
//! breaks are about a token each, punctuation half of one: bytes / 4 undercounted digit-heavy
//! output four times), and it is **calibrated**: when the server reports `usage`, the ratio of
//! its count to our estimate (kept between [`MIN_RATIO`] and [`MAX_RATIO`]) scales the next
//! estimates. And when the server still says the prompt is too long, in any of the usual
//! wordings ([`is_context_overflow`]), the agent compacts and retries once.

use crate::ch02_loop::{Error, Message, ToolCall};
use std::borrow::Cow;

/// A tool result or tool-call argument over this many bytes is elided once it is old.
pub(crate) const ELIDE_OVER: usize = 512;
/// Bytes of an elided text that are kept, so the model still sees what it was.
pub(crate) const ELIDE_KEEP: usize = 200;

/// The calibration ratio (server count / our estimate) is kept in this range: a server that
/// counts strangely (or a cached prompt) must not make the estimate absurd.
pub(crate) const MIN_RATIO: f64 = 0.5;
pub(crate) const MAX_RATIO: f64 = 4.0;

// ANCHOR: elide
/// The message as sent once it is old: large tool results and tool-call arguments cut to their
/// head and a note; everything else (user and assistant words) untouched.
pub fn elided(message: &Message) -> Cow<'_, Message> {
    match message {
        Message::Tool { tool_call_id, content } if content.len() > ELIDE_OVER => Cow::Owned(Message::Tool {
            tool_call_id: tool_call_id.clone(),
            content: format!(
                "{}\n[… {} more bytes of this old tool result elided to save context]",
                head(content),
                content.len() - head(content).len()
            ),
        }),
        Message::Assistant { content, tool_calls }
            if tool_calls.iter().any(|c| c.arguments.len() > ELIDE_OVER) =>
        {
            let tool_calls = tool_calls.iter().map(elided_call).collect();
            Cow::Owned(Message::Assistant { content: content.clone(), tool_calls })
        }
        _ => Cow::Borrowed(message),
    }
}

/// Arguments stay a JSON object (servers parse them): the head, and what was left out.
fn elided_call(call: &ToolCall) -> ToolCall {
    if call.arguments.len() <= ELIDE_OVER {
        return call.clone();
    }
    let kept = head(&call.arguments);
    let note = format!("{kept}… [{} more bytes elided to save context]", call.arguments.len() - kept.len());
    ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        arguments: serde_json::json!({ "elided": note }).to_string(),
    }
}
// ANCHOR_END: elide

/// Whether eliding `message` would make it smaller.
pub(crate) fn elidable(message: &Message) -> bool {
    matches!(elided(message), Cow::Owned(_))
}

fn head(text: &str) -> &str {
    crate::text::cut_bytes(text, ELIDE_KEEP)
}

// ANCHOR: overflow
/// Whether the server refused the request because the prompt is longer than its window:
/// OpenAI's `context_length_exceeded`, llama.cpp's "exceeds the available context size",
/// vLLM's and OpenAI's "maximum context length", and a few other common phrasings. Only a
/// refusal of the request (400, 413, 422) counts: a 429 about tokens per minute is a rate limit.
pub(crate) fn is_context_overflow(error: &Error) -> bool {
    let Error::Http { status: 400 | 413 | 422, message, code, .. } = error else { return false };
    if code
        .as_deref()
        .is_some_and(|code| code == "context_length_exceeded" || code == "exceed_context_size_error")
    {
        return true;
    }
    let message = message.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "exceeds the available context size",
        "exceed_context_size",
        "maximum context length",
        "context length exceeded",
        "prompt is too long",
        "too many tokens",
        "context window",
    ]
    .iter()
    .any(|phrase| message.contains(phrase))
}
// ANCHOR_END: overflow

// ANCHOR: stated_limits
/// What an overflow error says in numbers: the server's window, and its count of the prompt
/// that was refused, in the wordings of llama.cpp (`request (13392 tokens) exceeds the available
/// context size (8192 tokens)`), OpenAI and vLLM (`This model's maximum context length is 8192
/// tokens. However, your messages resulted in 9000 tokens` / `your prompt contains at least
/// 8185 input tokens`) and Anthropic (`prompt is too long: 210000 tokens > 200000 maximum`).
pub(crate) fn stated_limits(error: &Error) -> (Option<u64>, Option<u64>) {
    let Error::Http { message, .. } = error else { return (None, None) };
    let message = message.to_ascii_lowercase();
    let window = ["available context size (", "maximum context length is ", "tokens > "]
        .iter()
        .find_map(|phrase| number_after(&message, phrase));
    let prompt =
        ["request (", "your messages resulted in ", "prompt contains at least ", "prompt is too long: "]
            .iter()
            .find_map(|phrase| number_after(&message, phrase))
            // vLLM's older wording: "you requested 2100 tokens (2000 in the messages, 100 in the completion)".
            .or_else(|| number_after(&message, "tokens (").filter(|_| message.contains("in the messages")));
    (window, prompt)
}

/// The whole number right after `phrase` in `text` (thousands separators allowed).
fn number_after(text: &str, phrase: &str) -> Option<u64> {
    let rest = &text[text.find(phrase)? + phrase.len()..];
    let digits: String =
        rest.chars().take_while(|c| c.is_ascii_digit() || *c == ',').filter(|c| *c != ',').collect();
    digits.parse().ok()
}
// ANCHOR_END: stated_limits

/// The calibration ratio learnt from one request: the server's prompt count over our estimate.
pub(crate) fn calibration(server_tokens: u64, estimated: u64) -> Option<f64> {
    (estimated > 0 && server_tokens > 0)
        .then(|| (server_tokens as f64 / estimated as f64).clamp(MIN_RATIO, MAX_RATIO))
}

/// `tokens` scaled by `ratio`, rounded up.
pub(crate) fn scaled(tokens: u64, ratio: f64) -> u64 {
    (tokens as f64 * ratio).ceil() as u64
}

/// A summary may not take more than this many tokens of a small window (the instructions ask
/// for fewer words, but a model may not listen).
pub(crate) fn summary_words(window: u64) -> u64 {
    (window / 16).clamp(40, 300)
}

/// Keeps the transcript to summarise within `budget` tokens: whole pieces from the start
/// while they fit, then a line saying how many were left out. Summarising less than everything
/// beats refusing: a reply of a thousand calls must not make a session impossible to continue.
pub(crate) fn fit_pieces(pieces: &[String], budget: u64, estimate: impl Fn(&str) -> u64) -> String {
    let mut used = 0;
    let mut out = String::new();
    for (index, piece) in pieces.iter().enumerate() {
        used += estimate(piece);
        if used > budget {
            out.push_str(&format!(
                "[… {} more messages, too long to show here, were left out]\n",
                pieces.len() - index
            ));
            break;
        }
        out.push_str(piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parses(text: &str) -> bool {
        serde_json::from_str::<serde_json::Value>(text).is_ok()
    }

    #[test]
    fn large_results_and_arguments_keep_a_head_and_a_note() {
        let big = "x".repeat(10_000);
        let tool = Message::Tool { tool_call_id: "c".into(), content: big.clone() };
        let Message::Tool { content, .. } = elided(&tool).into_owned() else { panic!() };
        assert!(
            content.starts_with(&"x".repeat(ELIDE_KEEP)) && content.contains("9800 more bytes"),
            "{content}"
        );
        let call = ToolCall {
            id: "c".into(),
            name: "write_file".into(),
            arguments: format!("{{\"content\":\"{big}\"}}"),
        };
        let assistant = Message::Assistant { content: Some("writing".into()), tool_calls: vec![call] };
        let Message::Assistant { content, tool_calls } = elided(&assistant).into_owned() else { panic!() };
        assert_eq!(content.as_deref(), Some("writing"));
        assert!(
            parses(&tool_calls[0].arguments) && tool_calls[0].arguments.len() < 400,
            "{}",
            tool_calls[0].arguments
        );
        let small = Message::Tool { tool_call_id: "c".into(), content: "ok".into() };
        assert!(!elidable(&small));
    }

    #[test]
    fn overflow_errors_are_recognised_in_every_usual_wording() {
        let http = |message: &str, code: Option<&str>| Error::Http {
            status: 400,
            message: message.into(),
            retry_after_ms: None,
            code: code.map(str::to_string),
        };
        assert!(is_context_overflow(&http("whatever", Some("context_length_exceeded"))));
        assert!(is_context_overflow(&http(
            "the request exceeds the available context size, try increasing it",
            None
        )));
        assert!(is_context_overflow(&http(
            "This model's maximum context length is 1024 tokens. However, you requested 1300 tokens",
            None
        )));
        assert!(!is_context_overflow(&http("invalid model", None)));
        let rate_limit = Error::Http {
            status: 429,
            message: "too many tokens per minute".into(),
            retry_after_ms: None,
            code: None,
        };
        assert!(!is_context_overflow(&rate_limit));
        assert!(!is_context_overflow(&Error::Network("maximum context length".into())));
    }

    #[test]
    fn the_window_and_the_count_are_read_from_every_usual_wording() {
        let http = |message: &str| Error::Http {
            status: 400,
            message: message.into(),
            retry_after_ms: None,
            code: None,
        };
        for (message, expected) in [
            // llama.cpp (tools/server), OpenAI, vLLM today and before, Anthropic.
            (
                "request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it",
                (Some(8192), Some(13392)),
            ),
            (
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130,512 tokens. Please reduce the length of the messages.",
                (Some(128_000), Some(130_512)),
            ),
            (
                "This model's maximum context length is 4096 tokens. However, you requested 8 output tokens and your prompt contains at least 4089 input tokens, for a total of at least 4097 tokens.",
                (Some(4096), Some(4089)),
            ),
            (
                "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.",
                (Some(2048), Some(2000)),
            ),
            ("prompt is too long: 210000 tokens > 200000 maximum", (Some(200_000), Some(210_000))),
            ("the request exceeds the available context size, try increasing it", (None, None)),
        ] {
            assert_eq!(stated_limits(&http(message)), expected, "{message}");
        }
    }

    #[test]
    fn calibration_is_clamped() {
        assert_eq!(calibration(1150, 300), Some(1150.0 / 300.0));
        assert_eq!(calibration(10_000, 100), Some(MAX_RATIO));
        assert_eq!(calibration(1, 100), Some(MIN_RATIO));
        assert_eq!(calibration(10, 0), None);
    }
}
