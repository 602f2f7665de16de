//! The command line, parsed by hand.
//!
//! A parser is a small state machine over `std::env::args()`: take one word, decide whether
//! it is a flag, a flag that needs a value (`--model gpt-4o` or `--model=gpt-4o`), or a
//! subcommand, and fill one plain struct. Writing it by hand keeps the binary small and shows
//! that there is no magic in it; it also lets every mistake get a message that says what to
//! do next (an unknown flag names the nearest known one). The parser never reads files or the
//! environment: it only turns words into an [`Args`] value, which keeps it easy to test.

use std::fmt::Write as _;
use std::path::PathBuf;

// ANCHOR: args
/// Where the one-shot prompt comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompt {
    Text(String),
    /// `-p -`: read the whole prompt from standard input.
    Stdin,
}

/// Everything the agent's own command line can say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub prompt: Option<Prompt>,
    pub continue_latest: bool,
    pub resume: Option<String>,
    pub status: bool,
    pub acknowledge_unknown: bool,
    pub verbose: bool,
    pub max_turns: usize,
    pub root: Option<PathBuf>,
    #[cfg(feature = "ch12")]
    pub allow_write: bool,
    #[cfg(feature = "ch12")]
    pub allow_shell: bool,
    #[cfg(feature = "ch11")]
    pub stream: bool,
    #[cfg(feature = "ch14")]
    pub json: bool,
    pub demo: bool,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// `--api openai|anthropic`: the model's wire format (chapter 19).
    #[cfg(feature = "ch19")]
    pub api: Option<String>,
    /// `--trust-hooks`: run the workspace's hooks without asking (chapter 16).
    #[cfg(feature = "ch16")]
    pub trust_hooks: bool,
    #[cfg(feature = "ch18")]
    pub mcp: McpFlags,
}
// ANCHOR_END: args

// ANCHOR: commands
/// `mini-agent eval [DIR] [--repeats N]`.
#[cfg(feature = "ch13")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalOptions {
    pub dir: Option<PathBuf>,
    pub repeats: usize,
    pub verbose: bool,
}

/// What the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Agent(Options),
    #[cfg(feature = "ch13")]
    Eval(EvalOptions),
    /// `mini-agent sessions [--root DIR]`: the sessions of a root, as `/list` shows them.
    #[cfg(feature = "ch14")]
    Sessions {
        root: Option<PathBuf>,
    },
    /// `mini-agent tasks …` (chapter 15): the words after `tasks`, parsed by `cli/tasks.rs`.
    #[cfg(feature = "ch15")]
    Tasks(Vec<String>),
    Help,
    Version,
}
// ANCHOR_END: commands

pub const DEFAULT_MAX_TURNS: usize = 50;
/// A ceiling that catches typos (`--max-turns 50000`) without getting in anyone's way.
const MAX_TURNS_CEILING: usize = 10_000;

impl Default for Options {
    fn default() -> Self {
        Options {
            prompt: None,
            continue_latest: false,
            resume: None,
            status: false,
            acknowledge_unknown: false,
            verbose: false,
            max_turns: DEFAULT_MAX_TURNS,
            root: None,
            #[cfg(feature = "ch12")]
            allow_write: false,
            #[cfg(feature = "ch12")]
            allow_shell: false,
            #[cfg(feature = "ch11")]
            stream: false,
            #[cfg(feature = "ch14")]
            json: false,
            demo: false,
            model: None,
            base_url: None,
            #[cfg(feature = "ch19")]
            api: None,
            #[cfg(feature = "ch16")]
            trust_hooks: false,
            #[cfg(feature = "ch18")]
            mcp: McpFlags::default(),
        }
    }
}

/// Chapter 18's switches: `--trust-mcp` starts the servers of the workspace's `.mcp.json`
/// without asking, `--allow-mcp` runs MCP calls without asking.
#[cfg(feature = "ch18")]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpFlags {
    pub trust: bool,
    pub allow: bool,
}

