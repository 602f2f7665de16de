//! Words for people: the small text helpers every chapter shares, compiled in every state.
//!
//! One copy of each: a count with its noun (`plural`). Later chapters add what they need
//! here rather than writing their own.

/// `1 turn`, `2 turns`, `0 bytes`: a count with its noun, for people. Nouns ending in
/// `s`, `x`, `ch` or `sh` take `es` (`1 match`, `2 matches`).
pub fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        return format!("1 {noun}");
    }
    let ending = if ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end)) { "es" } else { "s" };
    format!("{count} {noun}{ending}")
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
}
