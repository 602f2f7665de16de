//! A source a reader can hold: no file of the program (`src/`) or of its tools (`scripts/`)
//! over [`MAX_LINES`] lines of code, counted up to its `#[cfg(test)]` module. Tests of a
//! chapter live beside it and may be long; `tests.rs` and `*_tests.rs` files are tests
//! entirely. The check is here because the book shows this code: a file that outgrows what a
//! reader can hold is a chapter that should be split.

use crate::Diagnostic;
use std::path::Path;

/// The other rule about the source itself: chapters only look back.
#[path = "lookback.rs"]
pub mod lookback;

/// The rules `--check` adds to the build's: files a reader can hold, chapters that only look
/// back, and a book within its reading budget (`stats.rs`).
pub fn check_rules(root: &Path, diagnostics: &mut Vec<Diagnostic>) {
    check_sizes(root, diagnostics);
    lookback::check_lookback(root, diagnostics);
    crate::stats::check_reading_cost(root, diagnostics);
}

/// The longest non-test file the check accepts.
pub const MAX_LINES: usize = 600;

/// One diagnostic per file of `src/` and `scripts/` over [`MAX_LINES`] lines before its tests.
pub fn check_sizes(root: &Path, diagnostics: &mut Vec<Diagnostic>) {
    for folder in ["src", "scripts"] {
        let mut files = Vec::new();
        rust_files(&root.join(folder), &mut files);
        for file in files {
            let name = file.file_name().and_then(|name| name.to_str()).unwrap_or_default();
            let in_tests = file.components().any(|part| part.as_os_str() == "tests");
            if name == "tests.rs" || name.ends_with("_tests.rs") || in_tests {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&file) else { continue };
            let lines = code_lines(&text);
            if lines > MAX_LINES {
                let shown = file.strip_prefix(root).unwrap_or(&file).display().to_string();
                diagnostics.push(Diagnostic::new(
                    &shown,
                    0,
                    format!(
                        "{lines} lines before its tests, over {MAX_LINES}: split it where its concerns part"
                    ),
                ));
            }
        }
    }
}

/// Lines before the file's own test module: a top-level `#[cfg(test)]` whose item is an inline
/// `mod … {` (a `#[cfg(test)] mod tests;` that points elsewhere is one line, and counted).
pub fn code_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let opens_tests = |at: usize| {
        lines[at + 1..].iter().find(|line| !line.starts_with("#[")).is_some_and(|item| {
            let item = item.trim_start_matches("pub ").trim_start_matches("pub(crate) ");
            item.starts_with("mod ") && item.trim_end().ends_with('{')
        })
    };
    (0..lines.len())
        .find(|&at| lines[at].starts_with("#[cfg(test)]") && opens_tests(at))
        .unwrap_or(lines.len())
}

/// Every `.rs` file under `folder` (the look-back check walks the same tree).
fn rust_files(folder: &Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}
