//! The manual: `mini-agent --help`, printed from what the chapters of this state registered,
//! so a chapter's state never advertises a flag it does not have and a new flag's help is
//! written once, beside the flag. Kept apart from the parser (`args.rs`) because it is layout,
//! not logic.

use super::registry::Registry;
use mini_agent::ch02_loop::command_line::{DEFAULT_MAX_TURNS, Help};

// ANCHOR: help
/// The help page of `page` (`""`: the agent's; `"tasks"`: `mini-agent tasks --help` adds
/// these sections to its own text): the registered sections in the order they first appear,
/// the agent's options among them, `EXIT CODES` last.
pub fn help(registry: &Registry, page: &str) -> String {
    let mut text = match page {
        "" => INTRODUCTION.to_string(),
        _ => String::new(),
    };
    let help: Vec<&Help> = registry.help.iter().filter(|help| help.page == page).collect();
    let mut sections: Vec<&str> = Vec::new();
    for section in help.iter().map(|help| help.section).chain((page.is_empty()).then_some("OPTIONS")) {
        if !sections.contains(&section) {
            sections.push(section);
        }
    }
    sections.sort_by_key(|section| match *section {
        "USAGE" => 0,
        "EXAMPLES" => 1,
        "OPTIONS" => 2,
        "EXIT CODES" => 4,
        _ => 3,
    });
    for section in sections {
        text.push_str(&format!("{section}\n"));
        if section == "OPTIONS" {
            text.push_str(&options(registry));
        }
        let mut lines: Vec<&str> = help
            .iter()
            .filter(|help| help.section == section)
            .flat_map(|help| help.lines.iter().copied())
            .collect();
        if section == "EXIT CODES" {
            // By code, whichever chapter brought it.
            lines
                .sort_by_key(|line| line.split_whitespace().next().and_then(|code| code.parse::<u16>().ok()));
        }
        for line in lines {
            text.push_str(&format!("{line}\n"));
        }
        text.push('\n');
    }
    let text = text.trim_end().to_string() + "\n";
    text.replace("{version}", env!("CARGO_PKG_VERSION"))
        .replace("{max_turns}", &DEFAULT_MAX_TURNS.to_string())
}
// ANCHOR_END: help

const INTRODUCTION: &str = "\
mini-agent {version} — a small coding agent for your terminal

It sends your task to a model (any OpenAI-compatible Chat Completions endpoint), runs the
file and shell tools the model asks for inside one directory (the workspace root), and
repeats until the model answers without calling a tool.

";

// ANCHOR: options
/// A line per flag of the agent, its help beside it: `  -p, --prompt PROMPT        run one…`.
fn options(registry: &Registry) -> String {
    let mut text = String::new();
    for flag in registry.flags.iter().filter(|flag| flag.command.is_empty()) {
        let short = flag.short.map_or("    ".to_string(), |letter| format!("-{letter}, "));
        let value = flag.value_name().map_or(String::new(), |name| format!(" {name}"));
        let head = format!("{short}{}{value}", flag.long);
        // A head too long for its column gets a line of its own.
        let mut first = Some(head).filter(|head| head.chars().count() < 27);
        if first.is_none() {
            text.push_str(&format!("  {short}{}{value}\n", flag.long));
        }
        for line in flag.help {
            let head = first.take().unwrap_or_default();
            text.push_str(&format!("  {head:<27}{line}\n"));
        }
    }
    text.push_str("  Values can follow the flag (--model gpt-4o) or be attached (--model=gpt-4o); each is\n");
    text.push_str("  given once. One-letter flags combine, a value-taking one last: -vp \"task\".\n");
    text
}
// ANCHOR_END: options
