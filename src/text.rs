//! Words for people: the small text helpers every chapter shares, compiled in every state.
//!
//! One copy of each: a count with its noun ([`plural`]), text cut to a number of characters
//! ([`take_chars`], [`shorten`]), to its first line ([`first_line`]) or put onto one
//! ([`one_line`]), and a byte limit that does not split a character ([`cut_bytes`]). Later
//! chapters add what they need here rather than writing their own.

/// `text` on one line: every run of blank space, line breaks included, becomes one space.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `1 turn`, `2 turns`, `0 bytes`: a count with its noun, for people. Nouns ending in
/// `s`, `x`, `ch` or `sh` take `es` (`1 match`, `2 matches`).
pub fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        return format!("1 {noun}");
    }
    let ending = if ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end)) { "es" } else { "s" };
    format!("{count} {noun}{ending}")
}

/// The first `max_chars` characters of `text` (all of it when shorter), with no mark.
pub fn take_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

/// At most `max_chars` characters of `text`, then `…` when something was cut.
pub fn shorten(text: &str, max_chars: usize) -> String {
    let head = take_chars(text, max_chars);
    if head.len() < text.len() { format!("{head}…") } else { text.to_owned() }
}

/// The first line of `text` (blank space around it trimmed), at most `max_chars` characters;
/// `…` says that something was left out: the rest of the line, or the lines after it.
pub fn first_line(text: &str, max_chars: usize) -> String {
    let mut lines = text.trim().lines();
    let first = lines.next().unwrap_or_default();
    let mut line: String = first.chars().take(max_chars).collect();
    if lines.next().is_some() || first.chars().nth(max_chars).is_some() {
        line.push('…');
    }
    line
}

/// The longest start of `text` of at most `max_bytes` bytes that does not split a character.
pub fn cut_bytes(text: &str, max_bytes: usize) -> &str {
    let mut end = max_bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text` as its first `head` and last `tail` characters and the count of those between,
/// or `None` when it is short enough to show whole (at most `whole` characters).
pub fn head_and_tail(text: &str, whole: usize, head: usize, tail: usize) -> Option<(&str, usize, &str)> {
    let count = text.chars().count();
    if count <= whole || count <= head + tail {
        return None;
    }
    let byte_at = |chars: usize| text.char_indices().nth(chars).map_or(text.len(), |(at, _)| at);
    Some((&text[..byte_at(head)], count - head - tail, &text[byte_at(count - tail)..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_their_plural() {
        assert_eq!(plural(1, "turn"), "1 turn");
        assert_eq!(plural(0, "byte"), "0 bytes");
        assert_eq!(plural(2, "model call"), "2 model calls");
        assert_eq!(plural(3, "match"), "3 matches");
    }

    #[test]
    fn text_is_cut_by_characters_lines_or_bytes() {
        assert_eq!(shorten("héllo", 2), "hé…");
        assert_eq!(shorten("héllo", 5), "héllo");
        assert_eq!(take_chars("héllo", 2), "hé");
        assert_eq!(take_chars("hé", 9), "hé");
        assert_eq!(first_line("  cargo test\nmore", 80), "cargo test…");
        assert_eq!(first_line("abcdef", 3), "abc…");
        assert_eq!(first_line("abc", 3), "abc");
        assert_eq!(first_line("", 3), "");
        // The lines after the first are marked as left out, like the rest of a long line.
        assert_eq!(first_line("fix it\nthen test", 100), "fix it…");
        assert_eq!(cut_bytes("ééé", 3), "é");
        assert_eq!(cut_bytes("abc", 10), "abc");
        assert_eq!(head_and_tail("ab…yz", 4, 2, 2), Some(("ab", 1, "yz")));
        assert_eq!(head_and_tail("ab…yz", 5, 2, 2), None);
        assert_eq!(head_and_tail("abcd", 0, 2, 2), None);
    }
}
