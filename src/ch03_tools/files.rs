//! `read_file`, `write_file`, `edit_file`: the three tools that touch one file. Reads are
//! numbered and capped; writes go to a temporary file beside the target and are renamed into
//! place, never through a symlink and never into the agent's own records; an edit must match
//! exactly once (or say `replace_all`), and a miss shows the nearest lines to retry with.

use super::output::{temp_prefix, unique_suffix};
use super::resolve::{not_binary, opened_path, read_text, regular_file, through_fd};
use super::*;
use crate::text::take_chars;

use crate::ch02_loop::plural;
use crate::ch03_tools::bounds::{FILE_MAX_BYTES, read_line_capped, too_big};
use crate::ch03_tools::diff::{COMPARE_MAX_BYTES, Diff, WRITE_COMPARE_MAX_BYTES, diff_lines};
use std::fs::{self, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

impl Workspace {
    pub(super) fn read_file(&self, args: ReadArgs) -> Result<String, String> {
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
                format!("{}… [line cut]", take_chars(text, LINE_MAX_CHARS))
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

    pub(super) fn write_file(&self, args: WriteArgs) -> Result<String, String> {
        let real = self.resolve(&args.path)?;
        if args.content.len() as u64 > FILE_MAX_BYTES {
            return Err(too_big(&self.relative(&real), args.content.len() as u64));
        }
        let existed = fs::symlink_metadata(&real).is_ok();
        // What the file held, for the count of lines changed (none when it cannot be compared).
        let before = if existed { self.current_text(&real).ok() } else { Some(String::new()) };
        self.write_confined(&real, args.content.as_bytes())?;
        let verb = if existed { "replaced" } else { "created" };
        let stat =
            before.map(|old| format!(" ({})", diff_lines(&old, &args.content).stat())).unwrap_or_default();
        Ok(format!("{verb} `{}`: wrote {}{stat}", self.relative(&real), plural(args.content.len(), "byte")))
    }

    /// A file's text as it is now, to compare a write with: refused when binary, not UTF-8,
    /// or larger than [`WRITE_COMPARE_MAX_BYTES`].
    fn current_text(&self, real: &Path) -> Result<String, String> {
        let shown_path = self.relative(real);
        let file = self.open_confined(real)?;
        let size = regular_file(&file, &shown_path)?.len();
        if size > WRITE_COMPARE_MAX_BYTES {
            let limit = WRITE_COMPARE_MAX_BYTES >> 20;
            return Err(format!(
                "`{shown_path}` is {size} bytes, more than the {limit} MiB compared with a write"
            ));
        }
        let bytes = read_text(file, &shown_path)?;
        String::from_utf8(bytes).map_err(|_| format!("`{shown_path}` is not valid UTF-8"))
    }

    // ANCHOR: write_confined
    /// Writes atomically: a temporary file in the same directory, then a rename over the
    /// target. Both happen inside the directory opened and checked first, so a directory
    /// swapped for a symlink cannot redirect the write, and the rename replaces a symlink
    /// rather than writing through it.
    pub(super) fn write_confined(&self, real: &Path, content: &[u8]) -> Result<(), String> {
        self.write_confined_with(real, &mut |file| file.write_all(content))
    }
    // ANCHOR_END: write_confined

    // ANCHOR: write_confined_with
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
    // ANCHOR_END: write_confined_with

    // ANCHOR: protected
    /// The agent's own records (`.mini_agent/`: journals, saved outputs) are its memory of
    /// what happened, `.git/` holds a config and hooks that git runs, and the agent's own
    /// configuration directory holds what it trusts without asking: a file tool that could
    /// write any of them would turn write permission into rewriting history or running code.
    /// `real` is a resolved path; any component, at any depth, counts.
    fn not_protected(&self, real: &Path, shown_path: &str) -> Result<(), String> {
        if let Some(config) =
            own_config::protected_config_dirs().into_iter().find(|dir| real.starts_with(dir))
        {
            return Err(format!(
                "refused: `{shown_path}` is inside {}, the agent's own configuration and approvals; \
                 the file tools never write there",
                config.display()
            ));
        }
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
            None if self.named_by_git_config(real) => Err(format!(
                "refused: `{shown_path}` is named by .git/config (hooks, a filter, an include: \
                 something git runs or reads); the file tools never write there"
            )),
            None => Ok(()),
        }
    }

    /// Whether `.git/config` keeps hooks at `real` (`core.hooksPath`) or names it as a file
    /// git runs or reads: those are code the person's next `git` runs, as `.git/hooks` is.
    fn named_by_git_config(&self, real: &Path) -> bool {
        let config = self.root.join(".git/config");
        super::git_config::hooks_path(&self.root, &config).is_some_and(|hooks| real.starts_with(hooks))
            || super::git_config::named_files(&self.root, &config).iter().any(|named| named == real)
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
    /// Checks an edit against the file as it is now, without making it.
    fn plan_edit(&self, args: &EditArgs) -> Result<PlannedEdit, String> {
        let real = self.resolve(&args.path)?;
        let shown_path = self.relative(&real);
        if args.old_string.is_empty() {
            return Err("old_string is empty; to create a file use write_file".into());
        }
        // The file first: "nothing to change" about a file that is not there would send the
        // model looking for a difference in its strings instead of for the file.
        let bytes = read_text(self.open_confined(&real)?, &shown_path)?;
        if args.old_string == args.new_string {
            return Err("old_string and new_string are the same; nothing to change".into());
        }
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
        let first_line = line_number_at(&text, starts[0]);
        Ok(PlannedEdit { real, shown_path, text, count, first_line, size })
    }
    // ANCHOR_END: edit_file

    // ANCHOR: edit_file_write
    pub(super) fn edit_file(&self, args: EditArgs) -> Result<String, String> {
        let PlannedEdit { real, shown_path, text, count, first_line, size } = self.plan_edit(&args)?;
        // A result small enough to hold is made whole, written, and compared with the file
        // as it was (`+2 −1`); a larger one is written as it is made, never held whole.
        let stat = if size <= COMPARE_MAX_BYTES {
            let new = text.replace(&args.old_string, &args.new_string);
            self.write_confined(&real, new.as_bytes())?;
            format!(" ({})", diff_lines(&text, &new).stat())
        } else {
            self.write_confined_with(&real, &mut |out| {
                let mut rest = text.as_str();
                while let Some(at) = rest.find(&args.old_string) {
                    out.write_all(&rest.as_bytes()[..at])?;
                    out.write_all(args.new_string.as_bytes())?;
                    rest = &rest[at + args.old_string.len()..];
                }
                out.write_all(rest.as_bytes())
            })?;
            String::new()
        };
        Ok(match count {
            1 => format!("edited `{shown_path}`: replaced 1 occurrence at line {first_line}{stat}"),
            count => format!("edited `{shown_path}`: replaced {count} occurrences{stat}"),
        })
    }
    // ANCHOR_END: edit_file_write

    // ANCHOR: proposed_change
    /// What a `write_file` or `edit_file` call would change, computed from the file as it is
    /// now and writing nothing: for the person asked to approve it (chapter 12). `None` for
    /// the other tools. A call that will fail says so instead of showing a diff.
    pub fn proposed_change(&self, call: &ToolCall) -> Option<Change> {
        let arguments = if call.arguments.trim().is_empty() { "{}" } else { call.arguments.as_str() };
        let will_fail = |path: &str, verb, why: String| Change {
            path: shown(path),
            verb,
            diff: None,
            note: Some(format!("the call will fail: {why}")),
        };
        Some(match call.name.as_str() {
            "write_file" => match parse::<WriteArgs>("write_file", arguments) {
                Ok(args) => {
                    self.write_change(&args).unwrap_or_else(|why| will_fail(&args.path, "write", why))
                }
                Err(why) => will_fail("?", "write", why),
            },
            "edit_file" => match parse::<EditArgs>("edit_file", arguments) {
                Ok(args) => {
                    self.edit_change(&args).unwrap_or_else(|why| will_fail(&args.path, "change", why))
                }
                Err(why) => will_fail("?", "change", why),
            },
            _ => return None,
        })
    }
    // ANCHOR_END: proposed_change

    fn write_change(&self, args: &WriteArgs) -> Result<Change, String> {
        let real = self.resolve(&args.path)?;
        let path = self.relative(&real);
        self.not_protected(&real, &path)?;
        if args.content.len() as u64 > FILE_MAX_BYTES {
            return Err(too_big(&path, args.content.len() as u64));
        }
        if fs::symlink_metadata(&real).is_err() {
            let diff = Some(diff_lines("", &args.content));
            return Ok(Change { path, verb: "create", diff, note: None });
        }
        // A file that cannot be compared (binary, huge, not UTF-8): its new content is shown.
        let (old, note) = match self.current_text(&real) {
            Ok(old) => (old, None),
            Err(why) => (String::new(), Some(format!("the file on disk is not compared: {why}"))),
        };
        Ok(Change { path, verb: "replace", diff: Some(diff_lines(&old, &args.content)), note })
    }

    fn edit_change(&self, args: &EditArgs) -> Result<Change, String> {
        let plan = self.plan_edit(args)?;
        self.not_protected(&plan.real, &plan.shown_path)?;
        let path = plan.shown_path;
        if plan.size > COMPARE_MAX_BYTES {
            let note = format!("not shown: the file would be {} bytes, too large to compare", plan.size);
            return Ok(Change { path, verb: "change", diff: None, note: Some(note) });
        }
        let diff = diff_lines(&plan.text, &plan.text.replace(&args.old_string, &args.new_string));
        Ok(Change { path, verb: "change", diff: Some(diff), note: None })
    }
}

/// An edit checked against the file, not made yet.
struct PlannedEdit {
    real: PathBuf,
    shown_path: String,
    text: String,
    count: usize,
    first_line: usize,
    size: u64,
}

// ANCHOR: change
/// A change to one file, before it is made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The file, as the tools name it (relative to the root).
    pub path: String,
    /// What happens to it: `create` or `replace` (`write_file`), `change` (`edit_file`).
    pub verb: &'static str,
    /// The lines that change (for a file that cannot be compared, the new content); `None`
    /// when there is nothing to show.
    pub diff: Option<Diff>,
    /// What to know beside it: the call will fail (the tool's own reason), or the file on
    /// disk is not compared, or the change is too large to show.
    pub note: Option<String>,
}

/// The `+2 −1` a successful `write_file` or `edit_file` result ends with, if any.
pub fn change_stat(result: &str) -> Option<&str> {
    let first = result.lines().next()?;
    let start = first.rfind(" (+")?;
    first[start + 2..].strip_suffix(')').filter(|stat| stat.contains(" −"))
}
// ANCHOR_END: change

fn line_number_at(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}

/// Where the matches are, each line named once: `lines 1 ×2, 4` (the first ten lines).
/// One pass over the text, however many matches there are.
pub(super) fn match_lines(text: &str, starts: &[usize]) -> String {
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
        .map(|(_, number, line)| format!("{number:>6}\t{}", take_chars(line, SEARCH_LINE_MAX_CHARS)))
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
