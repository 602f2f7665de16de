//! build-guide: turns `guide/` and `src/` into the one-file bilingual book, and checks that
//! the book still matches the code it explains.
//!
//! ```sh
//! cargo run --release --bin build-guide              # write guide/index.html (problems are warnings)
//! cargo run --release --bin build-guide -- --check   # every check; exit 1 with file:line lines
//! cargo run --release --bin build-guide -- --accept 03-tools.md#dispatch   # record a translation
//! cargo run --release --bin build-guide -- --stats   # reading cost: words, characters, code lines, listing lengths
//! cargo run --release --bin build-guide -- --run-examples target/snapshots [NN…]  # run every "Run it" (or chapter NN's)
//! ```
//!
//! It is a package of its own, `scripts/guide/Cargo.toml` (this file is its binary, its
//! modules are in `scripts/guide/`, its end-to-end tests in `scripts/guide/tests/`), a
//! default member of the workspace: the commands above and plain `cargo test` work from the
//! repository root, and `cargo install --path .` installs `mini-agent` alone.
//!
//! The build writes the page even when it finds problems (so a draft can be read) and lists
//! them; `--check` is the gate. The library entry points are [`build`] (root → page and
//! diagnostics, writes nothing), [`check`] and [`accept`].
//!
//! # Writing a chapter
//!
//! * Chapters are `guide/en/NN-slug.md` and `guide/zh/NN-slug.md`; the file name pairs them.
//!   Both languages have the same files. The book is in file-name order.
//! * Every heading carries an explicit id: `## The tool loop {#tool-loop}` and
//!   `## 工具循环 {#tool-loop}`. Ids use `a-z 0-9 -` and are unique across the whole book
//!   (they become the page's `#en-tool-loop` / `#zh-tool-loop`). A chapter starts with its one
//!   `#` heading (its title). Both languages have the same sequence of heading levels and ids.
//! * Rust code is never pasted. A fenced `rust` block holds exactly one include line, naming a
//!   source file under `src/` and an anchor in it:
//!
//!   ````text
//!   ```rust
//!   {{#include src/ch03_tools/mod.rs:dispatch}}
//!   ```
//!   ````
//!
//!   The region between `// ANCHOR: dispatch` and `// ANCHOR_END: dispatch` is shown (other
//!   marker lines dropped, dedented) under a caption naming the file and anchor. Every anchor in
//!   `src/` is included by some chapter, and both languages include the same anchors in the same
//!   order (a top-level listing is then printed once and shared by both languages).
//! * A listing shows its region in the chapter's state: chapter N (from the file name `NN-…`;
//!   preface and appendix: the finished program) drops each item whose `#[cfg(feature = "chM")]`
//!   says it comes later, or whose `#[cfg(not(feature = "chM"))]` says it was already replaced;
//!   the attributes of the items it keeps are hidden (`guide/states.rs`, `guide/anchors.rs`). A
//!   listing is at most 50 lines as shown (a whole function under its own name: 150), never empty.
//! * No file of `src/` or `scripts/` is over 600 lines before its tests: the book shows this
//!   code, and a reader must be able to hold a file (`guide/sizes.rs`).
//! * "Run it" shows ```` ```console ```` blocks, `$ command` then its output, that
//!   `--run-examples` runs against each chapter's state (rules and masks: `guide/examples.rs`).
//! * Other fenced blocks name their language: `toml`, `sh` (or `console`), `json` (or
//!   `jsonl`), `text`. Indented code blocks are refused (they cannot name a language).
//! * Links: `[text](#id)` within the chapter, `[text](03-tools.md#id)` or `[text](03-tools.md)`
//!   to another. No external URL (`http://`, `https://`, `//host`) in prose, links or images:
//!   the book works offline. A URL inside backticks or a code block is text, and allowed (a
//!   `--base-url` example). No images (draw a diagram instead); no raw HTML except
//!   `<kbd> <br> <sub> <sup>` and comments
//!   (a bare `Vec<Message>` in prose would be eaten as a tag: use backticks).
//! * Diagrams: a paragraph of its own, `{{#diagram seams}}`, shows `guide/diagrams/seams.en.svg`
//!   in the English chapter and `seams.zh.svg` in the Chinese one: hand-written SVG, one file
//!   per language (labels differ in width), inlined into the page, captioned by its `<title>`,
//!   coloured by the page's `.diagram` classes so it follows the theme (`guide/diagrams.rs`
//!   says which). Both languages show the same diagrams in the same order; a missing drawing,
//!   one drawn in one language only, one no chapter shows, or one holding a script, an event
//!   handler or a reference outside itself is an error.
//! * Glossary: `guide/glossary.tsv` gives each term its one Chinese rendering and the
//!   renderings refused (see `guide/glossary.rs`); the appendix shows it with `{{#glossary}}`,
//!   and a Chinese chapter that uses a refused rendering fails the check with
//!   `file:line: "X" should be rendered "Y" (glossary)`.
//! * Parts: `guide/<lang>/parts.txt` has one line per part, `NN Title`, naming the chapter that
//!   opens it, e.g. `01 Part 1 · The agent` / `01 第一部分 · 智能体`. A part whose line ends with
//!   `{.unnumbered}` (`14 Appendix {.unnumbered}`) holds unnumbered chapters.
//! * Numbers: the builder numbers chapters from their file names (`03-tools.md` is chapter 3,
//!   shown as "3 · Tools" / "第 3 章 · 工具"), so a title never says "Chapter 3". `00-*` (the
//!   preface) and the chapters of an `{.unnumbered}` part have no number.
//!
//! # The chapter shape
//!
//! Every numbered chapter has the `##` sections listed in `guide/shape.txt`, in that order,
//! each with its fixed title and an id ending in the listed suffix (`{#retry-run-it}`):
//!
//! ```text
//! what-you-build    | What you will build     | 本章要做什么   2–4 sentences
//! prerequisites     | Prerequisites           | 前置章节       the earlier chapters it uses
//!   (the code: sections of the chapter's own)
//! plugs-in          | How it plugs in         | 如何接入       which seam, what it wraps
//! what-can-go-wrong | What can go wrong       | 可能出什么错
//! run-it            | Run it                  | 动手运行
//! summary           | Summary and what's next | 小结与下一步
//! exercises         | Exercises               | 练习
//! ```
//!
//! In the exercises section each exercise opens with its difficulty and title in bold,
//! `**★ Predict the message.**` (★ a few minutes, ★★ an afternoon's change with a test, ★★★ a
//! design question or a larger change), and is followed by its answer in a solution box. Both
//! languages have the same number of deep dives and solutions per chapter. There are no
//! exemptions: a new chapter (15 and on too) has the shape before it lands. The rule lives in
//! `guide/shape.rs`.
//!
//! # Boxes: deep dives and solutions
//!
//! Two block quotes are drawn as boxes (`guide/boxes.rs`), keyed by their first bold words:
//!
//! ```text
//! > **Deep dive: why the directory is synced too.** Optional material a first reading skips…
//! > **深入：为什么还要同步目录** …
//!
//! > **Solution.** The answer, a few sentences or a short plan; hidden until clicked.
//! > **解答：** …
//! ```
//!
//! A deep dive becomes `<aside class="deep-dive">` (a marked box); a solution becomes a closed
//! `<details>` whose summary is the bold words (opened when the page is printed). Both may hold
//! anything a quote may, includes too. No raw HTML is needed, so the tag list above stays short.
//!
//! # Translations
//!
//! English is the source. After bringing a Chinese section in line with its English one, run
//! `--accept 03-tools.md#dispatch` (or `--accept 03-tools.md` for a chapter, or `--accept` for
//! everything): it stores the hash of the English section in `guide/zh/.translated.json` (see
//! `guide/translations.rs`). When the English section changes later, `--check` names the
//! Chinese heading that is now stale, with the English file:line to compare against.
//!
//! # Checks
//!
//! Anchors balanced, unique, used; includes resolve to non-empty regions; same chapters, parts,
//! heading skeletons, includes and diagrams in both languages; diagrams safe and used; Chinese
//! terms as the glossary renders them; ids unique; links resolve; no pasted Rust; translations
//! current; no external reference in the output; chapters shaped as `guide/shape.txt`; no
//! chapter's code names a later one (`guide/lookback.rs`); `guide/index.html` is a fresh build.
//!
//! # The page
//!
//! A URL hash can set the view, which makes screenshots reproducible:
//! `index.html#theme=dark&lang=zh&at=tool-loop&q=循环` (theme, language, search, and the
//! section the page starts at: what comes before it is left out, so the section is at the top
//! without scrolling, which is what a headless `chromium --screenshot` needs: it captures a
//! scrolled page as blank). `#chapter=3` shows only chapter 3 (for a screenshot or a print).
//! A plain `#zh-tool-loop` scrolls to that heading in that language, as a reader's link does
//! (in headless Chromium it cuts like `at=`, for the same reason). Screenshot command:
//!
//! ```sh
//! chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir=$(mktemp -d) \
//!   --window-size=1200,900 --screenshot=/tmp/zh.png "file://$PWD/guide/index.html#theme=dark&lang=zh&chapter=3"
//! ```
//!
//! The page fits a 1280 px and a phone screen in both languages (`guide/page.rs`); `.ci/browser`
//! checks it in headless Chromium.