#[cfg(feature = "ch18")]
impl McpFlags {
    fn set(&mut self, flag: &str, on: bool) {
        match flag {
            "--trust-mcp" => self.trust = on,
            _ => self.allow = on,
        }
    }
}

/// Every flag the agent knows, for the "did you mean" hint.
const AGENT_FLAGS: &[&str] = &[
    "--prompt",
    #[cfg(feature = "ch05")]
    "--continue",
    #[cfg(feature = "ch05")]
    "--resume",
    #[cfg(feature = "ch10")]
    "--status",
    #[cfg(feature = "ch10")]
    "--acknowledge-unknown",
    "--verbose",
    "--max-turns",
    "--root",
    #[cfg(feature = "ch12")]
    "--allow-write",
    #[cfg(feature = "ch12")]
    "--allow-shell",
    #[cfg(feature = "ch11")]
    "--stream",
    #[cfg(feature = "ch14")]
    "--json",
    "--demo",
    "--model",
    "--base-url",
    #[cfg(feature = "ch19")]
    "--api",
    #[cfg(feature = "ch16")]
    "--trust-hooks",
    #[cfg(feature = "ch18")]
    "--trust-mcp",
    #[cfg(feature = "ch18")]
    "--allow-mcp",
    "--help",
    "--version",
];
#[cfg(feature = "ch13")]
const EVAL_FLAGS: &[&str] = &["--repeats", "--verbose", "--help"];
#[cfg(feature = "ch14")]
const SESSIONS_FLAGS: &[&str] = &["--root", "--help"];

// ANCHOR: parse
/// Parses the words after the program name.
pub fn parse(words: &[String]) -> Result<Command, String> {
    #[cfg(feature = "ch13")]
    if let Some(command) = subcommand(words) {
        return command;
    }
    let mut options = Options::default();
    let mut words = Words::new(words);
    let mut given: Vec<&str> = Vec::new();
    while let Some(word) = words.next_word() {
        if words.expand_short_flags(&word)? {
            continue;
        }
        let (flag, inline) = split_inline_value(&word);
        // A value given twice (`-p a -p b`) is a mistake, not a choice to make silently.
        if let Some(long) = value_flag(flag) {
            if given.contains(&long) {
                return Err(format!("{long} was given twice; give it once"));
            }
            given.push(long);
        }
        // ANCHOR_END: parse
        // ANCHOR: parse_flags
        match flag {
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            "-p" | "--prompt" => {
                let value = words.value(flag, inline)?;
                options.prompt = Some(if value == "-" { Prompt::Stdin } else { Prompt::Text(value) });
            }
            #[cfg(feature = "ch05")]
            "-c" | "--continue" => options.continue_latest = words.switch(flag, inline)?,
            #[cfg(feature = "ch05")]
            "-r" | "--resume" => options.resume = Some(words.non_empty(flag, inline)?),
            #[cfg(feature = "ch10")]
            "--status" => options.status = words.switch(flag, inline)?,
            #[cfg(feature = "ch10")]
            "--acknowledge-unknown" => options.acknowledge_unknown = words.switch(flag, inline)?,
            "-v" | "--verbose" => options.verbose = words.switch(flag, inline)?,
            "--max-turns" => options.max_turns = count(flag, &words.value(flag, inline)?)?,
            "--root" => options.root = Some(PathBuf::from(words.non_empty(flag, inline)?)),
            #[cfg(feature = "ch12")]
            "--allow-write" => options.allow_write = words.switch(flag, inline)?,
            #[cfg(feature = "ch12")]
            "--allow-shell" => options.allow_shell = words.switch(flag, inline)?,
            #[cfg(feature = "ch11")]
            "--stream" => options.stream = words.switch(flag, inline)?,
            #[cfg(feature = "ch14")]
            "--json" => options.json = words.switch(flag, inline)?,
            "--demo" => options.demo = words.switch(flag, inline)?,
            "--model" => options.model = Some(words.non_empty(flag, inline)?),
            "--base-url" => options.base_url = Some(words.non_empty(flag, inline)?),
            #[cfg(feature = "ch19")]
            "--api" => options.api = Some(api_name(&words.value(flag, inline)?)?),
            #[cfg(feature = "ch16")]
            "--trust-hooks" => options.trust_hooks = words.switch(flag, inline)?,
            #[cfg(feature = "ch18")]
            "--trust-mcp" | "--allow-mcp" => options.mcp.set(flag, words.switch(flag, inline)?),
            _ if flag.starts_with('-') && flag != "-" => return Err(unknown_flag(flag, AGENT_FLAGS)),
            _ => return Err(unexpected_word(&word)),
        }
    }
    check_combinations(&options)?;
    Ok(Command::Agent(options))
}
// ANCHOR_END: parse_flags

