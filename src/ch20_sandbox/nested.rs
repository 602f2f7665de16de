//! Nested repositories in the workspace: every `.git` below the root, watched cheaply.
//!
//! A `.git` in a subdirectory is a repository of its own, with its own configuration: git
//! recurses into it once it is a submodule entry in the index (which the person's `git add -A`
//! makes of any nested repository), and a `.git` *file* there may send git to any directory.
//! So after each command the sandbox wants to know whether one appeared or changed. Walking
//! the whole tree after every command would cost milliseconds in a real project; instead the
//! walk is done once, at start, and remembered as a tree of directories with their stamps.
//! A new entry in a directory changes that directory's `mtime` and `ctime` (and `ctime` cannot
//! be set back), so afterwards only stamps are compared: one `fstatat` per directory, an open
//! for each directory that has subdirectories, and a listing only of those that changed.
//!
//! The walk is bounded: [`MAX_DIRS`] directories, [`MAX_DEPTH`] levels, and it does not enter
//! `target/`, `node_modules/` and the like ([`SKIPPED`]: build output, dependencies and
//! caches, ignored by git in practice, and often thousands of directories). What it did not
//! cover, it says.

use super::dir_fd::{Dir, Stamp, component};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Directories remembered at most.
pub const MAX_DIRS: usize = 2048;
/// Levels below the root entered at most.
pub const MAX_DEPTH: usize = 64;
/// Not entered anywhere: build output, dependencies and caches, which git ignores in
/// practice and which often hold thousands of directories.
pub const SKIPPED: [&[u8]; 5] = [b"target", b"node_modules", b".venv", b"venv", b"__pycache__"];
/// Not entered at the root: the repository's own directory (watched apart) and the agent's.
const SKIPPED_AT_ROOT: [&[u8]; 2] = [b".git", b".mini_agent"];

/// One directory as last seen.
struct Node {
    stamp: Stamp,
    /// Its `.git`, when it has one (not for the root: its own is watched apart).
    git: Option<Stamp>,
    children: BTreeMap<Vec<u8>, Node>,
}

/// What a look found: `.git` entries that are new, or that changed (a file rewritten, a
/// directory replaced), as paths relative to the root.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found {
    pub new: Vec<PathBuf>,
    pub changed: Vec<PathBuf>,
}

/// The tree of the workspace's directories, and how many it holds.
pub struct Nested {
    root: Node,
    dirs: usize,
    /// Whether a bound stopped a walk: then not every directory is watched.
    pub partial: bool,
}

impl Nested {
    /// Walks the tree below `root` once, remembering every directory and every `.git`.
    pub fn start(root: &Dir) -> std::io::Result<Nested> {
        let mut node = Node { stamp: root.stamp()?, git: None, children: BTreeMap::new() };
        let (mut dirs, mut partial) = (1, false);
        Walk { dirs: &mut dirs, partial: &mut partial, found: None }.fill(&mut node, root, Path::new(""), 0);
        Ok(Nested { root: node, dirs, partial })
    }

    /// Compares the tree with what it was, remembers what it is now, and says which `.git`
    /// entries appeared or changed.
    pub fn check(&mut self, root: &Dir) -> Found {
        let mut found = Found::default();
        if let Ok(stamp) = root.stamp() {
            let mut walk = Walk { dirs: &mut self.dirs, partial: &mut self.partial, found: Some(&mut found) };
            walk.compare(&mut self.root, root, stamp, Path::new(""), 0);
        }
        found
    }

    /// How many directories it watches.
    pub fn directories(&self) -> usize {
        self.dirs
    }
}

struct Walk<'a> {
    dirs: &'a mut usize,
    partial: &'a mut bool,
    /// Where new and changed `.git` entries go; `None` at start, when nothing is new.
    found: Option<&'a mut Found>,
}

/// Whether the walk enters the subdirectory `name` of a directory `depth` levels down.
fn entered(name: &[u8], depth: usize) -> bool {
    name != b".git" && !SKIPPED.contains(&name) && !(depth == 0 && SKIPPED_AT_ROOT.contains(&name))
}

