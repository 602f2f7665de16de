//! "Run it", checked: the console examples of each chapter are run against the chapter states,
//! so the output the book shows cannot go stale, and what is checked is what the reader types.
//!
//! A "Run it" section is the one under a heading whose id ends in `-run-it`
//! (`## Run it {#tools-run-it}`) or whose title is `Run it`, down to the next heading of the
//! same or a higher level.
//!
//! Each chapter's binary is `target/snapshots/chNN/mini-agent`, and a "Run it" runs it by that
//! path, `$STATES/chNN/mini-agent` (`guide/state_paths.rs` says why, and checks it).
//!
//! `build-guide --run-examples DIR` runs, for every English chapter, the ```` ```console ````
//! blocks of its "Run it" section. In a block:
//!
//! * a line starting `$ ` is a command (a line ending in `\` continues on the next one),
//!   run with `sh -c` in a fresh temporary directory per block, the workspace: every command of
//!   a block runs there in turn, so later commands see what earlier ones wrote. `STATES` is DIR,
//!   as the reader set it; `HOME` and the XDG directories point inside the workspace; `PATH` is
//!   the system's alone (`/usr/local/bin:/usr/bin:/bin`), so a bare `mini-agent` is not found;
//!   and nothing else is inherited: no `OPENAI_API_KEY`, no `MINI_AGENT_*` settings, no proxy.
//!   Examples are offline (`--demo`, or a loopback server the block starts). Standard input is
//!   empty. A block that names a state DIR does not hold is an error.
//! * the lines after a command, up to the next command or the block's end, are its expected
//!   output: stdout and stderr merged in the order written (`2>&1` into one pipe).
//! * the command must exit 0, unless it ends with a comment `# exit N`
//!   (`$ $STATES/ch02/mini-agent -p hi   # exit 1`): still valid shell when a reader copies it,
//!   and it tells the reader the status.
//!
//! Masks (trycmd's conventions): `[..]` in an expected line matches any text within that line
//! (ids, times, paths), and a line that is just `...` matches any number of lines. ANSI escapes
//! are stripped from the output, and trailing blanks and blank lines are ignored on both sides.
//! A difference is reported at the command's line, `guide/en/NN-x.md:LINE: "Run it" output
//! differs`, with the expected and actual lines around the first mismatch; a command that takes
//! longer than [`TIMEOUT`] is killed and reported.
//!
//! The Chinese chapters show the same commands and output, so instead of running them twice
//! every `--check` compares their "Run it" console blocks with the English ones, in order.

use crate::chapters::Chapter;
use crate::{Diagnostic, Language};
use state_paths::{Invocation, STATES, block_commands, invocations};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one command may run.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// A ```` ```console ```` block of a "Run it" section: the file line of its first content line
/// and its lines.
#[derive(Debug, PartialEq, Eq)]
pub struct ConsoleBlock {
    pub line: usize,
    pub lines: Vec<String>,
}

/// One command of a block, with its expected output.
#[derive(Debug, PartialEq, Eq)]
pub struct Example {
    pub line: usize,
    pub command: String,
    pub exit: i32,
    pub expected: Vec<String>,
}

pub fn heading_level(line: &str) -> Option<usize> {
    heading(line).map(|(level, _)| level)
}

pub fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    (level > 0 && line[level..].starts_with(' ')).then(|| (level, line[level..].trim()))
}

/// A heading's text and id: `Run it {#tools-run-it}` → ("Run it", "tools-run-it").
pub fn title_and_id(title: &str) -> (&str, &str) {
    match title.rsplit_once("{#") {
        Some((text, id)) => (text.trim(), id.trim_end_matches('}').trim()),
        None => (title, ""),
    }
}

/// The rule for the English chapters: an id ending in `-run-it`, or the title `Run it`.
pub fn is_run_it(text: &str, id: &str) -> bool {
    id.ends_with("-run-it") || text == "Run it"
}

/// The console blocks of a chapter's "Run it" sections.
pub fn run_it_blocks(text: &str) -> Vec<ConsoleBlock> {
    console_blocks(text, &is_run_it).into_iter().map(|(_, block)| block).collect()
}

/// The console blocks of the sections `select` picks (by heading text and id), with the id.
pub fn console_blocks(text: &str, select: &dyn Fn(&str, &str) -> bool) -> Vec<(String, ConsoleBlock)> {
    code_blocks(text, select)
        .into_iter()
        .filter(|(_, language, _)| language == "console")
        .map(|(id, _, block)| (id, block))
        .collect()
}

