//! The glossary: one Chinese rendering per English term, and the check that holds the Chinese
//! chapters to it.
//!
//! `guide/glossary.tsv` is the one place a term's translation is decided. One row per term,
//! tab-separated, `#` starts a comment line:
//!
//! ```text
//! kind    english  chinese   refused         definition (en)            definition (zh)
//! term    seam     接缝      接口|缝合点     Where a part plugs in…     ……
//! heading Run it   动手运行  动手试试        The section that runs…     ……
//! ```
//!
//! (columns separated by one tab each, shown here as spaces).
//!
//! `refused` lists the other renderings (separated by `|`, `-` for none) that the Chinese
//! chapters must not use: a `term` anywhere in prose and headings, a `heading` in headings only
//! (so "练习" may appear in a sentence). Code (blocks and backticks) is never checked, and an
//! English word is matched as a whole word, any case. Two uses stay allowed: an occurrence
//! inside some accepted rendering (`系统提示` inside `系统提示词`), and the English term given as
//! a gloss right after the Chinese one, `日志（journal）`. A violation reads
//! `guide/zh/09-journal.md:16: "observer" should be rendered "观察者" (glossary)`.
//!
//! The appendix shows the table with `{{#glossary}}` (a paragraph of its own), so the book's
//! glossary and the check can never disagree.

use crate::Diagnostic;
use crate::chapters::{Chapter, Lines, options};
use crate::highlight::escape_html;
use crate::wrapping::{SCROLL_CLOSE, SCROLL_OPEN};
use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use std::path::Path;

/// Where the glossary lives, relative to the repository root.
pub const PATH: &str = "guide/glossary.tsv";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// Section headings are checked in headings only.
    pub heading: bool,
    pub english: String,
    pub chinese: String,
    pub refused: Vec<String>,
    pub meaning_en: String,
    pub meaning_zh: String,
}

pub type Glossary = Vec<Term>;

/// Reads `guide/glossary.tsv`; a missing file is an empty glossary.
pub fn load(root: &Path, diagnostics: &mut Vec<Diagnostic>) -> Glossary {
    match std::fs::read_to_string(root.join(PATH)) {
        Ok(text) => parse(&text, diagnostics),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Glossary::new(),
        Err(error) => {
            diagnostics.push(Diagnostic::new(PATH, 0, format!("cannot read: {error}")));
            Glossary::new()
        }
    }
}

pub fn parse(text: &str, diagnostics: &mut Vec<Diagnostic>) -> Glossary {
    let mut glossary = Glossary::new();
    for (index, line) in text.lines().enumerate() {
        let mut report = |message: String| diagnostics.push(Diagnostic::new(PATH, index + 1, message));
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        let [kind, english, chinese, refused, meaning_en, meaning_zh] = fields[..] else {
            report(format!(
                "{} fields; a row is kind, english, chinese, refused, definition (en), definition (zh), tab-separated",
                fields.len()
            ));
            continue;
        };
        let heading = match kind {
            "term" => false,
            "heading" => true,
            other => {
                report(format!("kind `{other}`; use `term` or `heading`"));
                continue;
            }
        };
        if english.is_empty() || chinese.is_empty() {
            report("a row needs its English term and its Chinese rendering".into());
            continue;
        }
        if glossary.iter().any(|term: &Term| term.english == english && term.heading == heading) {
            report(format!("`{english}` is already in the glossary"));
        }
        let refused: Vec<String> = refused
            .split('|')
            .map(str::trim)
            .filter(|x| !x.is_empty() && *x != "-")
            .map(String::from)
            .collect();
        if refused.iter().any(|x| x == chinese) {
            report(format!("refuses its own rendering `{chinese}`"));
        }
        glossary.push(Term {
            heading,
            english: english.into(),
            chinese: chinese.into(),
            refused,
            meaning_en: meaning_en.into(),
            meaning_zh: meaning_zh.into(),
        });
    }
    glossary
}

/// An ASCII word (or phrase) is matched as whole words, any case.
fn is_word(text: &str) -> bool {
    text.is_ascii()
}

