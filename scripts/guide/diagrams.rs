//! Diagrams: hand-written SVG pictures, one file per language, inlined into the page.
//!
//! A chapter shows a picture with a paragraph of its own, `{{#diagram seams}}`; the English
//! chapter gets `guide/diagrams/seams.en.svg` and the Chinese one `seams.zh.svg`. Two files
//! rather than one file with both languages' `<text>`: Chinese labels have other widths, so
//! each language lays its own boxes out, and each file can be opened and read alone.
//!
//! The SVG is pasted into the page as it is, so the page stays one offline file; that is why
//! the scan is strict. A diagram may not reference anything outside itself (`href`, `src`,
//! `url(…)` other than `#id`, `@import`), may not hold a `<script>`, an `on…=` handler or a
//! `<foreignObject>`, must have a `<title>` (the figure's caption, and what a screen reader
//! says) and a `viewBox` (so it scales to the column). Its ids are prefixed with
//! `NAME-LANG-` on the way in, so the two languages' copies of an arrowhead `<marker>` never
//! collide. Colours come from the page's stylesheet (`page.css`, the `.diagram` rules:
//! `box`, `hl`, `line`, `arrow`, `muted`, `ok`, `warn`, `bad`…), which follows the theme.

use crate::Diagnostic;
use crate::highlight::escape_html;
use crate::wrapping::{SCROLL_CLOSE, SCROLL_OPEN};
use std::collections::BTreeMap;
use std::path::Path;

/// Where diagrams live, relative to the repository root.
pub const DIR: &str = "guide/diagrams";

/// One language's drawing of one diagram, ready to inline.
#[derive(Debug)]
pub struct Diagram {
    /// `guide/diagrams/seams.en.svg`
    pub path: String,
    /// The SVG element, ids prefixed.
    pub svg: String,
    /// The text of its `<title>`.
    pub title: String,
}

/// (name, language) → diagram.
pub type Diagrams = BTreeMap<(String, String), Diagram>;

/// `{{#diagram NAME}}` (a paragraph's whole text) → `NAME`.
pub fn reference(text: &str) -> Option<&str> {
    text.trim().strip_prefix("{{#diagram ")?.strip_suffix("}}").map(str::trim)
}

