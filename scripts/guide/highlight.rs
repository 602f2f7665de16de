//! Syntax highlighting at build time, by hand.
//!
//! The guide must stay one offline file with a small script, so colouring happens here, once,
//! and the page only carries `<span class="…">` around tokens. Each language gets a tiny
//! scanner that walks the text character by character and recognises just what a reader's eye
//! needs: comments, strings, numbers, keywords, types and a few language-specific shapes
//! (Rust macros and attributes, TOML tables and keys, shell variables and options, JSON keys).
//! Anything unrecognised is copied through escaped, so a scanner can be wrong about colour but
//! never about the text.

/// The languages a chapter may show in a fenced block. `Plain` is copied escaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    Rust,
    Toml,
    Shell,
    Json,
    Plain,
}

impl Language {
    /// The language named by a fence's info string, or `None` when the guide does not know it.
    pub fn from_fence(info: &str) -> Option<Language> {
        match info {
            "rust" => Some(Language::Rust),
            "toml" => Some(Language::Toml),
            "sh" | "shell" | "bash" | "console" => Some(Language::Shell),
            "json" | "jsonl" => Some(Language::Json),
            "text" | "txt" | "" => Some(Language::Plain),
            _ => None,
        }
    }
}

/// Escapes text for HTML element content. Quotes stay as they are: code is full of them.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(character),
        }
    }
    out
}

/// Escapes text for a double-quoted attribute value.
pub fn escape_attribute(text: &str) -> String {
    escape_html(text).replace('"', "&quot;")
}

/// Returns `code` as HTML with tokens wrapped in classed spans.
pub fn highlight(code: &str, language: Language) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Output::default();
    match language {
        Language::Rust => rust(&chars, &mut out),
        Language::Toml => toml(&chars, &mut out),
        Language::Shell => shell(&chars, &mut out),
        Language::Json => json(&chars, &mut out),
        Language::Plain => out.plain(&chars),
    }
    out.html
}

#[derive(Default)]
struct Output {
    html: String,
}

impl Output {
    fn plain(&mut self, text: &[char]) {
        let text: String = text.iter().collect();
        self.html.push_str(&escape_html(&text));
    }

    fn span(&mut self, class: &str, text: &[char]) {
        self.html.push_str("<span class=\"");
        self.html.push_str(class);
        self.html.push_str("\">");
        self.plain(text);
        self.html.push_str("</span>");
    }
}

fn is_ident_start(character: char) -> bool {
    character.is_alphabetic() || character == '_'
}

fn is_ident_char(character: char) -> bool {
    character.is_alphanumeric() || character == '_'
}

/// The end (exclusive) of the run of characters starting at `start` that satisfy `keep`.
fn run_end(chars: &[char], start: usize, keep: impl Fn(char) -> bool) -> usize {
    let mut end = start;
    while end < chars.len() && keep(chars[end]) {
        end += 1;
    }
    end
}

/// The end of a quoted string that opens at `start`, honouring backslash escapes when asked.
/// An unterminated string runs to the end of its line, so one typo cannot colour a whole block.
fn quoted_end(chars: &[char], start: usize, quote: char, escapes: bool) -> usize {
    let mut index = start + 1;
    while index < chars.len() {
        match chars[index] {
            '\\' if escapes => index += 2,
            c if c == quote => return index + 1,
            '\n' if quote != '"' || !escapes => return index,
            _ => index += 1,
        }
    }
    chars.len()
}

/// Digits, suffixes (`10u64`, `0x1f`) and a decimal point only when a digit follows, so the
/// range `0..n` and the call `1.max(2)` end the number where Rust does.
fn number_end(chars: &[char], start: usize) -> usize {
    let mut end = start;
    while end < chars.len() {
        let is_decimal_point = chars[end] == '.' && chars.get(end + 1).is_some_and(char::is_ascii_digit);
        if chars[end].is_ascii_alphanumeric() || chars[end] == '_' || is_decimal_point {
            end += 1;
        } else {
            break;
        }
    }
    end
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while",
];

