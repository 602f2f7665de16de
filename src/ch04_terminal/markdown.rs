//! Chapter 4 — Markdown for the terminal.
//!
//! Models answer in Markdown. A terminal shows it best laid out (headings, lists, quotes,
//! tables, code) and styled with ANSI codes, but a pipe wants exactly what the model wrote. So
//! the renderer takes a [`Look`]: `Raw` for pipes, `Plain` for a terminal without colour
//! (`NO_COLOR`, `TERM=dumb`): laid out, no escape codes, `Color` for the rest. Every piece of
//! text the model wrote goes through chapter 4's sanitiser before any style is added, so the
//! only escape codes on the screen are the renderer's own.
//!
//! Text is word-wrapped at the terminal's width, read at each render (one `ioctl`), so a
//! resized window gets answers that fit it. Chinese and Japanese, written without spaces, wrap
//! between characters, never before closing punctuation nor after opening punctuation. A streamed reply is rendered a complete line at a
//! time by [`StreamRenderer`](super::streamed_markdown::StreamRenderer), which keeps the little state that spans lines: an open code
//! fence and the rows of a table.

use super::sanitize::sanitize;
use unicode_width::UnicodeWidthStr;

/// How answers are shown: exactly as written (a pipe), laid out without escape codes (a
/// terminal with `NO_COLOR` or `TERM=dumb`), or laid out and styled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    Raw,
    Plain,
    Color,
}

/// The width of the terminal on stdout (or stderr), read now; `COLUMNS`, else 80.
pub(crate) fn terminal_width() -> usize {
    for fd in [1, 2] {
        // SAFETY: TIOCGWINSZ fills one winsize, which we own; a non-terminal fd fails cleanly.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        if unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) } == 0 && size.ws_col > 0 {
            return size.ws_col as usize;
        }
    }
    std::env::var("COLUMNS").ok().and_then(|columns| columns.parse().ok()).filter(|&c| c > 0).unwrap_or(80)
}

/// Narrower than this, wrapping would leave a word a line; wider, lines are hard to read.
pub(super) const MIN_WIDTH: usize = 20;

// ANCHOR: render_markdown
/// Markdown for the terminal at its current width: see [`render_markdown_at`].
pub fn render_markdown(text: &str, look: Look) -> String {
    render_markdown_at(text, look, terminal_width())
}
// ANCHOR_END: render_markdown

// ANCHOR: render_markdown_at
/// Laid out for `width` columns, styled with ANSI codes for `Color`, without them for
/// `Plain`, and unchanged for `Raw` (a pipe gets exactly what the model wrote).
pub(crate) fn render_markdown_at(text: &str, look: Look, width: usize) -> String {
    if look == Look::Raw {
        let mut raw = text.trim_end().to_string();
        raw.push('\n');
        return raw;
    }
    use pulldown_cmark::{Event as Md, Options, Parser, Tag, TagEnd};
    // Sanitised before parsing: a `\r` is then text, not a line break, and no control
    // character from the model is left for the styles to be mixed with.
    let text = &sanitize(text);
    let color = look == Look::Color;
    let mut out = Renderer { color, width: width.max(MIN_WIDTH), ..Renderer::default() };
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS | Options::ENABLE_TABLES;
    for event in Parser::new_ext(text, options) {
        match event {
            Md::Start(Tag::Paragraph) => out.block(),
            Md::Start(Tag::Heading { level, .. }) => {
                out.block();
                out.push_style(BOLD);
                if !color {
                    out.write(&format!("{} ", "#".repeat(level as usize)));
                }
            }
            Md::Start(Tag::BlockQuote(_)) => {
                out.block();
                out.quote += 1;
            }
            Md::Start(Tag::CodeBlock(_)) => {
                out.block();
                out.indents.push(2);
                out.push_style(CODE);
                out.preformatted = true;
            }
            Md::Start(Tag::List(start)) => {
                if out.lists.is_empty() {
                    out.block();
                }
                out.lists.push(start);
            }
            Md::Start(Tag::Item) => out.item(),
            Md::Start(Tag::Emphasis) => out.push_style(ITALIC),
            Md::Start(Tag::Strong) => out.push_style(BOLD),
            Md::Start(Tag::Strikethrough) => out.push_style(STRIKE),
            Md::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                out.links.push((dest_url.to_string(), out.text.len()));
                out.push_style(LINK);
            }
            Md::Start(Tag::Table(alignments)) => {
                out.block();
                out.table = Some(Table { alignments, ..Table::default() });
            }
            Md::Start(Tag::TableHead | Tag::TableRow) => out.table_row(),
            Md::Start(_) => {}
            Md::End(TagEnd::Paragraph | TagEnd::HtmlBlock) => out.end_line(),
            Md::End(TagEnd::Heading(_)) => {
                out.pop_style();
                out.end_line();
            }
            Md::End(TagEnd::BlockQuote(_)) => out.quote = out.quote.saturating_sub(1),
            Md::End(TagEnd::CodeBlock) => {
                out.pop_style();
                out.indents.pop();
                out.preformatted = false;
                out.end_line();
            }
            Md::End(TagEnd::List(_)) => {
                out.lists.pop();
            }
            Md::End(TagEnd::Item) => {
                out.indents.pop();
                out.end_line();
            }
            Md::End(TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough) => out.pop_style(),
            Md::End(TagEnd::Link | TagEnd::Image) => {
                out.pop_style();
                if let Some((url, start)) = out.links.pop()
                    && !out.text[start..].contains(url.as_str())
                {
                    out.write(&format!(" ({url})"));
                }
            }
            Md::End(TagEnd::TableCell) => out.table_cell(),
            Md::End(TagEnd::TableHead) => {
                if let Some(table) = &mut out.table {
                    table.head = true;
                }
            }
            Md::End(TagEnd::Table) => out.finish_table(),
            Md::End(_) => {}
            Md::Text(text) | Md::Html(text) | Md::InlineHtml(text) => out.write(&text),
            Md::Code(code) if color => {
                out.push_style(CODE);
                out.write(&code);
                out.pop_style();
            }
            Md::Code(code) => out.write(&format!("`{code}`")),
            Md::SoftBreak | Md::HardBreak => out.newline(),
            Md::Rule => {
                out.block();
                out.write("────────────────────────");
                out.end_line();
            }
            Md::TaskListMarker(done) => out.write(if done { "[x] " } else { "[ ] " }),
            Md::InlineMath(text) | Md::DisplayMath(text) | Md::FootnoteReference(text) => out.write(&text),
        }
    }
    let mut rendered = out.text.trim_end().to_string();
    if !out.applied.is_empty() {
        rendered.push_str(RESET);
    }
    rendered.push('\n');
    rendered
}
// ANCHOR_END: render_markdown_at

