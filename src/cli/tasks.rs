//! `mini-agent tasks …`: chapter 15's loop on the command line.
//!
//! This file is glue. It parses the `tasks` words (the model, permission and `--json` flags
//! of `tasks run` go through the agent's own parser, so they mean what they mean for `-p`),
//! opens the task list, and gives the loop its pieces: [`SessionAttempts`], which runs each
//! attempt as an ordinary session built the way `-p` builds one; the verify command under
//! the bash tool's rules; git; and an observer that reports on stderr (and as JSON Lines
//! with `--json`). Exit codes: 0 nothing left to do (tasks out of attempts are `failed` in the
//! list, and the loop went on), 3 the loop stopped because a person is needed (a task is
//! `needs_human`), 1 an error, 130/143 interrupted — the task is then pending again.

use super::app::{Agent, Asker, Config};
use super::args::{self, Command, Options};
use super::endpoint::{Connection, connect};
use super::json_events::JsonEvents;
use super::{build_model, one_line, print_stdout, say, stderr_only, workspace_root};
use mini_agent::ch02_loop::{Error, Observer, Outcome, plural};
use mini_agent::ch03_tools::Workspace;
use mini_agent::ch03_tools::secrets::Keys;
use mini_agent::ch04_terminal::sanitize::sanitize;
use mini_agent::ch04_terminal::{Screen, TerminalObserver, install_interrupt_handler};
use mini_agent::ch05_sessions::SessionStore;
use mini_agent::ch07_context::parse_context_tokens;
use mini_agent::ch12_permissions::Permissions;
use mini_agent::ch15_tasks::file::{TaskFile, touch, update};
use mini_agent::ch15_tasks::git::Git;
use mini_agent::ch15_tasks::pick::{check_id, counts, next_id};
use mini_agent::ch15_tasks::recover::{recover, stale_tasks};
use mini_agent::ch15_tasks::template::load_template;
use mini_agent::ch15_tasks::verify::{CommandVerifier, VERIFY_TIMEOUT_SECS};
use mini_agent::ch15_tasks::{
    Attempts, DEFAULT_TASKS_FILE, Loop, RunEnd, Settings, Task, TaskEvent, TaskEvents, TaskStatus,
};
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `tasks run` defaults, as the issue states them.
const DEFAULT_MAX_ATTEMPTS: u32 = 3;
const DEFAULT_INTERVENTION_AFTER: u32 = 3;
/// The exit code that says "a person is needed".
pub const NEEDS_HUMAN_EXIT: u8 = 3;

/// What `tasks` was asked to do.
enum Action {
    Add(Task),
    List,
    Status,
    Run(RunOptions),
    Reset(String),
    Help,
}

struct RunOptions {
    settings: Settings,
    commit: bool,
    allow_dirty: bool,
    /// `--trust-tasks`: run the list's verify commands without approving them (chapter 16).
    #[cfg(feature = "ch16")]
    trust_tasks: bool,
    /// The agent's flags, as `-p` takes them (model, permissions, `--json`, `--root`…).
    agent: Options,
    /// `--webhook`, `--metrics` (chapter 17).
    #[cfg(feature = "ch17")]
    notify: super::notify::NotifyOptions,
}

// ANCHOR: main
/// `mini-agent tasks WORDS…`.
pub fn main(words: &[String], keys: &Keys) -> Result<u8, Error> {
    let json = words.first().is_some_and(|w| w == "run") && words.iter().any(|w| w == "--json");
    let result = parse(words).map_err(Error::Usage).and_then(|(action, root, file)| match action {
        Action::Help => print_stdout(&help()),
        Action::Add(task) => add(&tasks_path(root.as_deref(), file.as_deref())?, task),
        Action::List => list(&tasks_path(root.as_deref(), file.as_deref())?),
        Action::Status => status(&tasks_path(root.as_deref(), file.as_deref())?),
        Action::Reset(id) => reset(&tasks_path(root.as_deref(), file.as_deref())?, &id),
        Action::Run(run) => run_tasks(&run, &tasks_path(root.as_deref(), file.as_deref())?, keys),
    });
    if json {
        // As for -p: the last line is always an `exit` event, with the reason when not 0.
        let code = super::exit_code(&result);
        let error = match &result {
            Err(error) => Some(one_line(&error.to_string())),
            Ok(_) => None,
        };
        JsonEvents.exit(code, error.as_deref());
    }
    result
}
// ANCHOR_END: main

