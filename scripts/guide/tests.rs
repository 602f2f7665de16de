//! The checker's own tests: a tiny guide and source tree in a temp dir, broken on purpose in
//! the ways a chapter writer or a refactoring really breaks it, each failure asserted to name
//! the file and line a writer must go to.

use crate::{Diagnostic, accept, build, check};
use std::path::{Path, PathBuf};

const SOURCE: &str = "\
//! A fixture module.
// ANCHOR: greet
pub fn greet() -> &'static str {
    \"hello\"
}
// ANCHOR_END: greet
";

const ENGLISH: &str = "\
# Intro {#intro}

Hello paragraph.

## Greeting {#greeting}

Some text.

```rust
{{#include src/a.rs:greet}}
```

See [the intro](#intro) and [the greeting](01-intro.md#greeting).
";

const CHINESE: &str = "\
# 简介 {#intro}

你好段落。

## 问候 {#greeting}

一些文字。

```rust
{{#include src/a.rs:greet}}
```

参见[简介](#intro)和[问候](01-intro.md#greeting)。
";

/// A throwaway repository: `src/a.rs`, one chapter in each language, translations accepted
/// and the page built, so it starts clean. Removed on drop.
struct Fixture {
    root: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let root = std::env::temp_dir().join(format!("build-guide-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let fixture = Fixture { root };
        fixture.write("src/a.rs", SOURCE);
        fixture.write("guide/en/01-intro.md", ENGLISH);
        fixture.write("guide/zh/01-intro.md", CHINESE);
        accept(&fixture.root, &[]).expect("the clean fixture accepts");
        fixture.write("guide/index.html", &build(&fixture.root).html);
        fixture
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().expect("fixture paths have a parent"))
            .expect("create fixture dir");
        std::fs::write(path, text).expect("write fixture file");
    }

    fn edit(&self, path: &str, from: &str, to: &str) {
        let text = std::fs::read_to_string(self.root.join(path)).expect("read fixture file");
        assert!(text.contains(from), "{path} does not contain {from:?}");
        self.write(path, &text.replacen(from, to, 1));
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn diagnostics(&self) -> Vec<String> {
        build(&self.root).diagnostics.iter().map(Diagnostic::to_string).collect()
    }

    /// Asserts that some diagnostic starts with `place` (`file:line`) and contains `words`.
    fn assert_reports(&self, place: &str, words: &str) {
        let diagnostics = self.diagnostics();
        assert!(
            diagnostics.iter().any(|line| line.starts_with(&format!("{place}: ")) && line.contains(words)),
            "expected `{place}: …{words}…` among:\n{}",
            diagnostics.join("\n")
        );
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn the_clean_fixture_passes_every_check() {
    let fixture = Fixture::new("clean");
    assert_eq!(check(fixture.root()), Vec::<Diagnostic>::new());
}

#[test]
fn the_page_holds_both_languages_with_prefixed_ids_captions_and_highlighting() {
    let fixture = Fixture::new("page");
    let html = build(fixture.root()).html;
    assert!(html.contains("<h2 id=\"en-greeting\">Greeting</h2>"));
    assert!(html.contains("<h2 id=\"zh-greeting\">问候</h2>"));
    assert!(html.contains("<a href=\"#zh-greeting\">问候</a>"));
    assert!(html.contains(
        "<figcaption><span class=\"file\">src/a.rs</span> <span class=\"anchor\">greet</span></figcaption>"
    ));
    assert!(html.contains("<span class=\"kw\">pub</span> <span class=\"kw\">fn</span> greet()"));
    assert!(!html.contains("ANCHOR"), "marker lines are never shown");
    assert_eq!(html.matches("<figcaption>").count(), 1, "both languages share one copy of the listing");
    let (english_intro, chinese_intro, listing) = (
        html.find("Hello paragraph.").unwrap(),
        html.find("你好段落。").unwrap(),
        html.find("<figcaption>").unwrap(),
    );
    assert!(
        english_intro < chinese_intro && chinese_intro < listing,
        "each language's prose comes before the listing"
    );
    assert!(
        html.contains(
            "{\"c\":\"第 1 章 · 简介\",\"id\":\"greeting\",\"t\":\"问候\",\"x\":\"一些文字。 参见简介和问候。\"}"
        ),
        "search index holds Chinese text"
    );
}

#[test]
fn an_include_inside_a_list_stays_with_its_language() {
    let fixture = Fixture::new("nested-include");
    for path in ["guide/en/01-intro.md", "guide/zh/01-intro.md"] {
        fixture.edit(
            path,
            "```rust\n{{#include src/a.rs:greet}}\n```",
            "- item\n\n  ```rust\n  {{#include src/a.rs:greet}}\n  ```",
        );
    }
    let html = build(fixture.root()).html;
    assert_eq!(html.matches("<figcaption>").count(), 2);
    assert!(html.contains("<li>\n<p>item</p>\n<figure class=\"code\">"));
}

#[test]
fn two_builds_give_identical_bytes() {
    let fixture = Fixture::new("deterministic");
    assert_eq!(build(fixture.root()).html, build(fixture.root()).html);
}

#[test]
fn a_renamed_anchor_breaks_the_includes_that_used_it() {
    let fixture = Fixture::new("renamed-anchor");
    fixture.edit("src/a.rs", "ANCHOR: greet", "ANCHOR: salute");
    fixture.edit("src/a.rs", "ANCHOR_END: greet", "ANCHOR_END: salute");
    fixture
        .assert_reports("guide/en/01-intro.md:10", "no anchor `greet` in src/a.rs (anchors there: salute)");
    fixture.assert_reports("guide/zh/01-intro.md:10", "no anchor `greet`");
    fixture.assert_reports("src/a.rs:2", "anchor `salute` is not included by any chapter");
}

#[test]
fn an_edited_english_paragraph_makes_the_chinese_section_stale() {
    let fixture = Fixture::new("stale");
    fixture.edit("guide/en/01-intro.md", "Some text.", "Some better text.");
    fixture.assert_reports(
        "guide/zh/01-intro.md:5",
        "stale translation of section `greeting`: the English (guide/en/01-intro.md:5) changed",
    );
    assert_eq!(fixture.diagnostics().len(), 1, "only the edited section is stale");
    accept(fixture.root(), &["01-intro.md#greeting".to_string()]).expect("accepting one section");
    assert_eq!(fixture.diagnostics(), Vec::<String>::new());
}

#[test]
fn accepting_an_unknown_section_changes_nothing() {
    let fixture = Fixture::new("accept-unknown");
    let before =
        std::fs::read_to_string(fixture.root().join("guide/zh/.translated.json")).expect("records exist");
    assert_eq!(
        accept(fixture.root(), &["01-intro.md#nope".to_string()]),
        Err("no Chinese section matches 01-intro.md#nope".to_string())
    );
    let after =
        std::fs::read_to_string(fixture.root().join("guide/zh/.translated.json")).expect("records exist");
    assert_eq!(before, after);
}

#[test]
fn a_missing_chinese_chapter_is_reported_on_the_english_one() {
    let fixture = Fixture::new("missing-chinese");
    std::fs::remove_file(fixture.root().join("guide/zh/01-intro.md")).expect("remove chapter");
    fixture.assert_reports("guide/en/01-intro.md:1", "no counterpart guide/zh/01-intro.md");
}

#[test]
fn an_external_image_url_is_reported_where_it_is_written() {
    let fixture = Fixture::new("external-image");
    fixture.edit(
        "guide/en/01-intro.md",
        "Hello paragraph.",
        "Hello paragraph.\n![logo](https://example.com/logo.png)",
    );
    fixture.assert_reports("guide/en/01-intro.md:4", "external image URL https://example.com/logo.png");
}

#[test]
fn external_links_and_urls_in_prose_are_reported_but_urls_in_code_are_text() {
    let fixture = Fixture::new("external-link");
    fixture.edit(
        "guide/en/01-intro.md",
        "Hello paragraph.",
        "Hello [site](https://example.com).\nOr //cdn.example/x.\nUse `--base-url https://api.example/v1`.",
    );
    fixture.assert_reports("guide/en/01-intro.md:3", "external link https://example.com");
    fixture.assert_reports("guide/en/01-intro.md:4", "external URL //cdn.example/x.");
    assert!(!fixture.diagnostics().iter().any(|line| line.contains("api.example")));
}

#[test]
fn a_pasted_rust_block_is_reported() {
    let fixture = Fixture::new("pasted-rust");
    fixture.edit("guide/en/01-intro.md", "Some text.\n", "Some text.\n\n```rust\nfn main() {}\n```\n");
    fixture.assert_reports("guide/en/01-intro.md:10", "pasted Rust code");
}

#[test]
fn an_unbalanced_anchor_is_reported_in_the_source() {
    let fixture = Fixture::new("unbalanced");
    fixture.edit("src/a.rs", "// ANCHOR_END: greet\n", "");
    fixture.assert_reports("src/a.rs:2", "anchor `greet` is never closed");
}

#[test]
fn an_include_of_a_missing_anchor_is_reported_at_the_include() {
    let fixture = Fixture::new("missing-anchor");
    fixture.edit("guide/en/01-intro.md", "src/a.rs:greet", "src/a.rs:farewell");
    fixture.assert_reports("guide/en/01-intro.md:10", "include `src/a.rs:farewell`: no anchor `farewell`");
    fixture
        .assert_reports("guide/zh/01-intro.md:10", "include 1 is src/a.rs:greet here but src/a.rs:farewell");
}

#[test]
fn an_empty_region_is_reported_at_the_include() {
    let fixture = Fixture::new("empty-region");
    fixture.write("src/a.rs", "// ANCHOR: greet\n\n// ANCHOR_END: greet\n");
    fixture.assert_reports("guide/en/01-intro.md:10", "resolves to an empty region (src/a.rs:1)");
}

#[test]
fn different_heading_skeletons_are_reported_on_the_chinese_side() {
    let fixture = Fixture::new("skeleton");
    fixture.edit("guide/zh/01-intro.md", "## 问候 {#greeting}", "### 问候 {#greeting}");
    fixture.assert_reports(
        "guide/zh/01-intro.md:5",
        "heading 2 is `### {#greeting}` here but `## {#greeting}` in English",
    );
}

#[test]
fn a_heading_without_id_and_a_broken_link_are_reported() {
    let fixture = Fixture::new("heading-link");
    fixture.edit("guide/en/01-intro.md", "## Greeting {#greeting}", "## Greeting");
    fixture.assert_reports("guide/en/01-intro.md:5", "heading \"Greeting\" has no id");
    fixture.assert_reports(
        "guide/en/01-intro.md:13",
        "link `01-intro.md#greeting`: no heading `{#greeting}` in 01-intro.md",
    );
}

#[test]
fn a_stale_committed_page_fails_the_check() {
    let fixture = Fixture::new("stale-page");
    fixture.edit("src/a.rs", "\"hello\"", "\"hello, world\"");
    let diagnostics: Vec<String> = check(fixture.root()).iter().map(Diagnostic::to_string).collect();
    assert_eq!(
        diagnostics,
        ["guide/index.html: out of date; run `cargo run --release --bin build-guide` and commit it"]
    );
}

#[test]
fn parts_appear_in_both_contents_and_must_open_at_the_same_chapters() {
    let fixture = Fixture::new("parts");
    fixture.write("guide/en/parts.txt", "01 Part 1 · Basics\n");
    fixture.write("guide/zh/parts.txt", "01 第一部分 · 基础\n");
    assert_eq!(fixture.diagnostics(), Vec::<String>::new());
    let html = build(fixture.root()).html;
    assert!(html.contains("<li class=\"part\">Part 1 · Basics</li>"));
    assert!(html.contains("<li class=\"part\">第一部分 · 基础</li>"));
    fixture.write("guide/zh/parts.txt", "02 第二部分\n");
    fixture.assert_reports("guide/zh/parts.txt:1", "no chapter numbered 02 in guide/zh");
    fixture.assert_reports(
        "guide/zh/parts.txt",
        "parts open at chapters [] here but [01] in guide/en/parts.txt",
    );
}

#[test]
fn a_link_to_a_heading_of_another_chapter_names_the_link_to_write() {
    let fixture = Fixture::new("cross-link");
    for (language, title) in [
        ("en", "# Two {#two}\n\nSee [greeting](#greeting).\n"),
        ("zh", "# 二 {#two}\n\n见[问候](01-intro.md#greeting)。\n"),
    ] {
        fixture.write(&format!("guide/{language}/02-two.md"), title);
    }
    fixture.assert_reports(
        "guide/en/02-two.md:3",
        "no heading `{#greeting}` in 02-two.md; it is in 01-intro.md: write `01-intro.md#greeting`",
    );
    assert!(!fixture.diagnostics().iter().any(|line| line.starts_with("guide/zh/02-two.md:3")));
}

#[test]
fn chapters_are_numbered_from_their_file_names_except_the_preface_and_unnumbered_parts() {
    let fixture = Fixture::new("numbers");
    for (language, preface, appendix) in [
        ("en", "# Preface {#preface}\n", "# Reference {#reference}\n"),
        ("zh", "# 前言 {#preface}\n", "# 参考 {#reference}\n"),
    ] {
        fixture.write(&format!("guide/{language}/00-preface.md"), preface);
        fixture.write(&format!("guide/{language}/14-reference.md"), appendix);
    }
    fixture.write("guide/en/parts.txt", "01 Part 1 · Basics\n14 Appendix {.unnumbered}\n");
    fixture.write("guide/zh/parts.txt", "01 第一部分 · 基础\n14 附录 {.unnumbered}\n");
    accept(fixture.root(), &[]).expect("accepting the new chapters");
    assert_eq!(fixture.diagnostics(), Vec::<String>::new());
    let html = build(fixture.root()).html;
    assert!(html.contains("<h1 id=\"en-intro\"><span class=\"number\">1 · </span>Intro</h1>"));
    assert!(html.contains("<h1 id=\"zh-intro\"><span class=\"number\">第 1 章 · </span>简介</h1>"));
    assert!(html.contains("<a href=\"#zh-intro\"><span class=\"number\">第 1 章 · </span>简介</a>"));
    assert!(html.contains("<h1 id=\"en-preface\">Preface</h1>"));
    assert!(html.contains("<h1 id=\"en-reference\">Reference</h1>"));
    assert!(html.contains("<li class=\"part\">Appendix</li>"));
    assert!(html.contains("\"c\":\"第 1 章 · 简介\""), "search results name the numbered chapter");
    assert!(
        html.contains("<section class=\"chapter\" data-file=\"14-reference.md\">"),
        "#chapter=14 finds a chapter by its file name"
    );

    fixture.write("guide/zh/parts.txt", "01 第一部分 · 基础\n14 附录\n");
    fixture.assert_reports(
        "guide/zh/parts.txt",
        "parts open at chapters [01 14] here but [01 14{.unnumbered}] in guide/en/parts.txt",
    );
    fixture.edit("guide/en/01-intro.md", "# Intro", "# Chapter 1 · Intro");
    fixture.assert_reports("guide/en/01-intro.md:1", "numbers itself");
}

const SVG: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 100 40\">\n<title>TITLE</title>\n<defs><marker id=\"tip\"/></defs>\n<path d=\"M0,0 H90\" marker-end=\"url(#tip)\"/>\n<text x=\"4\" y=\"30\">LABEL</text>\n</svg>\n";

/// The fixture with `{{#diagram flow}}` in both chapters and both drawings present.
fn with_diagram(name: &str) -> Fixture {
    let fixture = Fixture::new(name);
    for (language, title, label) in [("en", "How it flows", "call"), ("zh", "流程", "调用")] {
        fixture.write(
            &format!("guide/diagrams/flow.{language}.svg"),
            &SVG.replace("TITLE", title).replace("LABEL", label),
        );
    }
    fixture.edit("guide/en/01-intro.md", "Some text.\n", "Some text.\n\n{{#diagram flow}}\n");
    fixture.edit("guide/zh/01-intro.md", "一些文字。\n", "一些文字。\n\n{{#diagram flow}}\n");
    accept(fixture.root(), &[]).expect("accepting the diagram sections");
    fixture
}

#[test]
fn a_diagram_is_inlined_in_each_language_with_its_ids_prefixed_and_its_title_as_caption() {
    let fixture = with_diagram("diagram");
    assert_eq!(fixture.diagnostics(), Vec::<String>::new());
    let html = build(fixture.root()).html;
    assert!(html.contains(
        "<figure class=\"diagram\" data-diagram=\"flow\">\n<div class=\"frame\"><div class=\"scroll\">\n<svg"
    ));
    assert!(html.contains("<marker id=\"flow-en-tip\"/>") && html.contains("url(#flow-zh-tip)"));
    assert!(html.contains("<figcaption>How it flows</figcaption>"));
    assert!(html.contains("<figcaption>流程</figcaption>"));
    assert!(!html.contains("<p>{{#diagram"), "the reference paragraph is replaced, not wrapped");
    let (english, chinese) = (html.find(">call</text>").unwrap(), html.find(">调用</text>").unwrap());
    assert!(html[..english].rfind("data-lang=\"en\"") > html[..english].rfind("data-lang=\"zh\""));
    assert!(html[..chinese].rfind("data-lang=\"zh\"") > html[..chinese].rfind("data-lang=\"en\""));
}

#[test]
fn a_missing_drawing_a_one_language_drawing_and_an_unused_one_are_reported() {
    let fixture = with_diagram("diagram-missing");
    std::fs::remove_file(fixture.root().join("guide/diagrams/flow.zh.svg")).expect("remove drawing");
    fixture.assert_reports("guide/zh/01-intro.md:9", "no diagram guide/diagrams/flow.zh.svg");
    fixture.assert_reports(
        "guide/diagrams/flow.en.svg",
        "diagram in one language only; draw guide/diagrams/flow.zh.svg too",
    );
    fixture.write("guide/diagrams/spare.en.svg", SVG);
    fixture.write("guide/diagrams/spare.zh.svg", SVG);
    fixture.assert_reports("guide/diagrams/spare.en.svg", "diagram `spare` is not shown by any chapter");
    fixture.write("guide/diagrams/Bad.svg", SVG);
    fixture.assert_reports("guide/diagrams/Bad.svg", "diagram files are named NAME.LANG.svg");
}

#[test]
fn both_languages_show_the_same_diagrams() {
    let fixture = with_diagram("diagram-order");
    fixture.edit("guide/zh/01-intro.md", "{{#diagram flow}}\n", "");
    fixture.assert_reports(
        "guide/zh/01-intro.md:1",
        "diagram 1 is missing here but flow in guide/en/01-intro.md",
    );
}

#[test]
fn scripts_handlers_and_external_references_in_a_drawing_are_refused() {
    let fixture = with_diagram("diagram-unsafe");
    let unsafe_svg = SVG
        .replace("<defs>", "<script>alert(1)</script>\n<defs>")
        .replace("<path d", "<image href=\"https://example.com/x.png\"/>\n<path onclick=\"x()\" d")
        .replace("<title>TITLE</title>", "<style>@import url(//cdn.example/f.css);</style>");
    fixture.write("guide/diagrams/flow.en.svg", &unsafe_svg);
    fixture.assert_reports("guide/diagrams/flow.en.svg:3", "a script element");
    fixture.assert_reports(
        "guide/diagrams/flow.en.svg:5",
        "external reference `href=https://example.com/x.png`",
    );
    fixture.assert_reports("guide/diagrams/flow.en.svg:6", "an event handler attribute `onclick`");
    fixture.assert_reports("guide/diagrams/flow.en.svg:2", "an @import");
    fixture.assert_reports("guide/diagrams/flow.en.svg:2", "external reference `url(//cdn.example/f.css`");
    fixture.assert_reports("guide/diagrams/flow.en.svg:1", "no <title>");
    let html = build(fixture.root()).html;
    assert!(!html.contains("alert(1)"), "a refused drawing is never inlined");
}

#[test]
fn a_glossary_term_rendered_another_way_is_reported_and_the_appendix_shows_the_table() {
    let fixture = Fixture::new("glossary");
    fixture.write(
        "guide/glossary.tsv",
        "# kind\tenglish\tchinese\trefused\ten\tzh\nterm\tgreeting\t问候\t招呼|greeting\tSaying hello.\t打招呼。\n",
    );
    fixture.edit("guide/zh/01-intro.md", "一些文字。", "一些文字，打个招呼（greeting）。");
    fixture.assert_reports("guide/zh/01-intro.md:7", "\"招呼\" should be rendered \"问候\" (glossary)");
    fixture.assert_reports("guide/zh/01-intro.md:7", "\"greeting\" should be rendered \"问候\" (glossary)");
    fixture.edit("guide/zh/01-intro.md", "一些文字，打个招呼（greeting）。", "一些文字，问候（greeting）。");
    fixture.edit("guide/en/01-intro.md", "Hello paragraph.", "Hello paragraph.\n\n{{#glossary}}");
    fixture.edit("guide/zh/01-intro.md", "你好段落。", "你好段落。\n\n{{#glossary}}");
    accept(fixture.root(), &[]).expect("accept");
    assert_eq!(fixture.diagnostics(), Vec::<String>::new());
    let html = build(fixture.root()).html;
    assert!(html.contains("<tr><th>greeting</th><td>问候</td><td>Saying hello.</td></tr>"));
    assert!(html.contains("<tr><th>问候</th><td>greeting</td><td>打招呼。</td><td>招呼、greeting</td></tr>"));
}

#[test]
fn deep_dives_and_solutions_become_boxes_and_both_languages_have_the_same() {
    let fixture = Fixture::new("boxes");
    fixture.edit(
        "guide/en/01-intro.md",
        "Some text.\n",
        "Some text.\n\n> **Deep dive: the race.** Skip me.\n\n> **Solution.** Use a lock.\n> Then test it.\n",
    );
    fixture.edit(
        "guide/zh/01-intro.md",
        "一些文字。\n",
        "一些文字。\n\n> **深入：竞争** 可以跳过。\n\n> **解答：** 加锁。\n",
    );
    accept(fixture.root(), &[]).expect("accept");
    assert_eq!(fixture.diagnostics(), Vec::<String>::new());
    let html = build(fixture.root()).html;
    assert!(html.contains(
        "<aside class=\"deep-dive\">\n<p><strong>Deep dive: the race.</strong> Skip me.</p>\n</aside>"
    ));
    assert!(html.contains(
        "<details class=\"solution\"><summary>Solution.</summary>\n<p>Use a lock.\nThen test it.</p>\n</details>"
    ));
    assert!(
        html.contains("<details class=\"solution\"><summary>解答：</summary>\n<p>加锁。</p>\n</details>")
    );
    assert!(!html.contains("<blockquote>"), "marked quotes are boxes, not quotes");

    fixture.edit("guide/zh/01-intro.md", "> **深入：竞争** 可以跳过。\n", "");
    fixture.assert_reports(
        "guide/zh/01-intro.md:1",
        "0 deep dives and 1 solutions here but 1 and 1 in guide/en/01-intro.md",
    );
}

#[test]
fn every_numbered_chapter_has_the_sections_of_the_shape_with_answered_exercises() {
    let fixture = Fixture::new("shape");
    fixture.write("guide/shape.txt", "# comment\nrun-it | Run it | 动手运行\nexercises | Exercises | 练习\n");
    fixture.assert_reports("guide/en/01-intro.md:1", "missing section `## Run it {#intro-run-it}`");
    fixture.assert_reports("guide/zh/01-intro.md:1", "missing section `## 练习 {#intro-exercises}`");

    fixture.write("guide/shape.txt", "run-it | Run it | 动手运行\npending 01\n");
    fixture.assert_reports("guide/shape.txt:2", "a shape line is `id-suffix | English title | 中文标题`");
    fixture.write("guide/shape.txt", "run-it | Run it | 动手运行\nexercises | Exercises | 练习\n");

    let tail = |run: &str, exercises: &str, body: &str| {
        format!("\n## {run}\n\n`$STATES/ch01/mini-agent`\n\n## {exercises}\n\n{body}")
    };
    let english = tail("Exercises {#intro-exercises}", "Try it {#intro-run-it}", "x\n");
    fixture.write("guide/en/01-intro.md", &(ENGLISH.to_string() + &english));
    fixture.assert_reports(
        "guide/en/01-intro.md:19",
        "section `{#intro-run-it}` is written `## Try it`; the shape (guide/shape.txt) writes it `## Run it`",
    );
    fixture.assert_reports("guide/en/01-intro.md:15", "`{#intro-exercises}` comes before `-run-it`");

    let english = tail("Run it {#intro-run-it}", "Exercises {#intro-exercises}", "**★ Do it.** Go.\n");
    let chinese =
        tail("动手运行 {#intro-run-it}", "练习 {#intro-exercises}", "**★ 做。** 去。\n\n> **解答：** 好。\n");
    fixture.write("guide/en/01-intro.md", &(ENGLISH.to_string() + &english));
    fixture.write("guide/zh/01-intro.md", &(CHINESE.to_string() + &chinese));
    fixture.assert_reports("guide/en/01-intro.md:19", "1 exercises but 0 solutions");
    fixture.assert_reports("guide/zh/01-intro.md:1", "0 deep dives and 1 solutions here but 0 and 0");

    let english = tail(
        "Run it {#intro-run-it}",
        "Exercises {#intro-exercises}",
        "**★★★★ Do it.** Go.\n\n> **Solution.** Done.\n",
    );
    fixture.write("guide/en/01-intro.md", &(ENGLISH.to_string() + &english));
    fixture.assert_reports("guide/en/01-intro.md:19", "tag it ★, ★★ or ★★★");

    let english = tail(
        "Run it {#intro-run-it}",
        "Exercises {#intro-exercises}",
        "**★★ Do it.** Go.\n\n> **Solution.** Done.\n",
    );
    let chinese = tail(
        "动手运行 {#intro-run-it}",
        "练习 {#intro-exercises}",
        "**★★ 做。** 去。\n\n> **解答：** 好。\n",
    );
    fixture.write("guide/en/01-intro.md", &(ENGLISH.to_string() + &english));
    fixture.write("guide/zh/01-intro.md", &(CHINESE.to_string() + &chinese));
    accept(fixture.root(), &[]).expect("accept");
    assert_eq!(fixture.diagnostics(), Vec::<String>::new());
}

#[test]
fn reading_cost_counts_english_words_chinese_characters_and_code_lines() {
    let fixture = Fixture::new("stats");
    assert_eq!(crate::stats::prose_units("Hello, world: `run_turn` it"), 4);
    assert_eq!(crate::stats::prose_units("你好，world。"), 3);
    let table = crate::stats::reading_stats(fixture.root());
    // "Intro Hello paragraph. Greeting Some text. See the intro and the greeting." = 12 words;
    // the included region is 3 lines.
    assert!(table.contains("01-intro.md                   12"), "{table}");
    let totals = table.lines().find(|line| line.starts_with("total")).unwrap();
    assert!(totals.ends_with("3     (0)            0"), "{table}");
    assert!(table.contains("core path (chapters 1-13): 12 English words and 3 Rust lines"), "{table}");
    // One listing of 3 lines, none over 30.
    assert!(table.contains("listings  longest  over 30"), "{table}");
    assert!(table.lines().last().unwrap().ends_with("1        3        0        0     (0)"), "{table}");
}

#[test]
fn a_listing_inside_a_deep_dive_counts_apart_from_the_main_path() {
    let fixture = Fixture::new("stats-boxed");
    let english = ENGLISH.to_string();
    let boxed =
        english.replacen("```rust\n{{#include", "> **Deep dive: the code.**\n>\n> ```rust\n> {{#include", 1);
    let boxed = boxed.replacen("}}\n```", "}}\n> ```", 1);
    assert_ne!(boxed, english, "the fixture has an include to box");
    fixture.write("guide/en/01-intro.md", &boxed);
    let table = crate::stats::reading_stats(fixture.root());
    let intro = table.lines().find(|line| line.starts_with("01-intro.md")).unwrap();
    assert!(intro.contains("3     (3)"), "{table}");
    assert!(table.contains("and 0 Rust lines of main text"), "{table}");
}

#[test]
fn a_chapter_over_its_word_budget_is_reported_unless_the_rest_is_in_a_deep_dive() {
    let fixture = Fixture::new("word-budget");
    let check = || {
        let mut diagnostics = Vec::new();
        crate::stats::check_reading_cost(fixture.root(), &mut diagnostics);
        diagnostics.iter().map(crate::Diagnostic::to_string).collect::<Vec<_>>()
    };
    assert_eq!(check(), Vec::<String>::new(), "the fixture is small");
    let words = "word ".repeat(3_001);
    let long = ENGLISH.replace("Some text.", &words);
    fixture.write("guide/en/01-intro.md", &long);
    let reported = check();
    assert!(reported.iter().any(|d| d.contains("01-intro.md") && d.contains("over 3000")), "{reported:?}");
    let boxed = ENGLISH.replace("Some text.", &format!("Some text.\n\n> **Deep dive: the rest.** {words}"));
    fixture.write("guide/en/01-intro.md", &boxed);
    assert!(check().iter().all(|d| !d.contains("over 3000")), "{:?}", check());
}

#[test]
fn the_listing_table_counts_listings_the_longest_and_those_over_thirty_lines() {
    let fixture = Fixture::new("stats-listings");
    let body = |lines: usize| (0..lines).map(|n| format!("    let x{n} = {n};\n")).collect::<String>();
    fixture.write(
        "src/a.rs",
        &format!("// ANCHOR: greet\npub fn greet() {{\n{}}}\n// ANCHOR_END: greet\n", body(38)),
    );
    let table = crate::stats::reading_stats(fixture.root());
    // The greeting listing is now 40 lines: one listing, longest 40, one over 30.
    assert!(table.lines().last().unwrap().ends_with("1       40        1        0     (0)"), "{table}");
}

#[test]
fn a_listing_over_fifty_lines_is_reported_with_its_length_and_state_attributes_do_not_count() {
    let fixture = Fixture::new("long-listing");
    let body = |lines: usize| (0..lines).map(|n| format!("    let x{n} = {n};\n")).collect::<String>();
    let attributes = "#[cfg(feature = \"ch01\")]\n".repeat(10);
    fixture.write(
        "src/a.rs",
        &format!("// ANCHOR: greet\n{attributes}pub fn greet() {{\n{}}}\n// ANCHOR_END: greet\n", body(48)),
    );
    assert_eq!(fixture.diagnostics(), Vec::<String>::new(), "50 lines shown, 10 hidden");
    // `fn hello` under the anchor `greet` is not a whole function anchored under its own name.
    fixture.write(
        "src/a.rs",
        &format!("// ANCHOR: greet\npub fn hello() {{\n{}}}\n// ANCHOR_END: greet\n", body(49)),
    );
    fixture.assert_reports("guide/en/01-intro.md:10", "listing src/a.rs:greet is 51 lines; at most 50");
    fixture.assert_reports("guide/zh/01-intro.md:10", "listing src/a.rs:greet is 51 lines");
}

#[test]
fn a_whole_function_anchored_under_its_own_name_may_be_long_and_nothing_else_may() {
    let fixture = Fixture::new("whole-function");
    let body = |lines: usize| (0..lines).map(|n| format!("    let x{n} = {n};\n")).collect::<String>();
    let whole = |lines: usize, after: &str| {
        format!(
            "// ANCHOR: greet\n/// Greets.\n#[must_use]\npub(crate) fn greet<T>(\n    name: T,\n) -> u8 {{\n{}    0\n}}\n{after}// ANCHOR_END: greet\n",
            body(lines)
        )
    };
    // 6 lines of doc, attribute, signature and braces around the body: 120 lines in all.
    fixture.write("src/a.rs", &whole(113, ""));
    assert_eq!(fixture.diagnostics(), Vec::<String>::new(), "a whole function of 120 lines");
    fixture.write("src/a.rs", &whole(144, ""));
    fixture.assert_reports(
        "guide/en/01-intro.md:10",
        "listing src/a.rs:greet is a whole function of 151 lines; at most 150",
    );
    // The function and one more item: not a whole function, so at most 50.
    fixture.write("src/a.rs", &whole(60, "const AFTER: u8 = 1;\n"));
    fixture.assert_reports("guide/en/01-intro.md:10", "listing src/a.rs:greet is 68 lines; at most 50");
    // Half a function (the anchor ends before its closing brace): at most 50.
    fixture.write(
        "src/a.rs",
        &whole(60, "").replace("    0\n}\n// ANCHOR_END: greet\n", "// ANCHOR_END: greet\n    0\n}\n"),
    );
    fixture.assert_reports("guide/en/01-intro.md:10", "listing src/a.rs:greet is 65 lines; at most 50");
}

#[test]
fn the_pieces_of_a_whole_function_keep_the_columns_they_have_in_it() {
    let source = "impl Agent {
    // ANCHOR: run
    /// Runs.
    pub fn run(&mut self) -> u8 {
        // ANCHOR: start
        let mut step = || {
            // ANCHOR_END: start
            // ANCHOR: inner
            if self.ready() {
                return 1;
            }
            // ANCHOR_END: inner
            // ANCHOR: tail
            0
        };
        // ANCHOR_END: tail
        step()
    }
    // ANCHOR_END: run
    // ANCHOR: other
    fn other() {
        // ANCHOR: alone
        if x {
            y();
        }
        // ANCHOR_END: alone
        z();
    }
    // ANCHOR_END: alone
}
";
    let source = source.replacen("    // ANCHOR_END: alone\n}", "    // ANCHOR_END: other\n}", 1);
    let mut diagnostics = Vec::new();
    let anchors = crate::anchors::scan_file("src/x.rs", &source, &mut diagnostics);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let shown = |name: &str| anchors[name].shown(crate::states::State::FULL);
    // The whole method stands at the margin; each piece at its column in it (the source's,
    // less the method's own four).
    assert!(anchors["run"].whole_function && anchors["other"].whole_function);
    assert!(shown("run").starts_with("/// Runs.\npub fn run(&mut self) -> u8 {\n    let mut step = || {\n"));
    assert_eq!(shown("start"), "    let mut step = || {\n");
    assert_eq!(shown("inner"), "        if self.ready() {\n            return 1;\n        }\n");
    assert_eq!(shown("tail"), "        0\n    };\n");
    assert_eq!(anchors["inner"].piece_of, Some(("run".to_string(), 4)));
    assert_eq!(shown("alone"), "    if x {\n        y();\n    }\n");
    // A region in no whole function is dedented as before.
    let plain = "fn a() {}\n// ANCHOR: b\n        if x {\n            y();\n        }\n// ANCHOR_END: b\n";
    let anchors = crate::anchors::scan_file("src/y.rs", plain, &mut diagnostics);
    assert_eq!(anchors["b"].shown(crate::states::State::FULL), "if x {\n    y();\n}\n");
    assert!(!anchors["b"].whole_function && anchors["b"].piece_of.is_none());
}

#[test]
fn a_chinese_run_it_block_that_differs_from_the_english_is_reported() {
    let fixture = Fixture::new("run-it-languages");
    fixture.edit(
        "guide/en/01-intro.md",
        "Some text.\n",
        "Some text.\n\n## Run it {#intro-run}\n\n```console\n$ $STATES/ch01/mini-agent --demo -p hi\nhello\n```\n",
    );
    fixture.edit(
        "guide/zh/01-intro.md",
        "一些文字。\n",
        "一些文字。\n\n## 运行 {#intro-run}\n\n```console\n$ $STATES/ch01/mini-agent --demo -p hi\n你好\n```\n",
    );
    fixture.assert_reports(
        "guide/zh/01-intro.md:12",
        "\"Run it\" console block 1 differs from guide/en/01-intro.md:12",
    );
    fixture.edit("guide/zh/01-intro.md", "你好\n", "hello\n");
    assert!(!fixture.diagnostics().iter().any(|line| line.contains("Run it")), "{:?}", fixture.diagnostics());
}

#[test]
fn a_run_it_that_runs_no_state_by_its_path_is_reported() {
    let fixture = Fixture::new("run-it-states");
    let section = "\n\n## Run it {#intro-run-it}\n\n```sh\ncargo build\nexport PATH=\"$PWD/target/debug:$PATH\"\n```\n\n```console\n$ mini-agent --demo -p hi\nhello\n$ target/debug/mini-agent -p hi\n$ $STATES/ch02/mini-agent -p hi\n```\n\n```sh\ncargo run -- --demo\n```\n";
    fixture.edit("guide/en/01-intro.md", "Some text.\n", &format!("Some text.{section}"));
    fixture.assert_reports("guide/en/01-intro.md:9", "\"Run it\" names no chapter state");
    fixture.assert_reports(
        "guide/en/01-intro.md:17",
        "runs `mini-agent`, which is whatever the last build left",
    );
    fixture.assert_reports("guide/en/01-intro.md:19", "runs `target/debug/mini-agent`");
    fixture.assert_reports("guide/en/01-intro.md:20", "runs chapter 2's state in chapter 1");
    fixture.assert_reports("guide/en/01-intro.md:24", "uses `cargo run`");
    let fixed = section.replace("$ mini-agent", "$ $STATES/ch01/mini-agent");
    let fixed = fixed.replace("target/debug/mini-agent -p hi\n$ $STATES/ch02", "$STATES/ch01");
    let fixed = fixed.replace("cargo run -- --demo", "cargo test --features ch01");
    fixture.edit("guide/en/01-intro.md", section, &fixed);
    let left: Vec<String> =
        fixture.diagnostics().into_iter().filter(|line| line.starts_with("guide/en/")).collect();
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn a_file_is_counted_up_to_its_inline_test_module() {
    let text = "//! doc\n#[cfg(test)]\n#[path = \"t.rs\"]\nmod tests;\nfn a() {}\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n";
    assert_eq!(crate::sizes::code_lines(text), 5);
    assert_eq!(crate::sizes::code_lines("fn a() {}\nfn b() {}\n"), 2);
}

/// The region `a` of `source`, as chapter `chapter`'s state shows it.
fn shown_in(source: &str, chapter: u32) -> String {
    let mut diagnostics = Vec::new();
    let anchors = crate::anchors::scan_file("src/x.rs", source, &mut diagnostics);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    anchors["a"].shown(crate::states::State(chapter))
}

#[test]
fn an_enum_shows_a_later_chapters_variant_only_from_that_chapter_on() {
    let source = "// ANCHOR: a\npub enum Event {\n    Reply(String),\n    /// Waiting before trying again (chapter 8).\n    #[cfg(feature = \"ch08\")]\n    Retry {\n        attempt: u32,\n        wait_ms: u64,\n    },\n    #[cfg(feature = \"ch11\")]\n    Partial(String),\n    Warning(String),\n}\n// ANCHOR_END: a\n";
    assert_eq!(shown_in(source, 2), "pub enum Event {\n    Reply(String),\n    Warning(String),\n}\n");
    assert_eq!(
        shown_in(source, 8),
        "pub enum Event {\n    Reply(String),\n    /// Waiting before trying again (chapter 8).\n    Retry {\n        attempt: u32,\n        wait_ms: u64,\n    },\n    Warning(String),\n}\n"
    );
    assert_eq!(shown_in(source, 99).lines().count(), 10, "the appendix shows everything");
}

#[test]
fn a_gated_field_inside_a_gated_struct_follows_both_gates() {
    let source = "// ANCHOR: a\npub struct Keys {\n    pub api_key: Option<String>,\n    #[cfg(feature = \"ch05\")]\n    #[derive(Clone)]\n    pub extra: Extra {\n        pub one: u8,\n        #[cfg(feature = \"ch07\")]\n        pub two: Vec<(u8, [u8; 2])>,\n    },\n}\n// ANCHOR_END: a\n";
    assert_eq!(shown_in(source, 4), "pub struct Keys {\n    pub api_key: Option<String>,\n}\n");
    assert_eq!(
        shown_in(source, 6),
        "pub struct Keys {\n    pub api_key: Option<String>,\n    #[derive(Clone)]\n    pub extra: Extra {\n        pub one: u8,\n    },\n}\n"
    );
    assert_eq!(shown_in(source, 7).lines().count(), 8);
}

#[test]
fn a_gated_block_is_dropped_whole_with_brackets_in_strings_and_comments_ignored() {
    let source = "// ANCHOR: a\nfn count(&mut self) {\n    self.a += 1;\n    #[cfg(feature = \"ch19\")]\n    {\n        let open = \"{ ( [\"; // }\n        let c = '}';\n        self.b.push(open, c, r#\"}\"#);\n    }\n    self.c += 1;\n}\n// ANCHOR_END: a\n";
    assert_eq!(shown_in(source, 14), "fn count(&mut self) {\n    self.a += 1;\n    self.c += 1;\n}\n");
    assert!(shown_in(source, 19).contains("let c = '}';"));
}

#[test]
fn a_not_item_is_shown_until_the_chapter_that_replaces_it() {
    let source = "// ANCHOR: a\nfn models() -> Model {\n    #[cfg(feature = \"ch11\")]\n    if stream {\n        return streaming();\n    }\n    #[cfg(not(feature = \"ch11\"))]\n    let _ = stream; // streaming comes with chapter 11\n    plain()\n}\n// ANCHOR_END: a\n";
    assert_eq!(
        shown_in(source, 8),
        "fn models() -> Model {\n    let _ = stream; // streaming comes with chapter 11\n    plain()\n}\n"
    );
    assert_eq!(
        shown_in(source, 11),
        "fn models() -> Model {\n    if stream {\n        return streaming();\n    }\n    plain()\n}\n"
    );
}

#[test]
fn an_all_unix_item_is_judged_by_its_feature_and_an_inline_attribute_is_cut_off() {
    let source = "// ANCHOR: a\nfn start(\n    root: PathBuf,\n    #[cfg(feature = \"ch05\")] opened: Option<Opened>,\n) {\n    #[cfg(all(unix, feature = \"ch04\"))]\n    install_handler(\n        signal::SIGINT,\n    );\n    #[cfg(all(feature = \"ch12\", not(feature = \"ch16\")))]\n    let gate = Gate::new();\n    go();\n}\n// ANCHOR_END: a\n";
    assert_eq!(shown_in(source, 3), "fn start(\n    root: PathBuf,\n) {\n    go();\n}\n");
    let in_twelve = shown_in(source, 12);
    assert!(in_twelve.contains("    opened: Option<Opened>,\n) {\n"), "{in_twelve}");
    assert!(
        in_twelve.contains("install_handler(\n        signal::SIGINT,\n    );\n    let gate"),
        "{in_twelve}"
    );
    assert!(!shown_in(source, 16).contains("Gate"));
}

#[test]
fn a_listing_empty_in_its_chapters_state_is_reported_and_trimmed_listings_are_counted() {
    let fixture = Fixture::new("state-listing");
    let later = "// ANCHOR: greet\npub fn greet() -> &'static str {\n    #[cfg(feature = \"ch02\")]\n    log();\n    \"hello\"\n}\n// ANCHOR_END: greet\n";
    fixture.write("src/a.rs", later);
    let table = crate::stats::reading_stats(fixture.root());
    // Chapter 1 shows the 3 lines of `greet` without chapter 2's `log();`: one listing trimmed by 1.
    assert!(table.lines().last().unwrap().ends_with("1        3        0        1     (1)"), "{table}");
    fixture.write(
        "src/a.rs",
        "// ANCHOR: greet\n#[cfg(feature = \"ch02\")]\nfn greet() {}\n// ANCHOR_END: greet\n",
    );
    fixture.assert_reports(
        "guide/en/01-intro.md:10",
        "resolves to an empty region in chapter 1's state (src/a.rs:1)",
    );
}
