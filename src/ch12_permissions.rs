//! Chapter 12 — permissions.
//!
//! Reading inside the workspace is free; changing it is not. Writing a file and running a
//! shell command each need a permission, granted up front with `--allow-write` /
//! `--allow-shell`, or asked for at the terminal when the call comes: `y` once, `a` always
//! for this session, `n` to deny — with a reason the model gets to read. With no terminal to
//! ask, the call is denied with a result that names the flag.
//!
//! The policy lives in one place, a [`Gate`] wrapped around any [`Tools`]: the tools
//! themselves know nothing of permissions, and the loop of chapter 1 sees just another
//! `Tools`. How the question is asked is a separate trait, [`Prompter`], so the REPL can ask
//! through its own terminal handling and tests can answer from a script.

use crate::ch02_loop::command_line::{Flag, Help, Registry, Settings};
use crate::ch02_loop::{ToolCall, ToolOutput, ToolStatus, Tools, plural};
use crate::ch03_tools::Workspace;
use crate::ch04_terminal::ready::{Ready, read_when_ready};
use crate::ch04_terminal::sanitize::sanitize_command;
use crate::ch04_terminal::{TypeAhead, question_open};
use crate::text::head_and_tail;
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};

// ANCHOR: policy
/// Tools that say which permission a call needs (`None`: it only reads, and is free). The gate
/// asks the tools, so it knows no tool by name: a later chapter's tools (chapter 18's MCP
/// servers) bring their own permission.
pub trait Guarded: Tools {
    fn permission(&self, call: &ToolCall) -> Option<Permission>;
}

/// The whole policy of chapter 3's six tools: writing files and running the shell. Everything
/// else is free.
impl Guarded for Workspace {
    fn permission(&self, call: &ToolCall) -> Option<Permission> {
        match call.name.as_str() {
            "write_file" | "edit_file" => Some(WRITE),
            "bash" => Some(SHELL),
            _ => None,
        }
    }
}
// ANCHOR_END: policy

// ANCHOR: permission_words
/// What a tool call needs beyond reading: named by the flag that grants it for the whole run,
/// with the words the question and the denial use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permission {
    /// `--allow-write`: what the denial tells the person (and the model) to pass.
    pub flag: &'static str,
    /// `writing files`: what the denied call was doing.
    pub activity: &'static str,
    /// `file writes`: what `a` allows for the rest of the session.
    pub scope: &'static str,
}

pub const WRITE: Permission =
    Permission { flag: "--allow-write", activity: "writing files", scope: "file writes" };
pub const SHELL: Permission =
    Permission { flag: "--allow-shell", activity: "running shell commands", scope: "shell commands" };

/// The permissions granted: up front by their flags, and in a session by the person's `a`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    flags: Vec<&'static str>,
}

impl Permissions {
    /// The permissions whose flags are among `given`.
    pub fn granting(given: impl IntoIterator<Item = &'static str>) -> Permissions {
        Permissions { flags: given.into_iter().collect() }
    }

    pub fn allows(&self, permission: Permission) -> bool {
        self.flags.contains(&permission.flag)
    }

    fn grant(&mut self, permission: Permission) {
        if !self.allows(permission) {
            self.flags.push(permission.flag);
        }
    }
}
// ANCHOR_END: permission_words

// ANCHOR: prompter
/// The user's answer to "may this call run?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Run this call only.
    Once,
    /// Run it, and every later call needing the same permission in this session.
    Always,
    /// Do not run it; the reason (possibly empty) is passed to the model.
    Deny(String),
}

/// Asks the user about one call.
pub trait Prompter {
    fn ask(&mut self, call: &ToolCall, needed: Permission) -> Answer;
}
// ANCHOR_END: prompter

// ANCHOR: gate
/// Wraps any tools with the permission policy.
pub struct Gate<T: Guarded> {
    inner: T,
    granted: Permissions,
    prompter: Option<Box<dyn Prompter>>,
}

impl<T: Guarded> Gate<T> {
    /// `prompter` is `None` when there is nobody to ask (no terminal, `--json`, scripts):
    /// then whatever was not granted up front is denied.
    pub fn new(inner: T, granted: Permissions, prompter: Option<Box<dyn Prompter>>) -> Gate<T> {
        Gate { inner, granted, prompter }
    }

