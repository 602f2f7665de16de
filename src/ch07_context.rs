//! Chapter 7 — context: counting tokens, and forgetting wisely.
//!
//! A model reads the whole conversation on every request, and its context window is
//! finite. A long session therefore needs three things, and none of them touches the loop:
//!
//! * **Counting.** The server's `usage` is the truth when it is sent; otherwise we estimate,
//!   conservatively (letters about four bytes per token, punctuation two, a digit, a line
//!   break or a CJK character one), scaled by what the server's last count taught us.
//!   [`Stats`] is an [`Observer`] that adds up requests, tokens, tool calls and time for `/stats`.
//! * **Compaction.** [`Compacting`] is a [`Model`] around a `Model`. When the estimated prompt
//!   passes a share of the window (or on `/compact`), it asks the inner model to summarise the
//!   older messages and from then on sends `[system, summary, …recent messages]`. The history
//!   itself — and the journal that mirrors it — stays complete and append-only: compaction
//!   only changes the *view* that is sent, and is recorded as an event so that a resumed
//!   session rebuilds the same view with [`apply_compaction`]. Before any summary, large old
//!   tool results and arguments are elided (`ch07_shrink`), which costs no model call.
//! * **A clear limit.** When even the compacted view cannot fit, the request is not sent;
//!   the error says so. When the server says the prompt is too long, the agent compacts and
//!   retries once.
//!
//! The cut between summary and recent messages never separates a tool call from its
//! result: a model shown a result without its call (or the reverse) rejects the request.

use crate::ch01_loop::{Error, Event, Message, Model, Observer, Reply, Request, ToolCall, Usage};
use crate::ch02_model::shorten;
use crate::ch07_shrink::{calibration, fit_pieces, is_context_overflow, scaled, summary_words};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

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

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF | 0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF
        | 0x20000..=0x3FFFF)
}

/// A few tokens per message for the role and separators a chat template adds.
const PER_MESSAGE: u64 = 4;

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

fn estimate_call_tokens(call: &ToolCall) -> u64 {
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
// ANCHOR_END: estimate

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
    /// Time spent waiting for the model (request sent → reply complete).
    pub model_time: Duration,
    pub started: Instant,
    /// Estimated tokens of the messages seen so far: the prompt estimate when `usage` is absent.
    history_tokens: u64,
    request_sent: Option<Instant>,
}

// ANCHOR_END: stats
impl Default for Stats {
    fn default() -> Self {
        Stats {
            requests: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            estimated_replies: 0,
            tool_calls: 0,
            compactions: 0,
            model_time: Duration::ZERO,
            started: Instant::now(),
            history_tokens: 0,
            request_sent: None,
        }
    }
}

impl Stats {
    pub fn new() -> Self {
        Stats::default()
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
                let prompt_tokens = self.history_tokens;
                self.add_usage(reply.usage, || Usage {
                    prompt_tokens,
                    completion_tokens: estimate_reply_tokens(reply),
                });
            }
            Event::Message(message) => self.history_tokens += estimate_message_tokens(message),
            Event::ToolStarted(_) => self.tool_calls += 1,
            Event::Compaction { summarised: false, tokens_after, .. } => self.history_tokens = tokens_after,
            Event::Compaction { summary, tokens_before, tokens_after, usage, .. } => {
                // The summary request was a model call too; after it, the view is smaller.
                self.requests += 1;
                self.compactions += 1;
                self.history_tokens = tokens_after;
                self.add_usage(usage, || Usage {
                    prompt_tokens: tokens_before,
                    completion_tokens: estimate_text_tokens(summary),
                });
            }
            Event::Notice { .. } | Event::TextDelta(_) | Event::ToolFinished(..) | Event::Retry { .. } => {}
        }
        Ok(())
    }
}

// ANCHOR_END: stats_events
fn estimate_reply_tokens(reply: &Reply) -> u64 {
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
        writeln!(f, "requests     {}{compactions}", self.requests)?;
        writeln!(
            f,
            "tokens       {} prompt + {} completion{estimated}",
            self.prompt_tokens, self.completion_tokens
        )?;
        writeln!(f, "tool calls   {}", self.tool_calls)?;
        writeln!(f, "model time   {}", human_duration(self.model_time))?;
        write!(f, "wall time    {}", human_duration(self.started.elapsed()))
    }
}

fn human_duration(duration: Duration) -> String {
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
}

impl Observer for SharedStats {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).event(event)
    }
}

// ANCHOR: record
/// A compaction as recorded in the session: the summary, and how many messages it replaces
/// — counted from the first message after the leading system message(s).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    pub summary: String,
    pub replaced: usize,
    /// The first `elided` messages after the system prompt are sent with large tool results
    /// and arguments cut short ([`crate::ch07_shrink::elided`]); those before `replaced` are in the summary anyway.
    #[serde(default)]
    pub elided: usize,
    /// Estimated tokens of the view before and after (for the user; replay ignores them).
    #[serde(default)]
    pub tokens_before: u64,
    #[serde(default)]
    pub tokens_after: u64,
    /// What the summary request cost, when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// The messages sent to the model once `summary` stands for the first `replaced` messages
/// after the system prompt. Replaying a recorded compaction calls this with the same
/// arguments and so rebuilds exactly the view that was sent.
pub fn apply_compaction(history: &[Message], summary: &str, replaced: usize, elided: usize) -> Vec<Message> {
    let start = system_prefix_len(history);
    let resume_at = (start + replaced).min(history.len());
    let elide_until = (start + elided).clamp(resume_at, history.len());
    let mut view = history[..start].to_vec();
    // Only elision, no summary yet: nothing stands for earlier messages.
    if replaced > 0 || !summary.is_empty() {
        view.push(Message::User { content: summary_message(summary, replaced) });
    }
    view.extend(history[resume_at..elide_until].iter().map(|m| crate::ch07_shrink::elided(m).into_owned()));
    view.extend_from_slice(&history[elide_until..]);
    view
}

