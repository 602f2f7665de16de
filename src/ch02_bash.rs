//! Chapter 2's one tool: `bash`, behind the `Tools` seam.
//!
//! Chapter 1's agent ran commands inline; here the same tool sits behind the seam the loop
//! calls, so the loop no longer knows what a tool is. It runs `sh -c COMMAND` in the
//! workspace root and returns what the command printed, cut to a size a request can carry.
//! Chapter 3 replaces it with the six confined tools (and a shell that can be interrupted,
//! timed out and kept inside the root); this state keeps only what the loop needs.

use crate::ch02_loop::{Error, ToolCall, ToolOutput, ToolStatus, Tools};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one command may return to the model, in bytes.
const OUTPUT_LIMIT: usize = 16 * 1024;

/// The `bash` tool, running commands in `root`.
pub struct Bash {
    root: PathBuf,
}

impl Bash {
    pub fn new(root: &Path) -> Result<Bash, Error> {
        Ok(Bash { root: root.to_path_buf() })
    }
}

impl Tools for Bash {
    fn schemas(&self) -> Vec<Value> {
        vec![json!({
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run a shell command in the workspace root; returns its output.",
                "parameters": {
                    "type": "object",
                    "properties": {"command": {"type": "string", "description": "the command"}},
                    "required": ["command"]
                }
            }
        })]
    }

    fn run(&mut self, call: &ToolCall) -> ToolOutput {
        let error = |content: String| ToolOutput { content, status: ToolStatus::Error };
        if call.name != "bash" {
            return error(format!("unknown tool {:?}: the only tool is bash", call.name));
        }
        let arguments: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        let Some(command) = arguments.get("command").and_then(Value::as_str) else {
            return error("bash needs {\"command\": \"…\"}".into());
        };
        match Command::new("sh").arg("-c").arg(command).current_dir(&self.root).output() {
            Ok(output) => {
                let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&output.stderr));
                if text.len() > OUTPUT_LIMIT {
                    let cut = text.floor_char_boundary(OUTPUT_LIMIT);
                    text.truncate(cut);
                    text.push_str("\n[output cut]");
                }
                let status = if output.status.success() { ToolStatus::Ok } else { ToolStatus::Error };
                match output.status.code() {
                    Some(0) => ToolOutput { content: text, status },
                    code => ToolOutput { content: format!("{text}\n[exit status {code:?}]"), status },
                }
            }
            Err(e) => error(format!("cannot run sh: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(arguments: &str) -> ToolCall {
        ToolCall { id: "1".into(), name: "bash".into(), arguments: arguments.into() }
    }

    #[test]
    fn bash_runs_in_the_root_and_says_how_it_ended() {
        let root = std::env::temp_dir();
        let mut bash = Bash::new(&root).unwrap();
        let output = bash.run(&call(r#"{"command": "pwd"}"#));
        assert_eq!(output.status, ToolStatus::Ok);
        assert_eq!(Path::new(output.content.trim()).canonicalize().unwrap(), root.canonicalize().unwrap());
        let failed = bash.run(&call(r#"{"command": "exit 3"}"#));
        assert_eq!(failed.status, ToolStatus::Error);
        assert!(failed.content.contains("exit status Some(3)"));
        assert_eq!(bash.run(&call("not json")).status, ToolStatus::Error);
    }
}