pub(super) const RESET: &str = "\x1b[0m";
pub(super) const BOLD: &str = "\x1b[1m";
pub(super) const ITALIC: &str = "\x1b[3m";
pub(super) const STRIKE: &str = "\x1b[9m";
pub(super) const CODE: &str = "\x1b[36m";
pub(super) const LINK: &str = "\x1b[4;34m";

// ANCHOR: renderer
/// Keeps the state Markdown needs across events: open styles (ANSI has no "undo one
/// style", so closing one resets and re-applies the rest), list nesting, the line prefix,
/// and the column, for wrapping.
#[derive(Default)]
pub(super) struct Renderer {
    text: String,
    color: bool,
    width: usize,
    column: usize,
    prefix_width: usize,
    preformatted: bool,
    styles: Vec<&'static str>,
    lists: Vec<Option<u64>>,
    indents: Vec<usize>,
    quote: usize,
    links: Vec<(String, usize)>,
    marker: Option<String>,
    table: Option<Table>,
    mid_line: bool,
    applied: String,
}
// ANCHOR_END: renderer

// ANCHOR: styles
impl Renderer {
    fn push_style(&mut self, style: &'static str) {
        self.styles.push(style);
    }

    fn pop_style(&mut self) {
        self.styles.pop();
    }

    /// Styles are applied lazily, just before text (and closed before each newline), so no
    /// escape code sits between two newlines and blank lines stay recognisable.
    fn apply_styles(&mut self) {
        let wanted = if self.color { self.styles.concat() } else { String::new() };
        if wanted == self.applied {
            return;
        }
        match wanted.strip_prefix(self.applied.as_str()) {
            Some(added) => self.text.push_str(added),
            None => {
                self.text.push_str(RESET);
                self.text.push_str(&wanted);
            }
        }
        self.applied = wanted;
    }

    // ANCHOR_END: styles
    /// A new block starts after a blank line, except as the first thing in a list item.
    fn block(&mut self) {
        if self.marker.is_some() || self.text.is_empty() {
            return;
        }
        self.end_line();
        if !self.text.ends_with("\n\n") {
            self.text.push('\n');
        }
    }

    fn item(&mut self) {
        self.end_line();
        let depth = self.lists.len().saturating_sub(1);
        let marker = match self.lists.last_mut() {
            Some(Some(number)) => {
                *number += 1;
                format!("{}. ", *number - 1)
            }
            _ => "• ".to_string(),
        };
        self.marker = Some(format!("{}{marker}", "  ".repeat(depth)));
        self.indents.push(marker.chars().count());
    }

    fn end_line(&mut self) {
        if self.mid_line {
            self.newline();
        }
    }

    fn newline(&mut self) {
        // Styles end with the line, so prefixes and blank lines are never styled.
        if !self.applied.is_empty() {
            self.text.push_str(RESET);
            self.applied.clear();
        }
        self.text.push('\n');
        self.mid_line = false;
        self.column = 0;
    }

    /// The quote bars and the indentation (or the list marker) that open a line.
    fn start_line(&mut self) {
        if self.mid_line {
            return;
        }
        let mut prefix = "│ ".repeat(self.quote);
        match self.marker.take() {
            Some(marker) => prefix.push_str(&marker),
            None => {
                let depth = self.lists.len().saturating_sub(1) * 2;
                prefix.push_str(&" ".repeat(self.indents.iter().sum::<usize>() + depth));
            }
        }
        self.column = prefix.width();
        self.prefix_width = self.column;
        self.text.push_str(&prefix);
        self.mid_line = true;
    }

