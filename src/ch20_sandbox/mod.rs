//! Chapter 20 — the sandbox: a shell the model cannot turn against its user.
//!
//! Chapter 3 confines the file tools path by path, and leaves `bash` free: a command can write
//! `~/.bashrc`, send a key over the network, kill the agent, leave a process behind, or write
//! the approvals that decide what runs next time. Asking the model not to is a promise; this
//! chapter asks the kernel. Every shell command the workspace starts (the model's `bash`, the
//! harness's verify command) is confined between fork and exec by four layers, each chosen for
//! what the others cannot express:
//!
//! * [`rules`] — **Landlock**: writes only beneath the workspace root and a private temporary
//!   directory (or only the latter, in `read-only`), reads anywhere; no TCP connect or bind
//!   (ABI 4); no signal, ptrace or abstract socket out of the sandbox (ABI 6).
//! * [`sockets`] — **seccomp**: `socket()` fails for every family, because Landlock names TCP
//!   ports and nothing else (UDP, raw, netlink, packet sockets), and for `AF_UNIX` even with
//!   `--allow-net`, because a pathname UNIX socket leads to a program of the user outside.
//! * [`namespaces`] — a **user and mount namespace** where `.mini_agent/`, `.git/hooks` and
//!   `.git/config` are read-only bind mounts: Landlock's rules are allow-lists over whole
//!   hierarchies, so it cannot carve a read-only hole inside the writable root. The namespace
//!   is also a mark a process cannot remove, by which the reaper finds what `env -i` hid.
//! * [`private_temp`] — the session's own `TMPDIR`, created 0700 and removed at the end.
//!
//! What no layer can prevent is looked for after each command: git obeys more files in `.git`
//! than can be made read-only while `git commit` works, so [`git_watch`] compares the
//! repository with the start, moves a planted `.git/commondir` aside and reports the rest
//! (new submodules, nested repositories, changes in the submodules there at start).
//!
//! Everything that allocates or opens files is done once, before any fork: the ruleset, the
//! BPF program, the namespaces. In the child only system calls remain (`setns`,
//! `landlock_restrict_self`, `seccomp`), which is what async-signal-safety demands of a
//! multi-threaded parent. What the kernel cannot enforce is said once, at start-up; `require`
//! turns that warning into a refusal. [`stopped`] tells the model when a refusal it saw was
//! the sandbox's, so it tells the person instead of retrying around it. [`run`] is the
//! chapter on the command line: its flags, and the one sandbox of a run that the composition
//! root hands every workspace.

#[cfg(target_os = "linux")]
mod confine;
pub mod dir_fd;
#[cfg(all(test, target_os = "linux"))]
mod escape_tests;
pub mod git_index;
#[cfg(all(test, target_os = "linux"))]
mod git_tests;
pub mod git_watch;
#[cfg(target_os = "linux")]
pub mod namespaces;
pub mod nested;
pub mod private_temp;
#[cfg(target_os = "linux")]
pub mod rules;
pub mod run;
#[cfg(target_os = "linux")]
pub mod sockets;
pub mod stopped;
pub mod submodules;
#[cfg(all(test, target_os = "linux"))]
mod tests;

use crate::ch02_loop::Error;
use crate::ch03_tools::confinement::Confinement;
use crate::ch03_tools::git_config;
use git_watch::Watched;
use private_temp::PrivateTemp;
pub use run::{ALLOW_NET, RunSandbox, SANDBOX, register};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;

// ANCHOR: mode
/// What a sandboxed command may do (`--sandbox`, `MINI_AGENT_SANDBOX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Write inside the workspace root and the private temp dir; read everywhere.
    Workspace,
    /// Write only inside the private temp dir.
    ReadOnly,
    /// As `Workspace`, and refuse to run a command when any layer is missing here.
    Require,
    /// No sandbox: commands run with all the user's rights.
    Off,
}
// ANCHOR_END: mode

impl Mode {
    /// The flag's values, as `--help` and errors list them.
    pub const WORDS: &str = "workspace, read-only, off or require";

