//! "Run it" runs the chapter states by path.
//!
//! Each chapter's binary is `target/snapshots/chNN/mini-agent` (`scripts/snapshots --no-tests`
//! builds them all, `--only chNN` one), and the reader sets `STATES` to that directory once
//! (the preface). A "Run it" runs `$STATES/chNN/mini-agent`, never a `mini-agent` found on
//! `PATH` nor `target/debug/mini-agent`: every later build and `cargo test` overwrites those
//! with another state, and chapter 3's refusal of `/etc/passwd`, run with chapter 2's build,
//! would succeed. `--check` refuses, in every code block of a "Run it" section, a bare
//! `mini-agent` command, another path to it, `cargo run`, and a state later than the chapter;
//! and a numbered chapter's section must name its own state (`$STATES/chNN/mini-agent`, or
//! `--features chNN` for its tests). `--run-examples DIR` sets `STATES` to DIR, as the reader
//! did, and nothing puts a state on `PATH` (`guide/examples.rs`).

use super::{ConsoleBlock, code_blocks, examples, heading, heading_level, is_run_it, title_and_id};
use crate::{Diagnostic, Language};

/// The variable the reader sets, once, to the directory of the chapter states (the preface):
/// chapter NN's binary is `$STATES/chNN/mini-agent`.
pub const STATES: &str = "STATES";

/// How a command runs mini-agent.
#[derive(Debug, PartialEq, Eq)]
pub enum Invocation {
    /// `$STATES/chNN/mini-agent`: chapter NN's state.
    State(u32),
    /// A bare `mini-agent` (whatever `PATH` finds first) or another path to it.
    Other(String),
    /// `cargo run`: the build in `target/debug`, until the next build replaces it.
    CargoRun,
}

/// Every place a shell command runs mini-agent. A word `mini-agent` followed by a blank, the
/// end or a shell operator is a program; `mini-agent:` (a message) or `mini-agent/` (a folder)
/// are not, and neither is anything after a ` # ` comment.
pub fn invocations(command: &str) -> Vec<Invocation> {
    let command = command.split(" # ").next().unwrap_or_default();
    let mut found = Vec::new();
    if command.split_whitespace().collect::<Vec<_>>().windows(2).any(|words| words == ["cargo", "run"]) {
        found.push(Invocation::CargoRun);
    }
    let is_boundary = |c: char| c.is_whitespace() || ";|&()".contains(c);
    for (at, name) in command.match_indices("mini-agent") {
        let after = command[at + name.len()..].chars().next();
        if after.is_some_and(|c| !is_boundary(c)) {
            continue;
        }
        let start = command[..at].rfind(is_boundary).map_or(0, |before| before + 1);
        let word = &command[start..at + name.len()];
        if word.starts_with(['\'', '"']) {
            continue; // a quoted argument, not a program
        }
        let state = word
            .strip_prefix("$STATES/ch")
            .or_else(|| word.strip_prefix("${STATES}/ch"))
            .and_then(|rest| rest.strip_suffix("/mini-agent"))
            .filter(|number| number.len() == 2)
            .and_then(|number| number.parse().ok());
        found.push(state.map_or_else(|| Invocation::Other(word.to_string()), Invocation::State));
    }
    found
}

/// The commands of a "Run it" block with their file lines: a console block's `$` lines, every
/// line of a shell block but comments; other blocks (output, files) run nothing.
pub fn block_commands(language: &str, block: &ConsoleBlock) -> Vec<(usize, String)> {
    match language {
        "console" => examples(block)
            .map(|examples| examples.into_iter().map(|example| (example.line, example.command)).collect())
            .unwrap_or_default(),
        "sh" | "bash" | "shell" => block
            .lines
            .iter()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
            .map(|(offset, line)| (block.line + offset, line.clone()))
            .collect(),
        _ => Vec::new(),
    }
}

/// `--check`: every "Run it" runs the chapter states by path (see the module's doc), and a
/// numbered chapter's names its own state.
pub fn check(languages: &[Language], diagnostics: &mut Vec<Diagnostic>) {
    for chapter in languages.iter().flat_map(|language| &language.chapters) {
        let own: Option<u32> = chapter.number.and_then(|_| chapter.name.get(..2)?.parse().ok());
        let blocks = code_blocks(&chapter.text, &is_run_it);
        let Some(heading) = chapter.text.lines().position(|line| {
            heading(line).is_some_and(|(_, title)| {
                let (text, id) = title_and_id(title);
                is_run_it(text, id)
            })
        }) else {
            continue;
        };
        // The section's own text, prose and code: where it names the chapter's state.
        let level = chapter
            .text
            .lines()
            .nth(heading)
            .map_or(2, |line| line.chars().take_while(|c| *c == '#').count());
        let section: Vec<&str> = chapter
            .text
            .lines()
            .skip(heading + 1)
            .take_while(|line| heading_level(line).is_none_or(|deeper| deeper > level))
            .collect();
        let mut named = own.is_some_and(|own| {
            let names = [format!("$STATES/ch{own:02}/"), format!("--features ch{own:02}")];
            section.iter().any(|line| names.iter().any(|name| line.contains(name.as_str())))
        });
        for (_, language, block) in &blocks {
            for (line, command) in block_commands(language, block) {
                for invocation in invocations(&command) {
                    let problem = match invocation {
                        Invocation::State(state) if own.is_some_and(|own| state > own) => format!(
                            "\"Run it\" runs chapter {state}'s state in chapter {}: a chapter runs its own state or an earlier one",
                            own.unwrap_or_default()
                        ),
                        Invocation::State(state) => {
                            named |= own == Some(state);
                            continue;
                        }
                        Invocation::Other(word) => format!(
                            "\"Run it\" runs `{word}`, which is whatever the last build left there; run the chapter's state by its path, `${STATES}/ch{:02}/mini-agent`",
                            own.unwrap_or(1)
                        ),
                        Invocation::CargoRun => format!(
                            "\"Run it\" uses `cargo run`, whose binary the next build replaces; run `${STATES}/ch{:02}/mini-agent`",
                            own.unwrap_or(1)
                        ),
                    };
                    diagnostics.push(Diagnostic::new(&chapter.path, line, problem));
                }
            }
        }
        if let Some(own) = own.filter(|_| !named) {
            let message = format!(
                "\"Run it\" names no chapter state: run chapter {own}'s binary as `${STATES}/ch{own:02}/mini-agent` (or its tests with `--features ch{own:02}`)"
            );
            diagnostics.push(Diagnostic::new(&chapter.path, heading + 1, message));
        }
    }
}
