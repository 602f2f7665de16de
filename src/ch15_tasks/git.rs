//! Git, as the loop uses it: one commit per passed task, holding that task's work and nothing
//! else.
//!
//! A commit is the unit a person reviews later, so `tasks run` refuses to start on a tree with
//! uncommitted changes (they would end up in the first task's commit) unless `--allow-dirty`
//! says that is fine, and an attempt that does not pass leaves nothing behind for the next
//! task's commit: its changes are set aside under a ref and the tree is put back
//! ([`super::set_aside`]). The harness's own files — `.mini_agent/` and the task list — are
//! left out of the check, the commit and the set-aside: they change every iteration. The
//! commit is `<id>: <name>` by author `mini-agent`, made with git's plumbing (`write-tree`,
//! `commit-tree`, `update-ref`), so no hook of the repository runs; the harness never pushes.
//! Every git call goes through [`GitCall`]: bounded in time, no terminal, no key in its
//! environment, and none of the programs config can name.

use super::git_process::{Finished, GitCall, filter_guards, git_timeout};
use crate::ch02_loop::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The author (and committer) of the loop's commits.
pub const AUTHOR_NAME: &str = "mini-agent";
pub const AUTHOR_EMAIL: &str = "mini-agent@localhost";
/// Where the start of the attempt in progress is kept until it passes or is set aside.
pub const ATTEMPT_REF: &str = "refs/mini-agent/attempt";

/// A git work tree the loop commits to.
pub struct Git {
    pub(super) root: PathBuf,
    /// Paths (relative to the root, as pathspecs) that are the harness's, never committed.
    excluded: Vec<String>,
    /// The repository's git directory (its index, and the harness's private one, live there).
    pub(super) git_dir: PathBuf,
    /// The root's path from the top of the work tree (`sub/`, or empty).
    pub(super) prefix: String,
    timeout: Duration,
}

/// Git calls with the filter guards of the moment: a set of calls with no model in between.
pub(super) struct Calls<'a> {
    git: &'a Git,
    guards: Vec<OsString>,
}

