//! The agent's own configuration directory: `$XDG_CONFIG_HOME/mini-agent`, else
//! `~/.config/mini-agent`. Later chapters keep there what the agent trusts: the approvals of
//! workspace files that run commands (chapter 16) and the user's own MCP servers (chapter 18),
//! which start without a question. The file tools must never write it, wherever the workspace
//! root is: a root at `$HOME` with `--allow-write` would otherwise let the model add a server
//! that the next plain run starts, or approve a hooks file itself.
//!
//! This chapter owns the name, as it owns `.mini_agent/` before chapter 5 writes a session
//! there: the whole directory is protected, so what a later chapter puts in it is covered
//! without that chapter registering anything, and chapter 3 names no later chapter. Both
//! places are protected, whichever the variables choose today: a file written to the other
//! one would be read by the next run that has `XDG_CONFIG_HOME` set, or unset.

use std::path::{Component, Path, PathBuf};

// ANCHOR: user_config_dir
/// The directory the agent reads its configuration from: `$XDG_CONFIG_HOME/mini-agent`, else
/// `$HOME/.config/mini-agent`; `None` when neither variable names an absolute directory.
pub fn user_config_dir() -> Option<PathBuf> {
    config_dirs().into_iter().next()
}

/// Both places the configuration can be, the one in use first.
fn config_dirs() -> Vec<PathBuf> {
    let absolute = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|path| path.is_absolute());
    [absolute("XDG_CONFIG_HOME"), absolute("HOME").map(|home| home.join(".config"))]
        .into_iter()
        .flatten()
        .map(|dir| dir.join("mini-agent"))
        .collect()
}
// ANCHOR_END: user_config_dir

/// The configuration directories as the kernel would find them now (symlinks followed, so
/// they compare with a resolved path); a missing tail is kept as written. Read at each
/// check, not once: a directory created later, or a link put on its way, counts.
pub(super) fn protected_config_dirs() -> Vec<PathBuf> {
    config_dirs().iter().map(|dir| real_as_far_as_it_exists(dir)).collect()
}

/// `path` with its longest existing ancestor made canonical.
fn real_as_far_as_it_exists(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut missing = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            return missing.iter().rev().fold(real, |real, name| real.join(name));
        }
        match (existing.file_name().map(|name| name.to_os_string()), existing.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.components().filter(|c| !matches!(c, Component::CurDir)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tail_is_kept_below_the_real_ancestor() {
        let temp = crate::temp_dir::TempDir::new("own-config");
        std::fs::create_dir(temp.join("real")).unwrap();
        std::os::unix::fs::symlink(temp.join("real"), temp.join("link")).unwrap();
        let real = std::fs::canonicalize(temp.join("real")).unwrap();
        assert_eq!(real_as_far_as_it_exists(&temp.join("link/mini-agent/x")), real.join("mini-agent/x"));
    }
}
