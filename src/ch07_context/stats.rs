//! `/stats`: an [`Observer`] that adds up requests, tokens, tool calls and time. It watches
//! the events the loop already emits, so counting costs the loop nothing.

use super::estimate::*;
use super::record::Compacted;
use crate::ch02_loop::{Error, Event, Message, Observer, Reply, Usage};
use crate::ch05_sessions::Body;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

// ANCHOR: stats
/// What a session has used so far, for `/stats`. It is an [`Observer`]: it only counts events.
#[derive(Clone, Debug)]
pub struct Stats {
    pub requests: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Replies that carried no `usage`: their tokens were estimated.
    pub estimated_replies: u64,
    pub tool_calls: u64,
    pub compactions: u64,
    /// Prompt tokens read from and written to the server's prompt cache, when it says (chapter
    /// 19's Messages API does).
    pub cache: crate::ch02_loop::CacheUsage,
    /// Time spent waiting for the model (request sent → reply complete).
    pub model_time: Duration,
    pub started: Instant,
    /// Estimated tokens of the messages seen so far: the prompt estimate when `usage` is absent.
    history_tokens: u64,
    request_sent: Option<Instant>,
    /// What the session's file says it used before this run (a resumed session), included above.
    before: Recorded,
}

// ANCHOR_END: stats
// ANCHOR: recorded
/// What a session's file says it used: each reply and summary is a request, with the tokens
/// the server counted (a reply recorded without a count adds a request but no tokens).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    pub requests: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Replies the file holds no token count for.
    pub uncounted: u64,
    pub tool_calls: u64,
    pub compactions: u64,
}

impl Recorded {
    /// Adds up the records of a session's file.
    pub fn of<'a>(bodies: impl IntoIterator<Item = &'a Body>) -> Recorded {
        let mut recorded = Recorded::default();
        for body in bodies {
            match body {
                Body::Assistant { usage, .. } => {
                    recorded.requests += 1;
                    match usage {
                        Some(usage) => recorded.add(usage.prompt_tokens, usage.completion_tokens),
                        None => recorded.uncounted += 1,
                    }
                }
                Body::Compaction { summary, .. } if !summary.is_empty() => {
                    recorded.requests += 1;
                    recorded.compactions += 1;
                }
                Body::Usage { prompt_tokens, completion_tokens } => {
                    recorded.add(*prompt_tokens, *completion_tokens)
                }
                Body::ToolStarted { .. } => recorded.tool_calls += 1,
                _ => {}
            }
        }
        recorded
    }

    fn add(&mut self, prompt_tokens: u64, completion_tokens: u64) {
        self.prompt_tokens += prompt_tokens;
        self.completion_tokens += completion_tokens;
    }
}
// ANCHOR_END: recorded

impl Default for Stats {
    fn default() -> Self {
        Stats {
            requests: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            estimated_replies: 0,
            tool_calls: 0,
            compactions: 0,
            cache: Default::default(),
            model_time: Duration::ZERO,
            started: Instant::now(),
            history_tokens: 0,
            request_sent: None,
            before: Recorded::default(),
        }
    }
}

impl Stats {
    pub fn new() -> Self {
        Stats::default()
    }

    /// What the session's file recorded before this run (nothing for a new session).
    pub fn before(&self) -> Recorded {
        self.before
    }

    /// The stats of a resumed session: what its file recorded, then this run's.
    pub fn continuing(before: Recorded) -> Self {
        Stats {
            requests: before.requests,
            prompt_tokens: before.prompt_tokens,
            completion_tokens: before.completion_tokens,
            tool_calls: before.tool_calls,
            compactions: before.compactions,
            before,
            ..Stats::default()
        }
    }

    /// Adds a reply's tokens: the server's count when it sent one, an estimate otherwise.
    fn add_usage(&mut self, usage: Option<Usage>, estimate: impl FnOnce() -> Usage) {
        let usage = usage.unwrap_or_else(|| {
            self.estimated_replies += 1;
            estimate()
        });
        self.prompt_tokens += usage.prompt_tokens;
        self.completion_tokens += usage.completion_tokens;
    }
}

