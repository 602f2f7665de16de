//! The task list on disk: `.mini_agent/tasks.json`, or any file in the same shape.
//!
//! The file is the loop's whole memory between iterations, so it is written the way the
//! journal is: a temporary file beside it, fsynced, renamed over the old one, and the
//! directory fsynced — a crash leaves the old list or the new one, never half of either.
//! A file that does not parse is an error naming its line and column, and it is never
//! overwritten: the person who broke it gets it back as they left it. Fields this version
//! does not know are kept, so Agent-Loop's `{"features": [...]}` survives a round trip.

use crate::ch02_loop::Error;
use crate::ch05_sessions::ids::now_rfc3339;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where the task list lives when `--tasks` does not say otherwise.
pub const DEFAULT_TASKS_FILE: &str = ".mini_agent/tasks.json";

/// A task list larger than this is refused rather than read (it is read whole, each iteration).
const FILE_MAX_BYTES: u64 = 16 << 20;
/// A list of more tasks is refused: each is held in memory, every iteration (a real list has
/// tens or hundreds; 370,000 small ones took 446 MB).
pub const MAX_TASKS: usize = 10_000;

// ANCHOR: status
/// Where a task stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    #[default]
    Pending,
    InProgress,
    Done,
    Failed,
    NeedsHuman,
}
// ANCHOR_END: status

/// One task, with the field names Agent-Loop's `feature_list.json` uses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    #[serde(default, deserialize_with = "text_or_number")]
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Lower runs first; ties go in file order.
    #[serde(default)]
    pub priority: i64,
    #[serde(default)]
    pub status: TaskStatus,
    #[serde(default)]
    pub passes: bool,
    #[serde(default)]
    pub verify_command: Option<String>,
    #[serde(default)]
    pub context_files: Vec<String>,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub last_error: Option<String>,
    /// The session id of each attempt, oldest first.
    #[serde(default)]
    pub sessions: Vec<String>,
    /// Where the last attempt's changes were kept when it did not pass (a git ref).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_aside: Option<String>,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub updated_at: String,
    /// Fields this version does not know, written back as they were.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Task {
    pub fn new(id: String, name: String) -> Task {
        let now = now_rfc3339();
        Task {
            id,
            name,
            description: String::new(),
            priority: 0,
            status: TaskStatus::Pending,
            passes: false,
            verify_command: None,
            context_files: Vec::new(),
            attempts: 0,
            last_error: None,
            sessions: Vec::new(),
            set_aside: None,
            created_at: now.clone(),
            updated_at: now,
            extra: Map::new(),
        }
    }
}

/// `"id": 3` and `"id": "3"` are the same task.
fn text_or_number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::String(text) => Ok(text),
        Value::Number(number) => Ok(number.to_string()),
        other => Err(serde::de::Error::custom(format!("an id is a string or a number, not {other}"))),
    }
}

/// The whole file: the list under `tasks` (or Agent-Loop's `features`) and whatever else the
/// file holds.
#[derive(Clone, Debug)]
pub struct TaskFile {
    pub path: PathBuf,
    pub tasks: Vec<Task>,
    /// `"tasks"`, or `"features"` for Agent-Loop's file: written back under the same key.
    key: &'static str,
    /// The file's other fields, kept as their text: written back as they were, and never
    /// expanded into a tree (a planted 16 MiB of `[[[…]]]` would take hundreds of MB).
    rest: BTreeMap<String, Box<RawValue>>,
}

impl PartialEq for TaskFile {
    fn eq(&self, other: &TaskFile) -> bool {
        let text = |rest: &BTreeMap<String, Box<RawValue>>| -> Vec<(String, String)> {
            rest.iter().map(|(k, v)| (k.clone(), v.get().to_string())).collect()
        };
        (&self.path, &self.tasks, self.key) == (&other.path, &other.tasks, other.key)
            && text(&self.rest) == text(&other.rest)
    }
}