#[path = "guide/anchors.rs"]
mod anchors;
#[path = "guide/boxes.rs"]
mod boxes;
#[path = "guide/chapters.rs"]
mod chapters;
#[path = "guide/compare.rs"]
mod compare;
#[path = "guide/diagrams.rs"]
mod diagrams;
#[path = "guide/examples.rs"]
mod examples;
#[path = "guide/glossary.rs"]
mod glossary;
#[path = "guide/highlight.rs"]
mod highlight;
#[path = "guide/listings.rs"]
mod listings;
#[path = "guide/page.rs"]
mod page;
#[path = "guide/shape.rs"]
mod shape;
#[path = "guide/sizes.rs"]
mod sizes;
#[path = "guide/states.rs"]
mod states;
#[path = "guide/stats.rs"]
mod stats;
#[cfg(test)]
#[path = "guide/tests.rs"]
mod tests;
#[path = "guide/translations.rs"]
mod translations;
#[path = "guide/wrapping.rs"]
mod wrapping;

use chapters::{Chapter, Outline, Rendered};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The languages of the book, English (the source) first.
const LANGUAGES: [&str; 2] = ["en", "zh"];
const OUTPUT_PATH: &str = "guide/index.html";

/// One problem, printed as `file:line: message` (line 0 when it concerns the whole file).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl Diagnostic {
    pub fn new(file: &str, line: usize, message: String) -> Diagnostic {
        Diagnostic { file: file.to_string(), line, message }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

/// One language's chapters with their outlines.
struct Language {
    code: &'static str,
    chapters: Vec<Chapter>,
    outlines: Vec<Outline>,
    parts: BTreeMap<String, Part>,
}

/// A part of the book, opened by the chapter it is keyed by in [`Language::parts`].
#[derive(Debug, PartialEq, Eq)]
struct Part {
    title: String,
    /// Chapters of this part carry no number (the appendix).
    unnumbered: bool,
}

/// The marker that ends a `parts.txt` line of a part without chapter numbers.
const UNNUMBERED: &str = "{.unnumbered}";

/// Everything read from disk, before rendering.
struct Sources {
    anchors: anchors::AnchorMap,
    languages: Vec<Language>,
    diagrams: diagrams::Diagrams,
    glossary: glossary::Glossary,
}

fn read_sources(root: &Path, diagnostics: &mut Vec<Diagnostic>) -> Sources {
    let anchors = anchors::scan(root, diagnostics);
    let languages = LANGUAGES
        .iter()
        .map(|code| {
            let mut chapters = read_chapters(root, code, diagnostics);
            let outlines = chapters.iter().map(|chapter| chapters::outline(chapter, diagnostics)).collect();
            let parts = read_parts(root, code, &chapters, diagnostics);
            number_chapters(&mut chapters, &parts);
            Language { code, chapters, outlines, parts }
        })
        .collect();
    let diagrams = diagrams::scan(root, &LANGUAGES, diagnostics);
    Sources { anchors, languages, diagrams, glossary: glossary::load(root, diagnostics) }
}

fn read_chapters(root: &Path, language: &str, diagnostics: &mut Vec<Diagnostic>) -> Vec<Chapter> {
    let dir = root.join("guide").join(language);
    let mut names: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => {
            entries.flatten().map(|entry| entry.file_name().to_string_lossy().into_owned()).collect()
        }
        Err(error) => {
            diagnostics.push(Diagnostic::new(
                &format!("guide/{language}"),
                0,
                format!("cannot list chapters: {error}"),
            ));
            return Vec::new();
        }
    };
    names.sort();
    let mut chapters = Vec::new();
    for name in names.into_iter().filter(|name| name.ends_with(".md")) {
        let path = format!("guide/{language}/{name}");
        if !is_chapter_name(&name) {
            diagnostics.push(Diagnostic::new(
                &path,
                0,
                "chapter files are named NN-slug.md (two digits, lowercase slug)".into(),
            ));
            continue;
        }
        match std::fs::read_to_string(dir.join(&name)) {
            Ok(text) => chapters.push(Chapter { name, path, text, number: None }),
            Err(error) => diagnostics.push(Diagnostic::new(&path, 0, format!("cannot read: {error}"))),
        }
    }
    chapters
}