/// Every fenced block of the sections `select` picks: the section's id, the block's language
/// word, and its lines.
pub fn code_blocks(text: &str, select: &dyn Fn(&str, &str) -> bool) -> Vec<(String, String, ConsoleBlock)> {
    let mut blocks = Vec::new();
    let mut section: Option<(usize, String)> = None; // the selected heading we are under
    let mut fence: Option<(String, Option<(String, ConsoleBlock)>)> = None;
    for (index, line) in text.lines().enumerate() {
        if let Some((marker, block)) = &mut fence {
            if line.trim() == marker.as_str() {
                if let (Some((language, block)), Some((_, id))) = (block.take(), &section) {
                    blocks.push((id.clone(), language, block));
                }
                fence = None;
            } else if let Some((_, block)) = block {
                block.lines.push(line.to_string());
            }
            continue;
        }
        let trimmed = line.trim_start();
        // A fence opens with three or more backticks (or tildes) and an info string; one whose
        // info holds a backtick is inline code at the start of a line, not a fence (CommonMark).
        let marker: String = trimmed.chars().take_while(|c| *c == '`' || *c == '~').collect();
        let info = trimmed[marker.len()..].trim();
        let fence_opens = (marker.starts_with("```") && !info.contains('`')) || marker.starts_with("~~~");
        if fence_opens {
            let language = crate::listings::fence_language(info).to_string();
            let block = ConsoleBlock { line: index + 2, lines: Vec::new() };
            fence = Some((marker, section.is_some().then_some((language, block))));
            continue;
        }
        if let Some((level, title)) = heading(line) {
            if section.as_ref().is_some_and(|(open, _)| level <= *open) {
                section = None;
            }
            let (text, id) = title_and_id(title);
            if section.is_none() && select(text, id) {
                section = Some((level, id.to_string()));
            }
        }
    }
    blocks
}

/// A block's commands and expected outputs. Lines before the first command are an error.
pub fn examples(block: &ConsoleBlock) -> Result<Vec<Example>, (usize, String)> {
    let mut examples: Vec<Example> = Vec::new();
    let mut continued = false;
    for (offset, line) in block.lines.iter().enumerate() {
        let line_number = block.line + offset;
        if continued && let Some(example) = examples.last_mut() {
            example.command.push('\n');
            example.command.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            continued = command.ends_with('\\');
            examples.push(Example {
                line: line_number,
                command: command.to_string(),
                exit: 0,
                expected: Vec::new(),
            });
        } else if let Some(example) = examples.last_mut() {
            example.expected.push(line.clone());
        } else if !line.trim().is_empty() {
            let message = "a console block in \"Run it\" starts with a command: `$ mini-agent …`";
            return Err((line_number, message.to_string()));
        }
    }
    for example in &mut examples {
        example.exit = declared_exit(&example.command);
    }
    Ok(examples)
}

/// `… # exit 2` → 2; 0 otherwise.
fn declared_exit(command: &str) -> i32 {
    let last = command.lines().last().unwrap_or("");
    last.rsplit_once("# exit ").and_then(|(_, status)| status.trim().parse().ok()).unwrap_or(0)
}

