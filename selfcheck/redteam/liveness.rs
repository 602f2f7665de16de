//! Red-team cases: see `main.rs` for the rule this file holds.
//!
//! Liveness: nothing the server, the model or a signal does can hang the agent. A server that
//! never begins a reply is cut by the first-byte bound (`MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS`,
//! by default the idle timeout plus a second per 100 bytes of request), one that stalls or
//! drips after it by `MINI_AGENT_IDLE_TIMEOUT_SECS` (the wait for the next byte, never the
//! length of the reply), one that never finishes by `MINI_AGENT_REQUEST_TIMEOUT_SECS` when an
//! unattended run sets it; globs match in O(n·m); walks stop on Ctrl+C; SIGTERM and SIGHUP end
//! a turn the way Ctrl+C does.

use crate::harness::{Test, text};
use mini_agent::scripted_server::Step;
use std::time::{Duration, Instant};

/// The bar of issue 10: a stalled server with a 3 s idle timeout ends the run with exit 1 and
/// one line that names the variable. The server would have answered after a minute (or never),
/// so that line, not a clock, shows the idle timeout ended it; the time is printed.
fn ends_within_the_idle_bound(label: &str, test: Test) {
    let started = Instant::now();
    let run = test.env("MINI_AGENT_IDLE_TIMEOUT_SECS", "3").args(["-p", "go"]).run();
    let took = started.elapsed();
    eprintln!("figure: {label}: ended after {took:.2?} with MINI_AGENT_IDLE_TIMEOUT_SECS=3");
    run.expect_code(1).stderr_has("no byte from the server for 3 s (MINI_AGENT_IDLE_TIMEOUT_SECS)");
    assert!(took >= Duration::from_secs(3), "{label}: the bound is the idle timeout, got {took:?}");
    let error_lines = run.stderr.lines().filter(|l| l.contains("no byte from the server")).count();
    assert_eq!(error_lines, 1, "one line:\n{}", run.stderr);
}

/// The same bar for a reply that never begins, with a 3 s first-byte bound (again the line,
/// not a clock, says which bound ended the run).
fn ends_within_the_first_byte_bound(label: &str, test: Test) {
    let started = Instant::now();
    let run = test.env("MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS", "3").args(["-p", "go"]).run();
    let took = started.elapsed();
    eprintln!("figure: {label}: ended after {took:.2?} with MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS=3");
    run.expect_code(1).stderr_has(
        "no reply from the server within 3 s of the request (MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS)",
    );
    assert!(took >= Duration::from_secs(3), "{label}: the bound is the first-byte bound, got {took:?}");
    let error_lines = run.stderr.lines().filter(|l| l.contains("no reply from the server")).count();
    assert_eq!(error_lines, 1, "one line:\n{}", run.stderr);
}

#[test]
fn a_server_that_never_sends_the_headers_is_cut_by_the_first_byte_bound() {
    ends_within_the_first_byte_bound(
        "no headers",
        Test::new().server(vec![Step::delayed(60_000, text("late"))]),
    );
}

#[test]
fn a_body_that_stalls_after_the_headers_is_cut_by_the_idle_timeout() {
    ends_within_the_idle_bound("stalled body", Test::new().server(vec![Step::drip(60_000, text("never"))]));
}

#[test]
fn a_body_that_drips_slower_than_the_bound_is_cut() {
    // One byte every 4 s: each wait is longer than the 3 s bound.
    ends_within_the_idle_bound("4 s drip", Test::new().server(vec![Step::drip(4_000, text("drip"))]));
}

#[test]
fn a_stream_that_stalls_after_the_headers_is_cut_by_the_first_byte_bound() {
    // Headers, then no event: for a stream the first byte is the body's.
    let stalled = Step::Stream { chunks: vec!["{}".into()], delay_ms: 60_000, finish: true };
    ends_within_the_first_byte_bound("stalled stream", Test::new().args(["--stream"]).server(vec![stalled]));
}

