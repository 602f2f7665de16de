//! Boxes: two kinds of block quote that the page draws differently from a plain quote.
//!
//! A chapter keeps its main line short and puts what a first reading may skip in a marked box,
//! and hides the answer to an exercise until the reader asks for it. Both are ordinary Markdown
//! block quotes whose first words, in bold, say what they are, so the source stays plain
//! Markdown that any viewer shows sensibly:
//!
//! * `> **Deep dive: the race.** …` / `> **深入：竞争** …` becomes
//!   `<aside class="deep-dive">…</aside>`, a styled box (the bold title stays its first line).
//! * `> **Solution.** …` / `> **解答：** …` becomes `<details class="solution">` with the bold
//!   words as its `<summary>`: closed until clicked, open when printed.
//!
//! The rewrite happens on pulldown-cmark events, after the chapter's own checks, so a box may
//! hold anything a quote may (lists, code, includes) and nests like one.

use pulldown_cmark::{CowStr, Event, Tag, TagEnd};

/// The bold opening words that mark a deep-dive box, per language (both accepted in either).
pub const DEEP_DIVE: [&str; 2] = ["Deep dive", "深入"];
/// The bold opening words that mark a solution.
pub const SOLUTION: [&str; 2] = ["Solution", "解答"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Quote,
    DeepDive,
    Solution,
}

fn kind_of(first_words: &str) -> Kind {
    if DEEP_DIVE.iter().any(|marker| first_words.starts_with(marker)) {
        Kind::DeepDive
    } else if SOLUTION.iter().any(|marker| first_words.starts_with(marker)) {
        Kind::Solution
    } else {
        Kind::Quote
    }
}

/// Whether a block quote opening with these bold words is a box (deep dive or solution).
pub fn is_marked(first_words: &str) -> bool {
    kind_of(first_words) != Kind::Quote
}

/// Rewrites marked block quotes into boxes; everything else passes through unchanged.
pub fn mark(events: Vec<Event<'_>>) -> Vec<Event<'_>> {
    let mut out = Vec::with_capacity(events.len());
    let mut open: Vec<Kind> = Vec::new();
    let mut at = 0;
    while at < events.len() {
        match &events[at] {
            Event::Start(Tag::BlockQuote(_)) => {
                let kind = match (events.get(at + 1), events.get(at + 2), events.get(at + 3)) {
                    (
                        Some(Event::Start(Tag::Paragraph)),
                        Some(Event::Start(Tag::Strong)),
                        Some(Event::Text(words)),
                    ) => kind_of(words),
                    _ => Kind::Quote,
                };
                open.push(kind);
                match kind {
                    Kind::Quote => out.push(events[at].clone()),
                    Kind::DeepDive => out.push(Event::Html("<aside class=\"deep-dive\">\n".into())),
                    Kind::Solution => {
                        // `> **Solution.** text`: the bold words become the summary, the
                        // paragraph goes on with the text after them.
                        out.push(Event::Html("<details class=\"solution\"><summary>".into()));
                        let mut next = at + 3;
                        while let Some(event) = events.get(next) {
                            if let Event::End(TagEnd::Strong) = event {
                                break;
                            }
                            out.push(event.clone());
                            next += 1;
                        }
                        out.push(Event::Html("</summary>\n".into()));
                        out.push(Event::Start(Tag::Paragraph));
                        at = next + 1;
                        if let Some(Event::Text(text)) = events.get(at) {
                            out.push(Event::Text(CowStr::from(text.trim_start().to_string())));
                            at += 1;
                        }
                        continue;
                    }
                }
            }
            Event::End(TagEnd::BlockQuote(_)) => match open.pop().unwrap_or(Kind::Quote) {
                Kind::Quote => out.push(events[at].clone()),
                Kind::DeepDive => out.push(Event::Html("</aside>\n".into())),
                Kind::Solution => out.push(Event::Html("</details>\n".into())),
            },
            event => out.push(event.clone()),
        }
        at += 1;
    }
    out
}

/// How many boxes of each kind a chapter's Markdown holds: (deep dives, solutions). Counted on
/// the source lines, which is enough to compare the two languages of one chapter.
pub fn count(markdown: &str) -> (usize, usize) {
    let mut counts = (0, 0);
    for line in markdown.lines() {
        let Some(words) = line.trim_start().strip_prefix("> **") else { continue };
        match kind_of(words) {
            Kind::DeepDive => counts.0 += 1,
            Kind::Solution => counts.1 += 1,
            Kind::Quote => {}
        }
    }
    counts
}
