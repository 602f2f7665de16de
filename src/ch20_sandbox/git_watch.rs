//! What git obeys that the read-only mounts cannot protect: looked at after every command.
//!
//! The namespace keeps `.git/hooks` and `.git/config` read-only, but git reads more than two
//! files, and `.git` must stay writable for `git commit`. Landlock cannot refuse the creation
//! of one name in a writable directory, so what a command plants there cannot be prevented;
//! it can be found, right after the command, before the person runs git outside the sandbox:
//!
//! * `.git/commondir` makes git take its configuration and hooks from the directory it names.
//!   A main repository has none, so one that appears is removed at once: moved to
//!   `.mini_agent/quarantine/`, where nothing reads it and the person can see what it named.
//! * a submodule entry (mode `160000`) in the index, a new directory under `.git/modules/`, a
//!   new or rewritten `.git` below the root, a `.git` that appears at the root: each may be
//!   legitimate (`git submodule add`), so each is only reported, by path.
//!
//! Every look is by descriptor from the root, never following a symlink ([`super::dir_fd`]),
//! and never through git, which would obey what it looks for. It runs once the command's
//! processes are gone (the reaper has killed and reaped them), costs a few `stat`s when
//! nothing changed ([`super::nested`] for the tree), and reads the index only when its stamp
//! moved ([`super::git_index`]).

use super::dir_fd::{Dir, Stamp, component};
use super::git_index;
use super::nested::{MAX_DEPTH, MAX_DIRS, Nested};
use super::submodules::{self, Change, MAX_SUBMODULES, Submodule};
use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// An index larger than this is not read (git's own for 100,000 files is about 10 MB).
const MAX_INDEX_BYTES: u64 = 256 << 20;
/// Names in `.git/modules/` remembered at most.
const MAX_MODULES: usize = 4096;
/// Paths named in one note at most; the rest are counted.
const MAX_NAMED: usize = 8;

/// A [`GitWatch`] started on a thread of its own, so that a large tree's walk does not hold
/// up the start; every command waits for it before it runs ([`Watched::wait`]), so no
/// command runs before the state it is compared with was taken.
pub struct Watched(Mutex<Starting>);

enum Starting {
    Walking(JoinHandle<io::Result<GitWatch>>),
    Ready(Box<GitWatch>),
    /// Why nothing could be remembered, until it has been said once.
    Failed(Option<String>),
}

impl Starting {
    fn from(started: io::Result<GitWatch>) -> Starting {
        match started {
            Ok(watch) => Starting::Ready(Box::new(watch)),
            Err(error) => Starting::Failed(Some(error.to_string())),
        }
    }
}

impl Watched {
    /// Starts remembering the repository of `root`, beside the caller (or at once, where no
    /// thread can be started).
    pub fn start(root: &Path) -> Watched {
        let owned = root.to_path_buf();
        let walking =
            std::thread::Builder::new().name("git-watch".into()).spawn(move || GitWatch::start(&owned));
        Watched(Mutex::new(match walking {
            Ok(handle) => Starting::Walking(handle),
            Err(_) => Starting::from(GitWatch::start(root)),
        }))
    }

    /// Waits until the state at start is taken (at once, after the first time).
    pub fn wait(&self) {
        drop(self.ready());
    }

    fn ready(&self) -> MutexGuard<'_, Starting> {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if matches!(*state, Starting::Walking(_))
            && let Starting::Walking(handle) = std::mem::replace(&mut *state, Starting::Failed(None))
        {
            *state = match handle.join() {
                Ok(started) => Starting::from(started),
                Err(_) => Starting::Failed(Some("the look at start failed".into())),
            };
        }
        state
    }

    /// Looks after a command: the line to say, if anything was found. Where nothing could be
    /// remembered at start, that is said, once.
    pub fn check(&self) -> Option<String> {
        match &mut *self.ready() {
            Starting::Ready(watch) => watch.check().line(),
            Starting::Failed(reason) => reason.take().map(|reason| {
                format!(
                    "sandbox: not checked: git's metadata in the workspace could not be read at start \
                     ({reason}); check it without git before running git there"
                )
            }),
            Starting::Walking(_) => None,
        }
    }
}

/// The root's `.git` entry: its stamp, and for a file or a symlink what it says.
#[derive(Clone, PartialEq, Eq)]
struct GitEntry {
    stamp: Stamp,
    says: Vec<u8>,
}

/// The index as last read: the stamps of the index and of its shared index, if split.
#[derive(Clone, PartialEq, Eq, Default)]
struct IndexSeen {
    index: Option<Stamp>,
    shared: Option<(String, Option<Stamp>)>,
}