    pub fn parse(word: &str) -> Option<Mode> {
        match word {
            "workspace" => Some(Mode::Workspace),
            "read-only" => Some(Mode::ReadOnly),
            "require" => Some(Mode::Require),
            "off" => Some(Mode::Off),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Workspace => "workspace",
            Mode::ReadOnly => "read-only",
            Mode::Require => "require",
            Mode::Off => "off",
        }
    }

    /// Whether commands may write beneath the workspace root.
    fn writes_root(self) -> bool {
        match self {
            Mode::Workspace | Mode::Require => true,
            Mode::ReadOnly | Mode::Off => false,
        }
    }
}

// ANCHOR: coverage
/// What the kernel enforces on this machine, layer by layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Landlock's filesystem rules (ABI 1, Linux 5.13).
    pub files: bool,
    /// Landlock's TCP connect and bind rules (ABI 4, Linux 6.7): a second lock beside the
    /// filter, which also holds for a socket not made by `socket(2)`.
    pub tcp: bool,
    /// Landlock's scopes: signals and abstract UNIX sockets (ABI 6, Linux 6.12).
    pub signals: bool,
    /// The seccomp filter on `socket()`: no network family without `--allow-net`, no
    /// `AF_UNIX` ever.
    pub sockets: bool,
    /// The namespace with the agent's state read-only (unprivileged user namespaces).
    pub state: bool,
}
// ANCHOR_END: coverage

/// The sandbox of one run: built once, applied to every command the workspace starts.
pub struct Sandbox {
    /// The workspace root it was built for (canonical).
    root: PathBuf,
    mode: Mode,
    allow_net: bool,
    coverage: Coverage,
    temp: PrivateTemp,
    /// The paths commands may not write, or not move.
    protected: Protected,
    /// The repository as it was at start, compared after every command (writable roots only).
    git: Option<Watched>,
    #[cfg(target_os = "linux")]
    parts: confine::Parts,
}

impl Sandbox {
    // ANCHOR: new
    /// Builds the sandbox for commands run in `root` (canonical): every layer this kernel
    /// offers, each probed here, once, so that the child only has system calls left to make.
    /// `mode` must not be `Off` (no sandbox is built then).
    pub fn new(root: &Path, mode: Mode, allow_net: bool) -> Result<Sandbox, Error> {
        let temp = PrivateTemp::create().map_err(|source| {
            Error::io("cannot create the sandbox's private temp dir".to_string(), source)
        })?;
        let protected = protected_paths(root, crate::ch16_hooks::approval::user_config_dir());
        // Where commands may write the root, what git will obey there is remembered now.
        let git = mode.writes_root().then(|| Watched::start(root));
        #[cfg(target_os = "linux")]
        {
            let writable: Vec<&Path> =
                if mode.writes_root() { vec![root, temp.path()] } else { vec![temp.path()] };
            let (parts, coverage) = confine::Parts::build(root, &writable, &protected, allow_net);
            Ok(Sandbox { root: root.to_path_buf(), mode, allow_net, coverage, temp, protected, git, parts })
        }
        #[cfg(not(target_os = "linux"))]
        Ok(Sandbox {
            root: root.to_path_buf(),
            mode,
            allow_net,
            coverage: Coverage::default(),
            temp,
            protected,
            git,
        })
    }
    // ANCHOR_END: new

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The workspace root it confines commands to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn coverage(&self) -> Coverage {
        self.coverage
    }

    /// The private temp dir, which commands see as `TMPDIR`.
    pub fn temp_dir(&self) -> &Path {
        self.temp.path()
    }