    fn push(&mut self, text: &str) {
        self.apply_styles();
        self.text.push_str(text);
        self.column += text.width();
    }

    /// Writes text, word-wrapped at the width: a word that would cross the edge starts the
    /// next line (with the same prefix); a word is never broken, except where a line may
    /// break without a space (between wide characters, see [`line_units`]). Code is not wrapped.
    fn write(&mut self, text: &str) {
        if let Some(table) = &mut self.table {
            table.cell.push_str(text);
            return;
        }
        for (index, piece) in text.split('\n').enumerate() {
            if index > 0 {
                self.newline();
            }
            if piece.is_empty() {
                continue;
            }
            if self.preformatted {
                self.start_line();
                self.push(piece);
                continue;
            }
            for (position, word) in piece.split(' ').enumerate() {
                for (index, unit) in line_units(word).into_iter().enumerate() {
                    // The space before a word goes before its first unit only.
                    let mut space = position > 0 && index == 0;
                    let width = unit.width();
                    if self.mid_line
                        && width > 0
                        && self.column > self.prefix_width
                        && self.column + usize::from(space) + width > self.width
                    {
                        self.newline();
                        space = false;
                    }
                    if width == 0 && !space {
                        continue;
                    }
                    self.start_line();
                    if space && self.column > self.prefix_width {
                        self.push(" ");
                    }
                    self.push(unit);
                }
            }
        }
    }

    fn table_row(&mut self) {
        if let Some(table) = &mut self.table {
            table.rows.push(Vec::new());
        }
    }

    fn table_cell(&mut self) {
        if let Some(table) = &mut self.table {
            let cell = std::mem::take(&mut table.cell);
            if let Some(row) = table.rows.last_mut() {
                row.push(cell.trim().to_string());
            }
        }
    }

    /// Lays the table out in columns as wide as their widest cell, the head in bold (or
    /// underlined with a rule).
    fn finish_table(&mut self) {
        let Some(table) = self.table.take() else { return };
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                table.rows.iter().filter_map(|row| row.get(c)).map(|cell| cell.width()).max().unwrap_or(0)
            })
            .collect();
        for (index, row) in table.rows.iter().enumerate() {
            let cells: Vec<String> = (0..columns)
                .map(|c| {
                    let cell = row.get(c).map_or("", String::as_str);
                    let pad = widths[c].saturating_sub(cell.width());
                    match table.alignments.get(c) {
                        Some(pulldown_cmark::Alignment::Right) => format!("{}{cell}", " ".repeat(pad)),
                        Some(pulldown_cmark::Alignment::Center) => {
                            format!("{}{cell}{}", " ".repeat(pad / 2), " ".repeat(pad - pad / 2))
                        }
                        _ => format!("{cell}{}", " ".repeat(pad)),
                    }
                })
                .collect();
            let head = index == 0 && table.head;
            if head {
                self.push_style(BOLD);
            }
            self.start_line();
            self.push(cells.join(" │ ").trim_end());
            if head {
                self.pop_style();
            }
            self.newline();
            if head {
                let rule: Vec<String> = widths.iter().map(|&w| "─".repeat(w)).collect();
                self.start_line();
                self.push(&rule.join("─┼─"));
                self.newline();
            }
        }
    }
}

// ANCHOR: line_units
/// Closing punctuation a line never starts with, and opening punctuation it never ends with
/// (a small set of the kinsoku rules of Chinese and Japanese typesetting).
const NO_BREAK_BEFORE: &str =
    "，。、．：；！？）」』】》〉〕］｝〗”’…ー々・ぁぃぅぇぉっゃゅょァィゥェォッャュョ,.;:!?)]}%";
const NO_BREAK_AFTER: &str = "（「『【《〈〔［｛〖“‘([{";

/// A word cut where a line may break inside it: Chinese, Japanese and Korean are written
/// without spaces, so a line may break between two wide characters, or between a wide
/// character and a narrow one, but not before closing punctuation (`，。）」`) nor after opening
/// punctuation (`（「`). A word of narrow characters stays whole.
pub(super) fn line_units(word: &str) -> Vec<&str> {
    let wide = |c: char| unicode_width::UnicodeWidthChar::width(c) == Some(2);
    let mut units = Vec::new();
    let (mut start, mut before) = (0, None);
    for (at, c) in word.char_indices() {
        if let Some(previous) = before
            && (wide(previous) || wide(c))
            && !NO_BREAK_BEFORE.contains(c)
            && !NO_BREAK_AFTER.contains(previous)
        {
            units.push(&word[start..at]);
            start = at;
        }
        before = Some(c);
    }
    units.push(&word[start..]);
    units
}
// ANCHOR_END: line_units

/// The cells of a table, collected until its end: a column's width depends on every row.
#[derive(Default)]
pub(super) struct Table {
    alignments: Vec<pulldown_cmark::Alignment>,
    rows: Vec<Vec<String>>,
    cell: String,
    head: bool,
}

#[cfg(test)]
mod tests;