fn summary_message(summary: &str, replaced: usize) -> String {
    format!(
        "[Summary of the earlier conversation: {replaced} messages were replaced by it to save \
         context.]\n{summary}"
    )
}

fn system_prefix_len(history: &[Message]) -> usize {
    history.iter().take_while(|m| matches!(m, Message::System { .. })).count()
}
// ANCHOR_END: record

/// The compaction in force, shared between the [`Compacting`] model and whoever restores
/// it from a journal (resume) or clears it (`/new`). `generation` changes on every change,
/// so that token counts measured against an older view are not reused.
#[derive(Clone, Debug, Default)]
pub struct CompactionState {
    current: Option<CompactionRecord>,
    generation: u64,
    /// The first message after the system prompt when the summary was made here: a history
    /// that starts differently is another session, and the summary must not leak into it.
    first_message: Option<Message>,
}

pub type SharedCompaction = Arc<Mutex<CompactionState>>;

impl CompactionState {
    pub fn shared() -> SharedCompaction {
        Arc::default()
    }

    pub fn current(&self) -> Option<&CompactionRecord> {
        self.current.as_ref()
    }

    /// Seeds the state from a recorded compaction (replay on resume, `/resume`).
    pub fn restore(&mut self, record: CompactionRecord) {
        self.set(record, None);
    }

    /// Forgets the compaction (`/new`, or a session without one).
    pub fn clear(&mut self) {
        self.current = None;
        self.first_message = None;
        self.generation += 1;
    }

    fn set(&mut self, record: CompactionRecord, first_message: Option<Message>) {
        self.current = Some(record);
        self.first_message = first_message;
        self.generation += 1;
    }

    /// The messages to send for `history`. A record that does not fit the history (it belongs
    /// to another session) is ignored rather than cutting the wrong messages.
    pub fn view<'a>(&self, history: &'a [Message]) -> Cow<'a, [Message]> {
        match self.record_for(history) {
            Some(record) => {
                Cow::Owned(apply_compaction(history, &record.summary, record.replaced, record.elided))
            }
            None => Cow::Borrowed(history),
        }
    }

    /// How many messages after the system prompt are already summarised.
    fn replaced(&self, history: &[Message]) -> usize {
        self.record_for(history).map_or(0, |record| record.replaced)
    }

    fn record_for(&self, history: &[Message]) -> Option<&CompactionRecord> {
        let record = self.current.as_ref()?;
        let start = system_prefix_len(history);
        let same_session = match &self.first_message {
            Some(first) => history.get(start) == Some(first),
            None => true,
        };
        let fits = start + record.replaced.max(record.elided) <= history.len();
        (same_session && fits).then_some(record)
    }
}

/// The context window assumed when `MINI_AGENT_CONTEXT_TOKENS` is not set.
pub const DEFAULT_CONTEXT_TOKENS: u64 = 128_000;

/// Reads the value of `MINI_AGENT_CONTEXT_TOKENS` (`None` when unset); `main` passes it in.
pub fn parse_context_tokens(value: Option<&str>) -> Result<u64, Error> {
    let Some(value) = value else { return Ok(DEFAULT_CONTEXT_TOKENS) };
    match value.trim().replace('_', "").parse::<u64>() {
        Ok(tokens) if tokens >= 1_000 => Ok(tokens),
        _ => Err(Error::Config(format!(
            "MINI_AGENT_CONTEXT_TOKENS={value:?} is not a usable context window; \
             give the model's window in tokens, at least 1000 (e.g. 128000)"
        ))),
    }
}

/// Automatic compaction starts when the estimated prompt passes this share of the window…
pub const AUTO_COMPACT_PERCENT: u64 = 80;
/// …and keeps about this share of the window as recent messages.
pub const KEEP_RECENT_PERCENT: u64 = 30;

const SUMMARY_INSTRUCTIONS: &str = "You summarise the earlier part of a coding session so that \
the work can continue with less context. Write a concise plain-text summary (at most about 300 \
words): the user's goals and requests, decisions made, files read, created or changed (with \
paths), commands run and their important results, errors met, and what remains to do. Keep exact \
names, paths and values. No preamble.";

/// A window learnt from a server's overflow error is never taken smaller than this.
const MIN_LEARNED_WINDOW: u64 = 256;

/// The text to summarise may take at most this share of the window.
const SUMMARY_INPUT_PERCENT: u64 = 50;
/// Automatic compaction stops after this many summaries for one request.
const MAX_COMPACTION_ROUNDS: usize = 8;

/// A message text longer than this is clipped (head and tail) in the text to summarise.
const SUMMARY_CLIP_CHARS: usize = 2000;

// ANCHOR: compacting
/// A [`Model`] that sends a compacted view of the history when the full one grows too large.
pub struct Compacting<M: Model> {
    inner: M,
    context_tokens: u64,
    state: SharedCompaction,
    /// The server's prompt count for the last request, to estimate the next one from.
    measured: Option<Measured>,
    /// Server tokens per estimated token, learnt from `usage` (1.0 until then).
    ratio: f64,
    /// The window as the server showed it by refusing a request as too long, when smaller.
    learned_window: Option<u64>,
}

struct Measured {
    generation: u64,
    history_len: usize,
    last_message: Message,
    prompt_tokens: u64,
}