#[test]
fn a_stream_that_stalls_after_its_first_chunk_is_cut_by_the_idle_timeout() {
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": null}]});
    let stalled = Step::Stream { chunks: vec![chunk.to_string(); 2], delay_ms: 3_500, finish: true };
    ends_within_the_idle_bound(
        "stream stalled after a chunk",
        Test::new().args(["--stream"]).env("MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS", "30").server(vec![stalled]),
    );
}

#[test]
fn a_stream_that_never_sends_the_headers_is_cut_by_the_first_byte_bound() {
    let late = Step::delayed(60_000, Step::Stream { chunks: vec![], delay_ms: 0, finish: true });
    ends_within_the_first_byte_bound(
        "stream without headers",
        Test::new().args(["--stream"]).server(vec![late]),
    );
}

/// The streamed reply of `answer`, as the SSE chunks a server sends.
fn streamed(answer: &str) -> Step {
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": answer}, "finish_reason": null}]});
    let end = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    Step::Stream { chunks: vec![chunk.to_string(), end.to_string()], delay_ms: 0, finish: true }
}

/// Issue 11, item 11: a reply that takes longer than the idle timeout but keeps coming is
/// never cut. Thinking for 1 s, then a byte every 20 ms (about 9 s in all) under a 3 s bound:
/// every silence is far under the bound, however loaded the machine, and the whole is three
/// times over it. The old client cut a reply at a fixed total; this one bounds only silence.
#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn a_long_reply_that_keeps_coming_is_never_cut() {
    for stream in [false, true] {
        let answer = "all of it ".repeat(25);
        let reply = if stream { streamed(&answer) } else { text(&answer) };
        let test = Test::new().env("MINI_AGENT_IDLE_TIMEOUT_SECS", "3");
        let (run, took) = timed_prompt(test, Step::delayed(1_000, Step::drip(20, reply)), stream);
        eprintln!("figure: a reply of {took:.2?} (stream: {stream}) under a 3 s idle timeout");
        run.expect_code(0);
        assert!(run.stdout.contains(answer.trim_end()), "{}", run.stdout);
        assert!(took > Duration::from_secs(6), "the reply outlasted the bound twice over: {took:?}");
    }
}

/// `-p go` (with `--stream` when asked) against a server that answers with `reply`, timed.
fn timed_prompt(test: Test, reply: Step, stream: bool) -> (crate::harness::Run, Duration) {
    let mut test = test.server(vec![reply]).args(["-p", "go"]);
    if stream {
        test = test.args(["--stream"]);
    }
    let started = Instant::now();
    let run = test.run();
    (run, started.elapsed())
}

/// The same rule, past the old fixed limit of the non-streaming client: the bound is the
/// variable, so a silence longer than the old 120 s total would be allowed with a larger one,
/// and a silence shorter than the old total is cut when the variable says so. The 2.5 s
/// silence is far from both bounds (1 s and 10 s), so a loaded machine moves neither answer.
#[test]
fn the_bound_is_the_variable_not_a_hidden_constant() {
    let run = Test::new()
        .env("MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS", "1")
        .server(vec![Step::delayed(2_500, text("too late"))])
        .args(["-p", "go"])
        .run();
    run.expect_code(1).stderr_has(
        "no reply from the server within 1 s of the request (MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS)",
    );
    let run = Test::new()
        .env("MINI_AGENT_FIRST_BYTE_TIMEOUT_SECS", "10")
        .server(vec![Step::delayed(2_500, text("in time"))])
        .args(["-p", "go"])
        .run();
    run.expect_code(0);
    assert!(run.stdout.contains("in time"), "{}", run.stdout);
}