    /// The permissions held now, including those the user granted with `a`.
    pub fn granted(&self) -> &Permissions {
        &self.granted
    }
    // ANCHOR_END: gate

    pub fn inner(&self) -> &T {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

// ANCHOR: gate_run
impl<T: Guarded> Tools for Gate<T> {
    fn schemas(&self) -> Vec<Value> {
        self.inner.schemas()
    }

    fn run(&mut self, call: &ToolCall) -> ToolOutput {
        let Some(needed) = self.inner.permission(call) else {
            return self.inner.run(call);
        };
        if self.granted.allows(needed) {
            return self.inner.run(call);
        }
        let answer = match self.prompter.as_mut() {
            Some(prompter) => prompter.ask(call, needed),
            None => {
                let content = format!(
                    "denied: {} needs permission; rerun with {} (or approve at the prompt in the REPL)",
                    needed.activity, needed.flag
                );
                return ToolOutput { content, status: ToolStatus::Denied };
            }
        };
        // ANCHOR_END: gate_run
        // ANCHOR: gate_answer
        match answer {
            Answer::Once => self.inner.run(call),
            Answer::Always => {
                self.granted.grant(needed);
                self.inner.run(call)
            }
            Answer::Deny(reason) => {
                let reason = reason.trim();
                let content = if reason.is_empty() {
                    format!("denied: the user did not allow this {} call; do not retry it as is", call.name)
                } else {
                    format!("denied: the user did not allow this {} call. Their reason: {reason}", call.name)
                };
                ToolOutput { content, status: ToolStatus::Denied }
            }
        }
    }
}
// ANCHOR_END: gate_answer

// ANCHOR: terminal_prompter
/// Asks on a terminal: one line describing the call, then `y` / `a` / `n`, and after `n` an
/// optional reason. Reads from any line source, so tests can script it; `open_tty` uses
/// /dev/tty, which works even when stdin is a pipe.
pub struct TerminalPrompter {
    input: Box<dyn BufRead + Send>,
    output: Box<dyn Write + Send>,
    /// The terminal's descriptor, when `input` is /dev/tty: waited on with `poll`, so that
    /// Ctrl+C, SIGTERM or SIGHUP ends the wait (a blocking read would just be retried).
    tty: Option<i32>,
}

impl TerminalPrompter {
    pub fn new(input: Box<dyn BufRead + Send>, output: Box<dyn Write + Send>) -> TerminalPrompter {
        TerminalPrompter { input, output, tty: None }
    }

    /// The controlling terminal, or `None` when there is none (CI, daemons, `setsid`).
    pub fn open_tty() -> Option<TerminalPrompter> {
        let reader: File = OpenOptions::new().read(true).open("/dev/tty").ok()?;
        let writer: File = OpenOptions::new().write(true).open("/dev/tty").ok()?;
        let tty = Some(std::os::fd::AsRawFd::as_raw_fd(&reader));
        Some(TerminalPrompter {
            tty,
            ..TerminalPrompter::new(Box::new(BufReader::new(reader)), Box::new(writer))
        })
    }

    // ANCHOR_END: terminal_prompter
    /// One line read, trimmed; `None` at end of input or on error, or when the user (Ctrl+C)
    /// or a signal (SIGTERM, SIGHUP) stopped the turn while it waited: a denial, after which
    /// the loop records the interruption.
    fn read_line(&mut self) -> Option<String> {
        if let Some(fd) = self.tty {
            return read_terminal_line(fd);
        }
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim().to_string()),
        }
    }

    fn say(&mut self, text: &str) {
        let _ = self.output.write_all(text.as_bytes());
        let _ = self.output.flush();
    }
}

// ANCHOR: read_terminal_line

/// Reads one line from the terminal `fd` (canonical mode: `poll` says readable once a whole
/// line is there), checking the interrupt flag every 50 ms while nothing is typed.
fn read_terminal_line(fd: i32) -> Option<String> {
    let mut line = Vec::new();
    let mut buffer = [0u8; 1024];
    loop {
        match read_when_ready(fd, &mut buffer, crate::ch02_loop::interrupted) {
            Ready::Bytes(count) => {
                line.extend_from_slice(&buffer[..count]);
                if line.ends_with(b"\n") {
                    break;
                }
            }
            Ready::End { .. } if !line.is_empty() => break,
            Ready::End { .. } | Ready::Stopped | Ready::Failed => return None,
        }
    }
    Some(String::from_utf8_lossy(&line).trim().to_string())
}
// ANCHOR_END: read_terminal_line