/// The repository state a command may not change unseen, as it was at start (and since).
pub struct GitWatch {
    root: Dir,
    git: Option<GitEntry>,
    /// The gitdir inside the root that a `.git` symlink named at start, relative to the root.
    linked_gitdir: Option<PathBuf>,
    commondir_at_start: bool,
    index: IndexSeen,
    gitlinks: BTreeSet<Vec<u8>>,
    modules: Option<(Stamp, BTreeSet<Vec<u8>>)>,
    nested: Option<Nested>,
    said_partial: bool,
    /// The submodules checked out at start, and whether there were more than are watched.
    submodules: Vec<Submodule>,
    more_submodules: bool,
    said_more_submodules: bool,
}

/// What one look found: what it undid, what it reports, and what it could not check.
#[derive(Debug, Default)]
pub struct Findings {
    pub undone: Vec<String>,
    pub new: Vec<String>,
    pub changed: Vec<String>,
    pub unchecked: Vec<String>,
}

impl GitWatch {
    /// Remembers the repository of `root` (canonical) as it is before any command runs.
    pub fn start(root: &Path) -> io::Result<GitWatch> {
        let dir = Dir::open(root)?;
        let git = git_entry(&dir);
        let linked_gitdir = match &git {
            Some(entry) if entry.stamp.is_link() => root
                .join(".git")
                .canonicalize()
                .ok()
                .filter(|target| target.is_dir())
                .and_then(|target| Some(target.strip_prefix(root).ok()?.to_path_buf()))
                .filter(|inside| inside.as_os_str() != ""),
            _ => None,
        };
        let mut watch = GitWatch {
            root: dir,
            git,
            linked_gitdir,
            commondir_at_start: false,
            index: IndexSeen::default(),
            gitlinks: BTreeSet::new(),
            modules: None,
            nested: None,
            said_partial: false,
            submodules: Vec::new(),
            more_submodules: false,
            said_more_submodules: false,
        };
        if let Some(gitdir) = watch.gitdir() {
            watch.commondir_at_start = gitdir.stat(b"commondir").is_ok();
            watch.modules = modules(&gitdir);
            let (seen, read) = read_index(&gitdir);
            watch.index = seen;
            watch.gitlinks = read.map(|links| links.paths).unwrap_or_default();
            (watch.submodules, watch.more_submodules) = submodules::find(root, &watch.root, &watch.gitlinks);
        }
        watch.nested = Nested::start(&watch.root).ok();
        Ok(watch)
    }

    /// The repository's own directory, when it lies in the root: `.git` itself, or what a
    /// `.git` symlink named at start (while it still names it). Opened one name at a time.
    fn gitdir(&self) -> Option<Dir> {
        let now = self.root.stat(b".git").ok()?;
        if now.is_dir() {
            return self.root.child(b".git").ok();
        }
        let same_link = self.git.as_ref().is_some_and(|start| start.stamp == now);
        self.linked_gitdir.as_ref().filter(|_| same_link).and_then(|inside| self.root.descend(inside).ok())
    }

    // ANCHOR: check
    /// Looks at the repository after a command: removes a planted `.git/commondir`, and
    /// reports what else appeared or changed since the last look. Each thing is reported once.
    pub fn check(&mut self) -> Findings {
        let mut findings = Findings::default();
        self.check_root_git(&mut findings);
        if let Some(gitdir) = self.gitdir() {
            if !self.commondir_at_start && gitdir.stat(b"commondir").is_ok() {
                findings.undone.push(quarantine(&self.root, &gitdir, Path::new(".git"), b"commondir"));
            }
            self.check_index(&gitdir, &mut findings);
            self.check_modules(&gitdir, &mut findings);
        }
        self.check_submodules(&mut findings);
        if let Some(nested) = &mut self.nested {
            let found = nested.check(&self.root);
            findings.new.extend(found.new.iter().map(|path| format!("repository `{}`", shown(path))));
            findings.changed.extend(found.changed.iter().map(|path| format!("`{}`", shown(path))));
            if nested.partial && !self.said_partial {
                self.said_partial = true;
                findings.unchecked.push(format!(
                    "nested repositories are looked for in the first {MAX_DIRS} directories, {MAX_DEPTH} \
                     levels deep, outside target/, node_modules/, .venv/, venv/ and __pycache__/"
                ));
            }
        }
        findings
    }
    // ANCHOR_END: check

