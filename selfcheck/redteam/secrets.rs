//! Red-team cases: the key goes nowhere.
//!
//! The attacker is a hostile model (it asks `bash` for the environment, reads files that hold
//! the key), a hostile server (it echoes the key it received in an error body, a reply, a
//! stream cut across the key) and anyone who can run `ps` on the machine. The rule each case
//! asserts: the key variables are in no child's environment, and the key (or a `--base-url`
//! password) appears in nothing the agent prints, records, spills or sends back to the model —
//! where it would have been, `[redacted]` stands instead.

use crate::harness::{Run, Test, agent_command, call, messages, session_files, text};
use mini_agent::scripted_server::{ScriptedServer, Step};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;

/// A key long enough to be redacted, and unlikely to appear by chance.
const KEY: &str = "sk-redteam-7f3a9c2e5b1d40686e21";
/// A `--base-url` password (long enough to count as a secret on its own, too).
const PASSWORD: &str = "hunter2-redteam-pw";

/// Every byte the run left anywhere: stdout, stderr, the request bodies, every file under the
/// workspace (journal, spill files, files the tools wrote).
fn everything(run: &Run) -> String {
    let mut all = format!("{}\n{}\n", run.stdout, run.stderr);
    for request in &run.requests {
        all.push_str(&request.to_string());
    }
    all.push_str(&files_under(run.root()));
    all
}

pub(crate) fn files_under(dir: &Path) -> String {
    let mut all = String::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return all };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.push_str(&files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            all.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    all
}

fn assert_nowhere(run: &Run, secret: &str) {
    let all = everything(run);
    assert!(!all.contains(secret), "the secret leaked:\n{}", excerpt(&all, secret));
}

fn excerpt(all: &str, secret: &str) -> String {
    let at = all.find(secret).unwrap_or(0);
    all.chars().skip(all[..at].chars().count().saturating_sub(200)).take(400 + secret.len()).collect()
}

fn spill_files(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.join(".mini_agent/outputs")) else { return Vec::new() };
    entries.flatten().filter_map(|e| std::fs::read_to_string(e.path()).ok()).collect()
}

fn bash(command: &str) -> Step {
    call("bash", json!({"command": command}))
}

