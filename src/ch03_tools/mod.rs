//! Chapter 3 — tools.
//!
//! The model acts on the world through six tools: read, write and edit a file, list files,
//! search text, run a shell command. Their names and argument shapes are the ones models are
//! trained on, and their schemas are short because they are sent with every request.
//!
//! Two ideas carry this chapter. First, **confinement**: every path is resolved the way the
//! kernel would resolve it — following each symlink, applying `..` after it — and the result
//! must lie inside the workspace root; then the file is opened without following a final
//! symlink and the opened file's real location is checked again, so a path swapped for a
//! symlink between the check and the use is still caught. Second, **bounds**: no tool
//! answer grows without limit. Long outputs keep their head and tail, say how much was cut and
//! where the whole was saved, and the shell never hangs on a command that leaves a daemon
//! behind. A bad call is an `Error` result that tells the model how to retry, never a panic.
//!
//! This file holds the interface: [`Workspace`], the schemas and the dispatch. The pieces:
//!
//! * [`resolve`] — confinement: resolving a path as the kernel would, opening it without
//!   following a final symlink, checking where the open file really is.
//! * `files` — `read_file`, `write_file`, `edit_file`, and the [`Change`] a write or an edit
//!   would make, shown before it is made (with [`diff`], the lines that change).
//! * `walk` — `list_files` and `search`, one bounded walk that never follows symlinks.
//! * [`output`] — head-and-tail answers and the spill file that keeps the whole.
//! * [`shell`] — `bash`: a process group per command, a bounded capture, a wait that a
//!   daemon holding the pipe cannot hang (with `pidfd`, woken the moment the shell exits).
//! * [`confinement`] — the seam where an operating-system sandbox (chapter 20) confines
//!   each shell command; none by default.
//! * [`bounds`], [`glob`], [`progress`], [`reads`], [`reaper`], [`secrets`] — the limits on
//!   disk and memory, the glob matcher, the live progress line, the agent's own reads of the
//!   workspace, the reaper of escaped processes, and the handling of the API key (with
//!   [`url_credentials`], the secrets a base URL can carry).
//! * [`agent_dir`] — the `.gitignore` that keeps `.mini_agent/`'s private files out of git.
//! * [`own_config`] — the agent's own configuration directory, which the file tools never
//!   write, wherever the root is; [`git_config`] — the work-tree files `.git/config` makes git
//!   run or read (hooks kept elsewhere, a filter's script), which they never write either.

pub mod agent_dir;
pub mod bounds;
pub mod confinement;
pub mod diff;
mod files;
pub mod git_config;
pub mod glob;
pub mod output;
pub mod own_config;
pub(crate) mod pidfd;
pub mod progress;
pub mod reads;
pub mod reaper;
pub mod resolve;
pub mod secrets;
pub mod shell;
#[cfg(test)]
mod tests;
pub mod url_credentials;
mod walk;

use crate::ch02_loop::{Error, ToolCall, ToolOutput, ToolStatus, Tools};
use crate::ch02_model::layers::ModelLayer;
use crate::ch03_tools::confinement::Confinement;
use crate::ch03_tools::secrets::redactor;
use crate::text::shorten;
pub use files::{Change, change_stat};
use secrets::RegisterSecrets;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use walk::WALK_INTERRUPTED;

