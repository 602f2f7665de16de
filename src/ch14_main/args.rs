//! The command line, parsed by hand, against the table the chapters registered.
//!
//! A parser is a small state machine over the words: take one, decide whether it is a flag, a
//! flag that needs a value (`--model gpt-4o` or `--model=gpt-4o`), or a plain word, and record
//! it. Which flags exist is not written here: it is the table of the chapters present (chapter
//! 2's `Flag`s, registered by each chapter), so chapter 5's state knows `-c` and not `--stream`,
//! and a chapter adds a flag without touching this file. Writing it by hand keeps the binary
//! small, shows that there is no magic in it, and lets every mistake get a message that says
//! what to do next (an unknown flag names the nearest known one of this state). The parser
//! never reads files or the environment: it turns words into [`Settings`], which keeps it easy
//! to test.

use super::registry::Registry;
use mini_agent::ch02_loop::command_line::{Flag, SHOW_HELP, SHOW_VERSION, Settings, Takes};
pub use slips::Stray;
use std::fmt::Write as _;

pub mod slips;

// ANCHOR: commands
/// What the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// The agent: one task with `-p`, or the REPL.
    Agent(Settings),
    /// A subcommand (`eval`, `sessions`, `tasks`) and the words after its name.
    Sub(&'static str, Vec<String>),
    Help,
    Version,
}
// ANCHOR_END: commands

// ANCHOR: parse
/// Parses the words after the program name.
pub fn parse(words: &[String], registry: &Registry) -> Result<Command, String> {
    if let Some(name) = words.first().and_then(|word| registry.subcommand(word)) {
        return Ok(Command::Sub(name, words[1..].to_vec()));
    }
    let parsed = parse_flags(words, "", registry, |stray| Err(slips::unexpected_word(stray, registry)))?;
    match parsed {
        Parsed::Help => Ok(Command::Help),
        Parsed::Version => Ok(Command::Version),
        Parsed::Settings(settings) => {
            for check in &registry.checks {
                check(&settings)?;
            }
            Ok(Command::Agent(settings))
        }
    }
}

/// What the words of one command said.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Settings(Settings),
    Help,
    Version,
}

/// Parses `words` against the flags of `command` (`""`: the agent's own). A word that is no
/// flag goes to `word` (with the words around it, for a message), which keeps it or says why not.
pub fn parse_flags(
    words: &[String],
    command: &str,
    registry: &Registry,
    mut word: impl FnMut(&Stray) -> Result<(), String>,
) -> Result<Parsed, String> {
    let flags: Vec<&Flag> = registry.flags.iter().filter(|flag| flag.command == command).collect();
    let mut settings = Settings::default();
    let mut words = Words::new(words, &flags);
    while let Some(next) = words.next_word() {
        if words.expand_short_flags(&next)? {
            continue;
        }
        let (typed, inline) = split_inline_value(&next);
        let Some(flag) = flags.iter().find(|flag| named(flag, typed)) else {
            if typed.starts_with('-') && typed != "-" {
                let known: Vec<&str> = flags.iter().map(|flag| flag.long).collect();
                return Err(unknown_flag(typed, &known));
            }
            word(&words.stray(&next))?;
            continue;
        };
        // ANCHOR_END: parse
        // ANCHOR: parse_flags
        if flag.long == SHOW_HELP.long {
            return Ok(Parsed::Help);
        }
        if flag.long == SHOW_VERSION.long {
            return Ok(Parsed::Version);
        }
        let value = match flag.takes {
            Takes::Nothing if inline.is_some() => return Err(format!("{typed} takes no value")),
            Takes::Nothing => None,
            // A value given twice (`-p a -p b`) is a mistake, not a choice to make silently.
            _ if settings.has(flag) => return Err(format!("{} was given twice; give it once", flag.long)),
            Takes::Text(_) => Some(words.value(typed, inline)?),
            Takes::NonEmpty(_) => Some(non_empty(typed, words.value(typed, inline)?)?),
            Takes::Count(_, max) => Some(count(typed, words.value(typed, inline)?, max)?),
            Takes::OneOf(_, names) => Some(one_of(typed, words.value(typed, inline)?, names)?),
        };
        if matches!(flag.takes, Takes::Text(_)) {
            words.text_value_ends = Some((words.taken, typed.to_string()));
        }
        settings.set(flag, value);
    }
    Ok(Parsed::Settings(settings))
}
// ANCHOR_END: parse_flags

