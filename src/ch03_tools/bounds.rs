//! Chapter 3 — bounds on disk and memory, whatever the model asks.
//!
//! The tools already keep what the *model* sees small. This module keeps what the *machine*
//! pays small too: a model can ask for `cat /dev/zero`, a one-gigabyte line, or an edit that
//! doubles a file a thousand times. Three rules, each one a number and a place to check it:
//!
//! * **No file the agent writes is larger than [`FILE_MAX_BYTES`]** (64 MiB): a spill file
//!   stops there and says so; `write_file` and `edit_file` refuse a result above it *before*
//!   writing (the size of an edit is known from the match count, without building it).
//! * **Saved outputs are pruned** to [`SPILL_BUDGET_BYTES`] and [`SPILL_MAX_FILES`], oldest
//!   first, each time a new one is made: a long session cannot fill the disk one spill at a time.
//! * **A line is never held whole.** [`read_line_capped`] reads a line through the reader's
//!   buffer and keeps only its first bytes, so a file that is one 1 GB line costs the buffer,
//!   not a gigabyte.

use std::fs;
use std::io::{self, BufRead};
use std::path::Path;

/// The largest file any tool writes: a spill file, a `write_file`, the result of an `edit_file`.
pub(crate) const FILE_MAX_BYTES: u64 = 64 << 20;
/// Saved outputs kept in `.mini_agent/outputs/`, in bytes and in files (the newest are kept).
pub(crate) const SPILL_BUDGET_BYTES: u64 = 256 << 20;
pub(crate) const SPILL_MAX_FILES: usize = 100;

/// Reads one line (through `\n`) from `reader`, keeping at most `keep` bytes of it in `line`.
/// Returns the line's whole length in bytes, or `None` at the end of the input. Memory stays
/// at `keep` plus the reader's buffer however long the line is.
pub fn read_line_capped(
    reader: &mut impl BufRead,
    keep: usize,
    line: &mut Vec<u8>,
) -> io::Result<Option<u64>> {
    line.clear();
    let mut total = 0u64;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            return Ok((total > 0).then_some(total));
        }
        let (used, ended) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffer.len(), false),
        };
        let room = keep.saturating_sub(line.len()).min(used);
        line.extend_from_slice(&buffer[..room]);
        reader.consume(used);
        total += used as u64;
        if ended {
            return Ok(Some(total));
        }
    }
}

/// Deletes the oldest saved outputs in `directory` until the rest (plus `incoming` bytes
/// about to be written) fit the budget. Best effort: a file that cannot be removed stays.
pub(crate) fn prune_outputs(directory: &Path, incoming: u64) {
    let Ok(entries) = fs::read_dir(directory) else { return };
    let mut files: Vec<(std::time::SystemTime, u64, std::path::PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let meta = entry.metadata().ok().filter(fs::Metadata::is_file)?;
            Some((meta.modified().ok()?, meta.len(), entry.path()))
        })
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.2.cmp(&a.2))); // newest first
    let mut used = incoming;
    for (index, (_, size, path)) in files.iter().enumerate() {
        used = used.saturating_add(*size);
        // One place is kept for the file about to be made.
        if used > SPILL_BUDGET_BYTES || index + 1 >= SPILL_MAX_FILES {
            let _ = fs::remove_file(path);
        }
    }
}

/// The refusal for a file that would pass [`FILE_MAX_BYTES`].
pub(crate) fn too_big(shown_path: &str, size: u64) -> String {
    format!(
        "refused: `{shown_path}` would be {size} bytes; the file tools write at most {} MiB \
         (use bash for larger files)",
        FILE_MAX_BYTES >> 20
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    #[test]
    fn a_long_line_is_counted_whole_and_kept_short() {
        let text = format!("{}\nshort\nlast", "x".repeat(100_000));
        let mut reader = BufReader::with_capacity(4096, text.as_bytes());
        let mut line = Vec::new();
        assert_eq!(read_line_capped(&mut reader, 10, &mut line).unwrap(), Some(100_001));
        assert_eq!(line, b"xxxxxxxxxx");
        assert_eq!(read_line_capped(&mut reader, 10, &mut line).unwrap(), Some(6));
        assert_eq!(line, b"short\n");
        assert_eq!(read_line_capped(&mut reader, 10, &mut line).unwrap(), Some(4));
        assert_eq!(line, b"last");
        assert_eq!(read_line_capped(&mut reader, 10, &mut line).unwrap(), None);
    }

    #[test]
    fn pruning_keeps_the_newest_within_the_file_count() {
        let temp = crate::temp_dir::TempDir::new("prune");
        let dir = temp.path();
        for n in 0..SPILL_MAX_FILES + 5 {
            fs::write(dir.join(format!("bash-{n:04}.txt")), "x").unwrap();
        }
        prune_outputs(dir, 0);
        let left = fs::read_dir(dir).unwrap().count();
        assert_eq!(left, SPILL_MAX_FILES - 1);
    }
}