impl<M: Model> Compacting<M> {
    /// `context_tokens` is the model's window (`MINI_AGENT_CONTEXT_TOKENS`, default 128000).
    pub fn new(inner: M, context_tokens: u64) -> Self {
        Self::with_state(inner, context_tokens, CompactionState::shared())
    }

    pub fn with_state(inner: M, context_tokens: u64, state: SharedCompaction) -> Self {
        Compacting { inner, context_tokens, state, measured: None, ratio: 1.0, learned_window: None }
    }

    /// The shared state: restore it from the journal on resume, clear it on `/new`.
    pub fn state(&self) -> SharedCompaction {
        self.state.clone()
    }

    fn too_large(&self, estimate: u64) -> Error {
        match self.learned_window.filter(|&learned| learned < self.context_tokens) {
            Some(learned) => Error::Config(format!(
                "the conversation does not fit in the server's context window even after compaction \
                 (about {estimate} tokens; the server refused a request as too long, so its window is \
                 taken as about {learned} tokens); start a new session"
            )),
            None => too_large(estimate, self.context_tokens),
        }
    }

    /// The window compaction works to: the configured one, or what the server showed.
    fn window(&self) -> u64 {
        self.learned_window.map_or(self.context_tokens, |learned| learned.min(self.context_tokens))
    }

    fn lock(&self) -> MutexGuard<'_, CompactionState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The prompt the next request will cost: the server's last count plus an estimate of
    /// what was appended since, or a plain estimate when there is no usable count.
    pub fn estimate_prompt(&self, history: &[Message], tools: &[Value]) -> u64 {
        let state = self.lock();
        if let Some(measured) = &self.measured
            && measured.generation == state.generation
            && measured.history_len.checked_sub(1).and_then(|i| history.get(i))
                == Some(&measured.last_message)
        {
            let appended = estimate_messages_tokens(&history[measured.history_len..]);
            return measured.prompt_tokens + scaled(appended, self.ratio);
        }
        scaled(estimate_request_tokens(&state.view(history), tools), self.ratio)
    }

    // ANCHOR_END: compacting
    /// `/compact`: summarises everything before the most recent user message (or, in one
    /// long turn, before its last assistant step). `None` when there is nothing to compact.
    pub fn compact(
        &mut self,
        history: &[Message],
        observer: &mut dyn Observer,
    ) -> Result<Option<CompactionRecord>, Error> {
        self.compact_with(history, None, observer)
    }

    // ANCHOR: compact_with
    fn compact_with(
        &mut self,
        history: &[Message],
        keep_tokens: Option<u64>,
        observer: &mut dyn Observer,
    ) -> Result<Option<CompactionRecord>, Error> {
        let (start, already, previous, elided, tokens_before) = {
            let state = self.lock();
            let start = system_prefix_len(history);
            let replaced = state.replaced(history);
            let previous = state.current.as_ref().filter(|_| replaced > 0).map(|r| r.summary.clone());
            let elided = state.record_for(history).map_or(0, |r| r.elided);
            let before = scaled(estimate_messages_tokens(&state.view(history)), self.ratio);
            (start, start + replaced, previous, elided, before)
        };
        let Some(wanted) = choose_cut(history, already, keep_tokens) else { return Ok(None) };

        // The text to summarise must fit too: if it would not, summarise fewer messages now
        // (the next round summarises the rest, together with this summary).
        let words = summary_words(self.window());
        let header = transcript_header(previous.as_deref(), words);
        let pieces: Vec<String> = history[already..wanted].iter().map(transcript_piece).collect();
        let fixed = estimate_text_tokens(SUMMARY_INSTRUCTIONS) + estimate_text_tokens(&header);
        let budget = share_of(self.window(), SUMMARY_INPUT_PERCENT).saturating_sub(fixed);
        let mut used = 0;
        let fitting = pieces.iter().take_while(|piece| {
            used += estimate_text_tokens(piece);
            used <= budget
        });
        let fits_until = already + fitting.count();
        let cuts: Vec<usize> =
            clean_cuts(history).into_iter().filter(|&c| c > already && c <= wanted).collect();
        let whole: Vec<usize> = cuts.iter().copied().filter(|&c| c <= fits_until).collect();
        let at_user = whole.iter().rev().find(|&&c| matches!(history[c], Message::User { .. }));
        // No cut fits whole (one step larger than the summary's budget: a reply of a thousand
        // calls): the nearest cut is summarised from as much of it as fits.
        let Some(&cut) = at_user.or(whole.last()).or(cuts.first()) else {
            let needed = fixed + pieces.iter().map(|piece| estimate_text_tokens(piece)).sum::<u64>();
            return Err(self.too_large(needed));
        };
        let transcript = header + &fit_pieces(&pieces[..cut - already], budget, estimate_text_tokens);
        let messages =
            [Message::System { content: SUMMARY_INSTRUCTIONS.into() }, Message::User { content: transcript }];
        let request = Request { messages: &messages, tools: &[] };
        let reply = self.inner.complete(&request, &mut WithoutText(observer))?;
        let summary = reply.content.as_deref().unwrap_or_default().trim();
        if summary.is_empty() {
            return Err(Error::Model("the model returned an empty summary when asked to compact".into()));
        }
        // A model that ignores the word limit must not fill a small window with its summary.
        let summary = shorten(summary, words as usize * 8);
        let replaced = cut - start;
        let view = apply_compaction(history, &summary, replaced, elided);
        let tokens_after = scaled(estimate_messages_tokens(&view), self.ratio);
        // Automatic, and the summary is longer than all it could replace: it helps nobody. (A
        // first round that covers less than `wanted` is kept: the next one goes further.)
        if keep_tokens.is_some() && cut == wanted && tokens_after >= tokens_before {
            return Ok(None);
        }
        let record =
            CompactionRecord { summary, replaced, elided, tokens_before, tokens_after, usage: reply.usage };
        // Recorded first: the journal must know the view before a request uses it.
        observer.event(Event::Compaction {
            summary: &record.summary,
            replaced,
            elided,
            summarised: true,
            tokens_before,
            tokens_after,
            usage: record.usage,
        })?;
        self.lock().set(record.clone(), history.get(start).cloned());
        Ok(Some(record))
    }
    // ANCHOR_END: compact_with