// ANCHOR: ask
impl Prompter for TerminalPrompter {
    fn ask(&mut self, call: &ToolCall, needed: Permission) -> Answer {
        self.say("\n");
        let answer = ask_with(call, needed, |question| {
            question_open(true);
            self.say(question);
            self.read_line()
        });
        question_open(false);
        answer
    }
}

// ANCHOR_END: ask
// ANCHOR: ask_with
/// The question and its rules, whatever the line source: `ask` shows a question and
/// returns the next line typed, or `None` when nobody can answer (Ctrl+D, no terminal),
/// which is a denial. `n` may carry the reason on the same line (`n use cargo check`). A
/// command too long to show whole is shown as head and tail, and `y`/`a` are refused until
/// `v` has shown all of it: nothing is approved unseen.
pub fn ask_with(call: &ToolCall, needed: Permission, mut ask: impl FnMut(&str) -> Option<String>) -> Answer {
    let shown = describe(call);
    let mut viewed = shown.hidden == 0;
    let view = if viewed { "" } else { "  [v] view all" };
    let allow = format!("allow? [y] once  [a] all {} this session  [n] no{view}: ", needed.scope);
    let mut question = format!("{}\n{allow}", shown.text);
    loop {
        let Some(answer) = ask(&question) else {
            return Answer::Deny("no answer from the terminal".into());
        };
        let answer = answer.trim();
        let (word, reason) = answer.split_once(char::is_whitespace).unwrap_or((answer, ""));
        // ANCHOR_END: ask_with
        // ANCHOR: ask_with_answers
        match (word.to_lowercase().as_str(), reason.trim()) {
            ("y" | "yes" | "a" | "always", "") if !viewed => {
                question = format!(
                    "{} characters of this call are hidden: answer v to see all of it first\n{allow}",
                    shown.hidden
                );
            }
            ("y" | "yes", "") => return Answer::Once,
            ("a" | "always", "") => return Answer::Always,
            ("n" | "no", "") => {
                return Answer::Deny(
                    ask("reason for the model (optional, Enter to skip): ").unwrap_or_default(),
                );
            }
            ("n" | "no", reason) => return Answer::Deny(reason.to_string()),
            ("v" | "view", "") => {
                viewed = true;
                question = format!("{}\n{allow}", shown.whole);
            }
            _ => {
                let or_view = if viewed { "" } else { "; v shows the whole command" };
                question =
                    format!("please answer y, a or n (n may be followed by a reason){or_view}\n{allow}")
            }
        }
    }
}
// ANCHOR_END: ask_with_answers

// ANCHOR: describe
/// Longer than this, a call is shown as head and tail, with the count of what is hidden.
const SHOW_WHOLE_UP_TO: usize = 2_000;
const HEAD_CHARS: usize = 1_200;
const TAIL_CHARS: usize = 600;

/// What the question shows: `text` (whole, or head and tail), `whole` for `v`, and how many
/// characters `text` hides.
struct Described {
    text: String,
    whole: String,
    hidden: usize,
}
// ANCHOR_END: describe

/// The question about `call`, whole, as a person is asked it: for a host that shows it in a
/// page of its own rather than at a terminal (chapter 21).
#[cfg(feature = "ch21")]
pub fn question(call: &ToolCall) -> String {
    describe(call).whole
}

// ANCHOR: describe_call
/// What the user is asked about: the command, or the file and the size of the change. Every
/// piece the model wrote goes through chapter 4's sanitiser, so a `\r` or an escape sequence
/// cannot redraw the question, and a run of blanks cannot push the end of a command away.
fn describe(call: &ToolCall) -> Described {
    let arguments: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    let text = |key: &str| sanitize_command(arguments[key].as_str().unwrap_or("?"));
    let whole = match call.name.as_str() {
        "bash" => format!("bash wants to run: {}", text("command")),
        "write_file" => {
            let bytes = arguments["content"].as_str().map_or(0, str::len);
            format!("write_file wants to write {} to {}", plural(bytes, "byte"), text("path"))
        }
        "edit_file" => format!("edit_file wants to change {}", text("path")),
        other => {
            format!("{} wants to run with {}", sanitize_command(other), sanitize_command(&call.arguments))
        }
    };
    let Some((head, hidden, tail)) = head_and_tail(&whole, SHOW_WHOLE_UP_TO, HEAD_CHARS, TAIL_CHARS) else {
        return Described { text: whole.clone(), whole, hidden: 0 };
    };
    let text = format!("{head}\n[… {hidden} characters hidden; answer v to see them …]\n{tail}");
    Described { text, whole, hidden }
}
// ANCHOR_END: describe_call
/// The flags that grant chapter 3's two permissions up front.
pub const ALLOW_WRITE: Flag =
    Flag::switch(12, WRITE.flag, &["let the agent write and edit files inside the root"]);
