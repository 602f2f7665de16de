//! Where the summary may end and the recent messages begin. A cut never separates a tool
//! call from its result: a model shown one without the other rejects the request.

use super::estimate::*;
use crate::ch02_loop::Message;

// ANCHOR: cut
/// Where the recent messages may begin: at a user message, or at an assistant message,
/// provided that every tool call before that point has its result before it too.
/// Cutting anywhere else would send a result without its call, or a call without its result.
pub(super) fn clean_cuts(history: &[Message]) -> Vec<usize> {
    // A set: with a Vec, a history of 20,000 open calls made every compaction quadratic
    // (a resumed 44 MB journal took minutes).
    let mut open_calls: std::collections::HashSet<&str> = std::collections::HashSet::new();
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
            Message::Tool { tool_call_id, .. } => {
                open_calls.remove(tool_call_id.as_str());
            }
            Message::User { .. } | Message::System { .. } => {}
        }
    }
    cuts
}

// ANCHOR_END: cut
// ANCHOR: choose_cut
/// Chooses the cut for a compaction that must summarise something after `already`.
/// Automatic (`keep_tokens`): keep as many recent messages as fit in the budget, at least
/// the last step. Manual: keep the last user turn, or in one long turn its last step.
pub(super) fn choose_cut(history: &[Message], already: usize, keep_tokens: Option<u64>) -> Option<usize> {
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
// ANCHOR_END: choose_cut