fn rust(chars: &[char], out: &mut Output) {
    let mut index = 0;
    while index < chars.len() {
        let character = chars[index];
        let next = chars.get(index + 1).copied();
        let start = index;
        if character == '/' && next == Some('/') {
            index = run_end(chars, index, |c| c != '\n');
            out.span("com", &chars[start..index]);
        } else if character == '/' && next == Some('*') {
            index = block_comment_end(chars, index);
            out.span("com", &chars[start..index]);
        } else if character == '"' {
            index = quoted_end(chars, index, '"', true);
            out.span("str", &chars[start..index]);
        } else if let Some(end) = raw_string_end(chars, index) {
            index = end;
            out.span("str", &chars[start..index]);
        } else if character == 'b' && next == Some('"') {
            index = quoted_end(chars, index + 1, '"', true);
            out.span("str", &chars[start..index]);
        } else if character == '\'' {
            index = char_or_lifetime(chars, index, out);
        } else if character == '#' && matches!(next, Some('[') | Some('!')) {
            index = attribute_end(chars, index);
            out.span("attr", &chars[start..index]);
        } else if character.is_ascii_digit() {
            index = number_end(chars, index);
            out.span("num", &chars[start..index]);
        } else if is_ident_start(character) {
            index = run_end(chars, index, is_ident_char);
            let word: String = chars[start..index].iter().collect();
            let is_macro = chars.get(index) == Some(&'!') && chars.get(index + 1) != Some(&'=');
            if is_macro {
                index += 1;
                out.span("mac", &chars[start..index]);
            } else if RUST_KEYWORDS.contains(&word.as_str()) {
                out.span("kw", &chars[start..index]);
            } else if word.starts_with(|c: char| c.is_ascii_uppercase()) {
                out.span("ty", &chars[start..index]);
            } else {
                out.plain(&chars[start..index]);
            }
        } else {
            index += 1;
            out.plain(&chars[start..index]);
        }
    }
}

/// Rust block comments nest, so count the depth.
fn block_comment_end(chars: &[char], start: usize) -> usize {
    let mut depth = 0;
    let mut index = start;
    while index < chars.len() {
        if chars[index] == '/' && chars.get(index + 1) == Some(&'*') {
            depth += 1;
            index += 2;
        } else if chars[index] == '*' && chars.get(index + 1) == Some(&'/') {
            depth -= 1;
            index += 2;
            if depth == 0 {
                return index;
            }
        } else {
            index += 1;
        }
    }
    chars.len()
}

/// `r"…"`, `r#"…"#` and `br"…"`: returns the end when a raw string starts here.
fn raw_string_end(chars: &[char], start: usize) -> Option<usize> {
    let mut index = start;
    if chars.get(index) == Some(&'b') {
        index += 1;
    }
    if chars.get(index) != Some(&'r') || (start > 0 && is_ident_char(chars[start - 1])) {
        return None;
    }
    index += 1;
    let hashes = run_end(chars, index, |c| c == '#') - index;
    index += hashes;
    if chars.get(index) != Some(&'"') {
        return None;
    }
    index += 1;
    while index < chars.len() {
        if chars[index] == '"'
            && chars[index + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes
        {
            return Some(index + 1 + hashes);
        }
        index += 1;
    }
    Some(chars.len())
}

/// A quote starts either a char literal (`'a'`, `'\n'`) or a lifetime (`'a`).
fn char_or_lifetime(chars: &[char], start: usize, out: &mut Output) -> usize {
    let is_char =
        matches!((chars.get(start + 1), chars.get(start + 2)), (Some('\\'), _) | (Some(_), Some('\'')));
    if is_char {
        let end = quoted_end(chars, start, '\'', true);
        out.span("str", &chars[start..end]);
        end
    } else {
        let end = run_end(chars, start + 1, is_ident_char);
        out.span("lt", &chars[start..end]);
        end
    }
}

/// `#[…]` and `#![…]`, with nested brackets, as one token.
fn attribute_end(chars: &[char], start: usize) -> usize {
    let mut depth = 0;
    let mut index = start;
    while index < chars.len() {
        match chars[index] {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return index + 1;
                }
            }
            '\n' => return index,
            _ => {}
        }
        index += 1;
    }
    chars.len()
}

