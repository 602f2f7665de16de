//! The words of `mini-agent tasks …`: chapter 15's subcommands and their flags, and the help
//! that names them. Kept apart from `tasks.rs` (which runs the loop) so each file holds one
//! thing: here, what the person typed; there, what the harness does with it.

use super::args::{self, Command, Options};
use mini_agent::ch15_tasks::pick::check_id;
use mini_agent::ch15_tasks::{DEFAULT_TASKS_FILE, Settings, Task};
use std::path::PathBuf;

/// `tasks run` defaults, as the issue states them.
const DEFAULT_MAX_ATTEMPTS: u32 = 3;
const DEFAULT_INTERVENTION_AFTER: u32 = 3;
/// What `tasks` was asked to do.
pub(super) enum Action {
    Add(Task),
    List,
    Status,
    Show(String),
    Run(RunOptions),
    Reset(String),
    Help,
}

pub(super) struct RunOptions {
    pub(super) settings: Settings,
    pub(super) commit: bool,
    pub(super) allow_dirty: bool,
    /// `--trust-tasks`: run the list's verify commands without approving them (chapter 16).
    #[cfg(feature = "ch16")]
    pub(super) trust_tasks: bool,
    /// The agent's flags, as `-p` takes them (model, permissions, `--json`, `--root`…).
    pub(super) agent: Options,
    /// `--webhook`, `--metrics` (chapter 17).
    #[cfg(feature = "ch17")]
    pub(super) notify: super::notify::NotifyOptions,
}

/// `tasks SUBCOMMAND …` → what to do, `--root`, `--tasks`.
pub(super) fn parse(words: &[String]) -> Result<(Action, Option<PathBuf>, Option<PathBuf>), String> {
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
        "add" => Action::Add(parse_add(&rest)?),
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
        "run" => Action::Run(parse_run(&rest, root.clone())?),
        other => {
            return Err(format!("unknown tasks command '{other}': add, list, status, show, run or reset"));
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
            extra => return Err(format!("tasks add takes one NAME; quote it: got a second word '{extra}'")),
        }
    }
    if task.name.trim().is_empty() {
        return Err("tasks add needs a NAME: mini-agent tasks add \"fix the login form\"".into());
    }
    Ok(task)
}

fn parse_run(words: &[String], root: Option<PathBuf>) -> Result<RunOptions, String> {
    let mut settings = Settings {
        iterations: None,
        max_attempts: DEFAULT_MAX_ATTEMPTS,
        intervention_after: DEFAULT_INTERVENTION_AFTER,
    };
    let (mut commit, mut allow_dirty, mut json) = (true, false, false);
    #[cfg(feature = "ch17")]
    let mut notify = super::notify::NotifyOptions::default();
    #[cfg(feature = "ch16")]
    let mut trust_tasks = false;
    let mut agent_words = Vec::new();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        #[cfg(feature = "ch17")]
        if notify.parse(word, &mut words)? {
            continue;
        }
        let mut number = |flag: &str| -> Result<u32, String> {
            let text = words.next().ok_or(format!("{flag} needs a number"))?;
            text.parse()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or(format!("{flag} expects a whole number from 1, got '{text}'"))
        };
        match word.as_str() {
            "--iterations" => settings.iterations = Some(number(word)? as usize),
            "--max-attempts" => settings.max_attempts = number(word)?,
            "--intervention-after" => settings.intervention_after = number(word)?,
            "--no-commit" => commit = false,
            "--allow-dirty" => allow_dirty = true,
            #[cfg(feature = "ch16")]
            "--trust-tasks" => trust_tasks = true,
            // The agent's parser would ask for -p; here the task is the prompt.
            "--json" => json = true,
            _ => agent_words.push(word.clone()),
        }
    }
    let mut agent = match args::parse(&agent_words)? {
        Command::Agent(options) => options,
        _ => return Err("tasks run takes the agent's flags (see mini-agent tasks --help)".into()),
    };
    if agent.prompt.is_some() || agent.continue_latest || agent.resume.is_some() || agent.status {
        return Err("tasks run makes its own prompts and sessions: drop -p, -c, -r and --status".into());
    }
    agent.json = json;
    agent.root = root;
    Ok(RunOptions {
        settings,
        commit,
        allow_dirty,
        #[cfg(feature = "ch16")]
        trust_tasks,
        agent,
        #[cfg(feature = "ch17")]
        notify,
    })
}

pub(super) fn help() -> String {
    format!(
        "\
mini-agent tasks — work through a list of tasks unattended

  mini-agent tasks add NAME [-d DESCRIPTION] [-p PRIORITY] [--verify CMD] [--id ID] [--context FILE]...
  mini-agent tasks list                 id, priority, status, attempts, name (and the last error)
  mini-agent tasks status               counts, the task in progress and its session, git
  mini-agent tasks show ID              one task: its last error whole, its set-aside attempts
  mini-agent tasks run [--iterations N] [--max-attempts N] [--intervention-after N]
                       [--no-commit] [--allow-dirty] [--acknowledge-unknown]{notify_flags}
                       [--allow-write] [--allow-shell] [--json] [--model ID] [--base-url URL] ...
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
{notify}
EXIT CODES
  0    nothing left to do, or --iterations used; tasks out of attempts are failed in the
       list (see tasks list) and the loop went on past them
  3    the loop stopped because a human is needed: a task is needs_human
  1    an error (the task list, git, the model or the network); the task is pending again
  130  interrupted (Ctrl+C); 143 SIGTERM — the task is pending again
{verify}",
        notify = notify_help(),
        verify = verify_help(),
        notify_flags = if cfg!(feature = "ch17") { " [--webhook URL] [--metrics FILE]" } else { "" },
    )
}

/// Chapter 16's paragraph: who approves a verify command.
fn verify_help() -> &'static str {
    #[cfg(feature = "ch16")]
    return "
VERIFY COMMANDS are commands the workspace supplies, so the harness runs one only once it is
approved: tasks add --verify CMD approves what you typed; at a terminal, tasks run asks about
any other (a list you wrote by hand, or one a cloned repository came with). With nobody to ask,
tasks run stops before the first attempt unless --trust-tasks trusts the list for this run.
";
    #[cfg(not(feature = "ch16"))]
    ""
}

/// Chapter 17's flags of `tasks run`.
fn notify_help() -> &'static str {
    #[cfg(feature = "ch17")]
    return "
NOTIFICATIONS AND METRICS (tasks run)
  --webhook URL     POST a JSON event (task_completed, task_failed, needs_human) to an
                    http(s) URL; signed with MINI_AGENT_WEBHOOK_SECRET if set (header
                    X-Mini-Agent-Signature: sha256=HMAC). Retried on 429/5xx, at most 3 times
                    and 30 s per event; a failure is a warning, never a stop. The same from
                    \"webhook\": {\"url\", \"secret\", \"events\"} in an approved .mini_agent/hooks.json.
  --metrics FILE    after each attempt, write Prometheus text format to FILE atomically
                    (for node_exporter's textfile collector; name it *.prom)
";
    #[cfg(not(feature = "ch17"))]
    ""
}
