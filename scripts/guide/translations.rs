//! Translation records: how the checker knows a Chinese section is behind its English one.
//!
//! English is the source language. When a translator has brought a Chinese section up to date,
//! `build-guide --accept` stores the hash of the English section (same chapter file, same
//! heading id) in `guide/zh/.translated.json`:
//!
//! ```json
//! { "01-loop.md": { "loop": "5d1f0c3a9e2b7c44", "tool-loop": "…" } }
//! ```
//!
//! Editing the English section changes its hash, and the check then names the Chinese heading
//! that needs another look. The hash is FNV-1a (64 bit) over the section's Markdown source
//! (heading line included, trailing blanks ignored): tiny, stable across platforms and Rust
//! versions, which is all a change detector needs.

use crate::Diagnostic;
use crate::chapters::Heading;
use std::collections::BTreeMap;
use std::path::Path;

/// Where the records live, relative to the repository root.
pub const RECORDS_PATH: &str = "guide/zh/.translated.json";

/// Chapter file name → heading id → hash of the English section the translation matches.
pub type Records = BTreeMap<String, BTreeMap<String, String>>;

pub fn fnv1a_64(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Reads the records; a missing file means nothing has been accepted yet.
pub fn load(root: &Path, diagnostics: &mut Vec<Diagnostic>) -> Records {
    let text = match std::fs::read_to_string(root.join(RECORDS_PATH)) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Records::new(),
        Err(error) => {
            diagnostics.push(Diagnostic::new(RECORDS_PATH, 0, format!("cannot read: {error}")));
            return Records::new();
        }
    };
    serde_json::from_str(&text).unwrap_or_else(|error| {
        diagnostics.push(Diagnostic::new(
            RECORDS_PATH,
            error.line(),
            format!("not a valid record file: {error}"),
        ));
        Records::new()
    })
}

pub fn save(root: &Path, records: &Records) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(records).map_err(std::io::Error::other)? + "\n";
    std::fs::write(root.join(RECORDS_PATH), text)
}

/// A chapter pair as the translation check sees it.
pub struct Pair<'a> {
    pub name: &'a str,
    pub english_path: &'a str,
    pub chinese_path: &'a str,
    pub english: &'a [Heading],
    pub chinese: &'a [Heading],
}

/// Reports every Chinese section whose English section changed since it was accepted (or was
/// never accepted), and records that name no existing section.
pub fn check(records: &Records, pairs: &[Pair], diagnostics: &mut Vec<Diagnostic>) {
    for pair in pairs {
        let recorded = records.get(pair.name);
        for chinese in pair.chinese {
            let Some(english) = pair.english.iter().find(|heading| heading.id == chinese.id) else {
                continue; // the skeleton check reports a heading missing in English
            };
            let current = fnv1a_64(&english.section);
            let accept =
                format!("cargo run --release --bin build-guide -- --accept {}#{}", pair.name, chinese.id);
            match recorded.and_then(|ids| ids.get(&chinese.id)) {
                Some(hash) if *hash == current => {}
                Some(_) => diagnostics.push(Diagnostic::new(
                    pair.chinese_path,
                    chinese.line,
                    format!(
                        "stale translation of section `{}`: the English ({}:{}) changed since it was accepted; update the Chinese, then run `{accept}`",
                        chinese.id, pair.english_path, english.line
                    ),
                )),
                None => diagnostics.push(Diagnostic::new(
                    pair.chinese_path,
                    chinese.line,
                    format!(
                        "section `{}` has no accepted translation; compare it with {}:{}, then run `{accept}`",
                        chinese.id, pair.english_path, english.line
                    ),
                )),
            }
        }
    }
    for (name, ids) in records {
        let pair = pairs.iter().find(|pair| pair.name == name);
        for id in ids.keys() {
            if !pair.is_some_and(|pair| pair.chinese.iter().any(|heading| heading.id == *id)) {
                diagnostics.push(Diagnostic::new(
                    RECORDS_PATH,
                    0,
                    format!("record for {name}#{id} names no Chinese section; run `--accept` to rewrite the records"),
                ));
            }
        }
    }
}

/// Records the current English hashes for the selected sections. A selector is `NN-slug.md`
/// (every section of that chapter) or `NN-slug.md#id`; no selector means every section.
/// Records of sections that no longer exist are dropped. Returns how many sections were
/// accepted, or the selectors that matched nothing.
pub fn accept(records: &mut Records, pairs: &[Pair], selectors: &[String]) -> Result<usize, Vec<String>> {
    let mut matched = vec![false; selectors.len()];
    let mut accepted = 0;
    let mut fresh = Records::new();
    for pair in pairs {
        for chinese in pair.chinese {
            let Some(english) = pair.english.iter().find(|heading| heading.id == chinese.id) else {
                continue;
            };
            let previous = records.get(pair.name).and_then(|ids| ids.get(&chinese.id));
            let mut selected = selectors.is_empty();
            for (index, selector) in selectors.iter().enumerate() {
                let (file, id) = selector.split_once('#').unwrap_or((selector, ""));
                if file == pair.name && (id.is_empty() || id == chinese.id) {
                    matched[index] = true;
                    selected = true;
                }
            }
            let hash = if selected {
                accepted += 1;
                Some(fnv1a_64(&english.section))
            } else {
                previous.cloned()
            };
            if let Some(hash) = hash {
                fresh.entry(pair.name.to_string()).or_default().insert(chinese.id.clone(), hash);
            }
        }
    }
    let unmatched: Vec<String> = selectors
        .iter()
        .zip(matched)
        .filter(|(_, matched)| !matched)
        .map(|(selector, _)| selector.clone())
        .collect();
    if !unmatched.is_empty() {
        return Err(unmatched);
    }
    *records = fresh;
    Ok(accepted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_values() {
        assert_eq!(fnv1a_64(""), "cbf29ce484222325");
        assert_eq!(fnv1a_64("a"), "af63dc4c8601ec8c");
        assert_eq!(fnv1a_64("foobar"), "85944171f73967e8");
    }
}
