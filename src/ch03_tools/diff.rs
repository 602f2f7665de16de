//! Chapter 3 — what a write or an edit changes, as a diff of lines.
//!
//! A person asked to approve `edit_file` (chapter 12) should see the change, not a file name;
//! a program reading `--json` wants the same diff. Chapter 3 knows the files, so the diff is
//! computed here, from the file as it is on disk when the question is asked; chapter 12
//! only shows it.
//!
//! The file and the new content are untrusted and may be large (a 10 MB write, a file of ten
//! million empty lines, two versions that differ on every other line). So the diff is shaped
//! by its bounds, each a number:
//!
//! * **Common lines at both ends are skipped first**, byte by byte, without an index of lines:
//!   an edit in a 10 MB file leaves a few lines to compare.
//! * **The lines between are aligned by Myers' algorithm** (the O(ND) one `git diff` grew
//!   from) only while that stays small: at most [`ALIGN_MAX_LINES`] lines a side, at most
//!   [`ALIGN_MAX_EDITS`] lines added plus removed, at most [`ALIGN_MAX_STEPS`] steps. Past
//!   any of them the lines between are shown as one block, all removed then all added: still a
//!   correct diff, only not the shortest, and it says so.
//! * **Only the rows a person could read are kept**: the first [`KEEP_HEAD`] and the last
//!   [`KEEP_TAIL`] rows, each at most [`ROW_MAX_CHARS`] characters, and the count of those
//!   between. The counts of lines added and removed are always exact for the diff shown.
//!
//! Rows borrow from the two texts while the diff runs and are copied out only once kept, so a
//! file of ten million lines costs a pass over its bytes, not ten million strings.

use crate::ch03_tools::secrets::redactor;
use std::collections::{HashMap, VecDeque};

/// Lines a side of the changed middle that are aligned line by line.
pub const ALIGN_MAX_LINES: usize = 20_000;
/// Lines added plus removed that Myers' search may find before giving up.
pub const ALIGN_MAX_EDITS: usize = 1_000;
/// Steps (comparisons and moves) the search may take, whatever the sizes.
pub const ALIGN_MAX_STEPS: usize = 10_000_000;
/// Rows kept from the start of the diff, and from its end.
pub const KEEP_HEAD: usize = 1_500;
pub const KEEP_TAIL: usize = 500;
/// Characters kept of one row's text; the rest is cut with a mark.
pub const ROW_MAX_CHARS: usize = 400;
/// The largest text an edit is made whole to be compared (the edit itself streams larger ones).
pub const COMPARE_MAX_BYTES: u64 = 16 << 20;
/// The largest file on disk a write is compared with. A write's content is already in memory
/// several times (the reply, the call, the journal's record), up to 10 MiB each: reading a
/// large file beside it would take the agent past its 64 MB. A larger file is not compared;
/// the question shows the new content and says so.
pub const WRITE_COMPARE_MAX_BYTES: u64 = 4 << 20;
/// Unchanged lines shown around each change.
const CONTEXT: usize = 3;

/// What a row of the diff says about its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Unchanged (context around a change).
    Same,
    Removed,
    Added,
}

/// One row of a unified diff: a hunk's header or a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Row {
    /// `@@ -old_start,old_lines +new_start,new_lines @@`, 1-based as in `diff -u`.
    Hunk { old_start: usize, old_lines: usize, new_start: usize, new_lines: usize },
    /// A line: `number` is its number in the new file (old file for a removed line).
    Line {
        mark: Mark,
        number: usize,
        text: String,
        /// The text was longer than [`ROW_MAX_CHARS`] and is cut.
        cut: bool,
        /// The last line of its file, with no newline after it.
        no_newline: bool,
    },
}

/// The change between two texts, as far as it is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diff {
    pub added: usize,
    pub removed: usize,
    /// The first rows, then (after `hidden` rows not kept) the last rows.
    pub head: Vec<Row>,
    pub hidden: usize,
    pub tail: Vec<Row>,
    /// Whether the changed lines were aligned; `false`: shown as one block (see the module).
    pub aligned: bool,
}

impl Diff {
    /// `+2 −1`: the lines added and removed.
    pub fn stat(&self) -> String {
        format!("+{} −{}", self.added, self.removed)
    }

    /// Every row the diff has, kept or not.
    pub fn rows(&self) -> usize {
        self.head.len() + self.hidden + self.tail.len()
    }