    /// The root's own `.git`: one that appears (a repository git will now use here), or a
    /// `.git` file or link that now names another directory.
    fn check_root_git(&mut self, findings: &mut Findings) {
        let now = git_entry(&self.root);
        match (&self.git, &now) {
            (None, Some(_)) => findings.new.push("repository `.git` at the root".to_string()),
            (Some(before), Some(after)) if differs(before, after) => {
                let says = String::from_utf8_lossy(&after.says);
                let says = says.lines().next().unwrap_or("").trim();
                findings.changed.push(match says.is_empty() {
                    true => "`.git` at the root".to_string(),
                    false => format!("`.git` at the root (now `{}`)", shown(Path::new(says))),
                });
            }
            _ => {}
        }
        // Reported once; from then on compared with what it is now.
        if now.is_some() {
            self.git = now;
        }
    }

    /// New directories in `.git/modules/` (listed only when its stamp moved).
    fn check_modules(&mut self, gitdir: &Dir, findings: &mut Findings) {
        let stamp = gitdir.stat(b"modules").ok();
        if stamp == self.modules.as_ref().map(|(stamp, _)| *stamp) {
            return;
        }
        let now = modules(gitdir);
        if let Some((_, names)) = &now {
            let before = self.modules.as_ref().map(|(_, names)| names);
            for name in names.iter().filter(|name| before.is_none_or(|before| !before.contains(*name))) {
                let path = Path::new(".git/modules").join(component(name));
                findings.new.push(format!("`{}`", shown(&path)));
            }
        }
        self.modules = now;
    }

    /// The submodules there at start: a `commondir` planted in a gitdir is undone; a changed
    /// `config` or hook, or a gitdir replaced, is said.
    fn check_submodules(&mut self, findings: &mut Findings) {
        for submodule in &mut self.submodules {
            let of = format!("(submodule `{}`)", shown(&submodule.path));
            for change in submodule.check(&self.root) {
                match change {
                    Change::Commondir(gitdir) => {
                        findings.undone.push(quarantine(&self.root, &gitdir, &submodule.gitdir, b"commondir"))
                    }
                    Change::Replaced => findings.changed.push(format!("`{}` {of}", shown(&submodule.gitdir))),
                    Change::Changed(what) => {
                        findings.changed.push(format!("`{}` {of}", shown(&submodule.gitdir.join(what))))
                    }
                }
            }
        }
        if self.more_submodules && !self.said_more_submodules {
            self.said_more_submodules = true;
            findings.unchecked.push(format!("submodules past the first {MAX_SUBMODULES}"));
        }
    }

    /// New submodule entries in the index (read again only when its stamp moved).
    fn check_index(&mut self, gitdir: &Dir, findings: &mut Findings) {
        if index_seen(gitdir, self.index.shared.as_ref().map(|(name, _)| name.as_str())) == self.index {
            return;
        }
        let (seen, read) = read_index(gitdir);
        self.index = seen;
        match read {
            Ok(links) => {
                for path in links.paths.difference(&self.gitlinks) {
                    findings.new.push(format!("submodule entry `{}` in the index", shown(component(path))));
                }
                if !links.complete {
                    findings.unchecked.push("the index holds more submodule entries than are read".into());
                }
                // What the index holds now (not all it ever held: that could only grow).
                self.gitlinks = links.paths;
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => findings.unchecked.push(format!("`.git/index` could not be read ({error})")),
        }
    }
}

// ANCHOR: quarantine
/// Moves entry `name` of `gitdir` (shown as `shown_dir`; the entry itself, whatever it is or
/// names) to `.mini_agent/quarantine/`, else removes it if it is not a directory; says what
/// was done.
fn quarantine(root: &Dir, gitdir: &Dir, shown_dir: &Path, name: &[u8]) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let what = match (gitdir.read_start(name, 256), gitdir.read_link(name, 256)) {
        (Ok(text), _) | (_, Ok(text)) => {
            String::from_utf8_lossy(&text).lines().next().unwrap_or("").trim().to_string()
        }
        _ => String::new(),
    };
    let planted = format!("`{}`", shown(&shown_dir.join(component(name))));
    let named = match what.is_empty() {
        true => String::new(),
        false => format!(" (it sent git to `{}`)", shown(Path::new(&what))),
    };
    let seconds =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_secs());
    let kept = format!(
        "{}-{seconds}-{}-{}",
        shown(component(name)),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let moved = root.child(b".mini_agent").and_then(|state| {
        state.make_dir(b"quarantine", 0o700)?;
        let quarantine = state.child(b"quarantine")?;
        gitdir.move_entry(name, &quarantine, kept.as_bytes())
    });
    let done = match moved {
        Ok(()) => Some(format!("moved {planted}{named} to `.mini_agent/quarantine/{kept}`")),
        Err(_) => gitdir.remove_file(name).ok().map(|()| format!("removed {planted}{named}")),
    };
    let why = "git run outside the sandbox would have taken its config and hooks from there";
    match done.filter(|_| gitdir.stat(name).is_err()) {
        Some(done) => format!("{done}: {why}"),
        None => format!("could not remove {planted}{named}: {why}; delete it before running git there"),
    }
}
// ANCHOR_END: quarantine

