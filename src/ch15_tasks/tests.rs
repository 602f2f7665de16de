//! The loop against a scripted attempt and a scripted verifier: no model, no process.

use super::file::{Task, TaskFile, TaskStatus, update};
use super::pick::{check_id, next_id, next_pending};
use super::run::{Attempts, Loop, RunEnd, Settings, TaskEvent, TaskEvents};
use super::template::{BUILT_IN_TEMPLATE, render};
use super::verify::{Verdict, Verifier, kept, summary, tail};
use crate::ch02_loop::{Error, Outcome};
use crate::temp_dir::TempDir;
use std::path::PathBuf;

fn task(id: &str, priority: i64, verify: &str) -> Task {
    let mut task = Task::new(id.into(), format!("task {id}"));
    task.priority = priority;
    task.verify_command = Some(verify.into());
    task
}

/// Attempts that record their prompts and end as scripted (default: completed).
#[derive(Default)]
struct Scripted {
    prompts: Vec<String>,
    endings: Vec<Outcome>,
}
impl Attempts for Scripted {
    fn begin(&mut self) -> Result<String, Error> {
        Ok(format!("session-{}", self.prompts.len() + 1))
    }
    fn run(&mut self, prompt: String) -> Outcome {
        self.prompts.push(prompt);
        if self.endings.is_empty() { Outcome::Completed("done".into()) } else { self.endings.remove(0) }
    }
}

/// Passes command `pass`; `twice` fails once, then passes; anything else fails.
#[derive(Default)]
struct Checks {
    twice_seen: bool,
}
impl Verifier for Checks {
    fn verify(&mut self, command: &str) -> Verdict {
        match command {
            "pass" => Verdict::Passed,
            "twice" if self.twice_seen => Verdict::Passed,
            "twice" => {
                self.twice_seen = true;
                Verdict::Failed("expected 2, found 1".into())
            }
            _ => Verdict::Failed(format!("{command}: still failing")),
        }
    }
}

#[derive(Default)]
struct Log(Vec<String>);
impl TaskEvents for Log {
    fn event(&mut self, event: TaskEvent<'_>) {
        self.0.push(match event {
            TaskEvent::Started { task, session } => format!("started {} {session}", task.id),
            TaskEvent::AttemptFailed { task, .. } => format!("attempt failed {}", task.id),
            TaskEvent::Completed { task, .. } => format!("completed {}", task.id),
            TaskEvent::Failed { task } => format!("failed {}", task.id),
            TaskEvent::NeedsHuman { task, .. } => format!("needs human {}", task.id),
            TaskEvent::SetAside { task, kept } => format!("set aside {} {}", task.id, kept.reference),
        });
    }
}

fn save(dir: &TempDir, tasks: Vec<Task>) -> PathBuf {
    let path = dir.join("tasks.json");
    update(&path, |file| {
        file.tasks = tasks;
        Ok(())
    })
    .unwrap();
    path
}

fn run_loop(
    path: &PathBuf,
    attempts: &mut Scripted,
    log: &mut Log,
    settings: Settings,
) -> Result<RunEnd, Error> {
    let mut checks = Checks::default();
    Loop {
        tasks: path,
        template: BUILT_IN_TEMPLATE,
        attempts,
        verifier: &mut checks,
        git: None,
        events: log,
        settings,
    }
    .run()
}

const DEFAULTS: Settings = Settings { iterations: None, max_attempts: 3, intervention_after: 3 };

