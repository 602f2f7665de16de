//! The submodules that were there at start: what a command could change in them unseen.
//!
//! `git status` recurses into every submodule entry of the index, and there obeys that
//! submodule's own gitdir: `<path>/.git` when it is a directory, else the directory the
//! `<path>/.git` file names (`gitdir: ../.git/modules/<name>`). A new entry is reported by the
//! index check. One that was there at start is the person's, and what git does there must not
//! change unseen: its `config`, its hooks, a `commondir` planted in its gitdir (undone, as in
//! the repository's own), or the gitdir swapped for another. Each is stamped at start and
//! compared after every command: a few `stat`s per submodule, for at most [`MAX_SUBMODULES`].
//! Submodules of submodules are not followed.

use super::dir_fd::{Dir, Stamp, component};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Submodules watched at most.
pub const MAX_SUBMODULES: usize = 64;
/// Hooks of one submodule watched one by one at most (a new one changes the directory).
const MAX_HOOKS: usize = 32;

/// One submodule's gitdir as it was at start.
pub struct Submodule {
    /// Its path in the work tree, as the index names it.
    pub path: PathBuf,
    /// Its gitdir, relative to the root.
    pub gitdir: PathBuf,
    stamp: Stamp,
    config: Option<Stamp>,
    hooks: Option<Stamp>,
    hook_files: Vec<(Vec<u8>, Option<Stamp>)>,
    commondir_at_start: bool,
    /// Its gitdir was gone at the last look (and said so).
    gone: bool,
}

/// What changed in one submodule since the last look.
pub enum Change {
    /// Its gitdir is gone, or another directory is in its place (`git` follows the new one).
    Replaced,
    /// A `commondir` appeared in its gitdir, which is open here for the quarantine.
    Commondir(Dir),
    /// Its `config`, `hooks` directory or one of its hooks, by name relative to the gitdir.
    Changed(PathBuf),
}

/// The gitdirs of the submodules `gitlinks` names that are checked out in `root` (at
/// `root_path`) and lie inside it; `true` when there were more than are watched.
pub fn find(root_path: &Path, root: &Dir, gitlinks: &BTreeSet<Vec<u8>>) -> (Vec<Submodule>, bool) {
    let mut found = Vec::new();
    for path in gitlinks {
        if found.len() == MAX_SUBMODULES {
            return (found, true);
        }
        let path = component(path).to_path_buf();
        let Some(gitdir) = gitdir_of(root_path, root, &path) else { continue };
        if let Some(submodule) = Submodule::stamped(root, path, gitdir) {
            found.push(submodule);
        }
    }
    (found, false)
}

/// Where git finds the gitdir of the submodule at `path`, relative to the root; `None` when it
/// is not checked out, or its gitdir lies outside the root (where commands cannot write).
fn gitdir_of(root_path: &Path, root: &Dir, path: &Path) -> Option<PathBuf> {
    let work_tree = root.descend(path).ok()?;
    let entry = work_tree.stat(b".git").ok()?;
    if entry.is_dir() {
        return Some(path.join(".git"));
    }
    let text = work_tree.read_start(b".git", 4096).ok()?;
    let text = String::from_utf8(text).ok()?;
    let named = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    // The repository as it was at start is the person's: resolving its links is safe here.
    let target = root_path.join(path).join(named).canonicalize().ok()?;
    let inside = target.strip_prefix(root_path).ok()?.to_path_buf();
    (target.is_dir() && inside.as_os_str() != "").then_some(inside)
}

impl Submodule {
    fn stamped(root: &Dir, path: PathBuf, gitdir: PathBuf) -> Option<Submodule> {
        let dir = root.descend(&gitdir).ok()?;
        let hooks_dir = dir.child(b"hooks").ok();
        let mut hook_files = Vec::new();
        if let Some(hooks) = &hooks_dir {
            let not_sample = |name: &[u8], _| !name.ends_with(b".sample");
            for entry in hooks.entries(MAX_HOOKS, not_sample).map(|(entries, _)| entries).unwrap_or_default()
            {
                let stamp = hooks.stat(&entry.name).ok();
                hook_files.push((entry.name, stamp));
            }
        }
        Some(Submodule {
            path,
            gitdir,
            stamp: dir.stamp().ok()?,
            config: dir.stat(b"config").ok(),
            hooks: dir.stat(b"hooks").ok(),
            hook_files,
            commondir_at_start: dir.stat(b"commondir").is_ok(),
            gone: false,
        })
    }

    // ANCHOR: submodule_check
    /// Compares the submodule's gitdir with the last look, and remembers it as it is now, so
    /// that each change is said once.
    pub fn check(&mut self, root: &Dir) -> Vec<Change> {
        let mut changes = Vec::new();
        let opened =
            root.descend(&self.gitdir).ok().and_then(|dir| dir.stamp().ok().map(|stamp| (dir, stamp)));
        let Some((dir, stamp)) = opened else {
            if !self.gone {
                self.gone = true;
                changes.push(Change::Replaced);
            }
            return changes;
        };
        if self.gone || !stamp.same_object(&self.stamp) {
            // Another directory: said once; from now on compared with it, and a `commondir`
            // in it is the command's.
            changes.push(Change::Replaced);
            if let Some(fresh) = Submodule::stamped(root, self.path.clone(), self.gitdir.clone()) {
                *self = Submodule { commondir_at_start: false, ..fresh };
            }
        } else {
            let now = (dir.stat(b"config").ok(), dir.stat(b"hooks").ok());
            for (name, before, after) in [("config", self.config, now.0), ("hooks", self.hooks, now.1)] {
                if before != after {
                    changes.push(Change::Changed(PathBuf::from(name)));
                }
            }
            (self.config, self.hooks) = now;
            let hooks = dir.child(b"hooks").ok();
            for (name, before) in &mut self.hook_files {
                let after = hooks.as_ref().and_then(|hooks| hooks.stat(name).ok());
                if after != *before {
                    changes.push(Change::Changed(Path::new("hooks").join(component(name))));
                    *before = after;
                }
            }
        }
        if !self.commondir_at_start && dir.stat(b"commondir").is_ok() {
            changes.push(Change::Commondir(dir));
        }
        changes
    }
    // ANCHOR_END: submodule_check
}
