//! The sandbox of a run, as the command line chooses it.
//!
//! `--sandbox` (else `MINI_AGENT_SANDBOX`, else `workspace`) picks the mode and `--allow-net`
//! opens the network. The composition root asks for the run's sandbox once, and hands it
//! every workspace it makes — the model's tools in each session, the task loop's verify
//! commands, the service's sessions — so one set of layers, one private `TMPDIR` and one
//! start-up line serve the whole run. A service may run sessions in directories below its
//! root: each other root gets a sandbox of its own the first time, so that its `.mini_agent/`
//! is read-only too. `--sandbox off` builds nothing, and still says so where the mode is
//! named: the permission question, the session's `sandbox` record and `/stats`.

use super::{Mode, Sandbox};
use crate::ch02_loop::Error;
use crate::ch02_loop::command_line::{Flag, Help, Settings, Takes, VERBOSE};
use crate::ch03_tools::Workspace;
use crate::ch03_tools::confinement::Confinement;
use crate::ch05_sessions::parts::{Layer, RunPart, SessionInput, Stack, Toolbox};
use crate::ch05_sessions::{Append, Body, Parts, RegisterParts};
use crate::ch15_tasks::{RegisterTaskLayers, TaskLayer, TaskRun, shared};
use std::any::Any;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError};

// ANCHOR: flags
pub const SANDBOX: Flag = Flag::value(
    20,
    "--sandbox",
    Takes::OneOf("MODE", &["workspace", "read-only", "off", "require"]),
    &[
        "how bash and verify commands are confined (Linux): workspace",
        "(default: writes in the root and a private TMPDIR), read-only,",
        "off, or require (refuse what this machine cannot enforce)",
    ],
);
pub const ALLOW_NET: Flag = Flag::switch(20, "--allow-net", &["let sandboxed commands use the network"]);
/// The default for `--sandbox`.
pub const SANDBOX_VARIABLE: &str = "MINI_AGENT_SANDBOX";

pub fn register(registry: &mut (impl RegisterParts + RegisterTaskLayers)) {
    registry.part("sandbox", |run| Ok(Box::new(RunSandbox::for_run(run.root, run.settings)?)));
    registry.flag(SANDBOX);
    registry.flag(ALLOW_NET);
    registry.task_layer(task_layer);
    let help = |section, lines| Help { chapter: 20, page: "", section, lines };
    registry.help(help(
        "PERMISSIONS",
        &[
            "  On Linux, unless --sandbox off, bash and verify commands run in a sandbox: they write",
            "  only in the root and a private TMPDIR, reach no network (without --allow-net), signal",
            "  nothing outside, and cannot write .mini_agent/ or .git's hooks and config (this needs",
            "  user namespaces). After each command a planted .git/commondir is moved to",
            "  .mini_agent/quarantine/, and new submodules or nested .git are reported: read the note",
            "  before running git there. What this machine cannot enforce is said at start-up.",
            "  Hooks and MCP servers are programs you approved: they run unconfined.",
        ],
    ));
    registry.help(help(
        "ENVIRONMENT",
        &["  MINI_AGENT_SANDBOX         default for --sandbox: workspace, read-only, off or require"],
    ));
}
// ANCHOR_END: flags

// ANCHOR: run_sandbox
/// The run's sandbox: its mode, and the sandbox built for each root commands run in (none
/// under `--sandbox off`). Cloned with the run's configuration; the clones share it.
#[derive(Clone)]
pub struct RunSandbox {
    mode: Mode,
    allow_net: bool,
    built: Arc<Mutex<Vec<Arc<Sandbox>>>>,
    /// The sessions whose journal already says so in this run.
    recorded: Arc<Mutex<Vec<String>>>,
}

impl RunSandbox {
    /// The sandbox the flags (or `MINI_AGENT_SANDBOX`) ask for, built for `root` now: every
    /// probe and the namespaces are made once, before any command or thread needs them.
    pub fn for_run(root: &Path, settings: &Settings) -> Result<RunSandbox, Error> {
        let word = match settings.value(&SANDBOX) {
            Some(word) => Some(word.to_string()),
            None => std::env::var(SANDBOX_VARIABLE).ok().filter(|word| !word.is_empty()),
        };
        // The flag's word was checked by the parser; only the variable's can be wrong here.
        let mode = match word {
            Some(word) => Mode::parse(&word).ok_or_else(|| {
                Error::Config(format!(
                    "{SANDBOX_VARIABLE}={word:?} is not a sandbox mode: use {} (or unset it)",
                    Mode::WORDS
                ))
            })?,
            None => Mode::Workspace,
        };
        let allow_net = settings.has(&ALLOW_NET);
        let run = RunSandbox { mode, allow_net, built: Arc::default(), recorded: Arc::default() };
        run.sandbox_for(root)?;
        Ok(run)
    }
    // ANCHOR_END: run_sandbox

    // ANCHOR: per_root

    /// `workspace`, its shell commands confined by the sandbox of its root.
    pub fn confine(&self, workspace: Workspace) -> Result<Workspace, Error> {
        let confinement: Arc<dyn Confinement> = match self.sandbox_for(workspace.root())? {
            Some(sandbox) => sandbox,
            None => Arc::new(Off),
        };
        Ok(workspace.confined(confinement))
    }

