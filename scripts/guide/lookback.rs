//! Chapters only look back: the product code of chapter N never names chapter M > N.
//!
//! `src/lib.rs` promises that each chapter uses only the chapters before it, and the book is
//! read in that order: a chapter 3 that named chapter 17 would send its reader forward into
//! code they have not met, and chapter 3's state could not exist without chapter 17's. The
//! compiler checks the states only as far as the features go (code under `#[cfg(feature =
//! "ch17")]` in chapter 3 compiles in every state that has chapter 17), so this check reads
//! the source: in every file of a chapter (`src/chNN_…` and the folders and files under it),
//! every path that starts at the crate (`crate::chMM_…`, `mini_agent::chMM_…`, and each first
//! segment of a `use crate::{…}` list) must name a chapter MM ≤ NN. Comments, string
//! literals, test files (`tests.rs`, `*_tests.rs`, `fakes.rs`, anything under a `tests/`
//! folder) and `#[cfg(test)]` items are not product code and are skipped. The composition
//! root (`main.rs`, `lib.rs`, `src/ch14_main/`) is the one place allowed to know every
//! chapter; the other files of `src/` (the demo model, the scripted server, `text.rs`…) are in
//! every state from chapter 1, so they may name no chapter after 1.
//!
//! The same reading checks chapter 1's typed-in project: what it copies from `src/` may name,
//! at the crate's root, only what it copies.

use super::rust_files;
use crate::Diagnostic;
use std::path::Path;

/// One diagnostic per forward name in the product code under `root/src`, and per name outside
/// chapter 1's typed-in project in what that project copies ([`check_typed_in`]).
pub fn check_lookback(root: &Path, diagnostics: &mut Vec<Diagnostic>) {
    check_typed_in(root, diagnostics);
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    for file in files {
        let shown = file.strip_prefix(root).unwrap_or(&file).display().to_string();
        let Some(chapter) = chapter_of(&shown) else { continue };
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        for (line, named) in forward_names(&text, chapter) {
            diagnostics.push(Diagnostic::new(
                &shown,
                line,
                format!(
                    "chapter {chapter} names chapter {} (`{named}`): chapters only look back; \
                     invert it (the later chapter registers with, or implements a trait of, this one)",
                    chapter_number(&named).unwrap_or_default()
                ),
            ));
        }
    }
}

/// The page whose Prerequisites show chapter 1's typed-in project.
pub const TYPED_IN_CHAPTER: &str = "guide/en/01-loop.md";

/// Chapter 1's typed-in project holds the reader's file and what its `cp -r … ~/my-agent/src/`
/// line copies from the repository (the demo model and the modules it uses), and no other module
/// of the crate. So the product code of what it copies may start a path at the crate only with a
/// module it copies: `crate::random` in the demo model would break every reader's build.
pub fn check_typed_in(root: &Path, diagnostics: &mut Vec<Diagnostic>) {
    let Ok(chapter) = std::fs::read_to_string(root.join(TYPED_IN_CHAPTER)) else { return };
    let Some((cp_line, copied)) = copied_sources(&chapter) else { return };
    let modules: Vec<String> = copied
        .iter()
        .filter_map(|path| Path::new(path).file_stem().and_then(|stem| stem.to_str()).map(str::to_owned))
        .collect();
    for source in &copied {
        let path = root.join(source);
        let mut files = Vec::new();
        match (path.is_dir(), path.is_file()) {
            (true, _) => rust_files(&path, &mut files),
            (_, true) => files.push(path),
            _ => diagnostics.push(Diagnostic::new(
                TYPED_IN_CHAPTER,
                cp_line,
                format!("chapter 1's typed-in project copies `{source}`, which the repository does not have"),
            )),
        }
        files.sort();
        for file in files {
            let shown = file.strip_prefix(root).unwrap_or(&file).display().to_string();
            let Some(_) = chapter_of(&shown) else { continue };
            let Ok(text) = std::fs::read_to_string(&file) else { continue };
            let code = product_code(&text);
            for (index, line) in code.iter().enumerate() {
                for name in crate_paths(line, &code[index + 1..]) {
                    if !modules.contains(&name) {
                        let message = format!(
                            "`crate::{name}` is not in chapter 1's typed-in project, which copies only {} \
                             ({TYPED_IN_CHAPTER}:{cp_line}): copy it there too (both languages), or do without it here",
                            copied.join(" ")
                        );
                        diagnostics.push(Diagnostic::new(&shown, index + 1, message));
                    }
                }
            }
        }
    }
}

/// The line number and the sources of the chapter's `cp -r SOURCE… DIR/src/` command.
fn copied_sources(chapter: &str) -> Option<(usize, Vec<String>)> {
    chapter.lines().enumerate().find_map(|(index, line)| {
        let command = line.split(" #").next().unwrap_or_default();
        let words: Vec<&str> = command.trim().strip_prefix("cp -r ")?.split_whitespace().collect();
        let (target, sources) = words.split_last()?;
        let copied = sources.iter().map(|source| source.trim_end_matches('/').to_string()).collect();
        target.ends_with("/src/").then_some((index + 1, copied))
    })
}

