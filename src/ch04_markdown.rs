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
//! resized window gets answers that fit it. A streamed reply is rendered a complete line at a
//! time by [`StreamRenderer`], which keeps the little state that spans lines: an open code
//! fence and the rows of a table.

use crate::ch04_sanitize::sanitize;
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
pub fn terminal_width() -> usize {
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
const MIN_WIDTH: usize = 20;

// ANCHOR: markdown
/// Markdown for the terminal at its current width: see [`render_markdown_at`].
pub fn render_markdown(text: &str, look: Look) -> String {
    render_markdown_at(text, look, terminal_width())
}

/// Laid out for `width` columns, styled with ANSI codes for `Color`, without them for
/// `Plain`, and unchanged for `Raw` (a pipe gets exactly what the model wrote).
pub fn render_markdown_at(text: &str, look: Look, width: usize) -> String {
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
            // ANCHOR_END: markdown
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

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const ITALIC: &str = "\x1b[3m";
const STRIKE: &str = "\x1b[9m";
const CODE: &str = "\x1b[36m";
const LINK: &str = "\x1b[4;34m";

// ANCHOR: styles
/// Keeps the state Markdown needs across events: open styles (ANSI has no "undo one
/// style", so closing one resets and re-applies the rest), list nesting, the line prefix,
/// and the column, for wrapping.
#[derive(Default)]
struct Renderer {
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
    /// next line (with the same prefix); a word is never broken. Code is not wrapped.
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
                let mut space = position > 0;
                let width = word.width();
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
                self.push(word);
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

/// The cells of a table, collected until its end: a column's width depends on every row.
#[derive(Default)]
struct Table {
    alignments: Vec<pulldown_cmark::Alignment>,
    rows: Vec<Vec<String>>,
    cell: String,
    head: bool,
}

// ANCHOR: stream
/// A streamed reply, rendered a complete line at a time: a line is final once its newline
/// has arrived. What spans lines is kept here: an open code fence (its lines are code, not
/// Markdown) and the rows of a table (laid out together when the table ends).
pub struct StreamRenderer {
    look: Look,
    /// Fixed for tests; else the terminal's, read at each line.
    width: Option<usize>,
    partial: String,
    fence: Option<&'static str>,
    table: Vec<String>,
    blank: bool,
    started: bool,
}

impl StreamRenderer {
    pub fn new(look: Look) -> StreamRenderer {
        StreamRenderer {
            look,
            width: None,
            partial: String::new(),
            fence: None,
            table: Vec::new(),
            blank: false,
            started: false,
        }
    }

    /// At a fixed width instead of the terminal's.
    pub fn with_width(look: Look, width: usize) -> StreamRenderer {
        StreamRenderer { width: Some(width), ..StreamRenderer::new(look) }
    }

    fn width(&self) -> usize {
        self.width.unwrap_or_else(terminal_width)
    }

    /// Takes a piece of the reply; returns what can be shown now.
    pub fn push(&mut self, delta: &str) -> String {
        self.partial.push_str(delta);
        let mut out = String::new();
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            out.push_str(&self.line(&line[..line.len() - 1]));
        }
        out.push_str(&self.long_prose());
        out
    }

    /// A paragraph written as one long line can take many seconds to arrive. Its rows are
    /// shown as soon as they are full, when nothing in them can change any more: the text
    /// up to the last space renders to more than one row, and has no open emphasis, code
    /// span or link. The last row waits, since the next words may still join it.
    fn long_prose(&mut self) -> String {
        let width = self.width().max(MIN_WIDTH);
        let starts_prose = self.partial.chars().next().is_some_and(char::is_alphabetic);
        if self.fence.is_some() || !self.table.is_empty() || !starts_prose || self.partial.width() <= width {
            return String::new();
        }
        let Some(cut) = self.partial.rfind(' ') else { return String::new() };
        let rendered = render_markdown_at(&self.partial[..cut], self.look, width);
        let rows: Vec<&str> = rendered.lines().collect();
        if rows.len() < 2 {
            return String::new();
        }
        let full = &rows[..rows.len() - 1];
        // The rows show the source's words, one for one: skip as many in the source.
        let shown: usize = full.iter().map(|row| without_styles(row).split_whitespace().count()).sum();
        let Some(rest_word) = self.partial.split_whitespace().nth(shown) else { return String::new() };
        let offset = rest_word.as_ptr() as usize - self.partial.as_ptr() as usize;
        // What is shown must be final: every emphasis, code span and strike closed within it
        // (delimiter runs, not characters, pair up), no link or escape whose rendering
        // differs from its words.
        let done = &self.partial[..offset];
        let even = |marker: char| done.split(|c| c != marker).filter(|run| !run.is_empty()).count() % 2 == 0;
        if !['*', '_', '`', '~'].into_iter().all(even) || done.contains(['[', '<', '\\', '|']) {
            return String::new();
        }
        let mut out = full.join("\n");
        out.push('\n');
        self.partial.drain(..offset);
        self.started = true;
        self.blank = false;
        out
    }

    /// The reply is complete: the last line, and a table still open.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.partial);
        let mut out = if rest.is_empty() { String::new() } else { self.line(&rest) };
        out.push_str(&self.flush_table());
        out
    }

    fn line(&mut self, line: &str) -> String {
        let trimmed = line.trim_start();
        let is_row = self.fence.is_none() && trimmed.starts_with('|');
        let mut out = if is_row { String::new() } else { self.flush_table() };
        if is_row {
            self.table.push(line.to_string());
            return out;
        }
        if let Some(fence) = self.fence {
            if trimmed.starts_with(fence) {
                self.fence = None;
            } else if self.look == Look::Color {
                out.push_str(&format!("  {CODE}{}{RESET}\n", sanitize(line)));
            } else {
                out.push_str(&format!("  {}\n", sanitize(line)));
            }
            return out;
        }
        if let Some(fence) = ["```", "~~~"].into_iter().find(|fence| trimmed.starts_with(fence)) {
            self.fence = Some(fence);
            return out;
        }
        if trimmed.is_empty() {
            if self.started && !self.blank {
                out.push('\n');
            }
            self.blank = true;
            return out;
        }
        self.blank = false;
        self.started = true;
        // A nested list item keeps its indentation; four spaces would make it code.
        let indent = if line.len() - trimmed.len() < 4 { line.len() - trimmed.len() } else { 0 };
        let source = if indent > 0 { trimmed } else { line };
        let rendered = render_markdown_at(source, self.look, self.width().saturating_sub(indent));
        for rendered_line in rendered.lines() {
            out.push_str(&format!("{}{rendered_line}\n", " ".repeat(indent)));
        }
        out
    }

    fn flush_table(&mut self) -> String {
        if self.table.is_empty() {
            return String::new();
        }
        let table = std::mem::take(&mut self.table).join("\n");
        self.started = true;
        self.blank = false;
        render_markdown_at(&table, self.look, self.width())
    }
}

/// Rendered text without the renderer's own escape codes (model text has none left).
fn without_styles(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}
// ANCHOR_END: stream

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(markdown: &str) -> String {
        let styled = render_markdown(markdown, Look::Color);
        let mut out = String::new();
        let mut chars = styled.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                chars.by_ref().find(|&c| c == 'm');
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn markdown_is_laid_out_for_the_terminal() {
        let text = "# Title\n\nSome *emphasis* and `code`.\n\n- one\n- two\n  1. inner\n  2. next\n\n\
                    ```rust\nfn main() {}\n```\n\n> quoted\n\nSee [the docs](https://example.org).\n";
        assert_eq!(
            plain(text),
            "Title\n\nSome emphasis and code.\n\n• one\n• two\n  1. inner\n  2. next\n\n  fn main() {}\n\n\
             │ quoted\n\nSee the docs (https://example.org).\n"
        );
    }

    #[test]
    fn markdown_styles_use_ansi_and_are_closed() {
        let styled = render_markdown("**bold** then `code` and _it_", Look::Color);
        assert_eq!(styled, "\x1b[1mbold\x1b[0m then \x1b[36mcode\x1b[0m and \x1b[3mit\x1b[0m\n");
        // A style ends with its line: the blank line and the list marker stay plain.
        assert_eq!(render_markdown("# T\n\n- `a`", Look::Color), "\x1b[1mT\x1b[0m\n\n• \x1b[36ma\x1b[0m\n");
        let link = render_markdown("<https://example.org>", Look::Color);
        assert!(!link.contains("(https"), "an autolink shows its URL once: {link:?}");
    }

    #[test]
    fn without_color_the_text_is_unchanged() {
        assert_eq!(render_markdown("# Title\n\n*x*  \n", Look::Raw), "# Title\n\n*x*\n");
        let hostile = "\x1b]52;c;aGk=\x07 **b**\r\x1b[2K";
        assert_eq!(render_markdown(hostile, Look::Plain), "\\x1b]52;c;aGk=\\x07 b\\r\\x1b[2K\n");
        assert_eq!(
            render_markdown(hostile, Look::Color),
            "\\x1b]52;c;aGk=\\x07 \x1b[1mb\x1b[0m\\r\\x1b[2K\n"
        );
    }

    #[test]
    fn answers_wrap_at_the_width_without_breaking_words() {
        let text = "The quick brown fox jumps over the lazy dog and keeps running far away.";
        assert_eq!(
            render_markdown_at(text, Look::Plain, 24),
            "The quick brown fox\njumps over the lazy dog\nand keeps running far\naway.\n"
        );
        let nested = "> quoted words that need wrapping here\n\n- a list item that wraps too\n";
        assert_eq!(
            render_markdown_at(nested, Look::Plain, 20),
            "│ quoted words that\n│ need wrapping here\n\n• a list item that\n  wraps too\n"
        );
        for line in render_markdown_at(&"word ".repeat(100), Look::Color, 30).lines() {
            assert!(plain(line).chars().count() <= 30, "{line:?}");
        }
    }

    #[test]
    fn tables_are_laid_out_in_columns() {
        let table = "| name | size |\n|---|--:|\n| a.rs | 10 |\n| main.rs | 2048 |\n";
        assert_eq!(
            render_markdown_at(table, Look::Plain, 80),
            "name    │ size\n────────┼─────\na.rs    │   10\nmain.rs │ 2048\n"
        );
        assert!(render_markdown_at(table, Look::Color, 80).starts_with("\x1b[1mname    │ size\x1b[0m\n"));
    }

    #[test]
    fn a_quoted_line_does_not_look_like_the_prompt() {
        assert_eq!(render_markdown_at("> rm -rf ~", Look::Plain, 80), "│ rm -rf ~\n");
        assert_eq!(render_markdown_at("# Plan", Look::Plain, 80), "# Plan\n");
    }

    #[test]
    fn a_long_streamed_paragraph_shows_its_full_rows_as_they_fill() {
        for look in [Look::Plain, Look::Color] {
            let mut stream = StreamRenderer::with_width(look, 24);
            let mut shown = String::new();
            let text = "Streaming a long paragraph shows **full rows** while the rest of it is \
                        still on its way, and `code spans` stay whole.\n";
            for piece in text.split_inclusive(' ') {
                let now = stream.push(piece);
                if piece.starts_with("way,") {
                    assert!(without_styles(&shown).contains("paragraph shows full\n"), "{shown:?}");
                }
                shown.push_str(&now);
            }
            shown.push_str(&stream.finish());
            let whole = render_markdown_at(text, look, 24);
            assert_eq!(shown, whole, "shown early or not, the rows are the same");
        }
        // An open emphasis waits for its end: a row must never change after it is shown.
        let mut stream = StreamRenderer::with_width(Look::Plain, 20);
        assert_eq!(stream.push("Some *words that run on and on and "), "");
    }

    #[test]
    fn a_stream_is_rendered_a_complete_line_at_a_time() {
        let mut stream = StreamRenderer::new(Look::Plain);
        assert_eq!(stream.push("# Ti"), "");
        assert_eq!(stream.push("tle\n\nSome **bo"), "# Title\n\n");
        assert_eq!(stream.push("ld**\n```rust\nlet x = 1;\n"), "Some bold\n  let x = 1;\n");
        assert_eq!(stream.push("```\n- one\n  - two\n| a | b |\n|---|---|\n"), "• one\n  • two\n");
        assert_eq!(stream.push("| 1 | 2 |\n> quote"), "");
        assert_eq!(stream.finish(), "a │ b\n──┼──\n1 │ 2\n│ quote\n");
    }
}
