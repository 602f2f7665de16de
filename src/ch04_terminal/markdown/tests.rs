//! Tests of the Markdown renderer, whole and streamed.

use super::*;
use crate::ch04_terminal::streamed_markdown::*;

fn plain(markdown: &str) -> String {
    without_styles(&render_markdown(markdown, Look::Color))
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
    assert_eq!(render_markdown(hostile, Look::Color), "\\x1b]52;c;aGk=\\x07 \x1b[1mb\x1b[0m\\r\\x1b[2K\n");
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
