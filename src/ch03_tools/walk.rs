//! `list_files` and `search`: one breadth-first walk that never follows symlinks, skips the
//! usual noise (`.git`, `target`, …) and stops at a fixed number of entries or matches, so a
//! huge tree costs a bounded answer and Ctrl+C stops it between entries.

use super::resolve::{read_text, through_fd};
use super::*;

use crate::ch02_loop::interrupted;
use crate::ch03_tools::glob::Glob;
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};

/// The answer of a walk that Ctrl+C stopped.
pub(super) const WALK_INTERRUPTED: &str = "interrupted by the user; the walk stopped before it finished";

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

    pub(super) fn list_files(&self, args: ListArgs) -> Result<String, String> {
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

    pub(super) fn search(&self, args: SearchArgs) -> Result<String, String> {
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
                let text = crate::text::take_chars(line.trim(), SEARCH_LINE_MAX_CHARS);
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
