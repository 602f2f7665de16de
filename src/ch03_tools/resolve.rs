//! Confinement: a path is resolved the way the kernel would resolve it — each symlink
//! followed, `..` applied to the real directory — and must land inside the workspace root.
//! The file is then opened without following a final symlink and its real location, read back
//! from the open descriptor, is checked again: a path swapped between check and use is caught.

use super::*;

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

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
    // ANCHOR: resolve_signature
    /// Resolves `path` as the kernel would — each symlink followed, `..` applied to the real
    /// directory — allowing a missing tail (a file about to be created). The result must lie
    /// inside the root.
    pub(crate) fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        // ANCHOR_END: resolve_signature
        // ANCHOR: resolve_start
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
        // ANCHOR_END: resolve_start
        // ANCHOR: resolve_walk
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
            // ANCHOR_END: resolve_walk
            // ANCHOR: resolve_lookup
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
        // ANCHOR_END: resolve_lookup
        // ANCHOR: resolve_inside
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
    // ANCHOR_END: resolve_inside
    // ANCHOR_END: resolve

    /// `path` relative to the root, as the model should write it next time.
    pub(super) fn relative(&self, real: &Path) -> String {
        match real.strip_prefix(&self.root) {
            Ok(rest) if rest.as_os_str().is_empty() => ".".into(),
            Ok(rest) => rest.to_string_lossy().into_owned(),
            Err(_) => real.to_string_lossy().into_owned(),
        }
    }

    // ANCHOR: open_confined
    /// Opens `path` for reading (and appending, with `append`) without following a final
    /// symlink (that fails with `ELOOP`) and without blocking on a FIFO: the one way a file the
    /// workspace could have planted is opened (chapter 9 opens journals with it too).
    pub(crate) fn open_no_follow(path: &Path, append: bool) -> io::Result<File> {
        OpenOptions::new().read(true).append(append).custom_flags(O_NOFOLLOW | O_NONBLOCK).open(path)
    }

    /// Opens a resolved path with [`Workspace::open_no_follow`], then checks where the opened
    /// file really is: a directory on the way swapped for a symlink after `resolve` is caught.
    pub(crate) fn open_confined(&self, real: &Path) -> Result<File, String> {
        let shown_path = self.relative(real);
        let file = Self::open_no_follow(real, false).map_err(|error| match error.kind() {
            io::ErrorKind::NotFound => {
                format!("`{shown_path}` does not exist; list_files shows what does")
            }
            _ if error.raw_os_error() == Some(ELOOP) => {
                format!("refused: `{shown_path}` became a symlink after it was checked")
            }
            _ => format!("cannot open `{shown_path}`: {error}"),
        })?;
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
pub(super) fn opened_path(file: &File) -> Option<PathBuf> {
    fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// A path that reaches *into* an open directory whatever happens to its name later
/// (the `openat` of std-only code); the plain path where /proc is missing.
pub(crate) fn through_fd(directory: &File, fallback: &Path) -> PathBuf {
    let magic = PathBuf::from(format!("/proc/self/fd/{}", directory.as_raw_fd()));
    if magic.is_dir() { magic } else { fallback.to_path_buf() }
}

/// A text file's bytes (bounded), or a polite refusal for binary and huge files.
pub(super) fn read_text(file: File, shown_path: &str) -> Result<Vec<u8>, String> {
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
pub(super) fn not_binary(start: &[u8], size: u64, shown_path: &str) -> Result<(), String> {
    if start[..start.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(format!("`{shown_path}` looks like a binary file ({size} bytes); it was not read"));
    }
    Ok(())
}
