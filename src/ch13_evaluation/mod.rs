//! Chapter 13 — evaluation: scenarios stored as data, run against the real binary.
//!
//! Unit tests check pieces; an evaluation checks the *agent*: the binary a user runs, with
//! its argument parser, model client, tools, journal and exit codes, doing a whole task.
//! Against a real model that would be slow, paid for and different every time, so here the
//! model is the scripted server of this chapter: each scenario says which replies it sends
//! (text, tool calls, error statuses, SSE streams finished or cut, a request never answered),
//! runs `mini-agent` in a fresh temporary workspace, maybe interrupts or kills it, and then
//! compares what happened with what it expected. The same scenario gives the same result on
//! every machine, so a failure means the code changed, not the weather.
//!
//! **What "passed" asserts:** for every run, the exit code (a process that dies of a signal
//! fails, unless it is the scenario's own SIGKILL); the files named (exact content, or
//! absent); the tools the agent started, in order (from the journal's `tool_started`
//! records, or, when a build keeps no journal, from the tool results it sent back); the
//! number of model requests; substrings of stdout, stderr, the tool results and the first
//! request; and, always, that every request the binary sent is well formed — each tool call
//! answered exactly once, right after its assistant message, in order (an API rejects
//! anything else) — and that the journal kept its promises: every line a record (a torn
//! last line only after a kill) and no tool call started twice. **What it cannot assert:**
//! that a real model would behave like the script. The script plays the model; the scenario
//! tests everything *around* the model — the part that must be dependable whatever the
//! model does. Whether the agent solves real tasks well is a question for a different kind
//! of evaluation, with real models and many samples.
//!
//! # The scenario format
//!
//! One JSON file per scenario in `selfcheck/scenarios/`:
//!
//! ```text
//! {
//!   "name": "edit_fails_then_succeeds",
//!   "description": "what it shows (optional)",
//!   "files": {"notes.txt": "hello world\n"},          // the workspace before the first run
//!   "runs": [{
//!     "args": ["--allow-write", "-p", "fix the greeting"],   // --base-url is added
//!     "stdin": "text for -p -",                      // optional; otherwise stdin is empty
//!     "env": {"MINI_AGENT_REQUEST_MAX_RETRIES": "1"},  // optional
//!     "steps": [                                     // one per model request, in order
//!       {"tool_calls": [{"name": "edit_file", "arguments": {"path": "notes.txt", …}}]},
//!       {"text": "Done."},
//!       {"error": {"status": 429, "message": "slow down", "headers": {"Retry-After": "0"}}},
//!       {"stream": {"text": "Hi", "tool_calls": [], "finish": false, "delay_ms": 5}},
//!       "hang", "close"
//!     ],
//!     "signal": {"signal": "INT", "after_requests": 1, "delay_ms": 100},
//!            // or {"signal": "KILL", "when_file": "started.txt", "delay_ms": 0}
//!     "timeout_ms": 15000,                           // optional; the run is killed after it
//!     "expect": {
//!       "exit": 0,                                   // 137: killed by the scenario's SIGKILL
//!       "files": {"notes.txt": "hello there\n", "gone.txt": null},
//!       "tools": ["edit_file", "edit_file"],         // tools started during this run
//!       "requests": 3,                               // model requests during this run
//!       "stdout_contains": ["Done."], "stderr_contains": [],
//!       "stdout_json_lines": false,                  // true: each stdout line is JSON
//!       "tool_results_contain": ["not found"],       // in some tool result sent back
//!       "first_request_contains": []                 // in the first request's messages
//!     }
//!   }]
//! }
//! ```
//!
//! (The `//` notes are for this page; the files are plain JSON.) Tool-call arguments are
//! JSON objects, or a string sent exactly as written (to test invalid JSON). Each tool call
//! gets a unique id. A request beyond the last step is answered with a 500, so a scenario
//! also fails when the agent asks the model more often than the script expects. Runs share
//! the workspace, so a second run can continue the first one's session with `-c`.
//!
//! # The pieces
//!
//! - `scenario`: the scenario format, read and checked before anything runs.
//! - `script`: a scenario's steps turned into what the scripted server sends.
//! - `runner`: each run of the binary in a fresh workspace, its signal and timeout, and
//!   the table `mini-agent eval` prints.
//! - `compare`: what was observed against what was expected, and the request invariant.
//! - `journal`: the journal read from outside, as its documented format promises.

use crate::ch02_loop::command_line::{Flag, Help, MAX_TURNS_CEILING, Registry, SHOW_HELP, Takes, VERBOSE};

mod compare;
mod journal;
mod runner;
mod scenario;
mod script;

pub use compare::{Ending, Observed, ToolsWitness, check_tool_answers, compare};
pub use runner::run_eval;
pub use scenario::{
    CallSpec, DEFAULT_SCENARIO_DIR, ErrorSpec, Expect, Run, Scenario, ScriptStep, SignalName, SignalPlan,
    StreamSpec, load_scenario, load_scenarios,
};
/// `mini-agent eval [DIR] [--repeats N] [-v]`: the flags of the subcommand.
pub const REPEATS: Flag =
    Flag::value(13, "--repeats", Takes::Count("N", MAX_TURNS_CEILING), &["run each scenario N times"])
        .of("eval");
pub const EVAL_VERBOSE: Flag = Flag { chapter: 13, command: "eval", ..VERBOSE };
pub const EVAL_HELP: Flag = Flag { chapter: 13, command: "eval", ..SHOW_HELP };

pub fn register(registry: &mut dyn Registry) {
    for flag in [REPEATS, EVAL_VERBOSE, EVAL_HELP] {
        registry.flag(flag);
    }
    registry.help(Help {
        chapter: 13,
        page: "",
        section: "USAGE",
        lines: &["  mini-agent eval [DIR] [--repeats N]   run the scripted evaluation scenarios (offline)"],
    });
}

#[cfg(test)]
mod tests;