/// The task list: `--tasks PATH` (relative to the current directory), else the root's own.
fn tasks_path(root: Option<&Path>, file: Option<&Path>) -> Result<(PathBuf, PathBuf), Error> {
    let root = workspace_root(root)?;
    let path = match file {
        Some(file) => {
            let cwd = std::env::current_dir().map_err(|e| Error::io("reading the current directory", e))?;
            let path = cwd.join(file);
            // The directory is made canonical (git compares paths); the file may not exist yet.
            let parent = path.parent().unwrap_or(Path::new("/"));
            let parent = parent
                .canonicalize()
                .map_err(|e| Error::Config(format!("--tasks {}: {e}", file.display())))?;
            parent.join(path.file_name().unwrap_or_default())
        }
        None => {
            // A symlinked .mini_agent/ would carry the list (and the sessions) elsewhere.
            SessionStore::new(&root).check_dirs()?;
            root.join(DEFAULT_TASKS_FILE)
        }
    };
    Ok((root, path))
}

fn add((root, path): &(PathBuf, PathBuf), mut task: Task) -> Result<u8, Error> {
    if *path == root.join(DEFAULT_TASKS_FILE) {
        let dir = root.join(".mini_agent");
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    let id = update(path, |file| {
        if task.id.is_empty() {
            task.id = next_id(&file.tasks);
        }
        if file.tasks.iter().any(|t| t.id == task.id) {
            return Err(Error::Usage(format!(
                "a task with id {:?} exists already; pick another --id",
                task.id
            )));
        }
        let id = task.id.clone();
        file.tasks.push(task.clone());
        Ok(id)
    })?;
    // The person typed this command: it needs no second approval (chapter 16).
    #[cfg(feature = "ch16")]
    if let Some(command) = &task.verify_command {
        let store = mini_agent::ch16_approval::ApprovalStore::user();
        if let Err(error) = mini_agent::ch16_task_approval::approve(store.as_ref(), path, command) {
            eprintln!("mini-agent: warning: the verify command's approval could not be remembered: {error}");
        }
    }
    print_stdout(&format!("added task {id}\n"))
}

fn list((_, path): &(PathBuf, PathBuf)) -> Result<u8, Error> {
    let file = TaskFile::load(path)?;
    if file.tasks.is_empty() {
        return print_stdout(&format!(
            "no tasks in {} — add one with mini-agent tasks add NAME\n",
            path.display()
        ));
    }
    let width = file.tasks.iter().map(|t| t.id.chars().count()).max().unwrap_or(2).max(2);
    let mut text =
        format!("{:<width$}  {:>8}  {:<11}  {:>8}  name\n", "id", "priority", "status", "attempts");
    for task in &file.tasks {
        let _ = writeln!(
            text,
            "{:<width$}  {:>8}  {:<11}  {:>8}  {}",
            sanitize(&task.id),
            task.priority,
            task.status.word(),
            task.attempts,
            sanitize(&task.name)
        );
    }
    print_stdout(&text)
}

/// Counts, the task in progress with its session's state (chapter 10), and git's state.
fn status((root, path): &(PathBuf, PathBuf)) -> Result<u8, Error> {
    let file = TaskFile::load(path)?;
    let counted: Vec<String> =
        counts(&file.tasks).iter().map(|(status, n)| format!("{n} {}", status.word())).collect();
    let mut text = format!("tasks    {} ({}): {}\n", path.display(), file.tasks.len(), counted.join(", "));
    for stale in stale_tasks(&file.tasks, root) {
        let task = &stale.task;
        let _ = writeln!(text, "in progress  task {} {:?}, attempt {}", task.id, task.name, task.attempts);
        match &stale.session {
            Some(Ok(session)) => {
                for line in session.to_string().lines() {
                    let _ = writeln!(text, "    {line}");
                }
            }
            Some(Err(problem)) => {
                let _ = writeln!(text, "    its session cannot be read: {problem}");
            }
            None => text.push_str("    no session recorded yet\n"),
        }
    }
    let git = match Git::open(root, &[path]) {
        None => "not a git repository (tasks run will not commit)".to_string(),
        Some(git) => {
            let branch = git.branch().unwrap_or_else(|| "(no commits yet)".into());
            match git.changes()?.len() {
                0 => format!("branch {branch}, clean"),
                n => format!(
                    "branch {branch}, {} (tasks run needs --allow-dirty)",
                    plural(n, "uncommitted change")
                ),
            }
        }
    };
    let _ = writeln!(text, "git      {git}");
    print_stdout(&sanitize(&text))
}

fn reset((_, path): &(PathBuf, PathBuf), id: &str) -> Result<u8, Error> {
    update(path, |file| {
        let task = file.find_mut(id)?;
        task.status = TaskStatus::Pending;
        task.passes = false;
        task.attempts = 0;
        touch(task);
        Ok(())
    })?;
    print_stdout(&format!("task {id} is pending again\n"))
}

fn run_tasks(run: &RunOptions, (root, path): &(PathBuf, PathBuf), keys: &Keys) -> Result<u8, Error> {
    let options = &run.agent;
    // The harness's own files are never committed: the task list, and the metrics file.
    #[cfg_attr(not(feature = "ch17"), allow(unused_mut))]
    let mut harness_files = vec![path.as_path()];
    #[cfg(feature = "ch17")]
    harness_files.extend(run.notify.metrics.as_deref());
    let git = if run.commit { Git::open(root, &harness_files) } else { None };
    if let (Some(git), false) = (&git, run.allow_dirty) {
        let changes = git.changes()?;
        if let Some(first) = changes.first() {
            return Err(Error::Usage(format!(
                "the work tree has {} ({}); commit or stash them so that each commit holds one task's \
                 work, or pass --allow-dirty (or --no-commit)",
                plural(changes.len(), "uncommitted change"),
                first.trim()
            )));
        }
    }
    // ANCHOR: run_tasks
    install_interrupt_handler();
    for note in recover(path, root, options.acknowledge_unknown)? {
        say(&format!("mini-agent: {note}"));
    }
    let workspace = Workspace::new(root)?;
    let template = load_template(&workspace)?;
    let connection = connect(options, keys, None)?;
    #[cfg(feature = "ch16")]
    let hooks = super::hooks::load(
        root,
        options.trust_hooks,
        std::io::IsTerminal::is_terminal(&std::io::stdin()) && !options.json,
    );
    // ANCHOR_END: run_tasks
    // ANCHOR: run_tasks_loop
    let mut attempts = SessionAttempts {
        connection: &connection,
        options,
        root: root.clone(),
        agent: None,
        #[cfg(feature = "ch16")]
        hooks: hooks.clone(),
        #[cfg(feature = "ch17")]
        usage: None,
    };
    let mut verifier = CommandVerifier { workspace: &workspace, timeout_secs: VERIFY_TIMEOUT_SECS };
    #[cfg(feature = "ch16")]
    let mut verifier = approved_verifier(&mut verifier, path, run.trust_tasks, !options.json)?;
    let mut events = Report { json: options.json };
    #[cfg(feature = "ch16")]
    let mut events = super::hooks::WithHooks { inner: &mut events, hooks: hooks.clone() };
    #[cfg(feature = "ch17")]
    let mut notifier = super::notify::notifier(&run.notify, &hooks, path)?;
    #[cfg(feature = "ch17")]
    {
        attempts.usage = Some(notifier.counters.clone());
    }
    #[cfg(feature = "ch17")]
    let mut events = super::notify::WithNotifier { inner: &mut events, notifier: &mut notifier };
    let end = Loop {
        tasks: path,
        template: &template,
        attempts: &mut attempts,
        verifier: &mut verifier,
        git: git.as_ref(),
        events: &mut events,
        settings: run.settings,
    }
    .run();
    // ANCHOR_END: run_tasks_loop
    // The metrics say how the run ended, however it ended (chapter 17).
    #[cfg(feature = "ch17")]
    notifier.write_metrics();
    let end = end?;
    match end {
        RunEnd::Finished { failed: 0, done } | RunEnd::IterationsUsed { failed: 0, done } => {
            say(&format!("mini-agent: {} done in this run", plural(done, "task")));
            Ok(0)
        }
        // A task out of attempts is a result the list records, not a stop: the loop went on,
        // as --intervention-after allowed, and the run itself succeeded (exit 0). Exit 3 is
        // for a loop that stopped because a person is needed.
        RunEnd::Finished { failed, done } | RunEnd::IterationsUsed { failed, done } => {
            say(&format!(
                "mini-agent: {} done and {} failed (no attempts left) in this run; look at the failed \
                 ones (mini-agent tasks list), then mini-agent tasks reset ID",
                plural(done, "task"),
                plural(failed, "task")
            ));
            Ok(0)
        }
        RunEnd::NeedsHuman { id, reason } => {
            say(&format!(
                "mini-agent: task {id} needs a human: {reason}; after looking, mini-agent tasks reset {id}"
            ));
            Ok(NEEDS_HUMAN_EXIT)
        }
    }
}

/// Each attempt is a new session, built as `-p` builds one: the same model layers, tools,
/// journal and permissions. Nobody is at the terminal to answer, so what the flags do not
/// allow is denied with a message naming the flag, as for a script.
struct SessionAttempts<'a> {
    connection: &'a Connection,
    options: &'a Options,
    root: PathBuf,
    agent: Option<Agent>,
    /// The workspace's hooks, loaded once for the whole run (chapter 16).
    #[cfg(feature = "ch16")]
    hooks: mini_agent::ch16_hooks::Hooks,
    /// Where each attempt's requests and tokens are added up for `--metrics` (chapter 17).
    #[cfg(feature = "ch17")]
    usage: Option<mini_agent::ch17_notify::SharedMetrics>,
}