/// The chapter whose product code `path` (relative to the repository) is, or `None` for a
/// file the rule does not cover: the root, and test-only files.
pub fn chapter_of(path: &str) -> Option<u32> {
    let parts: Vec<&str> = path.split('/').collect();
    let name = parts.last()?;
    let test_only = *name == "tests.rs"
        || name.ends_with("_tests.rs")
        || *name == "fakes.rs"
        || parts.iter().any(|part| *part == "tests" || *part == "testkit");
    if test_only || !name.ends_with(".rs") || parts.first() != Some(&"src") {
        return None;
    }
    match parts.get(1).copied() {
        Some("main.rs" | "lib.rs" | "ch14_main") => None,
        Some(top) => Some(chapter_number(top).unwrap_or(1)),
        None => None,
    }
}

/// `ch05_sessions` → 5.
fn chapter_number(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("ch")?.get(..2)?;
    if name.as_bytes().get(4) != Some(&b'_') {
        return None;
    }
    digits.parse().ok()
}

/// Every `(line, name)` in `text`'s product code where a crate path names a chapter after
/// `chapter`.
pub fn forward_names(text: &str, chapter: u32) -> Vec<(usize, String)> {
    let code = product_code(text);
    let mut found = Vec::new();
    for (index, line) in code.iter().enumerate() {
        for name in crate_paths(line, &code[index + 1..]) {
            if chapter_number(&name).is_some_and(|named| named > chapter) {
                found.push((index + 1, name));
            }
        }
    }
    found
}

/// The first segments of the paths that start at the crate on `line`: `crate::ch05_x::…` gives
/// `ch05_x`; `crate::{ch05_x, ch06_y::Z}` gives both (the list may go on over `next` lines).
fn crate_paths(line: &str, next: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    for prefix in ["crate::", "mini_agent::"] {
        let mut rest = line;
        while let Some(at) = rest.find(prefix) {
            let starts_word = at == 0 || !is_word(rest.as_bytes()[at - 1] as char);
            rest = &rest[at + prefix.len()..];
            if !starts_word {
                continue;
            }
            let after = rest.trim_start();
            if let Some(list) = after.strip_prefix('{') {
                let mut text = list.to_string();
                for more in next {
                    if depth_closed(&text) {
                        break;
                    }
                    text.push('\n');
                    text.push_str(more);
                }
                names.extend(list_heads(&text));
            } else {
                names.push(after.chars().take_while(|c| is_word(*c)).collect());
            }
        }
    }
    names
}

/// The first segment of each path of a use list, up to its closing brace.
fn list_heads(list: &str) -> Vec<String> {
    let (mut depth, mut heads, mut at_head) = (0, Vec::new(), true);
    let mut word = String::new();
    for c in list.chars() {
        if is_word(c) {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            if at_head && depth == 0 {
                heads.push(std::mem::take(&mut word));
            }
            word.clear();
            at_head = false;
        }
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_head = true,
            _ => {}
        }
    }
    if !word.is_empty() && at_head && depth == 0 {
        heads.push(word);
    }
    heads
}

/// Whether the braces opened in `text` (after the list's own `{`) are closed.
fn depth_closed(text: &str) -> bool {
    let mut depth = 1;
    for c in text.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return true;
        }
    }
    false
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The lines of `text` with comments and string contents blanked, and every `#[cfg(test)]`
/// item (its attributes, its first line and, if braces open there, every line until they
/// close) emptied. Line numbers stay those of the file.
pub fn product_code(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = strip_comments_and_strings(text).lines().map(str::to_owned).collect();
    let mut at = 0;
    while at < lines.len() {
        let trimmed = lines[at].trim_start();
        let test_only = trimmed.starts_with("#[cfg(test)]") || trimmed.starts_with("#[cfg(all(test,");
        if !test_only {
            at += 1;
            continue;
        }
        let mut end = at + 1;
        while end < lines.len() && lines[end].trim_start().starts_with("#[") {
            end += 1;
        }
        let mut depth = 0i32;
        while end < lines.len() {
            for c in lines[end].chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            let closes = depth <= 0 && (lines[end].contains('}') || lines[end].trim_end().ends_with(';'));
            end += 1;
            if closes {
                break;
            }
        }
        let end = end.min(lines.len());
        for line in &mut lines[at..end] {
            line.clear();
        }
        at = end;
    }
    lines
}