/// The other side of that rule, for runs nobody watches: a server that keeps a reply alive
/// but never finishes it (a byte, a chunk now and then, under the idle timeout each time)
/// is given up on at `MINI_AGENT_REQUEST_TIMEOUT_SECS`, streamed or not; unset, nothing changes.
#[test]
fn a_reply_that_never_ends_is_given_up_at_the_request_limit() {
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": "."}, "finish_reason": null}]});
    for stream in [false, true] {
        let never_ending = if stream {
            Step::Stream { chunks: vec![chunk.to_string(); 300], delay_ms: 200, finish: true }
        } else {
            Step::drip(50, text(&"never ending ".repeat(200)))
        };
        let test =
            Test::new().env("MINI_AGENT_IDLE_TIMEOUT_SECS", "5").env("MINI_AGENT_REQUEST_TIMEOUT_SECS", "2");
        let (run, took) = timed_prompt(test, never_ending, stream);
        eprintln!("figure: a never-ending reply (stream: {stream}) given up after {took:.2?}, limit 2 s");
        // The limit, not the reply's end (a minute or more away) nor the idle timeout, ended it:
        // the error says so; the time is at least the limit.
        run.expect_code(1).stderr_has("time limit (MINI_AGENT_REQUEST_TIMEOUT_SECS)");
        assert!(took >= Duration::from_secs(2), "{took:?}");
        assert_eq!(run.requests.len(), 1, "a request the server may already be running is not sent again");
    }
}

#[test]
fn a_bad_idle_timeout_value_is_a_clear_error() {
    for bad in ["0", "soon", "2.5"] {
        let run = Test::new()
            .env("MINI_AGENT_IDLE_TIMEOUT_SECS", bad)
            .server(vec![text("unused")])
            .args(["-p", "go"])
            .run();
        run.expect_code(1).stderr_has("MINI_AGENT_IDLE_TIMEOUT_SECS must be a whole number");
        assert!(run.requests.is_empty(), "{bad}: nothing is sent with a bad setting");
    }
}

#[test]
fn ctrl_c_ends_a_dripping_reply_at_once() {
    let started = Instant::now();
    let run = Test::new()
        .server(vec![Step::drip(200, text("a long, long answer"))])
        .interrupt_after(1)
        .args(["-p", "go"])
        .run();
    let took = started.elapsed();
    eprintln!("figure: Ctrl+C during a dripping reply: exit after {took:.2?}");
    // The reply drips for 40 s and would end with exit 0: 130 is the Ctrl+C.
    run.expect_code(130);
}

/// Milliseconds since midnight of a journal timestamp (`2026-11-29T09:15:00.123Z`).
fn ms_of(ts: &serde_json::Value) -> u64 {
    let time = ts.as_str().and_then(|ts| ts.split('T').nth(1)).unwrap_or_default().trim_end_matches('Z');
    let mut parts = time.split(':');
    let (h, m, s) = (parts.next(), parts.next(), parts.next());
    let h: u64 = h.and_then(|h| h.parse().ok()).unwrap_or_default();
    let m: u64 = m.and_then(|m| m.parse().ok()).unwrap_or_default();
    let s: f64 = s.and_then(|s| s.parse().ok()).unwrap_or_default();
    (h * 3600 + m * 60) * 1000 + (s * 1000.0) as u64
}

/// How long each tool ran, from its `tool_started` to its `tool_finished`, with its status.
fn tool_runs(journal: &[serde_json::Value]) -> Vec<(String, u64, String)> {
    let mut runs = Vec::new();
    for (index, record) in journal.iter().enumerate() {
        if record["type"] != "tool_started" {
            continue;
        }
        let finished =
            journal[index..].iter().find(|r| r["type"] == "tool_finished" && r["id"] == record["id"]);
        if let Some(finished) = finished {
            let took = ms_of(&finished["ts"]).saturating_sub(ms_of(&record["ts"]));
            runs.push((
                record["name"].as_str().unwrap_or_default().to_string(),
                took,
                finished["status"].as_str().unwrap_or_default().to_string(),
            ));
        }
    }
    runs
}