/// Byte offsets where `needle` occurs in `text`: whole words for ASCII, anywhere for Chinese.
fn occurrences(text: &str, needle: &str) -> Vec<usize> {
    if !is_word(needle) {
        return text.match_indices(needle).map(|(at, _)| at).collect();
    }
    let (lower, needle) = (text.to_ascii_lowercase(), needle.to_ascii_lowercase());
    // Letters, digits and `_` continue a word; so do `.` `-` `/` joining it to more (`journal.rs`).
    let continues = |first: Option<char>, second: Option<char>| match first {
        Some(c) if c.is_ascii_alphanumeric() || c == '_' => true,
        Some('.' | '-' | '/') => second.is_some_and(|c| c.is_ascii_alphanumeric()),
        _ => false,
    };
    lower
        .match_indices(&needle)
        .map(|(at, _)| at)
        .filter(|at| {
            let (mut before, mut after) = (lower[..*at].chars().rev(), lower[at + needle.len()..].chars());
            !continues(before.next(), before.next()) && !continues(after.next(), after.next())
        })
        .collect()
}

/// Whether the refused `found` at `at` is allowed: inside an accepted rendering, or the English
/// term glossed in full-width brackets right after the accepted Chinese one.
/// `before` is the chapter's source up to the occurrence (so `*重放*（replay）` is a gloss too).
fn allowed(text: &str, at: usize, before: &str, found: &str, term: &Term, glossary: &Glossary) -> bool {
    let inside_accepted = glossary.iter().any(|other| {
        other.chinese.contains(found)
            && text
                .match_indices(other.chinese.as_str())
                .any(|(start, matched)| start <= at && at + found.len() <= start + matched.len())
    });
    let gloss = before.ends_with('（')
        && before.trim_end_matches('（').trim_end_matches(['*', '_']).ends_with(&term.chinese)
        && text[at + found.len()..].starts_with('）');
    inside_accepted || gloss
}

