//! Chapter 10 — reading a journal as a stream, for `--status` and `mini-agent sessions`.
//!
//! Resuming needs every record (the history is rebuilt from them), but a status needs only a
//! few facts, so it should cost what those facts cost: one line at a time, each line held up
//! to a cap, nothing kept once its facts are taken. A journal can be planted (chapter 9) or
//! simply grow large: a 200 MB one read whole for its one-word state took 413 MB of memory.
//! The verdicts are chapter 9's (`read_journal`): a line that is not a record is an error
//! unless it is the last, which a crash tore; one longer than the cap is counted by its
//! `type` alone and named in the warning.

use crate::ch02_loop::Error;
use crate::ch05_sessions::Record;
use crate::ch09_journal::{TORN_IGNORED, check_record, corrupt_line, torn_line};
use crate::ch09_trust::{JOURNAL_MAX_BYTES, open_journal};
use crate::ch10_recovery::StatusReader;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The longest line a status parses: above a whole model reply (10 MiB, chapter 2) with room
/// for its escapes. Longer lines are counted, not read.
pub(crate) const STATUS_LINE_BYTES: usize = 12 << 20;

// ANCHOR: read_records
/// Feeds the records of the journal at `path` to `reader`, one line in memory at a time.
/// Returns the warnings (a torn last line, lines too long to read).
pub(crate) fn read_records(path: &Path, reader: &mut StatusReader) -> Result<Option<String>, Error> {
    let error = |e| Error::io(format!("cannot read session {}", path.display()), e);
    let mut input = BufReader::new(open_journal(path, false)?.take(JOURNAL_MAX_BYTES));
    let (mut line, mut number, mut warnings) = (Vec::new(), 0, Vec::new());
    while let Some((bytes, ended)) = read_line(&mut input, STATUS_LINE_BYTES, &mut line).map_err(error)? {
        number += 1;
        let last = input.fill_buf().map_err(error)?.is_empty();
        if !ended {
            warnings.push(torn_line(path, number, bytes, TORN_IGNORED));
        } else if bytes > STATUS_LINE_BYTES as u64 + 1 {
            reader.see_unread(line.windows(15).any(|w| w == br#","type":"user","#), bytes);
            let cap = STATUS_LINE_BYTES >> 20;
            warnings.push(format!("{}:{number}: a record of {bytes} bytes, over the {cap} MiB a status reads: counted, not read", path.display()));
        } else {
            match serde_json::from_slice::<Record>(&line) {
                Ok(record) => {
                    check_record(path, number, &record)?;
                    reader.see(record);
                }
                Err(e) if !last => return Err(corrupt_line(path, number, &e)),
                Err(_) => warnings.push(torn_line(path, number, bytes, TORN_IGNORED)),
            }
        }
    }
    Ok((!warnings.is_empty()).then(|| warnings.join("; ")))
}
// ANCHOR_END: read_records

/// Reads one line from `input`, keeping at most `keep` bytes of it (without its `\n`) in
/// `line`. Returns its whole length (with the `\n`) and whether it ended with one, or
/// `None` at the end of the input.
fn read_line(
    input: &mut impl BufRead,
    keep: usize,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<(u64, bool)>> {
    line.clear();
    let mut total = 0u64;
    loop {
        let buffer = match input.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            return Ok((total > 0).then_some((total, false)));
        }
        let (content, used) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (at, at + 1),
            None => (buffer.len(), buffer.len()),
        };
        let room = keep.saturating_sub(line.len()).min(content);
        line.extend_from_slice(&buffer[..room]);
        input.consume(used);
        total += used as u64;
        if used > content {
            return Ok(Some((total, true)));
        }
    }
}
