//! Chapter 18 — MCP: tools from other programs.
//!
//! The Model Context Protocol is how tools are shared between agents: a *server* is a
//! program that lists tools and runs them when asked, and any agent that speaks the protocol
//! can offer them to its model. This chapter adds MCP to mini-agent as one more [`Tools`]:
//! [`WithMcp`] wraps the six tools, adds each server's tools to the schemas, and sends a call
//! named `mcp__<server>__<tool>` to its server. The loop does not change; the permission gate
//! of chapter 12 sits outside and asks about MCP calls as it asks about `bash`; the journal of
//! chapter 9 records them like any call, so a crash during one is an unknown outcome
//! (chapter 10) — an MCP tool is not one of the read-only tools.
//!
//! * [`config`] — `.mcp.json` and the user's `mcp.json`, under chapter 16's approval rule.
//! * [`rpc`] — JSON-RPC 2.0 over the child's stdin and stdout, bounded and interruptible.
//! * [`exit`] — waiting for a server's exit with a deadline, woken by the exit itself.
//! * [`server`] — one server's handshake, tool list, calls and restarts.
//! * [`tools`] — names, schemas and results as the model sees them.
//!
//! Servers start lazily, when the first turn asks for the tool schemas, all at once in
//! parallel; with no server configured this chapter costs nothing.

pub mod config;
pub(crate) mod exit;
pub(crate) mod rpc;
pub mod server;
#[cfg(test)]
mod tests;
pub mod tools;

use crate::ch02_loop::command_line::{Flag, Help};
use crate::ch02_loop::{Error, ToolCall, ToolOutput, ToolStatus, Tools};
use crate::ch03_tools::Change;
use crate::ch03_tools::Workspace;
use crate::ch03_tools::secrets::redactor;
use crate::ch04_terminal::SlashCommand;
use crate::ch04_terminal::sanitize::sanitize;
use crate::ch05_sessions::RegisterParts;
use crate::ch05_sessions::parts::{Layer, RunPart, SessionInput, Stack, Toolbox};
use crate::ch12_permissions::{Guarded, Permission};
use crate::ch16_hooks::approval::{ApprovalStore, Ask, ask_on_tty};
use config::ServerConfig;
use serde_json::Value;
use server::{Server, State, describe};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// Every MCP tool name starts with this.
pub const PREFIX: &str = "mcp__";

/// The configured servers of a run, shared by every session of it (`/new` keeps them).
pub struct McpServers {
    servers: Vec<Mutex<Server>>,
    /// Exposed name → (server index, the server's own tool name), in listing order.
    names: Mutex<Vec<(String, usize, String)>>,
}

