//! Chapter 3 — globs in linear time.
//!
//! `list_files` and `search` take a glob from the model, and the model is untrusted input. The
//! textbook recursive matcher tries every split at every `*`: `*a*a*a*a*a*a*a*ab` against a
//! long name of `a`s backtracks for minutes. So the pattern is compiled into a tiny automaton
//! (one state per pattern token) and the path is run through it once, keeping the *set* of
//! states reachable so far. Each character of the path costs one pass over the states, so
//! matching is O(n·m) whatever the pattern, with no recursion and no backtracking.
//!
//! The rules are those of the schema: `*` and `?` stay within one directory, `**` crosses
//! directories (and `**/` may stand for no directory at all), anything else is literal. A
//! pattern without `/` matches file names at any depth (`*.rs`).

// ANCHOR: glob
/// One token of a compiled pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Char(char),
    /// `?`: one character other than `/`.
    One,
    /// `*`: any run of characters without `/`.
    Star,
    /// `**`: any run of characters.
    Stars,
    /// Put before the `**` of `**/`, which may also match nothing at all (`**/*.rs` matches
    /// `main.rs`): reading no character, it leads both into the `**` and past its `/`.
    Optional,
}

/// A glob, as the model writes it for `list_files` and `search`.
pub(crate) struct Glob;

impl Glob {
    /// Refuses patterns too long to be a reasonable filter (the matcher itself is linear).
    pub fn check(pattern: &str) -> Result<(), String> {
        if pattern.len() > 300 {
            return Err(format!("pattern is {} bytes long; use at most 300", pattern.len()));
        }
        Ok(())
    }

    pub fn matches(pattern: &str, path: &str) -> bool {
        let subject = if pattern.contains('/') { path } else { path.rsplit('/').next().unwrap_or(path) };
        run(&compile(pattern.trim_start_matches("./")), subject)
    }
}

// ANCHOR_END: glob
fn compile(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::with_capacity(chars.len() + 1);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                i += 1;
                if chars.get(i + 1) == Some(&'/') {
                    tokens.push(Token::Optional);
                }
                tokens.push(Token::Stars);
            }
            '*' => tokens.push(Token::Star),
            '?' => tokens.push(Token::One),
            c => tokens.push(Token::Char(c)),
        }
        i += 1;
    }
    tokens
}

// ANCHOR: glob_run
/// Runs `text` through the automaton of `tokens`: state `i` means "tokens before `i` have
/// matched the text read so far". O(len(text) · len(tokens)) time, O(len(tokens)) memory.
fn run(tokens: &[Token], text: &str) -> bool {
    let mut states = vec![false; tokens.len() + 1];
    let mut next = vec![false; tokens.len() + 1];
    states[0] = true;
    close(tokens, &mut states);
    for c in text.chars() {
        next.fill(false);
        for (i, token) in tokens.iter().enumerate() {
            if !states[i] {
                continue;
            }
            match *token {
                Token::Char(wanted) if wanted == c => next[i + 1] = true,
                Token::One if c != '/' => next[i + 1] = true,
                Token::Star if c != '/' => next[i] = true,
                Token::Stars => next[i] = true,
                _ => {}
            }
        }
        std::mem::swap(&mut states, &mut next);
        if !states.contains(&true) {
            return false;
        }
        close(tokens, &mut states);
    }
    states[tokens.len()]
}
// ANCHOR_END: glob_run

// ANCHOR: glob_close
/// Adds the states reachable without reading a character: past any star (it may match
/// nothing), and from an `Optional` into its `**` or past the whole `**/`. Tokens only lead
/// forward, so one pass in order reaches everything.
fn close(tokens: &[Token], states: &mut [bool]) {
    for i in 0..tokens.len() {
        if !states[i] {
            continue;
        }
        match tokens[i] {
            Token::Star | Token::Stars => states[i + 1] = true,
            Token::Optional => {
                states[i + 1] = true;
                states[i + 3] = true; // past `**` (i + 1) and `/` (i + 2)
            }
            _ => {}
        }
    }
}
// ANCHOR_END: glob_close

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn the_rules_of_the_schema() {
        assert!(Glob::matches("**/*.rs", "main.rs"));
        assert!(Glob::matches("**/*.rs", "a/b/main.rs"));
        assert!(Glob::matches("src/**", "src/a/b"));
        assert!(Glob::matches("src/**/mod.rs", "src/mod.rs"));
        assert!(Glob::matches("src/**/mod.rs", "src/a/b/mod.rs"));
        assert!(!Glob::matches("src/**/mod.rs", "src/a/bmod.rs"));
        assert!(!Glob::matches("src/*", "src/a/b"));
        assert!(Glob::matches("src/*", "src/a"));
        assert!(Glob::matches("?.md", "docs/a.md"));
        assert!(!Glob::matches("?.md", "docs/ab.md"));
        assert!(!Glob::matches("*.md", "a.rs"));
        assert!(Glob::matches("*", "anything"));
        assert!(Glob::matches("", ""));
        assert!(!Glob::matches("a", ""));
        assert!(Glob::matches("a*b*c", "aXXbYYc"));
        assert!(!Glob::matches("a*b*c", "aXXbYYcd"));
        assert!(Glob::matches("./src/*.rs", "src/x.rs"));
        assert!(Glob::matches("***/x", "a/b/x"));
        assert!(!Glob::matches("***/x", "x"));
    }

    /// Compares with the obvious (exponential) definition on many small cases.
    #[test]
    fn agrees_with_the_recursive_definition() {
        fn slow(p: &[char], t: &[char]) -> bool {
            match p {
                [] => t.is_empty(),
                ['*', '*', rest @ ..] => {
                    if let ['/', after @ ..] = rest
                        && slow(after, t)
                    {
                        return true;
                    }
                    (0..=t.len()).any(|skip| slow(rest, &t[skip..]))
                }
                ['*', rest @ ..] => {
                    let within = t.iter().position(|&c| c == '/').unwrap_or(t.len());
                    (0..=within).any(|skip| slow(rest, &t[skip..]))
                }
                ['?', rest @ ..] => t.first().is_some_and(|&c| c != '/') && slow(rest, &t[1..]),
                [c, rest @ ..] => t.first() == Some(c) && slow(rest, &t[1..]),
            }
        }
        let alphabet = ['a', 'b', '/', '*', '?'];
        let mut random = crate::random::XorShift::new(0x9e3779b97f4a7c15);
        let mut pick = |n: usize| random.below(n);
        for _ in 0..20_000 {
            let pattern: String = (0..pick(7)).map(|_| alphabet[pick(5)]).collect();
            let text: String = (0..pick(7)).map(|_| alphabet[pick(3)]).collect();
            let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
            assert_eq!(run(&compile(&pattern), &text), slow(&p, &t), "{pattern:?} against {text:?}");
        }
    }

    #[test]
    fn backtracking_patterns_finish_at_once() {
        let name = "a".repeat(10_000);
        for pattern in ["*a*a*a*a*a*a*a*ab", "**a**a**a**a**a**a**a**ab", &format!("{}b", "*a".repeat(100))] {
            let started = Instant::now();
            assert!(!Glob::matches(pattern, &name));
            let took = started.elapsed();
            // A backtracking matcher would never return here: no clock needed to tell.
            println!("figure: glob {:.20}… against 10,000 `a`s: {took:?}", pattern);
        }
    }
}
