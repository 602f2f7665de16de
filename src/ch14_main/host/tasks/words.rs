//! The words of `mini-agent tasks …`: chapter 15's subcommands and their flags, and the help
//! that names them. Kept apart from `mod.rs` (which runs the loop) so each file holds one
//! thing: here, what the person typed; there, what the harness does with it. Later chapters
//! register flags of `tasks run` (chapter 16's `--trust-tasks`, chapter 17's `--webhook`) and
//! sections of this help page; they are read from the chapters' table like the agent's own.

use crate::ch14_main::args::slips::{quoted, shown, typo_allowance, typo_distance};
use crate::ch14_main::args::{self, Command};
use crate::ch14_main::registry::Registry;
use mini_agent::ch02_loop::command_line::{self, PROMPT, ROOT};
use mini_agent::ch05_sessions::{CONTINUE, RESUME};
use mini_agent::ch10_recovery::STATUS;
use mini_agent::ch15_tasks::pick::check_id;
use mini_agent::ch15_tasks::{
    ALLOW_DIRTY, DEFAULT_TASKS_FILE, INTERVENTION_AFTER, ITERATIONS, MAX_ATTEMPTS, NO_COMMIT, Settings, Task,
};
use std::path::PathBuf;

/// `tasks run` defaults, as the issue states them.
const DEFAULT_MAX_ATTEMPTS: u32 = 3;
const DEFAULT_INTERVENTION_AFTER: u32 = 3;
/// What `tasks` was asked to do.
pub(crate) enum Action {
    Add(Box<Task>),
    List,
    Status,
    Show(String),
    Run(RunOptions),
    Reset(String),
    Help,
}

pub(crate) struct RunOptions {
    /// The agent's flags, as `-p` takes them (model, permissions, `--json`, `--root`…).
    pub(crate) agent: command_line::Settings,
    /// The flags of `tasks run`, this chapter's and those later chapters registered
    /// (`--trust-tasks`, `--webhook`…).
    pub(crate) extra: command_line::Settings,
}

impl RunOptions {
    /// How the loop goes: how many iterations, attempts per task, failures in a row.
    pub(crate) fn loop_settings(&self) -> Settings {
        let count = |flag, default| self.extra.count(flag).map_or(default, |n| n as u32);
        Settings {
            iterations: self.extra.count(&ITERATIONS),
            max_attempts: count(&MAX_ATTEMPTS, DEFAULT_MAX_ATTEMPTS),
            intervention_after: count(&INTERVENTION_AFTER, DEFAULT_INTERVENTION_AFTER),
        }
    }

    /// Whether each passed task is committed (`--no-commit` says not).
    pub(crate) fn commits(&self) -> bool {
        !self.extra.has(&NO_COMMIT)
    }

    pub(crate) fn allows_dirty(&self) -> bool {
        self.extra.has(&ALLOW_DIRTY)
    }
}

/// `tasks SUBCOMMAND …` → what to do, `--root`, `--tasks`.
pub(crate) fn parse(
    words: &[String],
    registry: &Registry,
) -> Result<(Action, Option<PathBuf>, Option<PathBuf>), String> {
    let Some(sub) = words.first() else { return Ok((Action::Help, None, None)) };
    let mut rest = Vec::new();
    let (mut root, mut file) = (None, None);
    let mut words = words[1..].iter();
    // --root and --tasks mean the same for every subcommand; the rest is the subcommand's.
    while let Some(word) = words.next() {
        let (flag, inline) = match word.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (word.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| words.next().cloned()).filter(|v| !v.is_empty());
        match flag {
            "--tasks" => file = Some(PathBuf::from(value().ok_or("--tasks needs a file")?)),
            "--root" => root = Some(PathBuf::from(value().ok_or("--root needs a directory")?)),
            _ => rest.push(word.clone()),
        }
    }
    let action = match sub.as_str() {
        "-h" | "--help" | "help" => Action::Help,
        "add" => Action::Add(Box::new(parse_add(&rest)?)),
        "list" | "status" if !rest.is_empty() => {
            return Err(format!("tasks {sub} takes no argument: {}", rest[0]));
        }
        "list" => Action::List,
        "status" => Action::Status,
        "reset" => match rest.as_slice() {
            [id] => Action::Reset(id.clone()),
            _ => return Err("tasks reset takes one task id: mini-agent tasks reset ID".into()),
        },
        "show" => match rest.as_slice() {
            [id] => Action::Show(id.clone()),
            _ => return Err("tasks show takes one task id: mini-agent tasks show ID".into()),
        },
        "run" => Action::Run(parse_run(&rest, root.clone(), registry)?),
        other => {
            let known = ["add", "list", "status", "show", "run", "reset"];
            let near = known.iter().find(|name| typo_distance(other, name) <= typo_allowance(name));
            let hint =
                near.map(|name| format!(" — did you mean: mini-agent tasks {name}?")).unwrap_or_default();
            let other = shown(other);
            return Err(format!(
                "unknown tasks command {other}{hint} (add, list, status, show, run or reset)"
            ));
        }
    };
    Ok((action, root, file))
}

