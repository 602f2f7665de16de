//! Chapter 1: the whole agent in one file you can type in.
//!
//! An agent is a loop: send the conversation to a model, run the tools it asks for, append
//! their results, and send again, until the model answers in plain text. This file is that
//! loop and nothing else: one `bash` tool, one blocking HTTP call, messages as JSON values.
//! No traits, no generics: it is meant to be read top to bottom and typed in.
//!
//! It already keeps two promises the rest of the book keeps harder: a command's output is
//! bounded before it goes back to the model, and the loop stops after a fixed number of
//! model calls. What it does not do yet, later chapters add: chapter 2 cuts the loop at seams
//! (model, tools, observer) so each can be tested alone; chapter 3 confines tools to the
//! workspace, times commands out and kills their whole process group; chapter 4 cleans what
//! reaches the terminal; chapter 12 asks before a command runs. Until then, run it in a
//! scratch directory: it runs whatever the model asks.

// ANCHOR: limits
use serde_json::{Value, json};
use std::io::Read;
use std::process::{Command, ExitCode, Stdio};

/// How many model calls one task may take before the agent gives up.
pub const MAX_TURNS: usize = 10;
/// How much of a command's output (stdout and stderr together) goes back to the model.
pub const MAX_OUTPUT: usize = 10_000;

const SYSTEM: &str = "You are a coding agent working in the current directory. \
Use the bash tool to look at and change files. When the task is done, answer briefly.";
const USAGE: &str = "usage: mini-agent [--demo] [--base-url URL] [--model NAME] -p TASK
  --demo      use the offline demo model (no key, no network)
  --base-url  the Chat Completions server (default $OPENAI_BASE_URL, else OpenAI)
  --model     the model name (default gpt-4o-mini)
The key is read from OPENAI_API_KEY.";
// ANCHOR_END: limits

// ANCHOR: main
/// Runs one task from the command line: the answer on stdout, exit code 0; an error on
/// stderr, exit code 1.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(answer) => {
            println!("{answer}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
// ANCHOR_END: main

// ANCHOR: run
/// Reads the flags, finds a model (the demo or a real one), and runs the loop.
fn run(args: &[String]) -> Result<String, String> {
    let (mut demo, mut task) = (false, None);
    let mut base_url = std::env::var("OPENAI_BASE_URL").unwrap_or("https://api.openai.com/v1".into());
    let mut model = "gpt-4o-mini".to_string();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().cloned().ok_or(format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--demo" => demo = true,
            "-p" => task = Some(value()?),
            "--base-url" => base_url = value()?,
            "--model" => model = value()?,
            "-h" | "--help" => return Ok(USAGE.to_string()),
            _ => return Err(format!("unknown argument `{arg}`\n{USAGE}")),
        }
    }
    let task = task.ok_or(format!("no task given\n{USAGE}"))?;
    if demo {
        // The demo model answers on a loopback port for as long as `server` lives.
        let server = crate::demo::start_demo_server().map_err(|e| format!("demo server: {e}"))?;
        return run_agent(&server.url, "", "demo", &task, MAX_TURNS);
    }
    let key = std::env::var("OPENAI_API_KEY").map_err(|_| "set OPENAI_API_KEY, or try --demo")?;
    run_agent(&base_url, &key, &model, &task, MAX_TURNS)
}
// ANCHOR_END: run

// ANCHOR: loop
/// The loop: ask the model, run the tools it calls, append their results, ask again,
/// until it answers with text or `max_turns` model calls have been made.
pub fn run_agent(url: &str, key: &str, model: &str, task: &str, max_turns: usize) -> Result<String, String> {
    let mut messages =
        vec![json!({"role": "system", "content": SYSTEM}), json!({"role": "user", "content": task})];
    for _ in 0..max_turns {
        let reply = chat(url, key, model, &messages)?;
        messages.push(reply.clone());
        let calls = reply["tool_calls"].as_array().cloned().unwrap_or_default();
        if calls.is_empty() {
            let text = reply["content"].as_str().ok_or("the model sent neither text nor a tool call")?;
            return Ok(text.to_string());
        }
        for call in &calls {
            let output = run_tool(&call["function"]);
            messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": output}));
        }
    }
    Err(format!("no answer after {max_turns} model calls; stopping"))
}
// ANCHOR_END: loop

