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

use crate::ch01_loop::{Error, ToolCall, ToolOutput, ToolStatus, Tools, interrupted, plural};
use crate::ch02_model::shorten;
use crate::ch03_bounds::{FILE_MAX_BYTES, prune_outputs, read_line_capped, too_big};
use crate::ch03_glob::Glob;
use crate::ch03_reaper::{MARK_VARIABLE, kill_escaped, new_mark};
use crate::ch03_secrets::{redactor, remove_keys};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

// Open flags std does not name. The values differ between platforms, hence the cfgs.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "aarch64", target_arch = "arm", target_arch = "powerpc64")
))]
const O_NOFOLLOW: i32 = 0o100_000;
#[cfg(all(
    target_os = "linux",
    not(any(target_arch = "aarch64", target_arch = "arm", target_arch = "powerpc64"))
))]
const O_NOFOLLOW: i32 = 0o400_000;
#[cfg(not(target_os = "linux"))]
const O_NOFOLLOW: i32 = 0x100;
#[cfg(target_os = "linux")]
const O_NONBLOCK: i32 = 0o4_000;
/// The error O_NOFOLLOW gives when the final component is a symlink.
#[cfg(target_os = "linux")]
const ELOOP: i32 = 40;
#[cfg(not(target_os = "linux"))]
const ELOOP: i32 = 62;
#[cfg(not(target_os = "linux"))]
const O_NONBLOCK: i32 = 0x4;

const SIGKILL: i32 = 9;
const SIGTERM: i32 = 15;

unsafe extern "C" {
    /// POSIX kill(2); a negative pid signals a whole process group.
    fn kill(pid: i32, signal: i32) -> i32;
    /// POSIX setsid(2): a new session and process group, with no controlling terminal.
    fn setsid() -> i32;
}

/// The six tools, confined to one directory tree.
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Opens a workspace at `root`, which must be an existing directory.
    pub fn new(root: &Path) -> Result<Workspace, Error> {
        let root = fs::canonicalize(root)
            .map_err(|source| Error::io(format!("cannot use workspace root {}", root.display()), source))?;
        if !root.is_dir() {
            return Err(Error::Usage(format!("workspace root {} is not a directory", root.display())));
        }
        Ok(Workspace { root })
    }

    /// The canonical root every path is confined to.
    pub fn root(&self) -> &Path {
        &self.root
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
            "bash" => match parse(name, arguments) {
                Ok(args) => {
                    let output = self.bash(args);
                    return ToolOutput { content: redactor().redact_string(output.content), ..output };
                }
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

enum Step {
    Up,
    Name(OsString),
}

fn steps_of(path: &Path) -> Vec<Step> {
    let mut steps: Vec<Step> = path
        .components()
        .filter_map(|component| match component {
            Component::ParentDir => Some(Step::Up),
            Component::Normal(name) => Some(Step::Name(name.to_os_string())),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    steps.reverse(); // a stack: the next step is popped from the end
    steps
}

impl Workspace {
    // ANCHOR: resolve
    /// Resolves `path` as the kernel would — each symlink followed, `..` applied to the real
    /// directory — allowing a missing tail (a file about to be created). The result must lie
    /// inside the root.
    pub(crate) fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        let hint = "use a path relative to the workspace root, e.g. `src/main.rs`";
        if path.contains('\0') {
            return Err(format!("refused: the path contains a NUL byte; {hint}"));
        }
        if path.len() > PATH_MAX_BYTES {
            return Err(format!("refused: the path is {} bytes long; at most {PATH_MAX_BYTES}", path.len()));
        }
        if path.contains('\\') {
            return Err(format!(
                "refused: `{}` contains a backslash; separate directories with `/`",
                shown(path)
            ));
        }
        if path.starts_with('~') {
            return Err(format!(
                "refused: `~` is not expanded and the home directory is outside the root; {hint}"
            ));
        }
        let requested = Path::new(path);
        let mut resolved = if requested.is_absolute() { PathBuf::from("/") } else { self.root.clone() };
        let mut pending = steps_of(requested);
        let mut symlinks_followed = 0;
        let mut missing = false;
        while let Some(step) = pending.pop() {
            let name = match step {
                // Below a missing directory `..` cannot be applied as the kernel would (there
                // is nothing to apply it to), and applying it as text would skip a symlink
                // that the kernel would follow: `missing/../link/x` is refused instead.
                Step::Up if missing => {
                    return Err(format!(
                        "refused: `{}` goes up (`..`) out of a directory that does not exist; {hint}",
                        shown(path)
                    ));
                }
                Step::Up => {
                    resolved.pop();
                    continue;
                }
                Step::Name(name) => name,
            };
            let next = resolved.join(&name);
            if missing {
                resolved = next; // below a missing directory nothing can be a symlink yet
                continue;
            }
            match fs::symlink_metadata(&next) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    symlinks_followed += 1;
                    if symlinks_followed > MAX_SYMLINKS {
                        return Err(format!("refused: `{}` has too many levels of symlinks", shown(path)));
                    }
                    let target = fs::read_link(&next)
                        .map_err(|e| format!("cannot read a symlink on the way to `{}`: {e}", shown(path)))?;
                    if target.is_absolute() {
                        resolved = PathBuf::from("/");
                    }
                    pending.extend(steps_of(&target));
                }
                Ok(_) => resolved = next,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    missing = true;
                    resolved = next;
                }
                Err(error) => return Err(format!("cannot access `{}`: {error}", shown(path))),
            }
        }
        if resolved.starts_with(&self.root) {
            return Ok(resolved);
        }
        // The refusal names the path as the model wrote it, never where a symlink points:
        // a planted link must not turn a refusal into a way to learn what lies outside.
        Err(if symlinks_followed > 0 {
            format!(
                "refused: `{}` leads through a symlink out of the workspace root {}",
                shown(path),
                self.root.display()
            )
        } else {
            format!(
                "refused: `{}` is outside the workspace root {}; {hint}",
                shown(path),
                self.root.display()
            )
        })
    }
    // ANCHOR_END: resolve

    /// `path` relative to the root, as the model should write it next time.
    fn relative(&self, real: &Path) -> String {
        match real.strip_prefix(&self.root) {
            Ok(rest) if rest.as_os_str().is_empty() => ".".into(),
            Ok(rest) => rest.to_string_lossy().into_owned(),
            Err(_) => real.to_string_lossy().into_owned(),
        }
    }

    // ANCHOR: open_confined
    /// Opens a resolved path for reading without following a final symlink (and without
    /// blocking on a FIFO), then checks where the opened file really is: a directory on the
    /// way swapped for a symlink after `resolve` is caught here.
    pub(crate) fn open_confined(&self, real: &Path) -> Result<File, String> {
        let shown_path = self.relative(real);
        let file = OpenOptions::new().read(true).custom_flags(O_NOFOLLOW | O_NONBLOCK).open(real).map_err(
            |error| match error.kind() {
                io::ErrorKind::NotFound => {
                    format!("`{shown_path}` does not exist; list_files shows what does")
                }
                _ if error.raw_os_error() == Some(ELOOP) => {
                    format!("refused: `{shown_path}` became a symlink after it was checked")
                }
                _ => format!("cannot open `{shown_path}`: {error}"),
            },
        )?;
        let actual = opened_path(&file).or_else(|| fs::canonicalize(real).ok());
        match actual {
            Some(actual) if actual.starts_with(&self.root) => Ok(file),
            Some(_) | None => Err(format!(
                "refused: `{shown_path}` changed while being opened and now lies outside the root"
            )),
        }
    }
    // ANCHOR_END: open_confined
}

