//! The red-team suite: the trust boundary, attacked from every side that is not the six tools.
//!
//! The escape suite (`tests/escape.rs`) proves that the file tools stay inside the root. This
//! target attacks everything around them, the way a cloned repository, a hostile model or a
//! misbehaving server would: planted files read at start-up, journals that try to move the
//! root, text that rewrites the terminal, a key that tries to leave, servers that stall or
//! drip, signals, and requests for unbounded disk or memory. Each case asserts the *rule*
//! (nothing crossed the root, the key appears nowhere, the run ended within its bound), not
//! the symptom one attack happened to show.
//!
//! One file per side of the boundary:
//!
//! | file | the attacker | the rule |
//! |---|---|---|
//! | `planted.rs` | a cloned repository | workspace reads go through the resolver; `.mini_agent/` and `.git/` are never written by the file tools; a journal cannot move the root |
//! | `terminal.rs` | model and tool text | the terminal shows what runs; no control sequence from the model reaches it |
//! | `secrets.rs` | model, tools, server | the key is in no child's environment and in nothing printed, recorded, spilled or sent |
//! | `hooks.rs` | a cloned repository's hooks | what a hook leaves running does not outlive it |
//! | `approval.rs` | a cloned repository's hooks and MCP files | the approval question shows all that will run (environment, directory) and nothing in the file controls the terminal |
//! | `children.rs` | model, verify commands, `ps` | the agent's own secrets beyond the key (the webhook secret, a webhook URL's path) are in no child, not in the command line, and redacted like the key |
//! | `liveness.rs` | server, model, signals | nothing hangs: idle timeout, linear globs, interruptible walks, SIGTERM/SIGHUP |
//! | `resources.rs` | model | disk and memory stay bounded (peak RSS measured by `measure.rs`'s small wrapper) |
//! | `mcp.rs` | an MCP server | malformed JSON-RPC, garbage, 50 MB and endless answers, silence: a one-line error, no hang, bounded memory |
//! | `sandbox.rs` | a hostile model with `--allow-shell` | a shell command cannot write outside the root or to `~/.bashrc`, send a key over the network, kill the agent, outlive it, approve a planted MCP server, be handed the SSH agent's or the session bus's address, or leave a `.git/commondir` for the person's next `git status` (and each attack works under `--sandbox off`); the agent's state stays read-only for a user who is not root (run as `nobody` under root) |
//! | `tasks.rs` | a cloned repository, a hostile model | a task list's verify commands run only once approved or under `--trust-tasks`; the harness's git runs no program any config names and cannot hang |
//! | `wire.rs` | server (and a stuck model) | redirects, odd reply shapes, giant replies, what a server says of itself (a parse failure, a context window): a clear error or a correct answer, never a silent one or a loop; no tool runs once tools are off |

#[allow(dead_code)]
#[path = "../binary_run.rs"]
mod binary_run;
#[allow(dead_code)]
#[path = "../harness.rs"]
mod harness;
#[allow(dead_code)]
#[path = "../pty.rs"]
mod pty;

mod approval;
mod children;
mod hooks;
mod liveness;
mod mcp;
mod measure;
mod planted;
mod resources;
mod sandbox;
mod secrets;
mod tasks;
mod terminal;
mod wire;
