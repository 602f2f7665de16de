//! Chapters: Markdown in, checked HTML fragments out.
//!
//! A chapter is read twice. The first pass, [`outline`], finds its headings (with their
//! explicit ids and the source text of each section) and its includes: enough to compare the
//! two languages and to resolve links between chapters. The second pass, [`render`], walks the
//! pulldown-cmark events again and rewrites what the single-file page needs: heading ids get a
//! language prefix, links become in-page fragments, fenced blocks become listings (a `rust`
//! block becomes the anchored source region it names, see `listings.rs`), and top-level
//! listings are cut out so the page can share them between languages. Every problem becomes a
//! [`Diagnostic`] pointing at the chapter line, so a writer can jump straight to it.

use crate::Diagnostic;
use crate::anchors::AnchorMap;
use crate::diagrams::{self, Diagrams};
use crate::glossary::{self, Glossary};
use crate::listings::{Offsets, code_block_html, fence_language, include_target};
use crate::states::State;
use crate::wrapping::{SCROLL_CLOSE, SCROLL_OPEN, inline_code_html};
use pulldown_cmark::{CodeBlockKind, CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use std::collections::{BTreeMap, BTreeSet};

/// A chapter file as read from disk.
#[derive(Debug)]
pub struct Chapter {
    /// The file name, `NN-slug.md`: the key that pairs the two languages.
    pub name: String,
    /// The path shown in diagnostics, e.g. `guide/zh/01-loop.md`.
    pub path: String,
    pub text: String,
    /// The chapter number the builder shows before the title (from the file name; none for the
    /// preface and the appendix).
    pub number: Option<u32>,
}

/// What goes before a numbered chapter's title: "3 · " / "第 3 章 · ".
pub fn number_prefix(language: &str, number: Option<u32>) -> String {
    match (number, language) {
        (None, _) => String::new(),
        (Some(number), "zh") => format!("第 {number} 章 · "),
        (Some(number), _) => format!("{number} · "),
    }
}

/// A title that numbers itself ("Chapter 3 · Tools", "第 3 章 · 工具") would be numbered twice.
fn has_written_number(title: &str) -> bool {
    let english =
        title.strip_prefix("Chapter ").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    let chinese = title
        .strip_prefix('第')
        .is_some_and(|rest| rest.split_once('章').is_some_and(|(number, _)| number.chars().count() <= 5));
    english || chinese
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heading {
    pub level: u8,
    pub id: String,
    pub title: String,
    pub line: usize,
    /// The section's Markdown source: this heading up to the next one, trailing blanks trimmed.
    pub section: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Include {
    /// `src/ch02_loop.rs:run_turn`, as written.
    pub target: String,
    pub line: usize,
}

#[derive(Debug, Default)]
pub struct Outline {
    pub headings: Vec<Heading>,
    pub includes: Vec<Include>,
    /// `{{#diagram NAME}}` references, in order (the target is the name).
    pub diagrams: Vec<Include>,
}

/// The searchable text of one section of a rendered chapter.
#[derive(Debug)]
pub struct SearchSection {
    pub id: String,
    pub title: String,
    pub text: String,
}

/// A rendered chapter is prose with code between: top-level includes are kept apart so the
/// page can show one copy of the code to both languages.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
    Prose(String),
    /// A top-level include: its `file:anchor` and its captioned HTML.
    Code {
        target: String,
        html: String,
    },
}

#[derive(Debug)]
pub struct Rendered {
    pub pieces: Vec<Piece>,
    pub sections: Vec<SearchSection>,
    /// Every `file:anchor` this chapter included (resolved or not).
    pub included: BTreeSet<String>,
    /// Every diagram this chapter showed (found or not).
    pub diagrams: BTreeSet<String>,
}

/// What links may point at in one language: chapter file name → its heading ids, in order.
pub type LinkTargets = BTreeMap<String, Vec<String>>;

pub fn options() -> Options {
    Options::ENABLE_HEADING_ATTRIBUTES | Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH
}

/// Byte offset → 1-based line number.
pub struct Lines(Vec<usize>);

impl Lines {
    pub fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(at, _)| at + 1));
        Lines(starts)
    }

    pub fn of(&self, offset: usize) -> usize {
        self.0.partition_point(|start| *start <= offset)
    }
}

