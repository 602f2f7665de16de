//! Slips of the command line, and the command the user probably meant.
//!
//! Two slips are common enough to answer with the corrected command rather than a rule: a
//! task left unquoted (`-p list files` gives the shell three words, and `-p` takes one), and a
//! first word that is almost a subcommand or a flag without its dashes (`task list`, `session`,
//! `help`). Neither is guessed silently: the run stops with a usage error that prints the
//! corrected command whole, ready to copy, and when the first word might also have been the
//! start of a task (`help me fix the tests`), it shows that reading too. The rules work on the
//! registered table (subcommands, flags that take free text), not on a list of known mistakes.

use super::{named, split_inline_value};
use crate::ch14_main::registry::Registry;
use mini_agent::ch02_loop::command_line::{Flag, SHOW_HELP, SHOW_VERSION, Takes};

/// A plain word where the command takes none, with the words around it.
pub struct Stray<'a> {
    /// The word, as typed.
    pub word: &'a str,
    /// The command's words (after the program name and any subcommand name).
    pub(super) words: &'a [String],
    /// Where `word` is in `words`.
    pub(super) at: usize,
    /// The free-text flag (`-p`) whose value is the word just before this one, as typed.
    pub(super) after_text_value: Option<String>,
}

/// The longest corrected command we print; an argument list can be far longer than a line.
const SHOWN_CHARS: usize = 300;

impl Stray<'_> {
    /// Where the plain words starting at this one end: at the next word that looks like a flag.
    fn run_end(&self) -> usize {
        let flag_like = |word: &String| word.starts_with('-') && word.len() > 1;
        self.words[self.at..].iter().position(flag_like).map_or(self.words.len(), |offset| self.at + offset)
    }

    /// `-p list files` → `mini-agent -p "list files"`: the value before this word, this word and
    /// the plain words after it, quoted as one. `None` unless the word follows a free-text value.
    pub fn quoted_with_value(&self) -> Option<(String, String)> {
        let flag = self.after_text_value.clone()?;
        let end = self.run_end();
        let mut fixed: Vec<String> = self.words[..self.at - 1].iter().map(|word| shell_word(word)).collect();
        fixed.push(quoted(&self.words[self.at - 1..end].join(" ")));
        fixed.extend(self.words[end..].iter().map(|word| shell_word(word)));
        Some((flag, command_line(&fixed)))
    }

    /// `list files` → `mini-agent -p "list files"`: this word and the plain words after it as
    /// the value of `flag`. `None` when the command already has that flag somewhere.
    pub fn as_value_of(&self, flag: &Flag) -> Option<String> {
        let in_group = |typed: &str| {
            let letters = typed.strip_prefix('-').filter(|letters| !letters.starts_with('-'));
            letters.is_some_and(|letters| flag.short.is_some_and(|letter| letters.ends_with(letter)))
        };
        let given = self.words.iter().any(|word| {
            let (typed, _) = split_inline_value(word);
            named(flag, typed) || in_group(typed)
        });
        if given {
            return None;
        }
        let end = self.run_end();
        let typed = flag.short.map_or(flag.long.to_string(), |letter| format!("-{letter}"));
        let mut fixed: Vec<String> = self.words[..self.at].iter().map(|word| shell_word(word)).collect();
        fixed.push(typed);
        fixed.push(quoted(&self.words[self.at..end].join(" ")));
        fixed.extend(self.words[end..].iter().map(|word| shell_word(word)));
        Some(command_line(&fixed))
    }

    /// `task list` → `mini-agent tasks list`, `help` → `mini-agent --help`: the first word
    /// replaced by the subcommand or flag it is close to. `None` for a later word, or one
    /// close to nothing.
    pub fn as_command(&self, registry: &Registry) -> Option<String> {
        if self.at != 0 {
            return None;
        }
        let meant = near_command(self.word, registry)?;
        let mut fixed = vec![meant];
        fixed.extend(self.words[1..].iter().map(|word| shell_word(word)));
        Some(command_line(&fixed))
    }
}

