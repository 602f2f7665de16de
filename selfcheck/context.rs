//! Context: compaction shrinks what is large, a server's "too long" is recovered, and a
//! session stays resumable after a reply of a thousand calls or a 9 MB argument.
//!
//! The model server here is a small fake `llama-server`: it counts a request's tokens from its
//! bytes (its own tokenizer, denser than the agent's estimate or not), answers `usage` with
//! that count, and refuses a request over its context with llama.cpp's own 400 error.

use crate::harness::{Test, call, records, session_files, text};
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// A fake llama.cpp server: [`count_tokens`] is its tokenizer, `n_ctx` its context; replies
/// come from `script`, summary requests get a short summary.
struct FakeLlama {
    server: ScriptedServer,
    /// The server's count of each request, and whether it was refused.
    counts: Arc<Mutex<Vec<(u64, bool)>>>,
}

fn reply(message: Value, prompt_tokens: u64) -> Step {
    let body = json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": prompt_tokens + 5}});
    Step::Reply { status: 200, headers: Vec::new(), body: body.to_string() }
}

/// The fake's tokenizer, like Qwen's on this kind of text: a token per digit and per line
/// break, about four bytes per token for the rest.
fn count_tokens(text: &str) -> u64 {
    let singles = text.bytes().filter(|b| b.is_ascii_digit() || *b == b'\n').count() as u64;
    singles + (text.len() as u64 - singles).div_ceil(4)
}

impl FakeLlama {
    fn start(n_ctx: u64, script: Vec<Value>) -> FakeLlama {
        let counts = Arc::new(Mutex::new(Vec::new()));
        let seen = counts.clone();
        let mut script = script.into_iter();
        let server = ScriptedServer::start(move |request: &Value| {
            let tokens = count_tokens(&request["messages"].to_string()) + count_tokens(&request["tools"].to_string());
            let refused = tokens > n_ctx;
            seen.lock().unwrap().push((tokens, refused));
            if refused {
                // llama.cpp's own body (tools/server), numbers and all.
                let body = json!({"error": {"code": 400, "type": "exceed_context_size_error",
                    "message": format!("request ({tokens} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it"),
                    "n_prompt_tokens": tokens, "n_ctx": n_ctx}});
                return Step::Reply { status: 400, headers: Vec::new(), body: body.to_string() };
            }
            let first = request["messages"][0]["content"].as_str().unwrap_or_default();
            if first.starts_with("You summarise") {
                return reply(json!({"role": "assistant", "content": "The user asked to count; seq ran."}), tokens);
            }
            let message = script.next().unwrap_or_else(|| json!({"role": "assistant", "content": "out of script"}));
            reply(message, tokens)
        })
        .expect("start the fake server");
        FakeLlama { server, counts }
    }

    fn counts(&self) -> Vec<(u64, bool)> {
        self.counts.lock().unwrap().clone()
    }
}

fn bash_call(id: &str, command: &str) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
        "function": {"name": "bash", "arguments": json!({"command": command}).to_string()}}]})
}

fn answer(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

/// The `compaction` events of a `--json` run.
fn compactions(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "compaction")
        .collect()
}

/// About 200 lines of numbers, different on each call: the same call with the same result
/// over and over is a model stuck in a loop, which chapter 7 stops (that is not this test).
fn count_to_200(n: usize) -> String {
    format!("seq {} {}", n + 1, n + 200)
}

#[test]
fn with_a_small_window_compaction_shrinks_the_prompt() {
    // The issue: MINI_AGENT_CONTEXT_TOKENS=1024 against a 1,024-token server; compaction
    // summarised one line and the prompt grew until the server refused it.
    let mut script: Vec<Value> = (0..6).map(|n| bash_call(&format!("c{n}"), &count_to_200(n))).collect();
    script.push(answer("counted"));
    let fake = FakeLlama::start(2048, script);
    let run = Test::new()
        .args(["-p", "count", "--allow-shell", "--json"])
        .env("MINI_AGENT_CONTEXT_TOKENS", "2048")
        .base_url(&fake.server.url)
        .run();
    run.expect_code(0);
    let counts = fake.counts();
    eprintln!("[context] server counts per request (tokens, refused): {counts:?}");
    assert!(counts.iter().all(|&(_, refused)| !refused), "a request went over the server's context");
    let events = compactions(&run.stdout);
    assert!(!events.is_empty(), "the window was passed, so something was compacted:\n{}", run.stderr);
    for event in &events {
        let (before, after) =
            (event["tokens_before"].as_u64().unwrap(), event["tokens_after"].as_u64().unwrap());
        eprintln!(
            "[context] compaction: {before} → {after} tokens (elided {}, replaced {})",
            event["elided"], event["replaced"]
        );
        assert!(after < before, "compaction must shrink: {event}");
    }
}