/// `*a*a*a*a*a*a*a*ab` against a name of 250 `a`s: a backtracking matcher tries C(250, 8)
/// splits (about 10^14) and never returns (the harness's hang guard). Linear matching answers
/// at once, for the listing and for the search filter alike; the times are printed.
#[test]
fn backtracking_globs_answer_at_once() {
    let long_name = "a".repeat(250);
    let hostile = "*a*a*a*a*a*a*a*ab";
    let started = Instant::now();
    let run = Test::new()
        .file(&format!("deep/{long_name}"), "aaa\n")
        .file(&long_name, "aaa\n")
        .file("aaaaaaaaab", "aaa\n")
        .server(vec![
            crate::harness::call("list_files", serde_json::json!({"pattern": hostile})),
            crate::harness::call("search", serde_json::json!({"pattern": "aaa", "glob": hostile})),
            crate::harness::call(
                "list_files",
                serde_json::json!({"pattern": "**/**a**a**a**a**a**a**a**ab"}),
            ),
            text("done"),
        ])
        .args(["-p", "go"])
        .run();
    let took = started.elapsed();
    run.expect_code(0);
    let results = run.tool_results();
    assert_eq!(results[0], "aaaaaaaaab", "only the name ending in b matches");
    assert!(results[1].starts_with("aaaaaaaaab:1:"), "{results:?}");
    assert_eq!(results[2], "aaaaaaaaab");
    for (name, ms, status) in tool_runs(&run.only_journal()) {
        eprintln!("figure: {name} with a backtracking glob took {ms} ms");
        assert_eq!(status, "ok");
    }
    eprintln!("figure: the whole run with three backtracking globs: {took:.2?}");
}

/// A tree that takes long to search: `files` hard links (cheap to make, whatever the disk) to
/// one 1 MB text file, spread over ten directories. The search reads every one, so a signal
/// sent once it has started lands while it still walks, however slowly the test notices.
fn big_tree(files: usize) -> crate::harness::TempDir {
    let workspace = crate::harness::TempDir::new("selfcheck");
    let original = workspace.path().join("original.txt");
    std::fs::write(&original, format!("{}\n", "x".repeat(99)).repeat(10_000)).expect("write the file");
    for d in 0..10 {
        std::fs::create_dir_all(workspace.path().join(format!("d{d}"))).expect("create a directory");
    }
    for f in 0..files {
        let link = workspace.path().join(format!("d{}/f{f:04}.txt", f % 10));
        std::fs::hard_link(&original, link).expect("link the file");
    }
    workspace
}

/// Ctrl+C during a search of a huge tree stops the walk itself, not only the turn after it:
/// the tool is recorded as interrupted, and the agent exits 130 promptly. Ctrl+C is pressed
/// once the journal says the search started (not a fixed delay after the request, which under
/// load could land before the reply was even parsed, and test nothing).
#[test]
fn ctrl_c_stops_a_walk_of_a_huge_tree() {
    let started = Instant::now();
    let workspace = big_tree(4_000);
    eprintln!("figure: built a tree of 4 GB in 4,000 files in {:.2?}", started.elapsed());
    let started = Instant::now();
    let run = Test::new()
        .server(vec![
            crate::harness::call("search", serde_json::json!({"pattern": "never there"})),
            text("unused"),
        ])
        .signal_when(|root| crate::harness::journal_has(root, "tool_started"), crate::harness::SIGINT)
        .args(["-p", "go"])
        .run_in(workspace);
    let took = started.elapsed();
    run.expect_code(130);
    let runs = tool_runs(&run.only_journal());
    eprintln!(
        "figure: Ctrl+C during a walk of 4 GB in 4,000 files: exit after {took:.2?}; tool runs {runs:?}"
    );
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].2, "interrupted", "the walk itself stopped: {runs:?}");
}

const SIGHUP: i32 = libc::SIGHUP;

