//! How code wraps when the column is narrower than the code: listings and inline code.
//!
//! A listing never needs sideways scrolling: its lines wrap (`white-space: pre-wrap`), and
//! each line is a `<span class="l">` whose continuation rows hang two columns deeper than the
//! line's own indentation (`--i`, in the stylesheet), so a wrapped line cannot be mistaken for
//! the next statement. The spans add no text, so what a reader selects and copies is the source
//! exactly. Inline code may break at a space, but a short word with a hyphen or slash
//! (`--base-url`, `src/lib.rs`) stays whole: a flag broken at its hyphen reads as two.

use crate::highlight::escape_html;

/// Around what may be wider than the column (a diagram, a table): on a phone it scrolls
/// sideways inside `.scroll`, and page.js marks `.frame` so that page.css can say so.
pub const SCROLL_OPEN: &str = "<div class=\"frame\"><div class=\"scroll\">";
pub const SCROLL_CLOSE: &str = "</div></div>";

/// A word of inline code up to this many characters is never broken (a phone line holds
/// about forty); a longer one may break anywhere rather than widen the page.
const UNBROKEN_WORD: usize = 30;

/// Highlighted code (escaped text and `<span class="…">`/`</span>` tags only) as one
/// `<span class="l">` per line; a span open across a line break is closed before it and
/// opened again after it, so every line is whole HTML. A final newline stays outside (a
/// browser shows no empty line for it).
pub fn lines_html(highlighted: &str) -> String {
    let (body, final_newline) = match highlighted.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (highlighted, ""),
    };
    let mut html = String::with_capacity(highlighted.len() + highlighted.len() / 4);
    let mut open: Vec<&str> = Vec::new();
    for (index, line) in body.split('\n').enumerate() {
        if index > 0 {
            html.push('\n');
        }
        let indent = line_text(line).chars().take_while(|&c| c == ' ').count();
        if indent > 0 {
            html.push_str(&format!("<span class=\"l\" style=\"--i:{indent}\">"));
        } else {
            html.push_str("<span class=\"l\">");
        }
        for tag in &open {
            html.push_str(tag);
        }
        let mut rest = line;
        while let Some(at) = rest.find('<') {
            let end = rest[at..].find('>').map_or(rest.len(), |close| at + close + 1);
            let tag = &rest[at..end];
            if tag.starts_with("</") {
                open.pop();
            } else {
                open.push(tag);
            }
            rest = &rest[end..];
        }
        html.push_str(line);
        for _ in &open {
            html.push_str("</span>");
        }
        html.push_str("</span>");
    }
    html.push_str(final_newline);
    html
}

/// The characters a line shows: its HTML without tags (entities count as one each).
fn line_text(line: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for character in line.chars() {
        match character {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => text.push(character),
            _ => {}
        }
    }
    text
}

/// Inline code as HTML: words that a browser would break at a hyphen or slash, and that are
/// short enough to fit a phone's line, are kept whole (`<span class="nb">`). `before` is the
/// character the text puts before it: a line may not break before a hyphen, so code that
/// starts with one right after a letter or punctuation (`、--allow-shell`, common in Chinese)
/// gets a `<wbr>`, or a list of flags would be one unbreakable run wider than a phone.
pub fn inline_code_html(code: &str, before: char) -> String {
    let keep_whole = |word: &str| word.contains(['-', '/']) && word.chars().count() <= UNBROKEN_WORD;
    let opens = before.is_whitespace() || "([{\"'“‘（「《【".contains(before);
    let break_before = if code.starts_with('-') && !opens { "<wbr>" } else { "" };
    if !code.contains(' ') && keep_whole(code) {
        return format!("{break_before}<code class=\"nb\">{}</code>", escape_html(code));
    }
    let words: Vec<String> = code
        .split(' ')
        .map(|word| {
            if keep_whole(word) {
                format!("<span class=\"nb\">{}</span>", escape_html(word))
            } else {
                escape_html(word)
            }
        })
        .collect();
    format!("{break_before}<code>{}</code>", words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(html: &str) -> String {
        line_text(html)
    }

    #[test]
    fn every_line_is_a_span_with_its_indentation() {
        let html = lines_html("fn main() {\n    run();\n\n}\n");
        assert_eq!(
            html,
            "<span class=\"l\">fn main() {</span>\n<span class=\"l\" style=\"--i:4\">    run();</span>\n<span class=\"l\"></span>\n<span class=\"l\">}</span>\n"
        );
    }

    #[test]
    fn a_span_across_lines_is_closed_and_reopened() {
        let highlighted = "a <span class=\"com\">/* one\n  two */</span> b";
        let html = lines_html(highlighted);
        assert_eq!(
            html,
            "<span class=\"l\">a <span class=\"com\">/* one</span></span>\n<span class=\"l\" style=\"--i:2\"><span class=\"com\">  two */</span> b</span>"
        );
        assert_eq!(text_of(&html), text_of(highlighted), "the spans add no text");
    }

    #[test]
    fn the_text_is_unchanged_for_real_highlighted_code() {
        use crate::highlight::{Language, highlight};
        let code = "/// doc\nfn f() -> &'static str {\n    r#\"raw\n  string\"# // note\n}\n";
        let highlighted = highlight(code, Language::Rust);
        let html = lines_html(&highlighted);
        assert_eq!(text_of(&html), text_of(&highlighted));
        assert_eq!(html.matches("<span class=\"l\"").count(), 5);
        assert_eq!(html.matches("<span").count(), html.matches("</span>").count());
    }

    #[test]
    fn inline_code_keeps_short_flags_and_paths_whole() {
        assert_eq!(inline_code_html("--base-url", ' '), "<code class=\"nb\">--base-url</code>");
        assert_eq!(inline_code_html("run_turn", ' '), "<code>run_turn</code>");
        assert_eq!(
            inline_code_html("mini-agent --demo -p <x>", ' '),
            "<code><span class=\"nb\">mini-agent</span> <span class=\"nb\">--demo</span> <span class=\"nb\">-p</span> &lt;x&gt;</code>"
        );
        let long = "guide/index.html#theme=dark&lang=zh&chapter=3";
        assert_eq!(inline_code_html(long, ' '), format!("<code>{}</code>", escape_html(long)));
    }

    #[test]
    fn a_flag_after_a_letter_or_comma_may_start_a_line() {
        assert_eq!(inline_code_html("--stream", '、'), "<wbr><code class=\"nb\">--stream</code>");
        assert_eq!(inline_code_html("--stream", '（'), "<code class=\"nb\">--stream</code>");
        assert_eq!(inline_code_html("stream", '、'), "<code>stream</code>");
    }
}