impl Walk<'_> {
    /// Walks the directory `dir` of `node` for the first time: its `.git`, and every
    /// subdirectory, added to the tree. A `.git` met here is new (after the start).
    fn fill(&mut self, node: &mut Node, dir: &Dir, path: &Path, depth: usize) {
        if depth > 0 {
            node.git = dir.stat(b".git").ok();
            if let (Some(_), Some(found)) = (node.git, self.found.as_deref_mut()) {
                found.new.push(path.join(".git"));
            }
        }
        let Ok((entries, complete)) = dir.entries(MAX_DIRS, |name, is_dir| is_dir && entered(name, depth))
        else {
            return;
        };
        *self.partial |= !complete;
        for entry in &entries {
            self.adopt(node, &entry.name, dir, path, depth);
        }
    }

    /// Adds the subdirectory `name` of `dir` (the directory of `node`) to the tree, walked.
    /// One that cannot be opened (mode 000) is kept with its stamp: git cannot read it either,
    /// and a `chmod` that opens it changes its stamp, so it is walked then.
    fn adopt(&mut self, node: &mut Node, name: &[u8], dir: &Dir, path: &Path, depth: usize) {
        if *self.dirs >= MAX_DIRS || depth + 1 > MAX_DEPTH {
            *self.partial = true;
            return;
        }
        let Some(stamp) = dir.stat(name).ok().filter(Stamp::is_dir) else { return };
        let mut child = Node { stamp, git: None, children: BTreeMap::new() };
        *self.dirs += 1;
        if let Ok(child_dir) = dir.child(name) {
            self.fill(&mut child, &child_dir, &path.join(component(name)), depth + 1);
        }
        node.children.insert(name.to_vec(), child);
    }

    /// Forgets the subdirectory `name` of `node` and everything below it.
    fn forget(&mut self, node: &mut Node, name: &[u8]) {
        if let Some(child) = node.children.remove(name) {
            *self.dirs -= child.count();
        }
    }

    // ANCHOR: compare
    /// Compares the remembered `node` with its directory `dir` as it is now (`now`). A changed
    /// stamp means entries came or went: the directory is listed again. Its `.git` is looked
    /// at when it has one (a file rewritten in place changes no directory) or may have got
    /// one; then each remembered subdirectory is compared in turn, opened only when it has
    /// something below it to compare or its stamp changed.
    fn compare(&mut self, node: &mut Node, dir: &Dir, now: Stamp, path: &Path, depth: usize) {
        let changed = now != node.stamp;
        node.stamp = now;
        if depth > 0 && (changed || node.git.is_some()) {
            let git = dir.stat(b".git").ok();
            let what = match (node.git, git) {
                (None, Some(_)) => Some(true),
                (Some(before), Some(after)) if before != after => {
                    // A directory's own stamp moves with every commit made in it: only one put
                    // in its place counts. A file (`gitdir: …`) counts when written at all.
                    (!before.is_dir() || !after.same_object(&before)).then_some(false)
                }
                _ => None,
            };
            if let (Some(new), Some(found)) = (what, self.found.as_deref_mut()) {
                let list = if new { &mut found.new } else { &mut found.changed };
                list.push(path.join(".git"));
            }
            node.git = git;
        }
        let known: Vec<Vec<u8>> = node.children.keys().cloned().collect();
        let listed = match changed {
            true => dir.entries(MAX_DIRS, |name, is_dir| is_dir && entered(name, depth)).ok(),
            false => None,
        };
        if let Some((entries, complete)) = listed {
            *self.partial |= !complete;
            let present: BTreeSet<&[u8]> = entries.iter().map(|entry| entry.name.as_slice()).collect();
            // A listing cut short cannot tell what is gone: the comparison below will.
            for name in known.iter().filter(|name| complete && !present.contains(name.as_slice())) {
                self.forget(node, name);
            }
            for entry in &entries {
                if !node.children.contains_key(&entry.name) {
                    self.adopt(node, &entry.name, dir, path, depth);
                }
            }
        }
        for name in known {
            let Some((before, bare)) = node.children.get(&name).map(|child| (child.stamp, child.is_bare()))
            else {
                continue;
            };
            let Some(now) = dir.stat(&name).ok().filter(Stamp::is_dir) else {
                self.forget(node, &name);
                continue;
            };
            if !now.same_object(&before) {
                // Another directory under the same name: everything in it is new.
                self.forget(node, &name);
                self.adopt(node, &name, dir, path, depth);
                continue;
            }
            if now == before && bare {
                continue;
            }
            let child = node.children.get_mut(&name).expect("looked up above");
            match dir.child(&name) {
                Ok(child_dir) => {
                    self.compare(child, &child_dir, now, &path.join(component(&name)), depth + 1)
                }
                Err(_) => child.stamp = now,
            }
        }
    }
    // ANCHOR_END: compare
}

impl Node {
    /// Whether nothing below it is remembered: no subdirectory, no `.git`.
    fn is_bare(&self) -> bool {
        self.children.is_empty() && self.git.is_none()
    }

    /// This directory and every one below it in the tree.
    fn count(&self) -> usize {
        1 + self.children.values().map(Node::count).sum::<usize>()
    }
}
