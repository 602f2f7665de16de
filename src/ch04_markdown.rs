//! Chapter 4 — Markdown for the terminal.
//!
//! Models answer in Markdown. A terminal shows it best laid out (headings, lists, quotes,
//! code) and styled with ANSI codes, but a pipe wants exactly what the model wrote. So the
//! renderer takes a [`Look`]: `Raw` for pipes, `Plain` for a terminal without colour
//! (`NO_COLOR`, `TERM=dumb`), `Color` for the rest. Every piece of text the model wrote goes
//! through chapter 4's sanitiser before any style is added, so the only escape codes on the
//! screen are the renderer's own.

use crate::ch04_sanitize::sanitize;

/// How answers are shown: exactly as written (a pipe), laid out without escape codes (a
/// terminal with `NO_COLOR` or `TERM=dumb`), or laid out and styled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    Raw,
    Plain,
    Color,
}

// ANCHOR: markdown
/// Markdown for the terminal: laid out and styled with ANSI codes for `Color`, sanitised for
/// `Plain`, and unchanged for `Raw` (a pipe gets exactly what the model wrote).
pub fn render_markdown(text: &str, look: Look) -> String {
    if look != Look::Color {
        let mut raw = if look == Look::Raw { text.trim_end().to_string() } else { sanitize(text.trim_end()) };
        raw.push('\n');
        return raw;
    }
    use pulldown_cmark::{Event as Md, Options, Parser, Tag, TagEnd};
    // Sanitised before parsing: a `\r` is then text, not a line break, and no control
    // character from the model is left for the styles to be mixed with.
    let text = &sanitize(text);
    let mut out = Renderer::default();
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        match event {
            Md::Start(Tag::Paragraph) => out.block(),
            Md::Start(Tag::Heading { .. }) => {
                out.block();
                out.push_style(BOLD);
            }
            Md::Start(Tag::BlockQuote(_)) => {
                out.block();
                out.quote += 1;
            }
            Md::Start(Tag::CodeBlock(_)) => {
                out.block();
                out.indents.push(2);
                out.push_style(CODE);
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
            Md::End(_) => {}
            Md::Text(text) | Md::Html(text) | Md::InlineHtml(text) => out.write(&text),
            Md::Code(code) => {
                out.push_style(CODE);
                out.write(&code);
                out.pop_style();
            }
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
/// style", so closing one resets and re-applies the rest), list nesting and the line prefix.
#[derive(Default)]
struct Renderer {
    text: String,
    styles: Vec<&'static str>,
    lists: Vec<Option<u64>>,
    indents: Vec<usize>,
    quote: usize,
    links: Vec<(String, usize)>,
    marker: Option<String>,
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
        let wanted = self.styles.concat();
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
    }

    fn write(&mut self, text: &str) {
        for (index, piece) in text.split('\n').enumerate() {
            if index > 0 {
                self.newline();
            }
            if piece.is_empty() {
                continue;
            }
            if !self.mid_line {
                self.text.push_str(&"│ ".repeat(self.quote));
                match self.marker.take() {
                    Some(marker) => self.text.push_str(&marker),
                    None => {
                        let depth = self.lists.len().saturating_sub(1) * 2;
                        self.text.push_str(&" ".repeat(self.indents.iter().sum::<usize>() + depth));
                    }
                }
                self.mid_line = true;
            }
            self.apply_styles();
            self.text.push_str(piece);
        }
    }
}

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
        assert_eq!(render_markdown(hostile, Look::Plain), "\\x1b]52;c;aGk=\\x07 **b**\\r\\x1b[2K\n");
        assert_eq!(
            render_markdown(hostile, Look::Color),
            "\\x1b]52;c;aGk=\\x07 \x1b[1mb\x1b[0m\\r\\x1b[2K\n"
        );
    }
}
