//! The page: one HTML file holding both languages, their tables of contents and search index.
//!
//! Everything the reader needs is inline (style, script, index), so the file works from a
//! disk, a USB stick or an e-mail attachment. Both languages are always present; the script
//! only flips `data-lang` on `<html>` and the stylesheet hides the other one, which is what
//! lets the toggle land on the same heading id. Both languages show the same code, so a
//! chapter is laid out as prose blocks per language around one shared copy of each listing:
//! that halves the biggest part of the file. The output depends only on its inputs, taken in
//! sorted order, so two builds give the same bytes.
//!
//! The page fits the screen: prose keeps a reading measure and listings take a wider column, so
//! a 110-column line (rustfmt's max_width) fits at 1280 px; a longer line, or any line on a
//! phone, wraps with a hanging indent instead of scrolling sideways (`wrapping.rs`); a diagram or
//! table wider than a phone scrolls in a frame that says so. `scripts/browser/guide.js` checks
//! it in headless Chromium, in both languages, at 1280 and 390 px.

use crate::chapters::{Heading, Piece, SearchSection, number_prefix};
use crate::highlight::{escape_attribute, escape_html};
use serde::Serialize;

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");
const HEAD_SCRIPT: &str = include_str!("page-head.js");

/// One language's book, ready to lay out.
pub struct Book<'a> {
    /// "en" or "zh": the prefix of every id in this language.
    pub language: &'a str,
    pub chapters: Vec<ChapterPage<'a>>,
}

pub struct ChapterPage<'a> {
    pub name: &'a str,
    /// Set when this chapter opens a part (from `guide/<lang>/parts.txt`).
    pub part: Option<&'a str>,
    /// The chapter number shown before its title, if it has one.
    pub number: Option<u32>,
    pub headings: &'a [Heading],
    pub pieces: &'a [Piece],
    pub sections: &'a [SearchSection],
}

#[derive(Serialize)]
struct IndexEntry<'a> {
    /// Chapter title with its number, shown under each result.
    c: String,
    id: &'a str,
    t: &'a str,
    x: &'a str,
}

pub fn assemble(books: &[Book]) -> String {
    let mut html = String::new();
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\" data-lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html.push_str("<meta name=\"color-scheme\" content=\"light dark\">\n");
    html.push_str("<title>mini-agent: the guide</title>\n<style>\n");
    html.push_str(STYLE);
    html.push_str("</style>\n<script>\n");
    html.push_str(HEAD_SCRIPT);
    html.push_str("</script>\n</head>\n<body>\n");
    html.push_str(
        "<header class=\"bar\">\n<button id=\"toc-toggle\" type=\"button\" aria-label=\"Contents\">☰</button>\n\
         <a class=\"brand\" href=\"#top\">mini-agent</a>\n\
         <input id=\"search\" type=\"search\" autocomplete=\"off\" spellcheck=\"false\">\n\
         <button id=\"lang-toggle\" type=\"button\">中文</button>\n\
         <button id=\"theme-toggle\" type=\"button\" aria-label=\"Theme\">◐</button>\n</header>\n",
    );
    html.push_str("<nav id=\"toc\">\n");
    for book in books {
        table_of_contents(book, &mut html);
    }
    html.push_str("</nav>\n<div id=\"results\" hidden></div>\n<main id=\"top\">\n<article>\n");
    for name in chapter_names(books) {
        let pages: Vec<(&str, &ChapterPage)> = books
            .iter()
            .filter_map(|book| {
                Some((book.language, book.chapters.iter().find(|chapter| chapter.name == name)?))
            })
            .collect();
        for (language, page) in &pages {
            if let Some(part) = page.part {
                html.push_str(&format!(
                    "<p class=\"part-title\" data-lang=\"{language}\">{}</p>\n",
                    escape_html(part)
                ));
            }
        }
        html.push_str(&format!("<section class=\"chapter\" data-file=\"{}\">\n", escape_attribute(name)));
        chapter_body(&pages, &mut html);
        html.push_str("</section>\n");
    }
    html.push_str("</article>\n");
    html.push_str("</main>\n<script type=\"application/json\" id=\"search-index\">");
    html.push_str(&search_index(books));
    html.push_str("</script>\n<script>\n");
    html.push_str(SCRIPT);
    html.push_str("</script>\n</body>\n</html>\n");
    html
}

/// Chapter file names in book order: those of the first language, then any only in others.
fn chapter_names<'a>(books: &[Book<'a>]) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for book in books {
        for chapter in &book.chapters {
            if !names.contains(&chapter.name) {
                names.push(chapter.name);
            }
        }
    }
    names
}

/// A chapter's prose between its listings: `segments[i]` comes before `codes[i]`.
struct Split<'a> {
    segments: Vec<String>,
    codes: Vec<(&'a str, &'a str)>,
}

fn split(pieces: &[Piece]) -> Split<'_> {
    let mut split = Split { segments: vec![String::new()], codes: Vec::new() };
    for piece in pieces {
        match piece {
            Piece::Prose(html) => split.segments.last_mut().expect("starts with one segment").push_str(html),
            Piece::Code { target, html } => {
                split.codes.push((target, html));
                split.segments.push(String::new());
            }
        }
    }
    split
}

