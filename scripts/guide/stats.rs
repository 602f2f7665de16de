//! Reading cost: how much a reader has to get through, per chapter, so a rewrite can say
//! whether it made the book shorter. `build-guide --stats` prints, for every chapter: English
//! words of prose, Chinese characters of prose (Han characters, plus each Latin word as one),
//! and lines of code shown: Rust included from `src/` (as shown) and other fenced blocks
//! (commands, output; the English side, which both languages share). Prose is everything outside code blocks, headings
//! included, inline code counted as words.

use crate::anchors::AnchorMap;
use crate::chapters::options;
use crate::listings::{fence_language, include_target};
use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use std::fmt::Write;
use std::path::Path;

/// What one chapter file costs to read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    /// English words, or for Chinese: Han characters plus Latin words.
    pub prose: usize,
    /// Lines of Rust included from `src/`, as shown.
    pub included_lines: usize,
    /// Lines of other fenced blocks (commands, output, JSON, TOML).
    pub other_lines: usize,
}

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

pub fn cost(markdown: &str, anchors: &AnchorMap) -> Cost {
    let mut cost = Cost::default();
    let mut prose = String::new();
    let mut block: Option<(String, String)> = None;
    for event in Parser::new_ext(markdown, options()) {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    pulldown_cmark::CodeBlockKind::Fenced(info) => info.to_string(),
                    pulldown_cmark::CodeBlockKind::Indented => String::new(),
                };
                block = Some((info, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                let Some((info, body)) = block.take() else { continue };
                match include_target(&body).filter(|_| fence_language(&info) == "rust") {
                    Some(target) => {
                        cost.included_lines += region(target, anchors).map_or(0, |code| code.lines().count());
                    }
                    None => cost.other_lines += body.lines().count(),
                }
            }
            Event::Text(text) | Event::Code(text) => match block.as_mut() {
                Some((_, body)) => body.push_str(&text),
                None => {
                    prose.push_str(&text);
                    prose.push(' ');
                }
            },
            Event::SoftBreak | Event::HardBreak => prose.push(' '),
            _ => {}
        }
    }
    cost.prose = prose_units(&prose);
    cost
}

fn region<'a>(target: &str, anchors: &'a AnchorMap) -> Option<&'a str> {
    let (file, anchor) = target.rsplit_once(':')?;
    anchors.get(file)?.get(anchor).map(|region| region.code.as_str())
}

/// The `--stats` table: chapter, English words, Chinese characters, Rust lines included,
/// other code lines (English side); then totals.
pub fn table(rows: &[(String, Cost, Cost)]) -> String {
    let mut out = String::from("chapter                 en words   zh chars   rust lines  other lines\n");
    let mut total = (0, 0, 0, 0);
    for (name, english, chinese) in rows {
        let _ = writeln!(
            out,
            "{name:<22} {:>9} {:>10} {:>12} {:>12}",
            english.prose, chinese.prose, english.included_lines, english.other_lines
        );
        total.0 += english.prose;
        total.1 += chinese.prose;
        total.2 += english.included_lines;
        total.3 += english.other_lines;
    }
    let _ = writeln!(out, "{:<22} {:>9} {:>10} {:>12} {:>12}", "total", total.0, total.1, total.2, total.3);
    out
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
                cost(&chapter.text, &sources.anchors),
                other.map(|other| cost(&other.text, &sources.anchors)).unwrap_or_default(),
            )
        })
        .collect();
    table(&rows)
}