fn level_number(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

fn is_valid_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// First pass: headings with their sections, and includes. Reports heading problems.
pub fn outline(chapter: &Chapter, diagnostics: &mut Vec<Diagnostic>) -> Outline {
    let lines = Lines::new(&chapter.text);
    let mut outline = Outline::default();
    let mut starts = Vec::new();
    let mut current: Option<(u8, Option<String>, usize, String)> = None;
    let mut code_block: Option<(String, usize)> = None;
    for (event, range) in Parser::new_ext(&chapter.text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, id, .. }) => {
                current =
                    Some((level_number(level), id.map(|id| id.to_string()), range.start, String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                let Some((level, id, start, title)) = current.take() else { continue };
                let line = lines.of(start);
                let Some(id) = id else {
                    let message = format!(
                        "heading \"{title}\" has no id; write it as `{} {title} {{#some-id}}`",
                        "#".repeat(level.into())
                    );
                    diagnostics.push(Diagnostic::new(&chapter.path, line, message));
                    continue;
                };
                if !is_valid_id(&id) {
                    diagnostics.push(Diagnostic::new(
                        &chapter.path,
                        line,
                        format!("heading id `{id}` must use only a-z, 0-9 and `-`"),
                    ));
                }
                if let Some(first) = outline.headings.iter().find(|heading| heading.id == id) {
                    diagnostics.push(Diagnostic::new(
                        &chapter.path,
                        line,
                        format!("heading id `{id}` is already used at line {}", first.line),
                    ));
                }
                let is_first = outline.headings.is_empty();
                if is_first != (level == 1) {
                    let message = if is_first {
                        "a chapter must start with its one `#` title heading"
                    } else {
                        "only the chapter's first heading may be a `#` title"
                    };
                    diagnostics.push(Diagnostic::new(&chapter.path, line, message.to_string()));
                }
                if level == 1 && has_written_number(title.trim()) {
                    let message = format!(
                        "title \"{}\" numbers itself; the builder numbers chapters from the file name, so drop the \"Chapter N · \" / \"第 N 章 · \" part",
                        title.trim()
                    );
                    diagnostics.push(Diagnostic::new(&chapter.path, line, message));
                }
                starts.push(line_start(&chapter.text, start));
                outline.headings.push(Heading {
                    level,
                    id,
                    title: title.trim().to_string(),
                    line,
                    section: String::new(),
                });
            }
            Event::Text(text) | Event::Code(text) if current.is_some() => {
                if let Some((_, _, _, title)) = current.as_mut() {
                    title.push_str(&text);
                }
            }
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                code_block = Some((info.to_string(), range.start));
            }
            Event::Text(text) => {
                if let Some((info, start)) = &code_block
                    && fence_language(info) == "rust"
                    && let Some(target) = include_target(&text)
                {
                    outline.includes.push(Include { target: target.to_string(), line: lines.of(*start) + 1 });
                } else if code_block.is_none()
                    && let Some(name) = diagrams::reference(&text)
                {
                    outline.diagrams.push(Include { target: name.to_string(), line: lines.of(range.start) });
                }
            }
            Event::End(TagEnd::CodeBlock) => code_block = None,
            _ => {}
        }
    }
    if let Some(first) = starts.first() {
        let before = &chapter.text[..*first];
        if !before.trim().is_empty() {
            diagnostics.push(Diagnostic::new(
                &chapter.path,
                1,
                "text before the chapter's `#` title heading".to_string(),
            ));
        }
    } else {
        diagnostics.push(Diagnostic::new(
            &chapter.path,
            1,
            "chapter has no heading; start it with `# Title {#id}`".to_string(),
        ));
    }
    for (index, heading) in outline.headings.iter_mut().enumerate() {
        let end = starts.get(index + 1).copied().unwrap_or(chapter.text.len());
        heading.section = normalize_section(&chapter.text[starts[index]..end]);
    }
    outline
}

fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind('\n').map_or(0, |at| at + 1)
}

/// Trailing spaces and blank lines do not change what a section says, so they do not count.
fn normalize_section(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let end = lines.iter().rposition(|line| !line.is_empty()).map_or(0, |at| at + 1);
    lines[..end].join("\n")
}