#[test]
fn three_tasks_pass_pass_on_retry_and_need_a_human() {
    let dir = TempDir::new("three");
    // File order differs from priority order: `b` (priority 1) goes first.
    let path = save(&dir, vec![task("c", 3, "never"), task("a", 1, "pass"), task("b", 2, "twice")]);
    let (mut attempts, mut log) = (Scripted::default(), Log::default());
    let end = run_loop(&path, &mut attempts, &mut log, DEFAULTS).unwrap();
    assert!(matches!(&end, RunEnd::NeedsHuman { id, .. } if id == "c"), "{end:?}");
    let file = TaskFile::load(&path).unwrap();
    let status = |id: &str| file.tasks.iter().find(|t| t.id == id).unwrap().clone();
    assert_eq!((status("a").status, status("a").passes, status("a").attempts), (TaskStatus::Done, true, 1));
    assert_eq!((status("b").status, status("b").attempts), (TaskStatus::Done, 2));
    assert_eq!(status("b").sessions, ["session-2", "session-3"]);
    assert_eq!((status("c").status, status("c").attempts), (TaskStatus::NeedsHuman, 3));
    assert_eq!(status("c").last_error.as_deref(), Some("never: still failing"));
    // The verify output of b's first attempt is in the prompt of its second.
    assert!(!attempts.prompts[1].contains("expected 2, found 1"));
    assert!(
        attempts.prompts[2].contains("expected 2, found 1") && attempts.prompts[2].contains("Attempt: 2")
    );
    assert_eq!(log.0.first().map(String::as_str), Some("started a session-1"));
    assert_eq!(log.0.last().map(String::as_str), Some("needs human c"));
}

#[test]
fn a_task_out_of_attempts_fails_and_the_loop_goes_on() {
    let dir = TempDir::new("spent");
    let path = save(&dir, vec![task("x", 1, "never"), task("y", 2, "pass")]);
    let (mut attempts, mut log) = (Scripted::default(), Log::default());
    let settings = Settings { max_attempts: 2, intervention_after: 5, ..DEFAULTS };
    let end = run_loop(&path, &mut attempts, &mut log, settings).unwrap();
    assert_eq!(end, RunEnd::Finished { done: 1, failed: 1 });
    assert!(log.0.contains(&"failed x".to_string()) && log.0.contains(&"completed y".to_string()));
    let file = TaskFile::load(&path).unwrap();
    assert_eq!(file.tasks[0].status, TaskStatus::Failed);
}

#[test]
fn an_interrupted_attempt_puts_the_task_back_to_pending() {
    let dir = TempDir::new("interrupted");
    let path = save(&dir, vec![task("a", 1, "pass")]);
    let mut attempts = Scripted { endings: vec![Outcome::Interrupted], ..Scripted::default() };
    let end = run_loop(&path, &mut attempts, &mut Log::default(), DEFAULTS);
    assert!(matches!(end, Err(Error::Interrupted)));
    let file = TaskFile::load(&path).unwrap();
    assert_eq!((file.tasks[0].status, file.tasks[0].attempts), (TaskStatus::Pending, 1));
    // A network failure is the harness's, not the task's: pending too, and the error goes up.
    let mut attempts =
        Scripted { endings: vec![Outcome::Failed(Error::Network("reset".into()))], ..Default::default() };
    assert!(matches!(run_loop(&path, &mut attempts, &mut Log::default(), DEFAULTS), Err(Error::Network(_))));
    assert_eq!(TaskFile::load(&path).unwrap().tasks[0].status, TaskStatus::Pending);
    // --iterations 1 stops after one attempt.
    let settings = Settings { iterations: Some(1), ..DEFAULTS };
    let end = run_loop(&path, &mut Scripted::default(), &mut Log::default(), settings).unwrap();
    assert_eq!(end, RunEnd::IterationsUsed { done: 1, failed: 0 });
}

