//! An attempt that does not pass leaves nothing behind: its changes are kept under a ref, and
//! the tree is put back as the attempt found it.
//!
//! Without this, the next commit would carry them: task 2 fails and leaves `notes.txt`, task 3
//! passes, and `git add -A` puts `notes.txt` into task 3's commit. So before the model runs,
//! the harness records the tree ([`Git::start_attempt`]): a commit, in the shape of a stash,
//! of the work tree (tracked and untracked files, as `git add -A` sees them) whose parents are
//! `HEAD` and the index, kept at `refs/mini-agent/attempt`. An attempt that fails its check,
//! stops (Ctrl+C, a server error) or is cut off by a crash is then set aside
//! ([`Git::set_aside`]): the tree as the attempt left it becomes a commit on top of that start,
//! kept at `refs/mini-agent/failed/<task>/<attempt>` — `git show` on it is exactly what the
//! attempt changed — and the files it changed or removed come back, the index and `HEAD` are as
//! they were, and the files it added go. What counts as added is decided with the start's
//! ignore rules, since an attempt may edit `.gitignore`: files git ignored before the attempt,
//! `.mini_agent/` and the task list are never touched. Snapshots are made in a private index, so the person's own is read, never
//! written, until it is put back. Every step is a plain git object or a ref update, so a
//! `kill -9` in the middle leaves the start recorded, and the next run sets aside again.

use super::git::{ATTEMPT_REF, Calls, Git};
use super::git_process::GitCall;
use crate::ch02_loop::Error;
use crate::text::plural;
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Where an attempt's changes were kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetAside {
    /// The ref holding them: `refs/mini-agent/failed/<task>/<attempt>`.
    pub reference: String,
    /// How many files the attempt added, changed or removed.
    pub files: usize,
    /// Paths the attempt added that were left in place: a repository of their own, or behind
    /// a symlink.
    pub left: Vec<String>,
}

impl SetAside {
    /// One line for people: where the changes are and how to see them.
    pub fn describe(&self) -> String {
        let mut line = format!(
            "its changes ({}) are kept in {} (see them: git show {}), and the work tree is back as the \
             attempt found it",
            plural(self.files, "file"),
            self.reference,
            self.reference
        );
        if !self.left.is_empty() {
            line.push_str(&format!(" but for what was left in place: {}", self.left.join(", ")));
        }
        line
    }
}

/// The namespace of the refs that keep set-aside attempts.
pub const FAILED_REFS: &str = "refs/mini-agent/failed";

/// The start of an attempt, read back from its commit.
struct Start {
    commit: String,
    tree: String,
    head: Option<String>,
    /// The branch `HEAD` named (`None`: detached).
    head_ref: Option<String>,
    index_tree: String,
}

/// One path that differs between two trees (`git diff-tree --raw`).
struct Change {
    old_mode: String,
    new_mode: String,
    old_oid: String,
    new_oid: String,
    added: bool,
    deleted: bool,
    /// Relative to the root, as git wrote it (not necessarily UTF-8).
    path: Vec<u8>,
}

/// The mode of a gitlink: a repository inside the work tree.
const GITLINK: &str = "160000";

impl Git {
    // ANCHOR: start_attempt
    /// Records the tree as it is now as the start of `attempt` of task `id`.
    pub fn start_attempt(&self, id: &str, attempt: u32) -> Result<(), Error> {
        let calls = self.calls()?;
        let head = calls.object("HEAD^{commit}")?;
        let head_ref = calls.head_ref()?;
        let index = calls.text(["write-tree"])?;
        let work_tree = self.snapshot(&calls)?;
        let index =
            calls.commit_tree(&index, &[head.as_deref()], "mini-agent: the index an attempt started from")?;
        let message = format!(
            "mini-agent: the start of task {id}, attempt {attempt}\n\nHEAD: {}\n",
            head_ref.as_deref().unwrap_or(DETACHED)
        );
        let start = calls.commit_tree(&work_tree, &[head.as_deref(), Some(&index)], &message)?;
        calls.run(GitCall::new([
            "update-ref",
            "-m",
            "mini-agent: an attempt starts",
            ATTEMPT_REF,
            &start,
        ]))?;
        Ok(())
    }
    // ANCHOR_END: start_attempt

    /// Whether the start of an attempt is recorded: one is running, or a run stopped during it.
    pub fn attempt_recorded(&self) -> Result<bool, Error> {
        let calls = Calls::unguarded(self);
        Ok(calls.object(&format!("{ATTEMPT_REF}^{{commit}}"))?.is_some())
    }