impl Drop for McpServers {
    /// Stops every server at once: each may take its grace to exit after its input closes
    /// ([`rpc`]'s `Drop`), and one after another those graces would add up.
    fn drop(&mut self) {
        thread::scope(|scope| {
            for server in &self.servers {
                scope.spawn(move || lock(server).stop());
            }
        });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl McpServers {
    pub fn new(configs: Vec<ServerConfig>, root: &Path) -> McpServers {
        let servers = configs.into_iter().map(|config| Mutex::new(Server::new(config, root))).collect();
        McpServers { servers, names: Mutex::new(Vec::new()) }
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    // ANCHOR: ensure_started
    /// Starts every server not started yet (and, with `retry_failed`, those that failed), in
    /// parallel, each within its start-up timeout. A start that takes longer than
    /// [`SLOW_START`] is said to be under way, so a long wait (`npx` downloading a server) is
    /// never a silent one; then one line per server that started late or failed. The tool
    /// names are assigned again at the end.
    pub fn ensure_started(&self, retry_failed: bool) {
        let waiting: Vec<&Mutex<Server>> = self
            .servers
            .iter()
            .filter(|server| match lock(server).state {
                State::NotStarted => true,
                State::Failed(_) => retry_failed,
                State::Running | State::Exited(_) => false,
            })
            .collect();
        if waiting.is_empty() {
            return;
        }
        // What the notice names, read before the servers' locks are held by their starts.
        let labels: Vec<String> = waiting.iter().map(|server| starting_label(&lock(server).config)).collect();
        let names: Vec<String> = waiting.iter().map(|server| lock(server).config.name.clone()).collect();
        let (done, finished) = mpsc::channel();
        thread::scope(|scope| {
            for (index, server) in waiting.iter().enumerate() {
                let done = done.clone();
                scope.spawn(move || {
                    let started = Instant::now();
                    let outcome = start_one(&mut lock(server));
                    let _ = done.send((index, outcome, started.elapsed()));
                });
            }
            drop(done);
            report_starts(&finished, &names, &labels);
        });
        self.assign_names();
    }
    // ANCHOR_END: ensure_started

    /// `mcp__<server>__<tool>` for every listed tool; a name already taken keeps its first owner,
    /// and once the schemas of all servers reach [`tools::SCHEMAS_MAX_BYTES`] the rest are left out.
    fn assign_names(&self) {
        let mut names: Vec<(String, usize, String)> = Vec::new();
        let mut taken = std::collections::HashSet::new();
        let mut bytes = 0;
        for (index, server) in self.servers.iter().enumerate() {
            let server = lock(server);
            let mut over_budget = 0;
            for tool in &server.tools {
                let exposed = tools::exposed_name(&server.config.name, &tool.name);
                if taken.contains(&exposed) {
                    warn(&format!("MCP tool `{}` skipped: its name is taken by another tool", tool.name));
                    continue;
                }
                // Every request carries every schema: their sum is bounded, not only each one.
                let size = tools::schema(&exposed, tool).to_string().len();
                if bytes + size > tools::SCHEMAS_MAX_BYTES {
                    over_budget += 1;
                    continue;
                }
                bytes += size;
                taken.insert(exposed.clone());
                names.push((exposed, index, tool.name.clone()));
            }
            if over_budget > 0 {
                warn(&format!(
                    "MCP server `{}`: {} left out: the tool schemas of all servers may take at most {} KiB \
                     of every request",
                    server.config.name,
                    crate::text::plural(over_budget, "tool"),
                    tools::SCHEMAS_MAX_BYTES / 1024
                ));
            }
        }
        *lock(&self.names) = names;
    }

    /// The schemas of every tool of every started server.
    pub fn schemas(&self) -> Vec<Value> {
        self.ensure_started(false);
        let names = lock(&self.names);
        names
            .iter()
            .filter_map(|(exposed, index, tool)| {
                let server = lock(&self.servers[*index]);
                let remote = server.tools.iter().find(|t| &t.name == tool)?;
                Some(tools::schema(exposed, remote))
            })
            .collect()
    }

    /// Runs one `mcp__…` call on its server.
    pub fn call(&self, call: &ToolCall) -> ToolOutput {
        let found = lock(&self.names).iter().find(|(name, _, _)| *name == call.name).cloned();
        let Some((_, index, tool)) = found else {
            let content = format!("unknown MCP tool `{}`", crate::text::shorten(&call.name, 100));
            return ToolOutput { content, status: ToolStatus::Error };
        };
        let text = if call.arguments.trim().is_empty() { "{}" } else { call.arguments.as_str() };
        let arguments = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(object)) => Value::Object(object),
            _ => {
                let content = format!("invalid arguments for {}: a JSON object is expected", call.name);
                return ToolOutput { content, status: ToolStatus::Error };
            }
        };
        let mut server = lock(&self.servers[index]);
        let name = server.config.name.clone();
        match server.call(&tool, arguments) {
            Ok(result) => tools::render_result(&result),
            Err(error) => tools::failure(&name, &error),
        }
    }

    /// `/mcp`: each server, its state and its tools, after trying again those that failed.
    pub fn report(&self) -> String {
        if self.servers.is_empty() {
            return "no MCP servers (add them to .mcp.json or ~/.config/mini-agent/mcp.json)".into();
        }
        self.ensure_started(true); // a server that failed is tried again here
        let names = lock(&self.names);
        let mut lines = Vec::new();
        for (index, server) in self.servers.iter().enumerate() {
            let server = lock(server);
            let state = match &server.state {
                State::NotStarted => "not started".to_string(),
                State::Running => "running".to_string(),
                State::Failed(why) => format!("failed: {why}"),
                State::Exited(how) => format!("{how}; restarts on its next call"),
            };
            let source = server.config.source.display();
            lines.push(format!(
                "{} · {state} · from {source} · log {}",
                server.config.name,
                server.log_path().display()
            ));
            for (exposed, _, _) in names.iter().filter(|(_, owner, _)| *owner == index) {
                lines.push(format!("  {exposed}"));
            }
        }
        sanitize(&lines.join("\n"))
    }
}

/// What one start thread reports: which server, its tools or the warning, and how long it took.
type Started = (usize, Result<usize, String>, Duration);

/// Says which starts are still waiting once [`SLOW_START`] has passed, then how each of those
/// ended; a failure is a warning whenever it comes. Returns when every start has reported.
fn report_starts(finished: &mpsc::Receiver<Started>, names: &[String], labels: &[String]) {
    let (mut noticed, notice_at) = (false, Instant::now() + SLOW_START);
    let mut left: Vec<usize> = (0..names.len()).collect();
    while !left.is_empty() {
        let next = match noticed {
            true => finished.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            false => finished.recv_timeout(notice_at.saturating_duration_since(Instant::now())),
        };
        let (index, outcome, took) = match next {
            Ok(report) => report,
            Err(mpsc::RecvTimeoutError::Disconnected) => return, // a start thread died
            Err(mpsc::RecvTimeoutError::Timeout) => {
                noticed = true;
                for &index in &left {
                    say(&format!("starting {}…", labels[index]));
                }
                continue;
            }
        };
        left.retain(|&waiting| waiting != index);
        match outcome {
            Err(why) => warn(&why),
            Ok(tools) if noticed => {
                let tools = crate::text::plural(tools, "tool");
                say(&format!(
                    "MCP server `{}` started in {:.1} s ({tools})",
                    names[index],
                    took.as_secs_f64()
                ));
            }
            Ok(_) => {}
        }
    }
}

/// How long a start may take before the person is told it is under way.
pub const SLOW_START: Duration = Duration::from_secs(1);

/// `MCP server `files` (npx -y …), waiting up to 30 s …`: what is being waited for.
fn starting_label(config: &ServerConfig) -> String {
    let mut command = config.command.clone();
    for word in &config.args {
        command.push(' ');
        command.push_str(word);
    }
    format!(
        "MCP server `{}` ({}), waiting up to {} (Ctrl+C stops the wait)",
        config.name,
        crate::text::shorten(&command, 60),
        server::seconds(config.startup_timeout)
    )
}

/// Starts one server: how many tools it listed, or the warning line.
fn start_one(server: &mut Server) -> Result<usize, String> {
    match server.start() {
        Ok(()) => Ok(server.tools.len()),
        Err(error) => {
            let mut why = describe(&error);
            if let rpc::RpcError::Timeout(_) = error {
                // The one limit a person can change: name it, and where it is set.
                why.push_str(&format!(
                    " (raise its \"startup_timeout\" in {} if it needs longer)",
                    server.config.source.display()
                ));
            }
            server.stop();
            server.state = match error {
                rpc::RpcError::Interrupted => State::NotStarted, // tried again next turn
                _ => State::Failed(why.clone()),
            };
            Err(format!("MCP server `{}` not started: {why}; /mcp tries again", server.config.name))
        }
    }
}

// ANCHOR: load_servers
/// The MCP servers of one run of the command line, read once at start: the workspace's
/// `.mcp.json` (approved, trusted by `--trust-mcp`, or skipped with a warning) and the user's
/// `mcp.json`. Nothing starts here — the servers start when the first turn asks for the tool
/// schemas — so the approval question comes before any work. `can_ask`: a person at the
/// terminal can answer (and no program reads the output). The servers belong to the run, not
/// to a session: `/new` and `/resume` keep them.
pub fn load_servers(root: &Path, trusted: bool, can_ask: bool) -> Result<Arc<McpServers>, Error> {
    let workspace = Workspace::new(root)?;
    let store = ApprovalStore::user();
    let mut ask = ask_on_tty;
    let asker: Option<Ask> = if can_ask { Some(&mut ask) } else { None };
    let loaded = config::load(&workspace, trusted, store.as_ref(), asker);
    for warning in &loaded.warnings {
        warn(warning);
    }
    Ok(Arc::new(McpServers::new(loaded.servers, root)))
}
// ANCHOR_END: load_servers

fn warn(line: &str) {
    say(&format!("warning: {line}"));
}

/// One line on stderr, for the person: made safe to print, with no key in it.
fn say(line: &str) {
    eprintln!("mini-agent: {}", redactor().redact_line(&sanitize(line)));
}

/// The six tools plus every server's: `mcp__…` calls go to their server, the rest inside.
pub struct WithMcp<T: Tools> {
    inner: T,
    mcp: Arc<McpServers>,
    /// For the head-and-tail bound of long results (and the spill file that keeps the whole).
    outputs: Workspace,
}

impl<T: Tools> WithMcp<T> {
    pub fn new(inner: T, mcp: Arc<McpServers>, outputs: Workspace) -> WithMcp<T> {
        WithMcp { inner, mcp, outputs }
    }

