//! [`Compacting`]: a [`Model`] around a `Model` that keeps the request inside the window —
//! elide old large results first, then summarise older turns, and when the server still says
//! "too long", learn its real window and retry once. The loop never knows.

use super::cut::*;
use super::estimate::*;
use super::record::*;
use super::shrink::{calibration, fit_pieces, is_context_overflow, scaled, stated_limits, summary_words};
use super::squeeze::{squeeze, squeeze_budget};
use super::transcript::*;
use crate::ch02_loop::{Error, Event, Message, Model, Observer, Reply, Request};
use crate::text::shorten;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::{MutexGuard, PoisonError};

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

pub(super) const SUMMARY_INSTRUCTIONS: &str = "You summarise the earlier part of a coding session so that \
the work can continue with less context. Write a concise plain-text summary (at most about 300 \
words): the user's goals and requests, decisions made, files read, created or changed (with \
paths), commands run and their important results, errors met, and what remains to do. Keep exact \
names, paths and values. No preamble.";

/// A window learnt from a server's overflow error is never taken smaller than this.
pub(super) const MIN_LEARNED_WINDOW: u64 = 256;

/// The text to summarise may take at most this share of the window.
pub(super) const SUMMARY_INPUT_PERCENT: u64 = 50;
/// Automatic compaction stops after this many summaries for one request.
pub(super) const MAX_COMPACTION_ROUNDS: usize = 8;

/// A message text longer than this is clipped (head and tail) in the text to summarise.
pub(super) const SUMMARY_CLIP_CHARS: usize = 2000;

// ANCHOR: compacting
/// A [`Model`] that sends a compacted view of the history when the full one grows too large.
pub struct Compacting<M: Model> {
    pub(super) inner: M,
    context_tokens: u64,
    state: SharedCompaction,
    /// The server's prompt count for the last request, to estimate the next one from.
    measured: Option<Measured>,
    /// Server tokens per estimated token, learnt from `usage` (1.0 until then).
    ratio: f64,
    /// The window as the server showed it by refusing a request as too long, when smaller:
    /// the number it stated, or a tenth below what it refused. Kept for the rest of the run.
    learned_window: Option<Learned>,
    /// Tokens each latest tool result may take, when nothing else was left to shrink.
    squeeze: Option<u64>,
}

/// A window learnt from the server: its size, and whether the server stated it.
#[derive(Clone, Copy)]
struct Learned {
    tokens: u64,
    stated: bool,
}

pub(super) struct Measured {
    generation: u64,
    history_len: usize,
    last_message: Message,
    prompt_tokens: u64,
}
// ANCHOR_END: compacting

impl<M: Model> Compacting<M> {
    /// `context_tokens` is the model's window (`MINI_AGENT_CONTEXT_TOKENS`, default 128000).
    pub fn new(inner: M, context_tokens: u64) -> Self {
        Self::with_state(inner, context_tokens, CompactionState::shared())
    }

    pub fn with_state(inner: M, context_tokens: u64, state: SharedCompaction) -> Self {
        Compacting {
            inner,
            context_tokens,
            state,
            measured: None,
            ratio: 1.0,
            learned_window: None,
            squeeze: None,
        }
    }

    /// The shared state: restore it from the journal on resume, clear it on `/new`.
    pub fn state(&self) -> SharedCompaction {
        self.state.clone()
    }

    /// The model's context window, in tokens, as this layer was told.
    pub fn context_tokens(&self) -> u64 {
        self.context_tokens
    }

    fn too_large(&self, estimate: u64) -> Error {
        match self.learned_window.filter(|learned| learned.tokens < self.context_tokens) {
            Some(Learned { tokens, stated: true }) => Error::Config(format!(
                "the conversation does not fit in the server's context window even after compaction \
                 (about {estimate} tokens; the server said its window is {tokens} tokens); give the \
                 server a larger context (llama.cpp -c, vLLM --max-model-len, Ollama num_ctx), or \
                 start a new session"
            )),
            Some(Learned { tokens, stated: false }) => Error::Config(format!(
                "the conversation does not fit in the server's context window even after compaction \
                 (about {estimate} tokens; the server refused a request as too long, so its window is \
                 taken as about {tokens} tokens); start a new session"
            )),
            None => too_large(estimate, self.context_tokens),
        }
    }

    /// The window compaction works to: the configured one, or what the server showed.
    fn window(&self) -> u64 {
        self.learned_window.map_or(self.context_tokens, |learned| learned.tokens.min(self.context_tokens))
    }

