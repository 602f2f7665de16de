//! Chapter 18: what MCP costs at start-up and at exit.
//!
//! Two bars (issue 14): with no `.mcp.json`, start-up to the first model request stays under
//! 10 ms; with one server, the time it adds is the server's own start-up plus under 5 ms. The
//! second needs the server's own share, so the fake server is this very binary, run by the
//! agent as `bench --mcp-server LOG`: it notes (wall clock) when its `main` began and when it
//! had answered `tools/list`, the end of the handshake. Its start-up as any client sees it
//! (spawn, exec and loading, the three messages over pipes) is timed by the bench itself,
//! as the smallest client can. Each run is paired with one without `.mcp.json` right before
//! it, so that the load of the moment falls on both:
//! added = (start-up with − start-up without) − the server's start-up seen by a bare client.
//! What remains is the agent's own: reading `.mcp.json`, the log file, its threads, and the
//! tool names and schemas.

use super::{RUNS, Run, Table, TempDir, Wrap, repeat, run_agent};
use mini_agent::scripted_server::Step;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The first word that makes this binary the fake MCP server.
pub(super) const SERVE_FLAG: &str = "--mcp-server";

/// The fake server: the handshake with one tool, over stdin and stdout, until stdin ends.
/// Writes "STARTED LISTED" (ns since the epoch) to `log` once `tools/list` is answered.
pub(super) fn serve(log: &Path) -> ! {
    let started = epoch_nanos();
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        let Some(id) = message.get("id").cloned() else { continue }; // a notification
        let method = message["method"].as_str().unwrap_or_default();
        let result = match method {
            "initialize" => json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench", "version": "1"},
            }),
            "tools/list" => {
                json!({"tools": [{"name": "echo", "description": "Echoes", "inputSchema": {"type": "object"}}]})
            }
            "tools/call" => json!({"content": [{"type": "text", "text": "echo"}]}),
            _ => json!({}),
        };
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(out, "{answer}").and_then(|()| out.flush()).is_err() {
            break;
        }
        if method == "tools/list" {
            let _ = std::fs::write(log, format!("{started} {}", epoch_nanos()));
        }
    }
    std::process::exit(0)
}

fn epoch_nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// One pair of runs: without `.mcp.json`, then with one server.
struct Pair {
    without: Run,
    with: Run,
    /// The server's `main` → its `tools/list` answer written.
    own: Duration,
    /// The bench spawns the server and shakes hands itself: spawn → `tools/list` answer read.
    bare: Duration,
}

pub(super) fn mcp_rows(table: &mut Table, binary: &Path) {
    let pairs = match repeat(|| paired_run(binary)) {
        Ok(pairs) => pairs,
        Err(reason) => return table.missing("MCP start-up", &reason),
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let show = |ms: f64| format!("{ms:.2} ms");
    let startup = |pair: &Pair| ms(pair.with.startup);
    let name = "start-up to first request, one MCP server (--trust-mcp)";
    table.row(name, pairs.iter().map(startup).collect(), show, None);
    let name = "  the same run without .mcp.json (paired)";
    table.row(name, pairs.iter().map(|p| ms(p.without.startup)).collect(), show, Some(10.0));
    let name = "  the server's own start-up (its main → tools/list answered)";
    table.row(name, pairs.iter().map(|p| ms(p.own)).collect(), show, None);
    let added = |p: &Pair| ms(p.with.startup) - ms(p.without.startup) - ms(p.own);
    let name = "  added by MCP beyond the server's own start-up";
    table.row(name, pairs.iter().map(added).collect(), show, None);
    let name = "  the server started by a bare client (spawn → tools/list answer read)";
    table.row(name, pairs.iter().map(|p| ms(p.bare)).collect(), show, None);
    let beyond_bare = |p: &Pair| ms(p.with.startup) - ms(p.without.startup) - ms(p.bare);
    let name = "  added by MCP beyond what a bare client needs";
    table.row(name, pairs.iter().map(beyond_bare).collect(), show, Some(5.0));
    let name = "shutdown after the last response, one MCP server";
    table.row(name, pairs.iter().map(|p| ms(p.with.shutdown)).collect(), show, None);
    let name = "  the same run without .mcp.json (paired)";
    table.row(name, pairs.iter().map(|p| ms(p.without.shutdown)).collect(), show, None);
    debug_assert_eq!(pairs.len(), RUNS);
}

fn paired_run(binary: &Path) -> Result<Pair, String> {
    let bare = TempDir::new("mcp-none")?;
    let without = run_agent(binary, &bare, &["-p", "say done"], vec![Step::text("done")], Wrap::None)?;
    let workspace = TempDir::new("mcp-one")?;
    let log = workspace.beside("mcp-server-times");
    let server = std::env::current_exe().map_err(|e| format!("cannot find the bench binary: {e}"))?;
    let config = json!({"mcpServers": {"bench": {
        "command": server.display().to_string(),
        "args": [SERVE_FLAG, log.display().to_string()],
    }}});
    std::fs::write(workspace.root().join(".mcp.json"), config.to_string())
        .map_err(|e| format!("cannot write .mcp.json: {e}"))?;
    let words = ["--trust-mcp", "-p", "say done"];
    let with = run_agent(binary, &workspace, &words, vec![Step::text("done")], Wrap::None)?;
    let times = std::fs::read_to_string(&log).map_err(|_| "the MCP server was not started".to_string())?;
    let times: Vec<u128> = times.split_whitespace().filter_map(|t| t.parse().ok()).collect();
    let [started, listed] = times[..] else { return Err(format!("the MCP server wrote {times:?}")) };
    let own = Duration::from_nanos(u64::try_from(listed.saturating_sub(started)).unwrap_or(u64::MAX));
    let bare = bare_handshake(&server, &workspace.beside("bare-client-times"))?;
    Ok(Pair { without, with, own, bare })
}

/// Spawns the fake server and sends it the agent's three handshake messages; the time until
/// the `tools/list` answer is read.
fn bare_handshake(server: &Path, log: &Path) -> Result<Duration, String> {
    let started = Instant::now();
    let mut child = Command::new(server)
        .arg(SERVE_FLAG)
        .arg(log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the fake MCP server: {e}"))?;
    let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("the fake MCP server has no pipes".into());
    };
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    ];
    let mut lines = BufReader::new(output).lines();
    for message in messages {
        writeln!(input, "{message}").map_err(|e| format!("cannot write to the fake MCP server: {e}"))?;
        if message.get("id").is_some() && !matches!(lines.next(), Some(Ok(_))) {
            return Err("the fake MCP server did not answer".into());
        }
    }
    let elapsed = started.elapsed();
    drop(input);
    let _ = child.wait();
    Ok(elapsed)
}
