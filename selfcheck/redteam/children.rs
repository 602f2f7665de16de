//! Red-team cases: see `main.rs` for the rule this file holds.
//!
//! Secrets of the agent's own beyond the model's key. `tasks run --webhook URL` signs its
//! events with `MINI_AGENT_WEBHOOK_SECRET`; a command that can read that secret can sign
//! forged "task passed" events for whoever trusts the signature. So it is held to the key's
//! rule: taken out of the environment at start-up, in no child (the model's `bash`, a task's
//! verify command), and redacted from everything printed, recorded or sent to the model.

use crate::harness::{TempDir, Test, call, text};
use serde_json::json;

const SECRET: &str = "whsec-redteam-0c4d8e1f2a3b";

#[test]
fn the_webhook_secret_is_in_no_child_and_in_nothing_recorded() {
    // Found by red3: `env` in the model's bash, and a verify command, both printed it.
    let add = Test::new().args(["tasks", "add", "one", "--verify", "env > verify_env.txt"]);
    let add = add.run_in(TempDir::new("selfcheck"));
    add.expect_code(0);
    let steps = vec![call("bash", json!({"command": "env; echo whsec-redteam-0c4d8e1f2a3b"})), text("done")];
    let args = [
        "tasks",
        "run",
        "--no-commit",
        "--allow-shell",
        "--trust-tasks",
        "--webhook",
        "http://127.0.0.1:9/h",
    ];
    let run =
        Test::new().env("MINI_AGENT_WEBHOOK_SECRET", SECRET).args(args).server(steps).run_in(add.workspace);
    run.expect_code(0).stderr_has("task 1 passed");
    let result = run.only_tool_result();
    assert!(result.contains("PATH="), "env printed the environment: {result}");
    assert!(!result.contains("MINI_AGENT_WEBHOOK_SECRET"), "the variable is in bash's environment: {result}");
    assert!(result.contains("[redacted]"), "the echoed secret is redacted: {result}");
    let verify = run.read("verify_env.txt").expect("the verify command ran");
    assert!(verify.contains("PATH=") && !verify.contains(SECRET), "the verify command saw it: {verify}");
    let mut all = format!("{}\n{}\n", run.stdout, run.stderr);
    all.extend(run.requests.iter().map(|request| request.to_string()));
    all.push_str(&crate::secrets::files_under(run.root()));
    assert!(!all.contains(SECRET), "the secret leaked");
}

#[test]
fn ps_does_not_show_the_path_of_a_webhook_url() {
    // Found by red3: a webhook URL is a credential of its own (whoever knows a Slack or
    // Discord webhook may post to it; the agent's warnings show only its host for that
    // reason), yet `--webhook URL` stood whole in the agent's command line, which `ps` and
    // the model's own `bash` (through /proc/$PPID/cmdline) could read.
    let add = Test::new().args(["tasks", "add", "one", "--verify", "true"]).run_in(TempDir::new("selfcheck"));
    add.expect_code(0);
    let steps = vec![call("bash", json!({"command": "tr '\\0' ' ' < /proc/$PPID/cmdline"})), text("done")];
    let hook = "http://127.0.0.1:9/services/T0/B0/WEBHOOKPATHSECRET?token=x";
    let args = ["tasks", "run", "--no-commit", "--allow-shell", "--trust-tasks", "--webhook", hook];
    let run = Test::new().args(args).server(steps).run_in(add.workspace);
    run.expect_code(0);
    let result = run.only_tool_result();
    assert!(result.contains("--webhook http://127.0.0.1:9/*"), "the command line was read: {result}");
    assert!(!result.contains("WEBHOOKPATHSECRET"), "the command line still shows the webhook path: {result}");
}
