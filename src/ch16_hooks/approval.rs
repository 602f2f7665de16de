//! Chapter 16 (the rule of Part 3 and 4) — approving a workspace file that runs commands.
//!
//! A cloned repository may hold files that *start programs*: hooks (chapter 16) and MCP
//! servers (chapter 18). Reading such a file is harmless; obeying it runs whatever its author
//! wrote, with the user's rights, before the user typed a word. So the rule is the one
//! editors use for workspace settings: a file of commands is obeyed only once the person at
//! the terminal has approved **its exact contents**, or passed a `--trust-…` flag for this run.
//!
//! The approval is remembered outside any workspace, in the user's config directory
//! (`$XDG_CONFIG_HOME/mini-agent/approved`, else `~/.config/mini-agent/approved`), as one line
//! per approval: the SHA-256 of the file's kind, its real path and its bytes. A repository
//! cannot approve itself (it cannot write there), a changed file is a new question, and the
//! same file in another clone is asked about again, because relative commands there run other
//! programs. With nobody to ask (a script, `--json`, CI) the file is skipped with one warning
//! that names the flag — never run by default.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The remembered approvals are small lines; a planted huge file is not read whole.
const STORE_MAX_BYTES: u64 = 4 << 20;

// ANCHOR: request
/// A workspace file that asks to run commands.
pub struct Request<'a> {
    /// What the file holds, for the question and the key: `MCP servers`, `hooks`.
    pub kind: &'a str,
    /// Where the file is (its real path: part of what is approved).
    pub path: &'a Path,
    /// Its exact bytes, as they will be obeyed.
    pub contents: &'a [u8],
    /// What would run, one line per command, already made safe to show.
    pub summary: &'a str,
    /// The flag that trusts such files for one run: `--trust-mcp`, `--trust-hooks`.
    pub flag: &'a str,
}

/// What to do with the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Obey it: trusted by the flag, approved before, or approved just now.
    Run,
    /// Do not obey it; the line says why and names the flag.
    Skip(String),
}
// ANCHOR_END: request

/// A word of a command file (a matcher, an argument, a variable, a path) as the question shows
/// it: bare when it holds only characters that mean nothing to a shell or a terminal, else
/// quoted with every control character, newline and invisible character escaped. So no word
/// can hide what follows it (`ESC [8m`), forge a line of the question, or run into the next.
pub fn shown_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-|*~^".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        crate::ch04_terminal::sanitize::sanitize(&format!("{word:?}"))
    }
}

/// Shows a question to the person at the terminal and returns the line they typed.
pub type Ask<'a> = &'a mut dyn FnMut(&str) -> Option<String>;

/// Where approvals are remembered: one hex SHA-256 per line.
pub struct ApprovalStore {
    path: PathBuf,
}

impl ApprovalStore {
    /// The user's store: `$XDG_CONFIG_HOME/mini-agent/approved`, else `$HOME/.config/…`;
    /// `None` when neither variable names an absolute directory.
    pub fn user() -> Option<ApprovalStore> {
        Some(ApprovalStore { path: user_config_dir()?.join("approved") })
    }

    /// A store at `path` (tests).
    pub fn at(path: &Path) -> ApprovalStore {
        ApprovalStore { path: path.to_path_buf() }
    }

    pub(crate) fn contains(&self, key: &str) -> bool {
        let Ok(file) = fs::File::open(&self.path) else { return false };
        let mut text = String::new();
        if file.take(STORE_MAX_BYTES).read_to_string(&mut text).is_err() {
            return false;
        }
        text.lines().any(|line| line.trim() == key)
    }

    pub(crate) fn remember(&self, key: &str) -> std::io::Result<()> {
        if let Some(parent) = self.path.parent() {
            fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.path)?;
        file.write_all(format!("{key}\n").as_bytes())
    }
}

/// The user's configuration directory for mini-agent (chapter 3 names it, and keeps the file
/// tools out of it wherever the workspace root is).
pub use crate::ch03_tools::own_config::user_config_dir;

// ANCHOR: key
/// What is approved: this kind of file, at this real path, with exactly these bytes.
pub(crate) fn approval_key(kind: &str, path: &Path, contents: &[u8]) -> String {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for part in [kind.as_bytes(), path.as_os_str().as_encoded_bytes(), contents] {
        context.update(&(part.len() as u64).to_le_bytes());
        context.update(part);
    }
    context.finish().as_ref().iter().map(|byte| format!("{byte:02x}")).collect()
}
// ANCHOR_END: key