    // ANCHOR: elide_more
    /// Elides large tool output further into the history, without a model call: first the
    /// turns before the latest user message, then the steps before the latest one, then the
    /// latest step's own arguments (the model has their results). The latest results are never
    /// cut. `false` when that leaves nothing more to elide.
    fn elide_more(&mut self, history: &[Message], observer: &mut dyn Observer) -> Result<bool, Error> {
        let start = system_prefix_len(history);
        let (summary, replaced, current, tokens_before) = {
            let state = self.lock();
            let before = scaled(estimate_messages_tokens(&state.view(history)), self.ratio);
            match state.record_for(history) {
                Some(r) => (r.summary.clone(), r.replaced, r.elided, before),
                None => (String::new(), 0, 0, before),
            }
        };
        let from = start + replaced.max(current);
        let last_user = history.iter().rposition(|m| matches!(m, Message::User { .. })).unwrap_or(start);
        let last_step = history
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()))
            .filter(|&at| at > last_user);
        let ends = [Some(last_user), last_step, last_step.map(|at| at + 1)];
        let Some(end) = ends
            .into_iter()
            .flatten()
            .find(|&end| end > from && history[from..end].iter().any(crate::ch07_shrink::elidable))
        else {
            return Ok(false);
        };
        let elided = end - start;
        let view = apply_compaction(history, &summary, replaced, elided);
        let tokens_after = scaled(estimate_messages_tokens(&view), self.ratio);
        let record = CompactionRecord { summary, replaced, elided, tokens_before, tokens_after, usage: None };
        observer.event(Event::Compaction {
            summary: &record.summary,
            replaced,
            elided,
            summarised: false,
            tokens_before,
            tokens_after,
            usage: None,
        })?;
        self.lock().set(record, history.get(start).cloned());
        Ok(true)
    }
    // ANCHOR_END: elide_more

    // ANCHOR: fit
    /// Compacts until the request's estimate is under the share of the window: elision first
    /// (free), then summaries. Fails when even that cannot make it fit.
    fn fit(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<(), Error> {
        let history = request.messages;
        let mut estimate = self.estimate_prompt(history, request.tools);
        // Each round elides or summarises what fits in one summary request; a few rounds catch
        // up with a history that grew far past the window (a resumed session, a huge paste).
        for _ in 0..MAX_COMPACTION_ROUNDS {
            if estimate <= share_of(self.window(), AUTO_COMPACT_PERCENT) {
                break;
            }
            if self.elide_more(history, observer)? {
                estimate = self.estimate_prompt(history, request.tools);
                continue;
            }
            let keep = share_of(self.window(), KEEP_RECENT_PERCENT);
            match self.compact_with(history, Some(keep), observer) {
                Ok(Some(_)) => estimate = self.estimate_prompt(history, request.tools),
                Ok(None) => break,
                // A failed summary is not fatal while the full history still fits.
                Err(error) if estimate <= self.window() && !matches!(error, Error::Interrupted) => {
                    let text = format!("automatic compaction failed ({error}); sending the full history");
                    observer.event(Event::Notice { kind: "warning", text: &text })?;
                    break;
                }
                Err(error) => return Err(error),
            }
        }
        if estimate > self.window() {
            return Err(self.too_large(estimate));
        }
        Ok(())
    }
    // ANCHOR_END: fit

    /// Sends the view, and learns from the server's count of it.
    fn send(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        let history = request.messages;
        let (view, generation) = {
            let state = self.lock();
            (state.view(history), state.generation)
        };
        let reply = self.inner.complete(&Request { messages: &view, tools: request.tools }, observer)?;
        if let (Some(usage), Some(last_message)) = (reply.usage, history.last()) {
            if let Some(ratio) =
                calibration(usage.prompt_tokens, estimate_request_tokens(&view, request.tools))
            {
                self.ratio = ratio;
            }
            let last_message = last_message.clone();
            let prompt_tokens = usage.prompt_tokens;
            self.measured =
                Some(Measured { generation, history_len: history.len(), last_message, prompt_tokens });
        }
        Ok(reply)
    }
}

// ANCHOR: auto_compact
impl<M: Model> Model for Compacting<M> {
    fn complete(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        self.fit(request, observer)?;
        match self.send(request, observer) {
            Err(error) if is_context_overflow(&error) => {
                // The server's window is smaller than what was just sent, whatever it was said
                // to be: from now on it is taken a tenth smaller than that. Compact, try again.
                let sent = estimate_request_tokens(&self.lock().view(request.messages), request.tools);
                let learned = (scaled(sent, self.ratio) / 10 * 9).max(MIN_LEARNED_WINDOW).min(self.window());
                self.learned_window = Some(learned);
                self.measured = None;
                let text = format!("{error}; compacting and retrying once");
                observer.event(Event::Notice { kind: "warning", text: &text })?;
                self.fit(request, observer)?;
                self.send(request, observer).map_err(|error| match error {
                    error if is_context_overflow(&error) => Error::Config(format!(
                        "{error} — even after compaction; the server's window seems smaller than \
                         MINI_AGENT_CONTEXT_TOKENS={}: set it to the server's context size",
                        self.context_tokens
                    )),
                    error => error,
                })
            }
            other => other,
        }
    }
}
// ANCHOR_END: auto_compact

