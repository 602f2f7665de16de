//! The loop: pick a task, attempt it as a session, verify, commit, go on — and stop for a
//! person when the work keeps failing.
//!
//! The loop owns no model, no terminal and no journal. An attempt is whatever [`Attempts`]
//! does with a prompt (the command line runs an ordinary session, exactly as `-p` would), the
//! proof is whatever [`Verifier`] says, and every state change goes to the task file *before*
//! the next step, so a `kill -9` at any moment leaves a list that says where things stood:
//! the task `in_progress`, with the session of the attempt that was running. An attempt that
//! does not pass has its changes set aside and the tree put back ([`super::set_aside`]), so
//! the next commit holds the next task's work alone. What happened is told to a
//! [`TaskEvents`] observer — the screen today; hooks and notifications later hang on the same
//! seam.

use super::file::{Task, TaskFile, TaskStatus, touch, update};
use super::git::Git;
use super::pick::next_pending;
use super::set_aside::SetAside;
use super::template::render;
use super::verify::{Verdict, Verifier};
use crate::ch02_loop::{Error, Outcome, interrupted};
use crate::ch07_context::repeats::Stuck;
use crate::text::{one_line, plural};
use std::path::Path;

/// One attempt's session: opened first (so its id is in the task file before anything
/// runs), then given the prompt.
pub trait Attempts {
    /// Starts a new session; returns its id.
    fn begin(&mut self) -> Result<String, Error>;
    /// Runs `prompt` to its end in the session begun last.
    fn run(&mut self, prompt: String) -> Outcome;
}

// ANCHOR: events
/// What the loop tells its observers. `task` is the task as just saved.
#[derive(Clone, Copy, Debug)]
pub enum TaskEvent<'a> {
    Started {
        task: &'a Task,
        session: &'a str,
    },
    /// An attempt ended and its verify command failed; the task may be tried again.
    AttemptFailed {
        task: &'a Task,
        output: &'a str,
    },
    Completed {
        task: &'a Task,
        commit: Option<&'a str>,
    },
    /// No attempts left: the task is `failed`.
    Failed {
        task: &'a Task,
    },
    /// Too many failures in a row: the loop stops here.
    NeedsHuman {
        task: &'a Task,
        reason: &'a str,
    },
    /// An attempt that did not pass changed files: they were kept under a ref and the tree
    /// was put back (`task.set_aside` names the ref).
    SetAside {
        task: &'a Task,
        kept: &'a SetAside,
    },
}
// ANCHOR_END: events

/// Observes the loop (chapter 16's hooks and chapter 17's notifications are observers too).
pub trait TaskEvents {
    fn event(&mut self, event: TaskEvent<'_>);
    /// The run is over, however it ended (an observer that wraps another passes it on).
    fn run_ended(&mut self) {}
}

/// The knobs of `tasks run`.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Attempts to make in this run, at most (`None`: until nothing is pending).
    pub iterations: Option<usize>,
    pub max_attempts: u32,
    pub intervention_after: u32,
}

/// How a run ended (an error, Ctrl+C included, is the `Err` side).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// Nothing is pending. `failed` counts the tasks that ran out of attempts in this run.
    Finished { done: usize, failed: usize },
    /// `--iterations` attempts were made.
    IterationsUsed { done: usize, failed: usize },
    /// The loop stopped and a person is needed: the task id and the reason.
    NeedsHuman { id: String, reason: String },
}

/// Everything the loop works with.
pub struct Loop<'a> {
    pub tasks: &'a Path,
    pub template: &'a str,
    pub attempts: &'a mut dyn Attempts,
    pub verifier: &'a mut dyn Verifier,
    /// `None`: not a git repository, or `--no-commit`.
    pub git: Option<&'a Git>,
    pub events: &'a mut dyn TaskEvents,
    pub settings: Settings,
}

