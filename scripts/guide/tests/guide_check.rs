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

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_build-guide"))
            .args(args)
            .current_dir(&self.root)
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