fn parse_add(words: &[String]) -> Result<Task, String> {
    let mut task = Task::new(String::new(), String::new());
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let mut value = |flag: &str| words.next().cloned().ok_or(format!("{flag} needs a value"));
        match word.as_str() {
            "-d" | "--description" => task.description = value(word)?,
            "-p" | "--priority" => {
                let text = value(word)?;
                task.priority =
                    text.parse().map_err(|_| format!("{word} expects a whole number, got '{text}'"))?;
            }
            "--verify" => task.verify_command = Some(value(word)?).filter(|c| !c.trim().is_empty()),
            "--id" => {
                task.id = value(word)?;
                check_id(&task.id)?;
            }
            "--context" => task.context_files.push(value(word)?),
            flag if flag.starts_with('-') && flag.len() > 1 => {
                return Err(format!("unknown flag {flag} for tasks add (see mini-agent tasks --help)"));
            }
            name if task.name.is_empty() => task.name = name.to_string(),
            extra => {
                let mut name = vec![task.name.as_str(), extra];
                name.extend(words.take_while(|word| !word.starts_with('-')).map(String::as_str));
                let whole = quoted(mini_agent::text::take_chars(&name.join(" "), 200));
                let extra = shown(extra);
                return Err(format!(
                    "tasks add takes one NAME, and {extra} is a second word; quote it: tasks add {whole}"
                ));
            }
        }
    }
    if task.name.trim().is_empty() {
        return Err("tasks add needs a NAME: mini-agent tasks add \"fix the login form\"".into());
    }
    Ok(task)
}

fn parse_run(words: &[String], root: Option<PathBuf>, registry: &Registry) -> Result<RunOptions, String> {
    let (run, rest) = args::split_flags(words, "tasks run", registry)?;
    // The agent's parser would ask for -p with --json; here the task is the prompt.
    let json = rest.iter().any(|word| word == "--json");
    let agent_words: Vec<String> = rest.into_iter().filter(|word| word != "--json").collect();
    let mut agent = match args::parse(&agent_words, registry)? {
        Command::Agent(settings) => settings,
        _ => return Err("tasks run takes the agent's flags (see mini-agent tasks --help)".into()),
    };
    if [PROMPT, CONTINUE, RESUME, STATUS].iter().any(|flag| agent.has(flag)) {
        return Err("tasks run makes its own prompts and sessions: drop -p, -c, -r and --status".into());
    }
    if json {
        agent.set(&super::super::start::JSON, None);
    }
    if let Some(root) = root {
        agent.set(&ROOT, Some(root.display().to_string()));
    }
    Ok(RunOptions { agent, extra: run })
}

/// `mini-agent tasks --help`: this chapter's page, with the flags and sections later chapters
/// registered for it.
pub(crate) fn help(registry: &Registry) -> String {
    let mut run_flags = String::from("  mini-agent tasks run");
    let mut width = run_flags.len();
    for flag in registry.flags.iter().filter(|flag| flag.command == "tasks run") {
        let word = match flag.value_name() {
            Some(value) => format!(" [{} {value}]", flag.long),
            None => format!(" [{}]", flag.long),
        };
        if width + word.len() > 92 {
            run_flags.push_str("\n                      ");
            width = 22;
        }
        width += word.len();
        run_flags.push_str(&word);
    }
    let sections = crate::ch14_main::help::help(registry, "tasks");
    format!(
        "\
mini-agent tasks — work through a list of tasks unattended

  mini-agent tasks add NAME [-d DESCRIPTION] [-p PRIORITY] [--verify CMD] [--id ID] [--context FILE]...
  mini-agent tasks list                 id, priority, status, attempts, name (and the last error)
  mini-agent tasks status               counts, the task in progress and its session, git
  mini-agent tasks show ID              one task: its last error whole, its set-aside attempts
{run_flags}
                       [--acknowledge-unknown] [--allow-write] [--allow-shell] [--json] [--model ID] ...
  mini-agent tasks reset ID             back to pending, attempts 0 (after a human looked)
  Every subcommand takes --root DIR and --tasks PATH (default {DEFAULT_TASKS_FILE};
  Agent-Loop's {{\"features\": [...]}} files are read and written as they are).

One iteration of tasks run: the pending task with the lowest priority (ties: file order) is
attempted as a new session, with the prompt .mini_agent/templates/task.md (or the built-in
one); then the harness runs its verify command (exit 0 = passed), and commits everything
as \"<id>: <name>\" by mini-agent when the root is a git repository. A failed attempt gives
the next one the verify output; in a repository, its changes are kept under
refs/mini-agent/failed/<id>/<attempt> (git show REF) and the tree is put back as it was. --max-attempts (default {DEFAULT_MAX_ATTEMPTS}) attempts per task, then it
is failed; after --intervention-after (default {DEFAULT_INTERVENTION_AFTER}) failed attempts in a row the loop stops.
Nobody answers permission questions: pass --allow-write / --allow-shell as needed.

EXIT CODES
  0    nothing left to do, or --iterations used; tasks out of attempts are failed in the
       list (see tasks list) and the loop went on past them
  3    the loop stopped because a human is needed: a task is needs_human
  1    an error (the task list, git, the model or the network); the task is pending again
  130  interrupted (Ctrl+C); 143 SIGTERM — the task is pending again

{sections}",
    )
}