    /// The sandbox of `root`, built the first time it is asked for; `None` when off.
    fn sandbox_for(&self, root: &Path) -> Result<Option<Arc<Sandbox>>, Error> {
        if self.mode == Mode::Off {
            return Ok(None);
        }
        let mut built = self.built.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sandbox) = built.iter().find(|sandbox| sandbox.root() == root) {
            return Ok(Some(Arc::clone(sandbox)));
        }
        let sandbox = Arc::new(Sandbox::new(root, self.mode, self.allow_net)?);
        built.push(Arc::clone(&sandbox));
        Ok(Some(sandbox))
    }

    // ANCHOR_END: per_root

    /// The sandbox of the run's root, the first one built.
    pub(super) fn first(&self) -> Option<Arc<Sandbox>> {
        self.built.lock().unwrap_or_else(PoisonError::into_inner).first().cloned()
    }

    // ANCHOR: start_up
    /// The start-up line, when there is one to say: always when this machine falls short of
    /// what the mode promises (a warning); otherwise only when `asked` (the REPL's banner,
    /// `-v`), so that a plain `-p` on a fully protected machine prints its answer alone.
    pub fn start_up_line(&self, asked: bool) -> Option<String> {
        match self.first() {
            Some(sandbox) => (asked || sandbox.falls_short()).then(|| sandbox.start_up_line()),
            None => asked.then(|| {
                "mini-agent: sandbox off: bash and verify commands run with all your rights".to_string()
            }),
        }
    }
    // ANCHOR_END: start_up

    /// The mode as `/stats` names it: `workspace, no network`.
    pub fn label(&self) -> String {
        match self.first() {
            Some(sandbox) => sandbox.label(),
            None => Off.label(),
        }
    }

    /// Records the mode in session `session`, the first time this run opens it (new or
    /// resumed; once, however often a service or `/resume` opens it again): how its commands ran.
    pub fn record(&self, session: &str, log: &mut dyn Append) -> Result<(), Error> {
        let mut recorded = self.recorded.lock().unwrap_or_else(PoisonError::into_inner);
        if recorded.iter().any(|id| id == session) {
            return Ok(());
        }
        let (mode, network, not_enforced) = match self.first() {
            Some(sandbox) => (self.mode, self.allow_net, sandbox.not_enforced()),
            None => (Mode::Off, true, Vec::new()),
        };
        log.append(Body::Sandbox { mode: mode.name().to_string(), network, not_enforced })?;
        recorded.push(session.to_string());
        Ok(())
    }
}

/// This chapter's layer of `tasks run`: verify commands start in the run's sandbox, as `bash`
/// does, and the start-up line is said once, before the first attempt.
pub fn task_layer<'a>(run: &TaskRun<'a>) -> Result<Box<dyn TaskLayer + 'a>, Error> {
    Ok(Box::new(ConfinedVerify(*run)))
}

struct ConfinedVerify<'a>(TaskRun<'a>);

impl TaskLayer for ConfinedVerify<'_> {
    fn workspace(&mut self, workspace: Workspace, parts: &Parts) -> Result<Workspace, Error> {
        let sandbox = shared::<RunSandbox>(parts)?;
        if let Some(line) = sandbox.start_up_line(self.0.settings.has(&VERBOSE)) {
            (self.0.say)(&line);
        }
        sandbox.confine(workspace)
    }
}

/// `--sandbox off`: nothing is confined; the question still says so.
struct Off;

impl Off {
    fn label(&self) -> String {
        "off (commands run with all your rights)".to_string()
    }
}

impl Confinement for Off {
    fn confine(&self, _command: &mut Command) -> Result<(), String> {
        Ok(())
    }

    fn explain(&self, _output: &str) -> Option<String> {
        None
    }

    fn started_inside(&self, _pid: i32) -> bool {
        false
    }

    fn describe(&self) -> String {
        "no sandbox: --sandbox off".to_string()
    }

    fn after_command(&self) -> Option<String> {
        None
    }
}

/// This chapter's part in every session: the workspace's commands start in the sandbox (the
/// innermost layer), each new journal says which, and so do the start-up line and `/stats`.
impl RunPart for RunSandbox {
    fn layer(&self) -> Option<Layer> {
        Some(Layer::Confinement)
    }
    fn wrap(&self, toolbox: Toolbox, _: &SessionInput) -> Result<Toolbox, Error> {
        let workspace = self.confine(toolbox.tools.workspace(Layer::Confinement)?)?;
        Ok(Toolbox { tools: Stack::Workspace(workspace), ..toolbox })
    }
    fn record(&self, session: &str, log: &mut dyn Append) -> Result<(), Error> {
        RunSandbox::record(self, session, log)
    }
    fn start_up_line(&self, asked: bool) -> Option<String> {
        RunSandbox::start_up_line(self, asked)
    }
    fn stats_line(&self) -> Option<String> {
        Some(format!("sandbox      {}", self.label()))
    }
    fn clone_part(&self) -> Box<dyn RunPart> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