/// `text` with `//` and `/* */` comments and the insides of string and character literals
/// replaced by spaces (newlines kept).
fn strip_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !prev_is_word(&chars, i) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.push('"');
            i = j + 1;
            while i < chars.len() {
                let closes = chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#'));
                if closes {
                    out.push('"');
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c == '\'' && is_char_literal(&chars, i) {
            out.push('\'');
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            out.push('\'');
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_word(chars: &[char], i: usize) -> bool {
    i > 0 && is_word(chars[i - 1])
}

/// `'a'`, `'\n'`, `'\''`, `'\u{1F600}'`: a character literal; `'a` in `&'a str` is a lifetime.
fn is_char_literal(chars: &[char], i: usize) -> bool {
    match chars.get(i + 1) {
        Some('\\') => true,
        Some(_) => chars.get(i + 2) == Some(&'\''),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_to_a_later_chapter_is_found_and_one_to_an_earlier_is_not() {
        let text = "use crate::ch02_loop::Error;\nfn f() { crate::ch18_mcp::PREFIX }\n";
        assert_eq!(forward_names(text, 12), vec![(2, "ch18_mcp".to_string())]);
        assert_eq!(
            forward_names("use mini_agent::ch19_anthropic::X;", 5),
            vec![(1, "ch19_anthropic".into())]
        );
    }

    #[test]
    fn a_use_list_is_seen_through_also_over_several_lines() {
        let one = "use crate::{ch02_loop::Error, ch18_mcp};";
        assert_eq!(forward_names(one, 12), vec![(1, "ch18_mcp".to_string())]);
        let nested = "use crate::{\n    ch02_loop::{Error, Event},\n    ch17_notify::{Webhook, X},\n};";
        assert_eq!(forward_names(nested, 16), vec![(1, "ch17_notify".to_string())]);
        // Inside a chapter's own list, later words are items, not chapters.
        assert!(forward_names("use crate::{ch02_loop::{ch99_not_a_head}};", 2).is_empty());
    }

    #[test]
    fn comments_strings_and_test_items_are_not_product_code() {
        let text = r#"
// crate::ch18_mcp in a comment
/* crate::ch18_mcp */ /// crate::ch18_mcp
const S: &str = "crate::ch18_mcp";
const R: &str = r"crate::ch18_mcp";
fn lifetimes<'a>(x: &'a str) -> char { 'c' }
#[cfg(test)]
mod tests {
    use crate::ch18_mcp::PREFIX;
}
#[cfg(test)]
fn helper() -> u8 {
    crate::ch19_anthropic::X
}
#[cfg(test)]
mod more;
fn after() { crate::ch13_evaluation::Y }
"#;
        assert_eq!(forward_names(text, 12), vec![(17, "ch13_evaluation".to_string())]);
    }

    #[test]
    fn what_chapter_one_copies_names_only_what_it_copies() {
        let root = std::env::temp_dir().join(format!("build-guide-typed-in-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
            std::fs::write(path, text).expect("a file");
        };
        let chapter =
            "Text.\n\n```sh\ncp -r src/demo src/text.rs src/gone ~/my-agent/src/  # the demo\n```\n";
        write(TYPED_IN_CHAPTER, chapter);
        write(
            "src/demo/mod.rs",
            "mod plan;\nuse crate::text::plural;\n#[cfg(test)]\nuse crate::testkit::X;\n",
        );
        write("src/demo/plan.rs", "// crate::random in a comment\nfn f() { crate::random::seed() }\n");
        write("src/demo/tests.rs", "use crate::testkit::Y;\n");
        write("src/text.rs", "pub fn plural() {}\n");
        let mut diagnostics = Vec::new();
        check_typed_in(&root, &mut diagnostics);
        let _ = std::fs::remove_dir_all(&root);
        let mut found: Vec<String> = diagnostics.iter().map(Diagnostic::to_string).collect();
        found.sort();
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(
            found[0].starts_with("guide/en/01-loop.md:4:") && found[0].contains("`src/gone`"),
            "{found:#?}"
        );
        assert!(
            found[1].starts_with("src/demo/plan.rs:2:") && found[1].contains("`crate::random`"),
            "{found:#?}"
        );
        assert!(found[1].contains("src/demo src/text.rs src/gone (guide/en/01-loop.md:4)"), "{found:#?}");
    }

    #[test]
    fn the_root_and_test_files_are_not_checked_and_infrastructure_is_chapter_one() {
        assert_eq!(chapter_of("src/ch12_permissions.rs"), Some(12));
        assert_eq!(chapter_of("src/ch05_sessions/listing.rs"), Some(5));
        assert_eq!(chapter_of("src/ch11_streaming/tests/sse.rs"), None);
        assert_eq!(chapter_of("src/ch05_sessions/tests.rs"), None);
        assert_eq!(chapter_of("src/ch02_loop/fakes.rs"), None);
        assert_eq!(chapter_of("src/ch14_main/host/app.rs"), None);
        assert_eq!(chapter_of("src/main.rs"), None);
        assert_eq!(chapter_of("src/testkit/mod.rs"), None);
        assert_eq!(chapter_of("src/demo/plan.rs"), Some(1));
        assert_eq!(chapter_of("src/text.rs"), Some(1));
        assert!(forward_names("use crate::ch02_loop::Message;", 1).len() == 1);
    }
}