/// Bytes of one tool answer the model sees; beyond it, head and tail are kept.
const OUTPUT_LIMIT: usize = 30_000;
const HEAD_BYTES: usize = OUTPUT_LIMIT / 2;
const TAIL_BYTES: usize = OUTPUT_LIMIT / 2;
const READ_MAX_LINES: u64 = 2_000;
const READ_MAX_BYTES: usize = 50_000;
const LINE_MAX_CHARS: usize = 2_000;
/// Bytes of one line read into memory: enough for LINE_MAX_CHARS characters of any script.
const LINE_MAX_BYTES: usize = LINE_MAX_CHARS * 4;
/// Files larger than this are not loaded whole (edit) or searched.
const WHOLE_FILE_MAX_BYTES: u64 = 10_000_000;
const BINARY_SNIFF_BYTES: usize = 8_192;
const LIST_MAX_ENTRIES: usize = 500;
const SEARCH_MAX_MATCHES: usize = 200;
const SEARCH_LINE_MAX_CHARS: usize = 200;
const SKIPPED_DIRS: [&str; 4] = [".git", ".mini_agent", "target", "node_modules"];
/// Directories `write_file` and `edit_file` never write into, at any depth.
const PROTECTED_DIRS: [&str; 2] = [".mini_agent", ".git"];
/// How a temporary file of `write_file` starts, so a stale one is recognisable.
pub(crate) const TEMP_PREFIX: &str = ".mini-agent-tmp.";
const MAX_SYMLINKS: usize = 40;
/// Longer paths fail in the kernel anyway (PATH_MAX); refusing early avoids deep mkdir chains.
const PATH_MAX_BYTES: usize = 4_096;
const BASH_DEFAULT_TIMEOUT_SECS: u64 = 120;
const BASH_MAX_TIMEOUT_SECS: u64 = 600;
/// How often a running command is checked for timeout and Ctrl+C.
const POLL: Duration = Duration::from_millis(20);
/// Time a process group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(500);
/// Time we keep reading output after the command exited (a daemon may hold the pipe).
const PIPE_GRACE: Duration = Duration::from_millis(200);

// Open flags, an errno and signals std does not name. Their values differ between platforms
// (O_NOFOLLOW alone has three), so they come from libc, never written by hand.
use libc::{ELOOP, O_NOFOLLOW, O_NONBLOCK, SIGKILL, SIGTERM};

/// Chapter 3's part of the composition root: what the model sends back is redacted at the
/// seam (around the retries, so every try is), and so is every line the command line prints,
/// once the run's redactor is installed.
pub fn register(registry: &mut dyn RegisterSecrets) {
    registry.model_layer(ModelLayer::Redaction, |model, _| Ok(secrets::redacted(model?)));
    registry.redactor(secrets::install_for_run, |line| redactor().redact_line(line).into_owned());
}

/// The six tools, confined to one directory tree.
pub struct Workspace {
    root: PathBuf,
    /// What confines its shell commands; `None` runs them as the user (see [`confinement`]).
    confinement: Option<Arc<dyn Confinement>>,
}

impl Workspace {
    /// Opens a workspace at `root`, which must be an existing directory.
    pub fn new(root: &Path) -> Result<Workspace, Error> {
        let root = fs::canonicalize(root)
            .map_err(|source| Error::io(format!("cannot use workspace root {}", root.display()), source))?;
        if !root.is_dir() {
            return Err(Error::Usage(format!("workspace root {} is not a directory", root.display())));
        }
        Ok(Workspace { root, confinement: None })
    }

    /// The same workspace, with its shell commands confined by `confinement`.
    pub fn confined(self, confinement: Arc<dyn Confinement>) -> Workspace {
        Workspace { confinement: Some(confinement), ..self }
    }

    /// The canonical root every path is confined to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How its shell commands run, in the confinement's words; `None` without one.
    pub fn confinement(&self) -> Option<String> {
        self.confinement.as_ref().map(|confinement| confinement.describe())
    }
}

// ANCHOR: schemas
/// Short schemas: they travel with every request, so every word must earn its place.
fn tool_schemas() -> Vec<Value> {
    let tool = |name: &str, description: &str, properties: Value, required: &[&str]| {
        json!({"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}})
    };
    let string = json!({"type": "string"});
    vec![
        tool(
            "read_file",
            "Read a text file as numbered lines.",
            json!({"path": string, "offset": {"type": "integer", "description": "first line, 1-based"},
                "limit": {"type": "integer", "description": "max lines"}}),
            &["path"],
        ),
        tool(
            "write_file",
            "Create or overwrite a file.",
            json!({"path": string, "content": string}),
            &["path", "content"],
        ),
        tool(
            "edit_file",
            "Replace old_string with new_string in a file. old_string must match exactly, once unless replace_all.",
            json!({"path": string, "old_string": string, "new_string": string,
                "replace_all": {"type": "boolean"}}),
            &["path", "old_string", "new_string"],
        ),
        tool(
            "list_files",
            "List files under a directory, or those matching a glob (*, **, ?).",
            json!({"path": string, "pattern": {"type": "string", "description": "e.g. **/*.rs"}}),
            &[],
        ),
        tool(
            "search",
            "Find lines containing a literal string (not a regex). Returns file:line: text.",
            json!({"pattern": string, "path": string,
                "glob": {"type": "string", "description": "file filter, e.g. *.rs"}}),
            &["pattern"],
        ),
        tool(
            "bash",
            "Run a shell command in the workspace root. Returns output and exit code; background processes are stopped when it ends.",
            json!({"command": string, "timeout_secs": {"type": "integer", "description": "default 120, max 600"}}),
            &["command"],
        ),
    ]
}
// ANCHOR_END: schemas

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}
#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}
#[derive(Deserialize)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    replace_all: Option<bool>,
}
#[derive(Deserialize)]
struct ListArgs {
    path: Option<String>,
    pattern: Option<String>,
}
#[derive(Deserialize)]
struct SearchArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
}
#[derive(Deserialize)]
struct BashArgs {
    command: String,
    timeout_secs: Option<u64>,
}

