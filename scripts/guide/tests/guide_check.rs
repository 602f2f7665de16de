//! The `build-guide` command as a writer uses it: build, `--accept`, `--check`, in a temp
//! checkout (the binary works on the repository in its current directory). The checks
//! themselves are tested case by case inside the builder; this pins the command line:
//! exit codes, `file:line: message` on stdout, and the files it writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Checkout {
    root: PathBuf,
}

impl Checkout {
    fn new(name: &str) -> Checkout {
        let root = std::env::temp_dir().join(format!("guide-check-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let checkout = Checkout { root };
        checkout.write("src/a.rs", "// ANCHOR: greet\npub fn greet() {}\n// ANCHOR_END: greet\n");
        checkout.write(
            "guide/en/01-intro.md",
            "# Intro {#intro}\n\nHello.\n\n```rust\n{{#include src/a.rs:greet}}\n```\n",
        );
        checkout.write(
            "guide/zh/01-intro.md",
            "# 简介 {#intro}\n\n你好。\n\n```rust\n{{#include src/a.rs:greet}}\n```\n",
        );
        checkout
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().expect("has a parent")).expect("create dir");
        std::fs::write(path, text).expect("write file");
    }

    /// A script to be started later. A child `sh` writes it: had this process written it, a
    /// child that another test's thread forked in that moment would hold it open for writing
    /// until its `exec`, and starting the script then fails with "Text file busy".
    fn write_executable(&self, path: &str, text: &str) {
        use std::io::Write;
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().expect("has a parent")).expect("create dir");
        let mut writer = Command::new("sh")
            .args(["-c", r#"cat > "$1" && chmod 755 "$1""#, "sh"])
            .arg(&path)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("start sh");
        writer.stdin.take().expect("piped").write_all(text.as_bytes()).expect("write the script");
        assert!(writer.wait().expect("wait for sh").success(), "sh could not write {}", path.display());
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_build-guide"))
            .args(args)
            .current_dir(&self.root)
            .env("OPENAI_API_KEY", "sk-must-not-reach-examples")
            .output()
            .expect("run build-guide")
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn exists(path: &Path) -> bool {
    path.is_file()
}

#[test]
fn accept_build_then_check_passes_and_an_english_edit_fails_it_with_the_place() {
    let checkout = Checkout::new("cli");
    let unaccepted = checkout.run(&["--check"]);
    assert_eq!(unaccepted.status.code(), Some(1));
    assert!(
        stdout(&unaccepted).contains("guide/zh/01-intro.md:1: section `intro` has no accepted translation")
    );

    assert!(checkout.run(&["--accept", "01-intro.md"]).status.success());
    assert!(exists(&checkout.path("guide/zh/.translated.json")));
    assert!(checkout.run(&[]).status.success());
    assert!(exists(&checkout.path("guide/index.html")));
    let clean = checkout.run(&["--check"]);
    assert_eq!((clean.status.code(), stdout(&clean)), (Some(0), String::new()));

    checkout.write(
        "guide/en/01-intro.md",
        "# Intro {#intro}\n\nHello, reader.\n\n```rust\n{{#include src/a.rs:greet}}\n```\n",
    );
    let stale = checkout.run(&["--check"]);
    assert_eq!(stale.status.code(), Some(1));
    assert_eq!(
        stdout(&stale).lines().collect::<Vec<_>>(),
        [
            "guide/index.html: out of date; run `cargo run --release --bin build-guide` and commit it",
            "guide/zh/01-intro.md:1: stale translation of section `intro`: the English (guide/en/01-intro.md:1) \
             changed since it was accepted; update the Chinese, then run \
             `cargo run --release --bin build-guide -- --accept 01-intro.md#intro`",
        ]
    );
}

#[test]
fn unknown_arguments_and_unknown_sections_fail_without_writing() {
    let checkout = Checkout::new("cli-usage");
    assert_eq!(checkout.run(&["--chek"]).status.code(), Some(1));
    assert_eq!(checkout.run(&["--accept", "09-none.md"]).status.code(), Some(1));
    assert!(!exists(&checkout.path("guide/index.html")));
    assert!(!exists(&checkout.path("guide/zh/.translated.json")));
}

/// A chapter whose "Run it" runs a fake `mini-agent` (a shell script in `snapshots/ch01/`) by
/// its path, `$STATES/ch01/mini-agent`, as the reader does.
fn checkout_with_run_it(name: &str, expected: &str) -> Checkout {
    let checkout = Checkout::new(name);
    let run_it = format!(
        "\n## Run it {{#intro-run-it}}\n\n```console\n$ $STATES/ch01/mini-agent --demo -p hi\n{expected}$ $STATES/ch01/mini-agent --fail   # exit 3\nno such flag\n$ echo $HOME $OPENAI_API_KEY > home && cat home | grep -c \"^$PWD$\"\n1\n$ mini-agent   # exit 127\n...\n```\n"
    );
    checkout.write("guide/en/01-intro.md", &format!("# Intro {{#intro}}\n\nHello.\n{run_it}"));
    checkout.write(
        "guide/zh/01-intro.md",
        &format!("# 简介 {{#intro}}\n\n你好。\n{}", run_it.replace("Run it", "运行")),
    );
    checkout.write_executable(
        "snapshots/ch01/mini-agent",
        "#!/bin/sh\nif [ \"$1\" = --fail ]; then echo 'no such flag' >&2; exit 3; fi\nprintf '\\033[1mhello\\033[0m from %s  \\n' \"$(date +%s)\"\necho 'session saved' >&2\n",
    );
    checkout
}

#[test]
fn run_examples_runs_each_command_against_the_chapters_binary_with_masks() {
    let checkout = checkout_with_run_it("run-it-pass", "hello from [..]\nsession saved\n");
    let output = checkout.run(&["--run-examples", "snapshots"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!((output.status.code(), stdout(&output)), (Some(0), String::new()), "{stderr}");
    assert!(stderr.contains("4 \"Run it\" commands checked"), "{stderr}");

    let dots = checkout_with_run_it("run-it-dots", "...\n");
    assert_eq!(dots.run(&["--run-examples", "snapshots"]).status.code(), Some(0));
}

#[test]
fn run_examples_reports_a_difference_at_the_command_with_a_diff_and_a_missing_binary() {
    let checkout = checkout_with_run_it("run-it-fail", "hello from [..]\n");
    let output = checkout.run(&["--run-examples", "snapshots"]);
    assert_eq!(output.status.code(), Some(1));
    let report = stdout(&output);
    assert!(
        report.starts_with("guide/en/01-intro.md:8: \"Run it\" output differs\n    + session saved\n"),
        "{report}"
    );

    checkout.write(
        "guide/en/01-intro.md",
        &std::fs::read_to_string(checkout.path("guide/en/01-intro.md")).unwrap().replace("   # exit 3", ""),
    );
    let report = stdout(&checkout.run(&["--run-examples", "snapshots"]));
    assert!(
        report.contains("guide/en/01-intro.md:10: \"Run it\" command exited with 3, expected 0"),
        "{report}"
    );

    let missing = checkout.run(&["--run-examples", "elsewhere"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stdout(&missing).contains("guide/en/01-intro.md:8: no binary elsewhere/ch01/mini-agent"),
        "{}",
        stdout(&missing)
    );
}