/// Inline HTML a chapter may use; anything else is almost always a `<Type>` that lost its
/// backticks, and would silently vanish from the page.
const ALLOWED_TAGS: &[&str] = &["<kbd>", "</kbd>", "<br>", "<sub>", "</sub>", "<sup>", "</sup>"];

/// The first external URL in `text`: `scheme://host…` or a protocol-relative `//host…`.
/// A `//` followed by a space (a comment mentioned in prose) is not a URL.
fn external_url(text: &str) -> Option<&str> {
    for (at, _) in text.match_indices("//") {
        if !text[at + 2..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
            continue;
        }
        let scheme_start = text[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == ':' || c == '+' || c == '.' || c == '-'))
            .map_or(0, |p| p + 1);
        let rest = &text[scheme_start..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '"' | '\'' | '>' | '<'))
            .unwrap_or(rest.len());
        return Some(&rest[..end]);
    }
    None
}

/// Context for rendering one chapter in one language.
pub struct RenderContext<'a> {
    pub language: &'a str,
    pub anchors: &'a AnchorMap,
    pub targets: &'a LinkTargets,
    pub diagrams: &'a Diagrams,
    pub glossary: &'a Glossary,
}

/// Second pass: the chapter's HTML fragment and search text, with its problems reported.
pub fn render(chapter: &Chapter, context: &RenderContext, diagnostics: &mut Vec<Diagnostic>) -> Rendered {
    let lines = Lines::new(&chapter.text);
    let mut report = |offset: usize, message: String| {
        diagnostics.push(Diagnostic::new(&chapter.path, lines.of(offset), message))
    };
    let own_ids = context.targets.get(&chapter.name).cloned().unwrap_or_default();
    let state = State::of_chapter(&chapter.name);
    let mut events: Vec<Event> = Vec::new();
    let mut sections: Vec<SearchSection> = Vec::new();
    let mut included = BTreeSet::new();
    let mut shown_diagrams = BTreeSet::new();
    let mut code_block: Option<(String, usize, String)> = None;
    let mut in_heading = false;
    let mut image_depth = 0;
    let mut parser = Parser::new_ext(&chapter.text, options()).into_offset_iter().peekable();
    let mut last_char = ' ';
    let mut pieces = Vec::new();
    // How many blocks (list, quote, table…) enclose the current event: only an include at depth 0
    // can be cut out of the prose without breaking the HTML around it.
    let mut depth = 0usize;
    while let Some((event, range)) = parser.next() {
        if let Some((_, _, body)) = code_block.as_mut() {
            match event {
                Event::Text(text) => body.push_str(&text),
                Event::End(TagEnd::CodeBlock) => {
                    let (info, start, body) = code_block.take().expect("inside a code block");
                    // Include problems point at the include line, the one after the fence.
                    let body_start = start + chapter.text[start..].find('\n').map_or(0, |at| at + 1);
                    let at = Offsets { fence: start, body: body_start };
                    let html = code_block_html(&info, &body, at, context, state, &mut included, &mut report);
                    match include_target(&body).filter(|_| depth == 0 && fence_language(&info) == "rust") {
                        Some(target) => {
                            pieces.push(Piece::Prose(to_html(std::mem::take(&mut events))));
                            pieces.push(Piece::Code { target: target.to_string(), html });
                        }
                        None => events.push(Event::Html(html.into())),
                    }
                }
                _ => {}
            }
            continue;
        }
        // `{{#diagram NAME}}` or `{{#glossary}}`, a paragraph of its own, becomes a figure/table.
        if let Event::Start(Tag::Paragraph) = &event
            && let Some((Event::Text(text), _)) = parser.peek()
            && let Some(html) = directive_html(text, context, &mut shown_diagrams, range.start, &mut report)
        {
            parser.next();
            match parser.peek() {
                Some((Event::End(TagEnd::Paragraph), _)) => {
                    parser.next();
                }
                _ => report(range.start, "a diagram or glossary line must be a paragraph of its own".into()),
            }
            events.push(Event::Html(html.into()));
            continue;
        }
        match &event {
            Event::Start(Tag::CodeBlock(_)) => {}
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
        match event {
            Event::Start(Tag::Heading { level, id, classes, attrs }) => {
                in_heading = true;
                let id = id.map(|id| id.to_string()).unwrap_or_default();
                sections.push(SearchSection { id: id.clone(), title: String::new(), text: String::new() });
                let prefixed = CowStr::from(format!("{}-{id}", context.language));
                events.push(Event::Start(Tag::Heading { level, id: Some(prefixed), classes, attrs }));
                let prefix = number_prefix(context.language, chapter.number);
                if level == HeadingLevel::H1 && !prefix.is_empty() {
                    let span = format!("<span class=\"number\">{prefix}</span>");
                    events.push(Event::InlineHtml(span.into()));
                }
            }
            Event::End(TagEnd::Heading(level)) => {
                in_heading = false;
                events.push(Event::End(TagEnd::Heading(level)));
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => {
                        report(range.start, "indented code block; use a fenced block that names its language (```sh, ```toml, ```json, ```text)".into());
                        "text".into()
                    }
                };
                code_block = Some((info, range.start, String::new()));
            }
            Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
                let href =
                    resolve_link(&dest_url, &chapter.name, &own_ids, context).unwrap_or_else(|message| {
                        report(range.start, message);
                        "#".into()
                    });
                events.push(Event::Start(Tag::Link { link_type, dest_url: href.into(), title, id }));
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                image_depth += 1;
                let message = match external_url(&dest_url) {
                    Some(url) => format!(
                        "external image URL {url}: the guide is one offline file; describe it in text instead"
                    ),
                    None => format!(
                        "image {dest_url}: images are not supported in the one-file guide; describe it in text instead"
                    ),
                };
                report(range.start, message);
            }
            Event::End(TagEnd::Image) => image_depth -= 1,
            Event::Html(html) | Event::InlineHtml(html) => {
                let tag = html.trim();
                if let Some(url) = external_url(tag) {
                    report(range.start, format!("external URL {url} in HTML; the guide must work offline"));
                } else if !(tag.starts_with("<!--") || ALLOWED_TAGS.contains(&tag)) {
                    report(
                        range.start,
                        format!(
                            "raw HTML `{tag}`; put code in backticks (allowed tags: {})",
                            ALLOWED_TAGS.join(" ")
                        ),
                    );
                }
                events.push(Event::InlineHtml(html));
            }
            Event::Text(text) => {
                if let Some(url) = external_url(&text) {
                    report(
                        range.start,
                        format!(
                            "external URL {url}; the guide must work offline (name the site in words or put a command in backticks)"
                        ),
                    );
                }
                // pulldown-cmark may hand an unmatched `**` over one `*` at a time.
                if (text.contains("**") || (last_char == '*' && text.starts_with('*'))) && image_depth == 0 {
                    report(
                        range.start,
                        "`**` shown as text, not bold: CommonMark does not end emphasis between punctuation and a letter (`**…。**文`); put the punctuation after the closing `**`, or a literal `**` in backticks".into(),
                    );
                }
                if text.contains("{{#include") {
                    report(range.start, "an include must be the only line of a ```rust block".into());
                }
                if text.contains("{{#diagram") || text.contains("{{#glossary") {
                    report(range.start, "a diagram or glossary line must be a paragraph of its own".into());
                }
                add_search_text(&mut sections, in_heading, &text);
                last_char = text.chars().last().unwrap_or(last_char);
                if image_depth == 0 {
                    events.push(Event::Text(text));
                }
            }
            Event::Code(text) => {
                add_search_text(&mut sections, in_heading, &text);
                events.push(Event::InlineHtml(inline_code_html(&text, last_char).into()));
            }
            Event::SoftBreak => {
                // A line break inside Chinese text is not a space: browsers would show one.
                let next_is_cjk =
                    matches!(parser.peek(), Some((Event::Text(next), _)) if next.starts_with(is_cjk));
                if !(is_cjk(last_char) && next_is_cjk) {
                    add_search_text(&mut sections, in_heading, " ");
                    events.push(event);
                }
            }
            Event::HardBreak => {
                add_search_text(&mut sections, in_heading, " ");
                events.push(event);
            }
            Event::End(TagEnd::Paragraph | TagEnd::Item | TagEnd::TableCell | TagEnd::BlockQuote(_)) => {
                add_search_text(&mut sections, in_heading, " ");
                events.push(event);
            }
            // A table may be wider than a phone: it scrolls in a frame that says so.
            Event::Start(Tag::Table(_)) => events.extend([Event::Html(SCROLL_OPEN.into()), event]),
            Event::End(TagEnd::Table) => events.extend([event, Event::Html(SCROLL_CLOSE.into())]),
            Event::Start(_)
            | Event::End(_)
            | Event::Rule
            | Event::TaskListMarker(_)
            | Event::FootnoteReference(_) => {
                if image_depth == 0 {
                    events.push(event);
                }
            }
            Event::InlineMath(_) | Event::DisplayMath(_) => events.push(event),
        }
    }
    pieces.push(Piece::Prose(to_html(events)));
    pieces.retain(|piece| *piece != Piece::Prose(String::new()));
    for section in &mut sections {
        section.title = section.title.trim().to_string();
        section.text = section.text.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    Rendered { pieces, sections, included, diagrams: shown_diagrams }
}