fn share_of(tokens: u64, percent: u64) -> u64 {
    tokens.saturating_mul(percent) / 100
}

fn too_large(estimate: u64, window: u64) -> Error {
    Error::Config(format!(
        "the conversation does not fit in the model's context window even after compaction \
         (about {estimate} tokens; the window is {window} tokens, set by MINI_AGENT_CONTEXT_TOKENS); \
         start a new session"
    ))
}

// ANCHOR: cut
/// Where the recent messages may begin: at a user message, or at an assistant message,
/// provided that every tool call before that point has its result before it too.
/// Cutting anywhere else would send a result without its call, or a call without its result.
fn clean_cuts(history: &[Message]) -> Vec<usize> {
    let mut open_calls: Vec<&str> = Vec::new();
    let mut cuts = Vec::new();
    for (at, message) in history.iter().enumerate() {
        match message {
            Message::User { .. } | Message::Assistant { .. } if open_calls.is_empty() => cuts.push(at),
            Message::User { .. }
            | Message::Assistant { .. }
            | Message::System { .. }
            | Message::Tool { .. } => {}
        }
        match message {
            Message::Assistant { tool_calls, .. } => {
                open_calls.extend(tool_calls.iter().map(|c| c.id.as_str()))
            }
            Message::Tool { tool_call_id, .. } => open_calls.retain(|id| id != tool_call_id),
            Message::User { .. } | Message::System { .. } => {}
        }
    }
    cuts
}

/// Chooses the cut for a compaction that must summarise something after `already`.
/// Automatic (`keep_tokens`): keep as many recent messages as fit in the budget, at least
/// the last step. Manual: keep the last user turn, or in one long turn its last step.
fn choose_cut(history: &[Message], already: usize, keep_tokens: Option<u64>) -> Option<usize> {
    let cuts: Vec<usize> = clean_cuts(history).into_iter().filter(|&c| c > already).collect();
    let at_user = |c: &&usize| matches!(history[**c], Message::User { .. });
    match keep_tokens {
        Some(budget) => {
            // tail[c] = estimated tokens of history[c..], summed once from the end.
            let mut tail = vec![0; history.len() + 1];
            for at in (0..history.len()).rev() {
                tail[at] = tail[at + 1] + estimate_message_tokens(&history[at]);
            }
            let fits = |c: &&usize| tail[**c] <= budget;
            // A whole user turn reads best; a cut inside a turn only when no turn fits.
            let whole_turns = cuts.iter().find(|c| at_user(c) && fits(c));
            whole_turns.or_else(|| cuts.iter().find(fits)).or(cuts.last()).copied()
        }
        None => {
            let last_turn = cuts.iter().rev().find(at_user);
            last_turn.or(cuts.last().filter(|&&c| c > already + 1)).copied()
        }
    }
}
// ANCHOR_END: cut

/// The text to summarise opens with the summary of what came before, if any…
fn transcript_header(previous: Option<&str>, words: u64) -> String {
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
fn transcript_piece(message: &Message) -> String {
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

fn clip(text: &str) -> Cow<'_, str> {
    let count = text.chars().count();
    if count <= SUMMARY_CLIP_CHARS {
        return Cow::Borrowed(text);
    }
    let half = SUMMARY_CLIP_CHARS / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(count - half).collect();
    Cow::Owned(format!("{head}\n[… {} characters cut …]\n{tail}", count - 2 * half))
}

/// Passes everything on except streamed text: a summary is not the answer to show.
struct WithoutText<'a>(&'a mut dyn Observer);

