//! Reading cost: how much a reader has to get through, per chapter, so a rewrite can say
//! whether it made the book shorter. `build-guide --stats` prints, for every chapter: English
//! words of prose, Chinese characters of prose (each with the part inside deep dives and
//! solutions, which a first reading skips, in parentheses) (Han characters, plus each Latin word as one),
//! and lines of code shown: Rust included from `src/` (as shown, boxed part in parentheses) and other fenced blocks
//! (commands, output; the English side, which both languages share). Prose is everything outside code blocks, headings
//! included, inline code counted as words. Then the listings: per chapter, how many Rust
//! listings it shows, the longest, and how many are over [`LONG_LISTING`] lines (the book aims
//! for most at or under that), so a claim about listing length is measured, not guessed.

use crate::anchors::{Anchor, AnchorMap};
use crate::boxes;
use crate::chapters::options;
use crate::listings::{fence_language, include_target};
use crate::states::State;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use std::fmt::Write;
use std::path::Path;

/// What one chapter file costs to read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    /// English words, or for Chinese: Han characters plus Latin words.
    pub prose: usize,
    /// The part of `prose` inside deep dives and solutions, which a first reading skips.
    pub optional: usize,
    /// Lines of Rust included from `src/`, as shown.
    pub included_lines: usize,
    /// The part of `included_lines` inside deep dives and solutions.
    pub optional_lines: usize,
    /// Lines of other fenced blocks (commands, output, JSON, TOML).
    pub other_lines: usize,
    /// Rust listings (includes) shown.
    pub listings: usize,
    /// Lines of the longest listing, as shown.
    pub longest: usize,
    /// Listings longer than [`LONG_LISTING`] lines.
    pub long_listings: usize,
    /// Listings that drop later chapters' items (or items the chapter already replaced).
    pub trimmed: usize,
    /// Lines those listings drop.
    pub trimmed_lines: usize,
}

/// A listing longer than this is counted as long: the book aims for most listings at or under it.
pub const LONG_LISTING: usize = 30;

fn is_han(character: char) -> bool {
    matches!(character, '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}')
}

/// Words for English; Han characters plus Latin words for Chinese.
pub fn prose_units(text: &str) -> usize {
    let han = text.chars().filter(|c| is_han(*c)).count();
    let words = text
        .split(|c: char| {
            c.is_whitespace()
                || is_han(c)
                || ('\u{3000}'..='\u{303f}').contains(&c)
                || ('\u{ff00}'..='\u{ffef}').contains(&c)
        })
        .filter(|word| word.chars().any(char::is_alphanumeric))
        .count();
    han + words
}

pub fn cost(markdown: &str, anchors: &AnchorMap, state: State) -> Cost {
    let mut cost = Cost::default();
    let (mut main, mut optional) = (String::new(), String::new());
    let mut block: Option<(String, String)> = None;
    let events: Vec<Event> = Parser::new_ext(markdown, options()).collect();
    // Per open block quote: is it a box (deep dive or solution)?
    let mut quotes: Vec<bool> = Vec::new();
    for (at, event) in events.iter().enumerate() {
        let prose = if quotes.contains(&true) { &mut optional } else { &mut main };
        match event {
            Event::Start(Tag::BlockQuote(_)) => {
                let marked = match (events.get(at + 1), events.get(at + 2), events.get(at + 3)) {
                    (
                        Some(Event::Start(Tag::Paragraph)),
                        Some(Event::Start(Tag::Strong)),
                        Some(Event::Text(words)),
                    ) => boxes::is_marked(words),
                    _ => false,
                };
                quotes.push(marked);
            }
            Event::End(TagEnd::BlockQuote(_)) => {
                quotes.pop();
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                block = Some((info, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                let Some((info, body)) = block.take() else { continue };
                match include_target(&body).filter(|_| fence_language(&info) == "rust") {
                    Some(target) => {
                        let anchor = region(target, anchors);
                        let length = anchor.map_or(0, |anchor| anchor.shown(state).lines().count());
                        let dropped = anchor.map_or(0, |anchor| anchor.dropped_lines(state));
                        cost.trimmed += usize::from(dropped > 0);
                        cost.trimmed_lines += dropped;
                        cost.included_lines += length;
                        if quotes.contains(&true) {
                            cost.optional_lines += length;
                        }
                        cost.listings += 1;
                        cost.longest = cost.longest.max(length);
                        cost.long_listings += usize::from(length > LONG_LISTING);
                    }
                    None => cost.other_lines += body.lines().count(),
                }
            }
            Event::Text(text) | Event::Code(text) => match block.as_mut() {
                Some((_, body)) => body.push_str(text),
                None => {
                    prose.push_str(text);
                    prose.push(' ');
                }
            },
            Event::SoftBreak | Event::HardBreak => prose.push(' '),
            _ => {}
        }
    }
    cost.optional = prose_units(&optional);
    cost.prose = prose_units(&main) + cost.optional;
    cost
}

fn region<'a>(target: &str, anchors: &'a AnchorMap) -> Option<&'a Anchor> {
    let (file, anchor) = target.rsplit_once(':')?;
    anchors.get(file)?.get(anchor)
}

/// The core path a first reading takes: chapters 1 to 13 (the book's promise is a weekend).
pub const CORE_PATH: std::ops::RangeInclusive<usize> = 1..=13;
/// At most this many words of main text (outside deep dives and solutions) in any chapter.
pub const MAX_CHAPTER_WORDS: usize = 3_000;
/// At most this many words and Rust lines of main text on the whole core path.
pub const MAX_CORE_WORDS: usize = 25_000;
pub const MAX_CORE_LINES: usize = 4_500;

