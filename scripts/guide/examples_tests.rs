//! The rules of "Run it" one by one: which blocks are examples, how a block splits into
//! commands, and how masks match (the end-to-end run is in `tests/guide_check.rs`).

use super::*;

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

#[test]
fn only_console_blocks_under_a_run_it_heading_are_examples() {
    let text = "# T {#t}\n\n```console\n$ before\n```\n\n## Run it {#x-run-it}\n\n```console\n$ one\n```\n\n```sh\nnot run\n```\n\n### Deeper {#deeper}\n\n```console\n$ two\n```\n\n## Next {#next}\n\n```console\n$ after\n```\n\n## Run it {#y-run}\n\n```console\n$ three\n```\n";
    let blocks = run_it_blocks(text);
    let found: Vec<(usize, &str)> =
        blocks.iter().map(|block| (block.line, block.lines[0].as_str())).collect();
    assert_eq!(found, [(10, "$ one"), (20, "$ two"), (32, "$ three")]);
}

#[test]
fn inline_code_at_the_start_of_a_line_opens_no_block() {
    let text = "## Run it {#x-run-it}\n\n```` ```json ```` fence, in prose.\n\n```console\n$ one\n```\n";
    let found: Vec<(usize, String)> =
        run_it_blocks(text).into_iter().map(|block| (block.line, block.lines.join("\n"))).collect();
    assert_eq!(found, [(6, "$ one".to_string())]);
}

#[test]
fn a_block_splits_into_commands_with_their_output_and_declared_status() {
    let block = ConsoleBlock {
        line: 7,
        lines: lines(
            "$ mini-agent -p hi   # exit 1\nmini-agent: no key\n$ printf 'a\\\n  b'\na\n  b\n$ true",
        ),
    };
    let parsed = examples(&block).expect("well formed");
    let summary: Vec<(usize, &str, i32, usize)> = parsed
        .iter()
        .map(|example| (example.line, example.command.as_str(), example.exit, example.expected.len()))
        .collect();
    assert_eq!(
        summary,
        [(7, "mini-agent -p hi   # exit 1", 1, 1), (9, "printf 'a\\\n  b'", 0, 2), (13, "true", 0, 0)]
    );
    let stray = ConsoleBlock { line: 3, lines: lines("output first\n$ true") };
    assert_eq!(examples(&stray).map_err(|(line, _)| line), Err(3));
}

#[test]
fn a_mask_matches_any_text_within_one_line_only() {
    assert!(line_matches("session [..] saved", "session 20261129-1a2b saved"));
    assert!(line_matches("[..]", ""));
    assert!(line_matches("took [..] ms ([..] tokens)", "took 12 ms (340 tokens)"));
    assert!(!line_matches("took [..] ms", "took 12 s"));
    assert!(!line_matches("exact", "exact and more"));
    assert!(line_matches("a[..]a", "aa"));
    assert!(!line_matches("ab[..]ba", "aba"));
}

#[test]
fn a_dots_line_matches_any_number_of_lines() {
    let expected = lines("first\n...\nlast [..]");
    assert_eq!(lines_match(&expected, &lines("first\nlast 1")), Ok(()));
    assert_eq!(lines_match(&expected, &lines("first\nx\ny\nlast 2")), Ok(()));
    assert!(lines_match(&expected, &lines("first\nx\nlost")).is_err());
    assert_eq!(lines_match(&lines("a\nb"), &lines("a\nc")), Err((1, 1)));
    assert_eq!(lines_match(&lines("a"), &lines("a\nmore")), Err((1, 1)));
}

#[test]
fn ansi_escapes_and_trailing_blanks_do_not_count() {
    assert_eq!(strip_ansi("\u{1b}[1;32m✓\u{1b}[0m done\u{1b}]0;title\u{7}"), "✓ done");
    assert_eq!(normalize("a  \nb\t\n\n\n"), ["a", "b"]);
}

#[test]
fn a_run_it_command_runs_a_state_by_its_path_and_nothing_else() {
    use Invocation::{CargoRun, Other, State};
    assert_eq!(invocations("$STATES/ch03/mini-agent --demo -p 'read x'"), [State(3)]);
    assert_eq!(invocations("cd a && ${STATES}/ch12/mini-agent -c | grep x"), [State(12)]);
    assert_eq!(invocations("mini-agent --demo"), [Other("mini-agent".into())]);
    assert_eq!(invocations("printf 'hi\\n' | mini-agent --demo"), [Other("mini-agent".into())]);
    assert_eq!(invocations("(mini-agent -p x)"), [Other("mini-agent".into())]);
    assert_eq!(
        invocations("target/debug/mini-agent -p x; $STATES/ch3/mini-agent"),
        [Other("target/debug/mini-agent".into()), Other("$STATES/ch3/mini-agent".into())]
    );
    assert_eq!(invocations("cargo run --features ch02 -- --demo"), [CargoRun]);
    // Not programs: a message, a folder, a quoted word, a comment.
    assert_eq!(invocations("grep 'mini-agent' x; cat mini-agent/README.md; echo mini-agent: hi"), []);
    assert_eq!(invocations("ls   # then mini-agent -p x"), []);
    assert_eq!(invocations("$STATES/ch05/mini-agent -p x   # exit 1"), [State(5)]);
}

#[test]
fn a_shell_block_runs_every_line_and_an_output_block_nothing() {
    let block = ConsoleBlock { line: 4, lines: lines("# build first\ncargo build\n\nmini-agent -p x") };
    assert_eq!(
        block_commands("sh", &block),
        [(5, "cargo build".to_string()), (7, "mini-agent -p x".to_string())]
    );
    assert_eq!(block_commands("text", &block), []);
    let console = ConsoleBlock { line: 9, lines: lines("$ ls\nout\n$ true") };
    assert_eq!(block_commands("console", &console), [(9, "ls".to_string()), (11, "true".to_string())]);
}