// ANCHOR: decide
/// The whole rule. `trusted` is the `--trust-…` flag; `ask` shows a question to the person
/// at the terminal and returns their line (`None`: nobody there, or no answer).
pub fn decide(request: &Request, trusted: bool, store: Option<&ApprovalStore>, ask: Option<Ask>) -> Decision {
    if trusted {
        return Decision::Run;
    }
    let key = approval_key(request.kind, request.path, request.contents);
    if store.is_some_and(|store| store.contains(&key)) {
        return Decision::Run;
    }
    // ANCHOR_END: decide
    // ANCHOR: decide_ask
    let shown = shown_word(&request.path.to_string_lossy());
    let skipped = |why: &str| {
        Decision::Skip(format!(
            "{} from {shown} not started: {why}; approve the file at a terminal, or pass {} to trust it for this run",
            request.kind, request.flag
        ))
    };
    let Some(ask) = ask else { return skipped("nobody at a terminal approved its contents") };
    let allow = "run them (this file, exactly as it is now)? [y] yes, and remember  [n] no: ";
    let mut question = format!("{shown} wants to start {}:\n{}\n{allow}", request.kind, request.summary);
    // Like the permission question (chapter 12): anything but yes or no is asked again, so a
    // slip of the finger is not taken for an answer.
    loop {
        match ask(&question).map(|line| line.trim().to_lowercase()).as_deref() {
            Some("y" | "yes") => break,
            Some("n" | "no") | None => return skipped("not approved"),
            Some(_) => question = format!("please answer y or n\n{allow}"),
        }
    }
    if let Some(Err(error)) = store.map(|store| store.remember(&key)) {
        eprintln!("mini-agent: warning: the approval could not be remembered: {error}");
    }
    Decision::Run
}
// ANCHOR_END: decide_ask

/// Asks on the controlling terminal (`/dev/tty`), which works when stdin is a pipe; `None`
/// when there is no terminal.
pub fn ask_on_tty(question: &str) -> Option<String> {
    let mut writer = OpenOptions::new().write(true).open("/dev/tty").ok()?;
    let reader = OpenOptions::new().read(true).open("/dev/tty").ok()?;
    writer.write_all(question.as_bytes()).ok()?;
    writer.flush().ok()?;
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(reader.take(4_096)), &mut line).ok()?;
    (!line.is_empty()).then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_store(tag: &str) -> (crate::temp_dir::TempDir, ApprovalStore) {
        let dir = crate::temp_dir::TempDir::new(&format!("approval-{tag}"));
        let store = ApprovalStore::at(&dir.join("config").join("approved"));
        (dir, store)
    }

    fn request<'a>(contents: &'a [u8]) -> Request<'a> {
        Request {
            kind: "MCP servers",
            path: Path::new("/work/repo/.mcp.json"),
            contents,
            summary: "  files: npx server",
            flag: "--trust-mcp",
        }
    }

    #[test]
    fn nobody_to_ask_means_skipped_with_the_flag_named() {
        let (_dir, store) = temp_store("nobody");
        let decision = decide(&request(b"{}"), false, Some(&store), None);
        let Decision::Skip(line) = decision else { panic!("ran without approval") };
        assert!(line.contains("--trust-mcp") && line.contains(".mcp.json") && !line.contains('\n'), "{line}");
        assert_eq!(decide(&request(b"{}"), true, Some(&store), None), Decision::Run);
    }

    #[test]
    fn an_approval_covers_exactly_those_contents_once() {
        let (_dir, store) = temp_store("exact");
        let mut asked = Vec::new();
        let mut yes = |question: &str| {
            asked.push(question.to_string());
            Some("y\n".to_string())
        };
        assert_eq!(decide(&request(b"{\"a\":1}"), false, Some(&store), Some(&mut yes)), Decision::Run);
        assert_eq!(asked.len(), 1);
        assert!(asked[0].contains("npx server"), "{}", asked[0]);
        // Remembered: no question, even with nobody there.
        assert_eq!(decide(&request(b"{\"a\":1}"), false, Some(&store), None), Decision::Run);
        // Anything but yes or no is asked again; an empty line too.
        let mut answers = vec!["y", "", "maybe"];
        let mut questions = Vec::new();
        let mut typed = |question: &str| {
            questions.push(question.to_string());
            answers.pop().map(str::to_string)
        };
        assert_eq!(decide(&request(b"{\"a\":3}"), false, Some(&store), Some(&mut typed)), Decision::Run);
        assert_eq!(questions.len(), 3);
        assert!(questions[1].starts_with("please answer y or n\nrun them"), "{}", questions[1]);
        // One byte changed: a new file, asked again; "n" skips and is not remembered.
        let mut no = |_: &str| Some("n".to_string());
        assert!(matches!(
            decide(&request(b"{\"a\":2}"), false, Some(&store), Some(&mut no)),
            Decision::Skip(_)
        ));
        assert!(matches!(decide(&request(b"{\"a\":2}"), false, Some(&store), None), Decision::Skip(_)));
        // The same bytes elsewhere are another file.
        let moved = Request { path: Path::new("/elsewhere/.mcp.json"), ..request(b"{\"a\":1}") };
        assert!(matches!(decide(&moved, false, Some(&store), None), Decision::Skip(_)));
        let mode = std::os::unix::fs::PermissionsExt::mode(&fs::metadata(&store.path).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn the_key_separates_its_parts() {
        let a = approval_key("ab", Path::new("c"), b"");
        let b = approval_key("a", Path::new("bc"), b"");
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
    }
}