/// Where an open file really is, from the kernel (Linux); `None` where /proc is missing.
fn opened_path(file: &File) -> Option<PathBuf> {
    fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// A path that reaches *into* an open directory whatever happens to its name later
/// (the `openat` of std-only code); the plain path where /proc is missing.
pub(crate) fn through_fd(directory: &File, fallback: &Path) -> PathBuf {
    let magic = PathBuf::from(format!("/proc/self/fd/{}", directory.as_raw_fd()));
    if magic.is_dir() { magic } else { fallback.to_path_buf() }
}

/// A text file's bytes (bounded), or a polite refusal for binary and huge files.
fn read_text(file: File, shown_path: &str) -> Result<Vec<u8>, String> {
    let meta = regular_file(&file, shown_path)?;
    if meta.len() > WHOLE_FILE_MAX_BYTES {
        return Err(format!("`{shown_path}` is too large ({} bytes); use bash (e.g. sed) on it", meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(WHOLE_FILE_MAX_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read `{shown_path}`: {e}"))?;
    not_binary(&bytes, bytes.len() as u64, shown_path)?;
    Ok(bytes)
}

/// The file's metadata when it is a regular file; the refusal the model sees otherwise.
pub(crate) fn regular_file(file: &File, shown_path: &str) -> Result<fs::Metadata, String> {
    let meta = file.metadata().map_err(|e| format!("cannot read `{shown_path}`: {e}"))?;
    if meta.is_dir() {
        return Err(format!("`{shown_path}` is a directory; use list_files"));
    }
    if !meta.is_file() {
        return Err(format!("`{shown_path}` is not a regular file"));
    }
    Ok(meta)
}

/// A NUL byte near the start means binary: refused, with the file's size.
fn not_binary(start: &[u8], size: u64, shown_path: &str) -> Result<(), String> {
    if start[..start.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(format!("`{shown_path}` looks like a binary file ({size} bytes); it was not read"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// read_file, write_file, edit_file

impl Workspace {
    fn read_file(&self, args: ReadArgs) -> Result<String, String> {
        let real = self.resolve(&args.path)?;
        let shown_path = self.relative(&real);
        let file = self.open_confined(&real)?;
        let meta = regular_file(&file, &shown_path)?;
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        let sniff = reader.fill_buf().map_err(|e| format!("cannot read `{shown_path}`: {e}"))?;
        not_binary(sniff, meta.len(), &shown_path)?;
        let first = args.offset.unwrap_or(1).max(1);
        let wanted = args.limit.unwrap_or(READ_MAX_LINES).clamp(1, READ_MAX_LINES);
        let mut out = String::new();
        let (mut number, mut last_shown, mut line) = (0u64, 0u64, Vec::new());
        let mut byte_cap_hit = false;
        loop {
            // Only the first LINE_MAX_BYTES of a line are kept: a 1 GB line costs 8 KB.
            let length = match read_line_capped(&mut reader, LINE_MAX_BYTES, &mut line) {
                Ok(None) => break,
                Ok(Some(length)) => length,
                Err(e) => return Err(format!("cannot read `{shown_path}`: {e}")),
            };
            number += 1;
            if number < first || number >= first.saturating_add(wanted) || byte_cap_hit {
                continue; // keep counting, so the footer can say how many lines there are
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            let text: String = if text.chars().count() > LINE_MAX_CHARS || length > line.len() as u64 {
                format!("{}… [line cut]", text.chars().take(LINE_MAX_CHARS).collect::<String>())
            } else {
                text.to_string()
            };
            let formatted = format!("{number:>6}\t{text}\n");
            if out.len() + formatted.len() > READ_MAX_BYTES {
                byte_cap_hit = true;
                continue;
            }
            out.push_str(&formatted);
            last_shown = number;
        }
        if number == 0 {
            return Ok(format!("`{shown_path}` is empty"));
        }
        if first > number {
            let plural = if number == 1 { "" } else { "s" };
            return Err(format!(
                "`{shown_path}` has only {number} line{plural}; offset {first} is past the end"
            ));
        }
        if last_shown < number {
            out.push_str(&format!(
                "[lines {first}-{last_shown} of {number}; continue with offset={}]\n",
                last_shown + 1
            ));
        }
        Ok(out)
    }

    fn write_file(&self, args: WriteArgs) -> Result<String, String> {
        let real = self.resolve(&args.path)?;
        if args.content.len() as u64 > FILE_MAX_BYTES {
            return Err(too_big(&self.relative(&real), args.content.len() as u64));
        }
        let existed = fs::symlink_metadata(&real).is_ok();
        self.write_confined(&real, args.content.as_bytes())?;
        let verb = if existed { "replaced" } else { "created" };
        Ok(format!("{verb} `{}`: wrote {}", self.relative(&real), plural(args.content.len(), "byte")))
    }

    // ANCHOR: write_confined
    /// Writes atomically: a temporary file in the same directory, then a rename over the
    /// target. Both happen inside the directory opened and checked first, so a directory
    /// swapped for a symlink cannot redirect the write, and the rename replaces a symlink
    /// rather than writing through it.
    fn write_confined(&self, real: &Path, content: &[u8]) -> Result<(), String> {
        self.write_confined_with(real, &mut |file| file.write_all(content))
    }

    /// [`Workspace::write_confined`] for content produced piece by piece by `fill` (an edit
    /// written as it is made, never held whole).
    fn write_confined_with(
        &self,
        real: &Path,
        fill: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), String> {
        let shown_path = self.relative(real);
        self.not_protected(real, &shown_path)?;
        let (Some(parent), Some(name)) = (real.parent(), real.file_name().filter(|_| real != self.root))
        else {
            return Err(format!("`{shown_path}` is a directory; give a file path"));
        };
        self.create_parents(parent)?;
        let directory = self.open_confined(parent)?;
        if !directory.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(format!("cannot write `{shown_path}`: its parent is not a directory"));
        }
        // Checked again on the directory the kernel actually opened: whatever spelling or
        // symlink led here, this is where the file will land.
        let landing = opened_path(&directory).or_else(|| fs::canonicalize(parent).ok());
        self.not_protected(&landing.unwrap_or_else(|| parent.to_path_buf()).join(name), &shown_path)?;
        let inside = through_fd(&directory, parent);
        let target = inside.join(name);
        if fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
            return Err(format!("`{shown_path}` is a directory; give a file path"));
        }
        let mode = fs::symlink_metadata(&target).ok().filter(|m| m.is_file()).map(|m| m.permissions().mode());
        let temp = inside.join(format!("{}{}", temp_prefix(name), unique_suffix()));
        let written = (|| -> io::Result<()> {
            let mut file =
                OpenOptions::new().write(true).create_new(true).custom_flags(O_NOFOLLOW).open(&temp)?;
            if let Some(mode) = mode {
                file.set_permissions(fs::Permissions::from_mode(mode))?;
            }
            let mut buffered = io::BufWriter::new(&mut file);
            fill(&mut buffered)?;
            buffered.flush()?;
            drop(buffered);
            file.sync_all()?;
            fs::rename(&temp, &target)
        })();
        written.map_err(|error| {
            let _ = fs::remove_file(&temp);
            format!("cannot write `{shown_path}`: {error}")
        })
    }
    // ANCHOR_END: write_confined

    // ANCHOR: protected
    /// The agent's own records (`.mini_agent/`: journals, saved outputs) are its memory of
    /// what happened, and `.git/` holds a config and hooks that git runs: a file tool that
    /// could write either would turn write permission into rewriting history or running
    /// code. `real` is a resolved path; any component, at any depth, counts.
    fn not_protected(&self, real: &Path, shown_path: &str) -> Result<(), String> {
        let Ok(inside) = real.strip_prefix(&self.root) else { return Ok(()) };
        let protected = inside.components().find_map(|component| {
            let name = component.as_os_str().to_str()?;
            PROTECTED_DIRS.iter().find(|dir| dir.eq_ignore_ascii_case(name))
        });
        match protected {
            Some(&".mini_agent") => {
                Err(format!("refused: `{shown_path}` is inside .mini_agent/, the agent's own records"))
            }
            Some(dir) => Err(format!(
                "refused: `{shown_path}` is inside {dir}/, whose config and hooks git runs; \
                 the file tools never write there"
            )),
            None => Ok(()),
        }
    }
    // ANCHOR_END: protected

    /// Creates the missing directories of `directory` one by one, each inside a checked parent.
    fn create_parents(&self, directory: &Path) -> Result<(), String> {
        let relative = directory
            .strip_prefix(&self.root)
            .map_err(|_| "refused: outside the workspace root".to_string())?;
        let mut current = self.root.clone();
        for component in relative.components() {
            let parent = current.clone();
            current.push(component);
            if fs::symlink_metadata(&current).is_ok() {
                continue;
            }
            let opened = self.open_confined(&parent)?;
            match fs::create_dir(through_fd(&opened, &parent).join(component)) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => {
                    return Err(format!("cannot create directory `{}`: {error}", self.relative(&current)));
                }
            }
        }
        Ok(())
    }

    // ANCHOR: edit_file
    fn edit_file(&self, args: EditArgs) -> Result<String, String> {
        let real = self.resolve(&args.path)?;
        let shown_path = self.relative(&real);
        if args.old_string.is_empty() {
            return Err("old_string is empty; to create a file use write_file".into());
        }
        if args.old_string == args.new_string {
            return Err("old_string and new_string are the same; nothing to change".into());
        }
        let bytes = read_text(self.open_confined(&real)?, &shown_path)?;
        let text = String::from_utf8(bytes)
            .map_err(|_| format!("`{shown_path}` is not valid UTF-8; rewrite it with write_file or bash"))?;
        // Counted, not collected: a one-byte old_string in a 10 MB file matches 10 million times.
        let count = text.matches(&args.old_string).count();
        let starts: Vec<usize> = text.match_indices(&args.old_string).map(|(at, _)| at).take(20).collect();
        let replace_all = args.replace_all.unwrap_or(false);
        match count {
            0 => {
                return Err(format!(
                    "old_string was not found in `{shown_path}` (it must match exactly, whitespace included).{}",
                    nearest_lines(&text, &args.old_string)
                ));
            }
            1 => {}
            _ if replace_all => {}
            count => {
                // Only the first matches were collected: say when there are more.
                let more = if count > starts.len() { ", …" } else { "" };
                return Err(format!(
                    "old_string matches {count} times in `{shown_path}` ({}{more}); add surrounding lines to make it unique, or set replace_all",
                    match_lines(&text, &starts)
                ));
            }
        }
        // The size of the result is known before it is made: refuse it before writing a byte.
        let size = (text.len() as u64 - (count * args.old_string.len()) as u64)
            .saturating_add((count as u64).saturating_mul(args.new_string.len() as u64));
        if size > FILE_MAX_BYTES {
            return Err(too_big(&shown_path, size));
        }
        self.write_confined_with(&real, &mut |out| {
            let mut rest = text.as_str();
            while let Some(at) = rest.find(&args.old_string) {
                out.write_all(&rest.as_bytes()[..at])?;
                out.write_all(args.new_string.as_bytes())?;
                rest = &rest[at + args.old_string.len()..];
            }
            out.write_all(rest.as_bytes())
        })?;
        let first_line = line_number_at(&text, starts[0]);
        Ok(match count {
            1 => format!("edited `{shown_path}`: replaced 1 occurrence at line {first_line}"),
            count => format!("edited `{shown_path}`: replaced {count} occurrences"),
        })
    }
    // ANCHOR_END: edit_file
}

fn line_number_at(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}

/// Where the matches are, each line named once: `lines 1 ×2, 4` (the first ten lines).
/// One pass over the text, however many matches there are.
fn match_lines(text: &str, starts: &[usize]) -> String {
    let (mut lines, mut line, mut scanned): (Vec<(usize, usize)>, usize, usize) = (Vec::new(), 1, 0);
    for &at in starts {
        line += text.as_bytes()[scanned..at].iter().filter(|&&byte| byte == b'\n').count();
        scanned = at;
        match lines.last_mut() {
            Some((last, count)) if *last == line => *count += 1,
            _ => lines.push((line, 1)),
        }
    }
    let mut shown: Vec<String> = lines
        .iter()
        .take(10)
        .map(|&(line, count)| if count == 1 { line.to_string() } else { format!("{line} ×{count}") })
        .collect();
    if lines.len() > 10 {
        shown.push(format!("and {} more", lines.len() - 10));
    }
    let noun = if lines.len() == 1 { "line" } else { "lines" };
    format!("{noun} {}", shown.join(", "))
}

/// The lines most like the first line of `wanted`, so the model can see what is really there.
fn nearest_lines(text: &str, wanted: &str) -> String {
    let needle = wanted.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("");
    let mut scored: Vec<(f64, usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(index, line)| (similarity(needle, line.trim()), index + 1, line))
        .filter(|(score, _, _)| *score > 0.3)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(3);
    scored.sort_by_key(|&(_, number, _)| number);
    if scored.is_empty() {
        return " No similar line either; read_file the file to see its content.".into();
    }
    let shown_lines: Vec<String> = scored
        .iter()
        .map(|(_, number, line)| {
            format!("{number:>6}\t{}", line.chars().take(SEARCH_LINE_MAX_CHARS).collect::<String>())
        })
        .collect();
    format!(" Nearest lines:\n{}", shown_lines.join("\n"))
}

/// Dice coefficient over character pairs: 1.0 for equal strings, 0.0 for nothing in common.
fn similarity(a: &str, b: &str) -> f64 {
    let pairs = |s: &str| -> Vec<(char, char)> {
        let chars: Vec<char> = s.chars().take(SEARCH_LINE_MAX_CHARS).collect();
        chars.windows(2).map(|w| (w[0], w[1])).collect()
    };
    let (left, mut right) = (pairs(a), pairs(b));
    if left.is_empty() || right.is_empty() {
        return if a == b && !a.is_empty() { 1.0 } else { 0.0 };
    }
    let total = left.len() + right.len();
    let mut common = 0;
    for pair in &left {
        if let Some(found) = right.iter().position(|other| other == pair) {
            right.swap_remove(found);
            common += 1;
        }
    }
    2.0 * common as f64 / total as f64
}

// ---------------------------------------------------------------------------------------
// list_files and search: a bounded walk that never follows symlinks

/// The answer of a walk that Ctrl+C stopped.
const WALK_INTERRUPTED: &str = "interrupted by the user; the walk stopped before it finished";

/// One entry met by the walk: its real path, its path relative to where the walk started,
/// and its type (never followed).
struct Entry {
    real: PathBuf,
    from_start: String,
    file_type: fs::FileType,
}

impl Workspace {
    /// Visits entries breadth-first (shallow ones first, so a cut listing still shows the
    /// top of the tree), skipping `.git`, `target`… Stops when `visit` returns false.
    fn walk(&self, start: &Path, visit: &mut dyn FnMut(&Entry) -> bool) -> Result<(), String> {
        let mut queue = VecDeque::from([(start.to_path_buf(), String::new())]);
        while let Some((directory, prefix)) = queue.pop_front() {
            // A huge tree takes a while: Ctrl+C (or SIGTERM) ends the walk between directories.
            if interrupted() {
                return Err(WALK_INTERRUPTED.into());
            }
            let Ok(opened) = self.open_confined(&directory) else { continue };
            let Ok(listing) = fs::read_dir(through_fd(&opened, &directory)) else { continue };
            let mut entries: Vec<(OsString, fs::FileType)> = listing
                .flatten()
                .filter_map(|entry| Some((entry.file_name(), entry.file_type().ok()?)))
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (name, file_type) in entries {
                if interrupted() {
                    return Err(WALK_INTERRUPTED.into());
                }
                if file_type.is_dir() && SKIPPED_DIRS.iter().any(|skipped| OsStr::new(skipped) == name) {
                    continue;
                }
                let from_start = format!("{prefix}{}", name.to_string_lossy());
                let entry = Entry { real: directory.join(&name), from_start, file_type };
                if !visit(&entry) {
                    return Ok(());
                }
                if file_type.is_dir() {
                    queue.push_back((entry.real, format!("{}/", entry.from_start)));
                }
            }
        }
        Ok(())
    }

    /// Resolves an optional directory argument (default: the root).
    fn resolve_start(&self, path: Option<&str>) -> Result<PathBuf, String> {
        let start = match path {
            None => return Ok(self.root.clone()),
            Some(path) if path.trim().is_empty() => return Ok(self.root.clone()),
            Some(path) => self.resolve(path)?,
        };
        match fs::symlink_metadata(&start) {
            Ok(_) => Ok(start),
            Err(_) => Err(format!("`{}` does not exist; list_files shows what does", self.relative(&start))),
        }
    }

    fn list_files(&self, args: ListArgs) -> Result<String, String> {
        let start = self.resolve_start(args.path.as_deref())?;
        if !start.is_dir() {
            return Err(format!("`{}` is not a directory", self.relative(&start)));
        }
        let pattern = args.pattern.filter(|p| !p.trim().is_empty());
        if let Some(pattern) = &pattern {
            Glob::check(pattern)?;
        }
        let mut lines = Vec::new();
        let mut cut = false;
        self.walk(&start, &mut |entry| {
            if let Some(pattern) = &pattern
                && !Glob::matches(pattern, &entry.from_start)
            {
                return true;
            }
            if lines.len() == LIST_MAX_ENTRIES {
                cut = true;
                return false;
            }
            let mut line = self.relative(&entry.real);
            if entry.file_type.is_dir() {
                line.push('/');
            } else if entry.file_type.is_symlink() {
                let target = fs::read_link(&entry.real).map(|t| t.to_string_lossy().into_owned());
                line.push_str(&format!(" -> {}", target.unwrap_or_else(|_| "?".into())));
            }
            lines.push(line);
            true
        })?;
        lines.sort();
        if lines.is_empty() {
            return Ok(match pattern {
                Some(pattern) => {
                    format!("no files match `{}` under `{}`", shown(&pattern), self.relative(&start))
                }
                None => format!("`{}` is empty", self.relative(&start)),
            });
        }
        if cut {
            lines.push(format!("[listing stopped at {LIST_MAX_ENTRIES} entries, shallowest first; narrow it with path or pattern]"));
        }
        Ok(lines.join("\n"))
    }

    fn search(&self, args: SearchArgs) -> Result<String, String> {
        if args.pattern.is_empty() {
            return Err("pattern is empty; give the text to look for".into());
        }
        let start = self.resolve_start(args.path.as_deref())?;
        let glob = args.glob.filter(|g| !g.trim().is_empty());
        if let Some(glob) = &glob {
            Glob::check(glob)?;
        }
        let mut matches = Vec::new();
        let (mut more, mut skipped) = (0usize, 0usize);
        let mut search_file = |real: &Path, from_start: &str| {
            if let Some(glob) = &glob
                && !Glob::matches(glob, from_start)
            {
                return;
            }
            let Ok(bytes) = self.open_confined(real).and_then(|file| read_text(file, from_start)) else {
                skipped += 1;
                return;
            };
            let shown_path = self.relative(real);
            for (index, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
                if !line.contains(&args.pattern) {
                    continue;
                }
                if matches.len() == SEARCH_MAX_MATCHES {
                    more += 1;
                    continue;
                }
                let text: String = line.trim().chars().take(SEARCH_LINE_MAX_CHARS).collect();
                matches.push(format!("{shown_path}:{}: {text}", index + 1));
            }
        };
        if start.is_file() {
            let name = start.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            search_file(&start, &name);
        } else {
            self.walk(&start, &mut |entry| {
                if entry.file_type.is_file() {
                    search_file(&entry.real, &entry.from_start);
                }
                true
            })?;
        }
        let mut out = if matches.is_empty() {
            format!("no line contains `{}` under `{}`", shown(&args.pattern), self.relative(&start))
        } else {
            matches.join("\n")
        };
        if more > 0 {
            out.push_str(&format!("\n[{more} more matches not shown; narrow the search with path or glob]"));
        }
        if skipped > 0 {
            out.push_str(&format!("\n[{skipped} binary, huge or unreadable files skipped]"));
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------------------------------
// Output bounds

/// `.mini-agent-tmp.<name>.`: the temporary files of a write to `name` start with this
/// (a long name is cut, so the whole stays within the 255-byte limit of a file name).
pub(crate) fn temp_prefix(name: &OsStr) -> String {
    format!("{TEMP_PREFIX}{}.", shorten_name(&name.to_string_lossy(), 120))
}

fn shorten_name(name: &str, max_bytes: usize) -> &str {
    let mut end = name.len().min(max_bytes);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let millis = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    format!("{millis}-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Where full outputs go: `<root>/.mini_agent/outputs/`, 0700 directories, 0600 files.
#[derive(Clone)]
struct OutputStore {
    root: PathBuf,
}

impl OutputStore {
    /// A new file for one tool's full output, and its path relative to the root.
    fn create(&self, tool: &str) -> io::Result<(File, String)> {
        let mut directory = self.root.clone();
        for part in [".mini_agent", "outputs"] {
            directory.push(part);
            match fs::DirBuilder::new().mode(0o700).create(&directory) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
            if fs::symlink_metadata(&directory)?.file_type().is_symlink() {
                return Err(io::Error::other(format!(
                    "{} is a symlink; refusing to write there",
                    directory.display()
                )));
            }
        }
        prune_outputs(&directory, 0);
        let name = format!("{tool}-{}.txt", unique_suffix());
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(O_NOFOLLOW)
            .open(directory.join(&name))?;
        Ok((file, format!(".mini_agent/outputs/{name}")))
    }
}

// ANCHOR: bounded
impl Workspace {
    /// Keeps the head and the tail of a long answer; the whole goes to a file the model can read.
    fn bounded(&self, tool: &str, text: String) -> String {
        if text.len() <= OUTPUT_LIMIT {
            return text;
        }
        let saved = OutputStore { root: self.root.clone() }
            .create(tool)
            .and_then(|(mut file, name)| file.write_all(text.as_bytes()).map(|()| name));
        let mut head_end = HEAD_BYTES;
        while !text.is_char_boundary(head_end) {
            head_end -= 1;
        }
        let mut tail_start = text.len() - TAIL_BYTES;
        while !text.is_char_boundary(tail_start) {
            tail_start += 1;
        }
        let omitted = tail_start - head_end;
        format!("{}\n{}\n{}", &text[..head_end], omission_note(omitted as u64, saved), &text[tail_start..])
    }
}

fn omission_note(omitted: u64, saved: io::Result<String>) -> String {
    match saved {
        Ok(name) if name.starts_with('(') => format!("[… {omitted} bytes omitted; full output {name}]"),
        Ok(name) => format!("[… {omitted} bytes omitted; full output: {name}]"),
        Err(error) => format!("[… {omitted} bytes omitted; the full output could not be saved: {error}]"),
    }
}
// ANCHOR_END: bounded

/// Collects a command's output with bounded memory: everything until the limit, then the
/// head, a rolling tail and a count, while the full stream goes to a spill file.
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    spill: Option<io::Result<(File, String)>>,
    store: OutputStore,
    /// Set once the answer was taken: a process that escaped the kill must not fill the disk.
    abandoned: bool,
    /// Bytes written to the spill file; it stops at FILE_MAX_BYTES and says it was cut.
    saved: u64,
}

/// The last line of a spill file that reached FILE_MAX_BYTES.
const SPILL_CUT_NOTE: &str = "\n[… the output went on; this file was cut at its size limit]\n";

impl Capture {
    fn new(store: OutputStore) -> Capture {
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            spill: None,
            store,
            abandoned: false,
            saved: 0,
        }
    }

    /// Appends to the spill file, up to FILE_MAX_BYTES in all (the cut note included).
    fn save(&mut self, bytes: &[u8]) {
        let room = (FILE_MAX_BYTES - SPILL_CUT_NOTE.len() as u64).saturating_sub(self.saved);
        let Some(Ok((file, _))) = &mut self.spill else { return };
        if room == 0 {
            return; // already cut
        }
        let take = bytes.len().min(room as usize);
        let _ = file.write_all(&bytes[..take]);
        self.saved += take as u64;
        if take < bytes.len() {
            let _ = file.write_all(SPILL_CUT_NOTE.as_bytes());
            self.saved = FILE_MAX_BYTES;
        }
    }

    /// Takes one chunk; false once nobody is listening any more.
    fn push(&mut self, chunk: &[u8]) -> bool {
        if self.abandoned {
            return false;
        }
        self.total += chunk.len() as u64;
        if self.spill.is_none() {
            if self.head.len() + chunk.len() <= OUTPUT_LIMIT {
                self.head.extend_from_slice(chunk);
                return true;
            }
            // Crossing the limit: everything so far is still in `head`; spill it, then split.
            self.spill = Some(self.store.create("bash"));
            self.save(&self.head.clone());
            // The head is the first HEAD_BYTES of the stream, even when this first chunk is
            // larger than the whole limit; what follows it starts the tail.
            self.tail.extend(self.head.drain(HEAD_BYTES.min(self.head.len())..));
            let fill = (HEAD_BYTES - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..fill]);
            self.save(chunk);
            self.tail.extend(&chunk[fill..]);
        } else {
            self.save(chunk);
            self.tail.extend(chunk);
        }
        let excess = self.tail.len().saturating_sub(TAIL_BYTES);
        self.tail.drain(..excess);
        true
    }

    fn render(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        match &self.spill {
            None => head.into_owned(),
            Some(spill) => {
                let omitted = self.total - self.head.len() as u64 - self.tail.len() as u64;
                let saved = match spill {
                    Ok((_, name)) if self.saved >= FILE_MAX_BYTES => {
                        Ok(format!("(its first {} MiB): {name}", FILE_MAX_BYTES >> 20))
                    }
                    Ok((_, name)) => Ok(name.clone()),
                    Err(error) => Err(io::Error::new(error.kind(), error.to_string())),
                };
                let tail: Vec<u8> = self.tail.iter().copied().collect();
                format!("{head}\n{}\n{}", omission_note(omitted, saved), String::from_utf8_lossy(&tail))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// bash

/// How a command run ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut,
    Interrupted,
    WaitFailed(io::Error),
}

// ANCHOR: process_group
/// Starts `bash -c command` (or `sh -c` where bash is missing) in its own session — hence its
/// own process group, killable as one, and no controlling terminal, so a password prompt
/// (`sudo`, `git`, `ssh`) fails at once instead of stopping the command until the timeout.
/// Stdin is /dev/null; stdout and stderr share one pipe so the model sees them interleaved.
/// `mark` goes into the environment, which every descendant inherits: what left the group is
/// found by it afterwards (`ch03_reaper`).
fn spawn_shell(root: &Path, command: &str, mark: &str, output: io::PipeWriter) -> io::Result<Child> {
    let mut last_error = io::Error::new(io::ErrorKind::NotFound, "no shell found");
    for shell in ["bash", "sh"] {
        let mut shell_command = Command::new(shell);
        shell_command
            .arg("-c")
            .arg(command)
            .current_dir(root)
            .env(MARK_VARIABLE, mark)
            .stdin(Stdio::null())
            .stdout(output.try_clone()?)
            .stderr(output.try_clone()?);
        // The key is the agent's, not the command's: `env` must not print it.
        remove_keys(&mut shell_command);
        in_new_session(&mut shell_command);
        let spawned = shell_command.spawn();
        match spawned {
            Ok(child) => return Ok(child),
            Err(error) if error.kind() == io::ErrorKind::NotFound => last_error = error,
            Err(error) => return Err(error),
        }
    }
    Err(last_error)
    // `output` drops here: only the child holds the write end now, so EOF means it is done.
}

/// Makes `command` start in a session of its own: its own process group, no controlling
/// terminal. Chapter 13's evaluation starts the agent the same way.
pub(crate) fn in_new_session(command: &mut Command) {
    // SAFETY: runs in the forked child before exec; setsid(2) is async-signal-safe and
    // touches no memory. It fails only for a group leader, which a fresh child is not.
    unsafe {
        command.pre_exec(|| if setsid() == -1 { Err(io::Error::last_os_error()) } else { Ok(()) });
    }
}

/// kill(2): sends `signal` to process `pid`, or to a whole group when `pid` is negative.
pub(crate) fn send_signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe {
        kill(pid, signal);
    }
}

fn signal_group(group: i32, signal: i32) {
    send_signal(-group, signal);
}

fn group_alive(group: i32) -> bool {
    // SAFETY: as above; signal 0 only checks whether the group still has members.
    unsafe { kill(-group, 0) == 0 }
}

/// SIGTERM to the whole group, a short grace, then SIGKILL to whatever is left.
fn terminate_group(group: i32, child: &mut Child) {
    signal_group(group, SIGTERM);
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline && !matches!(child.try_wait(), Ok(Some(_))) {
        thread::sleep(Duration::from_millis(10));
    }
    signal_group(group, SIGKILL);
    let _ = child.wait();
}
// ANCHOR_END: process_group

impl Workspace {
    // ANCHOR: bash
    fn bash(&self, args: BashArgs) -> ToolOutput {
        let seconds = args.timeout_secs.unwrap_or(BASH_DEFAULT_TIMEOUT_SECS).clamp(1, BASH_MAX_TIMEOUT_SECS);
        let failed = |content: String| ToolOutput { content, status: ToolStatus::Error };
        let (pipe, writer) = match io::pipe() {
            Ok(ends) => ends,
            Err(error) => return failed(format!("cannot create a pipe for the command: {error}")),
        };
        let mark = new_mark();
        let mut child = match spawn_shell(&self.root, &args.command, &mark, writer) {
            Ok(child) => child,
            Err(error) => return failed(format!("cannot start the shell: {error}")),
        };
        let group = child.id() as i32;
        let capture = Arc::new(Mutex::new(Capture::new(OutputStore { root: self.root.clone() })));
        let closed = start_reader(pipe, Arc::clone(&capture));
        let (ending, mut pipe_closed) = wait_for(&mut child, &closed, Duration::from_secs(seconds));
        let mut note = "";
        match &ending {
            Ending::Exited(_) => {
                if !pipe_closed {
                    pipe_closed = closed.recv_timeout(PIPE_GRACE).is_ok();
                    if !pipe_closed {
                        note = "\n[background processes still held the output; they were stopped]";
                    }
                }
                // A command's processes end with it: nothing is left running behind the agent.
                if group_alive(group) {
                    signal_group(group, SIGKILL);
                }
            }
            Ending::TimedOut | Ending::Interrupted | Ending::WaitFailed(_) => {
                terminate_group(group, &mut child)
            }
        }
        // What left the group (`setsid`, a daemon) was re-parented to us: it ends here too.
        let escaped = kill_escaped(&mark, group);
        let escaped_note = match escaped {
            0 => String::new(),
            1 => "\n[1 process that left the command's group was stopped]".to_string(),
            n => format!("\n[{n} processes that left the command's group were stopped]"),
        };
        if !pipe_closed {
            // After the kill the pipe closes, unless a process escaped the group: then give up.
            let _ = closed.recv_timeout(PIPE_GRACE);
        }
        let output = {
            let mut capture = capture.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            capture.abandoned = true;
            capture.render()
        };
        let output = if output.is_empty() { "(no output)".to_string() } else { output };
        let (status_line, status) = describe_ending(ending, seconds);
        ToolOutput { content: format!("{output}{note}{escaped_note}\n[{status_line}]"), status }
    }
    // ANCHOR_END: bash
}

/// Reads the command's output on a thread into `capture`; the receiver hears when the pipe
/// closed, which is when every process holding it has exited.
fn start_reader(mut pipe: io::PipeReader, capture: Arc<Mutex<Capture>>) -> mpsc::Receiver<()> {
    let (closed_tx, closed_rx) = mpsc::channel();
    crate::ch03_progress::clear();
    thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        // Redacted as it arrives, so that the spill file never holds a secret either.
        let mut redacting = redactor().stream();
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) => {
                    let rest = redacting.finish();
                    capture.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(&rest);
                    break;
                }
                Ok(n) => {
                    let chunk = redacting.push(&buffer[..n]);
                    crate::ch03_progress::note(&chunk);
                    if !capture.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(&chunk) {
                        break; // closing our end: a writer left behind gets EPIPE
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = closed_tx.send(());
    });
    closed_rx
}

// ANCHOR: wait_for
/// Waits for the shell to exit, for the timeout, or for Ctrl+C, whichever comes first.
/// Also says whether the output pipe has closed already.
fn wait_for(child: &mut Child, closed: &mpsc::Receiver<()>, timeout: Duration) -> (Ending, bool) {
    let started = Instant::now();
    let mut pipe_closed = false;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return (Ending::Exited(status), pipe_closed),
            Ok(None) => {}
            Err(error) => return (Ending::WaitFailed(error), pipe_closed),
        }
        if interrupted() {
            return (Ending::Interrupted, pipe_closed);
        }
        if started.elapsed() >= timeout {
            return (Ending::TimedOut, pipe_closed);
        }
        if pipe_closed {
            thread::sleep(Duration::from_millis(1)); // output done: the exit is imminent
        } else {
            // Waking on the pipe's close makes a quick command cost ~1 ms, not a whole POLL.
            pipe_closed = closed.recv_timeout(POLL).is_ok();
        }
    }
}
// ANCHOR_END: wait_for

/// The last line of a bash answer, and the status the loop records.
fn describe_ending(ending: Ending, seconds: u64) -> (String, ToolStatus) {
    match ending {
        Ending::Exited(exit) => match (exit.code(), exit.signal()) {
            (Some(code), _) => (format!("exit code {code}"), ToolStatus::Ok),
            (None, Some(signal)) => (format!("killed by signal {signal}"), ToolStatus::Ok),
            (None, None) => ("ended".to_string(), ToolStatus::Ok),
        },
        Ending::TimedOut => (
            format!("timed out after {seconds} s; the command and its process group were killed"),
            ToolStatus::Error,
        ),
        Ending::Interrupted => (
            "interrupted by the user; the command and its process group were killed".to_string(),
            ToolStatus::Interrupted,
        ),
        Ending::WaitFailed(error) => {
            (format!("lost track of the command ({error}); it was killed"), ToolStatus::Error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TempRoot(PathBuf);
    impl TempRoot {
        fn new() -> TempRoot {
            let path = std::env::temp_dir().join(format!("mini-agent-tools-{}", unique_suffix()));
            fs::create_dir_all(&path).unwrap();
            TempRoot(fs::canonicalize(path).unwrap())
        }
    }
    impl Drop for TempRoot {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn run(workspace: &mut Workspace, name: &str, arguments: Value) -> ToolOutput {
        workspace.run(&ToolCall { id: "1".into(), name: name.into(), arguments: arguments.to_string() })
    }

    fn setup() -> (TempRoot, Workspace) {
        let root = TempRoot::new();
        let workspace = Workspace::new(&root.0).unwrap();
        (root, workspace)
    }

    #[test]
    fn the_head_survives_a_first_chunk_larger_than_the_limit() {
        let root = TempRoot::new();
        let mut capture = Capture::new(OutputStore { root: root.0.clone() });
        let stream: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        capture.push(&stream[..70_000]);
        capture.push(&stream[70_000..]);
        let text = capture.render();
        assert!(text.starts_with(std::str::from_utf8(&stream[..HEAD_BYTES]).unwrap()));
        assert!(text.ends_with(std::str::from_utf8(&stream[100_000 - TAIL_BYTES..]).unwrap()));
        assert!(text.contains(&format!("[… {} bytes omitted", 100_000 - HEAD_BYTES - TAIL_BYTES)));
    }

    #[test]
    fn schemas_are_six_and_small() {
        let schemas = tool_schemas();
        let names: Vec<&str> = schemas.iter().map(|s| s["function"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["read_file", "write_file", "edit_file", "list_files", "search", "bash"]);
        let bytes = serde_json::to_string(&schemas).unwrap().len();
        println!("tool schemas: {bytes} bytes serialized");
        assert!(bytes < 2_500, "schemas take {bytes} bytes");
    }

    #[test]
    fn bad_calls_are_errors_that_say_how_to_retry() {
        let (_root, mut workspace) = setup();
        let unknown = run(&mut workspace, "delete_everything", json!({}));
        assert_eq!(unknown.status, ToolStatus::Error);
        assert!(unknown.content.contains("the tools are read_file"));
        let bad_json =
            workspace.run(&ToolCall { id: "1".into(), name: "read_file".into(), arguments: "{path:".into() });
        assert_eq!(bad_json.status, ToolStatus::Error);
        assert!(
            bad_json.content.contains(r#"expected {"path": string, "limit"?: integer, "offset"?: integer}"#)
        );
        let missing = run(&mut workspace, "write_file", json!({"path": "a"}));
        assert!(missing.content.contains("missing field `content`"), "{}", missing.content);
        let wrong_type = run(&mut workspace, "bash", json!({"command": 5}));
        assert!(wrong_type.content.contains("invalid type"), "{}", wrong_type.content);
        let empty =
            workspace.run(&ToolCall { id: "1".into(), name: "list_files".into(), arguments: String::new() });
        assert_eq!(empty.status, ToolStatus::Ok);
    }

    /// Every truncated prefix of a valid call, and random bytes: always an answer, never a panic.
    #[test]
    fn garbage_arguments_never_panic() {
        let (_root, mut workspace) = setup();
        let valid = [
            ("read_file", r#"{"path":"a.txt","offset":2,"limit":3}"#),
            ("write_file", r#"{"path":"a.txt","content":"x"}"#),
            ("edit_file", r#"{"path":"a.txt","old_string":"x","new_string":"y","replace_all":true}"#),
            ("list_files", r#"{"path":".","pattern":"**/*.txt"}"#),
            ("search", r#"{"pattern":"x","path":".","glob":"*.txt"}"#),
            ("bash", r#"{"command":"echo hi","timeout_secs":5}"#),
        ];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut calls = 0;
        for (name, arguments) in valid {
            for end in 0..arguments.len() {
                let output = workspace.run(&ToolCall {
                    id: "1".into(),
                    name: name.into(),
                    arguments: arguments[..end].into(),
                });
                assert!(matches!(output.status, ToolStatus::Ok | ToolStatus::Error));
                calls += 1;
            }
            for _ in 0..100 {
                let bytes: Vec<u8> = (0..24)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed as u8
                    })
                    .collect();
                let arguments = String::from_utf8_lossy(&bytes).into_owned();
                let output = workspace.run(&ToolCall { id: "1".into(), name: name.into(), arguments });
                assert_eq!(output.status, ToolStatus::Error);
                calls += 1;
            }
        }
        println!("{calls} garbage calls answered");
    }

    #[test]
    fn write_then_read_gives_numbered_lines() {
        let (root, mut workspace) = setup();
        let written =
            run(&mut workspace, "write_file", json!({"path": "a/b/c.txt", "content": "one\ntwo\nthree\n"}));
        assert_eq!(written.content, "created `a/b/c.txt`: wrote 14 bytes");
        assert_eq!(fs::read_to_string(root.0.join("a/b/c.txt")).unwrap(), "one\ntwo\nthree\n");
        let read = run(&mut workspace, "read_file", json!({"path": "a/b/c.txt"}));
        assert_eq!(read.content, "     1\tone\n     2\ttwo\n     3\tthree\n");
        let window = run(&mut workspace, "read_file", json!({"path": "a/b/c.txt", "offset": 2, "limit": 1}));
        assert_eq!(window.content, "     2\ttwo\n[lines 2-2 of 3; continue with offset=3]\n");
        let replaced = run(&mut workspace, "write_file", json!({"path": "a/b/c.txt", "content": "x"}));
        assert!(replaced.content.starts_with("replaced"));
        let leftovers: Vec<_> = fs::read_dir(root.0.join("a/b")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn read_file_refuses_binary_missing_and_directories() {
        let (root, mut workspace) = setup();
        fs::write(root.0.join("blob"), b"abc\0def").unwrap();
        fs::create_dir(root.0.join("dir")).unwrap();
        let binary = run(&mut workspace, "read_file", json!({"path": "blob"}));
        assert!(binary.content.contains("binary"), "{}", binary.content);
        let missing = run(&mut workspace, "read_file", json!({"path": "nope.txt"}));
        assert_eq!(missing.content, "`nope.txt` does not exist; list_files shows what does");
        let directory = run(&mut workspace, "read_file", json!({"path": "dir"}));
        assert!(directory.content.contains("is a directory"));
        fs::write(root.0.join("short.txt"), "one line\n").unwrap();
        let past = run(&mut workspace, "read_file", json!({"path": "short.txt", "offset": u64::MAX}));
        assert_eq!(past.content, format!("`short.txt` has only 1 line; offset {} is past the end", u64::MAX));
        let negative = run(&mut workspace, "read_file", json!({"path": "short.txt", "offset": -1}));
        assert!(negative.content.starts_with("invalid arguments for read_file: invalid value: integer `-1`"));
    }

    #[test]
    fn read_file_caps_lines_and_bytes() {
        let (root, mut workspace) = setup();
        let text: String = (1..=3000).map(|n| format!("line {n}\n")).collect();
        fs::write(root.0.join("long.txt"), text).unwrap();
        let read = run(&mut workspace, "read_file", json!({"path": "long.txt"}));
        assert!(read.content.ends_with("[lines 1-2000 of 3000; continue with offset=2001]\n"));
        let wide: String = (1..=100).map(|_| format!("{}\n", "x".repeat(1000))).collect();
        fs::write(root.0.join("wide.txt"), wide).unwrap();
        let read = run(&mut workspace, "read_file", json!({"path": "wide.txt"}));
        assert!(read.content.len() <= READ_MAX_BYTES + 100);
        assert!(read.content.contains("of 100; continue with offset="));
    }

    #[test]
    fn matches_name_each_line_once_with_a_count() {
        let text = "x = x\ny\nx\n";
        let starts: Vec<usize> = text.match_indices('x').map(|(at, _)| at).collect();
        assert_eq!(match_lines(text, &starts), "lines 1 ×2, 3");
        assert_eq!(match_lines("a a", &[0, 2]), "line 1 ×2");
        let many = "x\n".repeat(12);
        let starts: Vec<usize> = many.match_indices('x').map(|(at, _)| at).collect();
        assert!(match_lines(&many, &starts).ends_with("9, 10, and 2 more"));
    }

    #[test]
    fn edit_replaces_a_unique_match_and_explains_failures() {
        let (root, mut workspace) = setup();
        fs::write(root.0.join("f.rs"), "fn main() {\n    println!(\"hi\");\n}\nlet x = 1;\nlet x = 1;\n")
            .unwrap();
        fs::set_permissions(root.0.join("f.rs"), fs::Permissions::from_mode(0o751)).unwrap();
        let ok = run(
            &mut workspace,
            "edit_file",
            json!({"path": "f.rs", "old_string": "\"hi\"", "new_string": "\"hello\""}),
        );
        assert_eq!(ok.content, "edited `f.rs`: replaced 1 occurrence at line 2");
        let mode = fs::metadata(root.0.join("f.rs")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o751, "the atomic rewrite keeps the file's mode");
        assert!(fs::read_to_string(root.0.join("f.rs")).unwrap().contains("\"hello\""));
        let none = run(
            &mut workspace,
            "edit_file",
            json!({"path": "f.rs", "old_string": "println!(\"helo\");", "new_string": "x"}),
        );
        assert_eq!(none.status, ToolStatus::Error);
        assert!(
            none.content.contains("Nearest lines:\n     2\t    println!(\"hello\");"),
            "{}",
            none.content
        );
        let several = run(
            &mut workspace,
            "edit_file",
            json!({"path": "f.rs", "old_string": "let x = 1;", "new_string": "y"}),
        );
        assert!(several.content.contains("matches 2 times in `f.rs` (lines 4, 5)"), "{}", several.content);
        let all = run(
            &mut workspace,
            "edit_file",
            json!({"path": "f.rs", "old_string": "let x = 1;", "new_string": "let y = 2;", "replace_all": true}),
        );
        assert_eq!(all.content, "edited `f.rs`: replaced 2 occurrences");
        let empty =
            run(&mut workspace, "edit_file", json!({"path": "f.rs", "old_string": "", "new_string": "y"}));
        assert_eq!(empty.status, ToolStatus::Error);
    }

    #[test]
    fn list_files_skips_noise_and_matches_globs() {
        let (root, mut workspace) = setup();
        for path in ["src/main.rs", "src/deep/lib.rs", "README.md", ".git/config", "target/x.rs"] {
            fs::create_dir_all(root.0.join(path).parent().unwrap()).unwrap();
            fs::write(root.0.join(path), "").unwrap();
        }
        let all = run(&mut workspace, "list_files", json!({}));
        assert_eq!(all.content, "README.md\nsrc/\nsrc/deep/\nsrc/deep/lib.rs\nsrc/main.rs");
        let rust = run(&mut workspace, "list_files", json!({"pattern": "*.rs"}));
        assert_eq!(rust.content, "src/deep/lib.rs\nsrc/main.rs");
        let nested = run(&mut workspace, "list_files", json!({"path": "src", "pattern": "**/l?b.rs"}));
        assert_eq!(nested.content, "src/deep/lib.rs");
        let top = run(&mut workspace, "list_files", json!({"pattern": "src/*.rs"}));
        assert_eq!(top.content, "src/main.rs");
        let none = run(&mut workspace, "list_files", json!({"pattern": "*.py"}));
        assert_eq!(none.content, "no files match `*.py` under `.`");
        let not_dir = run(&mut workspace, "list_files", json!({"path": "README.md"}));
        assert_eq!(not_dir.status, ToolStatus::Error);
    }

    #[test]
    fn list_files_is_bounded() {
        let (root, mut workspace) = setup();
        for n in 0..LIST_MAX_ENTRIES + 20 {
            fs::write(root.0.join(format!("f{n:04}")), "").unwrap();
        }
        let listing = run(&mut workspace, "list_files", json!({}));
        assert_eq!(listing.content.lines().count(), LIST_MAX_ENTRIES + 1);
        assert!(listing.content.ends_with("narrow it with path or pattern]"));
    }

    #[test]
    fn glob_rules() {
        assert!(Glob::matches("**/*.rs", "main.rs"));
        assert!(Glob::matches("**/*.rs", "a/b/main.rs"));
        assert!(Glob::matches("src/**", "src/a/b"));
        assert!(!Glob::matches("src/*", "src/a/b"));
        assert!(Glob::matches("?.md", "docs/a.md"));
        assert!(!Glob::matches("*.md", "a.rs"));
    }

    #[test]
    fn search_finds_literal_lines_and_skips_binary() {
        let (root, mut workspace) = setup();
        fs::create_dir_all(root.0.join("src")).unwrap();
        fs::write(root.0.join("src/a.rs"), "fn a() {}\nlet a = (1+1);\n").unwrap();
        fs::write(root.0.join("notes.md"), "(1+1) again\n").unwrap();
        fs::write(root.0.join("blob.bin"), b"(1+1)\0").unwrap();
        let found = run(&mut workspace, "search", json!({"pattern": "(1+1)"}));
        assert_eq!(
            found.content,
            "notes.md:1: (1+1) again\nsrc/a.rs:2: let a = (1+1);\n[1 binary, huge or unreadable files skipped]"
        );
        let filtered = run(&mut workspace, "search", json!({"pattern": "(1+1)", "glob": "*.rs"}));
        assert_eq!(filtered.content, "src/a.rs:2: let a = (1+1);");
        let one_file = run(&mut workspace, "search", json!({"pattern": "fn", "path": "src/a.rs"}));
        assert_eq!(one_file.content, "src/a.rs:1: fn a() {}");
        let nothing = run(&mut workspace, "search", json!({"pattern": "zzz"}));
        assert!(nothing.content.starts_with("no line contains `zzz` under `.`\n"));
        let empty = run(&mut workspace, "search", json!({"pattern": ""}));
        assert_eq!(empty.status, ToolStatus::Error);
    }

    #[test]
    fn long_answers_keep_head_and_tail_and_save_the_whole() {
        let (root, mut workspace) = setup();
        let text: String = (0..300).map(|n| format!("{n:06} marker {}\n", "y".repeat(300))).collect();
        fs::write(root.0.join("big.txt"), &text).unwrap();
        let found = run(&mut workspace, "search", json!({"pattern": "marker"}));
        let note = found.content.lines().find(|l| l.starts_with("[… ")).expect("an omission note");
        let saved = note.split("full output: ").nth(1).unwrap().trim_end_matches(']');
        let full = fs::read_to_string(root.0.join(saved)).unwrap();
        assert!(full.contains("big.txt:200: 000199 marker"));
        assert!(full.ends_with("[100 more matches not shown; narrow the search with path or glob]"));
        assert!(found.content.starts_with("big.txt:1: 000000 marker"));
        assert!(found.content.ends_with("narrow the search with path or glob]"));
        let mode = fs::metadata(root.0.join(saved)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = fs::metadata(root.0.join(".mini_agent")).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
    }

    #[test]
    fn paths_outside_the_root_are_refused() {
        let (root, mut workspace) = setup();
        std::os::unix::fs::symlink("/etc", root.0.join("out")).unwrap();
        for path in ["../x", "/etc/passwd", "out/passwd", "a/../../x", "~/x", "a\\b", "a\0b"] {
            let read = run(&mut workspace, "read_file", json!({"path": path}));
            assert_eq!(read.status, ToolStatus::Error, "{path}");
            assert!(read.content.starts_with("refused:"), "{path}: {}", read.content);
        }
        let inside = format!("{}/ok.txt", root.0.display());
        let absolute = run(&mut workspace, "write_file", json!({"path": inside, "content": "ok"}));
        assert_eq!(absolute.content, "created `ok.txt`: wrote 2 bytes");
    }

    /// The race the escape suite provokes, made deterministic: `resolve` said yes, then a
    /// directory on the way became a symlink pointing out. The open and the write catch it.
    #[test]
    fn a_path_changed_after_resolve_is_caught_at_use() {
        let (root, workspace) = setup();
        let outside = TempRoot::new();
        fs::write(outside.0.join("f"), "outside").unwrap();
        std::os::unix::fs::symlink(&outside.0, root.0.join("swapped")).unwrap();
        let as_if_resolved = root.0.join("swapped/f");
        let opened = workspace.open_confined(&as_if_resolved);
        assert_eq!(
            opened.err().unwrap(),
            "refused: `swapped/f` changed while being opened and now lies outside the root"
        );
        // The parent is opened without following it: the symlink itself is refused.
        let written = workspace.write_confined(&as_if_resolved, b"pwned");
        assert_eq!(written.unwrap_err(), "refused: `swapped` became a symlink after it was checked");
        assert_eq!(fs::read_to_string(outside.0.join("f")).unwrap(), "outside");
        assert_eq!(fs::read_dir(&outside.0).unwrap().count(), 1, "no temporary file outside");
    }

    #[test]
    fn the_agents_own_records_cannot_be_written() {
        let (root, mut workspace) = setup();
        fs::create_dir_all(root.0.join(".mini_agent/sessions")).unwrap();
        fs::write(root.0.join(".mini_agent/sessions/s.jsonl"), "{}\n").unwrap();
        let write =
            run(&mut workspace, "write_file", json!({"path": ".mini_agent/sessions/s.jsonl", "content": ""}));
        assert_eq!(write.status, ToolStatus::Error);
        assert!(write.content.contains("inside .mini_agent/"), "{}", write.content);
        let edit = run(
            &mut workspace,
            "edit_file",
            json!({"path": "./.mini_agent/sessions/s.jsonl", "old_string": "{}", "new_string": "[]"}),
        );
        assert!(edit.content.contains("inside .mini_agent/"), "{}", edit.content);
        assert_eq!(fs::read_to_string(root.0.join(".mini_agent/sessions/s.jsonl")).unwrap(), "{}\n");
    }

    #[test]
    fn writing_the_root_itself_is_refused() {
        let (_root, mut workspace) = setup();
        let root_write = run(&mut workspace, "write_file", json!({"path": ".", "content": ""}));
        assert_eq!(root_write.content, "`.` is a directory; give a file path");
    }
    // The bash tool is tested in tests/shell.rs, where the global interrupt flag is ours alone.
}
