//! The session-journal reader: garbage in place of a line is an error naming it — never a
//! panic, never a silently skipped record — and `--status` on a damaged real session made
//! by the binary answers or refuses. Every cut of a journal, random bytes and huge or deeply
//! nested lines are covered next to the reader's other properties, in
//! `selfcheck/robustness_journal.rs`.

use crate::binary_run::{Workspace, args, run_binary};
use crate::{XorShift, assert_survived, cases, nested_json};
use mini_agent::ch05_sessions::SessionError;
use mini_agent::ch09_journal::{read_journal, write_synthetic_journal};
use mini_agent::scripted_server::{ScriptedServer, Step};
use std::path::Path;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);

fn synthetic_journal(workspace: &Workspace, records: usize) -> Vec<u8> {
    let path = workspace.join("synthetic.jsonl");
    write_synthetic_journal(&path, records).expect("write a synthetic journal");
    std::fs::read(path).expect("read it back")
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write the test journal");
}

#[test]
fn garbage_in_the_middle_is_an_error_that_names_the_line() {
    let workspace = Workspace::new("robust-journal");
    let whole = synthetic_journal(&workspace, 20);
    let lines: Vec<&[u8]> = whole.split_inclusive(|&b| b == b'\n').collect();
    let path = workspace.join("corrupt.jsonl");
    let mut random = XorShift::seeded(0x10a4_c0de);
    for case in 0..cases(200) {
        let bad_line = 1 + random.below(lines.len() - 2);
        let garbage: Vec<u8> = match case % 3 {
            0 => {
                let len = 1 + random.below(200);
                random.bytes(len).into_iter().filter(|&b| b != b'\n').collect()
            }
            1 => nested_json(50_000, case % 2 == 0).into_bytes(),
            _ => lines[bad_line][..lines[bad_line].len() / 2].to_vec(),
        };
        let mut bytes = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            if index == bad_line {
                bytes.extend_from_slice(&garbage);
                bytes.push(b'\n');
            } else {
                bytes.extend_from_slice(line);
            }
        }
        write(&path, &bytes);
        match read_journal(&path) {
            Err(error) if error.failure::<SessionError>().is_some() => {
                let message = error.to_string();
                let named = format!(":{}:", bad_line + 1);
                assert!(
                    message.contains(&named),
                    "case {case}: {message:?} does not name line {}",
                    bad_line + 1
                );
                assert!(message.len() < 1000, "case {case}: a {}-byte message", message.len());
            }
            // Random bytes can form a valid line only by a fluke; then they must parse as one.
            Ok(loaded) => assert_eq!(loaded.records.len(), lines.len(), "case {case}: a line was skipped"),
            Err(other) => panic!("case {case}: {other}"),
        }
    }
}

/// A real session made by the binary, then damaged at random: `-c --status` reads it,
/// and must answer or refuse — a panic or a hang is a bug.
#[test]
fn status_survives_any_damage_to_a_real_session() {
    let server = ScriptedServer::scripted(vec![Step::text("done")]).expect("loopback server");
    let workspace = Workspace::new("robust-session");
    let made = run_binary(workspace.path(), &args(&["--base-url", &server.url, "-p", "hi"]), &[], DEADLINE);
    assert_eq!(made.code, Some(0), "{}", made.describe());
    let sessions = workspace.join(".mini_agent/sessions");
    let file = std::fs::read_dir(&sessions)
        .expect("the run made a sessions directory")
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .expect("a session journal");
    let original = std::fs::read(&file).expect("read the session");
    let mut random = XorShift::seeded(0x5e55_1011);
    for case in 0..cases(200) / 5 {
        let mut bytes = original.clone();
        let at = random.below(bytes.len());
        let end = (at + 1 + random.below(40)).min(bytes.len());
        let noise = random.bytes(end - at);
        // Overwrite, cut out, or insert a run of noise.
        match case % 3 {
            0 => bytes.splice(at..end, noise).for_each(drop),
            1 => bytes.drain(at..end).for_each(drop),
            _ => bytes.splice(at..at, noise).for_each(drop),
        }
        write(&file, &bytes);
        let run = run_binary(workspace.path(), &args(&["-c", "--status"]), &[], DEADLINE);
        assert_survived(&run, &format!("case {case}: the session damaged at byte {at}"));
        assert!(matches!(run.code, Some(0 | 1)), "case {case}\n{}", run.describe());
    }
}