/// The HTML for a directive paragraph, or `None` when the text is not one.
fn directive_html(
    text: &str,
    context: &RenderContext,
    shown: &mut BTreeSet<String>,
    at: usize,
    report: &mut impl FnMut(usize, String),
) -> Option<String> {
    if glossary::is_reference(text) {
        return Some(glossary::table(context.glossary, context.language));
    }
    let name = diagrams::reference(text)?;
    shown.insert(name.to_string());
    let key = (name.to_string(), context.language.to_string());
    Some(match context.diagrams.get(&key) {
        Some(diagram) => diagrams::figure(name, diagram),
        None => {
            report(at, format!("no diagram {}/{name}.{}.svg", diagrams::DIR, context.language));
            String::new()
        }
    })
}

fn to_html(events: Vec<Event>) -> String {
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, crate::boxes::mark(events).into_iter());
    html
}

/// Han characters, kana, CJK and full-width punctuation: text written without spaces.
fn is_cjk(character: char) -> bool {
    matches!(character, '\u{3000}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}' | '\u{ff00}'..='\u{ffef}')
}

fn add_search_text(sections: &mut [SearchSection], in_heading: bool, text: &str) {
    if let Some(section) = sections.last_mut() {
        if in_heading {
            section.title.push_str(text);
        } else {
            section.text.push_str(text);
        }
    }
}

