//! Anchors: the marked regions of the source that the book may show.
//!
//! A region is the lines between `// ANCHOR: name` and `// ANCHOR_END: name` in a file under
//! `src/`. Regions may nest or overlap; marker lines inside a region are dropped when it is
//! shown, and the region is dedented so a method reads as if it stood at the margin. A region
//! that is exactly one function named as its anchor (doc comments and attributes, signature,
//! body, closing brace) is a *whole function*: the book may show it whole although it is long,
//! and a region inside it (a piece) is dedented only as far as the whole is, so each piece
//! stands at the column it has in the whole listing and in the source's function. So are the
//! chapter-state attributes (`#[cfg(feature = "ch08")]`, `#[cfg(not(feature = …))]`,
//! `#[cfg(all(…feature…))]` alone on a line, and any `#![cfg…]`): they say which chapter a
//! piece belongs to, which the book already says around the listing; other attributes stay.
//! An item whose attribute says it is not in the chapter's state is dropped with it
//! (`guide/states.rs`): chapter 2's listing of `Event` does not show chapter 8's `Retry`. The scan
//! reports every marker problem with its file and line, and remembers where each anchor starts
//! so an anchor no chapter includes can be named too.

use crate::Diagnostic;
use crate::states::{self, State};
use std::collections::BTreeMap;
use std::path::Path;

/// One anchored region of one source file.
#[derive(Debug)]
pub struct Anchor {
    /// 1-based line of the `// ANCHOR:` marker.
    pub line: usize,
    /// The region's lines, markers removed, attributes kept.
    pub lines: Vec<String>,
    /// 1-based line of the `// ANCHOR_END:` marker.
    pub end: usize,
    /// The region is one whole function named as the anchor: `fn name` and its body, nothing else.
    pub whole_function: bool,
    /// For a piece of a whole function (a region inside one): that function's anchor and the
    /// indentation of its `fn` line, by which the piece is dedented instead of its own.
    pub piece_of: Option<(String, usize)>,
}

impl Anchor {
    /// The region as chapter state `state` shows it (see `guide/states.rs`): items not in the
    /// state dropped, chapter-state attributes hidden, blank edges trimmed, dedented.
    pub fn shown(&self, state: State) -> String {
        let lines: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        let view = states::view(&lines, state);
        region(&view.iter().map(String::as_str).collect::<Vec<_>>(), self.dedent())
    }

    /// Lines the state's view drops from the region (0: every item is in the state).
    pub fn dropped_lines(&self, state: State) -> usize {
        let lines: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        let all = region(&lines, self.dedent()).lines().count();
        all.saturating_sub(self.shown(state).lines().count())
    }

    /// The columns removed from every line: the whole function's for a piece, else none fixed
    /// (the region's own common indentation).
    fn dedent(&self) -> Option<usize> {
        self.piece_of.as_ref().map(|(_, indent)| *indent)
    }
}

/// All anchors of the source tree: file path (relative, `/`-separated) → anchor name → region.
pub type AnchorMap = BTreeMap<String, BTreeMap<String, Anchor>>;

enum Marker<'a> {
    Start(&'a str),
    End(&'a str),
}

fn marker(line: &str) -> Option<Marker<'_>> {
    let trimmed = line.trim();
    if let Some(name) = trimmed.strip_prefix("// ANCHOR_END:") {
        Some(Marker::End(name.trim()))
    } else {
        trimmed.strip_prefix("// ANCHOR:").map(|name| Marker::Start(name.trim()))
    }
}

/// Scans every `.rs` file under `root/src` (sorted, so reports are stable).
pub fn scan(root: &Path, diagnostics: &mut Vec<Diagnostic>) -> AnchorMap {
    let mut files = Vec::new();
    collect_rust_files(&root.join("src"), &mut files, diagnostics);
    files.sort();
    let mut anchors = AnchorMap::new();
    for path in files {
        let relative = relative_name(root, &path);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                anchors.insert(relative.clone(), scan_file(&relative, &text, diagnostics));
            }
            Err(error) => diagnostics.push(Diagnostic::new(&relative, 0, format!("cannot read: {error}"))),
        }
    }
    anchors
}

