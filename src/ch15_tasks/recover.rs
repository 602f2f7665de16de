//! After a crash: a task still `in_progress` when no run is alive.
//!
//! `kill -9` (or a power cut) stops the loop between two saves of the task list, so the list
//! says `in_progress` and names the attempt's session. That session is an ordinary journal,
//! and chapter 10 already knows how to read where it stopped. The rule is the one `-c` keeps:
//! a tool call that started and never finished has an unknown outcome, and nothing goes on
//! until a person has looked and said so with `--acknowledge-unknown` (the session then gets
//! the synthetic "unknown" result). Otherwise the cut-off attempt counts as an attempt and
//! the task is pending again — and, when the loop commits, what the attempt had changed is set
//! aside and the tree put back, as after any attempt that did not pass.

use super::file::{Task, TaskStatus, touch, update};
use super::git::Git;
use crate::ch02_loop::Error;
use crate::ch05_sessions::{SessionStore, session_error};
use crate::ch10_recovery::{SessionState, SessionStatus, resume, status_of};
use std::path::Path;

/// The task left in progress, with the state of its last session when it has one.
pub struct Stale {
    pub task: Task,
    pub session: Option<Result<SessionStatus, String>>,
}

/// The tasks marked `in_progress`, each with its last session's state.
pub fn stale_tasks(tasks: &[Task], root: &Path) -> Vec<Stale> {
    let store = SessionStore::new(root);
    tasks
        .iter()
        .filter(|task| task.status == TaskStatus::InProgress)
        .map(|task| Stale {
            task: task.clone(),
            session: task.sessions.last().map(|id| status_of(&store.path_of(id)).map_err(|e| e.to_string())),
        })
        .collect()
}

/// Makes every stale task pending again, or refuses (see [`check_session`]); with `git`, sets
/// aside what its attempt changed. Returns a line per task put back.
pub fn recover(
    tasks_file: &Path,
    root: &Path,
    git: Option<&Git>,
    acknowledge_unknown: bool,
) -> Result<Vec<String>, Error> {
    let current = super::file::TaskFile::load(tasks_file)?;
    let mut notes = Vec::new();
    for stale in stale_tasks(&current.tasks, root) {
        let session = check_session(&stale, root, acknowledge_unknown)?;
        let (id, attempt) = (&stale.task.id, stale.task.attempts);
        let kept = match git {
            Some(git) => git.set_aside(id, attempt, "cut off: mini-agent stopped during it")?,
            None => None,
        };
        update(tasks_file, |file| {
            let task = file.find_mut(id)?;
            task.status = TaskStatus::Pending;
            task.last_error = Some(format!(
                "attempt {attempt} was cut off: mini-agent stopped during it (session {session})"
            ));
            if kept.is_some() {
                task.set_aside = kept.as_ref().map(|kept| kept.reference.clone());
            }
            touch(task);
            Ok(())
        })?;
        let mut note = format!("task {id} was cut off during attempt {attempt}; it is pending again");
        if let Some(kept) = &kept {
            note.push_str(&format!("; {}", kept.describe()));
        }
        notes.push(note);
    }
    Ok(notes)
}

// ANCHOR: check_session
/// Whether the loop may go on past a stale task: not while a process holds its session, and
/// not over an unknown outcome unless acknowledged — which is then recorded in the session.
/// Returns the session's id.
fn check_session(stale: &Stale, root: &Path, acknowledge_unknown: bool) -> Result<String, Error> {
    let id = &stale.task.id;
    let session = stale.task.sessions.last().cloned().unwrap_or_default();
    match &stale.session {
        Some(Ok(status)) if status.in_use_by.is_some() => Err(session_error(format!(
            "task {id} is being attempted right now (session {session} is open in mini-agent pid {}); \
             one tasks run at a time",
            status.in_use_by.unwrap_or_default()
        ))),
        Some(Ok(status))
            if matches!(status.state, SessionState::UnknownOutcomes(_)) && !acknowledge_unknown =>
        {
            Err(session_error(format!(
                "task {id} was in progress when mini-agent stopped, and its session {session} has a tool call \
                 of unknown outcome: inspect the workspace (mini-agent -r {session} --status), then run \
                 tasks run --acknowledge-unknown"
            )))
        }
        Some(Ok(status)) if matches!(status.state, SessionState::UnknownOutcomes(_)) => {
            // Records the "unknown, the user looked" result, so the journal is whole again.
            drop(resume(&SessionStore::new(root).path_of(&session), true)?);
            Ok(session)
        }
        _ => Ok(session),
    }
}
// ANCHOR_END: check_session