    // ANCHOR: set_aside
    /// After an attempt that did not pass: its changes are kept under a ref and the tree, the
    /// index and `HEAD` are put back as the attempt found them. `None` when no start is
    /// recorded or the attempt changed nothing.
    pub fn set_aside(&self, id: &str, attempt: u32, why: &str) -> Result<Option<SetAside>, Error> {
        let calls = self.calls()?;
        let Some(start) = Start::read(&calls)? else { return Ok(None) };
        let left_tree = self.snapshot(&calls)?;
        let now_head = calls.object("HEAD^{commit}")?;
        let changes = calls.changes(&start.tree, &left_tree)?;
        if changes.is_empty() && now_head == start.head {
            self.put_back(&calls, &start, &[])?;
            calls.run(GitCall::new(["update-ref", "-d", ATTEMPT_REF]))?;
            return Ok(None);
        }
        // Kept before any file is touched; the attempt's own commits stay reachable.
        let theirs = now_head.as_deref().filter(|_| now_head != start.head);
        let message = format!("mini-agent: task {id}, attempt {attempt}, set aside ({why})\n");
        let parents = [Some(start.commit.as_str()), theirs];
        let reference = calls.keep(id, attempt, &calls.commit_tree(&left_tree, &parents, &message)?)?;
        self.put_back(&calls, &start, &changes)?;
        // ANCHOR_END: set_aside
        // ANCHOR: set_aside_new
        // With the start's ignore rules back (an attempt may edit or add a .gitignore), what is
        // new in the tree is the attempt's: that is what goes, and what the record holds.
        let mut left = Vec::new();
        let rules: Vec<&Change> = changes.iter().filter(|c| c.added && is_ignore_file(&c.path)).collect();
        for change in &rules {
            if !remove_added(&self.root, &change.path) {
                left.push(String::from_utf8_lossy(&change.path).into_owned());
            }
        }
        let after = self.snapshot(&calls)?;
        let new: Vec<Change> = calls.changes(&start.tree, &after)?.into_iter().filter(|c| c.added).collect();
        let edited: Vec<&Change> = changes.iter().filter(|c| !c.added).chain(rules.iter().copied()).collect();
        let mut seen: Vec<&[u8]> =
            new.iter().chain(rules.iter().copied()).map(|c| c.path.as_slice()).collect();
        let mut added: Vec<&[u8]> = changes.iter().filter(|c| c.added).map(|c| c.path.as_slice()).collect();
        seen.sort();
        added.sort();
        if seen != added {
            let record = self.record(&calls, &after, &edited)?;
            let commit = calls.commit_tree(&record, &parents, &message)?;
            let kept = "mini-agent: an attempt set aside";
            calls.run(GitCall::new(["update-ref", "-m", kept, &reference, &commit]))?;
        }
        for change in &new {
            if change.new_mode == GITLINK || !remove_added(&self.root, &change.path) {
                left.push(String::from_utf8_lossy(&change.path).into_owned());
            }
        }
        calls.run(GitCall::new(["update-ref", "-d", ATTEMPT_REF]))?;
        Ok(Some(SetAside { reference, files: edited.len() + new.len(), left }))
    }
    // ANCHOR_END: set_aside_new

    /// The refs that keep task `id`'s set-aside attempts, oldest first.
    pub fn set_aside_refs(&self, id: &str) -> Result<Vec<String>, Error> {
        let calls = Calls::unguarded(self);
        let prefix = format!("{FAILED_REFS}/{}/", ref_component(id));
        let listed = calls.text(["for-each-ref", "--sort=creatordate", "--format=%(refname)", &prefix])?;
        Ok(listed.lines().map(str::to_string).collect())
    }

    /// The work tree under the root as `git add -A` sees it, as a tree, built in a private
    /// copy of the index.
    fn snapshot(&self, calls: &Calls) -> Result<String, Error> {
        self.with_private_index("snapshot", |index| {
            copy_index(&self.git_dir.join("index"), index)?;
            calls.run(GitCall::new(calls.with_pathspec(&["add", "-A"])).index(index))?;
            Ok(calls.run(GitCall::new(["write-tree"]).index(index))?.text().trim().to_string())
        })
    }

    /// The tree `after` (the start and what is new since) with the attempt's `edited` files as
    /// it left them: the record of an attempt that changed the ignore rules.
    fn record(&self, calls: &Calls, after: &str, edited: &[&Change]) -> Result<String, Error> {
        let mut entries = Vec::new();
        for change in edited {
            // `--index-info` paths are from the top of the repository; a removed path is mode 0.
            let (mode, oid) = if change.deleted {
                ("0", &change.old_oid)
            } else {
                (change.new_mode.as_str(), &change.new_oid)
            };
            entries.extend_from_slice(format!("{mode} {oid}\t{}", self.prefix).as_bytes());
            entries.extend_from_slice(&change.path);
            entries.push(b'\n');
        }
        self.with_private_index("record", |index| {
            calls.run(GitCall::new(["read-tree", after]).index(index))?;
            calls.run(GitCall::new(["update-index", "--index-info"]).index(index).input(entries))?;
            Ok(calls.run(GitCall::new(["write-tree"]).index(index))?.text().trim().to_string())
        })
    }

