#!/bin/sh
# Runs each fuzz target for a fixed time (default 60 s each): a benchmark-style check, not
# part of CI. Needs a nightly toolchain (for the coverage instrumentation libFuzzer
# steers by); cargo-fuzz is not needed, though `cargo fuzz run --fuzz-dir scripts/fuzz sse`
# works too. Usage: scripts/fuzz/run.sh [SECONDS_PER_TARGET]
# Seeds go to corpus/<target>/ (kept out of git, grown by each run); a crash leaves its
# input in artifacts/<target>/ and makes this script exit non-zero.
set -eu
seconds="${1:-60}"
here="$(cd "$(dirname "$0")" && pwd)"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "run.sh: needs a nightly toolchain: rustup toolchain install nightly" >&2
    exit 1
fi
# Seed the journal corpus with a real session file, the SSE corpus with a real stream.
mkdir -p "$here/corpus/journal" "$here/corpus/sse"
printf '%s\n' \
    '{"seq":1,"ts":"2026-11-29T09:15:00.000Z","type":"session","version":1,"id":"20261129-091500-7f3a","root":"/w","model":"m","created":"2026-11-29T09:15:00.000Z"}' \
    '{"seq":2,"ts":"2026-11-29T09:15:01.000Z","type":"user","content":"list the files"}' \
    '{"seq":3,"ts":"2026-11-29T09:15:02.000Z","type":"assistant","content":null,"tool_calls":[{"id":"call_0","name":"bash","arguments":"{\"command\":\"ls\"}"}]}' \
    '{"seq":4,"ts":"2026-11-29T09:15:02.100Z","type":"tool_started","id":"call_0","name":"bash","arguments":"{\"command\":\"ls\"}"}' \
    > "$here/corpus/journal/seed-session.jsonl"
printf '\005data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"bash","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}\n\n: ping\r\ndata: [DONE]\r\n\r\n' \
    > "$here/corpus/sse/seed-stream"
# The flags cargo-fuzz uses (without AddressSanitizer: the code under test is safe Rust).
# With an explicit --target they reach our code and not the build scripts.
triple="$(rustc +nightly -vV | sed -n 's/^host: //p')"
cd "$here"
RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks" \
    cargo +nightly build --release --bins --target "$triple"
for target in sse journal; do
    echo "== fuzzing $target for ${seconds}s"
    mkdir -p "artifacts/$target"
    "target/$triple/release/$target" -max_total_time="$seconds" -rss_limit_mb=2048 \
        -artifact_prefix="artifacts/$target/" "corpus/$target"
done