    pub fn inner(&self) -> &T {
        &self.inner
    }
}

// ANCHOR: with_mcp
impl<T: Tools> Tools for WithMcp<T> {
    fn schemas(&self) -> Vec<Value> {
        let mut schemas = self.inner.schemas();
        if !self.mcp.is_empty() {
            schemas.extend(self.mcp.schemas());
        }
        schemas
    }

    fn run(&mut self, call: &ToolCall) -> ToolOutput {
        if !call.name.starts_with(PREFIX) {
            return self.inner.run(call);
        }
        let output = self.mcp.call(call);
        // Redacted before anything keeps it, and bounded like any tool's answer.
        let content = self.outputs.bounded("mcp", redactor().redact_string(output.content));
        ToolOutput { content, ..output }
    }
}
// ANCHOR_END: with_mcp

// ANCHOR: permission
/// A call to a server's tool may do anything the server can: it needs its own permission,
/// asked for like `bash` (chapter 12's gate asks the tools, and these tools answer).
pub const MCP: Permission =
    Permission { flag: "--allow-mcp", activity: "calling MCP tools", scope: "MCP calls" };

impl<T: Guarded> Guarded for WithMcp<T> {
    fn permission(&self, call: &ToolCall) -> Option<Permission> {
        if call.name.starts_with(PREFIX) { Some(MCP) } else { self.inner.permission(call) }
    }