fn toml(chars: &[char], out: &mut Output) {
    let mut index = 0;
    let mut at_line_start = true;
    while index < chars.len() {
        let character = chars[index];
        let start = index;
        if character == '\n' {
            at_line_start = true;
            index += 1;
            out.plain(&chars[start..index]);
            continue;
        }
        if character == ' ' || character == '\t' {
            index += 1;
            out.plain(&chars[start..index]);
            continue;
        }
        if at_line_start && character == '[' {
            index = run_end(chars, index, |c| c != '\n' && c != '#');
            out.span("sec", &chars[start..index]);
        } else if character == '#' {
            index = run_end(chars, index, |c| c != '\n');
            out.span("com", &chars[start..index]);
        } else if at_line_start && (is_ident_char(character) || character == '"') {
            // A key runs up to the `=`; dotted and quoted keys stay one token.
            index = run_end(chars, index, |c| c != '=' && c != '\n');
            let key_end =
                start + chars[start..index].iter().rposition(|c| !c.is_whitespace()).map_or(0, |p| p + 1);
            out.span("key", &chars[start..key_end]);
            out.plain(&chars[key_end..index]);
        } else if character == '"' || character == '\'' {
            index = toml_string_end(chars, index);
            out.span("str", &chars[start..index]);
        } else if character.is_ascii_digit()
            || (character == '-' && chars.get(index + 1).is_some_and(char::is_ascii_digit))
        {
            index = number_end(chars, index + 1);
            out.span("num", &chars[start..index]);
        } else if is_ident_start(character) {
            index = run_end(chars, index, is_ident_char);
            let word: String = chars[start..index].iter().collect();
            if word == "true" || word == "false" {
                out.span("lit", &chars[start..index]);
            } else {
                out.plain(&chars[start..index]);
            }
        } else {
            index += 1;
            out.plain(&chars[start..index]);
        }
        at_line_start = false;
    }
}

/// TOML has basic ("…") and literal ('…') strings, each also in a triple-quoted multi-line form.
fn toml_string_end(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let triple = chars.get(start + 1) == Some(&quote) && chars.get(start + 2) == Some(&quote);
    if !triple {
        return quoted_end(chars, start, quote, quote == '"');
    }
    let mut index = start + 3;
    while index + 2 < chars.len() {
        if chars[index] == quote && chars[index + 1] == quote && chars[index + 2] == quote {
            return index + 3;
        }
        index += 1;
    }
    chars.len()
}

const SHELL_KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "in",
    "function", "export", "local", "return", "set",
];

