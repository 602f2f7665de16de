//! Tests of reading the chapters: sections, anchors and includes.

use super::*;

#[test]
fn line_numbers_count_from_one() {
    let lines = Lines::new("a\nbc\n\nd");
    assert_eq!([0, 1, 2, 4, 5, 6].map(|offset| lines.of(offset)), [1, 1, 2, 2, 3, 4]);
}

#[test]
fn sections_run_from_one_heading_to_the_next_and_ignore_trailing_blanks() {
    let chapter = Chapter {
        name: "01-a.md".into(),
        path: "guide/en/01-a.md".into(),
        text: "# A {#a}\n\nIntro.  \n\n```sh\n# not a heading\n```\n\n## B {#b}\nBody.\n\n\n".into(),
        number: None,
    };
    let mut diagnostics = Vec::new();
    let outline = outline(&chapter, &mut diagnostics);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let summary: Vec<(u8, &str, usize, &str)> =
        outline.headings.iter().map(|h| (h.level, h.id.as_str(), h.line, h.section.as_str())).collect();
    assert_eq!(
        summary,
        [(1, "a", 1, "# A {#a}\n\nIntro.\n\n```sh\n# not a heading\n```"), (2, "b", 9, "## B {#b}\nBody.")]
    );
}

#[test]
fn a_line_break_between_chinese_characters_is_no_space_but_one_between_words_is() {
    let chapter = Chapter {
        name: "01-a.md".into(),
        path: "guide/zh/01-a.md".into(),
        text: "# 标题 {#a}\n\n第一行，\n第二行 and\nwords.\n".into(),
        number: None,
    };
    let anchors = AnchorMap::new();
    let targets = LinkTargets::new();
    let (diagrams, glossary) = (Diagrams::new(), Glossary::new());
    let context = RenderContext {
        language: "zh",
        anchors: &anchors,
        targets: &targets,
        diagrams: &diagrams,
        glossary: &glossary,
    };
    let mut diagnostics = Vec::new();
    let rendered = render(&chapter, &context, &mut diagnostics);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let html = "<h1 id=\"zh-a\">标题</h1>\n<p>第一行，第二行 and\nwords.</p>\n";
    assert_eq!(rendered.pieces, [Piece::Prose(html.into())]);
    assert_eq!(rendered.sections[0].text, "第一行，第二行 and words.");
}

#[test]
fn titles_that_number_themselves_are_recognised() {
    for title in ["Chapter 1 · The loop", "第 1 章 · 循环", "第十二章 权限"] {
        assert!(has_written_number(title), "{title}");
    }
    for title in ["Chapters of a book", "Preface", "第一部分 · 智能体", "前言", "第 3 个尝试的章节标题"]
    {
        assert!(!has_written_number(title), "{title}");
    }
    assert_eq!(number_prefix("en", Some(3)), "3 · ");
    assert_eq!(number_prefix("zh", Some(12)), "第 12 章 · ");
    assert_eq!(number_prefix("zh", None), "");
}

#[test]
fn bold_that_commonmark_cannot_close_in_chinese_is_reported() {
    let chapter = Chapter {
        name: "01-a.md".into(),
        path: "guide/zh/01-a.md".into(),
        text: "# 标题 {#a}\n\n文件。**会话就是文件。**没有数据库；**这样**可以。\n".into(),
        number: None,
    };
    let anchors = AnchorMap::new();
    let targets = LinkTargets::new();
    let (diagrams, glossary) = (Diagrams::new(), Glossary::new());
    let context = RenderContext {
        language: "zh",
        anchors: &anchors,
        targets: &targets,
        diagrams: &diagrams,
        glossary: &glossary,
    };
    let mut diagnostics = Vec::new();
    render(&chapter, &context, &mut diagnostics);
    let mut lines: Vec<String> = diagnostics.iter().map(Diagnostic::to_string).collect();
    lines.dedup(); // the build does the same: one report per line
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("guide/zh/01-a.md:3: `**` shown as text"), "{lines:?}");
}

#[test]
fn external_urls_are_found_in_text() {
    assert_eq!(external_url("see https://example.com/x) now"), Some("https://example.com/x"));
    assert_eq!(external_url("<img src=\"//cdn.example/a.png\">"), Some("//cdn.example/a.png"));
    assert_eq!(external_url("a/b and c // note"), None);
    assert_eq!(external_url("mailto://x"), Some("mailto://x"));
}
