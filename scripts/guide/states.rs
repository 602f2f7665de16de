//! Chapter states in listings: chapter N shows the code as chapter N leaves it.
//!
//! The source holds every chapter at once; `#[cfg(feature = "ch08")]` marks what chapter 8 adds
//! and `#[cfg(not(feature = "ch08"))]` what chapter 8 replaces. A listing in chapter 2 that
//! showed chapter 8's `Retry` variant would describe a program the reader has not built yet,
//! so the view of a region for chapter N drops every item whose attribute says it is not in
//! state N: the attribute line, the comments and attributes directly above it, and the item
//! (its first line and, if brackets open there, every line until they close). Attributes of
//! items that are in the state are hidden, as before: the prose says which chapter added them.
//! Predicates other than `feature = "…"` (`unix`, `test`) are assumed true. The preface and
//! the appendix show the finished program. Brackets are counted outside strings, character
//! literals and comments, which is all this codebase needs; no parser is pulled in for it.

/// Which chapter state a listing shows: a chapter number, or [`State::FULL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct State(pub u32);

impl State {
    /// The finished program (`--features full`), shown by the preface and the appendix.
    pub const FULL: State = State(99);

    /// `02-model.md` → chapter 2's state; `00-preface.md`, `99-appendix.md` → the full program.
    pub fn of_chapter(name: &str) -> State {
        match name.get(..2).and_then(|digits| digits.parse::<u32>().ok()) {
            Some(number) if number > 0 && number < 99 => State(number),
            _ => State::FULL,
        }
    }

    fn has_feature(self, feature: &str) -> bool {
        match feature.strip_prefix("ch").and_then(|digits| digits.parse::<u32>().ok()) {
            Some(chapter) => chapter <= self.0,
            None if feature == "full" => self == State::FULL,
            None => true,
        }
    }
}

/// A line that starts with a chapter-state attribute `#[cfg(… feature …)]`: its predicate and
/// the code after it on the same line (usually none). `#![cfg…]` is not an item attribute.
pub fn attribute(line: &str) -> Option<(&str, &str)> {
    let trimmed = line.trim_start();
    let inner = trimmed.strip_prefix("#[cfg(")?;
    let mut depth = 1;
    for (at, c) in inner.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            let predicate = &inner[..at];
            let rest = inner[at + 1..].strip_prefix(']')?;
            return predicate.contains("feature").then_some((predicate, rest));
        }
    }
    None
}

/// Whether a cfg predicate holds in `state`, other predicates assumed true.
pub fn holds(predicate: &str, state: State) -> bool {
    evaluate(predicate, state).0
}

fn evaluate(text: &str, state: State) -> (bool, &str) {
    let text = text.trim_start();
    for (word, combine) in [("all(", 0), ("any(", 1), ("not(", 2)] {
        if let Some(mut rest) = text.strip_prefix(word) {
            let mut values = Vec::new();
            loop {
                rest = rest.trim_start();
                if let Some(after) = rest.strip_prefix(')') {
                    rest = after;
                    break;
                }
                if rest.is_empty() {
                    break;
                }
                let (value, after) = evaluate(rest, state);
                values.push(value);
                rest = after.trim_start().strip_prefix(',').unwrap_or(after);
            }
            let value = match combine {
                0 => values.iter().all(|value| *value),
                1 => values.iter().any(|value| *value),
                _ => !values.first().copied().unwrap_or(false),
            };
            return (value, rest);
        }
    }
    let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len());
    let (name, rest) = text.split_at(end.max(1).min(text.len()));
    if name == "feature" {
        let rest = rest.trim_start().strip_prefix('=').unwrap_or(rest).trim_start();
        if let Some(quoted) = rest.strip_prefix('"') {
            let close = quoted.find('"').unwrap_or(quoted.len());
            let after = quoted.get(close + 1..).unwrap_or("");
            return (state.has_feature(&quoted[..close]), after);
        }
    }
    (true, rest)
}