fn shell(chars: &[char], out: &mut Output) {
    let mut index = 0;
    let mut command_position = true;
    while index < chars.len() {
        let character = chars[index];
        let start = index;
        let at_word_start =
            start == 0 || chars[start - 1].is_whitespace() || "|;&(".contains(chars[start - 1]);
        if character == '#' && at_word_start {
            index = run_end(chars, index, |c| c != '\n');
            out.span("com", &chars[start..index]);
        } else if character == '\'' {
            index = quoted_end(chars, index, '\'', false);
            out.span("str", &chars[start..index]);
            command_position = false;
        } else if character == '"' {
            index = quoted_end(chars, index, '"', true);
            out.span("str", &chars[start..index]);
            command_position = false;
        } else if character == '$' && chars.get(index + 1) == Some(&'{') {
            index = run_end(chars, index, |c| c != '}' && c != '\n');
            index = (index + 1).min(chars.len());
            out.span("var", &chars[start..index]);
        } else if character == '$' && chars.get(index + 1).is_some_and(|c| is_ident_char(*c) || *c == '?') {
            index = run_end(chars, index + 2, is_ident_char);
            out.span("var", &chars[start..index]);
        } else if character == '-' && at_word_start {
            index = run_end(chars, index, |c| !c.is_whitespace() && c != '=');
            out.span("opt", &chars[start..index]);
        } else if character == '\n' || character == '|' || character == ';' || character == '&' {
            index += 1;
            out.plain(&chars[start..index]);
            command_position = true;
        } else if character.is_whitespace() {
            index += 1;
            out.plain(&chars[start..index]);
        } else if at_word_start {
            // The first character is always taken, so a lone `$` (as in `$!`) cannot stall the loop.
            index = run_end(chars, index + 1, |c| !c.is_whitespace() && !"|;&\"'$".contains(c));
            let word: String = chars[start..index].iter().collect();
            let is_assignment = word.contains('=');
            if SHELL_KEYWORDS.contains(&word.as_str()) {
                out.span("kw", &chars[start..index]);
            } else if command_position && !is_assignment {
                out.span("cmd", &chars[start..index]);
                command_position = false;
            } else {
                out.plain(&chars[start..index]);
            }
        } else {
            index += 1;
            out.plain(&chars[start..index]);
        }
    }
}