/// `eval` (chapter 13), `sessions` (14) and `tasks` (15) have words of their own.
#[cfg(feature = "ch13")]
fn subcommand(words: &[String]) -> Option<Result<Command, String>> {
    Some(match words.first().map(String::as_str)? {
        #[cfg(feature = "ch13")]
        "eval" => parse_eval(&words[1..]),
        #[cfg(feature = "ch14")]
        "sessions" => parse_sessions(&words[1..]),
        #[cfg(feature = "ch15")]
        "tasks" => Ok(Command::Tasks(words[1..].to_vec())),
        _ => return None,
    })
}

#[cfg(feature = "ch13")]
fn parse_eval(words: &[String]) -> Result<Command, String> {
    let mut eval = EvalOptions { dir: None, repeats: 1, verbose: false };
    let mut words = Words::new(words);
    while let Some(word) = words.next_word() {
        let (flag, inline) = split_inline_value(&word);
        match flag {
            "-h" | "--help" => return Ok(Command::Help),
            "--repeats" => eval.repeats = count(flag, &words.value(flag, inline)?)?,
            "-v" | "--verbose" => eval.verbose = words.switch(flag, inline)?,
            _ if flag.starts_with('-') => return Err(unknown_flag(flag, EVAL_FLAGS)),
            _ if eval.dir.is_none() => eval.dir = Some(PathBuf::from(word)),
            _ => return Err(format!("eval takes one directory, got a second one: '{word}'")),
        }
    }
    Ok(Command::Eval(eval))
}

#[cfg(feature = "ch14")]
fn parse_sessions(words: &[String]) -> Result<Command, String> {
    let mut root = None;
    let mut words = Words::new(words);
    while let Some(word) = words.next_word() {
        let (flag, inline) = split_inline_value(&word);
        match flag {
            "-h" | "--help" => return Ok(Command::Help),
            "--root" => root = Some(PathBuf::from(words.non_empty(flag, inline)?)),
            _ if flag.starts_with('-') => return Err(unknown_flag(flag, SESSIONS_FLAGS)),
            _ => return Err(format!("sessions takes no argument, got '{word}' (use --root DIR)")),
        }
    }
    Ok(Command::Sessions { root })
}

/// Flags that are each fine alone but make no sense together.
fn check_combinations(options: &Options) -> Result<(), String> {
    if options.continue_latest && options.resume.is_some() {
        return Err("use either -c/--continue or -r/--resume, not both".into());
    }
    if options.status && !options.continue_latest && options.resume.is_none() {
        return Err("--status shows a session: add -c (the latest one) or -r ID".into());
    }
    if options.demo && options.base_url.is_some() {
        return Err("--demo runs its own local server: drop --base-url (or drop --demo)".into());
    }
    #[cfg(feature = "ch14")]
    if options.json && options.prompt.is_none() {
        return Err("--json prints the events of one task: add -p \"task\"".into());
    }
    Ok(())
}

/// `--api`'s value: one of the two wire formats this agent speaks (chapter 19).
#[cfg(feature = "ch19")]
fn api_name(value: &str) -> Result<String, String> {
    match value {
        "openai" | "anthropic" => Ok(value.to_owned()),
        _ => Err(format!("--api must be openai or anthropic, got {value:?}")),
    }
}