    /// What the sandbox misses on this machine, in words; empty when it enforces everything.
    pub fn missing(&self) -> Vec<&'static str> {
        let c = self.coverage;
        let mut missing = Vec::new();
        if !c.files {
            missing.push(if cfg!(target_os = "linux") {
                "file access (needs Landlock: Linux 5.13 with landlock in the lsm= list)"
            } else {
                "everything (the sandbox needs Linux's Landlock)"
            });
        }
        // The filter refuses every socket, TCP included, and UNIX sockets even with
        // --allow-net; Landlock's TCP rule is a second lock, so only a missing filter leaves a hole.
        if !c.sockets {
            missing.push(match (self.allow_net, c.tcp) {
                (true, _) => "the user's UNIX sockets (needs seccomp on x86_64, aarch64 or riscv64)",
                (false, true) => "UDP, raw and UNIX sockets (needs seccomp on x86_64, aarch64 or riscv64)",
                (false, false) => {
                    "the network and UNIX sockets (needs seccomp on x86_64, aarch64 or riscv64)"
                }
            });
        }
        if !c.signals {
            missing.push("signals to other processes (needs Landlock ABI 6, Linux 6.12)");
        }
        missing
    }

    /// Whether the start-up line has something to warn of: a layer missing, or the agent's
    /// state writable by commands (no user namespaces here).
    pub fn falls_short(&self) -> bool {
        !self.missing().is_empty() || self.state_writable()
    }

    /// Whether commands may write the agent's state: a writable root, and no namespace to make
    /// it read-only.
    fn state_writable(&self) -> bool {
        self.coverage.files && !self.coverage.state && self.mode.writes_root()
    }

    /// Everything the mode promises that this machine does not enforce: [`Sandbox::missing`],
    /// and the agent's state when no namespace keeps it read-only.
    pub fn not_enforced(&self) -> Vec<String> {
        let mut not_enforced: Vec<String> =
            self.missing().iter().map(|missing| missing.to_string()).collect();
        if self.state_writable() {
            not_enforced.push(format!("a read-only {} ({})", self.state_paths(), self.state_error()));
        }
        not_enforced
    }

    /// Why a command must not run: `require` on a machine that misses a layer, or that cannot
    /// keep the agent's state read-only.
    pub fn refusal(&self) -> Option<String> {
        let not_enforced = self.not_enforced();
        (self.mode == Mode::Require && !not_enforced.is_empty()).then(|| {
            format!(
                "bash refused: --sandbox require, and this machine cannot enforce {}; the user can \
                 accept that with --sandbox workspace, or run unconfined with --sandbox off",
                not_enforced.join(", ")
            )
        })
    }

    /// The paths kept read-only, as the start-up line lists them: `.mini_agent/, .git/hooks`.
    fn state_paths(&self) -> String {
        let named = &self.protected.config_names;
        let mut paths: Vec<String> = self
            .protected
            .read_only
            .iter()
            .filter(|path| !named.contains(path))
            .map(|path| shown(path))
            .collect();
        if !named.is_empty() {
            paths.push(format!(
                "{} that .git/config names",
                crate::text::plural(named.len(), "work-tree file")
            ));
        }
        paths.join(", ")
    }

    /// What the sandbox enforces on this machine, in the start-up line's words: the facts
    /// that line and the note on a refused command both say.
    fn enforced(&self) -> Vec<String> {
        let c = self.coverage;
        let mut enforced: Vec<String> = Vec::new();
        if c.files {
            enforced.push(match self.mode.writes_root() {
                true => "writes only in the workspace and a private TMPDIR".into(),
                false => "writes only in a private TMPDIR".into(),
            });
        }
        if self.allow_net {
            enforced.push("network allowed (--allow-net)".into());
        } else if c.sockets {
            enforced.push("no network".into());
        } else if c.tcp {
            enforced.push("no TCP".into());
        }
        if c.sockets {
            enforced.push("no UNIX sockets".into());
        }
        if c.signals {
            enforced.push("no signals outside".into());
        }
        // Without Landlock the read-only mounts are not claimed: nothing forbids unmounting them.
        if c.state && c.files && !self.protected.read_only.is_empty() {
            enforced.push(format!("read-only agent state ({})", self.state_paths()));
        }
        enforced
    }

    /// Whether commands reach no network: not allowed, and a layer here to stop them.
    fn network_off(&self) -> bool {
        !self.allow_net && (self.coverage.sockets || self.coverage.tcp)
    }

    // ANCHOR: start_up_line
    /// The one line said at start-up: what is protected on this machine and what is not.
    pub fn start_up_line(&self) -> String {
        let enforced = self.enforced();
        let state = self.state_paths();
        let mode = self.mode.name();
        let missing = self.missing();
        let mut state_note = match self.state_writable() {
            true => format!("; {state} writable by commands: {}", self.state_error()),
            false => String::new(),
        };
        if self.refusal().is_some() {
            state_note.push_str("; so --sandbox require refuses every command");
        }
        if missing.is_empty() {
            format!("mini-agent: sandbox {mode}: {}{state_note}", enforced.join(", "))
        } else {
            let enforced = if enforced.is_empty() { "nothing".to_string() } else { enforced.join(", ") };
            format!(
                "mini-agent: warning: sandbox {mode} does not enforce {} on this machine; it does: {enforced}{state_note}",
                missing.join(", ")
            )
        }
    }
    // ANCHOR_END: start_up_line

    /// The mode as the permission question and `/stats` name it: `workspace, no network`.
    pub fn label(&self) -> String {
        let net = if self.allow_net { ", network allowed" } else { ", no network" };
        let partial = if self.missing().is_empty() { "" } else { ", partly enforced" };
        format!("{}{net}{partial}", self.mode.name())
    }

    /// Why the namespaces that protect the agent's state could not be made.
    fn state_error(&self) -> String {
        #[cfg(target_os = "linux")]
        if let Some(error) = &self.parts.state_error {
            return error.clone();
        }
        "no user namespaces here".to_string()
    }
}