fn json(chars: &[char], out: &mut Output) {
    let mut index = 0;
    while index < chars.len() {
        let character = chars[index];
        let start = index;
        if character == '"' {
            index = quoted_end(chars, index, '"', true);
            let after = run_end(chars, index, |c| c == ' ' || c == '\t');
            let class = if chars.get(after) == Some(&':') { "key" } else { "str" };
            out.span(class, &chars[start..index]);
        } else if character.is_ascii_digit() || character == '-' {
            index =
                run_end(chars, index + 1, |c| c.is_ascii_alphanumeric() || c == '.' || c == '+' || c == '-');
            out.span("num", &chars[start..index]);
        } else if character.is_ascii_alphabetic() {
            index = run_end(chars, index, |c| c.is_ascii_alphabetic());
            out.span("lit", &chars[start..index]);
        } else {
            index += 1;
            out.plain(&chars[start..index]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rust_html(code: &str) -> String {
        highlight(code, Language::Rust)
    }

    #[test]
    fn rust_keywords_types_macros_and_comments_get_classes() {
        assert_eq!(
            rust_html("pub fn run(x: Vec<u8>) { println!(\"hi\"); } // done"),
            "<span class=\"kw\">pub</span> <span class=\"kw\">fn</span> run(x: \
             <span class=\"ty\">Vec</span>&lt;u8&gt;) { <span class=\"mac\">println!</span>(\
             <span class=\"str\">\"hi\"</span>); } <span class=\"com\">// done</span>"
        );
    }

    #[test]
    fn rust_lifetimes_differ_from_char_literals() {
        assert_eq!(
            rust_html("fn f<'a>(c: char) { 'x' }"),
            "<span class=\"kw\">fn</span> f&lt;<span class=\"lt\">'a</span>&gt;(c: char) { \
             <span class=\"str\">'x'</span> }"
        );
        assert_eq!(rust_html("'\\n'"), "<span class=\"str\">'\\n'</span>");
    }

    #[test]
    fn rust_strings_keep_escaped_quotes_and_raw_strings_their_hashes() {
        assert_eq!(rust_html(r#""a\"b" x"#), "<span class=\"str\">\"a\\\"b\"</span> x");
        assert_eq!(rust_html(r###"r#"say "hi""# r"###), "<span class=\"str\">r#\"say \"hi\"\"#</span> r");
    }

    #[test]
    fn rust_attributes_numbers_and_nested_block_comments() {
        assert_eq!(
            rust_html("#[derive(Debug)] 42 /* a /* b */ c */ x"),
            "<span class=\"attr\">#[derive(Debug)]</span> <span class=\"num\">42</span> \
             <span class=\"com\">/* a /* b */ c */</span> x"
        );
    }

    #[test]
    fn rust_numbers_stop_before_ranges_and_method_calls() {
        assert_eq!(
            rust_html("0..n 1.5 2.max(3) 0x1f_u8"),
            "<span class=\"num\">0</span>..n <span class=\"num\">1.5</span> <span class=\"num\">2</span>.max(\
             <span class=\"num\">3</span>) <span class=\"num\">0x1f_u8</span>"
        );
    }

    #[test]
    fn rust_not_equal_is_not_a_macro() {
        assert_eq!(rust_html("a!=b"), "a!=b");
    }

    #[test]
    fn toml_tables_keys_strings_and_comments() {
        assert_eq!(
            highlight("[dependencies]\nserde = { version = \"1\" } # why\nlto = true\n", Language::Toml),
            "<span class=\"sec\">[dependencies]</span>\n<span class=\"key\">serde</span> = { version = \
             <span class=\"str\">\"1\"</span> } <span class=\"com\"># why</span>\n\
             <span class=\"key\">lto</span> = <span class=\"lit\">true</span>\n"
        );
    }

    #[test]
    fn every_short_input_finishes_in_every_language() {
        // Regression: a `$` not followed by a name (`kill $!`) once looped forever.
        let alphabet: Vec<char> = "$!#'\"-{}[]=:/*r0a \n\\.".chars().collect();
        for language in [Language::Rust, Language::Toml, Language::Shell, Language::Json] {
            for a in &alphabet {
                for b in &alphabet {
                    for c in &alphabet {
                        let text: String = [*a, *b, *c].iter().collect();
                        let html = highlight(&text, language);
                        assert!(!html.is_empty(), "{language:?} {text:?}");
                    }
                }
            }
        }
        assert_eq!(highlight("kill $!", Language::Shell), "<span class=\"cmd\">kill</span> $!");
    }

    #[test]
    fn shell_commands_options_variables_and_comments() {
        assert_eq!(
            highlight("cargo run --release -- -p \"$TASK\" # go\nexport A=1", Language::Shell),
            "<span class=\"cmd\">cargo</span> run <span class=\"opt\">--release</span> \
             <span class=\"opt\">--</span> <span class=\"opt\">-p</span> \
             <span class=\"str\">\"$TASK\"</span> <span class=\"com\"># go</span>\n\
             <span class=\"kw\">export</span> A=1"
        );
        assert_eq!(
            highlight("echo a#b ${HOME}", Language::Shell),
            "<span class=\"cmd\">echo</span> a#b <span class=\"var\">${HOME}</span>"
        );
    }

    #[test]
    fn json_keys_differ_from_string_values() {
        assert_eq!(
            highlight("{\"seq\": 1, \"type\": \"user\", \"ok\": true, \"x\": null}", Language::Json),
            "{<span class=\"key\">\"seq\"</span>: <span class=\"num\">1</span>, \
             <span class=\"key\">\"type\"</span>: <span class=\"str\">\"user\"</span>, \
             <span class=\"key\">\"ok\"</span>: <span class=\"lit\">true</span>, \
             <span class=\"key\">\"x\"</span>: <span class=\"lit\">null</span>}"
        );
    }

    #[test]
    fn plain_text_is_only_escaped_and_no_text_is_ever_lost() {
        assert_eq!(highlight("<a & b>", Language::Plain), "&lt;a &amp; b&gt;");
        let tricky = "r#\"unterminated\n'a \"x\n/* open";
        for language in [Language::Rust, Language::Toml, Language::Shell, Language::Json] {
            let html = highlight(tricky, language);
            let text = strip_tags(&html).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
            assert_eq!(text, tricky, "{language:?}");
        }
    }

    fn strip_tags(html: &str) -> String {
        let mut out = String::new();
        let mut in_tag = false;
        for character in html.chars() {
            match character {
                '<' => in_tag = true,
                '>' => in_tag = false,
                _ if !in_tag => out.push(character),
                _ => {}
            }
        }
        out
    }
}
