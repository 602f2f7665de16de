//! Which task comes next, and the id a new task gets.
//!
//! Picking is a pure function of the list, so it is tested without a disk: the pending task
//! with the lowest priority, ties broken by file order (the order a person wrote them in).
//! Nothing else is eligible — a task in progress belongs to a run that may still be alive, and
//! failed or needs-human tasks wait for `tasks reset`.

use super::file::{Task, TaskStatus};

// ANCHOR: pick
/// The index of the next task to attempt, if any is pending.
pub fn next_pending(tasks: &[Task]) -> Option<usize> {
    tasks
        .iter()
        .enumerate()
        .filter(|(_, task)| task.status == TaskStatus::Pending)
        .min_by_key(|(index, task)| (task.priority, *index))
        .map(|(index, _)| index)
}
// ANCHOR_END: pick

/// The id for a new task: one more than the largest numeric id, so ids stay short.
pub fn next_id(tasks: &[Task]) -> String {
    let largest = tasks.iter().filter_map(|task| task.id.parse::<u64>().ok()).max().unwrap_or(0);
    (largest + 1).to_string()
}

/// An id goes into commit messages and command lines: short, one line, no surprises.
pub fn check_id(id: &str) -> Result<(), String> {
    let fine = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if id.is_empty() || id.len() > 64 || !id.chars().all(fine) {
        return Err(format!(
            "task id {:?}: use 1 to 64 letters, digits, '-', '_' or '.'",
            id.chars().take(70).collect::<String>()
        ));
    }
    Ok(())
}

/// How many tasks have each status, in the order the statuses are listed.
pub fn counts(tasks: &[Task]) -> [(TaskStatus, usize); 5] {
    let count = |status| tasks.iter().filter(|task| task.status == status).count();
    [
        (TaskStatus::Pending, count(TaskStatus::Pending)),
        (TaskStatus::InProgress, count(TaskStatus::InProgress)),
        (TaskStatus::Done, count(TaskStatus::Done)),
        (TaskStatus::Failed, count(TaskStatus::Failed)),
        (TaskStatus::NeedsHuman, count(TaskStatus::NeedsHuman)),
    ]
}

impl TaskStatus {
    /// The word the file and the tables use.
    pub fn word(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Done => "done",
            TaskStatus::Failed => "failed",
            TaskStatus::NeedsHuman => "needs_human",
        }
    }
}
