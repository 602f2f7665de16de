//! The argument parser, fed random argument vectors through the real binary.

use crate::binary_run::{Workspace, args, run_binary};
use crate::{XorShift, assert_clear_failure, assert_survived, cases};
use mini_agent::scripted_server::{ScriptedServer, Step};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);

// ANCHOR: argv
/// Pieces an argument vector is built from: every flag of the contract, near-misses, and
/// values that are empty, huge, negative, not numbers, not UTF-8. `--root` only ever gets
/// the workspace or a missing subdirectory, and `eval` is left out: these runs may carry
/// `--demo --allow-write --allow-shell`, and must not act anywhere but a temp dir.
#[rustfmt::skip]
const FLAGS: [&str; 33] = [
    "-p", "-c", "--continue", "-r", "--resume", "--status", "--acknowledge-unknown", "-v", "--verbose",
    "--max-turns", "--allow-write", "--allow-shell", "--stream", "--json", "--demo", "--model",
    "--base-url", "-h", "--help", "-V", "--version", "-", "--", "-pv", "--max-turns=3", "--model=",
    "---", "-x", "--unknown-flag", "--stream=yes", "-pp", "--repeats", "--json --demo",
];
#[rustfmt::skip]
const VALUES: [&str; 16] = [
    "", "0", "1", "-1", "3", "99999999999999999999999", "abc", "-p", "hello", "20261129-0915",
    " ", "\t\n", "✓ 数据", "%s%n", "../..", "x\u{7f}y",
];

fn random_argv(random: &mut XorShift, workspace: &Workspace) -> Vec<OsString> {
    let mut argv = Vec::new();
    for _ in 0..random.below(7) {
        match random.below(6) {
            0 | 1 => argv.push(OsString::from(*random.pick(&FLAGS))),
            2 => argv.push(OsString::from(*random.pick(&VALUES))),
            3 => {
                // Any bytes but NUL, which no argument can carry.
                let len = random.below(40);
                argv.push(OsString::from_vec(random.bytes(len).into_iter().filter(|b| *b != 0).collect()));
            }
            4 => argv.push(OsString::from("y".repeat(random.below(100_000)))),
            _ => {
                argv.push(OsString::from("--root"));
                let missing = workspace.join("missing");
                argv.push(
                    if random.below(2) == 0 { workspace.path().to_path_buf() } else { missing }
                        .into_os_string(),
                );
            }
        }
    }
    argv
}
// ANCHOR_END: argv

#[test]
fn random_argument_vectors_never_panic() {
    // Any request these runs send goes here, never to a real API.
    let server = ScriptedServer::start(|_| Step::text("scripted answer")).expect("loopback server");
    let mut random = XorShift::seeded(0x5eed_a59f);
    for case in 0..cases(200) {
        let workspace = Workspace::new("robust-argv");
        let argv = random_argv(&mut random, &workspace);
        let env = [("OPENAI_BASE_URL", server.url.as_str()), ("MINI_AGENT_REQUEST_MAX_RETRIES", "0")];
        let run = run_binary(workspace.path(), &argv, &env, DEADLINE);
        assert_survived(&run, &format!("case {case}, argv {argv:?}"));
    }
}

#[test]
fn documented_usage_errors_exit_1_with_a_reason() {
    let workspace = Workspace::new("robust-usage");
    for argv in [
        &["--definitely-not-a-flag"][..],
        &["-p"],
        &["--max-turns", "many", "-p", "x"],
        &["--max-turns", "-3", "-p", "x"],
        &["--resume"],
        &["--model"],
        &["--base-url"],
    ] {
        let run = run_binary(workspace.path(), &args(argv), &[], DEADLINE);
        assert_clear_failure(&run, &format!("argv {argv:?}"));
    }
}