    /// The diff as `diff -u` writes it, for programs (`--json`): `---`/`+++` headers naming
    /// `path` (`/dev/null` for a file that does not exist yet), hunks, and a bracketed line
    /// where rows were not kept.
    pub fn unified(&self, path: &str, created: bool) -> String {
        let old = if created { "/dev/null".to_string() } else { format!("a/{path}") };
        let mut out = format!("--- {old}\n+++ b/{path}\n");
        for row in &self.head {
            unified_row(row, &mut out);
        }
        if self.hidden > 0 {
            out.push_str(&format!("[… {} rows of the diff not kept …]\n", self.hidden));
        }
        for row in &self.tail {
            unified_row(row, &mut out);
        }
        out
    }
}

fn unified_row(row: &Row, out: &mut String) {
    match row {
        Row::Hunk { old_start, old_lines, new_start, new_lines } => {
            out.push_str(&format!("@@ -{old_start},{old_lines} +{new_start},{new_lines} @@\n"));
        }
        Row::Line { mark, text, cut, no_newline, .. } => {
            out.push(match mark {
                Mark::Same => ' ',
                Mark::Removed => '-',
                Mark::Added => '+',
            });
            out.push_str(text);
            out.push_str(if *cut { "… [line cut]\n" } else { "\n" });
            if *no_newline {
                out.push_str("\\ No newline at end of file\n");
            }
        }
    }
}

// ANCHOR: diff_lines
/// The diff from `old` to `new`, line by line, within the bounds of this module.
pub fn diff_lines(old: &str, new: &str) -> Diff {
    // Whole lines common to both ends are not compared again.
    let prefix = common_prefix_lines(old, new);
    let suffix = common_suffix_lines(&old[prefix.bytes..], &new[prefix.bytes..]);
    let old_middle = &old[prefix.bytes..old.len() - suffix.bytes];
    let new_middle = &new[prefix.bytes..new.len() - suffix.bytes];
    let (middle, aligned) = match align(old_middle, new_middle) {
        Some(runs) => (runs, true),
        None => {
            (vec![(Mark::Removed, count_lines(old_middle)), (Mark::Added, count_lines(new_middle))], false)
        }
    };
    let mut runs = vec![(Mark::Same, prefix.lines)];
    runs.extend(middle);
    runs.push((Mark::Same, suffix.lines));
    let mut keeper = Keeper::default();
    emit_rows(old, new, &merge(runs), &mut keeper);
    keeper.finish(aligned)
}
// ANCHOR_END: diff_lines