/// The lines of a region as chapter state `state` has them: items not in the state dropped,
/// attributes of the items that are, hidden (an attribute sharing its item's line is cut off).
pub fn view(lines: &[&str], state: State) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        let Some((predicate, rest)) = attribute(line) else {
            out.push(line.to_string());
            index += 1;
            continue;
        };
        if holds(predicate, state) {
            if !rest.trim().is_empty() {
                let indent = &line[..line.len() - line.trim_start().len()];
                out.push(format!("{indent}{}", rest.trim_start()));
            }
            index += 1;
            continue;
        }
        while out.last().is_some_and(|above| belongs_to_next(above)) {
            out.pop();
        }
        index = item_end(lines, index, rest);
        // Dropping an item between two blank lines leaves one.
        if out.last().is_some_and(|above| above.trim().is_empty())
            && lines.get(index).is_some_and(|next| next.trim().is_empty())
        {
            index += 1;
        }
    }
    out
}

/// A comment or an attribute alone on its line: it describes the item below it.
fn belongs_to_next(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.starts_with("//") || (trimmed.starts_with("#[") && trimmed.ends_with(']'))
}

/// The index just past the item whose (false) attribute is on line `start`; `rest` is the
/// code after the attribute on that line.
fn item_end(lines: &[&str], start: usize, rest: &str) -> usize {
    let mut scanner = Scanner::default();
    let mut index = start + 1;
    let mut last = rest.trim();
    if last.is_empty() {
        // Further attributes and comments before the item's first line belong to it.
        while index < lines.len() && (belongs_to_next(lines[index]) || attribute(lines[index]).is_some()) {
            index += 1;
        }
        let Some(first) = lines.get(index) else { return index };
        last = first.trim();
        index += 1;
    }
    scanner.feed(last);
    while index < lines.len() && (scanner.depth > 0 || !ends_item(&scanner, last)) {
        let next = lines[index].trim();
        if scanner.depth <= 0 && (next.is_empty() || next.starts_with(['}', ')', ']'])) {
            break;
        }
        scanner.feed(next);
        last = next;
        index += 1;
    }
    index
}

/// At depth 0, a line ending in `,`, `;` or `}` ends an item; `=>`, `=`, `->` and the like do not.
fn ends_item(scanner: &Scanner, line: &str) -> bool {
    let code = line.split(" //").next().unwrap_or(line).trim_end();
    scanner.string == Quote::None && code.ends_with([',', ';', '}'])
}

#[derive(Default, PartialEq, Debug)]
enum Quote {
    #[default]
    None,
    Plain,
    Raw(usize),
}

/// Bracket depth across lines, outside strings, character literals and comments.
#[derive(Default)]
struct Scanner {
    depth: i32,
    block_comment: u32,
    string: Quote,
}

impl Scanner {
    fn feed(&mut self, line: &str) {
        let chars: Vec<char> = line.chars().collect();
        let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if self.block_comment > 0 {
                if c == '*' && at(i + 1) == '/' {
                    self.block_comment -= 1;
                    i += 1;
                } else if c == '/' && at(i + 1) == '*' {
                    self.block_comment += 1;
                    i += 1;
                }
                i += 1;
                continue;
            }
            match self.string {
                Quote::Plain => {
                    match c {
                        '\\' => i += 1,
                        '"' => self.string = Quote::None,
                        _ => {}
                    }
                    i += 1;
                    continue;
                }
                Quote::Raw(hashes) => {
                    if c == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                        self.string = Quote::None;
                        i += hashes;
                    }
                    i += 1;
                    continue;
                }
                Quote::None => {}
            }
            let word_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
            match c {
                '/' if at(i + 1) == '/' => break,
                '/' if at(i + 1) == '*' => {
                    self.block_comment += 1;
                    i += 1;
                }
                '"' => self.string = Quote::Plain,
                'r' if !word_before
                    || (i == 1 && chars[0] == 'b')
                    || (i > 1 && chars[i - 1] == 'b' && !chars[i - 2].is_alphanumeric()) =>
                {
                    let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
                    if at(i + 1 + hashes) == '"' {
                        self.string = Quote::Raw(hashes);
                        i += 1 + hashes;
                    }
                }
                '\'' => {
                    if at(i + 1) == '\\' {
                        i += 2;
                        while i < chars.len() && chars[i] != '\'' {
                            i += 1;
                        }
                    } else if at(i + 2) == '\'' {
                        i += 2;
                    }
                }
                '(' | '[' | '{' => self.depth += 1,
                ')' | ']' | '}' => self.depth -= 1,
                _ => {}
            }
            i += 1;
        }
    }
}