/// Reads and checks every `NAME.LANG.svg` under `guide/diagrams/`.
pub fn scan(root: &Path, languages: &[&str], diagnostics: &mut Vec<Diagnostic>) -> Diagrams {
    let mut diagrams = Diagrams::new();
    let Ok(entries) = std::fs::read_dir(root.join(DIR)) else { return diagrams };
    let mut names: Vec<String> =
        entries.flatten().map(|entry| entry.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    for file in names {
        let path = format!("{DIR}/{file}");
        let parts: Option<(&str, &str)> = file.strip_suffix(".svg").and_then(|stem| stem.rsplit_once('.'));
        let Some((name, language)) = parts.filter(|(name, language)| {
            languages.contains(language)
                && !name.is_empty()
                && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        }) else {
            let message = format!(
                "diagram files are named NAME.LANG.svg (NAME in a-z 0-9 -, LANG one of {})",
                languages.join(", ")
            );
            diagnostics.push(Diagnostic::new(&path, 0, message));
            continue;
        };
        let text = match std::fs::read_to_string(root.join(&path)) {
            Ok(text) => text,
            Err(error) => {
                diagnostics.push(Diagnostic::new(&path, 0, format!("cannot read: {error}")));
                continue;
            }
        };
        if let Some(diagram) = check(&path, name, language, &text, diagnostics) {
            diagrams.insert((name.to_string(), language.to_string()), diagram);
        }
    }
    for (name, language) in diagrams.keys() {
        for other in languages.iter().filter(|other| **other != language) {
            if !diagrams.contains_key(&(name.clone(), other.to_string())) {
                diagnostics.push(Diagnostic::new(
                    &format!("{DIR}/{name}.{language}.svg"),
                    0,
                    format!("diagram in one language only; draw {DIR}/{name}.{other}.svg too"),
                ));
            }
        }
    }
    diagrams
}

/// Checks one SVG file; returns it ready to inline, or `None` when it cannot be used.
fn check(
    path: &str,
    name: &str,
    language: &str,
    text: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Diagram> {
    let mut report = |offset: usize, message: String| {
        let line = text[..offset].matches('\n').count() + 1;
        diagnostics.push(Diagnostic::new(path, line, message));
    };
    let Some(start) = text.find("<svg") else {
        report(0, "not an SVG file: no `<svg` element".into());
        return None;
    };
    let lower = text.to_ascii_lowercase();
    let mut usable = true;
    for (tag, why) in [
        ("<script", "a script element; a diagram is a picture, the page runs no code from it"),
        ("<foreignobject", "a foreignObject element; draw with SVG shapes and text only"),
        ("@import", "an @import; the guide must work offline"),
    ] {
        for (at, _) in lower.match_indices(tag) {
            report(at, why.to_string());
            usable = false;
        }
    }
    for (at, _) in lower.match_indices(" on") {
        let attribute: String =
            lower[at + 1..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        if attribute.len() > 2 && lower[at + 1 + attribute.len()..].trim_start().starts_with('=') {
            report(at + 1, format!("an event handler attribute `{attribute}`; diagrams run no code"));
            usable = false;
        }
    }
    for key in ["href=", "src=", "url("] {
        for (at, _) in lower.match_indices(key) {
            let value = lower[at + key.len()..].trim_start_matches(['"', '\'', ' ']);
            if !value.starts_with('#') {
                let shown: String =
                    value.chars().take_while(|c| !matches!(c, '"' | '\'' | ')' | ' ')).collect();
                report(
                    at,
                    format!(
                        "external reference `{key}{shown}`; a diagram may point only inside itself (`#id`)"
                    ),
                );
                usable = false;
            }
        }
    }
    if !lower.contains("viewbox=") {
        report(start, "no viewBox; give the <svg> a viewBox so it scales to the column".into());
    }
    let title = match (text.find("<title>"), text.find("</title>")) {
        (Some(open), Some(close)) if open < close => text[open + "<title>".len()..close].trim().to_string(),
        _ => {
            report(start, "no <title>; it is the figure's caption and what a screen reader says".into());
            String::new()
        }
    };
    let end = text.rfind("</svg>").map_or(text.len(), |at| at + "</svg>".len());
    let svg = prefix_ids(&text[start..end], &format!("{name}-{language}-"));
    usable.then(|| Diagram { path: path.to_string(), svg, title })
}

/// A drawn diagram no chapter shows is reported once, on its English file.
pub fn check_unused(
    diagrams: &Diagrams,
    shown: &std::collections::BTreeSet<&String>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut reported = std::collections::BTreeSet::new();
    for ((name, _), diagram) in diagrams {
        if !shown.contains(name) && reported.insert(name) {
            diagnostics.push(Diagnostic::new(
                &diagram.path,
                0,
                format!(
                    "diagram `{name}` is not shown by any chapter; add `{{{{#diagram {name}}}}}` or remove it"
                ),
            ));
        }
    }
}

/// `id="x"` → `id="P-x"`, and the references `url(#x)` / `href="#x"` with it.
fn prefix_ids(svg: &str, prefix: &str) -> String {
    svg.replace(" id=\"", &format!(" id=\"{prefix}"))
        .replace("url(#", &format!("url(#{prefix}"))
        .replace("href=\"#", &format!("href=\"#{prefix}"))
}

/// The figure for one diagram: the SVG, captioned by its title. On a phone the SVG keeps a
/// legible size and scrolls sideways, with a cue that says so ([`SCROLL_OPEN`]).
pub fn figure(name: &str, diagram: &Diagram) -> String {
    format!(
        "<figure class=\"diagram\" data-diagram=\"{name}\">\n{SCROLL_OPEN}\n{}\n{SCROLL_CLOSE}\n<figcaption>{}</figcaption>\n</figure>\n",
        diagram.svg.trim(),
        escape_html(&diagram.title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_their_references_are_prefixed() {
        let svg = "<svg viewBox=\"0 0 1 1\"><marker id=\"a\"/><path marker-end=\"url(#a)\"/><use href=\"#a\"/></svg>";
        assert_eq!(
            prefix_ids(svg, "s-en-"),
            "<svg viewBox=\"0 0 1 1\"><marker id=\"s-en-a\"/><path marker-end=\"url(#s-en-a)\"/><use href=\"#s-en-a\"/></svg>"
        );
    }

    #[test]
    fn a_reference_is_a_paragraph_of_its_own() {
        assert_eq!(reference("{{#diagram seams}}"), Some("seams"));
        assert_eq!(reference(" {{#diagram  turn }} "), Some("turn"));
        assert_eq!(reference("see {{#diagram seams}}"), None);
    }
}
