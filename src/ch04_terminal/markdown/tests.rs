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

/// Issue 22, item 6: Chinese, written without spaces, was one "word" as wide as the paragraph
/// and ran past the edge. It wraps between characters now, keeps closing punctuation on the line
/// before and opening punctuation with what follows, and wrapped list items and quotes keep
/// their indent and bar, as English does.
#[test]
fn wide_text_wraps_between_characters_and_keeps_punctuation_in_place() {
    let text = "这是一个很长的中文句子，用来测试自动换行（在字符边界上）是否正确。";
    let rendered = render_markdown_at(text, Look::Plain, 20);
    for line in rendered.lines() {
        assert!(line.width() <= 20, "{line:?} in {rendered:?}");
        assert!(
            !line.starts_with(['，', '。', '）']),
            "a line starts with closing punctuation: {rendered:?}"
        );
        assert!(!line.ends_with('（'), "a line ends with opening punctuation: {rendered:?}");
    }
    assert_eq!(rendered.replace('\n', ""), text, "nothing lost or added");
    assert_eq!(
        render_markdown_at("- 列表项里的中文也要在宽度处换行并保持缩进", Look::Plain, 20),
        "• 列表项里的中文也要\n  在宽度处换行并保持\n  缩进\n"
    );
    assert_eq!(
        render_markdown_at("> 引用里的中文换行以后还有竖线在前面", Look::Plain, 20),
        "│ 引用里的中文换行以\n│ 后还有竖线在前面\n"
    );
    // Mixed: a line may break between Chinese and a Latin word, never inside the word.
    let mixed = render_markdown_at("运行 cargo test 之后再运行clippy检查代码", Look::Plain, 20);
    assert!(mixed.lines().all(|line| line.width() <= 20) && mixed.contains("clippy"), "{mixed:?}");
    // Streamed line by line, the same rows.
    let mut stream = StreamRenderer::with_width(Look::Plain, 20);
    let mut shown = String::new();
    for piece in text.chars() {
        shown.push_str(&stream.push(&piece.to_string()));
    }
    shown.push_str(&stream.push("\n"));
    shown.push_str(&stream.finish());
    assert_eq!(shown, rendered);
}

#[test]
fn a_word_is_cut_only_where_a_line_may_break() {
    assert_eq!(line_units("hello"), ["hello"]);
    assert_eq!(line_units("中文abc"), ["中", "文", "abc"]);
    assert_eq!(line_units("好，「对」。"), ["好，", "「对」。"]);
    assert_eq!(line_units(""), [""]);
}
