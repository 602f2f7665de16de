//! `mini-agent tasks …`: chapter 15's loop on the command line.
//!
//! This file is glue. It takes the parsed `tasks` words (`words.rs`: the model,
//! permission and `--json` flags of `tasks run` go through the agent's own parser, so they
//! mean what they mean for `-p`), opens the task list, and gives the loop its pieces: [`SessionAttempts`], which runs each
//! attempt as an ordinary session built the way `-p` builds one; the verify command under
//! the bash tool's rules; git; and an observer that reports on stderr (and as JSON Lines
//! with `--json`). Exit codes: 0 nothing left to do (tasks out of attempts are `failed` in the
//! list, and the loop went on), 3 the loop stopped because a person is needed (a task is
//! `needs_human`), 1 an error, 130/143 interrupted — the task is then pending again.

mod words;

use words::{Action, RunOptions, help, parse};

use super::app::{Agent, Config};
use super::json_events::JsonEvents;
use super::start::json_wanted;
use crate::ch14_main::endpoint::{Connection, connect};
use crate::ch14_main::registry::Registry;
use crate::ch14_main::{build_model, one_line, print_stdout, say, workspace_root};
use mini_agent::ch02_loop::command_line::VERBOSE;
use mini_agent::ch02_loop::{Error, Observer, Outcome, plural};
use mini_agent::ch03_tools::Workspace;
use mini_agent::ch03_tools::secrets::Keys;
use mini_agent::ch04_terminal::sanitize::sanitize;
use mini_agent::ch04_terminal::{Screen, TerminalObserver, install_interrupt_handler};
use mini_agent::ch10_recovery::ACKNOWLEDGE_UNKNOWN;
use mini_agent::ch15_tasks::file::{TaskFile, touch, update};
use mini_agent::ch15_tasks::git::Git;
use mini_agent::ch15_tasks::layers::NewTaskLayer;
use mini_agent::ch15_tasks::pick::{counts, next_id};
use mini_agent::ch15_tasks::recover::{recover, stale_tasks};
use mini_agent::ch15_tasks::template::load_template;
use mini_agent::ch15_tasks::verify::{CommandVerifier, VERIFY_TIMEOUT_SECS, Verifier, summary, tail};
use mini_agent::ch15_tasks::{
    Attempts, DEFAULT_TASKS_FILE, Loop, RegisterTaskLayers, RunEnd, Task, TaskEvent, TaskEvents, TaskLayer,
    TaskRun, TaskStatus,
};
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The exit code that says "a person is needed".
pub const NEEDS_HUMAN_EXIT: u8 = 3;

// ANCHOR: main
/// `mini-agent tasks WORDS…`.
pub fn main(words: &[String], registry: &'static Registry, keys: &Keys) -> Result<u8, Error> {
    let json = words.first().is_some_and(|w| w == "run") && words.iter().any(|w| w == "--json");
    let result = parse(words, registry).map_err(Error::Usage).and_then(|(action, root, file)| match action {
        Action::Help => print_stdout(&help(registry)),
        Action::Add(task) => add(registry, &tasks_path(root.as_deref(), file.as_deref())?, *task),
        Action::List => list(&tasks_path(root.as_deref(), file.as_deref())?),
        Action::Status => status(&tasks_path(root.as_deref(), file.as_deref())?),
        Action::Show(id) => show(&tasks_path(root.as_deref(), file.as_deref())?, &id),
        Action::Reset(id) => reset(&tasks_path(root.as_deref(), file.as_deref())?, &id),
        Action::Run(run) => run_tasks(&run, registry, &tasks_path(root.as_deref(), file.as_deref())?, keys),
    });
    if json {
        // As for -p: the last line is always an `exit` event, with the reason when not 0.
        let code = crate::ch14_main::exit_code(&result);
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
            super::start::sessions_of(&root)?;
            root.join(DEFAULT_TASKS_FILE)
        }
    };
    Ok((root, path))
}