pub fn relative_name(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative.components().map(|part| part.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

fn collect_rust_files(dir: &Path, files: &mut Vec<std::path::PathBuf>, diagnostics: &mut Vec<Diagnostic>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            diagnostics.push(Diagnostic::new(&dir.to_string_lossy(), 0, format!("cannot list: {error}")));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_rust_files(&path, files, diagnostics);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// Finds the regions of one file and reports unbalanced, unnamed and duplicate markers.
pub fn scan_file(file: &str, text: &str, diagnostics: &mut Vec<Diagnostic>) -> BTreeMap<String, Anchor> {
    let lines: Vec<&str> = text.lines().collect();
    let mut open: Vec<(&str, usize)> = Vec::new();
    let mut anchors = BTreeMap::new();
    for (index, line) in lines.iter().enumerate() {
        let line_number = index + 1;
        match marker(line) {
            None => {}
            Some(Marker::Start(name)) => {
                if !is_valid_name(name) {
                    diagnostics.push(Diagnostic::new(
                        file,
                        line_number,
                        format!("anchor name {name:?} must be letters, digits, `_` or `-`"),
                    ));
                } else if anchors.contains_key(name) || open.iter().any(|(open_name, _)| *open_name == name) {
                    diagnostics.push(Diagnostic::new(
                        file,
                        line_number,
                        format!("anchor `{name}` is defined twice in this file"),
                    ));
                } else {
                    open.push((name, index));
                }
            }
            Some(Marker::End(name)) => match open.iter().position(|(open_name, _)| *open_name == name) {
                Some(position) => {
                    let (_, start) = open.remove(position);
                    let lines = lines[start + 1..index]
                        .iter()
                        .filter(|line| marker(line).is_none())
                        .map(|line| line.to_string())
                        .collect();
                    let anchor = Anchor {
                        line: start + 1,
                        lines,
                        end: line_number,
                        whole_function: false,
                        piece_of: None,
                    };
                    anchors.insert(name.to_string(), anchor);
                }
                None => diagnostics.push(Diagnostic::new(
                    file,
                    line_number,
                    format!("ANCHOR_END: {name} has no matching `// ANCHOR: {name}` above it"),
                )),
            },
        }
    }
    for (name, start) in open {
        diagnostics.push(Diagnostic::new(
            file,
            start + 1,
            format!("anchor `{name}` is never closed; add `// ANCHOR_END: {name}`"),
        ));
    }
    mark_whole_functions(&mut anchors);
    anchors
}

/// Marks the whole-function regions, then each region inside one as its piece (inside the
/// outermost, if whole functions nest).
fn mark_whole_functions(anchors: &mut BTreeMap<String, Anchor>) {
    let mut wholes = Vec::new();
    for (name, anchor) in anchors.iter_mut() {
        if let Some(indent) = whole_function_indent(name, &anchor.lines) {
            anchor.whole_function = true;
            wholes.push((name.clone(), anchor.line, anchor.end, indent));
        }
    }
    for (name, anchor) in anchors.iter_mut() {
        let outermost = wholes
            .iter()
            .filter(|(whole, start, end, _)| whole != name && *start < anchor.line && anchor.end < *end)
            .min_by_key(|(_, start, _, _)| *start);
        anchor.piece_of = outermost.map(|(whole, _, _, indent)| (whole.clone(), *indent));
    }
}

/// The indentation of the `fn` line if `lines` are exactly the function `name`: comments and
/// attributes, then `fn name` (after `pub`, `const`, `async`… only), then its body up to the
/// closing brace at the `fn` line's indentation, which ends the region (rustfmt puts it there).
fn whole_function_indent(name: &str, lines: &[String]) -> Option<usize> {
    let code: Vec<&str> = lines.iter().map(String::as_str).filter(|line| !line.trim().is_empty()).collect();
    let signature = code.iter().position(|line| {
        let trimmed = line.trim_start();
        !(trimmed.starts_with("//") || trimmed.starts_with("#["))
    })?;
    let words: Vec<&str> = code[signature].split_whitespace().collect();
    let fn_at = words.iter().position(|word| *word == "fn")?;
    let qualifiers = ["pub", "pub(crate)", "pub(super)", "const", "async", "unsafe", "extern", "\"C\""];
    if !words[..fn_at].iter().all(|word| qualifiers.contains(word)) {
        return None;
    }
    let declared = words.get(fn_at + 1)?.split(['(', '<']).next()?;
    let indent = code[signature].len() - code[signature].trim_start().len();
    let closing = code[signature + 1..].iter().position(|line| {
        line.len() - line.trim_start().len() == indent && line.trim_start().starts_with('}')
    })?;
    let closes_last = signature + 1 + closing == code.len() - 1 && code[code.len() - 1].trim() == "}";
    (declared == name && closes_last).then_some(indent)
}

fn is_valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A line that only says which chapter states compile the next item: `#[cfg(feature = "ch08")]`,
/// `#[cfg(not(feature = "ch08"))]`, `#[cfg(all(unix, feature = "ch08"))]`, `#![cfg(…)]`.
/// `#[cfg(test)]` and `#[cfg(unix)]` are part of the code a reader should see.
pub fn is_state_attribute(line: &str) -> bool {
    let trimmed = line.trim();
    let single = trimmed.ends_with(']') && trimmed.matches('[').count() == 1;
    single
        && (trimmed.starts_with("#![cfg") || (trimmed.starts_with("#[cfg(") && trimmed.contains("feature")))
}

/// The shown text of region lines: chapter-state attributes dropped, blank edges trimmed,
/// `dedent` columns removed (a piece of a whole function), else the common indent.
fn region(lines: &[&str], dedent: Option<usize>) -> String {
    let kept: Vec<&str> = lines.iter().copied().filter(|line| !is_state_attribute(line)).collect();
    let first = kept.iter().position(|line| !line.trim().is_empty());
    let last = kept.iter().rposition(|line| !line.trim().is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return String::new();
    };
    let body = &kept[first..=last];
    let common = body
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let indent = dedent.map_or(common, |dedent| dedent.min(common));
    let mut code = String::new();
    for line in body {
        code.push_str(line.get(indent..).unwrap_or("").trim_end());
        code.push('\n');
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_drops_inner_markers_and_dedents() {
        let text = "fn a() {}\n    // ANCHOR: outer\n    fn b() {\n    // ANCHOR: inner\n        c();\n    // ANCHOR_END: inner\n    }\n    // ANCHOR_END: outer\n";
        let mut diagnostics = Vec::new();
        let anchors = scan_file("src/x.rs", text, &mut diagnostics);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(anchors["outer"].shown(State::FULL), "fn b() {\n    c();\n}\n");
        assert_eq!(anchors["outer"].line, 2);
        assert_eq!(anchors["inner"].shown(State::FULL), "c();\n");
    }

    #[test]
    fn chapter_state_attributes_are_hidden_and_other_attributes_stay() {
        let text = "// ANCHOR: a\n#![cfg(feature = \"ch03\")]\n#[cfg(feature = \"ch08\")]\nfn retry() {}\n#[cfg(all(unix, feature = \"ch04\"))]\n#[cfg(test)]\n#[cfg(unix)]\n#[derive(Debug)]\n#[cfg(feature = \"ch08\")] fn inline() {}\n// ANCHOR_END: a\n";
        let mut diagnostics = Vec::new();
        let anchors = scan_file("src/x.rs", text, &mut diagnostics);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(
            anchors["a"].shown(State::FULL),
            "fn retry() {}\n#[cfg(test)]\n#[cfg(unix)]\n#[derive(Debug)]\nfn inline() {}\n"
        );
        assert_eq!(anchors["a"].shown(State(8)), anchors["a"].shown(State::FULL));
        // Before chapter 8 both items are dropped, with the attributes above the second.
        assert_eq!(anchors["a"].shown(State(5)), "");
        assert_eq!(anchors["a"].dropped_lines(State(5)), 5);
    }

    #[test]
    fn unbalanced_and_duplicate_markers_are_reported_with_lines() {
        let text = "// ANCHOR: a\n// ANCHOR_END: a\n// ANCHOR: a\n// ANCHOR_END: b\n// ANCHOR: c\n";
        let mut diagnostics = Vec::new();
        scan_file("src/x.rs", text, &mut diagnostics);
        let lines: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "src/x.rs:3: anchor `a` is defined twice in this file",
                "src/x.rs:4: ANCHOR_END: b has no matching `// ANCHOR: b` above it",
                "src/x.rs:5: anchor `c` is never closed; add `// ANCHOR_END: c`",
            ]
        );
    }
}