/// The flags of subcommand `command` (`"tasks run"`, `"serve"`) out of `words`, and the words
/// left for the agent's own parser (a subcommand that runs the agent takes its flags too).
#[cfg(feature = "ch15")]
pub fn split_flags(
    words: &[String],
    command: &str,
    registry: &Registry,
) -> Result<(Settings, Vec<String>), String> {
    let mut own = Settings::default();
    let mut rest = Vec::new();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let (typed, inline) = split_inline_value(word);
        let Some(flag) = registry.flags.iter().find(|flag| flag.command == command && named(flag, typed))
        else {
            rest.push(word.clone());
            continue;
        };
        let mut value = || -> Result<String, String> {
            match inline {
                Some(value) => Ok(value.to_string()),
                None => words.next().cloned().ok_or(format!("{typed} needs a value")),
            }
        };
        let value = match flag.takes {
            Takes::Nothing if inline.is_some() => return Err(format!("{typed} takes no value")),
            Takes::Nothing => None,
            _ if own.has(flag) => return Err(format!("{} was given twice; give it once", flag.long)),
            Takes::Text(_) => Some(value()?),
            Takes::NonEmpty(_) => Some(non_empty(typed, value()?)?),
            Takes::Count(_, max) => Some(count(typed, value()?, max)?),
            Takes::OneOf(_, names) => Some(one_of(typed, value()?, names)?),
        };
        own.set(flag, value);
    }
    Ok((own, rest))
}

/// `--model` or its one-letter form `-m`.
fn named(flag: &Flag, typed: &str) -> bool {
    typed == flag.long
        || flag.short.is_some_and(|letter| typed.strip_prefix('-') == Some(&letter.to_string()))
}

/// The words still to read, so that a flag can take the next one as its value.
struct Words<'a> {
    all: &'a [String],
    rest: std::slice::Iter<'a, String>,
    /// Short flags split out of a combined word such as `-vp`, next first.
    pending: Vec<String>,
    /// The one-letter flags of this command, and which of them take a value.
    shorts: Vec<(char, bool)>,
    /// How many of the words have been read (not counting `pending`).
    taken: usize,
    /// How many had been read when the last free-text value (`-p`'s) ended, and its flag as typed.
    text_value_ends: Option<(usize, String)>,
}

impl<'a> Words<'a> {
    fn new(words: &'a [String], flags: &[&Flag]) -> Self {
        let shorts =
            flags.iter().filter_map(|flag| Some((flag.short?, flag.takes != Takes::Nothing))).collect();
        Words { all: words, rest: words.iter(), pending: Vec::new(), shorts, taken: 0, text_value_ends: None }
    }

