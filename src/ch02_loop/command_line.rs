//! Chapter 2 — the command line as data: what a chapter adds to it.
//!
//! This chapter's agent takes its first flags (`-p`, `--model`…). Every later chapter adds a
//! few of its own, a line or two of `--help`, and sometimes a rule about flags that do not
//! go together. If each addition meant editing the parser, the help text and the list behind
//! "did you mean", every chapter would reach into the command line's code. Instead a chapter
//! *registers*: it describes its flags and help lines as data and hands them to a
//! [`Registry`], and the command line (chapter 14's, in the binary) parses against the table
//! of the chapters present, prints `--help` from it, and fills a [`Settings`] value in which
//! each chapter finds its own flags. Chapter 3 adds secret variables to what a chapter can
//! register, chapter 4 slash commands.

// ANCHOR: flag
/// A flag, as the parser, `--help` and "did you mean" read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag {
    /// The chapter that brings it.
    pub chapter: u8,
    /// Whose flag it is: `""` the agent's own, else a subcommand's (`"tasks run"`).
    pub command: &'static str,
    pub long: &'static str,
    pub short: Option<char>,
    pub takes: Takes,
    /// `--help`'s words after the flag, a line each.
    pub help: &'static [&'static str],
}

/// What follows a flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// Nothing: a switch (`--verbose`); `--verbose=yes` is a mistake.
    Nothing,
    /// A value named `name` in `--help`, which may be anything, even empty or `-`.
    Text(&'static str),
    /// A value that may not be blank (`--model ""` would ask for no model).
    NonEmpty(&'static str),
    /// A whole number from 1 to `max`.
    Count(&'static str, usize),
    /// One of a few words.
    OneOf(&'static str, &'static [&'static str]),
}
// ANCHOR_END: flag

impl Flag {
    /// A switch of the agent's command line.
    pub const fn switch(chapter: u8, long: &'static str, help: &'static [&'static str]) -> Flag {
        Flag { chapter, command: "", long, short: None, takes: Takes::Nothing, help }
    }

    /// A flag of the agent's command line that takes a value.
    pub const fn value(chapter: u8, long: &'static str, takes: Takes, help: &'static [&'static str]) -> Flag {
        Flag { chapter, command: "", long, short: None, takes, help }
    }

    /// The same flag with a one-letter form (`-v`).
    pub const fn short(self, letter: char) -> Flag {
        Flag { short: Some(letter), ..self }
    }

    /// The same flag, belonging to a subcommand (`"tasks run"`).
    pub const fn of(self, command: &'static str) -> Flag {
        Flag { command, ..self }
    }

    /// The value's name in `--help` (`ID`), if the flag takes one.
    pub fn value_name(&self) -> Option<&'static str> {
        match self.takes {
            Takes::Nothing => None,
            Takes::Text(name) | Takes::NonEmpty(name) | Takes::Count(name, _) | Takes::OneOf(name, _) => {
                Some(name)
            }
        }
    }
}

// ANCHOR: help
/// Lines of a `--help` page under one of its titles (`ENVIRONMENT`), from one chapter. The
/// command line prints the sections in the order they first appear, `EXIT CODES` last, each
/// with its lines in chapter order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Help {
    pub chapter: u8,
    /// Whose page: `""` is `mini-agent --help`, `"tasks"` is `mini-agent tasks --help`.
    pub page: &'static str,
    pub section: &'static str,
    pub lines: &'static [&'static str],
}

/// A rule about flags that are each fine alone but not together; the error is a usage error.
pub type Check = fn(&Settings) -> Result<(), String>;

/// What a chapter adds to the command line. The command line implements it; each chapter's
/// `register` function calls it.
pub trait Registry {
    fn flag(&mut self, flag: Flag);
    fn help(&mut self, help: Help);
    fn check(&mut self, check: Check);
}
// ANCHOR_END: help

// ANCHOR: settings
/// The flags a command line gave, by long name: what the parser fills and each chapter reads
/// its own flags from. A value is stored as typed; the parser has already checked it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    given: Vec<(&'static str, Option<String>)>,
}

impl Settings {
    /// Whether `flag` was given (a switch, or a flag with its value).
    pub fn has(&self, flag: &Flag) -> bool {
        self.given.iter().any(|(long, _)| *long == flag.long)
    }

    /// The value given for `flag`.
    pub fn value(&self, flag: &Flag) -> Option<&str> {
        self.given.iter().find(|(long, _)| *long == flag.long).and_then(|(_, value)| value.as_deref())
    }

    /// The number given for a [`Takes::Count`] flag.
    pub fn count(&self, flag: &Flag) -> Option<usize> {
        self.value(flag).and_then(|text| text.trim().parse().ok())
    }

    /// The long names of the switches given (`--allow-write`…).
    pub fn switches(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.given.iter().filter(|(_, value)| value.is_none()).map(|(long, _)| *long)
    }

    /// Records `flag` as given, with `value` if it takes one (replacing an earlier one).
    pub fn set(&mut self, flag: &Flag, value: Option<String>) {
        self.given.retain(|(long, _)| *long != flag.long);
        self.given.push((flag.long, value));
    }
}
// ANCHOR_END: settings
/// `-p`: the task; `-p -` reads it from stdin.
pub const PROMPT: Flag =
    Flag::value(2, "--prompt", Takes::Text("PROMPT"), &["run one task and print the final answer on stdout"])
        .short('p');
pub const VERBOSE: Flag =
    Flag::switch(2, "--verbose", &["show tool calls with their arguments and results"]).short('v');
/// Model calls allowed for one user message.
pub const MAX_TURNS: Flag = Flag::value(
    2,
    "--max-turns",
    Takes::Count("N", MAX_TURNS_CEILING),
    &["model calls allowed per message (default {max_turns})"],
);
pub const ROOT: Flag =
    Flag::value(2, "--root", Takes::NonEmpty("DIR"), &["workspace root (default: the current directory)"]);
pub const DEMO: Flag =
    Flag::switch(2, "--demo", &["use the built-in offline demo model (no key, no network)"]);
pub const MODEL: Flag =
    Flag::value(2, "--model", Takes::NonEmpty("ID"), &["model id (default: $MODEL_ID, else gpt-4o-mini)"]);
pub const BASE_URL: Flag = Flag::value(
    2,
    "--base-url",
    Takes::NonEmpty("URL"),
    &["API base URL (default: $OPENAI_BASE_URL, else", "https://api.openai.com/v1)"],
);
pub const SHOW_HELP: Flag = Flag::switch(2, "--help", &["show this help"]).short('h');
pub const SHOW_VERSION: Flag = Flag::switch(2, "--version", &["show the version"]).short('V');

pub const DEFAULT_MAX_TURNS: usize = 50;
/// A ceiling that catches typos (`--max-turns 50000`) without getting in anyone's way.
pub const MAX_TURNS_CEILING: usize = 10_000;

// ANCHOR: register
/// Chapter 2's command line: one task with `-p`, the model and where it lives.
pub fn register(registry: &mut dyn Registry) {
    for flag in [PROMPT, VERBOSE, MAX_TURNS, ROOT, DEMO, MODEL, BASE_URL, SHOW_HELP, SHOW_VERSION] {
        registry.flag(flag);
    }
    let help = |section, lines| Help { chapter: 2, page: "", section, lines };
    registry.help(help(
        "USAGE",
        &["  mini-agent [OPTIONS] -p PROMPT        one task, then exit (\"-p -\" reads the prompt from stdin)"],
    ));
    registry.help(help(
        "EXAMPLES",
        &[
            "  mini-agent --demo -p \"run ls\"         try it offline with the built-in demo model",
            "  export OPENAI_API_KEY=sk-...",
            "  mini-agent -p \"explain what src/main.rs does\"",
            "  mini-agent --base-url http://localhost:11434/v1 --model qwen2.5-coder -p \"list the files\"",
            "  git diff | mini-agent -p -            the prompt comes from stdin",
        ],
    ));
    registry.help(help(
        "ENVIRONMENT",
        &[
            "  OPENAI_API_KEY             the API key; not needed for a loopback base URL or --demo.",
            "                             Read from the environment only, never written anywhere.",
            "  OPENAI_BASE_URL            default for --base-url",
            "  MODEL_ID                   default for --model",
            "  MINI_AGENT_IDLE_TIMEOUT_SECS  the longest wait for the next byte of a reply (default 300);",
            "                             a slow reply that keeps coming is never cut",
            "  MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS  the longest wait for a reply's first byte (default: the",
            "                             idle timeout plus 1 s per 100 bytes of request, read by the server)",
            "  MINI_AGENT_REQUEST_TIMEOUT_SECS  the longest one request may take in all (unset: no limit)",
        ],
    ));
    registry.help(help(
        "EXIT CODES",
        &[
            "  0  the agent finished (it stopped calling tools; check its work yourself)",
            "  1  failure: bad usage, configuration, network, model or I/O error (one line says why)",
            "  2  the turn limit (--max-turns) was reached",
        ],
    ));
    registry.check(|settings| match settings.has(&DEMO) && settings.has(&BASE_URL) {
        true => Err("--demo runs its own local server: drop --base-url (or drop --demo)".into()),
        false => Ok(()),
    });
}
// ANCHOR_END: register