/// The book's size as a rule `--check` keeps: no chapter over [`MAX_CHAPTER_WORDS`] words of
/// main text, the core path within [`MAX_CORE_WORDS`] words and [`MAX_CORE_LINES`] Rust lines
/// (English; the Chinese says the same). What is over moves into a deep dive, not out of the book.
pub fn check_reading_cost(root: &Path, diagnostics: &mut Vec<crate::Diagnostic>) {
    let mut ignored = Vec::new();
    let sources = crate::read_sources(root, &mut ignored);
    let Some(english) = sources.languages.first() else { return };
    let (mut words, mut lines) = (0, 0);
    for chapter in &english.chapters {
        let cost = cost(&chapter.text, &sources.anchors, State::of_chapter(&chapter.name));
        let main = cost.prose - cost.optional;
        if main > MAX_CHAPTER_WORDS {
            let message = format!(
                "{main} words of main text, over {MAX_CHAPTER_WORDS}: move a defence or a detail into a deep dive"
            );
            diagnostics.push(crate::Diagnostic::new(&chapter.path, 0, message));
        }
        let number = chapter.name.get(..2).and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
        if CORE_PATH.contains(&number) {
            words += main;
            lines += cost.included_lines - cost.optional_lines;
        }
    }
    if words > MAX_CORE_WORDS || lines > MAX_CORE_LINES {
        let message = format!(
            "the core path (chapters {}-{}) has {words} words and {lines} Rust lines of main text, over {MAX_CORE_WORDS} / {MAX_CORE_LINES}",
            CORE_PATH.start(),
            CORE_PATH.end()
        );
        diagnostics.push(crate::Diagnostic::new("guide/en", 0, message));
    }
}

/// The `--stats` table: chapter, English words (of which in boxes), Chinese characters (of
/// which in boxes), Rust lines included (of which in boxes), other code lines (English side);
/// then the core path's main text (outside boxes) and totals.
pub fn table(rows: &[(String, Cost, Cost)]) -> String {
    let mut out = String::from(
        "chapter                 en words (boxed)   zh chars (boxed)   rust lines (boxed)  other lines\n",
    );
    let (mut total, mut core) = ([0; 7], [0; 7]);
    for (name, english, chinese) in rows {
        let row = [
            english.prose,
            english.optional,
            chinese.prose,
            chinese.optional,
            english.included_lines,
            english.optional_lines,
            english.other_lines,
        ];
        let _ = writeln!(out, "{name:<22} {}", columns(&row));
        let number = name.get(..2).and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
        for (at, value) in row.iter().enumerate() {
            total[at] += value;
            if CORE_PATH.contains(&number) {
                core[at] += value;
            }
        }
    }
    let _ = writeln!(out, "{:<22} {}", "total", columns(&total));
    let _ = writeln!(
        out,
        "core path (chapters {}-{}): {} English words and {} Rust lines of main text (outside boxes)",
        CORE_PATH.start(),
        CORE_PATH.end(),
        core[0] - core[1],
        core[4] - core[5]
    );
    out.push_str(&listing_table(rows));
    out
}

/// The listings table (English side; both languages include the same anchors): per chapter the
/// number of Rust listings, the longest, how many are over [`LONG_LISTING`] lines, and how many
/// are trimmed to the chapter's state (lines dropped); then totals.
fn listing_table(rows: &[(String, Cost, Cost)]) -> String {
    let mut out =
        format!("\nchapter                listings  longest  over {LONG_LISTING}  trimmed (lines)\n");
    let (mut listings, mut longest, mut long, mut trimmed, mut lines) = (0, 0, 0, 0, 0);
    for (name, english, _) in rows {
        let _ = writeln!(
            out,
            "{name:<22} {:>9} {:>8} {:>8} {:>8} {:>7}",
            english.listings,
            english.longest,
            english.long_listings,
            english.trimmed,
            format!("({})", english.trimmed_lines)
        );
        listings += english.listings;
        longest = longest.max(english.longest);
        long += english.long_listings;
        trimmed += english.trimmed;
        lines += english.trimmed_lines;
    }
    let _ = writeln!(
        out,
        "{:<22} {listings:>9} {longest:>8} {long:>8} {trimmed:>8} {:>7}",
        "total",
        format!("({lines})")
    );
    out
}

fn columns(row: &[usize; 7]) -> String {
    format!(
        "{:>9} {:>8} {:>10} {:>8} {:>12} {:>7} {:>12}",
        row[0],
        format!("({})", row[1]),
        row[2],
        format!("({})", row[3]),
        row[4],
        format!("({})", row[5]),
        row[6]
    )
}

/// The `--stats` table (see `guide/stats.rs`): what each chapter costs to read.
pub fn reading_stats(root: &Path) -> String {
    let mut diagnostics = Vec::new();
    let sources = crate::read_sources(root, &mut diagnostics);
    let [english, chinese] = &sources.languages[..] else { return String::new() };
    let rows: Vec<(String, Cost, Cost)> = english
        .chapters
        .iter()
        .map(|chapter| {
            let other = chinese.chapters.iter().find(|other| other.name == chapter.name);
            (
                chapter.name.clone(),
                cost(&chapter.text, &sources.anchors, State::of_chapter(&chapter.name)),
                other
                    .map(|other| cost(&other.text, &sources.anchors, State::of_chapter(&other.name)))
                    .unwrap_or_default(),
            )
        })
        .collect();
    table(&rows)
}