/// Adds `task` to the list at `path` (a new id if it has none) and returns its id. The person
/// who asked for it (at the terminal, or over HTTP with the service's token) approved its
/// verify command by asking: the chapters that registered for it hear of it (chapter 16).
pub(crate) fn add_task(
    registry: &Registry,
    root: &Path,
    path: &Path,
    mut task: Task,
) -> Result<String, Error> {
    if *path == root.join(DEFAULT_TASKS_FILE) {
        let dir = root.join(".mini_agent");
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        mini_agent::ch03_tools::agent_dir::write_gitignore(&dir);
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
    for added in &registry.task_layers.added {
        added(path, &task);
    }
    Ok(id)
}

fn add(registry: &Registry, (root, path): &(PathBuf, PathBuf), task: Task) -> Result<u8, Error> {
    let verified = task.verify_command.is_some();
    let id = add_task(registry, root, path, task)?;
    if !verified {
        say(&format!(
            "mini-agent: warning: task {id} has no --verify command, so it passes as soon as an attempt \
             ends, whether or not anything was done; give it one in {} (\"verify_command\")",
            path.display()
        ));
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
    let mut errors = false;
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
        // The last error, on one line, while the task is not done.
        if let Some(error) = task.last_error.as_deref().filter(|_| task.status != TaskStatus::Done) {
            let _ = writeln!(text, "{:<width$}  last error: {}", "", sanitize(&summary(error, 100)));
            errors = true;
        }
    }
    if errors {
        text.push_str("(a task's whole last error: mini-agent tasks show ID)\n");
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
    let git = match Git::open(root, &[path])? {
        None => "not a git repository (tasks run will not commit)".to_string(),
        Some(git) => {
            let branch = git.branch().unwrap_or_else(|| "(no commits yet)".into());
            match git.changes()?.len() {
                // After a crash: the next run sets the cut-off attempt's changes aside.
                n if git.attempt_recorded()? => format!(
                    "branch {branch}, {}: an attempt was cut off; tasks run keeps its changes under \
                     refs/mini-agent/failed/ and puts the tree back as it found it",
                    plural(n, "uncommitted change")
                ),
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

/// Everything about one task, its last error whole, and where its set-aside attempts are.
fn show((root, path): &(PathBuf, PathBuf), id: &str) -> Result<u8, Error> {
    let mut file = TaskFile::load(path)?;
    let task = file.find_mut(id)?.clone();
    let none = || "(none)".to_string();
    let mut text = format!("task {}: {}\n", task.id, task.name);
    let _ =
        writeln!(text, "status       {} ({})", task.status.word(), plural(task.attempts as usize, "attempt"));
    let _ = writeln!(text, "priority     {}", task.priority);
    let _ = writeln!(text, "verify       {}", task.verify_command.clone().unwrap_or_else(none));
    let context = if task.context_files.is_empty() { none() } else { task.context_files.join(", ") };
    let _ = writeln!(text, "context      {context}");
    let sessions = if task.sessions.is_empty() { none() } else { task.sessions.join(", ") };
    let _ = writeln!(text, "sessions     {sessions}");
    let kept = match Git::open(root, &[path])? {
        Some(git) => git.set_aside_refs(&task.id)?,
        None => task.set_aside.iter().cloned().collect(),
    };
    if !kept.is_empty() {
        let _ = writeln!(text, "set aside    {} (see one: git show REF)", kept.join(", "));
    }
    for (title, body) in
        [("description", &task.description), ("last error", &task.last_error.unwrap_or_default())]
    {
        if !body.trim().is_empty() {
            let _ = writeln!(text, "{title}");
            for line in body.trim_end().lines() {
                let _ = writeln!(text, "  {line}");
            }
        }
    }
    print_stdout(&sanitize(&text))
}

fn reset((_, path): &(PathBuf, PathBuf), id: &str) -> Result<u8, Error> {
    reset_task(path, id)?;
    print_stdout(&format!("task {id} is pending again\n"))
}

/// Puts task `id` back to pending, its attempts to 0 (after a person looked).
pub(crate) fn reset_task(path: &Path, id: &str) -> Result<(), Error> {
    update(path, |file| {
        let task = file.find_mut(id)?;
        task.status = TaskStatus::Pending;
        task.passes = false;
        task.attempts = 0;
        touch(task);
        Ok(())
    })
}

fn run_tasks(
    run: &RunOptions,
    registry: &Registry,
    (root, path): &(PathBuf, PathBuf),
    keys: &Keys,
) -> Result<u8, Error> {
    let settings = &run.agent;
    let task_run = TaskRun {
        root,
        tasks: path,
        settings,
        extra: &run.extra,
        keys,
        can_ask: super::start::can_ask(settings),
        say,
    };
    let mut layers =
        registry.task_layers.layers.iter().map(|new| new(&task_run)).collect::<Result<Vec<_>, _>>()?;
    // The harness's own files are never committed: the task list, and the layers' (metrics).
    let harness_files: Vec<&Path> = std::iter::once(path.as_path())
        .chain(layers.iter().filter_map(|layer| layer.harness_file()))
        .collect();
    let git = if run.commits() { Git::open(root, &harness_files)? } else { None };
    // ANCHOR: run_tasks
    install_interrupt_handler();
    // What a crash left: the task in progress is pending again, its changes set aside.
    for note in recover(path, root, git.as_ref(), settings.has(&ACKNOWLEDGE_UNKNOWN))? {
        say(&format!("mini-agent: {note}"));
    }
    if let (Some(git), false) = (&git, run.allows_dirty()) {
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
    let workspace = Workspace::new(root)?;
    let template = load_template(&workspace)?;
    let connection = connect(settings, keys, None)?;
    // ANCHOR_END: run_tasks
    // ANCHOR: run_tasks_loop
    let config = Config::new(&connection, settings, root, registry)?;
    // The layers later chapters registered, folded in chapter order around the verify command
    // and the report (see `TaskLayer`): each finds the run's parts it shares with the sessions.
    let parts = &config.parts;
    let workspace = layers.iter_mut().try_fold(workspace, |inner, layer| layer.workspace(inner, parts))?;
    let verifier: Box<dyn Verifier> =
        Box::new(CommandVerifier { workspace: &workspace, timeout_secs: VERIFY_TIMEOUT_SECS });
    let mut verifier = layers.iter_mut().try_fold(verifier, |inner, layer| layer.verifier(inner, parts))?;
    let report: Box<dyn TaskEvents> = Box::new(Report { json: json_wanted(settings) });
    let mut events = layers.iter_mut().try_fold(report, |inner, layer| layer.events(inner, parts))?;
    let mut attempts = SessionAttempts { connection: &connection, config, agent: None, layers: &layers };
    let end = Loop {
        tasks: path,
        template: &template,
        attempts: &mut attempts,
        verifier: verifier.as_mut(),
        git: git.as_ref(),
        events: events.as_mut(),
        settings: run.loop_settings(),
    }
    .run();
    // ANCHOR_END: run_tasks_loop
    // The layers learn how the run ended, however it ended (chapter 17 writes the metrics).
    events.run_ended();
    let end = end?;
    match end {
        RunEnd::Finished { failed: 0, done: 0 } => {
            say(&nothing_pending(path));
            Ok(0)
        }
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

/// What a run that found nothing to do says: for a newcomer's first `tasks run`, how to add a
/// task; otherwise where to see why nothing is pending.
fn nothing_pending(path: &Path) -> String {
    match TaskFile::load(path) {
        Ok(file) if file.tasks.is_empty() => format!(
            "mini-agent: no tasks in {} yet; add one: mini-agent tasks add \"fix the login form\" \
             --verify \"cargo test\"",
            path.display()
        ),
        _ => format!("mini-agent: nothing is pending in {}; mini-agent tasks list shows why", path.display()),
    }
}

/// Each attempt is a new session, built as `-p` builds one: the same model layers, tools,
/// journal and permissions. Nobody is at the terminal to answer, so what the flags do not
/// allow is denied with a message naming the flag, as for a script.
struct SessionAttempts<'a> {
    connection: &'a Connection,
    /// The run's configuration, for every attempt: the hooks (chapter 16) and the MCP servers
    /// (chapter 18) belong to the run, as in the REPL.
    config: Config,
    agent: Option<Agent>,
    /// The run's layers, told what each attempt's session counted (chapter 17's `--metrics`).
    layers: &'a [Box<dyn TaskLayer + 'a>],
}

impl Attempts for SessionAttempts<'_> {
    // ANCHOR: attempts
    fn begin(&mut self) -> Result<String, Error> {
        let settings = &self.config.settings;
        let model = build_model(self.connection, settings)?;
        let agent = Agent::start(model, None, self.config.clone()).map_err(|error| {
            let state = self.config.root.join(".mini_agent");
            super::reopen::needs_a_journal(error, "tasks run records each task's session", &state, "")
        })?;
        if json_wanted(settings) {
            JsonEvents.session(&agent, false);
        }
        let id = agent.session_id().to_string();
        self.agent = Some(agent);
        Ok(id)
    }
    // ANCHOR_END: attempts

    fn run(&mut self, prompt: String) -> Outcome {
        // The session ends with the attempt: dropping the agent unlocks its journal.
        let Some(mut agent) = self.agent.take() else {
            return Outcome::Failed(mini_agent::ch05_sessions::session_error(
                "no session was begun for this attempt",
            ));
        };
        let settings = &self.config.settings;
        let mut display = TerminalObserver::new(Screen::stdio(settings.has(&VERBOSE)).stderr_only(), None);
        let mut json = json_wanted(settings).then_some(JsonEvents);
        let outcome = agent.turn_on(prompt, &mut display, json.as_mut().map(|j| j as &mut dyn Observer));
        let stats = agent.config.context().stats.snapshot();
        for layer in self.layers {
            layer.attempt_ended(&stats);
        }
        if let (Some(json), Outcome::Completed(answer)) = (&json, &outcome) {
            json.final_answer(answer);
        }
        outcome
    }
}

/// Where the chapters of this state hand over their layers of the task loop.
impl RegisterTaskLayers for Registry {
    fn task_layer(&mut self, layer: NewTaskLayer) {
        self.task_layers.layers.push(layer);
    }

    fn task_added(&mut self, added: mini_agent::ch15_tasks::layers::TaskAdded) {
        self.task_layers.added.push(added);
    }
}

/// Progress on stderr, and with `--json` a `task` event per change.
struct Report {
    json: bool,
}

impl TaskEvents for Report {
    fn event(&mut self, event: TaskEvent<'_>) {
        let mut below = Vec::new();
        let (kind, task, line) = match event {
            TaskEvent::Started { task, session } => (
                "started",
                task,
                format!("attempt {} of task {} (session {session}): {}", task.attempts, task.id, task.name),
            ),
            // ANCHOR: report_failure
            TaskEvent::AttemptFailed { task, output } => {
                // What the check printed last, bounded (the whole: tasks show); `say`
                // sanitises it, since a verify command prints what the workspace makes it.
                let (lines, before) = tail(output);
                let mut line =
                    format!("task {}: attempt {} failed its verify command", task.id, task.attempts);
                if before > 0 {
                    let _ = write!(
                        line,
                        " (its last {} lines; all: mini-agent tasks show {})",
                        lines.len(),
                        task.id
                    );
                }
                below = lines.iter().map(|shown| format!("  │ {shown}")).collect();
                ("attempt_failed", task, format!("{line}: {}", task.name))
            }
            // ANCHOR_END: report_failure
            TaskEvent::SetAside { task, kept } => {
                ("set_aside", task, format!("task {}: {}", task.id, kept.describe()))
            }
            TaskEvent::Completed { task, commit } => {
                let mut commit = commit.map_or(String::new(), |c| format!(", committed {c}"));
                if task.verify_command.is_none() {
                    commit.push_str(" (it has no verify command: nothing was checked)");
                }
                ("completed", task, format!("task {} passed{commit}: {}", task.id, task.name))
            }
            TaskEvent::Failed { task } => (
                "failed",
                task,
                format!(
                    "task {} failed after {}: {}",
                    task.id,
                    plural(task.attempts as usize, "attempt"),
                    task.name
                ),
            ),
            // The reason is the run's last line (`run_tasks`), said once.
            TaskEvent::NeedsHuman { task, .. } => {
                ("needs_human", task, format!("task {} stops the loop: {}", task.id, task.name))
            }
        };
        say(&format!("mini-agent: {line}"));
        for line in below {
            say(&line);
        }
        if self.json {
            JsonEvents.emit(json!({"type": "task", "event": kind, "task": task}));
        }
    }
}