/// A run with the key in the environment, the shell allowed, and these replies.
fn with_key(steps: Vec<Step>) -> Test {
    Test::new().env("OPENAI_API_KEY", KEY).server(steps)
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

// ---------------------------------------------------------------------------------------
// The environment of children

#[test]
fn bash_env_does_not_see_the_key() {
    let run = with_key(vec![bash("env"), text("done")]).args(["--allow-shell", "-p", "go"]).run();
    run.expect_code(0);
    let result = run.only_tool_result();
    assert!(result.contains("PATH="), "env printed the environment: {result}");
    assert!(!result.contains("OPENAI_API_KEY"), "the variable itself is gone: {result}");
    assert_nowhere(&run, KEY);
}

#[test]
fn printenv_of_the_key_finds_nothing() {
    let run = with_key(vec![bash("printenv OPENAI_API_KEY; echo status=$?"), text("done")])
        .args(["--allow-shell", "-p", "go"])
        .run();
    run.expect_code(0);
    assert!(run.only_tool_result().contains("status=1"), "{}", run.only_tool_result());
    assert_nowhere(&run, KEY);
}

#[test]
fn a_grandchild_started_by_a_script_does_not_see_the_key() {
    let run =
        with_key(vec![bash("sh -c 'sh -c env'"), text("done")]).args(["--allow-shell", "-p", "go"]).run();
    run.expect_code(0);
    assert!(!run.only_tool_result().contains("OPENAI_API_KEY"), "{}", run.only_tool_result());
    assert_nowhere(&run, KEY);
}

#[test]
fn the_agents_own_proc_environ_no_longer_holds_the_key() {
    // $PPID of `bash -c` is the agent itself.
    let run = with_key(vec![bash("tr '\\0' '\\n' < /proc/$PPID/environ"), text("done")])
        .args(["--allow-shell", "-p", "go"])
        .run();
    run.expect_code(0);
    let result = run.only_tool_result();
    // An ordinary user is refused outright (the agent is non-dumpable); root reads it.
    if result.contains("Permission denied") {
        return;
    }
    assert!(result.contains("NO_COLOR=1"), "the agent's environment was readable: {result}");
    // Wiped, not merely redacted on the way out: not even the variable's name is left.
    assert!(!result.contains("OPENAI_API_KEY") && !result.contains("[redacted]"), "{result}");
    assert_nowhere(&run, KEY);
}

#[test]
fn a_base_url_password_in_the_environment_is_in_no_child() {
    let server =
        ScriptedServer::scripted(vec![bash("env; tr '\\0' '\\n' < /proc/$PPID/environ"), text("done")])
            .expect("start the scripted server");
    let url = server.url.replacen("http://", &format!("http://bob:{PASSWORD}@"), 1);
    let run = Test::new().env("OPENAI_BASE_URL", &url).args(["--allow-shell", "-p", "go"]).run();
    run.expect_code(0);
    let requests = server.requests();
    let result = last_tool_result(&requests);
    assert!(result.contains("PATH="), "{result}");
    assert!(!result.contains("OPENAI_BASE_URL"), "neither in env nor in /proc: {result}");
    let all = format!("{}{}{}{:?}", run.stdout, run.stderr, files_under(run.root()), requests);
    assert!(!all.contains(PASSWORD), "{}", excerpt(&all, PASSWORD));
}

#[test]
fn ps_does_not_show_a_base_url_password() {
    let server = ScriptedServer::scripted(vec![bash("tr '\\0' ' ' < /proc/$PPID/cmdline"), text("done")])
        .expect("start the scripted server");
    let url = server.url.replacen("http://", &format!("http://bob:{PASSWORD}@"), 1);
    let run = Test::new().base_url(&url).args(["--allow-shell", "-p", "go"]).run();
    run.expect_code(0);
    let result = last_tool_result(&server.requests());
    assert!(result.contains("--base-url"), "{result}");
    assert!(!result.contains(PASSWORD), "the command line still shows the password: {result}");
}

fn last_tool_result(requests: &[Value]) -> String {
    let last = requests.last().expect("a request");
    messages(last)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .next_back()
        .expect("a tool result")
}

// ---------------------------------------------------------------------------------------
// Tool output that holds the key

#[test]
fn a_file_with_the_key_is_redacted_in_the_request_the_journal_and_json() {
    let run = with_key(vec![call("read_file", json!({"path": ".env"})), text("done")])
        .file(".env", &format!("OPENAI_API_KEY={KEY}\nOTHER=1\n"))
        .args(["--json", "-p", "go"])
        .run();
    run.expect_code(0);
    assert!(run.only_tool_result().contains("OPENAI_API_KEY=[redacted]"), "{}", run.only_tool_result());
    let finished = json_lines(&run.stdout).into_iter().find(|e| e["type"] == "tool_finished").expect("event");
    assert!(finished["content"].as_str().unwrap_or_default().contains("[redacted]"), "{finished}");
    let journal = serde_json::to_string(&run.only_journal()).unwrap_or_default();
    assert!(journal.contains("OPENAI_API_KEY=[redacted]"), "{journal}");
    // The planted file itself is the user's: it is left as it was.
    assert!(run.read(".env").is_some_and(|env| env.contains(KEY)));
    assert_eq!(everything(&run).matches(KEY).count(), 1, "only .env itself holds the key");
}

#[test]
fn verbose_output_shows_the_tool_result_redacted() {
    let run = with_key(vec![bash("cat key.txt"), text("done")])
        .file("key.txt", KEY)
        .args(["-v", "--allow-shell", "-p", "go"])
        .run();
    run.expect_code(0);
    assert!(run.stderr.contains("[redacted]"), "-v shows the result: {}", run.stderr);
    assert!(!run.stderr.contains(KEY) && !run.stdout.contains(KEY));
    assert!(!serde_json::to_string(&run.requests).unwrap_or_default().contains(KEY));
}

#[test]
fn a_spilled_bash_output_holds_no_key_even_split_across_reads() {
    // 100 kB: more than the answer limit (a spill) and more than one 64 kB read, with the key
    // written in pieces around the read boundary and repeated through the output.
    let script = "head -c 65530 /dev/zero | tr '\\0' 'a'; cat key.txt; for i in $(seq 1 800); do echo \"line $i $(cat key.txt)\"; done";
    let run = with_key(vec![bash(script), text("done")])
        .file("key.txt", KEY)
        .args(["--allow-shell", "-p", "go"])
        .run();
    run.expect_code(0);
    let spills = spill_files(run.root());
    assert_eq!(spills.len(), 1, "one spill file");
    assert!(spills[0].matches("[redacted]").count() >= 801, "every copy was replaced");
    assert!(run.only_tool_result().contains(".mini_agent/outputs/"));
    // The planted key.txt is the one place the key stays.
    assert_eq!(everything(&run).matches(KEY).count(), 1, "only key.txt itself holds the key");
}

#[test]
fn a_spilled_search_result_holds_no_key() {
    // 200 matches (the cap) of ~190 characters each: more than the answer limit.
    let padding = "x".repeat(130);
    let lines: String = (0..300).map(|i| format!("token {i:04} {padding} \"{KEY}\"\n")).collect();
    let run = with_key(vec![call("search", json!({"pattern": "token"})), text("done")])
        .file("config.py", &lines)
        .args(["-p", "go"])
        .run();
    run.expect_code(0);
    let spills = spill_files(run.root());
    assert_eq!(spills.len(), 1, "the search output was spilled");
    assert!(spills[0].contains("[redacted]") && !spills[0].contains(KEY));
    assert!(!run.only_tool_result().contains(KEY));
    let journal = std::fs::read_to_string(&session_files(run.root())[0]).unwrap_or_default();
    assert!(!journal.contains(KEY));
}

// ---------------------------------------------------------------------------------------
// A server that echoes the key

#[test]
fn an_error_body_that_echoes_the_key_is_printed_redacted() {
    let message = format!("Incorrect API key provided: {KEY}. You can find your API key at …");
    let run = with_key(vec![Step::error(401, &message)]).args(["-p", "go"]).run();
    run.expect_code(1).stderr_has("401").stderr_has("Incorrect API key provided: [redacted]");
    assert_nowhere(&run, KEY);
}

#[test]
fn an_echoed_key_is_redacted_in_json_exit_and_retry_events() {
    let echo = format!("upstream rejected Bearer {KEY}");
    let run = with_key(vec![
        Step::Reply {
            status: 503,
            headers: vec![("Retry-After".into(), "0".into())],
            body: json!({"error": {"message": echo}}).to_string(),
        },
        Step::error(400, &echo),
    ])
    .env("MINI_AGENT_REQUEST_MAX_RETRIES", "1")
    .args(["--json", "-p", "go"])
    .run();
    run.expect_code(1);
    let events = json_lines(&run.stdout);
    let retry = events.iter().find(|e| e["type"] == "retry").expect("a retry event");
    assert!(retry["reason"].as_str().unwrap_or_default().contains("Bearer [redacted]"), "{retry}");
    let exit = events.last().expect("an exit event");
    assert!(exit["error"].as_str().unwrap_or_default().contains("Bearer [redacted]"), "{exit}");
    assert_nowhere(&run, KEY);
}

#[test]
fn a_reply_that_contains_the_key_is_answered_redacted() {
    let run = with_key(vec![text(&format!("your key is {KEY}, keep it safe"))]).args(["-p", "go"]).run();
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "your key is [redacted], keep it safe");
    assert_nowhere(&run, KEY);
}

