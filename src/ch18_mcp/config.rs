//! Chapter 18 — where MCP servers come from.
//!
//! Two files, in the shape Claude Code, Cursor and the others already use
//! (`{"mcpServers": {"NAME": {"command", "args", "env", "cwd"}}}`): the user's own
//! `$XDG_CONFIG_HOME/mini-agent/mcp.json` (else `~/.config/mini-agent/mcp.json`), trusted
//! because the user wrote it, and `.mcp.json` in the workspace root, which a cloned
//! repository supplies. The workspace file is read through chapter 3's gate (no symlink out
//! of the root, a regular file, bounded) and obeyed only under chapter 16's approval rule; a
//! workspace server replaces a user server of the same name only once approved.
//!
//! Only stdio servers are spoken; an entry with a `url` (HTTP, SSE) is a warning, not an error,
//! so one file can serve several tools.

use crate::ch03_tools::Workspace;
use crate::ch04_terminal::sanitize::sanitize_command;
use crate::ch16_hooks::approval::{
    ApprovalStore, Ask, Decision, Request, decide, shown_word, user_config_dir,
};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The workspace file, relative to the root.
pub(crate) const WORKSPACE_FILE: &str = ".mcp.json";
/// A configuration larger than this is refused, not read.
const CONFIG_MAX_BYTES: usize = 1 << 20;
/// At most this many servers from one file.
const MAX_SERVERS: usize = 32;
pub(crate) const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// `npx -y` or `uvx` download a server at its first start: 15 s was seen on a good line.
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_TIMEOUT_SECS: u64 = 3_600;

// ANCHOR: server_config
/// One server: the program to start and how long to wait for it.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    /// Its name in `mcp__<name>__<tool>`: letters, digits, `_` and `-`.
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Added to the environment (which never holds the API key).
    pub env: Vec<(String, String)>,
    /// Where it runs: the workspace root unless `cwd` says otherwise (relative to the root).
    pub cwd: PathBuf,
    /// Per call (`timeout`, seconds; default 60).
    pub timeout: Duration,
    /// From spawn to a listed set of tools (`startup_timeout`, seconds; default 30).
    pub startup_timeout: Duration,
    /// Which file it came from.
    pub source: PathBuf,
}
// ANCHOR_END: server_config

/// The servers of this run, and what was skipped on the way (one line each).
#[derive(Debug, Default)]
pub struct Loaded {
    pub servers: Vec<ServerConfig>,
    pub warnings: Vec<String>,
}

/// Parses one configuration file. Entries that cannot be used are warnings; a file that is
/// not a JSON object with `mcpServers` is an error.
pub fn parse(text: &str, source: &Path, root: &Path) -> Result<(Vec<ServerConfig>, Vec<String>), String> {
    let shown = source.display();
    let value: Value = serde_json::from_str(text).map_err(|e| format!("{shown} is not valid JSON: {e}"))?;
    let Some(entries) = value.get("mcpServers") else {
        return Err(format!("{shown} has no \"mcpServers\" object"));
    };
    let entries = entries.as_object().ok_or_else(|| format!("{shown}: \"mcpServers\" is not an object"))?;
    let mut servers = Vec::new();
    let mut warnings = Vec::new();
    for (name, entry) in entries {
        if servers.len() == MAX_SERVERS {
            warnings.push(format!("{shown}: only the first {MAX_SERVERS} servers are used"));
            break;
        }
        match server(name, entry, source, root) {
            Ok(Some(config)) => servers.push(config),
            Ok(None) => {}
            Err(why) => warnings.push(format!("{shown}: server {:?} skipped: {why}", shorten_name(name))),
        }
    }
    Ok((servers, warnings))
}

fn shorten_name(name: &str) -> String {
    crate::text::shorten(&sanitize_command(name), 40)
}