/// The long name of a flag that takes a value, for the "given twice" check.
fn value_flag(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "-p" | "--prompt" => "--prompt",
        "-r" | "--resume" => "--resume",
        "--max-turns" => "--max-turns",
        "--root" => "--root",
        "--model" => "--model",
        #[cfg(feature = "ch19")]
        "--api" => "--api",
        "--base-url" => "--base-url",
        _ => return None,
    })
}

/// The one-letter flags, which combine (`-vc`, `-vp "task"`); `p` and `r` take a value.
const SHORT_FLAGS: &str = "chprvV";

/// The words still to read, so that a flag can take the next one as its value.
struct Words<'a> {
    rest: std::slice::Iter<'a, String>,
    /// Short flags split out of a combined word such as `-vp`, next first.
    pending: Vec<String>,
}

impl<'a> Words<'a> {
    fn new(words: &'a [String]) -> Self {
        Words { rest: words.iter(), pending: Vec::new() }
    }

    fn next_word(&mut self) -> Option<String> {
        self.pending.pop().or_else(|| self.rest.next().cloned())
    }

    /// `-vp` → `-v`, `-p`: true when `word` was such a group and its flags are now next.
    /// A group that cannot be split is an error that names the rule.
    fn expand_short_flags(&mut self, word: &str) -> Result<bool, String> {
        let Some(letters) = word.strip_prefix('-').filter(|rest| !rest.starts_with('-')) else {
            return Ok(false);
        };
        if letters.chars().count() < 2 || !letters.starts_with(|c| SHORT_FLAGS.contains(c)) {
            return Ok(false);
        }
        let rule = "one-letter flags combine from -c -h -p -r -v -V, a value-taking one (-p, -r) last, \
                    as in -vp \"task\"";
        if let Some(unknown) = letters.chars().find(|c| !SHORT_FLAGS.contains(*c)) {
            return Err(format!("unknown flag -{unknown} in {word}: {rule}"));
        }
        let takes_value = |c: char| c == 'p' || c == 'r';
        if let Some(early) = letters.chars().rev().skip(1).find(|c| takes_value(*c)) {
            return Err(format!("-{early} takes a value, so it must come last in {word}: {rule}"));
        }
        self.pending.extend(letters.chars().rev().map(|c| format!("-{c}")));
        Ok(true)
    }

    /// A value that may not be empty (`--model ""` would send a request for no model).
    fn non_empty(&mut self, flag: &str, inline: Option<&str>) -> Result<String, String> {
        let value = self.value(flag, inline)?;
        if value.trim().is_empty() {
            return Err(format!("{flag} needs a value, and '{value}' is empty"));
        }
        Ok(value)
    }

    /// The value of `flag`: the `=value` part, else the next word. A next word that is itself
    /// a flag means the value was forgotten (`-p --allow-write`), so we say that instead.
    fn value(&mut self, flag: &str, inline: Option<&str>) -> Result<String, String> {
        if let Some(value) = inline {
            return Ok(value.to_string());
        }
        match self.pending.pop().or_else(|| self.rest.next().cloned()) {
            Some(next) if next.starts_with("--") && next.len() > 2 => {
                Err(format!("{flag} needs a value, but the next word is the flag {next}"))
            }
            Some(next) => Ok(next),
            None => Err(format!("{flag} needs a value")),
        }
    }

    /// A flag without a value; `--demo=yes` is a mistake worth reporting.
    fn switch(&mut self, flag: &str, inline: Option<&str>) -> Result<bool, String> {
        match inline {
            None => Ok(true),
            Some(_) => Err(format!("{flag} takes no value")),
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

/// A positive whole number such as `--max-turns 20`.
fn count(flag: &str, text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_TURNS_CEILING).contains(&n) => Ok(n),
        _ => Err(format!("{flag} expects a whole number from 1 to {MAX_TURNS_CEILING}, got '{text}'")),
    }
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

fn unexpected_word(word: &str) -> String {
    let shown = mini_agent::text::take_chars(word, 40);
    format!("unexpected argument '{shown}' — to run one task, write: mini-agent -p \"{shown}\"")
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

pub use super::help::help;

#[cfg(test)]
mod tests;