fn is_chapter_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".md") else { return false };
    let bytes = stem.as_bytes();
    bytes.len() > 3
        && bytes[..2].iter().all(u8::is_ascii_digit)
        && bytes[2] == b'-'
        && stem[3..].chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Chapter numbers come from file names, so inserting a chapter renumbers nothing by hand and
/// both languages always agree. The preface (`00-*`) and unnumbered parts get none.
fn number_chapters(chapters: &mut [Chapter], parts: &BTreeMap<String, Part>) {
    let mut numbered = true;
    for chapter in chapters {
        if let Some(part) = parts.get(&chapter.name) {
            numbered = !part.unnumbered;
        }
        let number: u32 = chapter.name[..2].parse().unwrap_or(0);
        chapter.number = (numbered && number > 0).then_some(number);
    }
}

/// `guide/<lang>/parts.txt`: `NN Title [{.unnumbered}]` per line → chapter file name → part.
fn read_parts(
    root: &Path,
    language: &str,
    chapters: &[Chapter],
    diagnostics: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Part> {
    let path = format!("guide/{language}/parts.txt");
    let Ok(text) = std::fs::read_to_string(root.join(&path)) else { return BTreeMap::new() };
    let mut parts = BTreeMap::new();
    for (index, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
        let (number, title) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
        let (title, unnumbered) = match title.trim().strip_suffix(UNNUMBERED) {
            Some(title) => (title.trim(), true),
            None => (title.trim(), false),
        };
        match chapters.iter().find(|chapter| chapter.name.starts_with(&format!("{number}-"))) {
            Some(chapter) if !title.is_empty() => {
                parts.insert(chapter.name.clone(), Part { title: title.to_string(), unnumbered });
            }
            Some(_) => diagnostics.push(Diagnostic::new(
                &path,
                index + 1,
                "a part line is `NN Title`; the title is missing".into(),
            )),
            None => diagnostics.push(Diagnostic::new(
                &path,
                index + 1,
                format!("no chapter numbered {number} in guide/{language}"),
            )),
        }
    }
    parts
}

/// The result of a build: the page, and every problem found on the way.
pub struct Build {
    pub html: String,
    pub diagnostics: Vec<Diagnostic>,
}

/// Builds the guide of the repository at `root`. Never writes anything.
pub fn build(root: &Path) -> Build {
    let mut diagnostics = Vec::new();
    let sources = read_sources(root, &mut diagnostics);
    compare::languages(&sources.languages, &mut diagnostics);
    shape::check_book(root, &sources.languages, &mut diagnostics);
    examples::compare_languages(&sources.languages, &mut diagnostics);
    examples::state_paths::check(&sources.languages, &mut diagnostics);
    let records = translations::load(root, &mut diagnostics);
    translations::check(&records, &pairs(&sources.languages), &mut diagnostics);

    let mut rendered_languages: Vec<Vec<Rendered>> = Vec::new();
    for language in &sources.languages {
        compare::unique_ids(language, &mut diagnostics);
        let targets: chapters::LinkTargets = language
            .chapters
            .iter()
            .zip(&language.outlines)
            .map(|(chapter, outline)| {
                (chapter.name.clone(), outline.headings.iter().map(|heading| heading.id.clone()).collect())
            })
            .collect();
        let (anchors, diagrams, glossary) = (&sources.anchors, &sources.diagrams, &sources.glossary);
        let context = chapters::RenderContext {
            language: language.code,
            anchors,
            targets: &targets,
            diagrams,
            glossary,
        };
        if language.code == "zh" {
            language
                .chapters
                .iter()
                .for_each(|chapter| glossary::check_chapter(chapter, glossary, &mut diagnostics));
        }
        rendered_languages.push(
            language
                .chapters
                .iter()
                .map(|chapter| chapters::render(chapter, &context, &mut diagnostics))
                .collect(),
        );
    }
    check_unused_anchors(&sources.anchors, &rendered_languages, &mut diagnostics);
    let shown: BTreeSet<&String> = rendered_languages.iter().flatten().flat_map(|c| &c.diagrams).collect();
    diagrams::check_unused(&sources.diagrams, &shown, &mut diagnostics);

    let books: Vec<page::Book> = sources
        .languages
        .iter()
        .zip(&rendered_languages)
        .map(|(language, rendered)| page::Book {
            language: language.code,
            chapters: language
                .chapters
                .iter()
                .zip(&language.outlines)
                .zip(rendered)
                .map(|((chapter, outline), rendered)| page::ChapterPage {
                    name: &chapter.name,
                    part: language.parts.get(&chapter.name).map(|part| part.title.as_str()),
                    number: chapter.number,
                    headings: &outline.headings,
                    pieces: &rendered.pieces,
                    sections: &rendered.sections,
                })
                .collect(),
        })
        .collect();
    let html = page::assemble(&books);
    for (line, url) in page::external_references(&html) {
        diagnostics.push(Diagnostic::new(
            OUTPUT_PATH,
            line,
            format!("external reference `{url}` in the output; the guide must work offline"),
        ));
    }
    diagnostics.sort();
    diagnostics.dedup();
    Build { html, diagnostics }
}

/// Everything `build` checks, plus: the committed page equals this build.
pub fn check(root: &Path) -> Vec<Diagnostic> {
    let Build { html, mut diagnostics } = build(root);
    sizes::check_rules(root, &mut diagnostics);
    match std::fs::read(root.join(OUTPUT_PATH)) {
        Ok(committed) if committed == html.as_bytes() => {}
        Ok(_) => diagnostics.push(Diagnostic::new(
            OUTPUT_PATH,
            0,
            "out of date; run `cargo run --release --bin build-guide` and commit it".into(),
        )),
        Err(error) => diagnostics.push(Diagnostic::new(
            OUTPUT_PATH,
            0,
            format!("cannot read ({error}); run `cargo run --release --bin build-guide`"),
        )),
    }
    diagnostics.sort();
    diagnostics
}

/// Records reviewed translations (see the module doc). Returns how many sections were accepted.
pub fn accept(root: &Path, selectors: &[String]) -> Result<usize, String> {
    let mut diagnostics = Vec::new();
    let sources = read_sources(root, &mut diagnostics);
    let mut records = translations::load(root, &mut diagnostics);
    if let Some(problem) = diagnostics.iter().find(|diagnostic| diagnostic.file == translations::RECORDS_PATH)
    {
        return Err(problem.to_string());
    }
    let accepted = translations::accept(&mut records, &pairs(&sources.languages), selectors)
        .map_err(|unmatched| format!("no Chinese section matches {}", unmatched.join(", ")))?;
    translations::save(root, &records)
        .map_err(|error| format!("cannot write {}: {error}", translations::RECORDS_PATH))?;
    Ok(accepted)
}

fn pairs(languages: &[Language]) -> Vec<translations::Pair<'_>> {
    let [english, chinese] = languages else { return Vec::new() };
    english
        .chapters
        .iter()
        .zip(&english.outlines)
        .filter_map(|(english_chapter, english_outline)| {
            let position =
                chinese.chapters.iter().position(|chapter| chapter.name == english_chapter.name)?;
            Some(translations::Pair {
                name: &english_chapter.name,
                english_path: &english_chapter.path,
                chinese_path: &chinese.chapters[position].path,
                english: &english_outline.headings,
                chinese: &chinese.outlines[position].headings,
            })
        })
        .collect()
}