impl Attempts for SessionAttempts<'_> {
    // ANCHOR: attempts
    fn begin(&mut self) -> Result<String, Error> {
        let options = self.options;
        let config = Config {
            origin: self.connection.origin.clone(),
            permissions: Permissions {
                allow_write: options.allow_write,
                allow_shell: options.allow_shell,
                #[cfg(feature = "ch18")]
                allow_mcp: options.mcp.allow,
            },
            asker: Asker::Nobody,
            max_turns: options.max_turns,
            context_tokens: parse_context_tokens(std::env::var("MINI_AGENT_CONTEXT_TOKENS").ok().as_deref())?,
            #[cfg(feature = "ch16")]
            hooks: self.hooks.clone(),
            #[cfg(feature = "ch18")]
            mcp: super::mcp::load_servers(&self.root, options)?,
        };
        let model = build_model(self.connection, options)?;
        let agent = Agent::start(model, self.root.clone(), None, config)?;
        if options.json {
            let root = agent.root().display().to_string();
            JsonEvents.session(agent.session_id(), &root, agent.origin(), false);
        }
        let id = agent.session_id().to_string();
        self.agent = Some(agent);
        Ok(id)
    }
    // ANCHOR_END: attempts

    fn run(&mut self, prompt: String) -> Outcome {
        // The session ends with the attempt: dropping the agent unlocks its journal.
        let Some(mut agent) = self.agent.take() else {
            return Outcome::Failed(Error::Session("no session was begun for this attempt".into()));
        };
        let mut display = TerminalObserver::new(stderr_only(&Screen::stdio(self.options.verbose)), None);
        let mut json = self.options.json.then_some(JsonEvents);
        let outcome = agent.turn(prompt, &mut display, json.as_mut().map(|j| j as &mut dyn Observer));
        #[cfg(feature = "ch17")]
        if let Some(usage) = &self.usage {
            super::notify::add_usage(usage, &agent.stats());
        }
        if let (Some(json), Outcome::Completed(answer)) = (&json, &outcome) {
            json.final_answer(answer);
        }
        outcome
    }
}

