//! The rules that read a request: a keyword at the start, then paths and quoted text split
//! at separators outside quotes. Keywords match case-insensitively; paths and content keep
//! their case. A few Chinese forms are read the same way.

use super::plan::Intent;

// ANCHOR: parse
/// Reads a request. Keywords match case-insensitively; paths and content keep their case.
pub fn parse_intent(text: &str) -> Intent {
    let text = strip_politeness(text.trim());
    let attempts: [fn(&str) -> Option<Intent>; 7] =
        [parse_run, parse_replace, parse_write, parse_list, parse_search, parse_read, parse_chinese];
    attempts.iter().find_map(|parse| parse(text)).unwrap_or(Intent::Unknown)
}

pub(super) fn parse_run(text: &str) -> Option<Intent> {
    let rest = after_word(text, &["run the command", "run command", "run", "execute", "exec"])?;
    let command = unquote(rest);
    (!command.is_empty()).then(|| Intent::Run { command: command.to_string() })
}

pub(super) fn parse_replace(text: &str) -> Option<Intent> {
    let (rest, joiner) = match after_word(text, &["replace", "substitute"]) {
        Some(rest) => (rest, " with "),
        None => (after_word(text, &["change"])?, " to "),
    };
    let (pair, path) = split_last(rest, " in ")?;
    let (old, new) = split_pair(pair, joiner)?;
    let path = clean_path(path);
    (!old.is_empty() && !path.is_empty()).then(|| Intent::Replace {
        path: path.to_string(),
        old: old.to_string(),
        new: new.to_string(),
    })
}
// ANCHOR_END: parse

pub(super) fn parse_write(text: &str) -> Option<Intent> {
    if let Some(rest) = after_word(text, &["write", "save", "put"]) {
        let rest = strip_words(rest, &["the text", "text"]);
        if let Some((content, path)) = split_last(rest, " to ").or_else(|| split_last(rest, " into ")) {
            return Some(write_intent(path, content));
        }
    }
    let rest = after_word(text, &["create", "make", "write"])?;
    let rest = strip_words(rest, &["a new file", "a file", "the file", "new file", "file", "a", "an"]);
    let rest = strip_words(rest, &["named", "called"]);
    const CONTENT_WORDS: [&str; 7] = [
        " containing ",
        " with content ",
        " with the content ",
        " with text ",
        " with ",
        " that says ",
        " saying ",
    ];
    let split = CONTENT_WORDS.iter().find_map(|word| split_first(rest, word));
    let (path, content) = split.unwrap_or((rest, ""));
    one_path(path).map(|path| write_intent(path, content))
}

pub(super) fn parse_list(text: &str) -> Option<Intent> {
    let lower = text.to_ascii_lowercase();
    let asks_for_files = ["show files", "show me the files", "show the files", "what files", "which files"]
        .iter()
        .any(|phrase| lower.starts_with(phrase));
    let rest = match after_word(text, &["list"]) {
        Some(rest) => rest,
        None if asks_for_files => "",
        None if lower == "list" || lower == "ls" => "",
        None => return None,
    };
    let rest = strip_words(rest, &["all", "the"]);
    let rest = strip_words(rest, &["files", "file", "everything", "contents"]);
    let rest = strip_words(rest, &["in", "under", "of", "inside"]);
    let path = clean_path(rest);
    Some(Intent::List { path: (!path.is_empty()).then(|| path.to_string()) })
}

pub(super) fn parse_search(text: &str) -> Option<Intent> {
    let rest = after_word(
        text,
        &["search for", "search", "find text", "find occurrences of", "find", "grep", "look for"],
    )?;
    let (pattern, path) = match split_last(rest, " in ") {
        // `in <one word>` names where to look; otherwise "in" is part of the pattern.
        Some((pattern, path)) if !pattern.trim().is_empty() && one_path(path).is_some() => {
            (pattern, one_path(path).map(String::from))
        }
        _ => (rest, None),
    };
    let pattern = unquote(pattern);
    (!pattern.is_empty()).then(|| Intent::Search { pattern: pattern.to_string(), path })
}

pub(super) fn parse_read(text: &str) -> Option<Intent> {
    let rest = after_word(
        text,
        &["read", "show me", "show", "cat", "open", "display", "print", "view", "what's in", "what is in"],
    )?;
    let rest = strip_words(rest, &["the contents of", "the content of", "contents of", "content of"]);
    let rest = strip_words(rest, &["the file", "file"]);
    one_path(rest).map(|path| Intent::Read { path: path.to_string() })
}

