//! Chapter 5 in the command line: every run writes its session, and a later command finds it
//! again. The runs go through `run`, exactly as `main` calls it, against the demo model.

use super::sessions_table::sessions_table;
use crate::ch14_main::*;
use mini_agent::ch05_sessions::SessionStore;
use mini_agent::temp_dir::TempDir;

fn run_in(root: &Path, words: &[&str]) -> Result<u8, Error> {
    let mut words: Vec<String> = words.iter().map(|word| word.to_string()).collect();
    words.extend(["--root".to_string(), root.display().to_string()]);
    run(&words, Box::leak(Box::new(registry::chapters())), &Keys::default())
}

#[test]
fn a_run_writes_a_session_that_a_later_command_continues_and_lists() {
    let temp = TempDir::new("cli-sessions");
    let store = SessionStore::new(temp.path());
    assert_eq!(
        sessions_table(&store, None).unwrap(),
        format!("no sessions yet in {}", temp.path().display())
    );
    assert_eq!(run_in(temp.path(), &["--demo", "-p", "list files"]).unwrap(), 0);
    assert_eq!(store.ids().unwrap().len(), 1, "one run, one session file");
    assert_eq!(run_in(temp.path(), &["--demo", "-c", "-p", "list files"]).unwrap(), 0);
    let table = sessions_table(&store, None).unwrap();
    assert_eq!(store.ids().unwrap().len(), 1, "-c continued that session: {table}");
    assert!(table.contains("2 turns  list files"), "{table}");
    let wrong = run_in(temp.path(), &["--demo", "-r", "1999", "-p", "list files"]).unwrap_err();
    assert!(wrong.to_string().starts_with("no session matches '1999'"), "{wrong}");
}