impl<'a> Calls<'a> {
    /// Calls that read refs and objects only, which no config can make run a program.
    pub(super) fn unguarded(git: &'a Git) -> Calls<'a> {
        Calls { git, guards: Vec::new() }
    }

    pub(super) fn run(&self, call: GitCall) -> Result<Finished, Error> {
        call.run(&self.git.root, &self.guards, self.git.timeout)
    }

    /// A call's standard output, trimmed.
    pub(super) fn text<S: Into<OsString>>(&self, args: impl IntoIterator<Item = S>) -> Result<String, Error> {
        Ok(self.run(GitCall::new(args))?.text().trim().to_string())
    }

    /// The object `name` names, or `None` when there is none (`HEAD` before the first commit).
    pub(super) fn object(&self, name: &str) -> Result<Option<String>, Error> {
        let found = self.run(GitCall::new(["rev-parse", "-q", "--verify", name]).accepting(&[1]))?;
        Ok((found.code == 0).then(|| found.text().trim().to_string()))
    }

    /// `args` followed by the pathspec of the root minus the harness's files.
    pub(super) fn with_pathspec<'s>(&'s self, args: &[&'s str]) -> Vec<&'s str> {
        let mut all = args.to_vec();
        all.extend(["--", "."]);
        all.extend(self.git.excluded.iter().map(String::as_str));
        all
    }
}

impl Git {
    /// `Some` when `root` is inside a git work tree (and git is installed); an error when git
    /// did not answer in time.
    pub fn open(root: &Path, harness_files: &[&Path]) -> Result<Option<Git>, Error> {
        let timeout = git_timeout();
        let asking = ["rev-parse", "--is-inside-work-tree", "--absolute-git-dir", "--show-prefix"];
        let asked = GitCall::new(asking).accepting(&[128]);
        let answer = match asked.run(root, &[], timeout) {
            Ok(answer) if answer.code == 0 => answer.text(),
            Ok(_) | Err(Error::Io { .. }) => return Ok(None), // not a repository; no git
            Err(error) => return Err(error),
        };
        let mut lines = answer.lines();
        if lines.next() != Some("true") {
            return Ok(None);
        }
        let git_dir = PathBuf::from(lines.next().unwrap_or_default());
        let prefix = lines.next().unwrap_or_default().to_string();
        let mut excluded = vec![format!(":(exclude,glob){}/**", escaped_glob(".mini_agent"))];
        for file in harness_files {
            if let Ok(relative) = file.strip_prefix(root) {
                excluded.push(format!(":(exclude,glob){}", escaped_glob(&relative.to_string_lossy())));
            }
        }
        Ok(Some(Git { root: root.to_path_buf(), excluded, git_dir, prefix, timeout }))
    }

    /// Calls guarded against every filter driver config defines now. Asked again for each set
    /// of calls: an attempt may have written a file that the repository's config includes.
    pub(super) fn calls(&self) -> Result<Calls<'_>, Error> {
        Ok(Calls { git: self, guards: filter_guards(&self.root, self.timeout)? })
    }

    /// The changed and untracked paths under the root, outside the harness's files.
    pub fn changes(&self) -> Result<Vec<String>, Error> {
        let calls = self.calls()?;
        let status = calls.with_pathspec(&["status", "--porcelain", "--untracked-files=all"]);
        Ok(calls.run(GitCall::new(status))?.text().lines().map(str::to_string).collect())
    }

    /// The current branch (or `HEAD` when detached; `None` before the first commit).
    pub fn branch(&self) -> Option<String> {
        Calls::unguarded(self).text(["rev-parse", "--abbrev-ref", "HEAD"]).ok()
    }

    // ANCHOR: commit
    /// Stages everything (but the harness's files) and commits it as `message`, ending the
    /// attempt in the same ref transaction. Returns the new commit's short hash, or `None`
    /// when there was nothing to commit.
    pub fn commit_all(&self, message: &str) -> Result<Option<String>, Error> {
        let calls = self.calls()?;
        calls.run(GitCall::new(calls.with_pathspec(&["add", "-A"])))?;
        let tree = calls.text(["write-tree"])?;
        let head = calls.object("HEAD^{commit}")?;
        if head.is_some() && calls.object("HEAD^{tree}")?.as_deref() == Some(tree.as_str()) {
            calls.run(GitCall::new(["update-ref", "-d", ATTEMPT_REF]))?;
            return Ok(None);
        }
        let commit = calls.commit_tree(&tree, &[head.as_deref()], message)?;
        // The branch moves and the attempt ends together: a kill -9 between the two cannot
        // leave a committed attempt that recovery would take for an unfinished one.
        let transaction = format!("update HEAD {commit}\ndelete {ATTEMPT_REF}\n");
        let reflog = format!("mini-agent: {message}");
        calls.run(GitCall::new(["update-ref", "-m", &reflog, "--stdin"]).input(transaction.into_bytes()))?;
        Ok(Some(calls.text(["rev-parse", "--short", &commit])?))
    }
    // ANCHOR_END: commit
}

/// `path` as a glob that matches it alone, its first character escaped too. `git add` reports
/// an ignored path that a pathspec names up to its first wildcard — exclusions included — as an
/// error ("The following paths are ignored"), so a plain `:(exclude).mini_agent` broke every
/// commit in a repository that ignores `.mini_agent/`. A pathspec with no literal start names
/// nothing that way.
fn escaped_glob(path: &str) -> String {
    let mut out = String::new();
    for (at, c) in path.chars().enumerate() {
        if at == 0 || matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Calls<'_> {
    /// A commit of `tree` with `parents` (absent ones skipped), by mini-agent.
    pub(super) fn commit_tree(
        &self,
        tree: &str,
        parents: &[Option<&str>],
        message: &str,
    ) -> Result<String, Error> {
        let mut args = vec!["commit-tree", "--no-gpg-sign", "-m", message];
        for parent in parents.iter().flatten() {
            args.extend(["-p", parent]);
        }
        args.push(tree);
        let call = GitCall::new(args)
            .env("GIT_AUTHOR_NAME", AUTHOR_NAME)
            .env("GIT_AUTHOR_EMAIL", AUTHOR_EMAIL)
            .env("GIT_COMMITTER_NAME", AUTHOR_NAME)
            .env("GIT_COMMITTER_EMAIL", AUTHOR_EMAIL);
        Ok(self.run(call)?.text().trim().to_string())
    }
}