/// Variables that hand a command the address of a socket that acts for the user: the SSH
/// agent (log in anywhere as them) and the session bus (start programs outside the sandbox).
/// The filter refuses `AF_UNIX` sockets, so the addresses lead nowhere; they are not handed
/// over all the same, for a machine where the filter cannot be installed.
const SOCKET_VARIABLES: [&str; 2] = ["SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS"];

// ANCHOR: confinement
impl Confinement for Sandbox {
    fn confine(&self, command: &mut Command) -> Result<(), String> {
        if let Some(refusal) = self.refusal() {
            return Err(refusal);
        }
        if let Some(git) = &self.git {
            git.wait(); // what the command will be compared with is taken first
        }
        command.env("TMPDIR", self.temp.path());
        for variable in SOCKET_VARIABLES {
            command.env_remove(variable);
        }
        #[cfg(target_os = "linux")]
        self.parts.apply(command)?;
        Ok(())
    }

    fn explain(&self, output: &str) -> Option<String> {
        stopped::explain(output, self.mode, &self.enforced(), self.network_off())
    }

    fn describe(&self) -> String {
        format!("sandbox: {}", self.label())
    }

    fn started_inside(&self, pid: i32) -> bool {
        #[cfg(target_os = "linux")]
        return self.parts.holds(pid);
        #[cfg(not(target_os = "linux"))]
        false
    }

    fn after_command(&self) -> Option<String> {
        let line = self.look_at_git()?;
        eprintln!("mini-agent: warning: {line}");
        Some(line)
    }
}
// ANCHOR_END: confinement

impl Sandbox {
    /// Compares the repository with what it was at start ([`git_watch`]): undoes a planted
    /// `.git/commondir`, and says what else git would obey that is new. `None`: nothing.
    pub fn look_at_git(&self) -> Option<String> {
        self.git.as_ref()?.check()
    }
}

/// A process a command left behind past the reaper's last look could still plant something
/// after the last check: the run's end looks once more, for the person.
impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(line) = self.look_at_git() {
            eprintln!("mini-agent: warning: {line}");
        }
    }
}