// ANCHOR: stats_events
impl Observer for Stats {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        match event {
            Event::Request { .. } => {
                self.requests += 1;
                self.request_sent = Some(Instant::now());
            }
            Event::Reply(reply) => {
                if let Some(sent) = self.request_sent.take() {
                    self.model_time += sent.elapsed();
                }
                self.cache.read += reply.cache.read;
                self.cache.written += reply.cache.written;
                let prompt_tokens = self.history_tokens;
                self.add_usage(reply.usage, || Usage {
                    prompt_tokens,
                    completion_tokens: estimate_reply_tokens(reply),
                });
            }
            Event::Message(message) => self.history_tokens += estimate_message_tokens(message),
            Event::ToolStarted(_) => self.tool_calls += 1,
            Event::Notice(notice) => match notice.as_any().downcast_ref() {
                Some(Compacted { record, summarised: false }) => self.history_tokens = record.tokens_after,
                Some(Compacted { record, .. }) => {
                    // The summary request was a model call too; after it, the view is smaller.
                    self.requests += 1;
                    self.compactions += 1;
                    self.history_tokens = record.tokens_after;
                    self.add_usage(record.usage, || Usage {
                        prompt_tokens: record.tokens_before,
                        completion_tokens: estimate_text_tokens(&record.summary),
                    });
                }
                None => {} // another chapter's: a retry, streamed text
            },
            Event::Warning(_) | Event::ToolFinished(..) => {}
        }
        Ok(())
    }
}

// ANCHOR_END: stats_events
pub(super) fn estimate_reply_tokens(reply: &Reply) -> u64 {
    let message = Message::Assistant { content: reply.content.clone(), tool_calls: reply.tool_calls.clone() };
    estimate_message_tokens(&message)
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let estimated = match self.estimated_replies {
            0 => String::new(),
            n => format!(" ({n} {} estimated)", if n == 1 { "reply" } else { "replies" }),
        };
        let compactions = match self.compactions {
            0 => String::new(),
            1 => " (1 was a compaction)".to_string(),
            n => format!(" ({n} were compactions)"),
        };
        // A resumed session counts what its file recorded too, and says so.
        let before = self.before;
        let resumed = before != Recorded::default();
        let earlier =
            |text: String| if resumed { format!(" ({text} before this run)") } else { String::new() };
        let uncounted = match before.uncounted {
            0 => String::new(),
            n => format!("; {n} earlier {} no count", if n == 1 { "reply has" } else { "replies have" }),
        };
        writeln!(f, "requests     {}{compactions}{}", self.requests, earlier(before.requests.to_string()))?;
        writeln!(
            f,
            "tokens       {} prompt + {} completion{estimated}{}",
            self.prompt_tokens,
            self.completion_tokens,
            earlier(format!("{} + {}{uncounted}", before.prompt_tokens, before.completion_tokens))
        )?;
        if self.cache != Default::default() {
            writeln!(f, "cache        {} read + {} written", self.cache.read, self.cache.written)?;
        }
        writeln!(f, "tool calls   {}{}", self.tool_calls, earlier(before.tool_calls.to_string()))?;
        let this_run = if resumed { " (this run)" } else { "" };
        writeln!(f, "model time   {}{this_run}", human_duration(self.model_time))?;
        write!(f, "wall time    {}{this_run}", human_duration(self.started.elapsed()))
    }
}

pub(super) fn human_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0..60 => format!("{:.1} s", duration.as_secs_f64()),
        60..3600 => format!("{}m {:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h {:02}m", seconds / 3600, seconds % 3600 / 60),
    }
}

/// [`Stats`] shared with the REPL (which prints it) while it observes the turn.
#[derive(Clone, Default)]
pub struct SharedStats(pub Arc<Mutex<Stats>>);

impl SharedStats {
    pub fn snapshot(&self) -> Stats {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Starts counting again, from what the session's file recorded before this run; the
    /// messages of `history` are what the next prompt is estimated from.
    pub fn restart(&self, history: &[Message], before: Recorded) {
        let mut stats = Stats::continuing(before);
        for message in history {
            let _ = stats.event(Event::Message(message));
        }
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = stats;
    }
}

impl Observer for SharedStats {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).event(event)
    }
}