const SIGTERM: i32 = libc::SIGTERM;

/// Whether process `pid` is gone (or a zombie about to be reaped by init). Its killer has
/// sent SIGKILL already; the wait (up to a minute, a guard) is for the kernel to finish it.
fn gone(pid: &str) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
            Err(_) => return true,
            Ok(stat) if stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')) => {
                return true;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

/// SIGTERM (or SIGHUP) while a command runs: handled like Ctrl+C. The command's group is
/// killed, the call is recorded as interrupted (not an unknown outcome), the session says
/// "interrupted", and the exit code is 128 + the signal.
fn stopped_by(signal: i32, code: i32) {
    let command = "sleep 1000 & echo $! > sleep.pid; touch started; wait";
    let started = Instant::now();
    let run = Test::new()
        .server(vec![crate::harness::call("bash", serde_json::json!({"command": command})), text("unused")])
        .signal_when(|root| root.join("started").exists(), signal)
        .args(["--allow-shell", "-p", "go"])
        .run();
    let took = started.elapsed();
    eprintln!("figure: signal {signal} during a command: exit {:?} after {took:.2?}", run.code);
    run.expect_code(code).stderr_has(if signal == SIGTERM {
        "stopped by SIGTERM"
    } else {
        "stopped by SIGHUP"
    });
    let journal = run.only_journal();
    let runs = tool_runs(&journal);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].2, "interrupted", "{runs:?}");
    assert!(journal.iter().any(|r| r["type"] == "interrupted"), "the interruption is recorded");
    let pid = run.read("sleep.pid").expect("the command wrote its pid");
    if !gone(&pid) {
        let _ = std::process::Command::new("kill").args(["-9", pid.trim()]).status();
        panic!("the command's background process survived");
    }
    let status = crate::harness::agent_command(run.root()).args(["-c", "--status"]).output().expect("status");
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("interrupted"), "{status}");
    assert!(!status.contains("unknown"), "{status}");
}

#[test]
fn sigterm_during_a_command_is_handled_like_ctrl_c() {
    stopped_by(SIGTERM, 143);
}

#[test]
fn sighup_during_a_command_is_handled_like_ctrl_c() {
    stopped_by(SIGHUP, 129);
}

#[test]
fn sigterm_during_a_model_request_exits_143_at_once() {
    let started = Instant::now();
    let run = Test::new()
        .server(vec![Step::Hang])
        .signal_when(|root| crate::harness::journal_has(root, "\"type\":\"user\""), SIGTERM)
        .args(["-p", "go"])
        .run();
    let took = started.elapsed();
    eprintln!("figure: SIGTERM while waiting for the model: exit after {took:.2?}");
    // The server never answers: without the signal this run would be a hang.
    run.expect_code(143);
}

/// A read-only tool interrupted by SIGTERM is recorded as interrupted; the session resumes
/// without `--acknowledge-unknown`.
#[test]
fn sigterm_during_a_walk_is_an_interruption_not_an_unknown_outcome() {
    let workspace = big_tree(4_000);
    let started = Instant::now();
    let run = Test::new()
        .server(vec![
            crate::harness::call("search", serde_json::json!({"pattern": "never there"})),
            text("unused"),
        ])
        .signal_when(|root| crate::harness::journal_has(root, "tool_started"), SIGTERM)
        .args(["-p", "go"])
        .run_in(workspace);
    let took = started.elapsed();
    let runs = tool_runs(&run.only_journal());
    eprintln!("figure: SIGTERM during a walk of 4 GB in 4,000 files: exit after {took:.2?}; {runs:?}");
    run.expect_code(143);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].2, "interrupted", "{runs:?}");
}