    fn lock(&self) -> MutexGuard<'_, CompactionState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What is sent for `history`: the compacted view, its large latest results squeezed
    /// when that was the last resort.
    fn view<'a>(&self, history: &'a [Message]) -> Cow<'a, [Message]> {
        let view = self.lock().view(history);
        match self.squeeze {
            Some(budget) => Cow::Owned(squeeze(&view, budget, self.ratio)),
            None => view,
        }
    }

    // ANCHOR: estimate_prompt
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

    // ANCHOR_END: estimate_prompt
    /// `/compact`: summarises everything before the most recent user message (or, in one
    /// long turn, before its last assistant step). `None` when there is nothing to compact, or
    /// when a summary would not make the view smaller: the history is never replaced by more.
    pub fn compact(
        &mut self,
        history: &[Message],
        observer: &mut dyn Observer,
    ) -> Result<Option<CompactionRecord>, Error> {
        self.compact_with(history, None, observer)
    }

    // ANCHOR: compact_with
    // ANCHOR: compact_signature
    /// Replaces older messages of `history` with a summary written by the inner model, keeping
    /// about `keep_tokens` of recent ones (`None`: the last turn, as `/compact` asks). The
    /// compaction is announced to `observer` (so it is recorded) before it is used; `None`
    /// when a summary would not make the view smaller.
    fn compact_with(
        &mut self,
        history: &[Message],
        keep_tokens: Option<u64>,
        observer: &mut dyn Observer,
    ) -> Result<Option<CompactionRecord>, Error> {
        // ANCHOR_END: compact_signature
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
        // Nothing older than the user's own words (the bare prompt): a summary would only
        // paraphrase the request, so none is asked for.
        if history[already..cut].iter().all(|message| matches!(message, Message::User { .. })) {
            return Ok(None);
        }
        // Not worth a request when even an empty summary would not make the view smaller.
        let framed = apply_compaction(history, "", cut - start, elided);
        if scaled(estimate_messages_tokens(&framed), self.ratio) >= tokens_before {
            return Ok(None);
        }
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
        // The summary is longer than all it would replace: it helps nobody, and `/compact`
        // must never make the context bigger. (An automatic first round that covers less than
        // `wanted` is kept: the next one goes further.)
        if tokens_after >= tokens_before && (keep_tokens.is_none() || cut == wanted) {
            return Ok(None);
        }
        let record =
            CompactionRecord { summary, replaced, elided, tokens_before, tokens_after, usage: reply.usage };
        // Recorded first: the journal must know the view before a request uses it.
        let compacted = Compacted { record, summarised: true };
        observer.event(Event::Notice(&compacted))?;
        self.lock().set(compacted.record.clone(), history.get(start).cloned());
        Ok(Some(compacted.record))
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
            .find(|&end| end > from && history[from..end].iter().any(crate::ch07_context::shrink::elidable))
        else {
            return Ok(false);
        };
        let elided = end - start;
        let view = apply_compaction(history, &summary, replaced, elided);
        let tokens_after = scaled(estimate_messages_tokens(&view), self.ratio);
        let record = CompactionRecord { summary, replaced, elided, tokens_before, tokens_after, usage: None };
        let compacted = Compacted { record, summarised: false };
        observer.event(Event::Notice(&compacted))?;
        self.lock().set(compacted.record, history.get(start).cloned());
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
                // Nothing (more) to summarise, or no step small enough to: what is left is the
                // latest results, squeezed below.
                Ok(None) | Err(Error::Config(_)) => break,
                // A failed summary is not fatal while the full history still fits.
                Err(error) if estimate <= self.window() && !matches!(error, Error::Interrupted) => {
                    let text = format!("automatic compaction failed ({error}); sending the full history");
                    observer.event(Event::Warning(&text))?;
                    break;
                }
                Err(error) => return Err(error),
            }
        }
        estimate = self.squeeze_latest(history, request.tools, estimate, observer)?;
        if estimate > self.window() {
            return Err(self.too_large(estimate));
        }
        Ok(())
    }
    // ANCHOR_END: fit

    // ANCHOR: squeeze_latest
    /// The last resort (see [`super::squeeze`]): when the view still does not fit, each large
    /// latest tool result is cut to a share of what is left. Decided anew for every request
    /// from the view itself; returns the estimate of what will be sent.
    fn squeeze_latest(
        &mut self,
        history: &[Message],
        tools: &[Value],
        estimate: u64,
        observer: &mut dyn Observer,
    ) -> Result<u64, Error> {
        let target = share_of(self.window(), AUTO_COMPACT_PERCENT);
        if estimate <= target && self.squeeze.is_none() {
            return Ok(estimate);
        }
        let view = self.lock().view(history);
        let fixed = scaled(estimate_request_tokens(&[], tools), self.ratio);
        self.squeeze = squeeze_budget(&view, fixed, target, self.ratio);
        let Some(budget) = self.squeeze else { return Ok(estimate) };
        let text = format!(
            "a tool result is larger than the context window allows: the model is sent its head and \
             tail (about {budget} tokens) and told how much was cut"
        );
        observer.event(Event::Warning(&text))?;
        Ok(scaled(estimate_request_tokens(&squeeze(&view, budget, self.ratio), tools), self.ratio))
    }
    // ANCHOR_END: squeeze_latest

    /// Sends the view, and learns from the server's count of it.
    fn send(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        let history = request.messages;
        let generation = self.lock().generation;
        let view = self.view(history);
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
                // The server's window is smaller than what was just sent, whatever it was said to
                // be. When its error states the window, that is the window from now on; else it
                // is taken a tenth smaller than what was sent. Its count of what was sent, when
                // stated, calibrates the estimate. Compact, try again.
                let sent = estimate_request_tokens(&self.view(request.messages), request.tools);
                let (stated, counted) = stated_limits(&error);
                if let Some(ratio) = counted.and_then(|count| calibration(count, sent)) {
                    self.ratio = ratio;
                }
                let tokens = stated.unwrap_or_else(|| scaled(sent, self.ratio) / 10 * 9);
                let tokens = tokens.max(MIN_LEARNED_WINDOW).min(self.window());
                self.learned_window = Some(Learned { tokens, stated: stated.is_some() });
                self.measured = None;
                let text = match stated {
                    Some(_) => format!(
                        "{error}; the server's window is {tokens} tokens: compacting and retrying once"
                    ),
                    None => format!("{error}; compacting and retrying once"),
                };
                observer.event(Event::Warning(&text))?;
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

pub(super) fn share_of(tokens: u64, percent: u64) -> u64 {
    tokens.saturating_mul(percent) / 100
}

pub(super) fn too_large(estimate: u64, window: u64) -> Error {
    Error::Config(format!(
        "the conversation does not fit in the model's context window even after compaction \
         (about {estimate} tokens; the window is {window} tokens, set by MINI_AGENT_CONTEXT_TOKENS); \
         start a new session"
    ))
}