#[test]
fn a_streamed_reply_that_splits_the_key_across_chunks_is_redacted() {
    let (head, tail) = KEY.split_at(9);
    let pieces = ["the key: ", head, tail, " — done"];
    let chunks = pieces
        .iter()
        .map(|piece| json!({"choices": [{"index": 0, "delta": {"content": piece}}]}).to_string())
        .collect();
    let run = with_key(vec![Step::Stream { chunks, delay_ms: 30, finish: true }])
        .args(["--stream", "-p", "go"])
        .run();
    run.expect_code(0);
    assert!(run.stdout.contains("the key: [redacted] — done"), "{}", run.stdout);
    assert_nowhere(&run, KEY);
}

#[test]
fn a_tool_call_that_carries_the_key_runs_with_it_redacted() {
    // The server knows the key (it received it) and tries to have the agent write it down.
    let run = with_key(vec![call("write_file", json!({"path": "leak.txt", "content": KEY})), text("done")])
        .args(["--allow-write", "-p", "go"])
        .run();
    run.expect_code(0);
    assert_eq!(run.read("leak.txt").as_deref(), Some("[redacted]"));
    assert_nowhere(&run, KEY);
}

// ---------------------------------------------------------------------------------------
// A password in --base-url

#[test]
fn a_base_url_password_is_not_in_a_connection_error_or_the_journal() {
    // A port nobody listens on: the error names the URL.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a port");
    let url = format!("http://bob:{PASSWORD}@{closed}/v1");
    let run = Test::new().base_url(&url).args(["-p", "go"]).run();
    run.expect_code(1).stderr_has("cannot connect").stderr_has("[redacted]@127.0.0.1");
    assert_nowhere(&run, PASSWORD);
    let status = agent_command(run.root())
        .args(["-c", "--status"])
        .stdout(Stdio::piped())
        .output()
        .expect("run --status");
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(!status.contains(PASSWORD), "{status}");
}