// ANCHOR: chat
/// One blocking call to `POST {url}/chat/completions`: the whole conversation and the one
/// tool go out, the assistant's message comes back.
fn chat(url: &str, key: &str, model: &str, messages: &[Value]) -> Result<Value, String> {
    let body = json!({"model": model, "messages": messages, "tools": [bash_schema()]});
    let mut request =
        ureq::post(format!("{url}/chat/completions")).header("content-type", "application/json");
    if !key.is_empty() {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    // An error status is read like any reply (its body says why); ten minutes is the most
    // one answer may take, so a server that never answers cannot hang the agent.
    let timeout = Some(std::time::Duration::from_secs(600));
    let request = request.config().http_status_as_error(false).timeout_global(timeout).build();
    let mut response = request.send(body.to_string()).map_err(|e| format!("cannot reach {url}: {e}"))?;
    // ureq stops reading a body at 10 MB, so a huge reply cannot fill memory.
    let text = response.body_mut().read_to_string().map_err(|e| format!("reading the reply: {e}"))?;
    read_reply(response.status().as_u16(), &text)
}
// ANCHOR_END: chat

// ANCHOR: reply
/// The assistant's message from a reply body, or one line saying why there is none.
fn read_reply(status: u16, text: &str) -> Result<Value, String> {
    let reply: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    if status != 200 {
        let message = reply["error"]["message"].as_str().unwrap_or("no message");
        let message: String = message.chars().take(300).collect();
        return Err(format!("the model server answered HTTP {status}: {message}"));
    }
    let message = &reply["choices"][0]["message"];
    if !message.is_object() {
        return Err(format!("the reply has no message: {}", text.chars().take(200).collect::<String>()));
    }
    Ok(message.clone())
}
// ANCHOR_END: reply

// ANCHOR: tool
/// The one tool, as the model sees it: a name, what it does, and its arguments' schema.
fn bash_schema() -> Value {
    json!({"type": "function", "function": {
        "name": "bash", "description": "Run a bash command; returns its output and exit code.",
        "parameters": {"type": "object", "required": ["command"],
                       "properties": {"command": {"type": "string"}}}}})
}

/// Runs one tool call and returns the text the model will read. Failures are answers too:
/// the model reads them and can try something else.
fn run_tool(function: &Value) -> String {
    if function["name"] != "bash" {
        return format!("error: unknown tool {}; the only tool is bash", function["name"]);
    }
    let arguments: Value =
        serde_json::from_str(function["arguments"].as_str().unwrap_or("")).unwrap_or_default();
    let Some(command) = arguments["command"].as_str() else {
        return "error: bash needs {\"command\": \"...\"}".to_string();
    };
    eprintln!("[bash] {command}");
    match run_bash(command) {
        Ok(output) => output,
        Err(error) => format!("error: could not run bash: {error}"),
    }
}
// ANCHOR_END: tool

// ANCHOR: bash
/// `bash -c command` with stdout and stderr in one pipe; reads at most `MAX_OUTPUT` bytes
/// of it, so a command that prints forever is cut (and killed), not kept in memory.
fn run_bash(command: &str) -> std::io::Result<String> {
    let (reader, writer) = std::io::pipe()?;
    let mut child = Command::new("bash")
        .args(["-c", command])
        .env_remove("OPENAI_API_KEY") // the model's commands have no business with the key
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .spawn()?;
    let mut output = Vec::new();
    reader.take(MAX_OUTPUT as u64 + 1).read_to_end(&mut output)?;
    let cut = output.len() > MAX_OUTPUT;
    if cut {
        output.truncate(MAX_OUTPUT);
        child.kill()?;
    }
    let status = child.wait()?;
    let mut text = String::from_utf8_lossy(&output).into_owned();
    if cut {
        text.push_str(&format!("\n[output cut at {MAX_OUTPUT} bytes]"));
    }
    let ending = status.code().map_or("killed by a signal".into(), |code| format!("exit code {code}"));
    let separator = if text.is_empty() || text.ends_with('\n') { "" } else { "\n" };
    Ok(format!("{text}{separator}{ending}"))
}
// ANCHOR_END: bash

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripted_server::{ScriptedServer, Step};

    #[test]
    fn a_tool_call_then_an_answer() {
        let server = ScriptedServer::scripted(vec![
            Step::tool_calls(&[("bash", r#"{"command": "echo hello; echo oops >&2; exit 3"}"#)]),
            Step::text("All done."),
        ])
        .expect("server");
        assert_eq!(run_agent(&server.url, "k", "m", "say hello", 5), Ok("All done.".to_string()));
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0]["tools"][0]["function"]["name"], "bash");
        assert_eq!(requests[0]["messages"][1]["content"], "say hello");
        let result = &requests[1]["messages"][3];
        assert_eq!(result["role"], "tool");
        assert_eq!(result["tool_call_id"], "call_0");
        assert_eq!(result["content"], "hello\noops\nexit code 3");
    }

    #[test]
    fn an_http_error_is_one_clear_line() {
        let server = ScriptedServer::scripted(vec![Step::error(401, "invalid api key")]).expect("server");
        let error = run_agent(&server.url, "bad", "m", "hi", 5).expect_err("401 is an error");
        assert_eq!(error, "the model server answered HTTP 401: invalid api key");
        let error = run_agent("http://127.0.0.1:1/v1", "k", "m", "hi", 5).expect_err("nobody listens");
        assert!(error.starts_with("cannot reach http://127.0.0.1:1/v1"), "{error}");
    }

    #[test]
    fn the_turn_limit_stops_a_model_that_never_answers() {
        let server = ScriptedServer::start(|_| Step::tool_calls(&[("bash", r#"{"command": "true"}"#)]))
            .expect("server");
        let error = run_agent(&server.url, "k", "m", "loop", 3).expect_err("no answer");
        assert_eq!(error, "no answer after 3 model calls; stopping");
        assert_eq!(server.request_count(), 3);
    }

    #[test]
    fn bad_calls_are_answered_not_fatal() {
        let unknown = run_tool(&json!({"name": "write_file", "arguments": "{}"}));
        assert_eq!(unknown, "error: unknown tool \"write_file\"; the only tool is bash");
        let broken = run_tool(&json!({"name": "bash", "arguments": "{not json"}));
        assert!(broken.starts_with("error: bash needs"), "{broken}");
    }

    #[test]
    fn long_output_is_cut_and_the_command_stopped() {
        let output = run_bash("yes").expect("bash runs");
        assert!(output.len() < MAX_OUTPUT + 100, "{} bytes", output.len());
        assert!(output.contains(&format!("[output cut at {MAX_OUTPUT} bytes]")), "{output}");
        assert!(output.ends_with("killed by a signal"), "{output}");
    }

    #[test]
    fn the_demo_lists_files_through_bash() {
        let server = crate::demo::start_demo_server().expect("demo");
        let answer = run_agent(&server.url, "", "demo", "list files", MAX_TURNS).expect("an answer");
        assert!(answer.starts_with("Files in `.`:"), "{answer}");
        assert!(answer.contains("Cargo.toml"), "{answer}");
        assert_eq!(
            server.requests()[1]["messages"][2]["tool_calls"][0]["function"]["arguments"],
            r#"{"command":"ls -A"}"#
        );
    }
}
