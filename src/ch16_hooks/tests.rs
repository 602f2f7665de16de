use super::*;
use crate::ch02_loop::fakes::RecordingTools;
use crate::ch03_tools::Workspace;
use crate::ch16_hooks::approval::ApprovalStore;
use crate::temp_dir::TempDir;

fn call(name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: "c1".into(), name: name.into(), arguments: arguments.into() }
}

fn hooks_in(dir: &TempDir, json: &str) -> (Hooks, HookLog) {
    let file: HooksFile = serde_json::from_str(json).expect("a hooks file");
    let log = HookLog::default();
    log.set_session("s-1");
    (Hooks::new(dir.path().to_path_buf(), file, log.clone()), log)
}

#[test]
fn exit_2_before_a_call_refuses_it_with_the_hooks_stderr() {
    let dir = TempDir::new("hooks-block");
    let json = r#"{"hooks": {"PreToolUse": [{"matcher": "bash|write_file", "hooks": [
        {"type": "command", "command": "cat > seen.json; echo 'no shell today' >&2; exit 2"}]}]}}"#;
    let (hooks, log) = hooks_in(&dir, json);
    let mut tools = Hooked::new(RecordingTools::default(), hooks);
    let output = tools.run(&call("bash", r#"{"command": "touch x"}"#));
    assert_eq!(output.status, ToolStatus::Denied);
    assert!(output.content.contains("no shell today"), "{}", output.content);
    assert!(tools.inner.calls.is_empty(), "the call ran");
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("seen.json")).unwrap()).unwrap();
    assert_eq!(seen["hook_event_name"], "PreToolUse");
    assert_eq!(seen["session_id"], "s-1");
    assert_eq!(seen["tool_name"], "bash");
    assert_eq!(seen["tool_input"]["command"], "touch x");
    assert_eq!(seen["cwd"], dir.path().display().to_string());
    let records = log.take();
    assert_eq!(records.len(), 1);
    assert!(records[0].outcome.starts_with("blocked: no shell today"), "{:?}", records[0]);
    // A tool the matcher does not name runs, with no hook.
    let output = tools.run(&call("read_file", r#"{"path": "a"}"#));
    assert_eq!(output.status, ToolStatus::Ok);
    assert!(log.take().is_empty());
}

#[test]
fn post_tool_use_stdout_is_added_and_other_exits_only_warn() {
    let dir = TempDir::new("hooks-post");
    let json = r#"{"hooks": {
        "PreToolUse": [{"hooks": [{"type": "command", "command": "exit 1"}]}],
        "PostToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "echo lint: 2 warnings; cat > response.json"}]}]}}"#;
    let (hooks, log) = hooks_in(&dir, json);
    let mut tools = Hooked::new(RecordingTools::default(), hooks);
    let output = tools.run(&call("write_file", r#"{"path": "a", "content": "b"}"#));
    assert_eq!(output.status, ToolStatus::Ok);
    assert!(
        output.content.ends_with(
            "\n\n[PostToolUse hook `echo lint: 2 warnings; cat > response.json`]\nlint: 2 warnings"
        ),
        "{}",
        output.content
    );
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("response.json")).unwrap()).unwrap();
    assert_eq!(seen["tool_response"]["status"], "ok");
    let outcomes: Vec<String> =
        log.take().into_iter().map(|r| format!("{:?} {}", r.event, r.outcome)).collect();
    assert_eq!(outcomes, ["PreToolUse exit 1", "PostToolUse exit 0"]);
}

#[test]
fn a_hook_that_outlives_its_timeout_is_killed_with_its_children() {
    let dir = TempDir::new("hooks-timeout");
    let json = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "sleep 30 & sleep 30", "timeout": 1}]}]}}"#;
    let (hooks, _log) = hooks_in(&dir, json);
    let started = std::time::Instant::now();
    let ran = hooks.fire(HookEvent::Stop, None, Map::new());
    // The hook's own end is 30 s away: "timed out" is the runner's timeout, not the hook.
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].1.failure.as_deref(), Some("timed out after 1 s"));
    println!("figure: a hook past its 1 s timeout was given up on after {:?}", started.elapsed());
}

