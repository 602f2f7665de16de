//! A streamed reply rendered a complete line at a time: what spans lines (an open code fence,
//! the rows of a table) is the only state kept, so each finished line is laid out once.

use super::markdown::*;
use super::sanitize::sanitize;
use unicode_width::UnicodeWidthStr;

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
// ANCHOR_END: stream

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

    // ANCHOR: stream_push
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

    // ANCHOR_END: stream_push
    // ANCHOR: long_prose
    /// A paragraph written as one long line can take many seconds to arrive. Its rows are
    /// shown as soon as they are full, when nothing in them can change any more: the text
    /// up to the last space renders to more than one row, and has no open emphasis, code
    /// span or link. The last row waits, since the next words may still join it.
    fn long_prose(&mut self) -> String {
        // Cheap checks first: this runs on every streamed delta, the width is an ioctl.
        let starts_prose = self.partial.chars().next().is_some_and(char::is_alphabetic);
        if self.fence.is_some()
            || !self.table.is_empty()
            || !starts_prose
            || self.partial.width() <= MIN_WIDTH
        {
            return String::new();
        }
        // Rows are matched to the source by its words; text that also breaks between wide
        // characters (Chinese, Japanese) is shown when its line is complete.
        if self.partial.width() > self.partial.chars().count() {
            return String::new();
        }
        let width = self.width().max(MIN_WIDTH);
        if self.partial.width() <= width {
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

    // ANCHOR_END: long_prose
    // ANCHOR: stream_line
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

    // ANCHOR_END: stream_line
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
pub(super) fn without_styles(text: &str) -> String {
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