    /// A server's tool changes what it changes, unseen; the six tools say what they would.
    fn change(&self, call: &ToolCall) -> Option<Change> {
        if call.name.starts_with(PREFIX) { None } else { self.inner.change(call) }
    }

    /// A server's tool runs in the server, which is not sandboxed: nothing to add.
    fn runs_in(&self, call: &ToolCall) -> Option<String> {
        if call.name.starts_with(PREFIX) { None } else { self.inner.runs_in(call) }
    }
}
// ANCHOR_END: permission
/// `--trust-mcp` starts the servers of the workspace's `.mcp.json` without asking;
/// `--allow-mcp` grants [`MCP`] up front.
pub const TRUST_MCP: Flag =
    Flag::switch(18, "--trust-mcp", &["start the MCP servers of the workspace's .mcp.json without asking"]);
pub const ALLOW_MCP: Flag = Flag::switch(18, MCP.flag, &["let the agent call MCP tools without asking"]);

/// This chapter's part in every session: the run's servers' tools beside the workspace's,
/// *inside* chapter 12's gate (an MCP call is asked for like a shell command), and `/mcp`,
/// which says how the servers are now. It takes the gate's place in the fold.
#[derive(Clone)]
pub struct McpPart(pub Arc<McpServers>);

impl RunPart for McpPart {
    fn layer(&self) -> Option<Layer> {
        Some(Layer::Permission)
    }
    fn wrap(&self, mut toolbox: Toolbox, session: &SessionInput) -> Result<Toolbox, Error> {
        let workspace = toolbox.tools.workspace(Layer::Permission)?;
        let servers = self.0.clone();
        toolbox.reports.push(("mcp", Box::new(move || servers.report())));
        let with_mcp = WithMcp::new(workspace, self.0.clone(), Workspace::new(session.root)?);
        let asker = crate::ch12_permissions::Asker::of(session.answerer);
        let gated = crate::ch12_permissions::gate(with_mcp, session.settings, &asker);
        Ok(Toolbox { tools: Stack::Boxed(Box::new(gated)), ..toolbox })
    }
    fn clone_part(&self) -> Box<dyn RunPart> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub fn register(registry: &mut dyn RegisterParts) {
    registry.part("gate", |run| {
        Ok(Box::new(McpPart(load_servers(run.root, run.settings.has(&TRUST_MCP), run.can_ask)?)))
    });
    registry.flag(TRUST_MCP);
    registry.flag(ALLOW_MCP);
    registry.help(Help {
        chapter: 18,
        page: "",
        section: "MCP SERVERS",
        lines: &[
            "  MCP servers (tools from other programs, over stdio) are listed in .mcp.json in the root",
            "  and in ~/.config/mini-agent/mcp.json: {\"mcpServers\": {\"NAME\": {\"command\", \"args\",",
            "  \"env\", \"cwd\", \"timeout\"}}}. Their tools appear as mcp__NAME__TOOL. The servers of a",
            "  workspace .mcp.json start only once you approved its exact contents at the terminal, or",
            "  with --trust-mcp; MCP calls are asked for like shell commands. /mcp in the REPL lists them.",
        ],
    });
    registry.command(SlashCommand {
        chapter: 18,
        name: "mcp",
        argument: "",
        help: "MCP servers, their state and their tools",
    });
}
