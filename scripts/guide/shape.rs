//! The chapter shape: the sections every numbered chapter has, so a reader always knows where
//! to look (what the chapter builds, what to read first, where it plugs in, what can go wrong,
//! something to run, a summary, exercises with answers).
//!
//! The shape belongs to the book, not to the builder, so it is written in the book:
//! `guide/shape.txt` has one line per required `##` section, `suffix | English title | 中文标题`,
//! in the order the sections appear. A chapter whose title id is `retries` may call its section
//! `{#retry-run-it}`: only the id's suffix (`-run-it`) is fixed, and the title, so the same
//! section reads the same in every chapter and both languages. Other sections go anywhere
//! between them. The exercises section holds one or more exercises, each a paragraph opening
//! with its difficulty in bold (`**★ Predict the message.**`, `**★★ …**`, `**★★★ …**`) and
//! followed by its `> **Solution.**` box (see `boxes.rs`). A book without `guide/shape.txt`
//! (the builder's test fixtures) has no shape rule.

use crate::Diagnostic;
use crate::Language;
use crate::boxes;
use crate::chapters::{Chapter, Heading, Outline};
use std::path::Path;

pub const RULES_PATH: &str = "guide/shape.txt";

/// One required section: its id suffix and its title in each language.
#[derive(Debug, PartialEq, Eq)]
pub struct Section {
    pub suffix: String,
    pub english: String,
    pub chinese: String,
}

/// `guide/shape.txt`, read. Empty when the file does not exist.
#[derive(Debug, Default)]
pub struct Rules {
    pub sections: Vec<Section>,
}

pub fn load(root: &Path, diagnostics: &mut Vec<Diagnostic>) -> Rules {
    let Ok(text) = std::fs::read_to_string(root.join(RULES_PATH)) else { return Rules::default() };
    let mut rules = Rules::default();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('|').map(str::trim).collect();
        match fields[..] {
            [suffix, english, chinese]
                if !suffix.is_empty() && !english.is_empty() && !chinese.is_empty() =>
            {
                rules.sections.push(Section {
                    suffix: suffix.to_string(),
                    english: english.to_string(),
                    chinese: chinese.to_string(),
                });
            }
            _ => diagnostics.push(Diagnostic::new(
                RULES_PATH,
                index + 1,
                "a shape line is `id-suffix | English title | 中文标题`".into(),
            )),
        }
    }
    rules
}

/// Every numbered chapter has the sections of `guide/shape.txt`, and the same boxes in both
/// languages (see `guide/shape.rs`).
pub fn check_book(root: &Path, languages: &[Language], diagnostics: &mut Vec<Diagnostic>) {
    let rules = load(root, diagnostics);
    for language in languages {
        for (chapter, outline) in language.chapters.iter().zip(&language.outlines) {
            check(&rules, language.code, chapter, outline, diagnostics);
        }
    }
    let [english, chinese] = languages else { return };
    for chapter in &english.chapters {
        if let Some(other) = chinese.chapters.iter().find(|other| other.name == chapter.name) {
            compare_boxes(chapter, other, diagnostics);
        }
    }
}

/// Checks one numbered chapter of one language against the shape.
pub fn check(rules: &Rules, language: &str, chapter: &Chapter, outline: &Outline, out: &mut Vec<Diagnostic>) {
    if rules.sections.is_empty() || chapter.number.is_none() {
        return;
    }
    let title_line = outline.headings.first().map_or(1, |heading| heading.line);
    let mut last: Option<(usize, &Section)> = None;
    for section in &rules.sections {
        let title = if language == "zh" { &section.chinese } else { &section.english };
        let ending = format!("-{}", section.suffix);
        let Some(position) = outline.headings.iter().position(|heading| heading.id.ends_with(&ending)) else {
            let prefix = outline.headings.first().map_or("chapter", |heading| heading.id.as_str());
            let message = format!(
                "missing section `## {title} {{#{prefix}{ending}}}`; every numbered chapter has the sections of {RULES_PATH}: {}",
                rules.sections.iter().map(|section| section.suffix.as_str()).collect::<Vec<_>>().join(", ")
            );
            out.push(Diagnostic::new(&chapter.path, title_line, message));
            continue;
        };
        let heading = &outline.headings[position];
        if heading.level != 2 || heading.title != *title {
            let message = format!(
                "section `{{#{}}}` is written `{} {}`; the shape ({RULES_PATH}) writes it `## {title}`",
                heading.id,
                "#".repeat(heading.level.into()),
                heading.title
            );
            out.push(Diagnostic::new(&chapter.path, heading.line, message));
        }
        if let Some((before, previous)) = last
            && position < before
        {
            let message = format!(
                "section `{{#{}}}` comes before `-{}`; the shape ({RULES_PATH}) puts it after",
                heading.id, previous.suffix
            );
            out.push(Diagnostic::new(&chapter.path, heading.line, message));
        }
        last = Some((position, section));
        if section.suffix == "exercises" {
            check_exercises(&outline.headings[position..], chapter, out);
        }
    }
}

/// The exercises section and its subsections: each exercise tagged ★ to ★★★ and answered.
fn check_exercises(headings: &[Heading], chapter: &Chapter, out: &mut Vec<Diagnostic>) {
    let Some((heading, rest)) = headings.split_first() else { return };
    let inner = rest.iter().take_while(|sub| sub.level > heading.level);
    let text: Vec<&str> =
        std::iter::once(heading).chain(inner).flat_map(|section| section.section.lines()).collect();
    let mut exercises = 0;
    for line in &text {
        let Some(tag) = line.strip_prefix("**★") else { continue };
        exercises += 1;
        let stars = 1 + tag.chars().take_while(|c| *c == '★').count();
        if stars > 3 || !tag[(stars - 1) * '★'.len_utf8()..].starts_with(' ') {
            let message = format!(
                "exercise `{}` : tag it ★, ★★ or ★★★ followed by a space, inside the bold title",
                line.trim()
            );
            out.push(Diagnostic::new(&chapter.path, heading.line, message));
        }
    }
    let solutions = boxes::count(&text.join("\n")).1;
    if exercises == 0 {
        let message =
            "the exercises section has no exercise; open each with its difficulty in bold, `**★ Title.**`";
        out.push(Diagnostic::new(&chapter.path, heading.line, message.into()));
    } else if solutions != exercises {
        let message = format!(
            "{exercises} exercises but {solutions} solutions; follow each exercise with a `> **Solution.**` box"
        );
        out.push(Diagnostic::new(&chapter.path, heading.line, message));
    }
}

/// Both languages of a chapter have the same number of deep dives and of solutions.
pub fn compare_boxes(english: &Chapter, chinese: &Chapter, out: &mut Vec<Diagnostic>) {
    let (en, zh) = (boxes::count(&english.text), boxes::count(&chinese.text));
    if en != zh {
        let message = format!(
            "{} deep dives and {} solutions here but {} and {} in {}; both languages have the same boxes",
            zh.0, zh.1, en.0, en.1, english.path
        );
        out.push(Diagnostic::new(&chinese.path, 1, message));
    }
}