#[test]
fn a_base_url_password_is_in_no_json_event_or_verbose_line() {
    let server = ScriptedServer::scripted(vec![bash("echo hi"), text("done")]).expect("start");
    let url = server.url.replacen("http://", &format!("http://bob:{PASSWORD}@"), 1);
    let run = Test::new()
        .env("OPENAI_API_KEY", KEY)
        .base_url(&url)
        .args(["--json", "-v", "--allow-shell", "-p", "go"])
        .run();
    run.expect_code(0);
    assert!(json_lines(&run.stdout).iter().any(|e| e["type"] == "final"), "{}", run.stdout);
    assert_nowhere(&run, PASSWORD);
    assert_nowhere(&run, KEY);
    assert!(!format!("{:?}", server.requests()).contains(PASSWORD));
}

#[test]
fn a_short_placeholder_key_does_not_mangle_ordinary_text() {
    // `sk-x` is a placeholder, not a secret: redacting it would rewrite every `sk-x…` word.
    let run = Test::new()
        .env("OPENAI_API_KEY", "sk-x")
        .server(vec![text("ask-x and sk-x stay as they are")])
        .args(["-p", "go"])
        .run();
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "ask-x and sk-x stay as they are");
}

#[test]
fn the_repl_is_held_to_the_same_rule() {
    // A conversation through a pipe: the key in a file, in the environment and in a reply.
    let run = with_key(vec![bash("env; cat key.txt"), text(&format!("the key is {KEY}"))])
        .file("key.txt", KEY)
        .args(["--allow-shell", "-v"])
        .stdin("show me the environment\n")
        .run();
    run.expect_code(0);
    assert!(run.stdout.contains("the key is [redacted]"), "{}", run.stdout);
    assert!(!run.only_tool_result().contains("OPENAI_API_KEY"));
    assert_eq!(everything(&run).matches(KEY).count(), 1, "only key.txt itself holds the key");
}

#[test]
#[ignore = "heavy: .ci/run runs it (cargo test --test redteam -- --ignored)"]
fn redacting_a_large_command_output_costs_little() {
    // 50 MB through the bash pipe, with and without a key to look for. The cost compared is
    // CPU time (the agent's and its commands'), which a busy machine does not stretch the way
    // it stretches the clock; the bound is generous (a quadratic scan would blow it).
    let script = "head -c 50000000 /dev/zero | tr '\\0' 'a'; echo";
    let cost = |env: &[(&str, &str)]| {
        let server = ScriptedServer::scripted(vec![bash(script), text("done")]).expect("server");
        let workspace = crate::harness::TempDir::new("selfcheck");
        let args = ["--allow-shell", "-p", "go", "--base-url", &server.url];
        let run = crate::measure::run_measured_with("50 MB of output", workspace.path(), &args, env);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        run.cpu_ms
    };
    let without = cost(&[]);
    let with = cost(&[("OPENAI_API_KEY", KEY)]);
    eprintln!("50 MB of output: {without} ms of CPU without a key, {with} ms with one to redact");
    assert!(with < without * 4 + 2_000, "{with} ms vs {without} ms");
}

#[test]
fn a_token_in_the_base_url_query_is_in_no_error_journal_or_command_line() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a port");
    let token = "azure-token-0a1b2c3d4e";
    let url = format!("http://{closed}/v1?api-version=1&api-key={token}");
    let run = Test::new().base_url(&url).args(["--json", "-p", "go"]).run();
    run.expect_code(1);
    let exit = json_lines(&run.stdout).into_iter().last().expect("an exit event");
    assert!(exit["error"].as_str().is_some_and(|e| e.contains("[redacted]")), "{exit}");
    assert_nowhere(&run, token);
}