/// What commands may not write inside the root, though the root is writable: the agent's
/// own directory, the two places where a write becomes code that the person runs later
/// without seeing it in a diff (`.git/hooks`, `.git/config`), and the user's mini-agent config
/// directory when the root contains it (a session started in `~`, or a test's config inside
/// its workspace). And `.git` itself, pinned:
/// still writable (`git commit`), but a mount point, so it cannot be moved aside and replaced
/// by a copy with other hooks.
pub(crate) struct Protected {
    pinned: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    /// Those of `read_only` that are there because `.git/config` names them.
    config_names: Vec<PathBuf>,
}

fn protected_paths(root: &Path, config_dir: Option<PathBuf>) -> Protected {
    let state = root.join(".mini_agent");
    let mut read_only = vec![state.clone(), root.join(".git/hooks"), root.join(".git/config")];
    // The agent's directory and the user's config directory are made now if missing, so that
    // they can be protected: one a command created would be the command's. The config dir only
    // where its parent exists (`~/.config`): a whole missing tree is not the user's config.
    // A config dir outside the root is left alone: Landlock keeps commands from writing it.
    let private = |dir: &Path| std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
    let _ = private(&state);
    // A repository without hooks (`git init --template=`, some other tools) gets the empty
    // `.git/hooks` that `git init` makes: a missing directory cannot be mounted read-only, and
    // a command could make it and fill it.
    let git = root.join(".git");
    let mut config_names = Vec::new();
    if git.symlink_metadata().is_ok_and(|meta| meta.is_dir()) {
        let _ = std::fs::create_dir(git.join("hooks"));
        // Hooks that `core.hooksPath` keeps in the work tree (husky's `.husky/_`) are the
        // repository's hooks as much as `.git/hooks` is; made if missing where its parent is.
        if let Some(hooks) = git_config::hooks_path(root, &git.join("config")) {
            let _ = std::fs::create_dir(&hooks);
            read_only.push(hooks);
        }
        // And every script or file of the work tree it names (a `core.fsmonitor`, a filter,
        // an include): git runs or reads them, as it runs hooks.
        config_names = git_config::named_files(root, &git.join("config"));
        read_only.extend(config_names.iter().cloned());
        // The gitdirs of this repository's other worktrees (`git worktree add` elsewhere): a
        // `commondir` or `config.worktree` rewritten there is obeyed by git run in that
        // checkout, outside the root. Commands here never need to write them.
        read_only.push(git.join("worktrees"));
    }
    let config_dir =
        config_dir.and_then(|dir| Some(dir.parent()?.canonicalize().ok()?.join(dir.file_name()?)));
    if let Some(config) = config_dir.filter(|dir| dir.starts_with(root) && private(dir).is_ok()) {
        read_only.extend(config.canonicalize().ok());
    }
    // A `.git/hooks` or `.git/config` that is a symlink to somewhere in the root (hooks kept in
    // `.githooks/`) is protected where it leads: left out, its hooks were the command's. One
    // that leads out of the root needs nothing here: Landlock keeps commands from writing there.
    for path in &mut read_only {
        if path.symlink_metadata().is_ok_and(|meta| meta.is_symlink())
            && let Ok(target) = path.canonicalize()
        {
            *path = target;
        }
    }
    // Only what exists, as itself: a symlink would be followed by the mount, elsewhere.
    let real = |path: &PathBuf| {
        path.starts_with(root) && path.symlink_metadata().is_ok_and(|meta| !meta.is_symlink())
    };
    read_only.retain(real);
    let mut seen = std::collections::BTreeSet::new();
    read_only.retain(|path| seen.insert(path.clone()));
    config_names.retain(|path| read_only.contains(path));
    let pinned = if real(&git) && git.is_dir() { vec![git] } else { Vec::new() };
    Protected { pinned, read_only, config_names }
}

/// A path as the start-up line shows it: short, relative to `~` when it can be.
fn shown(path: &Path) -> String {
    let text = path.display().to_string();
    match path.file_name().and_then(|name| name.to_str()) {
        Some(".mini_agent") => ".mini_agent/".to_string(),
        Some("hooks") if text.ends_with(".git/hooks") => ".git/hooks".to_string(),
        Some("config") if text.ends_with(".git/config") => ".git/config".to_string(),
        _ => text,
    }
}
