//! Chapter 18 — one MCP server's life: start, handshake, list, call, restart.
//!
//! The handshake is three messages: `initialize` (our protocol version and name; the server
//! answers with the version it will speak), the `notifications/initialized` notification, and
//! `tools/list`, followed page by page through `nextCursor`. All of it must finish within the
//! server's start-up timeout, or the server is stopped and reported in one line. A server
//! that dies later is noticed by its next call, which starts it again: the call that was
//! running when it died has an unknown outcome, and the model is told so.

use crate::ch18_mcp::config::ServerConfig;
use crate::ch18_mcp::rpc::{Connection, RpcError};
use serde_json::{Value, json};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The protocol version we ask for (the MCP specification of 2025-06-18).
pub(crate) const PROTOCOL_VERSION: &str = "2025-06-18";
/// Versions whose stdio framing, `tools/list` and `tools/call` are the ones spoken here.
const KNOWN_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// Pages of `tools/list` followed, and tools kept from one server.
const MAX_PAGES: usize = 20;
const MAX_TOOLS: usize = 256;

/// A tool as the server describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub schema: Value,
}

/// Where a server is in its life, for `/mcp`.
#[derive(Clone, Debug, PartialEq)]
pub enum State {
    NotStarted,
    Running,
    /// Could not start (or restart): the one-line reason.
    Failed(String),
    /// Was running and ended; the next call starts it again.
    Exited(String),
}

pub struct Server {
    pub config: ServerConfig,
    pub state: State,
    pub tools: Vec<RemoteTool>,
    connection: Option<Connection>,
    /// `<root>/.mini_agent/mcp/`, where `<name>.log` receives its stderr.
    log_dir: PathBuf,
    starts: u32,
}

impl Server {
    pub fn new(config: ServerConfig, root: &Path) -> Server {
        let log_dir = root.join(".mini_agent").join("mcp");
        Server { config, state: State::NotStarted, tools: Vec::new(), connection: None, log_dir, starts: 0 }
    }

    pub(crate) fn log_path(&self) -> PathBuf {
        self.log_dir.join(format!("{}.log", self.config.name))
    }

    // ANCHOR: start
    /// Spawns the server and shakes hands, all within its start-up timeout.
    pub fn start(&mut self) -> Result<(), RpcError> {
        self.connection = None; // a previous process is stopped first
        let log = open_log(&self.log_dir, &self.log_path(), self.starts == 0);
        self.starts += 1;
        let connection = Connection::spawn(&self.config, log)
            .map_err(|error| RpcError::Closed(format!("cannot start `{}`: {error}", self.config.command)))?;
        let limit = self.config.startup_timeout;
        let (tools, connection) = handshake(connection, limit).map_err(|error| match error {
            RpcError::Timeout(_) => RpcError::Timeout(limit), // the whole start-up's limit
            other => other,
        })?;
        self.tools = tools;
        self.connection = Some(connection);
        self.state = State::Running;
        Ok(())
    }
    // ANCHOR_END: start

    // ANCHOR: call
    /// Calls `tool`. A server that ended since its last call is started again first; if that
    /// fails the call did not run (`RpcError::NotStarted`).
    pub fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, RpcError> {
        let alive = self.connection.as_ref().is_some_and(Connection::is_alive);
        if !alive && let Err(error) = self.start() {
            let why = describe(&error);
            self.state = State::Failed(why.clone());
            self.connection = None;
            return Err(RpcError::NotStarted(why));
        }
        let timeout = self.config.timeout;
        let Some(connection) = self.connection.as_mut() else {
            return Err(RpcError::NotStarted("the server is not running".into()));
        };
        let result = connection.request("tools/call", json!({"name": tool, "arguments": arguments}), timeout);
        if let Err(RpcError::Closed(how)) = &result {
            self.state = State::Exited(how.clone());
        } else if !connection.is_alive() {
            self.state = State::Exited(connection.how_it_ended());
        }
        result
    }
    // ANCHOR_END: call