/// Lines of `text`: a last line without `\n` counts.
fn count_lines(text: &str) -> usize {
    text.bytes().filter(|&byte| byte == b'\n').count()
        + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

struct Common {
    lines: usize,
    bytes: usize,
}

/// The whole lines `old` and `new` start with in common.
fn common_prefix_lines(old: &str, new: &str) -> Common {
    let same = old.bytes().zip(new.bytes()).take_while(|(a, b)| a == b).count();
    // Back to the end of the last complete common line (or both texts end there).
    let whole = if same == old.len() && same == new.len() {
        same
    } else {
        old.as_bytes()[..same].iter().rposition(|&byte| byte == b'\n').map_or(0, |at| at + 1)
    };
    Common { lines: count_lines(&old[..whole]), bytes: whole }
}

/// The whole lines `old` and `new` end with in common.
fn common_suffix_lines(old: &str, new: &str) -> Common {
    let same = old.bytes().rev().zip(new.bytes().rev()).take_while(|(a, b)| a == b).count();
    let (old_start, new_start) = (old.len() - same, new.len() - same);
    let line_start = |text: &str, at: usize| at == 0 || text.as_bytes()[at - 1] == b'\n';
    let start = if line_start(old, old_start) && line_start(new, new_start) {
        old_start
    } else {
        // The next line start inside the common part: both texts have that `\n`.
        old.as_bytes()[old_start..]
            .iter()
            .position(|&byte| byte == b'\n')
            .map_or(old.len(), |at| old_start + at + 1)
    };
    Common { lines: count_lines(&old[start..]), bytes: old.len() - start }
}

/// Adjacent runs of one kind become one; empty runs go.
fn merge(runs: Vec<(Mark, usize)>) -> Vec<(Mark, usize)> {
    let mut merged: Vec<(Mark, usize)> = Vec::new();
    for (mark, count) in runs.into_iter().filter(|&(_, count)| count > 0) {
        match merged.last_mut() {
            Some((last, total)) if *last == mark => *total += count,
            _ => merged.push((mark, count)),
        }
    }
    merged
}

// ANCHOR: align
/// The shortest edit from `old`'s lines to `new`'s, as runs, or `None` past the bounds.
fn align(old: &str, new: &str) -> Option<Vec<(Mark, usize)>> {
    let (old_count, new_count) = (count_lines(old), count_lines(new));
    if old_count > ALIGN_MAX_LINES || new_count > ALIGN_MAX_LINES {
        return None;
    }
    // Each distinct line becomes a number, so comparing two lines is comparing two numbers.
    let mut numbers: HashMap<&str, u32> = HashMap::new();
    let mut number = |line| {
        let next = numbers.len() as u32;
        *numbers.entry(line).or_insert(next)
    };
    let a: Vec<u32> = old.split_inclusive('\n').map(&mut number).collect();
    let b: Vec<u32> = new.split_inclusive('\n').map(&mut number).collect();
    myers(&a, &b)
}
// ANCHOR_END: align

// ANCHOR: myers
/// Myers' greedy search for the shortest edit script. `frontier[k]` is how far along `a`
/// the furthest path on diagonal `k = x - y` has come after `d` edits; the frontiers of
/// every step are kept to walk the path back. Gives up past [`ALIGN_MAX_EDITS`] edits or
/// [`ALIGN_MAX_STEPS`] steps.
fn myers(a: &[u32], b: &[u32]) -> Option<Vec<(Mark, usize)>> {
    let (n, m) = (a.len() as i32, b.len() as i32);
    let max_edits = (a.len() + b.len()).min(ALIGN_MAX_EDITS) as i32;
    let offset = max_edits + 1;
    let mut frontier = vec![0i32; 2 * offset as usize + 1];
    let mut history: Vec<Vec<i32>> = Vec::new();
    let mut steps = 0usize;
    for d in 0..=max_edits {
        // The frontier before this step, for diagonals -d-1 ..= d+1 (all the step reads).
        history.push(frontier[(offset - d - 1) as usize..=(offset + d + 1) as usize].to_vec());
        for k in (-d..=d).step_by(2) {
            let at = |k: i32| (offset + k) as usize;
            let down = k == -d || (k != d && frontier[at(k - 1)] < frontier[at(k + 1)]);
            let mut x = if down { frontier[at(k + 1)] } else { frontier[at(k - 1)] + 1 };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
                steps += 1;
            }
            steps += 1;
            frontier[at(k)] = x;
            if x >= n && y >= m {
                return Some(walk_back(&history, n, m));
            }
            if steps > ALIGN_MAX_STEPS {
                return None;
            }
        }
    }
    None
}
// ANCHOR_END: myers

/// From the end back to the start through the kept frontiers: each step is one edit (down:
/// a line added, right: a line removed) preceded by a diagonal of unchanged lines.
fn walk_back(history: &[Vec<i32>], n: i32, m: i32) -> Vec<(Mark, usize)> {
    let (mut x, mut y) = (n, m);
    let mut reversed: Vec<(Mark, usize)> = Vec::new();
    let mut push = |mark, count| match reversed.last_mut() {
        Some((last, total)) if *last == mark => *total += count,
        _ => reversed.push((mark, count)),
    };
    for (d, frontier) in history.iter().enumerate().rev() {
        let d = d as i32;
        let at = |k: i32| (k + d + 1) as usize;
        let k = x - y;
        let down = k == -d || (k != d && frontier[at(k - 1)] < frontier[at(k + 1)]);
        let previous_k = if down { k + 1 } else { k - 1 };
        let previous_x = frontier[at(previous_k)];
        let previous_y = previous_x - previous_k;
        // The diagonal: unchanged lines, back to where this step's edit ended.
        let start_x = if d == 0 {
            0
        } else if down {
            previous_x
        } else {
            previous_x + 1
        };
        push(Mark::Same, (x - start_x) as usize);
        if d > 0 {
            push(if down { Mark::Added } else { Mark::Removed }, 1);
        }
        (x, y) = (previous_x, previous_y);
    }
    reversed.reverse();
    merge(reversed)
}