/// Killed outright (SIGKILL: no handler runs) in the middle of a search: the journal has a
/// `tool_started` with no end. A read-only tool changes nothing, so resuming needs no
/// acknowledgement and the model is told the call was interrupted.
#[test]
fn a_read_only_tool_cut_by_a_crash_resumes_without_acknowledgement() {
    let workspace = big_tree(4_000);
    let started = Instant::now();
    let run = Test::new()
        .server(vec![
            crate::harness::call("search", serde_json::json!({"pattern": "never there"})),
            text("unused"),
        ])
        .signal_when(|root| crate::harness::journal_has(root, "tool_started"), crate::harness::SIGKILL)
        .args(["-p", "go"])
        .run_in(workspace);
    assert_eq!(run.code, None, "killed by the signal");
    eprintln!("figure: killed during a walk after {:.2?}", started.elapsed());
    let again =
        Test::new().server(vec![text("carried on")]).args(["-c", "-p", "go on"]).run_in(run.workspace);
    eprintln!("figure: resumed and answered after {:.2?}", started.elapsed());
    again.expect_code(0);
    let result = again.tool_results();
    assert_eq!(result.len(), 1, "{result:?}");
    assert!(
        result[0].starts_with("interrupted: the session stopped while this read-only tool ran"),
        "{result:?}"
    );
    drop(again);
    eprintln!("figure: dropped after {:.2?}", started.elapsed());
}

/// `setsid` takes a process out of the command's group, so killing the group misses it. The
/// agent is a child subreaper: the escaped process is re-parented to it and killed with the
/// command, whether the command timed out, was interrupted, or simply exited.
fn no_escape(label: &str, command: &str, timeout_secs: u64, interrupt: bool) {
    let mut test = Test::new()
        .server(vec![
            crate::harness::call(
                "bash",
                serde_json::json!({"command": command, "timeout_secs": timeout_secs}),
            ),
            text("done"),
        ])
        .args(["--allow-shell", "-p", "go"]);
    if interrupt {
        // Once the pid is written whole: the Ctrl+C must not kill it between open and write.
        let written = |root: &std::path::Path| {
            std::fs::read_to_string(root.join("escaped.pid")).is_ok_and(|pid| pid.ends_with('\n'))
        };
        test = test.signal_when(written, crate::harness::SIGINT);
    }
    let run = test.run();
    let pid = run.read("escaped.pid").unwrap_or_default();
    assert!(!pid.trim().is_empty(), "{label}: the escaped process wrote its pid\n{}", run.stderr);
    let survived = !gone(&pid);
    if survived {
        // Do not leave it behind for the next test run.
        let _ = std::process::Command::new("kill").args(["-9", pid.trim()]).status();
    }
    eprintln!("figure: {label}: escaped process {} survived: {survived}", pid.trim());
    assert!(!survived, "{label}: a process that left the group outlived the command");
    let journal = run.only_journal();
    let finished = journal.iter().find(|r| r["type"] == "tool_finished").expect("the call finished");
    let content = finished["content"].as_str().unwrap_or_default();
    assert!(content.contains("[1 process that left the command's group was stopped]"), "{label}: {content}");
}

/// A process that leaves the group: it says its pid once it is in a session of its own, and
/// the command goes on only then (not after a fixed nap), so it has escaped before the timeout
/// or the Ctrl+C, however loaded the machine.
const ESCAPE: &str = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 1000' > /dev/null 2>&1 & \
                      until [ -s escaped.pid ]; do sleep 0.01; done;";

#[test]
#[cfg(target_os = "linux")]
fn a_setsid_process_does_not_survive_the_timeout() {
    // 3 s: hundreds of times what the escape takes, so the timeout ends `sleep 30`, not it.
    no_escape("timeout", &format!("{ESCAPE} sleep 30"), 3, false);
}

#[test]
#[cfg(target_os = "linux")]
fn a_setsid_process_does_not_survive_ctrl_c() {
    no_escape("Ctrl+C", &format!("{ESCAPE} sleep 30"), 60, true);
}