pub const ALLOW_SHELL: Flag =
    Flag::switch(12, SHELL.flag, &["let the agent run shell commands (not a sandbox!)"]);

pub fn register(registry: &mut dyn Registry) {
    registry.flag(ALLOW_WRITE);
    registry.flag(ALLOW_SHELL);
    let help = |section, lines| Help { chapter: 12, page: "", section, lines };
    registry.help(help(
        "EXAMPLES",
        &[
            "  mini-agent --demo --allow-write -p \"create hello.txt containing hello\"",
            "  mini-agent --allow-write --allow-shell -p \"make the tests pass\"",
        ],
    ));
    registry.help(help(
        "PERMISSIONS",
        &[
            "  Without --allow-write / --allow-shell, writes and shell commands are asked for at the",
            "  terminal (y once, a always, n deny with a reason); with no terminal to ask (a pipe, a",
            "  script, --json) they are refused and the model is told which flag would allow them.",
        ],
    ));
}

/// The permissions the command line granted: every permission whose flag was given (chapter
/// 18's `--allow-mcp` too, without this chapter knowing it).
pub fn granted(settings: &Settings) -> Permissions {
    Permissions::granting(settings.switches())
}

// ANCHOR: asker
/// Who answers "may this call run?" when the flags did not allow it: the command line chooses
/// by mode (a terminal for `-p`, the REPL's reader, nobody for a script or `--json`).
#[derive(Clone)]
pub enum Asker {
    /// Nobody: the call is denied with a result that names the flag.
    Nobody,
    /// `-p` on a terminal: ask on /dev/tty.
    Tty,
    /// The REPL: ask through the queue that reads lines during a turn.
    TypeAhead(TypeAhead),
    /// A host with a way of its own (chapter 21's service asks over HTTP): it makes each
    /// gate's prompter.
    #[cfg(feature = "ch21")]
    Host(std::sync::Arc<dyn Fn() -> Box<dyn Prompter> + Send + Sync>),
}

/// This chapter's layer: `tools` behind a gate that grants what the flags granted and asks
/// `asker` about the rest.
pub fn gate<T: Guarded>(tools: T, settings: &Settings, asker: &Asker) -> Gate<T> {
    let prompter: Option<Box<dyn Prompter>> = match asker {
        Asker::Nobody => None,
        Asker::Tty => TerminalPrompter::open_tty().map(|tty| Box::new(tty) as Box<dyn Prompter>),
        Asker::TypeAhead(queue) => Some(Box::new(TypeAheadPrompter(queue.clone()))),
        #[cfg(feature = "ch21")]
        Asker::Host(prompter) => Some(prompter()),
    };
    Gate::new(tools, granted(settings), prompter)
}
// ANCHOR_END: asker

// ANCHOR: repl_prompter
/// Asks for a permission during a REPL turn: the question on stderr, the answer from the
/// queue of lines typed meanwhile (the REPL's reader thread owns stdin then).
struct TypeAheadPrompter(TypeAhead);