    /// Runs `work` with the path of a private index file, removed afterwards.
    fn with_private_index<T>(
        &self,
        name: &str,
        work: impl FnOnce(&Path) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let private = self.git_dir.join(format!("mini-agent-{}-{name}.index", std::process::id()));
        let _ = fs::remove_file(&private);
        let result = work(&private);
        let _ = fs::remove_file(&private);
        result
    }

    // ANCHOR: restore
    /// Puts `HEAD`, the files the attempt changed or removed, and the index back to `start`.
    fn put_back(&self, calls: &Calls, start: &Start, changes: &[Change]) -> Result<(), Error> {
        if let Some(name) = &start.head_ref
            && calls.head_ref()?.as_deref() != Some(name.as_str())
        {
            calls.run(GitCall::new(["symbolic-ref", "HEAD", name]))?;
        }
        if calls.object("HEAD^{commit}")? != start.head {
            let why = "mini-agent: put back after an attempt";
            let mut args = vec!["update-ref", "-m", why];
            match (&start.head, &start.head_ref) {
                (Some(head), Some(_)) => args.extend(["HEAD", head]),
                (Some(head), None) => args.extend(["--no-deref", "HEAD", head]),
                (None, Some(branch)) => args.extend(["-d", branch]), // unborn at the start
                (None, None) => args.clear(),
            }
            if !args.is_empty() {
                calls.run(GitCall::new(args))?;
            }
        }
        let back: Vec<&[u8]> =
            changes.iter().filter(|c| !c.added && c.old_mode != GITLINK).map(|c| c.path.as_slice()).collect();
        if !back.is_empty() {
            let paths = back.join(&0u8);
            self.with_private_index("start", |index| {
                calls.run(GitCall::new(["read-tree", &start.tree]).index(index))?;
                calls.run(GitCall::new(["checkout-index", "-f", "-z", "--stdin"]).index(index).input(paths))
            })?;
        }
        // The index as it was (stat information kept where the content matches).
        calls.run(GitCall::new(["read-tree", "--reset", &start.index_tree]))?;
        Ok(())
    }
    // ANCHOR_END: restore
}

/// The text that stands for a detached `HEAD` in a start's message.
const DETACHED: &str = "(detached)";

impl Start {
    /// The start recorded at [`ATTEMPT_REF`], if any.
    fn read(calls: &Calls) -> Result<Option<Start>, Error> {
        let Some(commit) = calls.object(&format!("{ATTEMPT_REF}^{{commit}}"))? else { return Ok(None) };
        let raw = calls.text(["cat-file", "commit", &commit])?;
        let (headers, message) = raw.split_once("\n\n").unwrap_or((&raw, ""));
        let field = |name: &'static str| headers.lines().filter_map(move |l| l.strip_prefix(name));
        let tree = field("tree ").next().unwrap_or_default().to_string();
        let mut parents: Vec<String> = field("parent ").map(str::to_string).collect();
        let index = parents.pop().unwrap_or_default();
        let head_ref = message.lines().find_map(|l| l.strip_prefix("HEAD: ")).filter(|r| *r != DETACHED);
        Ok(Some(Start {
            index_tree: calls.text(["rev-parse", &format!("{index}^{{tree}}")])?,
            head: parents.pop(),
            head_ref: head_ref.map(str::to_string),
            commit,
            tree,
        }))
    }
}