// ---------------------------------------------------------------------------------------
// Where the key is sent, and the URL it is sent to.

/// A tiny HTTP server that records the head of every request (request line and headers,
/// where the `Authorization` header shows which key was sent) and answers "ok". The
/// scripted server records only bodies; these cases are about the line and the headers.
pub(crate) struct Capture {
    pub(crate) url: String,
    heads: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Capture {
    pub(crate) fn start() -> Capture {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                seen.lock().unwrap().push(head);
                let reply =
                    r#"{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}"#;
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        Capture { url, heads }
    }

    pub(crate) fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

#[test]
fn a_base_url_with_a_query_keeps_the_query_after_the_path() {
    // Azure-style endpoints carry `?api-version=…`; the path is added before the query, not
    // glued onto it (`/v1?api-version=1/chat/completions` asks the server for nothing).
    let server = Capture::start();
    let url = format!("{}/v1?api-version=2024-06-01", server.url);
    let run = Test::new().base_url(&url).args(["-p", "go"]).run();
    let heads = server.heads();
    let line = heads.first().and_then(|head| head.lines().next()).unwrap_or_default().to_string();
    assert_eq!(line, "POST /v1/chat/completions?api-version=2024-06-01 HTTP/1.1", "stderr:\n{}", run.stderr);
    run.expect_code(0);
}

/// A cloned repository's latest journal, recording `endpoint` as where the session talks.
fn planted_endpoint(endpoint: &str) -> crate::harness::TempDir {
    let workspace = crate::harness::TempDir::new("selfcheck");
    let sessions = workspace.path().join(".mini_agent/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let header = json!({"seq": 1, "ts": "2099-12-31T00:00:00.000Z", "type": "session", "version": 1,
        "id": "20991231-000000-abcd", "root": workspace.path(), "model": "gpt-4o", "api": "openai",
        "endpoint": endpoint, "created": "2099-12-31T00:00:00.000Z"});
    let user = json!({"seq": 2, "ts": "2099-12-31T00:00:00.000Z", "type": "user", "content": "hi"});
    let reply = json!({"seq": 3, "ts": "2099-12-31T00:00:00.000Z", "type": "assistant", "content": "hello",
        "tool_calls": []});
    std::fs::write(sessions.join("20991231-000000-abcd.jsonl"), format!("{header}\n{user}\n{reply}\n"))
        .unwrap();
    workspace
}

#[test]
fn a_planted_journal_cannot_choose_where_the_key_is_sent() {
    // A cloned repository carries `.mini_agent/sessions/<latest>.jsonl` whose header records
    // the attacker's endpoint. `-c` would send the user's key there, and let the attacker's
    // model drive the tools. The rule: a journal never chooses where the key goes. A recorded
    // remote endpoint that is not the one the user configured is refused before any
    // connection (here a black-hole address: a connection attempt would hang, and the harness
    // would report the hang); a recorded loopback one (a local model server) is used without
    // the key.
    let workspace = planted_endpoint("http://10.255.255.1:9/v1");
    let refused = Test::new().args(["-c", "-p", "go on"]).env("OPENAI_API_KEY", KEY).run_in(workspace);
    refused.expect_code(1);
    assert!(
        refused.stderr.contains("--base-url http://10.255.255.1:9/v1"),
        "the error says how to go on: {}",
        refused.stderr
    );

    let attacker = Capture::start();
    let workspace = planted_endpoint(&format!("{}/v1", attacker.url));
    let output = agent_command(workspace.path())
        .args(["-c", "-p", "go on"])
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::null())
        .output()
        .expect("run mini-agent");
    let heads = attacker.heads();
    assert!(!heads.is_empty(), "a recorded loopback endpoint is still used: {output:?}");
    assert!(!format!("{heads:?}").contains(KEY), "a planted endpoint was sent the key: {heads:?}");
}