impl Observer for WithoutText<'_> {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        match event {
            Event::TextDelta(_) => Ok(()),
            other => self.0.event(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ch01_loop::{Limits, Outcome, ToolOutput, ToolStatus, Tools, run_turn};
    use serde_json::json;

    /// A scripted inner model: answers summary requests with `summary`, anything else with
    /// "ok" and `usage`; records what it was sent.
    #[derive(Default)]
    struct Inner {
        summary: String,
        usage: Option<Usage>,
        fail_summary: bool,
        sent: Vec<Vec<Message>>,
        summary_requests: Vec<Vec<Message>>,
    }

    impl Model for Inner {
        fn complete(&mut self, request: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
            let is_summary = matches!(request.messages.first(), Some(Message::System { content }) if content == SUMMARY_INSTRUCTIONS);
            if is_summary {
                assert!(request.tools.is_empty(), "a summary request offers no tools");
                self.summary_requests.push(request.messages.to_vec());
                if self.fail_summary {
                    return Err(Error::Network("connection reset".into()));
                }
                return Ok(Reply { content: Some(self.summary.clone()), ..Reply::default() });
            }
            self.sent.push(request.messages.to_vec());
            Ok(Reply { content: Some("ok".into()), usage: self.usage, ..Reply::default() })
        }
    }

    fn inner() -> Inner {
        Inner { summary: "The user built a parser; tests pass.".into(), ..Inner::default() }
    }

    /// Collects the notices (`kind`, `text`) and the compactions announced to the observer.
    #[derive(Default)]
    struct Notices {
        notices: Vec<(String, String)>,
        compactions: Vec<CompactionRecord>,
    }

    impl Observer for Notices {
        fn event(&mut self, event: Event) -> Result<(), Error> {
            match event {
                Event::Notice { kind, text } => self.notices.push((kind.to_string(), text.to_string())),
                Event::Compaction {
                    summary, replaced, elided, tokens_before, tokens_after, usage, ..
                } => {
                    let summary = summary.to_string();
                    self.compactions.push(CompactionRecord {
                        summary,
                        replaced,
                        elided,
                        tokens_before,
                        tokens_after,
                        usage,
                    });
                }
                _ => {}
            }
            Ok(())
        }
    }

    /// A session: a system prompt, then `turns` user turns of two steps each: one with two
    /// tool calls answered by long results, one final answer.
    fn session(turns: usize) -> Vec<Message> {
        let mut history = vec![Message::System { content: "You are a coding agent.".into() }];
        for turn in 0..turns {
            history.push(Message::User { content: format!("task {turn}: fix the parser") });
            let calls: Vec<ToolCall> = (0..2)
                .map(|n| ToolCall {
                    id: format!("call_{turn}_{n}"),
                    name: "read_file".into(),
                    arguments: format!("{{\"path\":\"src/file{n}.rs\"}}"),
                })
                .collect();
            history.push(Message::Assistant { content: None, tool_calls: calls.clone() });
            for call in calls {
                let content = format!("{}: {}", call.id, "fn parse() {}\n".repeat(20));
                history.push(Message::Tool { tool_call_id: call.id, content });
            }
            history.push(Message::Assistant {
                content: Some(format!("done with task {turn}")),
                tool_calls: vec![],
            });
        }
        history
    }

    fn send(
        model: &mut Compacting<Inner>,
        history: &[Message],
        observer: &mut dyn Observer,
    ) -> Result<Reply, Error> {
        model.complete(&Request { messages: history, tools: &[json!({"name": "read_file"})] }, observer)
    }

    /// Every call in `view` is answered right after it, and every result answers a call.
    fn assert_paired(view: &[Message]) {
        let mut open: Vec<&str> = Vec::new();
        for message in view {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    assert!(open.is_empty(), "calls {open:?} unanswered before the next step");
                    open.extend(tool_calls.iter().map(|c| c.id.as_str()));
                }
                Message::Tool { tool_call_id, .. } => {
                    assert!(open.contains(&tool_call_id.as_str()), "result {tool_call_id} without its call");
                    open.retain(|id| id != tool_call_id);
                }
                Message::User { .. } | Message::System { .. } => {
                    assert!(open.is_empty(), "{open:?} unanswered")
                }
            }
        }
        assert!(open.is_empty(), "calls {open:?} never answered");
    }

    #[test]
    fn estimates_count_cjk_characters_one_token_each() {
        assert_eq!(estimate_text_tokens("hello world!"), 4);
        // Digits and line breaks are about a token each: bytes / 4 said 1,092 bytes of numbers
        // were 273 tokens where a server counted about 1,150.
        let numbers: String = (1..=300).map(|n| format!("{n}\n")).collect();
        assert!(
            estimate_text_tokens(&numbers) >= numbers.len() as u64 - 10,
            "{}",
            estimate_text_tokens(&numbers)
        );
        assert_eq!(estimate_text_tokens("你好，世界"), 5);
        assert_eq!(estimate_text_tokens("abcd你好"), 3);
        assert_eq!(estimate_text_tokens("héllo"), 2);
        assert_eq!(estimate_text_tokens(""), 0);
        // Chinese text is not undercounted the way bytes / 4 would (15 bytes → 4).
        assert!(estimate_text_tokens("你好，世界") > "你好，世界".len() as u64 / 4);
    }

    #[test]
    fn a_prompt_under_the_share_is_sent_whole() {
        let history = session(3);
        let estimate = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
        let mut model = Compacting::new(inner(), estimate * 100 / AUTO_COMPACT_PERCENT + 10);
        send(&mut model, &history, &mut Notices::default()).expect("a reply");
        assert_eq!(model.inner.sent, [history]);
        assert!(model.inner.summary_requests.is_empty());
    }

    #[test]
    fn past_the_share_older_turns_become_a_summary() {
        let history = session(6);
        let estimate = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
        let mut model = Compacting::new(inner(), estimate * 100 / AUTO_COMPACT_PERCENT - 10);
        let mut notices = Notices::default();
        send(&mut model, &history, &mut notices).expect("a reply");

        assert_eq!(model.inner.summary_requests.len(), 1);
        let [record] = &notices.compactions[..] else {
            panic!("one compaction expected: {:?}", notices.compactions)
        };
        assert!(notices.notices.is_empty(), "{:?}", notices.notices);
        assert_eq!(record.summary, "The user built a parser; tests pass.");
        assert!(record.replaced > 0 && record.tokens_after < record.tokens_before);
        let sent = &model.inner.sent[0];
        assert_eq!(sent, &apply_compaction(&history, &record.summary, record.replaced, record.elided));
        assert_eq!(sent[0], history[0]);
        assert!(matches!(&sent[1], Message::User { content } if content.contains(&record.summary)));
        assert_eq!(sent[2..], history[1 + record.replaced..]);
        assert!(matches!(sent[2], Message::User { .. }), "recent part starts at a user turn");
        assert_paired(sent);
    }

    #[test]
    fn compaction_never_splits_a_call_from_its_result() {
        // Every window size cuts somewhere else; each sent view must stay paired.
        let mut history = session(5);
        // A long last turn: many steps, so cuts inside a turn are exercised too.
        for step in 0..6 {
            let id = format!("long_{step}");
            let call = ToolCall { id: id.clone(), name: "bash".into(), arguments: "{}".into() };
            history.push(Message::Assistant { content: None, tool_calls: vec![call] });
            history.push(Message::Tool { tool_call_id: id, content: "output line\n".repeat(40) });
        }
        let full = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
        let mut compacted = 0;
        for window in (full / 4..full * 2).step_by(37) {
            let mut model = Compacting::new(inner(), window);
            match send(&mut model, &history, &mut Notices::default()) {
                Ok(_) => assert_paired(&model.inner.sent[0]),
                Err(Error::Config(text)) => assert!(text.contains("start a new session"), "{text}"),
                Err(other) => panic!("unexpected error {other}"),
            }
            compacted += model.inner.summary_requests.len();
        }
        assert!(compacted > 10, "compaction ran for small windows");
    }

    #[test]
    fn a_recorded_compaction_restores_the_same_view() {
        let history = session(6);
        let estimate = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
        let window = estimate * 100 / AUTO_COMPACT_PERCENT - 10;
        let mut live = Compacting::new(inner(), window);
        let mut notices = Notices::default();
        send(&mut live, &history, &mut notices).expect("a reply");

        // A resumed session: the journal replays the record into a fresh state.
        let record = notices.compactions[0].clone();
        let mut resumed = Compacting::new(inner(), window);
        resumed.state().lock().expect("unpoisoned").restore(record);
        let mut next = history.clone();
        next.push(Message::User { content: "and now the lexer".into() });
        send(&mut live, &next, &mut Notices::default()).expect("a reply");
        send(&mut resumed, &next, &mut Notices::default()).expect("a reply");
        assert_eq!(live.inner.sent[1], resumed.inner.sent[0]);
        assert!(resumed.inner.summary_requests.is_empty(), "no second summary needed");
    }

    #[test]
    fn the_servers_usage_counts_more_than_the_estimate() {
        let history = session(1);
        let window = 10_000;
        assert!(estimate_request_tokens(&history, &[]) < window / 10);
        let mut model = Compacting::new(
            Inner { usage: Some(Usage { prompt_tokens: 9_000, completion_tokens: 5 }), ..inner() },
            window,
        );
        send(&mut model, &history, &mut Notices::default()).expect("a reply");
        assert!(model.inner.summary_requests.is_empty());
        let mut next = history.clone();
        next.push(Message::Assistant { content: Some("ok".into()), tool_calls: vec![] });
        next.push(Message::User { content: "next task".into() });
        assert!(model.estimate_prompt(&next, &[]) > 9_000);
        send(&mut model, &next, &mut Notices::default()).expect("a reply");
        assert_eq!(model.inner.summary_requests.len(), 1, "the server said the prompt is large");
    }

    #[test]
    fn a_history_far_past_the_window_is_summarised_in_rounds() {
        let history = session(20);
        let window = 2_000;
        assert!(estimate_request_tokens(&history, &[]) > 2 * window);
        let mut model = Compacting::new(inner(), window);
        let mut notices = Notices::default();
        send(&mut model, &history, &mut notices).expect("a reply");
        let rounds = model.inner.summary_requests.len();
        assert!(rounds >= 2, "{rounds} rounds");
        assert_eq!(notices.compactions.len(), rounds);
        for request in &model.inner.summary_requests {
            assert!(estimate_messages_tokens(request) <= window / 2, "each summary request fits");
        }
        // Later rounds build on the earlier summary; the last record describes what was sent.
        assert!(matches!(&model.inner.summary_requests[1][1], Message::User { content }
            if content.contains("Summary of what came before it:\nThe user built a parser")));
        let last = notices.compactions[rounds - 1].clone();
        assert_eq!(
            model.inner.sent[0],
            apply_compaction(&history, &last.summary, last.replaced, last.elided)
        );
        assert!(estimate_request_tokens(&model.inner.sent[0], &[]) <= window);
        assert_paired(&model.inner.sent[0]);
    }

    #[test]
    fn a_summary_never_leaks_into_another_session() {
        let history = session(6);
        let estimate = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
        let mut model = Compacting::new(inner(), estimate * 100 / AUTO_COMPACT_PERCENT - 10);
        send(&mut model, &history, &mut Notices::default()).expect("a reply");
        // `/new` without clearing the state: a different first message, same length.
        let mut other = history.clone();
        other[1] = Message::User { content: "a different session".into() };
        let state = model.state();
        let state = state.lock().expect("unpoisoned");
        assert_eq!(state.view(&other)[..], other[..]);
        assert_ne!(state.view(&history)[..], history[..], "the session itself stays compacted");
    }

    #[test]
    fn the_servers_count_calibrates_later_estimates() {
        let tools = [json!({"name": "read_file"})];
        let history = session(1);
        let raw = estimate_request_tokens(&history, &tools);
        let usage = Some(Usage { prompt_tokens: raw * 2, completion_tokens: 1 });
        let mut model = Compacting::new(Inner { usage, ..inner() }, 1_000_000);
        send(&mut model, &history, &mut Notices::default()).expect("sent");
        // Another history (no measured prefix): the plain estimate, scaled by what was learnt.
        let other = session(3);
        let plain = estimate_request_tokens(&other, &tools);
        assert_eq!(model.estimate_prompt(&other, &tools), scaled(plain, 2.0));
    }

    #[test]
    fn a_request_that_cannot_fit_even_compacted_is_refused() {
        let mut history = session(2);
        history.push(Message::User { content: "x".repeat(40_000) });
        let mut model = Compacting::new(inner(), 5_000);
        let error = send(&mut model, &history, &mut Notices::default()).expect_err("too large");
        let Error::Config(text) = error else { panic!("a Config error expected, got {error:?}") };
        assert!(text.contains("even after compaction") && text.contains("start a new session"), "{text}");
        assert!(!text.contains("/new"), "a -p run has no /new: {text}");
        assert!(model.inner.sent.is_empty(), "nothing was sent");
    }

    #[test]
    fn a_failed_summary_still_sends_a_history_that_fits() {
        let history = session(6);
        let estimate = estimate_request_tokens(&history, &[json!({"name": "read_file"})]);
        let mut model = Compacting::new(
            Inner { fail_summary: true, ..inner() },
            estimate * 100 / AUTO_COMPACT_PERCENT - 10,
        );
        let mut notices = Notices::default();
        send(&mut model, &history, &mut notices).expect("a reply");
        assert_eq!(model.inner.sent, [history]);
        assert_eq!(notices.notices[0].0, "warning");
        assert!(notices.notices[0].1.contains("connection reset"));
    }

    #[test]
    fn manual_compaction_keeps_the_last_user_turn() {
        let history = session(3);
        let mut model = Compacting::new(inner(), 128_000);
        let mut notices = Notices::default();
        let record = model.compact(&history, &mut notices).expect("compacted").expect("something to compact");
        let last_user = history.iter().rposition(|m| matches!(m, Message::User { .. })).expect("a user turn");
        assert_eq!(record.replaced, last_user - 1);
        let summarised = &model.inner.summary_requests[0][1];
        assert!(
            matches!(summarised, Message::User { content } if content.contains("task 1") && !content.contains("task 2"))
        );
        // A second /compact summarises the last turn up to its final answer; then nothing is left.
        let again = model.compact(&history, &mut notices).expect("compacted").expect("the last turn");
        assert_eq!(again.replaced, history.len() - 2);
        assert!(matches!(&model.inner.summary_requests[1][1], Message::User { content }
            if content.contains("The user built a parser") && content.contains("task 2")));
        assert_eq!(model.compact(&history, &mut notices).expect("no error"), None);
        assert_eq!(notices.compactions.len(), 2);
        // One exchange is too little to compact.
        assert_eq!(
            Compacting::new(inner(), 128_000).compact(&session(1)[..2], &mut notices).expect("ok"),
            None
        );
    }

    #[test]
    fn stats_count_requests_tokens_and_tool_calls() {
        struct Script(Vec<Reply>);
        impl Model for Script {
            fn complete(&mut self, _: &Request, _: &mut dyn Observer) -> Result<Reply, Error> {
                Ok(self.0.remove(0))
            }
        }
        struct Ok2;
        impl Tools for Ok2 {
            fn schemas(&self) -> Vec<Value> {
                Vec::new()
            }
            fn run(&mut self, _: &ToolCall) -> ToolOutput {
                ToolOutput { content: "fine".into(), status: ToolStatus::Ok }
            }
        }
        let call = |id: &str| ToolCall { id: id.into(), name: "bash".into(), arguments: "{}".into() };
        let mut model = Script(vec![
            Reply {
                tool_calls: vec![call("a"), call("b")],
                usage: Some(Usage { prompt_tokens: 100, completion_tokens: 10 }),
                ..Reply::default()
            },
            Reply { content: Some("all done".into()), ..Reply::default() },
        ]);
        let mut stats = Stats::new();
        let mut history = vec![Message::User { content: "go".into() }];
        stats.event(Event::Message(&history[0])).expect("counted");
        let outcome = run_turn(&mut model, &mut Ok2, &mut history, &mut stats, &Limits { max_turns: 5 });
        assert!(matches!(outcome, Outcome::Completed(_)));
        assert_eq!((stats.requests, stats.tool_calls, stats.estimated_replies), (2, 2, 1));
        // The second reply had no usage: its prompt is the estimate of the four messages before it.
        let prompt_estimate = estimate_messages_tokens(&history[..4]);
        let reply_estimate = estimate_message_tokens(&history[4]);
        assert_eq!(stats.prompt_tokens, 100 + prompt_estimate);
        assert_eq!(stats.completion_tokens, 10 + reply_estimate);

        let record = CompactionRecord {
            summary: "s".into(),
            replaced: 3,
            elided: 0,
            tokens_before: 50,
            tokens_after: 20,
            usage: Some(Usage { prompt_tokens: 40, completion_tokens: 7 }),
        };
        stats
            .event(Event::Compaction {
                summary: &record.summary,
                replaced: record.replaced,
                elided: 0,
                summarised: true,
                tokens_before: record.tokens_before,
                tokens_after: record.tokens_after,
                usage: record.usage,
            })
            .expect("counted");
        assert_eq!((stats.requests, stats.compactions, stats.completion_tokens), (3, 1, 17 + reply_estimate));
        let shown = stats.to_string();
        assert!(shown.starts_with("requests     3 (1 was a compaction)\n"), "{shown}");
        assert!(shown.contains("tool calls   2\n") && shown.contains("(1 reply estimated)"), "{shown}");
    }

    #[test]
    fn the_window_comes_from_the_environment_value_or_the_default() {
        assert_eq!(parse_context_tokens(None).expect("default"), 128_000);
        assert_eq!(parse_context_tokens(Some(" 32_000 ")).expect("a number"), 32_000);
        for bad in ["", "lots", "12"] {
            let Err(Error::Config(text)) = parse_context_tokens(Some(bad)) else {
                panic!("{bad:?} accepted")
            };
            assert!(text.contains("MINI_AGENT_CONTEXT_TOKENS"), "{text}");
        }
    }
}