#[test]
fn a_damaged_file_names_its_line_and_is_left_alone() {
    let dir = TempDir::new("damaged");
    let path = dir.join("tasks.json");
    let text =
        "{\"tasks\": [\n  {\"id\": \"1\", \"name\": \"a\"},\n  {\"id\": \"2\", \"name\": \"b\",}\n]}\n";
    std::fs::write(&path, text).unwrap();
    let error = TaskFile::load(&path).unwrap_err().to_string();
    assert!(error.contains("line 3"), "{error}");
    let error = update(&path, |_| Ok(())).unwrap_err().to_string();
    assert!(error.contains("line 3"), "{error}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // A task of the wrong shape names the line it starts on.
    let text = "{\"tasks\": [\n  {\"id\": \"1\", \"name\": \"a\"},\n  {\"id\": \"2\"}\n]}\n";
    let error = TaskFile::parse(&path, text).unwrap_err().to_string();
    assert!(error.contains("line 3") && error.contains("name"), "{error}");
    let twins = "{\"tasks\": [{\"id\": 1, \"name\": \"a\"},\n{\"id\": \"1\", \"name\": \"b\"}]}";
    let error = TaskFile::parse(&path, twins).unwrap_err().to_string();
    assert!(error.contains("line 2") && error.contains("two tasks"), "{error}");
}

#[test]
fn agent_loop_feature_lists_round_trip() {
    let dir = TempDir::new("features");
    let path = dir.join("feature_list.json");
    let text = r#"{"project": "demo", "features": [
        {"id": 7, "name": "login", "priority": 2, "passes": true, "category": "auth"},
        {"id": 8, "name": "logout", "priority": 1, "verify_command": "make test"}]}"#;
    std::fs::write(&path, text).unwrap();
    let file = TaskFile::load(&path).unwrap();
    assert_eq!(file.tasks[0].status, TaskStatus::Done);
    assert_eq!(next_pending(&file.tasks), Some(1));
    file.save().unwrap();
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(saved["project"], "demo");
    assert_eq!(saved["features"][0]["category"], "auth");
    assert!(saved.get("tasks").is_none());
    assert_eq!(next_id(&file.tasks), "9");
}

#[test]
fn templates_fill_in_one_pass() {
    let mut task = task("1", 0, "cargo test");
    task.description = "literally {{last_error}} and {{unknown}}".into();
    task.context_files = vec!["src/a.rs".into(), "README.md".into()];
    task.last_error = Some("boom".into());
    let text = render(
        "{{name}} | {{description}} | {{context_files}} | {{ last_error }} | {{attempt}} | {{",
        &task,
        2,
    );
    assert_eq!(
        text,
        "task 1 | literally {{last_error}} and {{unknown}} | - src/a.rs\n- README.md | boom | 2 | {{"
    );
}

#[test]
fn ids_are_checked_and_long_outputs_cut() {
    assert!(check_id("fix-login_2.b").is_ok());
    assert!(check_id("a b").is_err() && check_id("").is_err() && check_id("x\ny").is_err());
    let long = format!("{}{}", "h".repeat(3000), "t".repeat(3000));
    let cut = kept(&long);
    assert!(
        cut.len() < 4_100
            && cut.starts_with('h')
            && cut.ends_with('t')
            && cut.contains("2000 characters cut")
    );
    assert_eq!(kept("short"), "short");
}

#[test]
fn a_failed_check_shows_its_last_lines_and_one_summary_line() {
    let output: String = (1..=40).map(|n| format!("line {n}\n")).collect::<String>() + "\n[exit code 1]\n";
    let (lines, before) = tail(&output);
    assert_eq!((lines.len(), before), (12, 29), "blank lines are not shown");
    assert_eq!((lines[0].as_str(), lines[11].as_str()), ("line 30", "[exit code 1]"));
    let (wide, _) = tail(&"x".repeat(1_000));
    assert_eq!(wide[0].chars().count(), 201, "cut to 200 characters and a mark");
    assert_eq!(summary(&output, 80), "line 40 [exit code 1]");
    assert_eq!(summary("attempt 1 was cut off\n", 80), "attempt 1 was cut off");
    assert_eq!(summary(&"y".repeat(100), 10), "yyyyyyyyyy…");
}

#[test]
fn the_demo_model_does_a_task_worded_in_its_grammar() {
    let mut task = task("1", 0, "test -f z.txt");
    task.name = "create z.txt containing z".into();
    let prompt = render(BUILT_IN_TEMPLATE, &task, 1);
    let message = crate::demo::demo_message(&[serde_json::json!({"role": "user", "content": prompt})], false);
    let call = &message["tool_calls"][0]["function"];
    assert_eq!(
        (call["name"].as_str(), call["arguments"].as_str()),
        (Some("write_file"), Some(r#"{"content":"z","path":"z.txt"}"#))
    );
}