    /// Stops the process (if any); `/mcp` shows it as not started.
    pub fn stop(&mut self) {
        self.connection = None;
    }
}

/// `initialize`, `notifications/initialized`, then `tools/list` page by page, all before
/// the start-up deadline.
fn handshake(mut connection: Connection, limit: Duration) -> Result<(Vec<RemoteTool>, Connection), RpcError> {
    let deadline = Instant::now() + limit;
    let left = || deadline.saturating_duration_since(Instant::now());
    let hello = json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mini-agent", "version": env!("CARGO_PKG_VERSION")},
    });
    let answer = connection.request("initialize", hello, left())?;
    let version = answer.get("protocolVersion").and_then(Value::as_str).unwrap_or("none");
    if !KNOWN_VERSIONS.contains(&version) {
        let version = crate::text::shorten(version, 40);
        return Err(RpcError::Remote(format!("the server speaks protocol version {version:?}")));
    }
    connection.notify("notifications/initialized", json!({}))?;
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _page in 0..MAX_PAGES {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = connection.request("tools/list", params, left())?;
        let listed = page.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        tools.extend(listed.iter().filter_map(remote_tool));
        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_string);
        if cursor.is_none() || tools.len() >= MAX_TOOLS {
            break;
        }
    }
    tools.truncate(MAX_TOOLS);
    Ok((tools, connection))
}

/// One line for the user or the model: why a start or a call failed.
pub fn describe(error: &RpcError) -> String {
    match error {
        RpcError::Timeout(after) => format!("no answer within {}", seconds(*after)),
        RpcError::Interrupted => "interrupted (Ctrl+C)".into(),
        RpcError::Closed(how) | RpcError::NotStarted(how) => how.clone(),
        RpcError::Remote(message) => format!("the server answered with an error: {message}"),
        RpcError::TooLarge(bytes) => {
            format!(
                "its answer was {bytes} bytes, more than the {} MiB a line may hold",
                super::rpc::MAX_LINE_BYTES >> 20
            )
        }
        RpcError::Write(why) => why.clone(),
    }
}

pub(crate) fn seconds(duration: Duration) -> String {
    match duration.as_secs() {
        0 => format!("{} ms", duration.as_millis()),
        1 => "1 s".into(),
        n => format!("{n} s"),
    }
}

/// A tool entry of `tools/list`; entries without a usable name are skipped.
fn remote_tool(entry: &Value) -> Option<RemoteTool> {
    let name = entry.get("name")?.as_str()?.to_string();
    if name.is_empty() || name.len() > 128 {
        return None;
    }
    let description = entry.get("description").and_then(Value::as_str).unwrap_or("").to_string();
    let schema = entry.get("inputSchema").cloned().unwrap_or(Value::Null);
    Some(RemoteTool { name, description, schema })
}

/// `<root>/.mini_agent/mcp/<name>.log`, 0600 in a 0700 directory, never through a symlink;
/// emptied at the first start of a run, appended to on a restart. `None` when it cannot be
/// made (the server still runs, its stderr is dropped).
fn open_log(dir: &Path, path: &Path, first: bool) -> Option<File> {
    let mut directory = PathBuf::new();
    for part in dir.components() {
        directory.push(part);
        if !directory.ends_with(".mini_agent") && !directory.ends_with("mcp") {
            continue;
        }
        match fs::DirBuilder::new().mode(0o700).create(&directory) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return None,
        }
        if !fs::symlink_metadata(&directory).is_ok_and(|m| m.is_dir()) {
            return None;
        }
    }
    let mut options = OpenOptions::new();
    options.create(true).mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    if first {
        options.write(true).truncate(true);
    } else {
        options.append(true);
    }
    let file = options.open(path).ok()?;
    file.metadata().is_ok_and(|m| m.is_file()).then_some(file)
}