/// Whether the root's `.git` says something else now: another kind of entry, another
/// directory, or a file or link that names another place.
fn differs(before: &GitEntry, after: &GitEntry) -> bool {
    match before.stamp.is_dir() && after.stamp.is_dir() {
        true => !before.stamp.same_object(&after.stamp),
        false => {
            let (before_kind, after_kind) = (before.stamp.kind(), after.stamp.kind());
            before_kind != after_kind || before.says != after.says || before.stamp.size != after.stamp.size
        }
    }
}

/// The root's `.git`, with what a file or a symlink says (its first bytes).
fn git_entry(root: &Dir) -> Option<GitEntry> {
    let stamp = root.stat(b".git").ok()?;
    let says = match () {
        _ if stamp.is_link() => root.read_link(b".git", 1024).unwrap_or_default(),
        _ if stamp.is_file() => root.read_start(b".git", 1024).unwrap_or_default(),
        _ => Vec::new(),
    };
    Some(GitEntry { stamp, says })
}

/// The stamp of `.git/modules` and the names in it.
fn modules(gitdir: &Dir) -> Option<(Stamp, BTreeSet<Vec<u8>>)> {
    let dir = gitdir.child(b"modules").ok()?;
    let (entries, _) = dir.entries(MAX_MODULES, |_, _| true).ok()?;
    let names = entries.into_iter().map(|entry| entry.name).collect();
    Some((dir.stamp().ok()?, names))
}

/// The stamps of the index and of the shared index `shared` names.
fn index_seen(gitdir: &Dir, shared: Option<&str>) -> IndexSeen {
    IndexSeen {
        index: gitdir.stat(b"index").ok(),
        shared: shared.map(|name| (name.to_string(), gitdir.stat(name.as_bytes()).ok())),
    }
}

/// Reads the index of `gitdir` and its shared index: their gitlinks, and their stamps.
fn read_index(gitdir: &Dir) -> (IndexSeen, io::Result<git_index::Gitlinks>) {
    let read = |name: &[u8]| -> io::Result<git_index::Gitlinks> {
        let file = gitdir.file(name)?;
        if file.metadata()?.len() > MAX_INDEX_BYTES {
            return Err(io::Error::other(format!("larger than {} MB", MAX_INDEX_BYTES >> 20)));
        }
        git_index::gitlinks(file)
    };
    let main = read(b"index");
    let shared = main.as_ref().ok().and_then(|links| links.shared.clone());
    let seen = index_seen(gitdir, shared.as_deref());
    let links = main.and_then(|mut links| {
        if let Some(name) = &shared {
            let more = read(name.as_bytes())?;
            links.complete &= more.complete;
            links.paths.extend(more.paths);
        }
        Ok(links)
    });
    (seen, links)
}

/// A workspace path as a note shows it: control characters made visible, newlines too.
fn shown(path: &Path) -> String {
    let text = path.to_string_lossy();
    crate::ch04_terminal::sanitize::sanitize(&text).replace('\n', "\\n").replace('\t', "\\t")
}

impl Findings {
    pub fn is_empty(&self) -> bool {
        self.undone.is_empty() && self.new.is_empty() && self.changed.is_empty() && self.unchecked.is_empty()
    }

    /// The one line the model reads in the tool result, and the person on stderr.
    pub fn line(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut parts: Vec<String> = self.undone.clone();
        let named = |items: &[String]| -> String {
            let mut shown: Vec<String> = items.iter().take(MAX_NAMED).cloned().collect();
            if items.len() > MAX_NAMED {
                shown.push(format!("and {} more", items.len() - MAX_NAMED));
            }
            shown.join(", ")
        };
        let mut obeyed = Vec::new();
        if !self.new.is_empty() {
            obeyed.push(format!("new since the sandbox started: {}", named(&self.new)));
        }
        if !self.changed.is_empty() {
            obeyed.push(format!("changed since the sandbox started: {}", named(&self.changed)));
        }
        if !obeyed.is_empty() {
            parts.push(format!(
                "{}; git run outside the sandbox will obey its config; check it before running git there",
                obeyed.join("; ")
            ));
        }
        if !self.unchecked.is_empty() {
            parts.push(format!("not checked: {}", self.unchecked.join("; ")));
        }
        Some(format!("sandbox: {}", parts.join("; ")))
    }
}