impl Loop<'_> {
    // ANCHOR: run
    /// Runs iterations until nothing is pending, the iterations are used, or a person is needed.
    pub fn run(&mut self) -> Result<RunEnd, Error> {
        let (mut done, mut failed, mut failures_in_a_row, mut iterations) = (0, 0, 0, 0);
        loop {
            if self.settings.iterations.is_some_and(|most| iterations >= most) {
                return Ok(RunEnd::IterationsUsed { done, failed });
            }
            let Some(task) = self.pick()? else { return Ok(RunEnd::Finished { done, failed }) };
            iterations += 1;
            match self.attempt(task)? {
                Step::Passed => (done, failures_in_a_row) = (done + 1, 0),
                Step::FailedAttempt(id) => {
                    failures_in_a_row += 1;
                    if failures_in_a_row >= self.settings.intervention_after {
                        return self.stop_for_a_human(&id, failures_in_a_row);
                    }
                    failed += usize::from(self.give_up_if_spent(&id)?);
                }
            }
        }
    }
    // ANCHOR_END: run

    /// The next pending task, read fresh (a person may have added one meanwhile). A Ctrl+C
    /// that came between attempts (while a hook ran, or a webhook waited) stops the loop here,
    /// before another task is touched.
    fn pick(&self) -> Result<Option<Task>, Error> {
        if interrupted() {
            return Err(Error::Interrupted);
        }
        let file = TaskFile::load(self.tasks)?;
        Ok(next_pending(&file.tasks).map(|index| file.tasks[index].clone()))
    }

    // ANCHOR: attempt
    /// One attempt at `task`: a session, then the verify command, then a commit.
    fn attempt(&mut self, task: Task) -> Result<Step, Error> {
        let session = self.attempts.begin()?;
        let attempt = task.attempts + 1;
        let task = self.update(&task.id, |t| {
            t.status = TaskStatus::InProgress;
            t.attempts = attempt;
            t.sessions.push(session.clone());
        })?;
        if let Some(git) = self.git
            && let Err(error) = git.start_attempt(&task.id, attempt)
        {
            return Err(self.back_to_pending(&task, "its start could not be recorded", error));
        }
        self.events.event(TaskEvent::Started { task: &task, session: &session });
        let outcome = self.attempts.run(render(self.template, &task, attempt));
        match outcome {
            Outcome::Interrupted => {
                return Err(self.back_to_pending(&task, "interrupted", Error::Interrupted));
            }
            // The model or the network failed, not the task: the loop stops, the task waits.
            Outcome::Failed(error) if !is_the_tasks_failure(&error) => {
                return Err(self.back_to_pending(&task, &error.to_string(), error));
            }
            // Finished, out of turns or stuck: whatever was done is checked all the same.
            Outcome::Completed(_) | Outcome::TurnLimit | Outcome::Failed(_) => {}
        }
        let verdict = match &task.verify_command {
            Some(command) if !command.trim().is_empty() => self.verifier.verify(command),
            _ => Verdict::Passed, // no command: finishing is all that can be checked
        };
        self.judge(&task, verdict)
    }
    // ANCHOR_END: attempt

    // ANCHOR: judge
    /// What the verify command said decides: done and committed, or pending with its output.
    fn judge(&mut self, task: &Task, verdict: Verdict) -> Result<Step, Error> {
        match verdict {
            Verdict::Interrupted => Err(self.back_to_pending(task, "interrupted", Error::Interrupted)),
            Verdict::Passed => self.passed(task),
            Verdict::Failed(output) => {
                let kept = self.set_aside(task, "its verify command failed")?;
                let task = self.update(&task.id, |t| {
                    t.status = TaskStatus::Pending;
                    t.last_error = Some(output.clone());
                    t.set_aside = kept.as_ref().map(|kept| kept.reference.clone());
                })?;
                self.events.event(TaskEvent::AttemptFailed { task: &task, output: &output });
                if let Some(kept) = &kept {
                    self.events.event(TaskEvent::SetAside { task: &task, kept });
                }
                Ok(Step::FailedAttempt(task.id))
            }
        }
    }
    // ANCHOR_END: judge

    /// Verified: committed (when there is a repository), then marked done.
    fn passed(&mut self, task: &Task) -> Result<Step, Error> {
        let commit = match self.git {
            Some(git) => match git.commit_all(&format!("{}: {}", task.id, one_line(&task.name))) {
                Ok(commit) => commit,
                Err(error) => return Err(self.back_to_pending(task, "the commit failed", error)),
            },
            None => None,
        };
        let task = self.update(&task.id, |t| {
            t.status = TaskStatus::Done;
            t.passes = true;
            t.last_error = None;
            t.set_aside = None;
        })?;
        self.events.event(TaskEvent::Completed { task: &task, commit: commit.as_deref() });
        Ok(Step::Passed)
    }

    /// After a failed attempt: `failed` when the task has no attempts left. True if so.
    fn give_up_if_spent(&mut self, id: &str) -> Result<bool, Error> {
        let most = self.settings.max_attempts;
        let mut spent = false;
        let task = self.update(id, |t| {
            if t.attempts >= most {
                t.status = TaskStatus::Failed;
                spent = true;
            }
        })?;
        if spent {
            self.events.event(TaskEvent::Failed { task: &task });
        }
        Ok(spent)
    }

    fn stop_for_a_human(&mut self, id: &str, failures: u32) -> Result<RunEnd, Error> {
        let reason = format!(
            "{} in a row (--intervention-after {}); the last error in full: mini-agent tasks show {id}",
            plural(failures as usize, "failed attempt"),
            self.settings.intervention_after
        );
        let task = self.update(id, |t| t.status = TaskStatus::NeedsHuman)?;
        self.events.event(TaskEvent::NeedsHuman { task: &task, reason: &reason });
        Ok(RunEnd::NeedsHuman { id: id.to_string(), reason })
    }

    /// The attempt did not finish: its changes are set aside, the task is pending again, and
    /// `error` goes on up.
    fn back_to_pending(&mut self, task: &Task, why: &str, error: Error) -> Error {
        // The commit message gets a plain reason; the whole error goes to the task list.
        let kept = match self.set_aside(task, "it stopped before it was verified") {
            Ok(kept) => kept,
            Err(problem) => {
                return Error::Config(format!("{error}; and its changes could not be set aside: {problem}"));
            }
        };
        let note = format!("attempt {} stopped before it was verified: {why}", task.attempts);
        match self.update(&task.id, |t| {
            t.status = TaskStatus::Pending;
            t.last_error = Some(note.clone());
            t.set_aside = kept.as_ref().map(|kept| kept.reference.clone());
        }) {
            Ok(task) => {
                if let Some(kept) = &kept {
                    self.events.event(TaskEvent::SetAside { task: &task, kept });
                }
                error
            }
            Err(saving) => {
                Error::Config(format!("{error}; and the task list could not be updated: {saving}"))
            }
        }
    }

    /// The attempt's changes, kept under a ref, and the tree put back (when committing).
    fn set_aside(&self, task: &Task, why: &str) -> Result<Option<SetAside>, Error> {
        match self.git {
            Some(git) => git.set_aside(&task.id, task.attempts, why),
            None => Ok(None),
        }
    }

    /// Changes one task in the file (read fresh, so a task added meanwhile is kept).
    fn update(&self, id: &str, change: impl FnOnce(&mut Task)) -> Result<Task, Error> {
        update(self.tasks, |file| {
            let task = file.find_mut(id)?;
            change(task);
            touch(task);
            Ok(task.clone())
        })
    }
}

/// How an attempt ended, for the loop.
enum Step {
    Passed,
    FailedAttempt(String),
}

/// A model stuck repeating itself or a reply cut at the output limit is the attempt's
/// failure (verify decides); the network, the server, the disk or Ctrl+C are not.
fn is_the_tasks_failure(error: &Error) -> bool {
    (error.failure::<Stuck>().is_some() || matches!(error, Error::ReplyCut { .. })) && !interrupted()
}