/// Interleaves the languages' prose around one copy of each listing when they show the same
/// listings in the same order (the checker insists on it); otherwise each language stands alone.
fn chapter_body(pages: &[(&str, &ChapterPage)], html: &mut String) {
    let splits: Vec<(&str, Split)> =
        pages.iter().map(|(language, page)| (*language, split(page.pieces))).collect();
    let shared = splits
        .windows(2)
        .all(|pair| pair[0].1.codes.iter().map(|code| code.0).eq(pair[1].1.codes.iter().map(|code| code.0)));
    let prose_block = |language: &str, prose: &str, html: &mut String| {
        if !prose.is_empty() {
            let lang_attribute = if language == "zh" { "zh-CN" } else { language };
            html.push_str(&format!(
                "<div data-lang=\"{language}\" lang=\"{lang_attribute}\">\n{prose}</div>\n"
            ));
        }
    };
    match splits.first() {
        Some((_, first)) if shared => {
            for (index, (_, code)) in first.codes.iter().enumerate() {
                for (language, split) in &splits {
                    prose_block(language, &split.segments[index], html);
                }
                html.push_str(code);
            }
            for (language, split) in &splits {
                prose_block(language, split.segments.last().map_or("", String::as_str), html);
            }
        }
        _ => {
            for (language, split) in &splits {
                let mut prose = String::new();
                for (index, segment) in split.segments.iter().enumerate() {
                    prose.push_str(segment);
                    if let Some((_, code)) = split.codes.get(index) {
                        prose.push_str(code);
                    }
                }
                prose_block(language, &prose, html);
            }
        }
    }
}

fn table_of_contents(book: &Book, html: &mut String) {
    html.push_str(&format!("<div class=\"toc\" data-lang=\"{}\">\n<ol>\n", book.language));
    for chapter in &book.chapters {
        if let Some(part) = chapter.part {
            html.push_str(&format!("<li class=\"part\">{}</li>\n", escape_html(part)));
        }
        let Some((title, rest)) = chapter.headings.split_first() else { continue };
        let prefix = number_prefix(book.language, chapter.number);
        let number =
            if prefix.is_empty() { prefix } else { format!("<span class=\"number\">{prefix}</span>") };
        html.push_str(&format!(
            "<li><a href=\"#{}-{}\">{number}{}</a>",
            book.language,
            title.id,
            escape_html(&title.title)
        ));
        let sections: Vec<&Heading> = rest.iter().filter(|heading| heading.level == 2).collect();
        if !sections.is_empty() {
            html.push_str("\n<ol>\n");
            for heading in sections {
                html.push_str(&format!(
                    "<li><a href=\"#{}-{}\">{}</a></li>\n",
                    book.language,
                    heading.id,
                    escape_html(&heading.title)
                ));
            }
            html.push_str("</ol>\n");
        }
        html.push_str("</li>\n");
    }
    html.push_str("</ol>\n</div>\n");
}

/// `{"en": [{c, id, t, x}…], "zh": […]}`, with `<` escaped so no text can close the script.
fn search_index(books: &[Book]) -> String {
    let mut index = std::collections::BTreeMap::new();
    for book in books {
        let mut entries = Vec::new();
        for chapter in &book.chapters {
            let chapter_title = format!(
                "{}{}",
                number_prefix(book.language, chapter.number),
                chapter.headings.first().map_or("", |heading| heading.title.as_str())
            );
            for section in chapter.sections {
                entries.push(IndexEntry {
                    c: chapter_title.clone(),
                    id: &section.id,
                    t: &section.title,
                    x: &section.text,
                });
            }
        }
        index.insert(book.language, entries);
    }
    serde_json::to_string(&index).expect("strings always serialize").replace('<', "\\u003c")
}

/// Every place in the page that would make the browser fetch or open another site:
/// `href`/`src`/`action`-like attributes and CSS `url(…)`/`@import` not pointing at `#…`
/// or `data:`. Returns (line, url) pairs.
pub fn external_references(html: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in html.lines().enumerate() {
        for key in ["href=\"", "src=\"", "action=\"", "poster=\"", "srcset=\"", "url(", "@import"] {
            for (at, _) in line.match_indices(key) {
                let value = line[at + key.len()..].trim_start_matches(['\'', '"', ' ']);
                let value: String =
                    value.chars().take_while(|c| !matches!(c, '"' | '\'' | ')' | ' ')).collect();
                if !(value.starts_with('#') || value.starts_with("data:")) {
                    found.push((index + 1, format!("{key}{value}")));
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_in_page_and_data_references_are_allowed() {
        let html = "<a href=\"#en-x\">a</a>\n<img src=\"https://x.example/a.png\">\n<style>b{background:url(data:image/png;base64,AA)}</style>\n@import url(//cdn.example/f.css);";
        assert_eq!(
            external_references(html),
            [
                (2, "src=\"https://x.example/a.png".to_string()),
                (4, "url(//cdn.example/f.css".to_string()),
                (4, "@importurl(//cdn.example/f.css".to_string())
            ]
        );
    }
}
