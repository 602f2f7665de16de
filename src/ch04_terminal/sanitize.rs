//! Chapter 4 — what reaches the screen.
//!
//! A terminal obeys the bytes it is sent: `\r` moves back to the start of the line, `ESC [2K`
//! erases it, `ESC ] 52 ;` writes the clipboard, `ESC ] 0 ;` sets the window title. The
//! model's text and a tool's output are written by someone else, so none of that may reach
//! the terminal as it was written: a command could be redrawn as a harmless one just before
//! the user approves it. The rule is one function, [`sanitize`], that every piece of model or
//! tool text goes through before it is printed: control characters become visible escapes
//! (`\r`, `\x1b`, `\u{202e}`), and only the agent's own styling emits escape sequences.
//!
//! The permission question needs one more step, [`sanitize_command`]: a command is read by a
//! person deciding whether to run it, so long runs of blanks (that push `; rm -rf ~` off the
//! edge of the screen) and runs of empty lines are shown as a count.

// ANCHOR: sanitize
/// Model or tool text made safe to print: newlines and tabs stay, every other control
/// character (C0, DEL, C1) and the invisible characters that reorder or hide text (bidi
/// overrides, zero-width spaces) are shown as escapes. `\r` shows as `\r`, ESC as `\x1b`.
pub fn sanitize(text: &str) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if needs_escape(c) {
            out.push_str(&visible(c));
        } else {
            out.push(c);
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_invisible_format(c)
}
// ANCHOR_END: sanitize

// ANCHOR: invisible
/// Characters a terminal draws as nothing (or as blank space) while they hide, reorder or
/// carry text: Unicode's whole Default_Ignorable_Code_Point set, not a hand-picked few —
/// bidi marks, embeddings, overrides and isolates (U+061C as well as U+202E), zero-width
/// spaces and joiners, the soft hyphen, the Hangul fillers, the BOM, and the tag characters
/// U+E0000… that smuggle a message no one sees. The emoji presentation selectors U+FE0E and
/// U+FE0F are kept: they only choose how the character before them looks.
fn is_invisible_format(c: char) -> bool {
    matches!(c,
        '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0d}' | '\u{feff}' | '\u{ffa0}'
        | '\u{fff0}'..='\u{fff8}' | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0000}'..='\u{e0fff}')
}

fn visible(c: char) -> String {
    match c {
        '\r' => "\\r".into(),
        '\u{1b}' => "\\x1b".into(),
        c if (c as u32) < 0x80 => format!("\\x{:02x}", c as u32),
        c => format!("\\u{{{:x}}}", c as u32),
    }
}
// ANCHOR_END: invisible

/// A run of blanks at least this long is shown as a count.
const BLANK_RUN: usize = 8;
/// More than this many empty lines in a row are shown as a count.
const EMPTY_LINES: usize = 2;

// ANCHOR: sanitize_command
/// A command as the permission question shows it: [`sanitize`]d, with long runs of spaces
/// and tabs shown as `[400 blanks]` and runs of empty lines as `[50 empty lines]`, so what
/// follows them is on the screen where the person looks.
pub fn sanitize_command(command: &str) -> String {
    let mut out = String::with_capacity(command.len());
    let mut empty_lines = 0;
    let mut lines = command.split('\n').peekable();
    let mut first = true;
    while let Some(line) = lines.next() {
        if line.chars().all(is_blank) && lines.peek().is_some() && !first {
            empty_lines += 1;
            continue;
        }
        if !first {
            out.push('\n');
        }
        if empty_lines > EMPTY_LINES {
            out.push_str(&format!("[{empty_lines} empty lines]\n"));
        } else {
            out.push_str(&"\n".repeat(empty_lines));
        }
        empty_lines = 0;
        first = false;
        squeeze_blanks(line, &mut out);
    }
    out
}

// ANCHOR_END: sanitize_command
/// What shows as blank space: spaces and tabs of every kind, and the invisible characters
/// (a Hangul filler is as wide as a letter and draws nothing). Control characters are not
/// blanks: [`sanitize`] shows them.
fn is_blank(c: char) -> bool {
    c == '\t' || (c.is_whitespace() && !c.is_control()) || is_invisible_format(c)
}

/// Runs of blanks in `line` are counted, checked on the raw text (an invisible character is
/// a blank before it is an escape); everything else goes through [`sanitize`].
fn squeeze_blanks(line: &str, out: &mut String) {
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        let count = run.chars().count();
        if count >= BLANK_RUN {
            out.push_str(&format!("[{count} blanks]"));
        } else {
            out.push_str(&sanitize(run));
        }
        run.clear();
    };
    for c in line.chars() {
        if is_blank(c) {
            run.push(c);
        } else {
            flush(&mut run, out);
            if needs_escape(c) {
                out.push_str(&visible(c));
            } else {
                out.push(c);
            }
        }
    }
    flush(&mut run, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_made_visible() {
        assert_eq!(sanitize("plain\ttext\nnext"), "plain\ttext\nnext");
        assert_eq!(sanitize("rm -rf ~\r\x1b[2Kecho hi"), "rm -rf ~\\r\\x1b[2Kecho hi");
        assert_eq!(sanitize("\x1b]52;c;aGk=\x07"), "\\x1b]52;c;aGk=\\x07");
        assert_eq!(sanitize("\x1b]0;title\x1b\\"), "\\x1b]0;title\\x1b\\");
        assert_eq!(sanitize("a\u{9b}31mb\u{7f}"), "a\\u{9b}31mb\\x7f");
        assert_eq!(sanitize("abc\u{202e}fed\u{200b}"), "abc\\u{202e}fed\\u{200b}");
        assert_eq!(sanitize("a\u{61c}b\u{ad}c\u{e0041}"), "a\\u{61c}b\\u{ad}c\\u{e0041}");
        assert_eq!(sanitize("ok \u{2764}\u{fe0f}"), "ok \u{2764}\u{fe0f}");
        assert_eq!(sanitize("中文 ok"), "中文 ok");
        assert!(!sanitize("\x00\x01\x08\x1b\r").chars().any(|c| c.is_control()));
    }

    #[test]
    fn commands_show_hidden_parts_as_counts() {
        let spaced = format!("echo harmless{}; touch X", " ".repeat(400));
        assert_eq!(sanitize_command(&spaced), "echo harmless[400 blanks]; touch X");
        assert_eq!(sanitize_command("a  b\tc"), "a  b\tc");
        let lines = format!("echo ok{}rm -rf x", "\n".repeat(60));
        assert_eq!(sanitize_command(&lines), "echo ok\n[59 empty lines]\nrm -rf x");
        assert_eq!(sanitize_command("one\n\ntwo\n"), "one\n\ntwo\n");
        assert_eq!(sanitize_command("x\r\x1b[2Ky"), "x\\r\\x1b[2Ky");
        let filled = format!("echo harmless{}; touch X", "\u{3164}".repeat(400));
        assert_eq!(sanitize_command(&filled), "echo harmless[400 blanks]; touch X");
        assert_eq!(sanitize_command("a\u{3164}b"), "a\\u{3164}b");
    }
}