/// Progress on stderr, and with `--json` a `task` event per change.
struct Report {
    json: bool,
}

impl TaskEvents for Report {
    fn event(&mut self, event: TaskEvent<'_>) {
        let (kind, task, line) = match event {
            TaskEvent::Started { task, session } => (
                "started",
                task,
                format!("attempt {} of task {} (session {session})", task.attempts, task.id),
            ),
            TaskEvent::AttemptFailed { task, .. } => {
                ("attempt_failed", task, format!("task {}: the verify command failed", task.id))
            }
            TaskEvent::Completed { task, commit } => {
                let commit = commit.map_or(String::new(), |c| format!(", committed {c}"));
                ("completed", task, format!("task {} passed{commit}", task.id))
            }
            TaskEvent::Failed { task } => (
                "failed",
                task,
                format!("task {} failed after {}", task.id, plural(task.attempts as usize, "attempt")),
            ),
            TaskEvent::NeedsHuman { task, reason } => {
                ("needs_human", task, format!("task {}: {reason}", task.id))
            }
        };
        say(&format!("mini-agent: {line}: {}", task.name));
        if self.json {
            JsonEvents.emit(json!({"type": "task", "event": kind, "task": task}));
        }
    }
}

/// `tasks SUBCOMMAND …` → what to do, `--root`, `--tasks`.
fn parse(words: &[String]) -> Result<(Action, Option<PathBuf>, Option<PathBuf>), String> {
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
        "run" => Action::Run(parse_run(&rest, root.clone())?),
        other => return Err(format!("unknown tasks command '{other}': add, list, status, run or reset")),
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

fn help() -> String {
    format!(
        "\
mini-agent tasks — work through a list of tasks unattended

  mini-agent tasks add NAME [-d DESCRIPTION] [-p PRIORITY] [--verify CMD] [--id ID] [--context FILE]...
  mini-agent tasks list                 id, priority, status, attempts, name
  mini-agent tasks status               counts, the task in progress and its session, git
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
the next one the verify output. --max-attempts (default {DEFAULT_MAX_ATTEMPTS}) attempts per task, then it
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

/// Chapter 16: the harness runs only verify commands the person approved (or `--trust-tasks`);
/// `can_ask` when nothing else (`--json`) owns the terminal.
#[cfg(feature = "ch16")]
fn approved_verifier<'a>(
    verifier: &'a mut dyn mini_agent::ch15_tasks::verify::Verifier,
    path: &Path,
    trusted: bool,
    can_ask: bool,
) -> Result<mini_agent::ch16_task_approval::ApprovedOnly<'a>, Error> {
    use mini_agent::ch16_approval::{ApprovalStore, Ask, ask_on_tty};
    let store = ApprovalStore::user();
    let mut tty = ask_on_tty;
    let can_ask = can_ask && std::io::IsTerminal::is_terminal(&std::io::stdin());
    let ask: Option<Ask> = if can_ask { Some(&mut tty) } else { None };
    let list = TaskFile::load(path)?.tasks;
    let approved = mini_agent::ch16_task_approval::check(path, &list, trusted, store.as_ref(), ask)
        .map_err(Error::Usage)?;
    Ok(mini_agent::ch16_task_approval::ApprovedOnly {
        inner: verifier,
        tasks: path.to_path_buf(),
        trusted,
        approved,
    })
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
