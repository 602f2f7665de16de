//! The manual: `mini-agent --help`, written line by line, each line tagged with the chapter that
//! brings what it names, so a chapter's state never advertises a flag it does not have. Kept
//! apart from the parser (`args.rs`) because it is text, not logic.

use super::args::DEFAULT_MAX_TURNS;

// ANCHOR: help
/// The manual, one line at a time: each line is there from the chapter that brings what it
/// describes, so a chapter's `--help` never names a flag that chapter does not have.
pub fn help() -> String {
    let lines: &[&str] = &[
        "mini-agent {version} — a small coding agent for your terminal",
        "",
        "It sends your task to a model (any OpenAI-compatible Chat Completions endpoint), runs the",
        "file and shell tools the model asks for inside one directory (the workspace root), and",
        "repeats until the model answers without calling a tool.",
        "",
        "USAGE",
        #[cfg(feature = "ch04")]
        "  mini-agent [OPTIONS]                  interactive session in the workspace root",
        "  mini-agent [OPTIONS] -p PROMPT        one task, then exit (\"-p -\" reads the prompt from stdin)",
        #[cfg(feature = "ch13")]
        "  mini-agent eval [DIR] [--repeats N]   run the scripted evaluation scenarios (offline)",
        #[cfg(feature = "ch14")]
        "  mini-agent sessions [--root DIR]      list this root's sessions: id, date, state, turns, prompt",
        #[cfg(feature = "ch15")]
        "  mini-agent tasks add|list|status|show|run|reset  work through a task list unattended (tasks --help)",
        "",
        // ANCHOR_END: help
        "EXAMPLES",
        #[cfg(feature = "ch12")]
        "  mini-agent --demo --allow-write -p \"create hello.txt containing hello\"",
        #[cfg(not(feature = "ch12"))]
        "  mini-agent --demo -p \"run ls\"",
        "                                        try it offline with the built-in demo model",
        "  export OPENAI_API_KEY=sk-...",
        "  mini-agent -p \"explain what src/main.rs does\"",
        #[cfg(feature = "ch12")]
        "  mini-agent --allow-write --allow-shell -p \"make the tests pass\"",
        "  mini-agent --base-url http://localhost:11434/v1 --model qwen2.5-coder -p \"list the files\"",
        "  git diff | mini-agent -p -            the prompt comes from stdin",
        "",
        "OPTIONS",
        "  -p, --prompt PROMPT        run one task and print the final answer on stdout",
        #[cfg(feature = "ch05")]
        "  -c, --continue             continue the latest session of this root",
        #[cfg(feature = "ch05")]
        "  -r, --resume ID            resume a session (id, unique id prefix, or journal path)",
        #[cfg(feature = "ch10")]
        "      --status               with -c/-r: print the session's state and exit",
        #[cfg(feature = "ch10")]
        "      --acknowledge-unknown  allow resuming a session with tool calls of unknown outcome",
        "  -v, --verbose              show tool calls with their arguments and results",
        "      --max-turns N          model calls allowed per message (default {max_turns})",
        "      --root DIR             workspace root (default: the current directory)",
        #[cfg(feature = "ch12")]
        "      --allow-write          let the agent write and edit files inside the root",
        #[cfg(feature = "ch12")]
        "      --allow-shell          let the agent run shell commands (not a sandbox!)",
        #[cfg(feature = "ch18")]
        "      --trust-mcp            start the MCP servers of the workspace's .mcp.json without asking",
        #[cfg(feature = "ch18")]
        "      --allow-mcp            let the agent call MCP tools without asking",
        #[cfg(feature = "ch11")]
        "      --stream               show the reply as it is generated",
        #[cfg(feature = "ch14")]
        "      --json                 with -p: print events as JSON Lines on stdout",
        "      --demo                 use the built-in offline demo model (no key, no network)",
        #[cfg(feature = "ch19")]
        "      --api NAME             the model's wire format: openai (Chat Completions, the",
        #[cfg(feature = "ch19")]
        "                             default) or anthropic (the Messages API); default: a resumed",
        #[cfg(feature = "ch19")]
        "                             session's own, else $MINI_AGENT_API, else openai",
        #[cfg(feature = "ch10")]
        "      --model ID             model id (default: a resumed session's own model, else",
        #[cfg(feature = "ch10")]
        "                             $MODEL_ID, else gpt-4o-mini)",
        #[cfg(feature = "ch10")]
        "      --base-url URL         API base URL (default: a resumed session's own endpoint, else",
        #[cfg(feature = "ch10")]
        "                             $OPENAI_BASE_URL, else https://api.openai.com/v1; a session",
        #[cfg(feature = "ch10")]
        "                             file never sends the key elsewhere: a recorded remote",
        #[cfg(feature = "ch10")]
        "                             endpoint that is not that one needs this flag)",
        #[cfg(not(feature = "ch10"))]
        "      --model ID             model id (default: $MODEL_ID, else gpt-4o-mini)",
        #[cfg(not(feature = "ch10"))]
        "      --base-url URL         API base URL (default: $OPENAI_BASE_URL, else",
        #[cfg(not(feature = "ch10"))]
        "                             https://api.openai.com/v1)",
        "  -h, --help                 show this help",
        "  -V, --version              show the version",
        "  Values can follow the flag (--model gpt-4o) or be attached (--model=gpt-4o); each is",
        #[cfg(feature = "ch05")]
        "  given once. One-letter flags combine, a value-taking one last: -vp \"task\", -vc.",
        #[cfg(not(feature = "ch05"))]
        "  given once. One-letter flags combine, a value-taking one last: -vp \"task\".",
        "",
        "ENVIRONMENT",
        "  OPENAI_API_KEY             the API key; not needed for a loopback base URL or --demo.",
        "                             Read from the environment only, never written anywhere.",
        "  OPENAI_BASE_URL            default for --base-url",
        "  MODEL_ID                   default for --model",
        #[cfg(feature = "ch19")]
        "  MINI_AGENT_API             default for --api (openai or anthropic)",
        #[cfg(feature = "ch19")]
        "  ANTHROPIC_API_KEY          with --api anthropic: the key, sent as x-api-key",
        #[cfg(feature = "ch19")]
        "  ANTHROPIC_AUTH_TOKEN       with --api anthropic: a token sent as Authorization: Bearer",
        #[cfg(feature = "ch19")]
        "  ANTHROPIC_BASE_URL         with --api anthropic: default for --base-url",
        #[cfg(feature = "ch19")]
        "                             (https://api.anthropic.com; /v1/messages is appended)",
        #[cfg(feature = "ch19")]
        "  MINI_AGENT_MAX_TOKENS      with --api anthropic: the reply's output limit (default 8192)",
        #[cfg(feature = "ch08")]
        "  MINI_AGENT_REQUEST_MAX_RETRIES  retries of a failed model request (default 2; 0 disables)",
        "  MINI_AGENT_IDLE_TIMEOUT_SECS  the longest wait for the next byte of a reply (default 300);",
        "                             a slow reply that keeps coming is never cut",
        "  MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS  the longest wait for a reply's first byte (default: the",
        "                             idle timeout plus 1 s per 100 bytes of request, read by the server)",
        "  MINI_AGENT_REQUEST_TIMEOUT_SECS  the longest one request may take in all (unset: no limit)",
        #[cfg(feature = "ch07")]
        "  MINI_AGENT_CONTEXT_TOKENS  the model's context window (default 128000); older messages",
        #[cfg(feature = "ch07")]
        "                             are summarised when a request would pass 80% of it",
        #[cfg(feature = "ch17")]
        "  MINI_AGENT_WEBHOOK_SECRET  signs tasks run --webhook events (HMAC-SHA256 header)",
        #[cfg(feature = "ch04")]
        "  NO_COLOR                   disable colors",
        "",
        #[cfg(feature = "ch05")]
        "SESSIONS",
        #[cfg(feature = "ch05")]
        "  Every run is a session, recorded in .mini_agent/sessions/ under the workspace root.",
        #[cfg(feature = "ch10")]
        "  A session records its model and endpoint (never a key or a URL password): -c and -r",
        #[cfg(feature = "ch10")]
        "  talk to them again unless --model, --base-url or --demo say otherwise.",
        #[cfg(feature = "ch05")]
        "  mini-agent -c                         continue the latest session in the REPL",
        #[cfg(feature = "ch05")]
        "  mini-agent -c -p \"now run the tests\"  continue it with one more task",
        #[cfg(feature = "ch10")]
        "  mini-agent -r 20261129-09 --status    where a session stopped (no key, nothing sent)",
        #[cfg(feature = "ch14")]
        "  mini-agent sessions                   every session of this root, with its state",
        #[cfg(feature = "ch05")]
        "  -c skips sessions that never got a model reply (a failed start); -r ID opens any.",
        #[cfg(feature = "ch05")]
        "",
        "EXIT CODES",
        "  0  the agent finished (it stopped calling tools; check its work yourself)",
        "  1  failure: bad usage, configuration, network, model or I/O error (one line says why)",
        "  2  the turn limit (--max-turns) was reached",
        #[cfg(feature = "ch15")]
        "  3  mini-agent tasks run stopped: a human is needed (a task is needs_human)",
        #[cfg(feature = "ch04")]
        "  130  interrupted (Ctrl+C)",
        #[cfg(feature = "ch04")]
        "  143  stopped by SIGTERM (129: SIGHUP), handled like Ctrl+C",
        #[cfg(feature = "ch12")]
        "",
        #[cfg(feature = "ch12")]
        "Without --allow-write / --allow-shell, writes and shell commands are asked for at the",
        #[cfg(feature = "ch12")]
        "terminal (y once, a always, n deny with a reason); with no terminal to ask (a pipe, a",
        #[cfg(feature = "ch12")]
        "script, --json) they are refused and the model is told which flag would allow them.",
        #[cfg(feature = "ch16")]
        "",
        #[cfg(feature = "ch16")]
        "HOOKS",
        #[cfg(feature = "ch16")]
        "  .mini_agent/hooks.json runs your commands before and after tool calls and when a turn",
        #[cfg(feature = "ch16")]
        "  stops (PreToolUse exit 2 refuses the call). Its commands run only once you approved the",
        #[cfg(feature = "ch16")]
        "  file's exact contents at the terminal (remembered in ~/.config/mini-agent/approved), or:",
        #[cfg(feature = "ch16")]
        "      --trust-hooks          run the workspace's hooks for this run without asking",
        #[cfg(feature = "ch17")]
        "  tasks run --webhook URL    POST task_completed / task_failed / needs_human events",
        #[cfg(feature = "ch17")]
        "  tasks run --metrics FILE   Prometheus text metrics after each attempt (tasks --help)",
        #[cfg(feature = "ch18")]
        "",
        #[cfg(feature = "ch18")]
        "MCP servers (tools from other programs, over stdio) are listed in .mcp.json in the root",
        #[cfg(feature = "ch18")]
        "and in ~/.config/mini-agent/mcp.json: {\"mcpServers\": {\"NAME\": {\"command\", \"args\",",
        #[cfg(feature = "ch18")]
        "\"env\", \"cwd\", \"timeout\"}}}. Their tools appear as mcp__NAME__TOOL. The servers of a",
        #[cfg(feature = "ch18")]
        "workspace .mcp.json start only once you approved its exact contents at the terminal, or",
        #[cfg(feature = "ch18")]
        "with --trust-mcp; MCP calls are asked for like shell commands. /mcp in the REPL lists them.",
        // ANCHOR: help_end
    ];
    let mut text = lines.join("\n");
    text.push('\n');
    text.replace("{version}", env!("CARGO_PKG_VERSION"))
        .replace("{max_turns}", &DEFAULT_MAX_TURNS.to_string())
}
// ANCHOR_END: help_end