// ANCHOR: load
impl TaskFile {
    /// Reads `path`; a missing file is an empty list. A damaged one is an error that names
    /// the line, and nothing is written.
    pub fn load(path: &Path) -> Result<TaskFile, Error> {
        // Not through a symlink, and without waiting: a FIFO planted under the list's name
        // would block a plain open until someone writes to it.
        let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let mut file = match OpenOptions::new().read(true).custom_flags(flags).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TaskFile::empty(path)),
            Err(e) => return Err(Error::io(format!("reading the task list {}", path.display()), e)),
        };
        let meta = file.metadata().map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        if !meta.is_file() || meta.len() > FILE_MAX_BYTES {
            return Err(Error::Config(format!(
                "the task list {} is not a regular file of at most {} MiB",
                path.display(),
                FILE_MAX_BYTES >> 20
            )));
        }
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        TaskFile::parse(path, &text)
    }

    // ANCHOR_END: load

    // ANCHOR: parse
    /// The tasks in `text`, which was read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<TaskFile, Error> {
        let damaged = |line: usize, problem: String| {
            Error::Config(format!(
                "the task list {} is damaged at line {line}: {problem} — it was left as it is; fix it by hand",
                path.display()
            ))
        };
        // The document as slices of its text: checked whole, held as nothing but positions.
        let top: BTreeMap<String, &RawValue> =
            serde_json::from_str(text).map_err(|e| damaged(e.line(), strip_position(&e)))?;
        let key =
            if top.contains_key("tasks") || !top.contains_key("features") { "tasks" } else { "features" };
        let not_a_list = || damaged(line_of(text, &format!("\"{key}\"")), format!("\"{key}\" is not a list"));
        let items: Vec<&RawValue> = match top.get(key) {
            Some(list) => serde_json::from_str(list.get()).map_err(|_| not_a_list())?,
            None => Vec::new(),
        };
        if items.len() > MAX_TASKS {
            return Err(damaged(
                line_of(text, &format!("\"{key}\"")),
                format!("{} tasks; a list holds at most {MAX_TASKS}", items.len()),
            ));
        }
        let rest = top
            .into_iter()
            .filter(|(name, _)| name != key)
            .map(|(name, raw)| (name, raw.to_owned()))
            .collect();
        // ANCHOR_END: parse
        // ANCHOR: parse_tasks
        let mut tasks: Vec<Task> = Vec::with_capacity(items.len());
        // Each id once: a map from id to position keeps a long list linear (a search of the
        // tasks so far made 370,000 tasks take minutes).
        let mut seen: HashMap<String, usize> = HashMap::with_capacity(items.len());
        for (index, item) in items.into_iter().enumerate() {
            let task: Task = serde_json::from_str(item.get())
                .map_err(|e| damaged(task_line(text, key, index), format!("task {}: {e}", index + 1)))?;
            let task = settle(task, index);
            if let Some(&twin) = seen.get(&task.id) {
                let twin = &tasks[twin].name;
                let problem = format!("two tasks have the id {:?} ({twin:?} and {:?})", task.id, task.name);
                return Err(damaged(task_line(text, key, index), problem));
            }
            seen.insert(task.id.clone(), tasks.len());
            tasks.push(task);
        }
        Ok(TaskFile { path: path.to_path_buf(), tasks, key, rest })
    }
    // ANCHOR_END: parse_tasks

    fn empty(path: &Path) -> TaskFile {
        TaskFile { path: path.to_path_buf(), tasks: Vec::new(), key: "tasks", rest: BTreeMap::new() }
    }

    pub fn find_mut(&mut self, id: &str) -> Result<&mut Task, Error> {
        let path = self.path.display().to_string();
        self.tasks.iter_mut().find(|task| task.id == id).ok_or_else(|| {
            Error::Usage(format!("no task with id {id:?} in {path} (see mini-agent tasks list)"))
        })
    }

    // ANCHOR: save
    /// Writes the list atomically: a temporary file in the same directory, fsynced, renamed
    /// over the old one, then the directory fsynced so that the rename itself is on disk.
    pub fn save(&self) -> Result<(), Error> {
        let dir = self.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
        let failed = |e| Error::io(format!("writing the task list {}", self.path.display()), e);
        let written = (|| {
            let file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
            // Written as it is made: a long list is never held twice.
            let mut out = std::io::BufWriter::new(file);
            serde_json::to_writer_pretty(&mut out, self)?;
            out.write_all(b"\n")?;
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            fs::rename(&temp, &self.path)?;
            File::open(dir)?.sync_all()
        })();
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written.map_err(failed)
    }
    // ANCHOR_END: save
}

// ANCHOR: update
/// Load, change, save, under a lock on the file's directory: two processes updating the
/// list (`tasks run` and a `tasks add` meanwhile) take turns, and neither loses the other's
/// change. The lock is `flock(2)` on the directory, so no lock file is left behind.
pub fn update<R>(path: &Path, change: impl FnOnce(&mut TaskFile) -> Result<R, Error>) -> Result<R, Error> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let lock = File::open(dir).map_err(|e| Error::io(format!("opening {}", dir.display()), e))?;
    // SAFETY: flock(2) on a descriptor we own; it is released when `lock` is closed.
    if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) } != 0 {
        let error = std::io::Error::last_os_error();
        return Err(Error::io(format!("locking {}", dir.display()), error));
    }
    let mut file = TaskFile::load(path)?;
    let result = change(&mut file)?;
    file.save()?;
    Ok(result)
}
// ANCHOR_END: update

/// A task as this version reads it: an id from its place when it has none, and `done` when
/// it passes (Agent-Loop's files may say only `passes`).
fn settle(mut task: Task, index: usize) -> Task {
    if task.id.trim().is_empty() {
        task.id = (index + 1).to_string();
    }
    if task.passes && task.status == TaskStatus::Pending {
        task.status = TaskStatus::Done;
    }
    task
}

/// The file's other fields, then the list (each task's fields in the order declared above).
impl Serialize for TaskFile {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.rest.len() + 1))?;
        for (key, value) in &self.rest {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry(self.key, &self.tasks)?;
        map.end()
    }
}

/// Stamps `task` as changed now.
pub fn touch(task: &mut Task) {
    task.updated_at = now_rfc3339();
}

/// serde's message without its " at line L column C" tail (the line is said first).
fn strip_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(at) => format!("{} (column {})", &text[..at], error.column()),
        None => text,
    }
}

/// The line on which `needle` first appears (1 when it does not).
fn line_of(text: &str, needle: &str) -> usize {
    text.find(needle).map_or(1, |at| text[..at].lines().count().max(1))
}

/// The line where the `index`th element of the list under `key` starts, found by walking
/// the JSON text (strings and nesting respected).
fn task_line(text: &str, key: &str, index: usize) -> usize {
    let Some(start) = text.find(&format!("\"{key}\"")) else { return 1 };
    let Some(open) = text[start..].find('[').map(|at| start + at) else { return 1 };
    let (mut depth, mut in_string, mut escaped, mut seen) = (0usize, false, false, 0usize);
    for (at, c) in text[open..].char_indices() {
        let at = open + at;
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '[' | '{' => {
                if depth == 1 && c == '{' {
                    if seen == index {
                        return text[..at].matches('\n').count() + 1;
                    }
                    seen += 1;
                }
                depth += 1;
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    1
}
