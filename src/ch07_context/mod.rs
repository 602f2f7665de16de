//! Chapter 7 — context: counting tokens, and forgetting wisely.
//!
//! A model reads the whole conversation on every request, and its context window is
//! finite. A long session therefore needs three things, and none of them touches the loop:
//!
//! * **Counting.** The server's `usage` is the truth when it is sent; otherwise we estimate,
//!   conservatively (letters about four bytes per token, punctuation two, a digit, a line
//!   break or a CJK character one), scaled by what the server's last count taught us.
//!   [`Stats`] is an [`Observer`](crate::ch02_loop::Observer) that adds up requests, tokens,
//!   tool calls and time for `/stats`.
//! * **Compaction.** [`Compacting`] is a [`Model`](crate::ch02_loop::Model) around a `Model`.
//!   When the estimated prompt passes a share of the window (or on `/compact`), it asks the
//!   inner model to summarise the
//!   older messages and from then on sends `[system, summary, …recent messages]`. The history
//!   itself — and the journal that mirrors it — stays complete and append-only: compaction
//!   only changes the *view* that is sent, and is recorded as an event so that a resumed
//!   session rebuilds the same view with [`apply_compaction`]. Before any summary, large old
//!   tool results and arguments are elided ([`shrink`]), which costs no model call.
//! * **A last resort, then a clear limit.** When nothing old is left to forget and the
//!   latest tool results alone are too large, each is sent as its head and tail with a note
//!   of what was cut ([`squeeze`]). When even that cannot fit, the request is not sent; the
//!   error says so. When the server says the prompt is too long, the agent compacts and
//!   retries once.
//!
//! The cut between summary and recent messages never separates a tool call from its
//! result: a model shown a result without its call (or the reverse) rejects the request.
//!
//! Submodules: [`estimate`] (counting), [`stats`] (`/stats`), [`record`] (the recorded
//! compaction and the view it gives), [`compacting`] (the model wrapper), [`cut`] (where a
//! summary may end), [`transcript`] (the text summarised), [`shrink`] (eliding, calibration,
//! overflow errors), [`squeeze`] (the latest results, last) and [`repeats`] (a model stuck in a loop).

use crate::ch02_loop::command_line::Help;
use crate::ch04_terminal::SlashCommand;
use crate::ch05_sessions::RegisterParts;

pub mod compacting;
pub mod cut;
pub mod estimate;
pub mod record;
pub mod repeats;
pub mod shrink;
pub mod squeeze;
pub mod stats;
pub mod transcript;
pub mod turns;

pub use compacting::{
    AUTO_COMPACT_PERCENT, Compacting, DEFAULT_CONTEXT_TOKENS, KEEP_RECENT_PERCENT, parse_context_tokens,
};
pub use estimate::{
    estimate_message_tokens, estimate_messages_tokens, estimate_request_tokens, estimate_text_tokens,
};
pub use record::{Compacted, CompactionRecord, CompactionState, SharedCompaction, apply_compaction};
pub use stats::{Recorded, SharedStats, Stats};
pub use turns::{ContextTurns, Reopened};

/// Chapter 7's command line: the context window, and the commands that show and shrink it.
pub fn register(registry: &mut dyn RegisterParts) {
    registry.part("context", |_| Ok(Box::new(ContextTurns::default())));
    registry.help(Help {
        chapter: 7,
        page: "",
        section: "ENVIRONMENT",
        lines: &[
            "  MINI_AGENT_CONTEXT_TOKENS  the model's context window (default 128000); older messages",
            "                             are summarised when a request would pass 80% of it",
        ],
    });
    let command = |name, help| SlashCommand { chapter: 7, name, argument: "", help };
    registry.command(command("compact", "replace older history with a summary"));
    registry.command(command("stats", "requests, tokens, tool calls and time of this session"));
}

#[cfg(test)]
mod tests;