/// The agent's message for a stray word: the corrected command, in the likeliest reading first.
pub fn unexpected_word(stray: &Stray, registry: &Registry) -> String {
    let shown = shown(stray.word);
    if let Some((flag, fixed)) = stray.quoted_with_value() {
        return format!("unexpected argument {shown} after {flag}'s value — quote the whole value: {fixed}");
    }
    let text_flag =
        registry.flags.iter().find(|flag| flag.command.is_empty() && matches!(flag.takes, Takes::Text(_)));
    let as_task = text_flag.and_then(|flag| stray.as_value_of(flag));
    match (stray.as_command(registry), as_task) {
        (Some(command), Some(task)) => {
            format!("unknown command {shown} — did you mean: {command}? (to run one task, write: {task})")
        }
        (Some(command), None) => format!("unknown command {shown} — did you mean: {command}?"),
        (None, Some(task)) => format!("unexpected argument {shown} — to run one task, write: {task}"),
        (None, None) => format!("unexpected argument {shown} — put the whole task in one quoted -p value"),
    }
}

/// The subcommand (`tasks`) or flag (`--help`) a first word stands for: a subcommand within a
/// typo of it, `help` or `version` within a typo, or any agent flag's name without its dashes.
pub fn near_command(word: &str, registry: &Registry) -> Option<String> {
    let mut subcommands: Vec<&str> = registry
        .flags
        .iter()
        .filter_map(|flag| flag.command.split(' ').next().filter(|name| !name.is_empty()))
        .collect();
    subcommands.dedup();
    let words_for_flags = [SHOW_HELP.long, SHOW_VERSION.long].map(|long| (&long[2..], long));
    let candidates = subcommands.iter().map(|name| (*name, *name)).chain(words_for_flags);
    let close = candidates
        .map(|(name, meant)| (typo_distance(word, name), meant))
        .filter(|(distance, meant)| *distance <= typo_allowance(meant))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, meant)| meant.to_string());
    close.or_else(|| {
        let dashless = |flag: &&Flag| flag.command.is_empty() && flag.long.strip_prefix("--") == Some(word);
        registry.flags.iter().find(dashless).map(|flag| flag.long.to_string())
    })
}

/// How many edits a word may be from `name` and still read as a typo of it: one for a short
/// name (`task` → `tasks`), two for a longer one (`sesions` → `sessions`).
pub fn typo_allowance(name: &str) -> usize {
    if name.trim_start_matches('-').chars().count() <= 5 { 1 } else { 2 }
}

/// Edits from `a` to `b`, where swapping two neighbours (`hlep`) counts as one: the
/// optimal-string-alignment distance.
pub fn typo_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut table = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in table.iter_mut().enumerate() {
        row[0] = i;
    }
    table[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (table[i - 1][j] + 1).min(table[i][j - 1] + 1).min(table[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(table[i - 2][j - 2] + 1);
            }
            table[i][j] = best;
        }
    }
    table[a.len()][b.len()]
}

/// A word the user typed, for a message: in single quotes, at most 40 characters, control
/// characters as `?`.
pub fn shown(word: &str) -> String {
    let word: String = mini_agent::text::take_chars(word, 40)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    format!("'{word}'")
}

/// `mini-agent` and the words, cut to a line or so.
fn command_line(words: &[String]) -> String {
    mini_agent::text::shorten(&format!("mini-agent {}", words.join(" ")), SHOWN_CHARS)
}

/// A word as a POSIX shell reads it back: bare when it is plain, else in double quotes with
/// `"`, `\`, `$` and `` ` `` escaped. Control characters (an escape sequence in an argument)
/// are shown as `?`, so the hint cannot restyle the terminal.
pub fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_alphanumeric() || "-_./=:@%+,".contains(c);
    match !word.is_empty() && word.chars().all(plain) {
        true => word.to_string(),
        false => quoted(word),
    }
}

/// `word` in double quotes, as a POSIX shell reads it back (see [`shell_word`]); a task is
/// always shown quoted, so that the hint shows the habit.
pub fn quoted(word: &str) -> String {
    let mut quoted = String::from("\"");
    for c in word.chars() {
        match c {
            '"' | '\\' | '$' | '`' => {
                quoted.push('\\');
                quoted.push(c);
            }
            c if c.is_control() => quoted.push('?'),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}
