//! Contract tests of chapter 19: the real binary, with `--api anthropic`, against aimock's
//! `/v1/messages` (Anthropic's Messages API), a server nobody here wrote.
//!
//! The unit tests of `src/ch19_anthropic/` check our reading of the API against our own
//! scripted server; these check it against someone else's: text, one and two tool uses (whole
//! and streamed in 4-character fragments), a 429 with `Retry-After`, a 529 (overloaded)
//! retried, a 400 not retried, and a reply cut off, streamed and not. What the binary *sent*
//! is read back from aimock's request journal: its headers as they were, its body as aimock
//! converted it to Chat Completions roles (`tool` for each `tool_result` block), which is
//! what its fixtures match on.
//!
//! Fixtures: `scripts/contract/fixtures/messages.json`, each selected by a `messages-api-…`
//! tag in the prompt. Like `contract`, every case is `#[ignore]`d for plain `cargo test` and
//! fails without `AIMOCK_URL`; `.ci/contract` starts aimock and runs them all.

#[path = "aimock.rs"]
mod aimock;
#[path = "binary_run.rs"]
mod binary_run;

use aimock::{Aimock, lock, statuses};
use binary_run::{Run, Workspace, args, run_binary};
use serde_json::{Value, json};
use std::time::Duration;

const CANARY: &str = "canary-line-19a7: the notes the agent must read";
const DEADLINE: Duration = Duration::from_secs(120);
const KEY: &str = "sk-ant-contract-key-0123456789";

/// How this file's cases run the binary against aimock.
trait Runs {
    fn run(&self, workspace: &Workspace, prompt: &str, extra: &[&str], env: &[(&str, &str)]) -> Run;
}

impl Runs for Aimock {
    /// `mini-agent --api anthropic --model contract-claude -p <prompt> [extra]`, the base URL
    /// and a key from the environment, as a user would set them.
    fn run(&self, workspace: &Workspace, prompt: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
        let mut argv = args(&["--api", "anthropic", "--model", "contract-claude", "-p", prompt]);
        argv.extend(args(extra));
        let mut env = env.to_vec();
        env.extend([("ANTHROPIC_BASE_URL", self.origin.as_str()), ("ANTHROPIC_API_KEY", KEY)]);
        run_binary(workspace.path(), &argv, &env, DEADLINE)
    }
}

fn workspace_with_notes() -> Workspace {
    let workspace = Workspace::new("contract-anthropic");
    workspace.write("notes.txt", &format!("{CANARY}\nsecond line\n"));
    workspace
}

/// The roles of a request as aimock converted it, system left out.
fn roles(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().expect("messages");
    messages.iter().filter_map(|m| m["role"].as_str()).filter(|r| *r != "system").map(str::to_owned).collect()
}

/// A tool call sent back: `(id, name, input)`; a result: `(id, text)`.
type Calls = Vec<(String, String, Value)>;
type Results = Vec<(String, String)>;

/// The follow-up request's tool calls, and each result's text by id.
fn calls_and_results(body: &Value) -> (Calls, Results) {
    let messages = body["messages"].as_array().expect("messages");
    let assistant = messages.iter().find(|m| m["role"] == "assistant").expect("the calls are sent back");
    let calls = assistant["tool_calls"].as_array().expect("tool_use blocks became tool_calls");
    let calls = calls
        .iter()
        .map(|c| {
            let input = serde_json::from_str(c["function"]["arguments"].as_str().unwrap_or("null"))
                .expect("JSON input");
            (
                c["id"].as_str().unwrap_or_default().to_owned(),
                c["function"]["name"].as_str().unwrap_or_default().to_owned(),
                input,
            )
        })
        .collect();
    let results = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    (calls, results)
}