#[test]
#[cfg(target_os = "linux")]
fn a_double_forked_daemon_does_not_survive_the_command() {
    // The command ends once the daemon has said its pid (not after a fixed nap).
    let daemon = "( setsid sh -c 'echo $$ > escaped.pid; exec sleep 1000' > /dev/null 2>&1 & ); \
                  until [ -s escaped.pid ]; do sleep 0.01; done";
    no_escape("daemon after exit", daemon, 60, false);
}

/// At the idle REPL prompt there is no turn to stop and the line editor holds the terminal in
/// raw mode: SIGTERM leaves at once, with 143, and gives the terminal back in line mode.
#[test]
fn sigterm_at_the_repl_prompt_leaves_at_once_and_restores_the_terminal() {
    let workspace = crate::harness::TempDir::new("selfcheck");
    let server = mini_agent::scripted_server::ScriptedServer::scripted(vec![text("hello")]).expect("server");
    let mut terminal =
        crate::pty::Terminal::start_with_term(workspace.path(), &["--base-url", &server.url], "xterm");
    terminal.wait_for("> ");
    terminal.type_keys("hi\r");
    terminal.wait_for("hello");
    terminal.wait_for("> ");
    // The prompt is drawn just before the line editor takes the terminal: wait for raw mode.
    let waited = Instant::now();
    while terminal.is_cooked() {
        assert!(waited.elapsed() < Duration::from_secs(30), "the line editor never took the terminal");
        std::thread::sleep(Duration::from_millis(5));
    }
    let sent = Instant::now();
    // SAFETY: kill takes plain integers; the pid is our own child.
    unsafe { libc::kill(terminal.pid() as i32, SIGTERM) };
    let status = terminal.exit_status();
    eprintln!("figure: SIGTERM at the REPL prompt: exit {:?} after {:.2?}", status.code(), sent.elapsed());
    assert_eq!(status.code(), Some(143), "{}", terminal.screen());
    assert!(terminal.is_cooked(), "the terminal is back in line mode");
}

/// `-p` on a terminal asks before a command runs. A blocking read would be retried after the
/// signal and wait for a key forever; the question polls the interrupt flag instead. SIGTERM
/// there ends the wait: the call is answered as denied (it never ran), the interruption is
/// recorded, exit 143, and the session is not left with an unknown outcome.
#[test]
fn sigterm_at_the_permission_question_leaves_at_once() {
    let workspace = crate::harness::TempDir::new("selfcheck");
    let command = serde_json::json!({"command": "touch ran"});
    let server = mini_agent::scripted_server::ScriptedServer::scripted(vec![
        crate::harness::call("bash", command),
        text("unused"),
    ])
    .expect("server");
    let mut terminal =
        crate::pty::Terminal::start(workspace.path(), &["-p", "go", "--base-url", &server.url]);
    // The question is shown once the agent waits for its answer (and the interrupt flag).
    terminal.wait_for("allow?");
    let sent = Instant::now();
    // SAFETY: kill takes plain integers; the pid is our own child.
    unsafe { libc::kill(terminal.pid() as i32, SIGTERM) };
    let status = terminal.exit_status();
    eprintln!(
        "figure: SIGTERM at the permission question: exit {:?} after {:.2?}",
        status.code(),
        sent.elapsed()
    );
    assert_eq!(status.code(), Some(143), "{}", terminal.screen());
    assert!(!workspace.path().join("ran").exists(), "the command did not run");
    let journal = crate::harness::records(&crate::harness::session_files(workspace.path())[0]);
    assert_eq!(tool_runs(&journal).iter().map(|r| r.2.as_str()).collect::<Vec<_>>(), ["denied"]);
    assert!(journal.iter().any(|r| r["type"] == "interrupted"), "the interruption is recorded");
    let status =
        crate::harness::agent_command(workspace.path()).args(["-c", "--status"]).output().expect("status");
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(!status.contains("unknown"), "{status}");
}
