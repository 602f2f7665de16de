//! Chapter 7 — the last resort: squeezing the latest tool results.
//!
//! Eliding and summarising work on what is *old*; the latest results are left whole, because
//! the model asked for them and has not read them yet. But one result can be larger than the
//! whole window (`seq 1 3000` against a 4,000-token model), and then nothing old is left to
//! forget: the session would end. So when all else is done and the request still does not
//! fit, each large result in the view is sent as its head and its tail with a line saying how
//! much was cut from the middle. The model knows it saw part, and can ask for less (`head`,
//! `grep`, a line range). The tail is kept because that is where a command says how it ended
//! (the exit code, the test summary, where the whole output was saved).
//!
//! Only the view is squeezed: the history and the journal keep every byte. The budget is a
//! pure function of the view and the window, so it is worked out anew for every request and
//! needs no record; once the result is old, ordinary elision shortens it further.

use super::estimate::{estimate_message_tokens, estimate_text_tokens};
use super::shrink::scaled;
use crate::ch02_loop::Message;

/// A squeezed result keeps at least this many tokens, however small the share.
pub(crate) const MIN_SQUEEZED_TOKENS: u64 = 64;

/// The token budget for each large tool result so that `view` fits in `target` tokens, or
/// `None` when it fits already. The results over the budget share what the rest leaves.
pub(crate) fn squeeze_budget(view: &[Message], fixed: u64, target: u64, ratio: f64) -> Option<u64> {
    let cost = |m: &Message| scaled(estimate_message_tokens(m), ratio);
    let total: u64 = fixed + view.iter().map(cost).sum::<u64>();
    if total <= target {
        return None;
    }
    let results: Vec<u64> = view.iter().filter(|m| matches!(m, Message::Tool { .. })).map(cost).collect();
    // The budget b that makes the others plus min(result, b) each fit: start from an even
    // share, and give what small results leave unused to the large ones.
    let rest = total - results.iter().sum::<u64>();
    let mut budget = target.saturating_sub(rest) / (results.len() as u64).max(1);
    for _ in 0..4 {
        let small: u64 = results.iter().filter(|&&r| r <= budget).sum();
        let large = results.iter().filter(|&&r| r > budget).count() as u64;
        budget = target.saturating_sub(rest + small) / large.max(1);
    }
    Some(budget.max(MIN_SQUEEZED_TOKENS))
}

/// `view` with every tool result over `budget` tokens cut to its head and tail.
pub(crate) fn squeeze(view: &[Message], budget: u64, ratio: f64) -> Vec<Message> {
    view.iter()
        .map(|message| match message {
            Message::Tool { tool_call_id, content } => Message::Tool {
                tool_call_id: tool_call_id.clone(),
                content: squeezed(content, budget, ratio),
            },
            other => other.clone(),
        })
        .collect()
}

// ANCHOR: squeezed
/// `content` as its head and tail within `budget` tokens, with a line saying what was cut.
fn squeezed(content: &str, budget: u64, ratio: f64) -> String {
    let tokens = scaled(estimate_text_tokens(content), ratio);
    if tokens <= budget {
        return content.to_string();
    }
    let chars = content.chars().count();
    // Characters per token vary along a text: start from the average, then tighten.
    let mut keep = (chars as u64 * budget / tokens.max(1)) as usize;
    loop {
        let half = keep / 2;
        let Some((head, cut, tail)) = crate::text::head_and_tail(content, keep, half, half) else {
            return content.to_string();
        };
        let note = format!(
            "\n[… {cut} characters cut from the middle of this result to fit the context window \
             ({chars} in all); ask for less (head, tail, grep, a line range) to see the rest …]\n"
        );
        let text = format!("{head}{note}{tail}");
        if scaled(estimate_text_tokens(&text), ratio) <= budget || keep < 32 {
            return text;
        }
        keep = keep * 3 / 4;
    }
}
// ANCHOR_END: squeezed

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(content: String) -> Message {
        Message::Tool { tool_call_id: "c".into(), content }
    }

    #[test]
    fn a_result_larger_than_the_budget_keeps_its_head_and_tail_and_says_so() {
        let numbers: String = (1..=3000).map(|n| format!("{n}\n")).collect();
        let view = vec![Message::User { content: "go".into() }, tool(numbers.clone())];
        let budget = squeeze_budget(&view, 0, 1000, 1.0).expect("it does not fit");
        let view = squeeze(&view, budget, 1.0);
        let Message::Tool { content, .. } = &view[1] else { panic!() };
        assert!(content.starts_with("1\n2\n3\n") && content.ends_with("2999\n3000\n"), "{content}");
        assert!(content.contains("characters cut from the middle") && content.contains("in all"));
        assert!(scaled(estimate_text_tokens(content), 1.0) <= budget, "{}", content.len());
        assert!((MIN_SQUEEZED_TOKENS..1000).contains(&budget));
    }

    #[test]
    fn a_view_that_fits_is_left_alone_and_small_results_keep_their_share() {
        let view = vec![tool("ok".into()), tool("x ".repeat(5000))];
        assert_eq!(squeeze_budget(&view, 0, 100_000, 1.0), None);
        let budget = squeeze_budget(&view, 0, 600, 1.0).unwrap();
        let view = squeeze(&view, budget, 1.0);
        assert_eq!(view[0], tool("ok".into()));
        let Message::Tool { content, .. } = &view[1] else { panic!() };
        assert!(content.len() < 5000 && content.contains("cut from the middle"));
    }
}
