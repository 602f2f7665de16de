//! What the repository's `.git/config` names inside the work tree, read without git.
//!
//! The file tools never write `.git/`, and chapter 20 makes `.git/config` read-only to shell
//! commands too; but the files the config names are elsewhere: `core.hooksPath`
//! can put the hooks in the work tree (husky's `.husky/_`), and a `core.fsmonitor`, a filter's
//! `clean` or `process`, a `diff.*.textconv`, an `alias` with `!`, an `include.path` — any
//! setting git runs or reads — can name a script or a config file of the work tree. A command
//! that rewrites such a file has written code the person's next `git status` runs, and no diff
//! of theirs shows a git-ignored helper changing. So every regular file of the root that a
//! value names (any word of it, taken relative to the work tree as git runs commands there, or
//! to `.git/` as git reads an include) is protected with the hooks, whatever the key (the file
//! tools refuse it; chapter 20 mounts it read-only for commands):
//! keys that run something are many and grow with every git release, and a file the config
//! merely mentions costs nothing to protect.
//!
//! Read by hand, never through git, which would obey what it reads; bounded in size and in
//! what it returns. An include is not followed: what it names is protected, not read.

use std::path::{Path, PathBuf};

/// A config larger than this is not read (a real one is a few kilobytes).
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Files named by the config protected at most (each is a mount per command).
pub const MAX_NAMED_FILES: usize = 32;
/// Words of values looked at, at most: each costs two `stat`s, and the file tools look at
/// every write, so a config of a million words must not cost a second each time.
pub const MAX_WORDS: usize = 4096;

/// One `key = value` of a config file: its section (`core`, `filter "lfs"` → `filter`), key
/// and value, unquoted and without a trailing comment.
struct Setting {
    section: String,
    key: String,
    value: String,
}

/// The settings of `config`, in order; nothing when it is not a regular file of a sane size
/// (a FIFO would hang the start, a huge file cost memory).
fn settings(config: &Path) -> Vec<Setting> {
    let readable =
        config.symlink_metadata().is_ok_and(|meta| meta.is_file() && meta.len() <= MAX_CONFIG_BYTES);
    let Some(text) = readable.then(|| std::fs::read_to_string(config).ok()).flatten() else {
        return Vec::new();
    };
    let mut section = String::new();
    let mut settings = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            section = header.split([']', ' ', '"', '.']).next().unwrap_or_default().to_ascii_lowercase();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let value = value.trim();
        let value = match value.strip_prefix('"') {
            Some(quoted) => quoted.split('"').next().unwrap_or_default(),
            None => value.split(['#', ';']).next().unwrap_or_default().trim(),
        };
        let key = key.trim().to_ascii_lowercase();
        settings.push(Setting { section: section.clone(), key, value: value.to_string() });
    }
    settings
}

/// Where `core.hooksPath` puts the repository's hooks, when that is in the root: relative to
/// the work tree, as git takes it; the last setting wins, as in git. The root itself
/// (`hooksPath = .`) is no hooks folder: read-only, it would stop all work.
pub fn hooks_path(root: &Path, config: &Path) -> Option<PathBuf> {
    let setting = settings(config).into_iter().rfind(|s| s.section == "core" && s.key == "hookspath")?;
    let value = Some(setting.value).filter(|value| !value.is_empty() && !value.starts_with('~'))?;
    let path = inside(root, &root.join(value))?;
    (path != root).then_some(path)
}

/// Every regular file of the root that a value of `config` names, by any of its words, relative
/// to the work tree or to the config's own directory; at most [`MAX_NAMED_FILES`], from the
/// first [`MAX_WORDS`] words.
pub fn named_files(root: &Path, config: &Path) -> Vec<PathBuf> {
    let git_dir = config.parent().unwrap_or(root);
    let settings = settings(config);
    // `!cmd` is an alias that runs a shell command.
    let words = settings.iter().flat_map(|setting| setting.value.trim_start_matches('!').split_whitespace());
    let words = words
        .map(|word| word.trim_matches(['\'', '"']))
        .filter(|word| !word.is_empty() && !word.starts_with(['-', '~']) && !word.contains("://"));
    let mut found: Vec<PathBuf> = Vec::new();
    for word in words.take(MAX_WORDS) {
        let named = [root.join(word), git_dir.join(word)]
            .into_iter()
            .filter(|path| path.is_file())
            .filter_map(|path| inside(root, &path));
        for path in named {
            if found.len() == MAX_NAMED_FILES {
                return found;
            }
            if !found.contains(&path) {
                found.push(path);
            }
        }
    }
    found
}

/// `path` with its directory made canonical, when that is inside `root` (its last part is
/// not followed here: the caller protects a symlink where it leads).
fn inside(root: &Path, path: &Path) -> Option<PathBuf> {
    let parent = path.parent()?.canonicalize().ok()?;
    let path = parent.join(path.file_name()?);
    path.starts_with(root).then_some(path)
}