impl Calls<'_> {
    /// The branch `HEAD` names; `None` when it is detached.
    fn head_ref(&self) -> Result<Option<String>, Error> {
        let found = self.run(GitCall::new(["symbolic-ref", "-q", "HEAD"]).accepting(&[1]))?;
        Ok((found.code == 0).then(|| found.text().trim().to_string()))
    }

    /// The paths under the root (not the harness's) that differ from tree `from` to tree `to`.
    fn changes(&self, from: &str, to: &str) -> Result<Vec<Change>, Error> {
        let args = self.with_pathspec(&[
            "diff-tree",
            "-r",
            "-z",
            "--raw",
            "--no-abbrev",
            "--no-renames",
            "--relative",
            from,
            to,
        ]);
        let raw = self.run(GitCall::new(args))?.stdout;
        let mut fields = raw.split(|&byte| byte == 0).filter(|field| !field.is_empty());
        let mut changes = Vec::new();
        // `:old_mode new_mode old new STATUS` NUL `path` NUL, for each path.
        while let (Some(header), Some(path)) = (fields.next(), fields.next()) {
            let header = String::from_utf8_lossy(header);
            let words: Vec<&str> = header.trim_start_matches(':').split(' ').collect();
            let [old_mode, new_mode, old_oid, new_oid, status] = words[..] else { continue };
            changes.push(Change {
                old_mode: old_mode.to_string(),
                new_mode: new_mode.to_string(),
                old_oid: old_oid.to_string(),
                new_oid: new_oid.to_string(),
                added: status == "A",
                deleted: status == "D",
                path: path.to_vec(),
            });
        }
        Ok(changes)
    }

    /// Keeps `commit` under `refs/mini-agent/failed/<id>/<attempt>` (`-2`, `-3`… when a
    /// `tasks reset` made that name taken). A ref that holds the same start and tree already —
    /// set aside before a crash cut the rest short — is used again.
    fn keep(&self, id: &str, attempt: u32, commit: &str) -> Result<String, Error> {
        let same = |held: &str| -> Result<bool, Error> {
            let both = |rev: &str| {
                Ok::<_, Error>((self.object(&format!("{rev}^1"))?, self.object(&format!("{rev}^{{tree}}"))?))
            };
            Ok(both(held)? == both(commit)?)
        };
        let base = format!("{FAILED_REFS}/{}/{attempt}", ref_component(id));
        for n in 1..=1000 {
            let name = if n == 1 { base.clone() } else { format!("{base}-{n}") };
            match self.object(&format!("{name}^{{commit}}"))? {
                None => {
                    self.run(GitCall::new([
                        "update-ref",
                        "-m",
                        "mini-agent: an attempt set aside",
                        &name,
                        commit,
                    ]))?;
                    return Ok(name);
                }
                Some(held) if same(&held)? => return Ok(name),
                Some(_) => {}
            }
        }
        Err(Error::Config(format!("{base}: a thousand set-aside attempts of task {id} are kept already")))
    }
}

/// A task id as one component of a ref name: letters, digits, `-` and `_` as they are,
/// anything else as `%XX`, so that every id gives a valid name and two ids never share one.
pub fn ref_component(id: &str) -> String {
    let mut out = String::new();
    for byte in id.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    if out.is_empty() { "%".to_string() } else { out }
}

/// An index larger than this is not copied (Linux's is about 8 MiB, Chromium's some 40).
const INDEX_MAX_BYTES: u64 = 1 << 30;

/// Copies the repository's index to a private one: a regular file, not followed through a
/// symlink, opened without waiting (a FIFO planted as `.git/index` would block a plain open).
/// A missing index is an empty one.
fn copy_index(from: &Path, to: &Path) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let failed = |e| Error::io(format!("copying the git index {}", from.display()), e);
    let mut source = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(from)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(failed(e)),
    };
    let meta = source.metadata().map_err(failed)?;
    if !meta.is_file() || meta.len() > INDEX_MAX_BYTES {
        return Err(Error::Config(format!(
            "the git index {} is not a regular file of at most {} GiB; tasks run cannot set an attempt aside",
            from.display(),
            INDEX_MAX_BYTES >> 30
        )));
    }
    let mut target = fs::OpenOptions::new().write(true).create_new(true).open(to).map_err(failed)?;
    std::io::copy(&mut (&mut source).take(INDEX_MAX_BYTES), &mut target).map_err(failed)?;
    Ok(())
}

/// Whether `path` is a `.gitignore`: a file that decides what the snapshots see.
fn is_ignore_file(path: &[u8]) -> bool {
    path.rsplit(|&byte| byte == b'/').next() == Some(b".gitignore".as_slice())
}

/// Removes a file (or symlink) the attempt added, and the directories that left empty. False
/// when it was left: the path goes through a symlink or is not a plain file or link.
fn remove_added(root: &Path, relative: &[u8]) -> bool {
    let path = root.join(std::ffi::OsStr::from_bytes(relative));
    let Some(parent) = path.parent() else { return false };
    if !only_real_directories(root, parent) {
        return false;
    }
    match fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() => return false,
        Ok(_) => {
            if fs::remove_file(&path).is_err() {
                return false;
            }
        }
        Err(_) => return true, // gone already
    }
    let mut dir: PathBuf = parent.to_path_buf();
    while dir != root && dir.starts_with(root) && fs::remove_dir(&dir).is_ok() {
        dir.pop();
    }
    true
}

/// Whether every directory from `root` down to `dir` is a real directory, not a symlink.
fn only_real_directories(root: &Path, dir: &Path) -> bool {
    let Ok(below) = dir.strip_prefix(root) else { return false };
    let mut at = root.to_path_buf();
    for part in below.components() {
        let Component::Normal(name) = part else { return false };
        at.push(name);
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => {}
            _ => return false,
        }
    }
    true
}