/// `#id`, `NN-slug.md` or `NN-slug.md#id` → an in-page fragment of this language.
fn resolve_link(
    dest: &str,
    chapter: &str,
    own_ids: &[String],
    context: &RenderContext,
) -> Result<String, String> {
    if let Some(url) = external_url(dest) {
        return Err(format!(
            "external link {url}; the guide must work offline (name the site in words instead)"
        ));
    }
    if dest.contains(':') {
        return Err(format!("link `{dest}`: only `#id` and `NN-slug.md#id` links are allowed"));
    }
    let (file, id) = dest.split_once('#').unwrap_or((dest, ""));
    let file = file.strip_prefix("./").unwrap_or(file);
    let (target_name, ids) = if file.is_empty() {
        (chapter, own_ids)
    } else {
        match context.targets.get(file) {
            Some(ids) => (file, ids.as_slice()),
            None => return Err(format!("link `{dest}`: no chapter `{file}` in this language")),
        }
    };
    if id.is_empty() {
        return match ids.first() {
            Some(first) => Ok(format!("#{}-{first}", context.language)),
            None => Err(format!("link `{dest}`: chapter `{target_name}` has no heading to link to")),
        };
    }
    if ids.iter().any(|known| known == id) {
        return Ok(format!("#{}-{id}", context.language));
    }
    let elsewhere = context.targets.iter().find(|(_, ids)| ids.iter().any(|known| known == id));
    match elsewhere {
        Some((other, _)) => Err(format!(
            "link `{dest}`: no heading `{{#{id}}}` in {target_name}; it is in {other}: write `{other}#{id}`"
        )),
        None => Err(format!("link `{dest}`: no heading `{{#{id}}}` in {target_name}")),
    }
}

#[cfg(test)]
#[path = "chapters_tests.rs"]
mod tests;
