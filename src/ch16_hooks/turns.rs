//! Chapter 16 in every turn of a session: the `Stop` hooks when a turn ends, and a `hook`
//! record in the journal for each hook that ran during it, in the order they ran.

use super::{HookEvent, Hooks};
use crate::ch02_loop::{Message, Outcome, ToolCall};
use crate::ch04_terminal::sanitize::sanitize;
use crate::ch05_sessions::parts::{Layer, RunInput, RunPart, SessionInput, Stack, Toolbox};
use crate::ch05_sessions::{Append, Body, TurnHook};
use serde_json::{Map, json};
use std::any::Any;

/// This chapter's part in every session: the hooks around the tools, outside chapter 12's gate
/// so that a hook refuses a call before anyone is asked, and the `Stop` hooks in each turn.
impl RunPart for Hooks {
    fn layer(&self) -> Option<Layer> {
        Some(Layer::Hooks)
    }
    fn wrap(&self, toolbox: Toolbox, _: &SessionInput) -> Result<Toolbox, crate::ch02_loop::Error> {
        let hooked = super::Hooked::new(toolbox.tools.boxed(), self.clone());
        Ok(Toolbox { tools: Stack::Boxed(Box::new(hooked)), ..toolbox })
    }
    fn turn_hook(&self) -> Option<Box<dyn TurnHook>> {
        Some(Box::new(HookTurns(self.clone())))
    }
    fn clone_part(&self) -> Box<dyn RunPart> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The hooks of the run's root, if they may run, reading the `sections` later chapters add
/// to the file (chapter 17's `webhook`): made once per run.
pub fn part(run: &RunInput, sections: &[super::Section]) -> Box<dyn RunPart> {
    Box::new(super::load_for_run(run.root, run.settings.has(&super::TRUST_HOOKS), run.can_ask, sections))
}

// ANCHOR: turns
/// The workspace's hooks, in one session's turns.
pub struct HookTurns(pub Hooks);

impl TurnHook for HookTurns {
    /// The hooks are told which session they run for.
    fn begin(&mut self, session: &str, _: &Message) {
        self.0.log().set_session(session);
    }

    /// The `Stop` hooks (unless the turn was interrupted), then one journal record per hook
    /// that ran during the turn.
    fn end(&mut self, outcome: &Outcome, log: &mut dyn Append) {
        let reason = match outcome {
            Outcome::Completed(_) => Some("completed"),
            Outcome::TurnLimit => Some("turn_limit"),
            Outcome::Failed(_) => Some("failed"),
            Outcome::Interrupted => None,
        };
        if let Some(reason) = reason {
            let fields = Map::from_iter([("reason".to_string(), json!(reason))]);
            self.0.fire(HookEvent::Stop, None::<&ToolCall>, fields);
        }
        for record in self.0.log().take() {
            let event = format!("{:?}", record.event);
            let body = Body::Hook {
                event,
                command: record.command,
                tool_call_id: record.tool_call_id,
                outcome: record.outcome,
            };
            if let Err(error) = log.append(body) {
                eprintln!("mini-agent: warning: could not record a hook: {}", sanitize(&error.to_string()));
            }
        }
    }
}
// ANCHOR_END: turns