    /// `word`, just read, as a stray word with the words around it.
    fn stray<'w>(&self, word: &'w str) -> Stray<'w>
    where
        'a: 'w,
    {
        let at = self.taken - 1;
        let after_text_value =
            self.text_value_ends.as_ref().filter(|(taken, _)| *taken == at).map(|(_, flag)| flag.clone());
        Stray { word, words: self.all, at, after_text_value }
    }

    fn next_word(&mut self) -> Option<String> {
        self.pending.pop().or_else(|| {
            let next = self.rest.next().cloned();
            self.taken += usize::from(next.is_some());
            next
        })
    }

    /// `-vp` → `-v`, `-p`: true when `word` was such a group and its flags are now next.
    /// A group that cannot be split is an error that names the rule.
    fn expand_short_flags(&mut self, word: &str) -> Result<bool, String> {
        let Some(letters) = word.strip_prefix('-').filter(|rest| !rest.starts_with('-')) else {
            return Ok(false);
        };
        let known = |c: char| self.shorts.iter().any(|(letter, _)| *letter == c);
        if letters.chars().count() < 2 || !letters.starts_with(known) {
            return Ok(false);
        }
        let takes_value = |c: char| self.shorts.iter().any(|(letter, value)| *letter == c && *value);
        let all: Vec<String> = self.shorts.iter().map(|(letter, _)| format!("-{letter}")).collect();
        let valued: Vec<String> =
            self.shorts.iter().filter(|(_, value)| *value).map(|(letter, _)| format!("-{letter}")).collect();
        let rule = format!(
            "one-letter flags combine from {}, a value-taking one ({}) last, as in -vp \"task\"",
            all.join(" "),
            valued.join(", ")
        );
        if let Some(unknown) = letters.chars().find(|c| !known(*c)) {
            return Err(format!("unknown flag -{unknown} in {word}: {rule}"));
        }
        if let Some(early) = letters.chars().rev().skip(1).find(|c| takes_value(*c)) {
            return Err(format!("-{early} takes a value, so it must come last in {word}: {rule}"));
        }
        self.pending.extend(letters.chars().rev().map(|c| format!("-{c}")));
        Ok(true)
    }

    /// The value of `flag`: the `=value` part, else the next word. A next word that is itself
    /// a flag means the value was forgotten (`-p --allow-write`), so we say that instead.
    fn value(&mut self, flag: &str, inline: Option<&str>) -> Result<String, String> {
        if let Some(value) = inline {
            return Ok(value.to_string());
        }
        match self.next_word() {
            Some(next) if next.starts_with("--") && next.len() > 2 => {
                Err(format!("{flag} needs a value, but the next word is the flag {next}"))
            }
            Some(next) => Ok(next),
            None => Err(format!("{flag} needs a value")),
        }
    }
}

/// `--model=gpt-4o` → (`--model`, Some(`gpt-4o`)). Short flags and plain words stay whole.
fn split_inline_value(word: &str) -> (&str, Option<&str>) {
    match word.strip_prefix("--").and_then(|rest| rest.split_once('=')) {
        Some((name, value)) => (&word[..name.len() + 2], Some(value)),
        None => (word, None),
    }
}

/// A value that may not be blank (`--model ""` would send a request for no model).
fn non_empty(flag: &str, value: String) -> Result<String, String> {
    match value.trim().is_empty() {
        true => Err(format!("{flag} needs a value, and '{value}' is empty")),
        false => Ok(value),
    }
}

/// A positive whole number such as `--max-turns 20`.
fn count(flag: &str, text: String, max: usize) -> Result<String, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n.to_string()),
        _ => Err(format!("{flag} expects a whole number from 1 to {max}, got '{text}'")),
    }
}

/// One of a few words (`--api openai`).
fn one_of(flag: &str, value: String, names: &[&str]) -> Result<String, String> {
    if names.contains(&value.as_str()) {
        return Ok(value);
    }
    let choices = match names {
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
        [] => "nothing".into(),
    };
    Err(format!("{flag} must be {choices}, got {value:?}"))
}

fn unknown_flag(flag: &str, known: &[&str]) -> String {
    let mut message = format!("unknown flag {flag}");
    match nearest(flag, known) {
        Some(near) => {
            let _ = write!(message, " — did you mean {near}?");
        }
        None => message.push_str(" — see mini-agent --help"),
    }
    message
}

// ANCHOR: nearest
/// The known flag closest to a mistyped one, if it is close enough to be a typo.
fn nearest<'a>(flag: &str, known: &[&'a str]) -> Option<&'a str> {
    let typed = if flag.starts_with("--") { flag.to_string() } else { format!("-{flag}") };
    known
        .iter()
        .map(|candidate| (edit_distance(&typed, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= 2.max(candidate.len() / 4))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance: the fewest single-character edits from `a` to `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}
// ANCHOR_END: nearest

#[cfg(test)]
mod tests;