fn check_unused_anchors(
    anchors: &anchors::AnchorMap,
    rendered: &[Vec<Rendered>],
    diagnostics: &mut Vec<Diagnostic>,
) {
    let included: BTreeSet<&String> =
        rendered.iter().flatten().flat_map(|chapter| &chapter.included).collect();
    for (file, file_anchors) in anchors {
        for (name, anchor) in file_anchors {
            if !included.contains(&format!("{file}:{name}")) {
                diagnostics.push(Diagnostic::new(
                    file,
                    anchor.line,
                    format!("anchor `{name}` is not included by any chapter; show it or remove the markers"),
                ));
            }
        }
    }
}

/// The current directory when it looks like the repository (so a copied binary works on any
/// checkout), else the one this binary was built from (so it works from a subdirectory): the
/// package lives in `scripts/guide/`, two levels below the repository.
fn repository_root() -> PathBuf {
    let current = PathBuf::from(".");
    if current.join("guide").is_dir() && current.join("src").is_dir() {
        current
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }
}

const USAGE: &str =
    "usage: build-guide [--check | --stats | --accept [NN-slug.md[#id]]... | --run-examples DIR [NN]...]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = repository_root();
    match args.first().map(String::as_str) {
        None => {
            let started = std::time::Instant::now();
            let Build { html, diagnostics } = build(&root);
            if let Err(error) = std::fs::write(root.join(OUTPUT_PATH), &html) {
                eprintln!("cannot write {OUTPUT_PATH}: {error}");
                return ExitCode::FAILURE;
            }
            for diagnostic in &diagnostics {
                eprintln!("warning: {diagnostic}");
            }
            let problems = if diagnostics.is_empty() {
                String::new()
            } else {
                format!("; {} problems, see --check", diagnostics.len())
            };
            eprintln!(
                "wrote {OUTPUT_PATH} ({} bytes) in {} ms{problems}",
                html.len(),
                started.elapsed().as_millis()
            );
            ExitCode::SUCCESS
        }
        Some("--check") if args.len() == 1 => {
            let diagnostics = check(&root);
            for diagnostic in &diagnostics {
                println!("{diagnostic}");
            }
            if diagnostics.is_empty() {
                eprintln!("guide: all checks pass");
                ExitCode::SUCCESS
            } else {
                eprintln!("guide: {} problems", diagnostics.len());
                ExitCode::FAILURE
            }
        }
        Some("--stats") if args.len() == 1 => {
            print!("{}", stats::reading_stats(&root));
            ExitCode::SUCCESS
        }
        Some("--accept") => match accept(&root, &args[1..]) {
            Ok(count) => {
                eprintln!("accepted {count} Chinese sections; recorded in {}", translations::RECORDS_PATH);
                ExitCode::SUCCESS
            }
            Err(message) => {
                eprintln!("build-guide: {message}");
                ExitCode::FAILURE
            }
        },
        Some("--run-examples") => examples::main(&root, &args[1..]),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("build-guide: unknown argument {other:?}\n{USAGE}");
            ExitCode::FAILURE
        }
    }
}