#[test]
fn hook_output_is_bounded() {
    let dir = TempDir::new("hooks-bounds");
    let json = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command",
        "command": "head -c 1000000 /dev/zero | tr '\\0' x; echo done >&2"}]}]}}"#;
    let (hooks, _log) = hooks_in(&dir, json);
    let ran = hooks.fire(HookEvent::Stop, None, Map::new());
    assert_eq!(ran[0].1.code, Some(0));
    assert_eq!(ran[0].1.stdout.len(), run::CAPTURE_BYTES);
    assert_eq!(ran[0].1.stderr.trim(), "done");
}

#[test]
fn what_a_hook_said_is_kept_when_something_it_left_holds_its_output_open() {
    // Unmarked (the hook waits until `env` has dropped the mark) and in a session of its own,
    // this `sleep` escapes the reaper and holds both pipes open past the grace: what the hook
    // wrote before that still counts.
    let dir = TempDir::new("hooks-held");
    let json = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command",
        "command": "echo said; echo why >&2; env -u MINI_AGENT_TOOL_RUN setsid sleep 3 & sleep 0.3"}]}]}}"#;
    let (hooks, _log) = hooks_in(&dir, json);
    let ran = hooks.fire(HookEvent::Stop, None, Map::new());
    assert_eq!(ran[0].1.code, Some(0));
    assert_eq!((ran[0].1.stdout.trim(), ran[0].1.stderr.trim()), ("said", "why"));
}

#[test]
fn workspace_hooks_need_approval_of_their_exact_contents() {
    let dir = TempDir::new("hooks-trust");
    let store = ApprovalStore::at(&dir.join("config/approved"));
    dir.write(HOOKS_FILE, r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#);
    let workspace = Workspace::new(dir.path()).unwrap();
    let load = |trusted, ask: Option<crate::ch16_hooks::approval::Ask>| {
        load_hooks(&workspace, HookLog::default(), trusted, Some(&store), ask, &[])
    };
    let (hooks, warnings) = load(false, None);
    assert!(hooks.is_none());
    assert!(warnings[0].contains("--trust-hooks"), "{warnings:?}");
    assert!(load(true, None).0.is_some());
    let mut questions = Vec::new();
    let mut yes = |question: &str| {
        questions.push(question.to_string());
        Some("y".to_string())
    };
    assert!(load(false, Some(&mut yes)).0.is_some());
    assert!(questions[0].contains("Stop: true"), "{}", questions[0]);
    // Remembered by its hash: no question the next time.
    assert!(load(false, None).0.is_some());
    // A changed file is a new question.
    dir.write(
        HOOKS_FILE,
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "rm -rf ~"}]}]}}"#,
    );
    let (hooks, warnings) = load(false, None);
    assert!(hooks.is_none() && warnings[0].contains("--trust-hooks"), "{warnings:?}");
}

#[test]
fn a_broken_hooks_file_is_named_and_ignored() {
    let dir = TempDir::new("hooks-broken");
    dir.write(HOOKS_FILE, r#"{"hooks": {"BeforeEverything": []}}"#);
    let workspace = Workspace::new(dir.path()).unwrap();
    let (hooks, warnings) = load_hooks(&workspace, HookLog::default(), true, None, None, &[]);
    assert!(hooks.is_none());
    assert!(warnings[0].contains(HOOKS_FILE) && warnings[0].contains("BeforeEverything"), "{warnings:?}");
}

#[test]
fn task_events_fire_their_hooks_with_the_task_and_the_reason() {
    use crate::ch15_tasks::{Task, TaskEvent, TaskEvents};
    let dir = TempDir::new("hooks-tasks");
    let json = r#"{"hooks": {
        "TaskCompleted": [{"hooks": [{"type": "command", "command": "cat > completed.json"}]}],
        "NeedsHuman": [{"hooks": [{"type": "command", "command": "cat > human.json"}]}]}}"#;
    let (mut hooks, log) = hooks_in(&dir, json);
    let task = Task::new("7".into(), "add login".into());
    hooks.event(TaskEvent::Started { task: &task, session: "s-2" });
    hooks.event(TaskEvent::Completed { task: &task, commit: None });
    hooks.event(TaskEvent::NeedsHuman { task: &task, reason: "3 failures in a row" });
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
    };
    assert_eq!(read("completed.json")["hook_event_name"], "TaskCompleted");
    assert_eq!(read("completed.json")["task"]["id"], "7");
    assert_eq!(read("human.json")["reason"], "3 failures in a row");
    assert_eq!(read("human.json")["task"]["name"], "add login");
    assert_eq!(log.take().len(), 2, "Started fires no hook");
}
