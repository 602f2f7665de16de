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

use crate::ch02_loop::command_line::{Flag, Help, Settings};
use crate::ch02_loop::{ToolCall, ToolOutput, ToolStatus, Tools};
use crate::ch03_tools::{Change, Workspace};
use crate::ch04_terminal::TypeAhead;
use crate::ch05_sessions::parts::{Answerer, Layer, RegisterParts, RunPart, SessionInput, Stack, Toolbox};
pub use crate::ch12_question::{TerminalPrompter, ask_with, colour_wanted};
use serde_json::Value;
use serde_json::json;
use std::any::Any;
use std::io::IsTerminal;
use std::sync::Arc;

// ANCHOR: policy
/// Tools that say which permission a call needs (`None`: it only reads, and is free). The gate
/// asks the tools, so it knows no tool by name: a later chapter's tools (chapter 18's MCP
/// servers) bring their own permission.
pub trait Guarded: Tools {
    fn permission(&self, call: &ToolCall) -> Option<Permission>;

    /// What the call would change, for the question to show (chapter 3's writes and edits
    /// say, worked out from the file as it is now); by default nothing.
    fn change(&self, _call: &ToolCall) -> Option<Change> {
        None
    }

    /// How `call` would run, for the question (chapter 20's sandbox names its mode); `None`
    /// says nothing more.
    fn runs_in(&self, _call: &ToolCall) -> Option<String> {
        None
    }
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

    fn change(&self, call: &ToolCall) -> Option<Change> {
        self.proposed_change(call)
    }

    fn runs_in(&self, call: &ToolCall) -> Option<String> {
        (call.name == "bash").then(|| self.confinement()).flatten()
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
    /// Nobody can answer here (`--json`: a program reads): denied, and the denial names the
    /// flag, as when there is no one to ask at all.
    Nobody,
}

/// What the person is asked about: the call, the permission it needs, for a write or an
/// edit the change it would make, worked out by the tools from the file as it is now, and for
/// a command where it would run (chapter 20's sandbox names its mode).
pub struct Question<'a> {
    pub call: &'a ToolCall,
    pub needed: Permission,
    pub change: Option<Change>,
    pub runs_in: Option<String>,
}

/// Asks the user about one call.
pub trait Prompter {
    fn ask(&mut self, question: &Question) -> Answer;
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
        let Some(prompter) = self.prompter.as_mut() else {
            return nobody_to_ask(needed);
        };
        // The change is worked out only now, when someone will look at it.
        let question =
            Question { call, needed, change: self.inner.change(call), runs_in: self.inner.runs_in(call) };
        let answer = prompter.ask(&question);
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
            Answer::Nobody => nobody_to_ask(needed),
        }
    }
}

/// The denial when nobody can be asked: it names the flag that would allow the call.
fn nobody_to_ask(needed: Permission) -> ToolOutput {
    let content = format!(
        "denied: {} needs permission; rerun with {} (or approve at the prompt in the REPL)",
        needed.activity, needed.flag
    );
    ToolOutput { content, status: ToolStatus::Denied }
}
// ANCHOR_END: gate_run

/// The flags that grant chapter 3's two permissions up front.
pub const ALLOW_WRITE: Flag =
    Flag::switch(12, WRITE.flag, &["let the agent write and edit files inside the root"]);
pub const ALLOW_SHELL: Flag =
    Flag::switch(12, SHELL.flag, &["let the agent run shell commands without asking"]);

pub fn register(registry: &mut dyn RegisterParts) {
    registry.flag(ALLOW_WRITE);
    registry.flag(ALLOW_SHELL);
    registry.part("gate", |_| Ok(Box::new(GatePart)));
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
    /// A prompter made afresh for each gate: `--json`'s reports the question as an event and
    /// answers [`Answer::Nobody`] (chapter 14); the service's asks its client (chapter 21).
    Host(Arc<dyn Fn() -> Box<dyn Prompter> + Send + Sync>),
}

/// This chapter's layer: `tools` behind a gate that grants what the flags granted and asks
/// `asker` about the rest.
pub fn gate<T: Guarded>(tools: T, settings: &Settings, asker: &Asker) -> Gate<T> {
    let prompter: Option<Box<dyn Prompter>> = match asker {
        Asker::Nobody => None,
        Asker::Tty => TerminalPrompter::open_tty().map(|tty| Box::new(tty) as Box<dyn Prompter>),
        Asker::TypeAhead(queue) => Some(Box::new(TypeAheadPrompter(queue.clone()))),
        Asker::Host(prompter) => Some(prompter()),
    };
    Gate::new(tools, granted(settings), prompter)
}
// ANCHOR_END: asker

// ANCHOR: gate_part
impl Asker {
    /// Who asks for the person or program the mode chose (chapter 5's [`Answerer`]).
    pub fn of(answerer: &Answerer) -> Asker {
        match answerer {
            Answerer::Nobody => Asker::Nobody,
            Answerer::Terminal => Asker::Tty,
            Answerer::TypeAhead(queue) => Asker::TypeAhead(queue.clone()),
            Answerer::Events(emit) => {
                let emit = *emit;
                Asker::Host(Arc::new(move || Box::new(ApprovalEvents(emit)) as Box<dyn Prompter>))
            }
            // The service's client (chapter 21) hands over an `Asker` of its own.
            Answerer::Host(host) => host.downcast_ref::<Asker>().cloned().unwrap_or(Asker::Nobody),
        }
    }
}

/// This chapter's part in every session: the gate, right around the workspace, asking whoever
/// the mode said answers.
#[derive(Clone)]
pub struct GatePart;

impl RunPart for GatePart {
    fn layer(&self) -> Option<Layer> {
        Some(Layer::Permission)
    }
    fn wrap(&self, toolbox: Toolbox, session: &SessionInput) -> Result<Toolbox, crate::ch02_loop::Error> {
        let workspace = toolbox.tools.workspace(Layer::Permission)?;
        let gated = gate(workspace, session.settings, &Asker::of(session.answerer));
        Ok(Toolbox { tools: Stack::Boxed(Box::new(gated)), ..toolbox })
    }
    fn clone_part(&self) -> Box<dyn RunPart> {
        Box::new(GatePart)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
// ANCHOR_END: gate_part

// ANCHOR: approvals
/// `--json` asks nobody (a program reads stdout), but the program sees what a person would
/// have been asked: an `approval` event with the question and the change as a unified diff
/// (chapter 14). The call is then denied, naming the flag that would allow it.
struct ApprovalEvents(fn(Value));

impl Prompter for ApprovalEvents {
    fn ask(&mut self, question: &Question) -> Answer {
        (self.0)(json!({
            "type": "approval", "call_id": question.call.id, "name": question.call.name,
            "question": question.headline(), "diff": question.diff(),
        }));
        Answer::Nobody
    }
}
// ANCHOR_END: approvals

// ANCHOR: repl_prompter
/// Asks for a permission during a REPL turn: the question on stderr, the answer from the
/// queue of lines typed meanwhile (the REPL's reader thread owns stdin then).
struct TypeAheadPrompter(TypeAhead);

impl Prompter for TypeAheadPrompter {
    fn ask(&mut self, question: &Question) -> Answer {
        let colour = colour_wanted(std::io::stderr().is_terminal());
        ask_with(question, colour, |asking| self.0.ask(asking))
    }
}
// ANCHOR_END: repl_prompter

#[cfg(test)]
mod tests {
    use super::*;
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
        fn ask(&mut self, question: &Question) -> Answer {
            self.asked.lock().unwrap().push((question.call.name.clone(), question.needed));
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
}
