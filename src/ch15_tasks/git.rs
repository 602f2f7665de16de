//! Git, as the loop uses it: one commit per passed task, and nothing else.
//!
//! A commit is the unit a person reviews later, so `tasks run` refuses to start on a tree with
//! uncommitted changes (they would end up in the first task's commit) unless `--allow-dirty`
//! says that is fine. The harness's own files — `.mini_agent/` and the task list — are left
//! out of both the check and the commit: they change every iteration. The commit is
//! `git add -A` and `<id>: <name>` by author `mini-agent`; the harness never pushes.
//! Git runs without a terminal to prompt on and without the API key in its environment.
//!
//! Git also runs programs that a repository's own `.git/config` names: `core.fsmonitor` on
//! `status` and `add`, hooks on `commit` (`core.hooksPath`, `.git/hooks/`), a clean filter on
//! `add`, `gpg.program` when `commit.gpgSign` is set. `git clone` never copies that file, but a
//! project handed over as an archive or a copied tree carries it, and `tasks run` calls git
//! before anything else. So every call of the harness switches those off ([`GUARDS`], and the
//! filter drivers the repository's own config defines): a commit the harness makes runs no
//! program of the repository's choosing. (Starship and others pass `-c core.fsmonitor=false`
//! for the same reason.)

use crate::ch02_loop::Error;
use crate::ch03_tools::secrets::remove_keys;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The author (and committer) of the loop's commits.
pub const AUTHOR_NAME: &str = "mini-agent";
pub const AUTHOR_EMAIL: &str = "mini-agent@localhost";

// ANCHOR: guards
/// Settings given to every git call of the harness: no fsmonitor command, no hooks, no signing
/// program. Filter drivers are switched off by name (see [`filter_guards`]).
pub const GUARDS: [&str; 3] = ["core.fsmonitor=false", "core.hooksPath=/dev/null", "commit.gpgSign=false"];

/// `-c` settings that empty every filter driver the repository's own config (and what it
/// includes) defines; reading config runs nothing. Drivers from the user's own config stay.
fn filter_guards(root: &Path) -> Vec<String> {
    let keys =
        run_git(root, &[], &["config", "--local", "--includes", "--name-only", "--get-regexp", r"^filter\."]);
    let mut drivers: Vec<String> = keys
        .unwrap_or_default()
        .lines()
        .filter_map(|key| key.strip_prefix("filter.")?.rsplit_once('.').map(|(name, _)| name.to_string()))
        .collect();
    drivers.dedup();
    let empty = |name: &String| {
        ["clean=", "smudge=", "process=", "required=false"].map(|v| format!("filter.{name}.{v}"))
    };
    drivers.iter().flat_map(empty).collect()
}
// ANCHOR_END: guards

/// A git work tree the loop commits to.
pub struct Git {
    root: PathBuf,
    /// Paths (relative to the root, as pathspecs) that are the harness's, never committed.
    excluded: Vec<String>,
    /// The `-c` settings given to every call.
    guards: Vec<String>,
}

impl Git {
    /// `Some` when `root` is inside a git work tree (and git is installed).
    pub fn open(root: &Path, harness_files: &[&Path]) -> Option<Git> {
        let base: Vec<String> = GUARDS.iter().map(|g| g.to_string()).collect();
        let inside = run_git(root, &base, &["rev-parse", "--is-inside-work-tree"]).ok()?;
        if inside.trim() != "true" {
            return None;
        }
        let mut excluded = vec![":(exclude).mini_agent".to_string()];
        for file in harness_files {
            if let Ok(relative) = file.strip_prefix(root) {
                excluded.push(format!(":(exclude,literal){}", relative.display()));
            }
        }
        let guards = base.into_iter().chain(filter_guards(root)).collect();
        Some(Git { root: root.to_path_buf(), excluded, guards })
    }

    fn run(&self, args: &[&str]) -> Result<String, Error> {
        run_git(&self.root, &self.guards, args)
    }

    fn pathspec(&self) -> Vec<&str> {
        let mut spec = vec!["--", "."];
        spec.extend(self.excluded.iter().map(String::as_str));
        spec
    }

    /// The changed and untracked paths under the root, outside the harness's files.
    pub fn changes(&self) -> Result<Vec<String>, Error> {
        let mut args = vec!["status", "--porcelain", "--untracked-files=all"];
        args.extend(self.pathspec());
        Ok(self.run(&args)?.lines().map(str::to_string).collect())
    }

    /// The current branch (or `HEAD` when detached; `None` before the first commit).
    pub fn branch(&self) -> Option<String> {
        self.run(&["rev-parse", "--abbrev-ref", "HEAD"]).ok().map(|b| b.trim().to_string())
    }

    // ANCHOR: commit
    /// Stages everything (but the harness's files) and commits it as `message`. Returns the
    /// new commit's short hash, or `None` when there was nothing to commit.
    pub fn commit_all(&self, message: &str) -> Result<Option<String>, Error> {
        let mut add = vec!["add", "-A"];
        add.extend(self.pathspec());
        self.run(&add)?;
        let staged = self.run(&["diff", "--cached", "--name-only"])?;
        if staged.trim().is_empty() {
            return Ok(None);
        }
        let author = format!("{AUTHOR_NAME} <{AUTHOR_EMAIL}>");
        let name = format!("user.name={AUTHOR_NAME}");
        let email = format!("user.email={AUTHOR_EMAIL}");
        let args = ["-c", &name, "-c", &email, "commit", "-q", "--author", &author, "-m", message];
        self.run(&args)?;
        Ok(Some(self.run(&["rev-parse", "--short", "HEAD"])?.trim().to_string()))
    }
    // ANCHOR_END: commit
}

/// `git -C root -c guard… args…`: its stdout, or an error with the first line of its stderr.
fn run_git(root: &Path, guards: &[String], args: &[&str]) -> Result<String, Error> {
    let mut command = Command::new("git");
    command.arg("-C").arg(root);
    for guard in guards {
        command.arg("-c").arg(guard);
    }
    command
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    remove_keys(&mut command);
    let output = command.output().map_err(|e| Error::io("running git", e))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let reason = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        return Err(Error::Config(format!("git {} failed: {reason}", args.first().unwrap_or(&""))));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
