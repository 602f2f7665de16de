//! Listings: what a fenced block in a chapter becomes.
//!
//! A `rust` block is not code but a reference: its one line `{{#include src/FILE.rs:ANCHOR}}`
//! names an anchored region of the real source, which is shown under a caption naming the file
//! and anchor. Anything else in a `rust` block is pasted code and refused, because pasted code
//! drifts from the source the book explains. Blocks in other languages are shown as written,
//! highlighted at build time.
//!
//! A listing shows its region as the chapter's state has it (`guide/states.rs`) and is at most
//! [`MAX_LISTING_LINES`] lines as shown (hidden attributes and later chapters' items do not
//! count): a reader follows a listing against the paragraph beside it, and a longer region is
//! split into named regions, each with its own paragraph. One exception: a *whole function*,
//! anchored under its own name (`// ANCHOR: run_turn` around all of `fn run_turn`, which
//! `guide/anchors.rs` verifies), may be up to [`MAX_WHOLE_FUNCTION_LINES`]: a reader who is
//! about to read a function in pieces sees it whole first, and a function that cannot be cut
//! well is better read whole than in fragments. Its pieces keep the columns they have in it.

use crate::anchors::AnchorMap;
use crate::chapters::RenderContext;
use crate::highlight::{Language, escape_html, highlight};
use crate::states::State;
use crate::wrapping::lines_html;
use std::collections::BTreeSet;

/// The longest listing the book shows; `--check` names a longer one with its length.
pub const MAX_LISTING_LINES: usize = 50;

/// The longest whole function the book shows (anchored under the function's own name).
pub const MAX_WHOLE_FUNCTION_LINES: usize = 150;

/// The language word of a fence info string: "rust,ignore" → "rust".
pub fn fence_language(info: &str) -> &str {
    info.split([',', ' ']).next().unwrap_or("").trim()
}

/// `{{#include src/x.rs:name}}` (the block's whole content) → `src/x.rs:name`.
pub fn include_target(block: &str) -> Option<&str> {
    block.trim().strip_prefix("{{#include ")?.strip_suffix("}}").map(str::trim)
}

/// Where a fenced block starts, and where its first content line starts.
pub struct Offsets {
    pub fence: usize,
    pub body: usize,
}

/// A fenced block as HTML: a `rust` block is an include and gets a caption; others are
/// highlighted as written.
pub fn code_block_html(
    info: &str,
    body: &str,
    at: Offsets,
    context: &RenderContext,
    state: State,
    included: &mut BTreeSet<String>,
    report: &mut impl FnMut(usize, String),
) -> String {
    let language_word = fence_language(info);
    let Some(language) = Language::from_fence(language_word) else {
        report(
            at.fence,
            format!(
                "unknown code block language `{language_word}`; use rust (includes only), toml, sh, json or text"
            ),
        );
        return format!("<pre><code>{}</code></pre>\n", lines_html(&escape_html(body)));
    };
    if language_word.is_empty() {
        report(at.fence, "code block without a language; name it (```sh, ```toml, ```json, ```text)".into());
    }
    if body.contains("{{#include") && language != Language::Rust {
        report(at.body, "includes show Rust source: put the include in a ```rust block".into());
    }
    if language != Language::Rust {
        let class = language_word.to_ascii_lowercase();
        return format!(
            "<pre><code class=\"lang-{class}\">{}</code></pre>\n",
            lines_html(&highlight(body, language))
        );
    }
    let Some(target) = include_target(body) else {
        report(at.body, "pasted Rust code: a ```rust block must hold only `{{#include src/FILE.rs:ANCHOR}}` so the book shows the real source".into());
        return format!(
            "<pre><code class=\"lang-rust\">{}</code></pre>\n",
            lines_html(&highlight(body, Language::Rust))
        );
    };
    included.insert(target.to_string());
    let code = match resolve_include(target, context.anchors, state) {
        Ok((code, whole_function)) => {
            let length = code.lines().count();
            if whole_function && length > MAX_WHOLE_FUNCTION_LINES {
                report(
                    at.body,
                    format!(
                        "listing {target} is a whole function of {length} lines; at most {MAX_WHOLE_FUNCTION_LINES}: show its signature and split the function into named regions"
                    ),
                );
            } else if !whole_function && length > MAX_LISTING_LINES {
                report(
                    at.body,
                    format!(
                        "listing {target} is {length} lines; at most {MAX_LISTING_LINES}: split the region into named regions, each beside the paragraph that discusses it (a whole function, anchored under its own name, may be up to {MAX_WHOLE_FUNCTION_LINES})"
                    ),
                );
            }
            code
        }
        Err(message) => {
            report(at.body, message);
            String::new()
        }
    };
    let (file, anchor) = target.rsplit_once(':').unwrap_or((target, ""));
    format!(
        "<figure class=\"code\"><figcaption><span class=\"file\">{}</span> <span class=\"anchor\">{}</span></figcaption><pre><code class=\"lang-rust\">{}</code></pre></figure>\n",
        escape_html(file),
        escape_html(anchor),
        lines_html(&highlight(&code, Language::Rust))
    )
}

/// The region's code in `state`, and whether it is a whole function.
fn resolve_include(target: &str, anchors: &AnchorMap, state: State) -> Result<(String, bool), String> {
    let Some((file, anchor)) = target.rsplit_once(':') else {
        return Err(format!("include `{target}` names no anchor; write `{{{{#include {target}:ANCHOR}}}}`"));
    };
    let Some(file_anchors) = anchors.get(file) else {
        return Err(format!("include `{target}`: no source file `{file}` under src/"));
    };
    let Some(region) = file_anchors.get(anchor) else {
        let known: Vec<&str> = file_anchors.keys().map(String::as_str).collect();
        return Err(format!(
            "include `{target}`: no anchor `{anchor}` in {file} (anchors there: {})",
            known.join(", ")
        ));
    };
    let code = region.shown(state);
    if code.trim().is_empty() {
        if region.dropped_lines(state) == 0 {
            return Err(format!("include `{target}` resolves to an empty region ({file}:{})", region.line));
        }
        return Err(format!(
            "include `{target}` resolves to an empty region in chapter {}'s state ({file}:{}): nothing in it is in that state yet; name the later chapters' items in prose instead",
            state.0, region.line
        ));
    }
    Ok((code, region.whole_function))
}