#[test]
fn a_token_as_the_url_user_is_in_no_child_and_not_in_ps() {
    // `https://TOKEN@host/v1` (a token as the user-info user, no password: how GitHub-style
    // tokens are put in URLs) is a credential as much as `user:password@` is. A command that
    // encodes what it finds gets past any redaction of its output, so the rule is checked
    // where it must hold: in the child's environment and on the agent's command line.
    let token = "ghp-redteam-token-5e6f7a8b9c";
    for via_flag in [false, true] {
        let server = ScriptedServer::scripted(vec![
            bash("{ printenv OPENAI_BASE_URL; tr '\\0' ' ' < /proc/$PPID/cmdline; } | base64 -w0"),
            text("done"),
        ])
        .expect("start the scripted server");
        let url = server.url.replacen("http://", &format!("http://{token}@"), 1);
        let test = Test::new().args(["--allow-shell", "-p", "go"]);
        let run = if via_flag {
            test.base_url(&url).run()
        } else {
            test.env("OPENAI_BASE_URL", &url).base_url(&url).run()
        };
        run.expect_code(0);
        let encoded = last_tool_result(&server.requests());
        let decoded = std::process::Command::new("base64")
            .arg("-d")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(encoded.trim().as_bytes())?;
                child.wait_with_output()
            })
            .expect("base64 -d");
        let decoded = String::from_utf8_lossy(&decoded.stdout);
        assert!(decoded.contains("--base-url"), "the command ran: {decoded}");
        assert!(!decoded.contains(token), "a child found the token (flag: {via_flag}): {decoded}");
        assert_nowhere(&run, token);
    }
}

#[test]
fn a_command_cannot_open_the_agents_memory() {
    // The agent holds the key in memory (it must, to send it). Without Yama (Debian's
    // default, most containers) a process of the same user may open `/proc/<agent>/mem` and
    // read it: `bash` found the key there. The agent is made non-dumpable, which the kernel
    // checks for every same-user reader of its memory. Root reads any process, so as root
    // the agent runs as `nobody` here, an ordinary user like the one the rule is for.
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let server = ScriptedServer::scripted(vec![
        bash("if exec 3</proc/$PPID/mem; then echo MEM-OPENED; else echo MEM-REFUSED; fi"),
        text("done"),
    ])
    .expect("start the scripted server");
    let workspace = crate::harness::TempDir::new("selfcheck");
    let mut command = agent_command(workspace.path());
    command.args(["--base-url", &server.url, "--allow-shell", "-p", "go"]).env("OPENAI_API_KEY", KEY);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        std::fs::set_permissions(workspace.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        command.uid(65534).gid(65534);
    }
    let output = command.stdin(Stdio::null()).output().expect("run mini-agent");
    let result = last_tool_result(&server.requests());
    assert!(result.contains("MEM-"), "the command ran: {result}\n{output:?}");
    assert!(result.contains("MEM-REFUSED"), "a command opened the agent's memory: {result}");
}

#[test]
fn the_repl_history_file_holds_no_key() {
    // The line editor keeps what was typed in `.mini_agent/history`: a record the agent
    // writes, like the journal, so the key pasted into a message is `[redacted]` there too.
    let workspace = crate::harness::TempDir::new("selfcheck");
    let mut terminal =
        crate::pty::Terminal::start_with_env(workspace.path(), &["--demo"], &[("OPENAI_API_KEY", KEY)]);
    terminal.wait_for("> ");
    terminal.type_keys(&format!("use {KEY} to list files\r"));
    terminal.wait_for("> ");
    terminal.exit();
    let history = std::fs::read_to_string(workspace.path().join(".mini_agent/history")).unwrap_or_default();
    assert!(history.contains("to list files"), "the line is in the history: {history:?}");
    assert!(!history.contains(KEY), "the history holds the key: {history:?}");
    assert!(!files_under(workspace.path()).contains(KEY), "a record holds the key");
}

/// Redaction is for our secrets only: a URL with user-info that the model writes (or a file
/// holds) is the user's data, and reaches the file whole. Redacting it there would corrupt
/// configuration files and commands.
#[test]
fn a_url_with_userinfo_in_the_users_data_is_not_corrupted() {
    let url = "postgres://app:devpass@db:5432/app";
    let run = with_key(vec![
        call("write_file", json!({"path": "config.env", "content": format!("DATABASE_URL={url}\n")})),
        text("done"),
    ])
    .args(["--allow-write", "-p", "go"])
    .run();
    run.expect_code(0);
    let written = std::fs::read_to_string(run.root().join("config.env")).unwrap();
    assert_eq!(written, format!("DATABASE_URL={url}\n"));
    assert_nowhere(&run, KEY);
}
