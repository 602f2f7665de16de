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