/// The lines of one text, read forward only: rows ask for ever later lines.
struct Lines<'a> {
    text: &'a str,
    /// Byte where line `index` (0-based) starts.
    at: usize,
    index: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Lines<'a> {
        Lines { text, at: 0, index: 0 }
    }

    /// Line `wanted` (never before the last one asked for), without its `\n`, and whether
    /// it is a last line with no `\n`.
    fn line(&mut self, wanted: usize) -> (&'a str, bool) {
        while self.index < wanted {
            self.at = self.text[self.at..].find('\n').map_or(self.text.len(), |end| self.at + end + 1);
            self.index += 1;
        }
        let rest = &self.text[self.at..];
        match rest.find('\n') {
            Some(end) => (&rest[..end], false),
            None => (rest, true),
        }
    }
}

/// A row that still borrows its text.
enum RowRef<'a> {
    Hunk { old_start: usize, old_lines: usize, new_start: usize, new_lines: usize },
    Line { mark: Mark, number: usize, text: &'a str, no_newline: bool },
}

/// Keeps the first and the last rows, counts those between, and the lines added and removed.
#[derive(Default)]
struct Keeper<'a> {
    head: Vec<RowRef<'a>>,
    tail: VecDeque<RowRef<'a>>,
    hidden: usize,
    added: usize,
    removed: usize,
}

impl<'a> Keeper<'a> {
    fn push(&mut self, row: RowRef<'a>) {
        if let RowRef::Line { mark: Mark::Added, .. } = row {
            self.added += 1;
        } else if let RowRef::Line { mark: Mark::Removed, .. } = row {
            self.removed += 1;
        }
        if self.head.len() < KEEP_HEAD {
            self.head.push(row);
            return;
        }
        self.tail.push_back(row);
        if self.tail.len() > KEEP_TAIL {
            self.tail.pop_front();
            self.hidden += 1;
        }
    }

    fn finish(self, aligned: bool) -> Diff {
        let own = |row: RowRef| match row {
            RowRef::Hunk { old_start, old_lines, new_start, new_lines } => {
                Row::Hunk { old_start, old_lines, new_start, new_lines }
            }
            RowRef::Line { mark, number, text, no_newline } => {
                let kept = crate::text::take_chars(text, ROW_MAX_CHARS);
                let cut = kept.len() < text.len();
                // A key in the file or the new content is never shown (chapter 3's redactor).
                let text = redactor().redact(kept).into_owned();
                Row::Line { mark, number, text, cut, no_newline }
            }
        };
        Diff {
            added: self.added,
            removed: self.removed,
            head: self.head.into_iter().map(own).collect(),
            hidden: self.hidden,
            tail: self.tail.into_iter().map(own).collect(),
            aligned,
        }
    }
}

// ANCHOR: hunks
/// The rows of the whole diff, given the runs of the edit: each change with up to
/// [`CONTEXT`] unchanged lines around it, changes closer than twice that in one hunk.
fn emit_rows<'a>(old: &'a str, new: &'a str, runs: &[(Mark, usize)], keeper: &mut Keeper<'a>) {
    let (mut old_lines, mut new_lines) = (Lines::new(old), Lines::new(new));
    // Each run with where it starts in the old and the new file (0-based lines).
    let mut placed = Vec::with_capacity(runs.len());
    let (mut old_at, mut new_at) = (0, 0);
    for &(mark, count) in runs {
        placed.push((mark, count, old_at, new_at));
        if mark != Mark::Added {
            old_at += count;
        }
        if mark != Mark::Removed {
            new_at += count;
        }
    }
    let mut index = 0;
    while index < placed.len() {
        if placed[index].0 == Mark::Same {
            index += 1;
            continue;
        }
        // A hunk: from CONTEXT lines before this change to CONTEXT lines after the last
        // change that follows within 2 × CONTEXT unchanged lines.
        let first = index;
        let mut last = index;
        while last + 2 < placed.len() && placed[last + 1].0 == Mark::Same && placed[last + 1].1 <= 2 * CONTEXT
            || last + 1 < placed.len() && placed[last + 1].0 != Mark::Same
        {
            last += 1;
        }
        let before = if first > 0 { placed[first - 1].1.min(CONTEXT) } else { 0 };
        let after = placed.get(last + 1).map_or(0, |run| run.1.min(CONTEXT));
        let (_, _, old_start, new_start) = placed[first];
        let (old_start, new_start) = (old_start - before, new_start - before);
        let (end_mark, end_count, end_old, end_new) = placed[last];
        let old_end = end_old + if end_mark == Mark::Added { 0 } else { end_count } + after;
        let new_end = end_new + if end_mark == Mark::Removed { 0 } else { end_count } + after;
        keeper.push(RowRef::Hunk {
            old_start: hunk_start(old_start, old_end),
            old_lines: old_end - old_start,
            new_start: hunk_start(new_start, new_end),
            new_lines: new_end - new_start,
        });
        // ANCHOR_END: hunks
        for line in 0..before {
            same_row(&mut new_lines, new_start + line, keeper);
        }
        for &(mark, count, old_at, new_at) in &placed[first..=last] {
            for line in 0..count {
                match mark {
                    Mark::Same => same_row(&mut new_lines, new_at + line, keeper),
                    Mark::Removed => {
                        let (text, no_newline) = old_lines.line(old_at + line);
                        keeper.push(RowRef::Line { mark, number: old_at + line + 1, text, no_newline });
                    }
                    Mark::Added => {
                        let (text, no_newline) = new_lines.line(new_at + line);
                        keeper.push(RowRef::Line { mark, number: new_at + line + 1, text, no_newline });
                    }
                }
            }
        }
        let after_start = new_end - after;
        for line in 0..after {
            same_row(&mut new_lines, after_start + line, keeper);
        }
        index = last + 1;
    }
}