// ANCHOR: dispatch
impl Tools for Workspace {
    fn schemas(&self) -> Vec<Value> {
        tool_schemas()
    }

    fn run(&mut self, call: &ToolCall) -> ToolOutput {
        // Some models send "" for a call without arguments.
        let arguments = if call.arguments.trim().is_empty() { "{}" } else { call.arguments.as_str() };
        let name = call.name.as_str();
        let result = match name {
            "read_file" => parse(name, arguments).and_then(|args| self.read_file(args)),
            "write_file" => parse(name, arguments).and_then(|args| self.write_file(args)),
            "edit_file" => parse(name, arguments).and_then(|args| self.edit_file(args)),
            "list_files" => parse(name, arguments).and_then(|args| self.list_files(args)),
            "search" => parse(name, arguments).and_then(|args| self.search(args)),
            // Redacted as it streams in (chapter 3's shell), before the spill file sees it.
            "bash" => match parse(name, arguments) {
                Ok(args) => return self.bash(args),
                Err(message) => Err(message),
            },
            other => Err(format!(
                "unknown tool `{}`; the tools are read_file, write_file, edit_file, list_files, search, bash",
                shown(other)
            )),
        };
        // Redacted before anything keeps it: the spill file, the journal, the next request.
        let redact = |text| redactor().redact_string(text);
        let result = result.map(redact).map_err(redact);
        match result {
            // read_file bounds itself (with an offset to continue); the others are cut here
            Ok(content) if name == "read_file" => ToolOutput { content, status: ToolStatus::Ok },
            Ok(content) => ToolOutput { content: self.bounded(name, content), status: ToolStatus::Ok },
            Err(content) if content == WALK_INTERRUPTED => {
                ToolOutput { content, status: ToolStatus::Interrupted }
            }
            Err(content) => ToolOutput { content: self.bounded(name, content), status: ToolStatus::Error },
        }
    }
}

/// Parses a call's JSON arguments; the error repeats the expected shape so the model can retry.
fn parse<T: DeserializeOwned>(tool: &str, arguments: &str) -> Result<T, String> {
    serde_json::from_str(arguments)
        .map_err(|error| format!("invalid arguments for {tool}: {error}; expected {}", expected_shape(tool)))
}
// ANCHOR_END: dispatch

/// `{"path": string, "offset"?: integer}` — the schema of `tool`, in one line.
fn expected_shape(tool: &str) -> String {
    let schemas = tool_schemas();
    let Some(function) = schemas.iter().map(|s| &s["function"]).find(|f| f["name"] == tool) else {
        return "{}".into();
    };
    let required = &function["parameters"]["required"];
    let properties = function["parameters"]["properties"].as_object().into_iter().flatten();
    let is_required = |key: &str| required.as_array().is_some_and(|r| r.iter().any(|n| n == key));
    let mut fields: Vec<(bool, String)> = properties
        .map(|(key, spec)| {
            let optional = if is_required(key) { "" } else { "?" };
            (!is_required(key), format!("\"{key}\"{optional}: {}", spec["type"].as_str().unwrap_or("any")))
        })
        .collect();
    fields.sort(); // required fields first
    let fields: Vec<String> = fields.into_iter().map(|(_, field)| field).collect();
    format!("{{{}}}", fields.join(", "))
}

/// A path as the model wrote it, cut short so a 10,000-character name does not flood the answer.
fn shown(path: &str) -> String {
    shorten(path, 200)
}