/// Reports every refused rendering in a Chinese chapter's prose and headings.
pub fn check_chapter(chapter: &Chapter, glossary: &Glossary, diagnostics: &mut Vec<Diagnostic>) {
    if glossary.is_empty() {
        return;
    }
    let lines = Lines::new(&chapter.text);
    let (mut in_heading, mut in_code) = (false, false);
    for (event, range) in Parser::new_ext(&chapter.text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => in_heading = true,
            Event::End(TagEnd::Heading(_)) => in_heading = false,
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Text(text)
                if !in_code && !is_reference(&text) && crate::diagrams::reference(&text).is_none() =>
            {
                for term in glossary.iter().filter(|term| in_heading || !term.heading) {
                    for refused in &term.refused {
                        for at in occurrences(&text, refused) {
                            let offset = (range.start + at).min(range.end.saturating_sub(1));
                            let before = chapter.text.get(..range.start + at).unwrap_or("");
                            if allowed(&text, at, before, refused, term, glossary) {
                                continue;
                            }
                            diagnostics.push(Diagnostic::new(
                                &chapter.path,
                                lines.of(offset),
                                format!(
                                    "\"{}\" should be rendered \"{}\" (glossary)",
                                    &text[at..at + refused.len()],
                                    term.chinese
                                ),
                            ));
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// `{{#glossary}}` (a paragraph's whole text).
pub fn is_reference(text: &str) -> bool {
    text.trim() == "{{#glossary}}"
}

/// The glossary as the appendix shows it, in one language.
pub fn table(glossary: &Glossary, language: &str) -> String {
    let mut html = format!("{SCROLL_OPEN}<table class=\"glossary\">\n<thead><tr>");
    let columns: &[&str] = if language == "zh" {
        &["中文", "English", "释义", "不写作"]
    } else {
        &["English", "中文", "Meaning"]
    };
    for column in columns {
        html.push_str(&format!("<th>{column}</th>"));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for term in glossary {
        let (english, chinese) = (escape_html(&term.english), escape_html(&term.chinese));
        let cells = if language == "zh" {
            let refused: Vec<String> = term.refused.iter().map(|x| escape_html(x)).collect();
            vec![chinese, english, with_code(&term.meaning_zh), refused.join("、")]
        } else {
            vec![english, chinese, with_code(&term.meaning_en)]
        };
        html.push_str("<tr>");
        for (index, cell) in cells.iter().enumerate() {
            let tag = if index == 0 { "th" } else { "td" };
            html.push_str(&format!("<{tag}>{cell}</{tag}>"));
        }
        html.push_str("</tr>\n");
    }
    html.push_str(&format!("</tbody>\n</table>{SCROLL_CLOSE}\n"));
    html
}

/// A definition as HTML: escaped, with `backticks` shown as code.
fn with_code(text: &str) -> String {
    let mut html = String::new();
    for (index, part) in text.split('`').enumerate() {
        if index % 2 == 1 {
            html.push_str(&format!("<code>{}</code>", escape_html(part)));
        } else {
            html.push_str(&escape_html(part));
        }
    }
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    const TSV: &str = "# kind\tenglish\n\
        term\tobserver\t观察者\tobserver|观测者\tSees every `Event`.\t看到每个事件。\n\
        term\tsystem prompt\t系统提示词\t系统提示\tThe first message.\t第一条消息。\n\
        term\tjournal\t日志\tjournal\tThe file.\t文件。\n\
        heading\tRun it\t动手运行\t动手试试\tRun the state.\t运行本章状态。\n";

    fn violations(text: &str) -> Vec<String> {
        let glossary = parse(TSV, &mut Vec::new());
        let chapter = Chapter {
            name: "01-a.md".into(),
            path: "guide/zh/01-a.md".into(),
            text: text.into(),
            number: None,
        };
        let mut diagnostics = Vec::new();
        check_chapter(&chapter, &glossary, &mut diagnostics);
        diagnostics.iter().map(Diagnostic::to_string).collect()
    }

    #[test]
    fn refused_renderings_are_reported_with_the_place_and_the_right_one() {
        let text =
            "# 标题 {#a}\n\n第一行。\n每个 Observer 都是观测者。\n\n## 动手试试 {#run}\n\n请动手试试。\n";
        assert_eq!(
            violations(text),
            [
                "guide/zh/01-a.md:4: \"Observer\" should be rendered \"观察者\" (glossary)",
                "guide/zh/01-a.md:4: \"观测者\" should be rendered \"观察者\" (glossary)",
                "guide/zh/01-a.md:6: \"动手试试\" should be rendered \"动手运行\" (glossary)",
            ]
        );
    }

    #[test]
    fn code_accepted_renderings_glosses_and_parts_of_words_are_allowed() {
        let text = "# 标题 {#a}\n\n`Observer` 与系统提示词；日志（journal）、*日志*（journal）；observers 与 journal.rs 不算。\n\n```text\nobserver\n```\n";
        assert_eq!(violations(text), [] as [String; 0]);
        assert_eq!(violations("# 标题 {#a}\n\n写进 journal 里。\n").len(), 1);
        assert_eq!(violations("# 标题 {#a}\n\n系统提示太长。\n").len(), 1);
    }

    #[test]
    fn malformed_rows_are_reported_on_their_line() {
        let mut diagnostics = Vec::new();
        parse("term\tseam\t接缝\n\nkind\ta\tb\t-\tc\td\nterm\tseam\t接缝\t接缝\tx\ty\n", &mut diagnostics);
        let lines: Vec<String> = diagnostics.iter().map(Diagnostic::to_string).collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].starts_with("guide/glossary.tsv:1: 3 fields"));
        assert!(lines[1].starts_with("guide/glossary.tsv:3: kind `kind`"));
        assert!(lines[2].starts_with("guide/glossary.tsv:4: refuses its own rendering `接缝`"));
    }

    #[test]
    fn both_tables_list_every_term() {
        let glossary = parse(TSV, &mut Vec::new());
        let english = table(&glossary, "en");
        assert!(
            english
                .contains("<tr><th>observer</th><td>观察者</td><td>Sees every <code>Event</code>.</td></tr>")
        );
        let chinese = table(&glossary, "zh");
        assert!(
            chinese.contains(
                "<tr><th>动手运行</th><td>Run it</td><td>运行本章状态。</td><td>动手试试</td></tr>"
            )
        );
    }
}
