//! Chapter 18's glue: the MCP servers of this run, loaded once at start.
//!
//! The configuration is read before the first turn, so that the approval question about a
//! workspace `.mcp.json` comes before any work (at the terminal, through /dev/tty); the
//! servers themselves start later, when the first turn asks for the tool schemas. The
//! servers belong to the run, not to a session: `/new` and `/resume` keep them.

use super::say;
use mini_agent::ch02_loop::Error;
use mini_agent::ch02_loop::command_line::Settings;
use mini_agent::ch03_tools::Workspace;
use mini_agent::ch16_hooks::approval::{ApprovalStore, Ask, ask_on_tty};
use mini_agent::ch18_mcp::config::load;
use mini_agent::ch18_mcp::{McpServers, TRUST_MCP};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

/// Reads `.mcp.json` (approved, trusted by `--trust-mcp`, or skipped with a warning) and
/// the user's `mcp.json`. Nothing starts here; with no file this costs two failed opens.
pub fn load_servers(root: &Path, settings: &Settings) -> Result<Arc<McpServers>, Error> {
    let workspace = Workspace::new(root)?;
    let store = ApprovalStore::user();
    // A person can answer only at a terminal, and never under --json (a program reads it).
    let can_ask = std::io::stdin().is_terminal() && !super::json_wanted(settings);
    let mut ask = ask_on_tty;
    let asker: Option<Ask> = if can_ask { Some(&mut ask) } else { None };
    let loaded = load(&workspace, settings.has(&TRUST_MCP), store.as_ref(), asker);
    for warning in &loaded.warnings {
        say(&format!("mini-agent: warning: {warning}"));
    }
    Ok(Arc::new(McpServers::new(loaded.servers, root)))
}