/// A few Chinese forms: 创建/新建 … 内容为 …, 把 … 写入 …, 读取/查看 …, 列出 …, 搜索/查找 …,
/// 运行/执行 …, 把 <file> 中的 … 替换为 ….
pub(super) fn parse_chinese(text: &str) -> Option<Intent> {
    if let Some((before, new)) =
        ["替换为", "替换成", "改为", "改成"].iter().find_map(|w| split_first(text, w))
    {
        let before = before.trim_start_matches(['把', '将', '在']);
        let (path, old) =
            ["中的", "里的", "中把", "里把", "中", "里"].iter().find_map(|w| split_first(before, w))?;
        let old = old.trim_start_matches(['把', '将']);
        let (path, old, new) = (clean_path(path), unquote(old), unquote(new));
        return (!path.is_empty() && !old.is_empty()).then(|| Intent::Replace {
            path: path.into(),
            old: old.into(),
            new: new.into(),
        });
    }
    if let Some(rest) = text.strip_prefix('把').or_else(|| text.strip_prefix('将'))
        && let Some((content, path)) = ["写入", "写到"].iter().find_map(|w| split_first(rest, w))
    {
        return Some(write_intent(path, content));
    }
    if let Some(rest) = ["创建", "新建"].iter().find_map(|w| text.strip_prefix(w)) {
        let rest = rest.trim_start_matches("一个").trim_start_matches("文件");
        let words = ["，内容为", "，内容是", ",内容为", "内容为", "内容是", "内容：", "内容:", "写入"];
        let (path, content) = words.iter().find_map(|w| split_first(rest, w)).unwrap_or((rest, ""));
        return Some(write_intent(path, content));
    }
    let (verb, rest) = ["读取", "查看", "显示", "打开", "列出", "搜索", "查找", "运行", "执行"]
        .iter()
        .find_map(|verb| Some((*verb, text.strip_prefix(verb)?)))?;
    let rest = rest.trim_start_matches("命令").trim_start_matches("文件").trim();
    let rest = rest.trim_end_matches("目录下的文件").trim_end_matches("中的文件").trim_end_matches("目录");
    let (path, value) = (clean_path(rest).to_string(), unquote(rest).to_string());
    match verb {
        "列出" => Some(Intent::List { path: (!path.is_empty()).then_some(path) }),
        _ if value.is_empty() => None,
        "搜索" | "查找" => Some(Intent::Search { pattern: value, path: None }),
        "运行" | "执行" => Some(Intent::Run { command: value }),
        _ => Some(Intent::Read { path }),
    }
}

pub(super) fn write_intent(path: &str, content: &str) -> Intent {
    // A literal `\n` typed in a one-line prompt means a line break in the file.
    let content = unquote(content).replace("\\n", "\n").replace("\\t", "\t");
    Intent::Write { path: clean_path(path).to_string(), content }
}

pub(super) fn strip_politeness(text: &str) -> &str {
    let text = strip_words(text, &["please", "can you", "could you", "would you"]);
    let lower = text.to_ascii_lowercase();
    if lower.ends_with(" please") { text[..text.len() - " please".len()].trim_end() } else { text }
}

/// The text after the first of `words` that starts `text` as a whole word, if any.
pub(super) fn after_word<'a>(text: &'a str, words: &[&str]) -> Option<&'a str> {
    words.iter().find_map(|word| {
        let head = text.get(..word.len())?;
        let rest = &text[word.len()..];
        let whole_word = rest.is_empty() || rest.starts_with(char::is_whitespace);
        (head.eq_ignore_ascii_case(word) && whole_word).then(|| rest.trim())
    })
}

/// `after_word`, but keeps the text when none of the words starts it.
pub(super) fn strip_words<'a>(text: &'a str, words: &[&str]) -> &'a str {
    after_word(text, words).unwrap_or(text)
}

/// Splits at the first `separator` outside quotes (matched case-insensitively).
pub(super) fn split_first<'a>(text: &'a str, separator: &str) -> Option<(&'a str, &'a str)> {
    separator_positions(text, separator).first().map(|&at| (&text[..at], &text[at + separator.len()..]))
}

/// Splits at the last `separator` outside quotes.
pub(super) fn split_last<'a>(text: &'a str, separator: &str) -> Option<(&'a str, &'a str)> {
    separator_positions(text, separator).last().map(|&at| (&text[..at], &text[at + separator.len()..]))
}

/// Splits `old <joiner> new`, where either side may be quoted and contain the joiner.
pub(super) fn split_pair<'a>(text: &'a str, joiner: &str) -> Option<(&'a str, &'a str)> {
    let (old, new) = split_first(text, joiner)?;
    Some((unquote(old), unquote(new)))
}

pub(super) const QUOTES: [(char, char); 7] =
    [('"', '"'), ('\'', '\''), ('`', '`'), ('“', '”'), ('‘', '’'), ('「', '」'), ('『', '』')];

pub(super) fn separator_positions(text: &str, separator: &str) -> Vec<usize> {
    let lower = text.to_ascii_lowercase();
    let separator = separator.to_ascii_lowercase();
    let mut positions = Vec::new();
    let mut closing: Option<char> = None;
    for (at, c) in text.char_indices() {
        match closing {
            Some(close) if c == close => closing = None,
            Some(_) => {}
            None if lower[at..].starts_with(&separator) => positions.push(at),
            // A quote opens only at the start of a word, so "don't" is not a quote.
            None => {
                let starts_word = at == 0 || text[..at].ends_with(char::is_whitespace);
                closing = QUOTES.iter().find(|(open, _)| *open == c && starts_word).map(|(_, close)| *close);
            }
        }
    }
    positions
}

/// Removes one pair of surrounding quotes.
pub(super) fn unquote(text: &str) -> &str {
    let text = text.trim();
    for (open, close) in QUOTES {
        if let Some(inner) = text.strip_prefix(open).and_then(|t| t.strip_suffix(close)) {
            return inner;
        }
    }
    text
}

/// A path that is the whole of `text`: one word, or quoted if it has spaces.
pub(super) fn one_path(text: &str) -> Option<&str> {
    let path = clean_path(text);
    let quoted = QUOTES.iter().any(|(open, _)| text.trim().starts_with(*open));
    (!path.is_empty() && (quoted || !path.contains(char::is_whitespace))).then_some(path)
}

/// A path as typed in a sentence: unquoted, without the sentence's final punctuation.
pub(super) fn clean_path(text: &str) -> &str {
    let text = unquote(text.trim().trim_end_matches(['.', ',', ';', ':', '!', '?', '。', '，', '；', '：']));
    text.trim_start_matches(['，', ',', '：', ':']).trim()
}
