//! A zero-think-time model server for profiling the agent by hand (`scripts/bench` measures;
//! this lets `valgrind`, `strace` or `perf` watch one run).
//!
//! `bench_serve [CALLS] [bash|list_files]` prints its base URL on stdout, answers CALLS
//! requests with one tool call each (`bash` running `true`, or `list_files`), then a final
//! "done", and exits once that answer is out. For example (see BENCHMARKS.md):
//!
//! ```sh
//! url=$(target/release/examples/bench_serve 50 | head -1) &   # or read it from a fifo
//! valgrind --tool=callgrind mini-agent --allow-shell -p go --base-url "$url"
//! ```

use mini_agent::scripted_server::{ScriptedServer, Step};
use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

fn main() {
    let mut words = std::env::args().skip(1);
    let calls: usize = words.next().and_then(|w| w.parse().ok()).unwrap_or(50);
    let step = match words.next().as_deref() {
        Some("list_files") => Step::tool_calls(&[("list_files", "{}")]),
        Some("bash") | None => Step::tool_calls(&[("bash", r#"{"command":"true"}"#)]),
        Some(other) => {
            eprintln!("bench_serve: unknown tool {other}; use bash or list_files");
            std::process::exit(1);
        }
    };
    let (done_tx, done) = mpsc::channel();
    let mut served = 0;
    let server = ScriptedServer::start(move |_| {
        served += 1;
        if served <= calls {
            step.clone()
        } else {
            let _ = done_tx.send(());
            Step::text("done")
        }
    })
    .unwrap_or_else(|e| {
        eprintln!("bench_serve: cannot start the server: {e}");
        std::process::exit(1);
    });
    println!("{}", server.url);
    let _ = std::io::stdout().flush();
    // Wait for the final answer (a day at most), then give it a moment to be written.
    let _ = done.recv_timeout(Duration::from_secs(86_400));
    std::thread::sleep(Duration::from_millis(200));
}
