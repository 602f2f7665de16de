//! `.mini_agent/`, the agent's directory in the workspace, holds two kinds of files side by
//! side: records private to this machine (sessions, the input history, saved outputs, server
//! logs) and settings a team shares (`hooks.json`, `tasks.json`, task templates). Left alone,
//! `git status` shows all of them as untracked, and one `git add .` commits a session's
//! transcript. So the first chapter that writes there also writes a `.gitignore` into it, the
//! first time it finds none: everything is ignored but the shared files, so a private file
//! added by a later version is private by default. A `.gitignore` already there is the user's
//! and is never rewritten (to opt out, empty it rather than delete it).

use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

// ANCHOR: gitignore
/// What `.mini_agent/.gitignore` says: ignore everything in the directory but what is shared.
pub const GITIGNORE: &str = "\
# Written by mini-agent, once; yours to edit (it is never rewritten).
# Private to this machine: sessions, input history, saved outputs, logs.
# Shared with the repository: the hooks, the task list and its templates.
/*
!/.gitignore
!/hooks.json
!/tasks.json
!/templates/
";

/// Writes [`GITIGNORE`] into `agent_dir` (the workspace's `.mini_agent/`) unless a
/// `.gitignore` is there already. Never through a symlink; a failure (a read-only checkout)
/// costs nothing but the file.
pub fn write_gitignore(agent_dir: &Path) {
    let real_directory = std::fs::symlink_metadata(agent_dir).is_ok_and(|meta| meta.is_dir());
    if !real_directory {
        return;
    }
    // `create_new` fails on anything already there, a symlink included: never overwritten.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(agent_dir.join(".gitignore"));
    if let Ok(mut file) = file {
        let _: io::Result<()> = file.write_all(GITIGNORE.as_bytes());
    }
}
// ANCHOR_END: gitignore

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gitignore_is_written_once_and_a_users_own_is_kept() {
        let temp = crate::temp_dir::TempDir::new("agent-dir");
        let agent_dir = temp.join(".mini_agent");
        write_gitignore(&agent_dir);
        assert!(!agent_dir.exists(), "no directory is created for it");
        std::fs::create_dir(&agent_dir).unwrap();
        write_gitignore(&agent_dir);
        assert_eq!(std::fs::read_to_string(agent_dir.join(".gitignore")).unwrap(), GITIGNORE);
        std::fs::write(agent_dir.join(".gitignore"), "# mine\n").unwrap();
        write_gitignore(&agent_dir);
        assert_eq!(std::fs::read_to_string(agent_dir.join(".gitignore")).unwrap(), "# mine\n");
    }
}