#[test]
#[ignore = "needs aimock: run .ci/contract"]
fn text_answer_with_the_anthropic_headers() {
    let _guard = lock();
    let aimock = fresh("text_answer_with_the_anthropic_headers");
    let workspace = workspace_with_notes();
    let run = aimock.run(&workspace, "messages-api-text: what is the answer?", &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.contains("Messages API answer from aimock: the answer is 42."), "{}", run.describe());
    let sent = aimock.sent();
    assert_eq!(statuses(&sent), [200]);
    // aimock's journal masks the key's value; that it came as `x-api-key` is what counts.
    assert!(sent[0].headers["x-api-key"].as_str().is_some_and(|k| !k.is_empty()), "{}", sent[0].headers);
    assert_eq!(sent[0].headers["anthropic-version"], "2023-06-01");
    assert!(sent[0].headers.get("authorization").is_none(), "{}", sent[0].headers);
    assert_eq!(sent[0].body["model"], "contract-claude");
    assert!(sent[0].body["max_tokens"].as_u64().is_some_and(|n| n > 0), "{}", sent[0].body);
    assert_eq!(roles(&sent[0].body), ["user"]);
    assert_eq!(sent[0].body["messages"][0]["role"], "system", "the system prompt was sent as `system`");
    let tools = sent[0].body["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 6, "the six tools, as name + input_schema: {tools:?}");
    assert!(tools.iter().all(|t| t["function"]["parameters"]["type"] == "object"), "{tools:?}");
    // The session records the API, so `-c` comes back to it.
    let sessions = workspace.join(".mini_agent/sessions");
    let journal = std::fs::read_dir(&sessions).expect("sessions").flatten().next().expect("a journal");
    let first = std::fs::read_to_string(journal.path()).expect("journal");
    assert!(first.lines().next().is_some_and(|line| line.contains(r#""api":"anthropic""#)), "{first}");
    assert!(!first.contains(KEY), "the key is never recorded");
}

#[test]
#[ignore = "needs aimock: run .ci/contract"]
fn one_tool_use_then_an_answer() {
    let _guard = lock();
    let aimock = fresh("one_tool_use_then_an_answer");
    let workspace = workspace_with_notes();
    let run = aimock.run(&workspace, "messages-api-one-tool: read the notes", &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.contains("One tool answered over the Messages API."), "{}", run.describe());
    let sent = aimock.sent();
    assert_eq!(statuses(&sent), [200, 200]);
    assert_eq!(roles(&sent[1].body), ["user", "assistant", "tool"]);
    let (calls, results) = calls_and_results(&sent[1].body);
    assert_eq!(calls, [("toolu_read".to_owned(), "read_file".to_owned(), json!({"path": "notes.txt"}))]);
    assert_eq!(results[0].0, "toolu_read");
    assert!(results[0].1.contains(CANARY), "read_file ran: {results:?}");
}

#[test]
#[ignore = "needs aimock: run .ci/contract"]
fn two_tool_uses_whole_and_streamed() {
    let _guard = lock();
    for (tag, extra, answer, ids) in [
        (
            "messages-api-two-tools",
            &[][..],
            "Both tools answered over the Messages API.",
            ["toolu_read", "toolu_list"],
        ),
        (
            "messages-api-stream-tools",
            &["--stream"][..],
            "Streamed tools answered over the Messages API.",
            ["toolu_s_read", "toolu_s_list"],
        ),
    ] {
        let aimock = fresh("two_tool_uses_whole_and_streamed");
        let workspace = workspace_with_notes();
        let run = aimock.run(&workspace, &format!("{tag}: read and list"), extra, &[]);
        assert_eq!(run.code, Some(0), "{}", run.describe());
        assert!(run.stdout.contains(answer), "{}", run.describe());
        let sent = aimock.sent();
        assert_eq!(statuses(&sent), [200, 200]);
        assert_eq!(sent[0].body["stream"] == json!(true), !extra.is_empty(), "{}", sent[0].body);
        // Both results went back in one user turn, each answering its call in order.
        assert_eq!(roles(&sent[1].body), ["user", "assistant", "tool", "tool"]);
        let (calls, results) = calls_and_results(&sent[1].body);
        let called: Vec<&str> = calls.iter().map(|(id, _, _)| id.as_str()).collect();
        let answered: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!((called.as_slice(), answered.as_slice()), (&ids[..], &ids[..]));
        assert_eq!(calls[0].2, json!({"path": "notes.txt"}), "input reassembled from its fragments");
        assert!(results[0].1.contains(CANARY) && results[1].1.contains("notes.txt"), "{results:?}");
    }
}

#[test]
#[ignore = "needs aimock: run .ci/contract"]
fn rate_limited_with_retry_after_then_answered() {
    let _guard = lock();
    let aimock = fresh("rate_limited_with_retry_after_then_answered");
    let run = aimock.run(
        &workspace_with_notes(),
        "messages-api-rate-limit: answer",
        &[],
        &[("MINI_AGENT_REQUEST_MAX_RETRIES", "2")],
    );
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.contains("Answered after the rate limit."), "{}", run.describe());
    assert_eq!(statuses(&aimock.sent()), [429, 200]);
    assert!(run.elapsed >= Duration::from_secs(1), "retried before Retry-After: {:?}", run.elapsed);
}

#[test]
#[ignore = "needs aimock: run .ci/contract"]
fn overloaded_529_is_retried_and_400_is_not() {
    let _guard = lock();
    let aimock = fresh("overloaded_529_is_retried_and_400_is_not");
    let retries = [("MINI_AGENT_REQUEST_MAX_RETRIES", "2")];
    let run = aimock.run(&workspace_with_notes(), "messages-api-overloaded: answer", &[], &retries);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert!(run.stdout.contains("Answered after the overload."), "{}", run.describe());
    assert_eq!(statuses(&aimock.sent()), [529, 200]);

    let aimock = fresh("overloaded_529_is_retried_and_400_is_not");
    let run = aimock.run(&workspace_with_notes(), "messages-api-bad-request: answer", &[], &retries);
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert!(
        run.stderr.contains("400") && run.stderr.contains("max_tokens is too large"),
        "{}",
        run.describe()
    );
    assert_eq!(statuses(&aimock.sent()), [400]);
}

#[test]
#[ignore = "needs aimock: run .ci/contract"]
fn a_reply_cut_off_streamed_or_not_fails_and_runs_nothing() {
    let _guard = lock();
    let aimock = fresh("a_reply_cut_off_streamed_or_not_fails_and_runs_nothing");
    let run =
        aimock.run(&workspace_with_notes(), "messages-api-truncated: tell me everything", &["--stream"], &[]);
    assert_eq!(run.code, Some(1), "a cut stream is a failure\n{}", run.describe());
    assert!(!run.panicked(), "{}", run.describe());
    let shown = format!("{}{}", run.stdout, run.stderr);
    assert!(shown.contains("The beginning"), "the partial answer is reported\n{}", run.describe());
    assert!(!shown.contains("end of this sentence"), "{}", run.describe());
    assert!(run.stderr.contains("cut off"), "{}", run.describe());

    let aimock = fresh("a_reply_cut_off_streamed_or_not_fails_and_runs_nothing");
    let run = aimock.run(&workspace_with_notes(), "messages-api-disconnect: answer", &[], &[]);
    assert_eq!(run.code, Some(1), "a closed connection is a failure\n{}", run.describe());
    assert!(!run.panicked(), "{}", run.describe());
    assert!(run.stderr.contains("model request failed"), "{}", run.describe());
    assert!(!run.stdout.contains("never arrives"), "{}", run.describe());
    assert_eq!(aimock.sent().len(), 1, "a cut connection may have been acted on: not retried");
}

/// aimock, fresh for case `case` of this file.
fn fresh(case: &str) -> Aimock {
    Aimock::fresh(
        &format!("contract_anthropic::{case}"),
        &aimock::fixtures(Some("messages.json")),
        "/v1/messages",
    )
}
