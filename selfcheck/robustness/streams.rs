//! Streams through the real binary (`--stream`): cut at every chunk, filled with garbage,
//! or one enormous line. A cut stream is a failure with a reason, and runs no tool.

use crate::binary_run::{Run, Workspace, args, run_binary};
use crate::{XorShift, assert_clear_failure, assert_survived, cases, preview};
use mini_agent::scripted_server::{ScriptedServer, Step};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);

/// A streamed reply that writes `ran.txt` (if it is ever run) and says so.
fn chunks_writing_a_file() -> Vec<String> {
    let delta = |delta: serde_json::Value| {
        serde_json::json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}).to_string()
    };
    vec![
        delta(serde_json::json!({"role": "assistant", "content": ""})),
        delta(serde_json::json!({"content": "Writing the file."})),
        delta(serde_json::json!({"tool_calls": [{"index": 0, "id": "call_w", "type": "function",
            "function": {"name": "write_file", "arguments": ""}}]})),
        delta(
            serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":\"ran.txt\","}}]}),
        ),
        delta(
            serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"content\":\"x\"}"}}]}),
        ),
        serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
            .to_string(),
        serde_json::json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}).to_string(),
    ]
}

/// Runs `--stream -p` with writes allowed against a server that streams `chunks` to
/// every request, ending with `[DONE]` only when `finish`.
fn run_streaming(workspace: &Workspace, chunks: Vec<String>, finish: bool) -> Run {
    let server = ScriptedServer::start(move |_| Step::Stream { chunks: chunks.clone(), delay_ms: 0, finish })
        .expect("loopback server");
    let argv =
        args(&["--base-url", &server.url, "--stream", "--allow-write", "--max-turns", "2", "-p", "go"]);
    run_binary(workspace.path(), &argv, &[("MINI_AGENT_REQUEST_MAX_RETRIES", "0")], DEADLINE)
}

#[test]
fn a_stream_cut_before_its_finish_fails_and_runs_nothing() {
    let chunks = chunks_writing_a_file();
    let finish_index = chunks.len() - 2;
    for kept in 0..=finish_index {
        let workspace = Workspace::new("robust-stream");
        let run = run_streaming(&workspace, chunks[..kept].to_vec(), false);
        assert_clear_failure(&run, &format!("a stream cut after {kept} chunks"));
        assert!(!workspace.join("ran.txt").exists(), "a cut stream ran its tool call ({kept} chunks)");
    }
    // The whole stream, for contrast: the call runs (the scripted server then repeats it
    // until the turn limit).
    let workspace = Workspace::new("robust-stream");
    let run = run_streaming(&workspace, chunks, true);
    assert_survived(&run, "the whole stream");
    assert!(workspace.join("ran.txt").exists(), "{}", run.describe());
}

#[test]
fn garbage_chunks_fail_clearly() {
    let mut random = XorShift::seeded(0x57ea_9a4b);
    for case in 0..cases(200) / 10 {
        let workspace = Workspace::new("robust-stream");
        // One line of noise per chunk: line breaks would only make more, shorter chunks.
        let chunks: Vec<String> = (0..1 + random.below(5))
            .map(|_| {
                let len = random.below(300);
                let noise: Vec<u8> =
                    random.bytes(len).into_iter().filter(|b| !matches!(b, b'\n' | b'\r')).collect();
                String::from_utf8_lossy(&noise).into_owned()
            })
            .collect();
        // A blank event carries nothing and JSON that is not a chunk is skipped; anything
        // else in a stream is garbage that must fail the run.
        let garbage = chunks
            .iter()
            .any(|c| !c.trim().is_empty() && serde_json::from_str::<serde_json::Value>(c.trim()).is_err());
        let run = run_streaming(&workspace, chunks.clone(), true);
        let input =
            format!("case {case}: chunks {:?}", chunks.iter().map(|c| preview(c)).collect::<Vec<_>>());
        if garbage { assert_clear_failure(&run, &input) } else { assert_survived(&run, &input) }
    }
}

#[test]
fn a_huge_streamed_line_arrives_whole() {
    let workspace = Workspace::new("robust-stream");
    let text = "streamed words ".repeat(300_000);
    let chunks = vec![
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]}).to_string(),
        serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
    ];
    let run = run_streaming(&workspace, chunks, true);
    assert_survived(&run, "a 4.5 MB streamed line");
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(run.stdout.matches("streamed words").count(), 300_000, "the whole answer reaches stdout");
}