fn server(name: &str, entry: &Value, source: &Path, root: &Path) -> Result<Option<ServerConfig>, String> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || name.len() > 40 || !name.chars().all(valid) {
        return Err("a name is 1 to 40 letters, digits, `_` or `-`".into());
    }
    if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Ok(None);
    }
    let kind = entry.get("type").and_then(Value::as_str).unwrap_or("stdio");
    if kind != "stdio" || entry.get("url").is_some() {
        return Err("only stdio servers (with a \"command\") are supported".into());
    }
    let text = |key: &str| {
        entry.get(key).map(|v| v.as_str().map(str::to_string).ok_or(format!("\"{key}\" is not a string")))
    };
    let command = text("command").ok_or("no \"command\"")??;
    if command.trim().is_empty() {
        return Err("\"command\" is empty".into());
    }
    let strings = |value: &Value| value.as_str().map(str::to_string).ok_or("\"args\" holds a non-string");
    let args = match entry.get("args") {
        None => Vec::new(),
        Some(Value::Array(items)) => items.iter().map(strings).collect::<Result<_, _>>()?,
        Some(_) => return Err("\"args\" is not a list".into()),
    };
    let env = match entry.get("env") {
        None => Vec::new(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                v.as_str().map(|v| (k.clone(), v.to_string())).ok_or(format!("env {k:?} is not a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"env\" is not an object".into()),
    };
    let cwd = match text("cwd").transpose()? {
        Some(dir) => root.join(dir),
        None => root.to_path_buf(),
    };
    let seconds = |key: &str, default: Duration| match entry.get(key) {
        None => Ok(default),
        Some(value) => value
            .as_u64()
            .filter(|&n| n > 0)
            .map(|n| Duration::from_secs(n.min(MAX_TIMEOUT_SECS)))
            .ok_or(format!("\"{key}\" is not a positive number of seconds")),
    };
    Ok(Some(ServerConfig {
        name: name.to_string(),
        command,
        args,
        env,
        cwd,
        timeout: seconds("timeout", DEFAULT_CALL_TIMEOUT)?,
        startup_timeout: seconds("startup_timeout", DEFAULT_STARTUP_TIMEOUT)?,
        source: source.to_path_buf(),
    }))
}

/// What a file would run, one line per server, safe to show at a terminal. Everything that
/// decides what runs is shown: the variables it adds (`NODE_OPTIONS` or
/// `LD_PRELOAD` run other code inside a program that looks harmless), the command and its
/// words (quoted when they hold blanks or controls), and the directory when it is not the root.
pub fn summary(servers: &[ServerConfig]) -> String {
    let lines: Vec<String> = servers
        .iter()
        .map(|s| {
            let mut words: Vec<String> = s
                .env
                .iter()
                .map(|(name, value)| format!("{}={}", shown_word(name), shown_word(value)))
                .collect();
            words.push(shown_word(&s.command));
            words.extend(s.args.iter().map(|arg| shown_word(arg)));
            let place = match s.source.parent() {
                Some(root) if root == s.cwd => String::new(),
                _ => format!(" (in {})", shown_word(&s.cwd.to_string_lossy())),
            };
            format!("  {}: {}{place}", s.name, sanitize_command(&words.join(" ")))
        })
        .collect();
    lines.join("\n")
}

/// The servers of this run: the user's file, then the workspace's if it is approved
/// (`trusted` is `--trust-mcp`; `ask` reaches the person at the terminal, if any).
pub fn load(workspace: &Workspace, trusted: bool, store: Option<&ApprovalStore>, ask: Option<Ask>) -> Loaded {
    let root = workspace.root();
    let mut loaded = Loaded::default();
    if let Some(path) = user_config_dir().map(|dir| dir.join("mcp.json")) {
        match read_user_file(&path) {
            Ok(Some(text)) => add(&mut loaded, parse(&text, &path, root)),
            Ok(None) => {}
            Err(why) => loaded.warnings.push(why),
        }
    }
    let path = root.join(WORKSPACE_FILE);
    let text = match workspace.read_workspace_file(WORKSPACE_FILE, CONFIG_MAX_BYTES) {
        Ok(None) => return loaded,
        Ok(Some(file)) if file.cut => {
            loaded.warnings.push(format!("{} is larger than 1 MiB; ignored", path.display()));
            return loaded;
        }
        Ok(Some(file)) => file.text,
        Err(why) => {
            loaded.warnings.push(format!("{WORKSPACE_FILE} ignored: {why}"));
            return loaded;
        }
    };
    let (servers, warnings) = match parse(&text, &path, root) {
        Ok(parsed) => parsed,
        Err(why) => {
            loaded.warnings.push(why);
            return loaded;
        }
    };
    loaded.warnings.extend(warnings);
    if servers.is_empty() {
        return loaded;
    }
    // ANCHOR: load
    let request = Request {
        kind: "MCP servers",
        path: &path,
        contents: text.as_bytes(),
        summary: &summary(&servers),
        flag: "--trust-mcp",
    };
    match decide(&request, trusted, store, ask) {
        Decision::Run => {
            loaded.servers.retain(|user| !servers.iter().any(|s| s.name == user.name));
            loaded.servers.extend(servers);
        }
        Decision::Skip(line) => loaded.warnings.push(line),
    }
    loaded
}
// ANCHOR_END: load

fn add(loaded: &mut Loaded, parsed: Result<(Vec<ServerConfig>, Vec<String>), String>) {
    match parsed {
        Ok((servers, warnings)) => {
            loaded.servers.extend(servers);
            loaded.warnings.extend(warnings);
        }
        Err(why) => loaded.warnings.push(why),
    }
}

/// The user's own file: trusted, but still bounded and a regular file.
fn read_user_file(path: &Path) -> Result<Option<String>, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("{}: {error}", path.display())),
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(format!("{} is not a regular file; ignored", path.display()));
    }
    let mut text = String::new();
    file.take(CONFIG_MAX_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if text.len() > CONFIG_MAX_BYTES {
        return Err(format!("{} is larger than 1 MiB; ignored", path.display()));
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_shape_parses_and_bad_entries_are_warnings() {
        let text = r#"{"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server"], "env": {"A": "1"}, "timeout": 5},
            "web": {"type": "http", "url": "https://example.com/mcp"},
            "off": {"command": "x", "disabled": true},
            "bad name": {"command": "x"},
            "sub": {"command": "x", "cwd": "tools", "startup_timeout": 99999}
        }}"#;
        let (servers, warnings) = parse(text, Path::new("/r/.mcp.json"), Path::new("/r")).unwrap();
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["files", "sub"]);
        assert_eq!(servers[0].args, ["-y", "server"]);
        assert_eq!(servers[0].env, [("A".to_string(), "1".to_string())]);
        assert_eq!(servers[0].timeout, Duration::from_secs(5));
        assert_eq!(servers[0].cwd, Path::new("/r"));
        assert_eq!(servers[1].cwd, Path::new("/r/tools"));
        assert_eq!(servers[1].startup_timeout, Duration::from_secs(MAX_TIMEOUT_SECS));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(parse("[]", Path::new("x"), Path::new("/")).is_err());
        assert!(parse("{", Path::new("x"), Path::new("/")).is_err());
    }

    #[test]
    fn the_summary_shows_control_characters() {
        let text = r#"{"mcpServers": {"a": {"command": "evil\u001b[2J", "args": ["x"]}}}"#;
        let (servers, _) = parse(text, Path::new("/r/.mcp.json"), Path::new("/r")).unwrap();
        let shown = summary(&servers);
        assert!(!shown.contains('\u{1b}') && shown.contains(r#"a: "evil\u{1b}[2J" x"#), "{shown}");
    }
}