/// `diff -u` numbers an empty range by the line before it.
fn hunk_start(start: usize, end: usize) -> usize {
    if end > start { start + 1 } else { start }
}

fn same_row<'a>(new_lines: &mut Lines<'a>, line: usize, keeper: &mut Keeper<'a>) {
    let (text, no_newline) = new_lines.line(line);
    keeper.push(RowRef::Line { mark: Mark::Same, number: line + 1, text, no_newline });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::XorShift;

    fn unified(old: &str, new: &str) -> String {
        diff_lines(old, new).unified("f", false)
    }

    #[test]
    fn an_edit_is_a_hunk_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        assert_eq!(unified(old, new), "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n");
        let diff = diff_lines(old, new);
        assert_eq!((diff.added, diff.removed, diff.stat()), (1, 1, "+1 −1".to_string()));
        assert!(diff.aligned);
        // The removed line carries its old number, the others their new one.
        let numbers: Vec<(Mark, usize)> = diff
            .head
            .iter()
            .filter_map(|row| match row {
                Row::Line { mark, number, .. } => Some((*mark, *number)),
                Row::Hunk { .. } => None,
            })
            .collect();
        let expected =
            [(2, Mark::Same), (3, Mark::Same), (4, Mark::Same), (5, Mark::Removed), (5, Mark::Added)];
        assert_eq!(numbers[..5], expected.map(|(number, mark)| (mark, number)));
        assert_eq!(unified(old, old), "--- a/f\n+++ b/f\n");
    }

    #[test]
    fn changes_far_apart_are_two_hunks_and_near_ones_one() {
        let lines: Vec<String> = (1..=30).map(|n| format!("{n}\n")).collect();
        let old = lines.concat();
        let mut far = lines.clone();
        far[1] = "two\n".into();
        far[20] = "twenty-one\n".into();
        let far = unified(&old, &far.concat());
        assert_eq!(far.matches("@@ -").count(), 2, "{far}");
        assert!(far.contains("@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"), "{far}");
        assert!(far.contains("@@ -18,7 +18,7 @@\n"), "{far}");
        let mut near = lines;
        near[1] = "two\n".into();
        near[8] = "nine\n".into();
        let near = unified(&old, &near.concat());
        assert_eq!(near.matches("@@ -").count(), 1, "{near}");
        assert!(near.contains("@@ -1,12 +1,12 @@\n"), "{near}");
    }

    #[test]
    fn a_new_file_an_emptied_file_and_a_last_line_without_newline() {
        assert_eq!(
            diff_lines("", "x\ny").unified("n", true),
            "--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n"
        );
        assert_eq!(unified("x\n", ""), "--- a/f\n+++ b/f\n@@ -1,1 +0,0 @@\n-x\n");
        assert_eq!(
            unified("a\nb", "a\nb\n"),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
        );
        assert_eq!(diff_lines("same", "same").rows(), 0);
    }

    /// Applies the kept rows of a whole diff to `old`: it must give `new`.
    fn apply(old: &str, diff: &Diff) -> String {
        assert_eq!(diff.hidden, 0);
        let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
        let (mut out, mut next_old) = (String::new(), 0usize);
        for row in diff.head.iter().chain(&diff.tail) {
            match row {
                Row::Hunk { old_start, old_lines: count, .. } => {
                    let start = if *count == 0 { *old_start } else { old_start - 1 };
                    out.extend(old_lines[next_old..start].iter().copied());
                    next_old = start;
                }
                Row::Line { mark: Mark::Removed, .. } => next_old += 1,
                Row::Line { mark, text, no_newline, .. } => {
                    out.push_str(text);
                    if !no_newline {
                        out.push('\n');
                    }
                    if *mark == Mark::Same {
                        next_old += 1;
                    }
                }
            }
        }
        out.extend(old_lines[next_old..].iter().copied());
        out
    }

    /// The length of a longest common subsequence of lines, the slow and sure way.
    fn lcs(a: &[&str], b: &[&str]) -> usize {
        let mut table = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                table[i][j] =
                    if a[i] == b[j] { table[i + 1][j + 1] + 1 } else { table[i + 1][j].max(table[i][j + 1]) };
            }
        }
        table[0][0]
    }

    #[test]
    fn random_texts_give_a_diff_that_applies_and_is_shortest() {
        let mut random = XorShift::seeded(22);
        let words = ["a\n", "b\n", "c\n", "\n", "d", "a"];
        for _ in 0..crate::random::cases(2_000) {
            let text = |random: &mut XorShift| -> String {
                (0..random.below(12)).map(|_| *random.pick(&words)).collect()
            };
            let (old, new) = (text(&mut random), text(&mut random));
            let diff = diff_lines(&old, &new);
            assert_eq!(apply(&old, &diff), new, "{old:?} → {new:?}: {diff:?}");
            let (a, b): (Vec<&str>, Vec<&str>) =
                (old.split_inclusive('\n').collect(), new.split_inclusive('\n').collect());
            let common = lcs(&a, &b);
            assert_eq!((diff.removed, diff.added), (a.len() - common, b.len() - common), "{old:?} → {new:?}");
        }
    }

    #[test]
    fn past_its_bounds_the_diff_is_one_block_and_keeps_head_and_tail() {
        // Every other line differs, more often than ALIGN_MAX_EDITS allows.
        let old: String = (0..4_000).map(|n| format!("line {n}\n")).collect();
        let new: String = (0..4_000)
            .map(|n| if n % 2 == 0 { format!("line {n}\n") } else { format!("LINE {n}\n") })
            .collect();
        let diff = diff_lines(&old, &new);
        assert!(!diff.aligned);
        assert_eq!((diff.removed, diff.added), (3_999, 3_999), "one block from the first change to the last");
        assert_eq!((diff.head.len(), diff.tail.len()), (KEEP_HEAD, KEEP_TAIL));
        assert_eq!(diff.rows(), 1 + 1 + 3_999 * 2, "a hunk header, a line of context, the block");
        let last = Row::Line {
            mark: Mark::Added,
            number: 4_000,
            text: "LINE 3999".into(),
            cut: false,
            no_newline: false,
        };
        assert_eq!(diff.tail.last(), Some(&last));
        // A million empty lines against nothing: counted, not kept (the bench runs ten million).
        let empty_lines = "\n".repeat(1_000_000);
        let diff = diff_lines("", &empty_lines);
        assert_eq!(
            (diff.added, diff.removed, diff.hidden),
            (1_000_000, 0, 1_000_001 - KEEP_HEAD - KEEP_TAIL)
        );
        // One 1 MB line: one row, cut.
        let long = "x".repeat(1_000_000);
        let diff = diff_lines("x\n", &long);
        assert!(
            matches!(&diff.head[2], Row::Line { mark: Mark::Added, cut: true, text, .. } if text.len() == ROW_MAX_CHARS)
        );
    }

    #[test]
    fn a_few_changes_in_a_long_file_are_aligned() {
        let old: String = (0..15_000).map(|n| format!("{n}\n")).collect();
        let new = old.replace("\n100\n", "\n100\nadded\n").replace("\n9000\n", "\n");
        let diff = diff_lines(&old, &new);
        assert!(diff.aligned);
        assert_eq!((diff.added, diff.removed), (1, 1));
        assert_eq!(diff.head.iter().filter(|row| matches!(row, Row::Hunk { .. })).count(), 2);
    }
}