impl Prompter for TypeAheadPrompter {
    fn ask(&mut self, call: &ToolCall, needed: Permission) -> Answer {
        ask_with(call, needed, |question| self.0.ask(question))
    }
}
// ANCHOR_END: repl_prompter

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use std::sync::{Arc, Mutex};

    /// Records the calls it ran.
    struct Recorder(Vec<String>);
    impl Tools for Recorder {
        fn schemas(&self) -> Vec<Value> {
            vec![serde_json::json!({"name": "read_file"})]
        }
        fn run(&mut self, call: &ToolCall) -> ToolOutput {
            self.0.push(call.name.clone());
            ToolOutput { content: format!("ran {}", call.name), status: ToolStatus::Ok }
        }
    }
    /// The workspace's policy, and a tool of its own that needs a permission of its own.
    impl Guarded for Recorder {
        fn permission(&self, call: &ToolCall) -> Option<Permission> {
            match call.name.as_str() {
                "deploy" => Some(DEPLOY),
                "write_file" | "edit_file" => Some(WRITE),
                "bash" => Some(SHELL),
                _ => None,
            }
        }
    }
    const DEPLOY: Permission = Permission { flag: "--allow-deploy", activity: "deploying", scope: "deploys" };

    /// What a scripted prompter was asked: tool name and permission, in order.
    type Asked = Arc<Mutex<Vec<(String, Permission)>>>;

    /// Answers from a script and records what it was asked.
    struct Scripted {
        answers: Vec<Answer>,
        asked: Asked,
    }
    impl Prompter for Scripted {
        fn ask(&mut self, call: &ToolCall, needed: Permission) -> Answer {
            self.asked.lock().unwrap().push((call.name.clone(), needed));
            self.answers.remove(0)
        }
    }

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall { id: "1".into(), name: name.into(), arguments: arguments.into() }
    }

    fn gate(granted: Permissions, answers: Vec<Answer>) -> (Gate<Recorder>, Asked) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let prompter = Scripted { answers, asked: Arc::clone(&asked) };
        (Gate::new(Recorder(Vec::new()), granted, Some(Box::new(prompter))), asked)
    }

    #[test]
    fn reads_are_free_and_schemas_pass_through() {
        let (mut gate, asked) = gate(Permissions::default(), vec![]);
        for name in ["read_file", "list_files", "search", "no_such_tool"] {
            assert_eq!(gate.run(&call(name, "{}")).status, ToolStatus::Ok);
        }
        assert!(asked.lock().unwrap().is_empty());
        assert_eq!(gate.schemas(), vec![serde_json::json!({"name": "read_file"})]);
    }

    #[test]
    fn flags_grant_without_asking() {
        let granted = Permissions::granting(["--allow-write", "--allow-shell", "--allow-deploy"]);
        let (mut gate, asked) = gate(granted, vec![]);
        assert_eq!(gate.run(&call("deploy", "{}")).content, "ran deploy");
        for name in ["write_file", "edit_file", "bash"] {
            assert_eq!(gate.run(&call(name, "{}")).content, format!("ran {name}"));
        }
        assert!(asked.lock().unwrap().is_empty());
    }

    #[test]
    fn without_a_prompter_the_denial_names_the_flag() {
        let mut gate = Gate::new(Recorder(Vec::new()), Permissions::granting(["--allow-write"]), None);
        let denied = gate.run(&call("bash", r#"{"command":"ls"}"#));
        assert_eq!(
            denied,
            ToolOutput {
                content: "denied: running shell commands needs permission; rerun with --allow-shell (or approve at the prompt in the REPL)".into(),
                status: ToolStatus::Denied,
            }
        );
        assert_eq!(gate.run(&call("edit_file", "{}")).status, ToolStatus::Ok);
        let mut gate = Gate::new(Recorder(Vec::new()), Permissions::default(), None);
        assert!(gate.run(&call("write_file", "{}")).content.contains("rerun with --allow-write"));
        assert!(
            gate.run(&call("deploy", "{}"))
                .content
                .starts_with("denied: deploying needs permission; rerun with --allow-deploy")
        );
        assert!(gate.inner().0.is_empty(), "nothing ran");
    }

    #[test]
    fn once_asks_again_always_does_not_deny_passes_the_reason() {
        let answers = vec![
            Answer::Once,
            Answer::Deny("use cargo check".into()),
            Answer::Always,
            Answer::Deny(String::new()),
        ];
        let (mut gate, asked) = gate(Permissions::default(), answers);
        assert_eq!(gate.run(&call("bash", "{}")).status, ToolStatus::Ok);
        let denied = gate.run(&call("bash", "{}"));
        assert_eq!(denied.status, ToolStatus::Denied);
        assert_eq!(
            denied.content,
            "denied: the user did not allow this bash call. Their reason: use cargo check"
        );
        assert_eq!(gate.run(&call("bash", "{}")).status, ToolStatus::Ok); // answered `a`
        assert_eq!(gate.run(&call("bash", "{}")).status, ToolStatus::Ok); // not asked again
        assert!(gate.granted().allows(SHELL));
        let write_denied = gate.run(&call("write_file", "{}"));
        assert_eq!(
            write_denied.content,
            "denied: the user did not allow this write_file call; do not retry it as is"
        );
        let asked: Vec<(String, Permission)> = asked.lock().unwrap().clone();
        let expected = [("bash", SHELL), ("bash", SHELL), ("bash", SHELL), ("write_file", WRITE)];
        assert_eq!(asked, expected.map(|(name, permission)| (name.to_string(), permission)));
        assert_eq!(gate.inner().0, ["bash", "bash", "bash"]);
    }

    #[test]
    fn the_gate_keeps_real_tools_from_writing_until_allowed() {
        use crate::ch03_tools::Workspace;
        let temp = crate::temp_dir::TempDir::new("gate");
        let root = temp.path();
        let write = call("write_file", r#"{"path":"new.txt","content":"hi"}"#);
        let mut closed = Gate::new(Workspace::new(root).unwrap(), Permissions::default(), None);
        assert_eq!(closed.run(&write).status, ToolStatus::Denied);
        assert!(!root.join("new.txt").exists());
        assert_eq!(closed.run(&call("list_files", "{}")).content, "`.` is empty");
        let allowed = Permissions::granting(["--allow-write"]);
        let mut open = Gate::new(Workspace::new(root).unwrap(), allowed, None);
        assert_eq!(open.run(&write).content, "created `new.txt`: wrote 2 bytes (+1 −0)");
        assert_eq!(std::fs::read_to_string(root.join("new.txt")).unwrap(), "hi");
    }

    /// Output that the test can read after the prompter wrote to it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn terminal(input: &str) -> (TerminalPrompter, Shared) {
        let screen = Shared::default();
        let prompter =
            TerminalPrompter::new(Box::new(Cursor::new(input.to_string())), Box::new(screen.clone()));
        (prompter, screen)
    }

    #[test]
    fn the_terminal_prompt_reads_y_a_n_and_a_reason() {
        let bash = call("bash", r#"{"command":"rm -rf build"}"#);
        let (mut prompter, screen) = terminal("maybe\ny\n");
        assert_eq!(prompter.ask(&bash, SHELL), Answer::Once);
        let shown = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
        assert!(shown.contains("bash wants to run: rm -rf build"));
        assert!(shown.contains("please answer y, a or n"));
        let (mut prompter, _) = terminal("n keep the build dir\n");
        assert_eq!(prompter.ask(&bash, SHELL), Answer::Deny("keep the build dir".into()));
        let (mut prompter, _) = terminal("A\n");
        assert_eq!(prompter.ask(&bash, SHELL), Answer::Always);
        let (mut prompter, _) = terminal("n\nkeep the build dir\n");
        assert_eq!(prompter.ask(&bash, SHELL), Answer::Deny("keep the build dir".into()));
        let (mut prompter, _) = terminal("");
        assert_eq!(prompter.ask(&bash, SHELL), Answer::Deny("no answer from the terminal".into()));
        let write = call("write_file", r#"{"path":"a.txt","content":"hello"}"#);
        let (mut prompter, screen) = terminal("y\n");
        prompter.ask(&write, WRITE);
        let shown = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
        assert!(shown.contains("write_file wants to write 5 bytes to a.txt"));
    }

    #[test]
    fn nothing_is_approved_unseen() {
        let hidden = format!("echo {}; touch X; {}", "a".repeat(2_000), "b".repeat(2_000));
        let long = call("bash", &serde_json::json!({ "command": hidden }).to_string());
        let (mut prompter, screen) = terminal("y\na\nv\ny\n");
        assert_eq!(prompter.ask(&long, SHELL), Answer::Once);
        let shown = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
        let (before, after) = shown.split_once("[v] view all").unwrap();
        assert!(!before.contains("touch X") && before.contains("characters hidden; answer v"), "{before}");
        assert_eq!(after.matches("characters of this call are hidden").count(), 2, "{after}");
        assert!(after.contains(&hidden), "v shows the whole command");
        let rewritten = call("bash", r#"{"command":"rm -rf ~\r\u001b[2Kls"}"#);
        let (mut prompter, screen) = terminal("");
        assert_eq!(prompter.ask(&rewritten, SHELL), Answer::Deny("no answer from the terminal".into()));
        let shown = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
        assert!(shown.contains("bash wants to run: rm -rf ~\\r\\x1b[2Kls"), "{shown:?}");
    }
}