#[test]
fn a_context_overflow_from_the_server_is_compacted_and_retried_once() {
    // MINI_AGENT_CONTEXT_TOKENS says 4,096 but the server holds 2,048: the agent learns it
    // from llama.cpp's 400, compacts, and the retry fits.
    let mut script: Vec<Value> = (0..8).map(|n| bash_call(&format!("c{n}"), &count_to_200(n))).collect();
    script.push(answer("counted"));
    let fake = FakeLlama::start(2048, script);
    let run = Test::new()
        .args(["-p", "count", "--allow-shell", "--json"])
        .env("MINI_AGENT_CONTEXT_TOKENS", "4096")
        .base_url(&fake.server.url)
        .run();
    let counts = fake.counts();
    eprintln!("[context] server counts per request (tokens, refused): {counts:?}");
    run.expect_code(0);
    assert!(run.stdout.contains("compacting and retrying once"), "{}", run.stdout);
    let refused = counts.iter().filter(|&&(_, refused)| refused).count();
    assert_eq!(refused, 1, "refused once; the window it showed holds for the rest of the run");
    // Never two refusals in a row: each one is followed by a request that fits.
    for pair in counts.windows(2) {
        assert!(!(pair[0].1 && pair[1].1), "a refusal was not recovered: {counts:?}");
    }
}

#[test]
fn a_server_window_too_small_for_anything_is_named_in_the_error() {
    let fake = FakeLlama::start(300, vec![answer("never")]);
    let run = Test::new().args(["-p", "hello"]).base_url(&fake.server.url).run();
    // The system prompt and schemas alone are over 300 tokens: nothing can make it fit, and
    // the error says the server's window is the limit (not MINI_AGENT_CONTEXT_TOKENS).
    run.expect_code(1).stderr_has("the server said its window is 300 tokens").stderr_has("a larger context");
    assert!(!run.stderr.contains("/new"), "{}", run.stderr);
    assert_eq!(fake.counts().len(), 1, "no blind retry of what cannot fit");
}

#[test]
fn a_prompt_run_that_cannot_fit_never_suggests_slash_new() {
    let prompt = "x".repeat(20_000);
    let run = Test::new()
        .args(["-p", &prompt])
        .env("MINI_AGENT_CONTEXT_TOKENS", "1000")
        .server(vec![text("never")])
        .run();
    run.expect_code(1).stderr_has("does not fit").stderr_has("start a new session");
    assert!(!run.stderr.contains("/new"), "{}", run.stderr);
    assert!(run.requests.is_empty(), "nothing was sent");
}

#[test]
fn digit_heavy_output_is_not_undercounted() {
    // 1,092 bytes of numbers were estimated at 273 tokens (bytes / 4); the server counted ~1,150.
    let numbers: String = (1..=300).map(|n| format!("{n}\n")).collect();
    let estimate = mini_agent::ch07_context::estimate_text_tokens(&numbers);
    eprintln!("[context] {} bytes of numbers estimated at {estimate} tokens", numbers.len());
    assert!(estimate >= numbers.len() as u64 * 9 / 10);
}

#[test]
fn a_reply_of_a_thousand_calls_leaves_the_session_resumable() {
    let calls: Vec<(String, String)> =
        (0..1000).map(|_| ("bash".to_string(), json!({"command": "true"}).to_string())).collect();
    let calls: Vec<(&str, &str)> = calls.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let first = Test::new()
        .args(["-p", "go", "--allow-shell"])
        .server(vec![Step::tool_calls(&calls), text("done")])
        .run();
    first.expect_code(0);
    let resumed = Test::new()
        .args(["-c", "-p", "next"])
        .env("MINI_AGENT_CONTEXT_TOKENS", "8000")
        // Only 64 of the calls reach the history (chapter 1), so no compaction is even needed.
        .server(vec![text("continued")])
        .run_in(first.workspace);
    resumed.expect_code(0);
    assert_eq!(resumed.stdout, "continued\n");
    let sent = resumed.requests.last().unwrap().to_string().len();
    eprintln!("[context] after 1000 calls, the resumed request is {sent} bytes");
    assert!(sent < 40_000, "{sent}");
}

#[test]
fn a_9_mb_argument_is_elided_and_the_session_goes_on() {
    let content = "z".repeat(9_000_000);
    let first = Test::new()
        .args(["-p", "write it", "--allow-write"])
        .server(vec![call("write_file", json!({"path": "big.txt", "content": content})), text("written")])
        .run();
    first.expect_code(0);
    assert_eq!(first.stdout, "written\n");
    let second = first.requests[1].to_string().len();
    eprintln!("[context] the request after a 9 MB argument is {second} bytes");
    assert!(second < 100_000, "the old argument was elided: {second} bytes");
    let journal = records(&session_files(first.root())[0]);
    let compaction = journal.iter().find(|r| r["type"] == "compaction").expect("a compaction record");
    assert!(compaction["elided"].as_u64().unwrap() >= 2, "{compaction}");

    let resumed = Test::new().args(["-c", "-p", "next"]).server(vec![text("fine")]).run_in(first.workspace);
    resumed.expect_code(0);
    assert_eq!(resumed.stdout, "fine\n");
    // The resumed view is the same elided one: the argument is not sent again.
    assert!(resumed.requests[0].to_string().len() < 100_000);
}
