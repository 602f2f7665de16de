//! Comparing the two languages: the same chapters, parts, heading skeletons, includes and
//! diagrams, in the same order, so the page can pair them and the toggle keeps the place.

use crate::chapters::Outline;
use crate::{Diagnostic, Language, Part, UNNUMBERED};
use std::collections::BTreeMap;

/// Same chapter files, same parts, same heading skeletons, same includes in both languages.
pub fn languages(languages: &[Language], diagnostics: &mut Vec<Diagnostic>) {
    let [english, chinese] = languages else { return };
    let openings = |language: &Language| {
        language.parts.iter().map(|(name, part)| (name.clone(), part.unnumbered)).collect::<Vec<_>>()
    };
    if openings(english) != openings(chinese) {
        let starts = |language: &Language| {
            let start = |(name, part): (&String, &Part)| {
                format!("{}{}", &name[..2], if part.unnumbered { UNNUMBERED } else { "" })
            };
            language.parts.iter().map(start).collect::<Vec<_>>().join(" ")
        };
        let message = format!(
            "parts open at chapters [{}] here but [{}] in guide/en/parts.txt",
            starts(chinese),
            starts(english)
        );
        diagnostics.push(Diagnostic::new("guide/zh/parts.txt", 0, message));
    }
    for (this, other) in [(english, chinese), (chinese, english)] {
        for chapter in &this.chapters {
            if !other.chapters.iter().any(|candidate| candidate.name == chapter.name) {
                let message = format!(
                    "chapter has no counterpart guide/{}/{}; every chapter exists in both languages",
                    other.code, chapter.name
                );
                diagnostics.push(Diagnostic::new(&chapter.path, 1, message));
            }
        }
    }
    for (chapter, outline) in english.chapters.iter().zip(&english.outlines) {
        let Some(position) = chinese.chapters.iter().position(|candidate| candidate.name == chapter.name)
        else {
            continue;
        };
        let (zh_chapter, zh_outline) = (&chinese.chapters[position], &chinese.outlines[position]);
        let skeleton = |outline: &Outline| {
            outline.headings.iter().map(|heading| (heading.level, heading.id.clone())).collect::<Vec<_>>()
        };
        let (en_skeleton, zh_skeleton) = (skeleton(outline), skeleton(zh_outline));
        if let Some(at) = (0..en_skeleton.len().max(zh_skeleton.len()))
            .find(|at| en_skeleton.get(*at) != zh_skeleton.get(*at))
        {
            let describe = |entry: Option<&(u8, String)>| match entry {
                Some((level, id)) => format!("`{} {{#{id}}}`", "#".repeat((*level).into())),
                None => "nothing".to_string(),
            };
            let zh_line =
                zh_outline.headings.get(at).or(zh_outline.headings.last()).map_or(1, |heading| heading.line);
            let en_line =
                outline.headings.get(at).or(outline.headings.last()).map_or(1, |heading| heading.line);
            let message = format!(
                "heading skeleton differs from {}:{}: heading {} is {} here but {} in English",
                chapter.path,
                en_line,
                at + 1,
                describe(zh_skeleton.get(at)),
                describe(en_skeleton.get(at))
            );
            diagnostics.push(Diagnostic::new(&zh_chapter.path, zh_line, message));
        }
        let targets = |outline: &Outline| {
            outline.includes.iter().map(|include| include.target.clone()).collect::<Vec<_>>()
        };
        let (en_includes, zh_includes) = (targets(outline), targets(zh_outline));
        if let Some(at) = (0..en_includes.len().max(zh_includes.len()))
            .find(|at| en_includes.get(*at) != zh_includes.get(*at))
        {
            let zh_line = zh_outline.includes.get(at).map_or(1, |include| include.line);
            let message = format!(
                "include {} is {} here but {} in {}; both languages show the same code",
                at + 1,
                zh_includes.get(at).map_or("missing", String::as_str),
                en_includes.get(at).map_or("missing", String::as_str),
                chapter.path
            );
            diagnostics.push(Diagnostic::new(&zh_chapter.path, zh_line, message));
        }
        let names = |outline: &Outline| outline.diagrams.iter().map(|d| d.target.clone()).collect::<Vec<_>>();
        let (en_diagrams, zh_diagrams) = (names(outline), names(zh_outline));
        if let Some(at) = (0..en_diagrams.len().max(zh_diagrams.len()))
            .find(|at| en_diagrams.get(*at) != zh_diagrams.get(*at))
        {
            let zh_line = zh_outline.diagrams.get(at).map_or(1, |diagram| diagram.line);
            let message = format!(
                "diagram {} is {} here but {} in {}; both languages show the same diagrams",
                at + 1,
                zh_diagrams.get(at).map_or("missing", String::as_str),
                en_diagrams.get(at).map_or("missing", String::as_str),
                chapter.path
            );
            diagnostics.push(Diagnostic::new(&zh_chapter.path, zh_line, message));
        }
    }
}

/// Heading ids become page ids (`en-tool-loop`), so they must be unique across a language.
pub fn unique_ids(language: &Language, diagnostics: &mut Vec<Diagnostic>) {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (chapter, outline) in language.chapters.iter().zip(&language.outlines) {
        for heading in &outline.headings {
            match seen.get(heading.id.as_str()) {
                Some(first) if *first != chapter.path => diagnostics.push(Diagnostic::new(
                    &chapter.path,
                    heading.line,
                    format!(
                        "heading id `{}` is already used in {first}; ids are unique across the book",
                        heading.id
                    ),
                )),
                Some(_) => {} // reported by the chapter's own outline
                None => {
                    seen.insert(&heading.id, &chapter.path);
                }
            }
        }
    }
}