/// Removes ANSI escape sequences (CSI `ESC [ … letter`, OSC `ESC ] … BEL/ST`, and two-byte ones).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// One expected line against one actual line: `[..]` matches any text within the line.
pub fn line_matches(expected: &str, actual: &str) -> bool {
    let mut parts = expected.split("[..]");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = actual.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    for (index, part) in parts.iter().enumerate() {
        if index == parts.len() - 1 {
            return rest.len() >= part.len() && rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Lines as compared: trailing blanks trimmed, trailing blank lines dropped.
pub fn normalize(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(|line| line.trim_end().to_string()).collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// Expected lines (with `...` lines) against actual lines; on a mismatch, where it happened:
/// (index in expected, index in actual).
pub fn lines_match(expected: &[String], actual: &[String]) -> Result<(), (usize, usize)> {
    fn go(expected: &[String], actual: &[String], e: usize, a: usize) -> Result<(), (usize, usize)> {
        if e == expected.len() {
            return if a == actual.len() { Ok(()) } else { Err((e, a)) };
        }
        if expected[e] == "..." {
            let mut deepest = (e, a);
            for skip in a..=actual.len() {
                match go(expected, actual, e + 1, skip) {
                    Ok(()) => return Ok(()),
                    Err(at) => deepest = deepest.max(at),
                }
            }
            return Err(deepest);
        }
        match actual.get(a) {
            Some(line) if line_matches(&expected[e], line) => go(expected, actual, e + 1, a + 1),
            _ => Err((e, a)),
        }
    }
    go(expected, actual, 0, 0)
}

/// A few lines around the first difference, `-` expected and `+` actual.
fn small_diff(expected: &[String], actual: &[String], at: (usize, usize)) -> String {
    let mut diff = String::new();
    for line in expected.iter().skip(at.0).take(4) {
        diff.push_str(&format!("\n    - {line}"));
    }
    for line in actual.iter().skip(at.1).take(4) {
        diff.push_str(&format!("\n    + {line}"));
    }
    if at.0 < expected.len() && at.1 >= actual.len() {
        diff.push_str("\n    + (end of output)");
    } else if at.0 >= expected.len() {
        diff.push_str("\n    - (end of expected output)");
    }
    diff
}

/// The environment of a block: the workspace, and the directory of the chapter states.
struct Sandbox {
    dir: PathBuf,
    states: PathBuf,
    /// Process groups started here, killed when the block is done (a server it left running).
    groups: std::cell::RefCell<Vec<u32>>,
}

impl Sandbox {
    fn new(states: PathBuf) -> std::io::Result<Sandbox> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let serial = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("run-it-{}-{serial}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(Sandbox { dir: dir.canonicalize()?, states, groups: Default::default() })
    }

    /// Runs one command: merged output and exit status (`None` when killed after [`TIMEOUT`]).
    fn run(&self, command: &str) -> std::io::Result<(String, Option<i32>)> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("exec 2>&1\n{command}"))
            .current_dir(&self.dir)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env(STATES, &self.states)
            .env("HOME", &self.dir)
            .env("XDG_CONFIG_HOME", self.dir.join(".config"))
            .env("XDG_DATA_HOME", self.dir.join(".local/share"))
            .env("XDG_STATE_HOME", self.dir.join(".local/state"))
            .env("XDG_CACHE_HOME", self.dir.join(".cache"))
            .env("LANG", "C.UTF-8")
            .env("TZ", "UTC")
            .env("TERM", "dumb")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        self.groups.borrow_mut().push(child.id());
        let mut stdout = child.stdout.take().expect("piped");
        let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&received);
        let reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(count @ 1..) = stdout.read(&mut chunk) {
                sink.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .extend_from_slice(&chunk[..count]);
            }
        });
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if started.elapsed() > TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // A background process the command left behind may hold the pipe open: the output is
        // what arrived by the time the command ended, plus a short grace for the last bytes.
        let deadline = Instant::now() + Duration::from_millis(500);
        while !reader.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if reader.is_finished() {
            let _ = reader.join();
        }
        let bytes = received.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        Ok((String::from_utf8_lossy(&bytes).into_owned(), status.map(|status| status.code().unwrap_or(-1))))
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        for group in self.groups.borrow().iter() {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Chapters whose "Run it" was recorded with the finished program and still differs from what
/// their own state prints. They are reported as pending on every run, never as checked, and
/// this list only shrinks: rewrite a chapter's blocks against `$STATES/chNN/mini-agent`, then
/// remove it here.
pub const PENDING: &[&str] = &[];

fn pending(chapter: &Chapter) -> bool {
    let name = Path::new(&chapter.path).file_name().and_then(|name| name.to_str()).unwrap_or("");
    PENDING.contains(&name)
}

/// The states a block runs that `states` does not hold: `states/chNN/mini-agent` paths.
fn missing_states(block: &ConsoleBlock, states: &Path) -> Vec<PathBuf> {
    let mut missing: Vec<PathBuf> = block_commands("console", block)
        .iter()
        .flat_map(|(_, command)| invocations(command))
        .filter_map(|invocation| match invocation {
            Invocation::State(state) => Some(states.join(format!("ch{state:02}")).join("mini-agent")),
            _ => None,
        })
        .filter(|binary| !binary.is_file())
        .collect();
    missing.dedup();
    missing
}

/// Runs every English chapter's "Run it" console blocks against the states in `dir`; returns
/// the problems and the number of commands checked.
pub fn run(chapters: &[Chapter], dir: &Path) -> (Vec<Diagnostic>, usize) {
    let mut diagnostics = Vec::new();
    let mut checked = 0;
    let states = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    for chapter in chapters {
        let blocks = run_it_blocks(&chapter.text);
        if blocks.is_empty() || pending(chapter) {
            continue;
        }
        for block in &blocks {
            let examples = match examples(block) {
                Ok(examples) => examples,
                Err((line, message)) => {
                    diagnostics.push(Diagnostic::new(&chapter.path, line, message));
                    continue;
                }
            };
            let missing = missing_states(block, dir);
            if !missing.is_empty() {
                for binary in missing {
                    let state =
                        binary.parent().and_then(Path::file_name).unwrap_or_default().to_string_lossy();
                    let message = format!(
                        "no binary {} for this \"Run it\" (build it: scripts/snapshots --only {state} --no-tests)",
                        binary.display()
                    );
                    diagnostics.push(Diagnostic::new(&chapter.path, block.line, message));
                }
                continue;
            }
            let sandbox = match Sandbox::new(states.clone()) {
                Ok(sandbox) => sandbox,
                Err(error) => {
                    diagnostics.push(Diagnostic::new(
                        &chapter.path,
                        block.line,
                        format!("no workspace: {error}"),
                    ));
                    continue;
                }
            };
            for example in &examples {
                checked += 1;
                if let Some(problem) = check_example(&sandbox, example) {
                    diagnostics.push(Diagnostic::new(&chapter.path, example.line, problem));
                }
            }
        }
    }
    (diagnostics, checked)
}

fn check_example(sandbox: &Sandbox, example: &Example) -> Option<String> {
    let (output, status) = match sandbox.run(&example.command) {
        Ok(result) => result,
        Err(error) => return Some(format!("cannot run `sh -c`: {error}")),
    };
    let actual = normalize(&strip_ansi(&output));
    let expected = normalize(&example.expected.join("\n"));
    let Some(status) = status else {
        return Some(format!("\"Run it\" command still running after {} s; killed", TIMEOUT.as_secs()));
    };
    if let Err(at) = lines_match(&expected, &actual) {
        return Some(format!("\"Run it\" output differs{}", small_diff(&expected, &actual, at)));
    }
    (status != example.exit).then(|| {
        let hint =
            if example.exit == 0 { " (if that is intended, end the command with `# exit N`)" } else { "" };
        format!("\"Run it\" command exited with {status}, expected {}{hint}", example.exit)
    })
}

/// `--check`: each Chinese chapter's "Run it" console blocks (under the headings with the
/// English "Run it" ids) equal the English ones.
pub fn compare_languages(languages: &[Language], diagnostics: &mut Vec<Diagnostic>) {
    let [english, chinese] = languages else { return };
    for zh in &chinese.chapters {
        let Some(en) = english.chapters.iter().find(|chapter| chapter.name == zh.name) else { continue };
        let en_blocks = console_blocks(&en.text, &is_run_it);
        let ids: Vec<&str> = en_blocks.iter().map(|(id, _)| id.as_str()).collect();
        let zh_blocks = console_blocks(&zh.text, &|_, id| ids.contains(&id));
        for at in 0..en_blocks.len().max(zh_blocks.len()) {
            let (en_block, zh_block) = (en_blocks.get(at), zh_blocks.get(at));
            if en_block.map(|(_, block)| &block.lines) == zh_block.map(|(_, block)| &block.lines) {
                continue;
            }
            let line = zh_block.map_or(1, |(_, block)| block.line);
            let english_place =
                en_block.map_or(en.path.clone(), |(_, block)| format!("{}:{}", en.path, block.line));
            let message = format!(
                "\"Run it\" console block {} differs from {english_place}; both languages show the same commands and output",
                at + 1
            );
            diagnostics.push(Diagnostic::new(&zh.path, line, message));
        }
    }
}

/// `build-guide --run-examples DIR`: prints the problems, then how many commands were checked.
pub fn main(root: &Path, args: &[String]) -> std::process::ExitCode {
    let Some((dir, only)) = args.split_first() else {
        eprintln!(
            "usage: build-guide --run-examples DIR [NN...]   (DIR/chNN/mini-agent per chapter, DIR is $STATES; NN: only these chapters)"
        );
        return std::process::ExitCode::FAILURE;
    };
    let mut diagnostics = Vec::new();
    let mut sources = crate::read_sources(root, &mut diagnostics);
    let Some(english) = sources.languages.first_mut() else { return std::process::ExitCode::FAILURE };
    if !only.is_empty() {
        english.chapters.retain(|chapter| only.iter().any(|name| chapter.name.starts_with(name.as_str())));
    }
    let (problems, checked) = run(&english.chapters, Path::new(dir));
    for problem in &problems {
        println!("{problem}");
    }
    eprintln!("guide: {checked} \"Run it\" commands checked, {} problems", problems.len());
    if !PENDING.is_empty() {
        eprintln!(
            "guide: PENDING, not checked: the \"Run it\" of {} (recorded with the finished program, not yet with their own state)",
            PENDING.join(", ")
        );
    }
    if problems.is_empty() { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE }
}

#[path = "state_paths.rs"]
pub mod state_paths;

#[cfg(test)]
#[path = "examples_tests.rs"]
mod tests;
