//! The submodule entries of git's index, read without git.
//!
//! An index entry whose mode is `160000` (a *gitlink*) makes git treat that path as a
//! submodule: `git status` runs git again inside it, with the configuration it finds there.
//! A sandboxed command can add one (`git add` of a nested repository writes it), so the check
//! after each command reads the index for them. Not with `git ls-files`: git itself would
//! obey whatever else the command planted. The format is git's `gitformat-index`: a header
//! (`DIRC`, version 2, 3 or 4, entry count), then the entries, then extensions, then a hash.
//! Only each entry's mode and path are kept, and only the gitlinks among them; the file is
//! read as a stream through a small buffer, so a huge index costs time, never memory.
//!
//! Three details of the format matter here. The object names are 20 bytes (SHA-1) or 32
//! (SHA-256), and nothing in the file says which, so the first entry is read both ways and the
//! one whose name length agrees with its terminating NUL wins. Version 4 stores each path as
//! "drop N bytes of the previous path, then append this". And a *split* index (`git
//! update-index --split-index`) keeps most entries in `sharedindex.<hash>` beside it, named by
//! its `link` extension: its gitlinks count too.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

/// The mode of a gitlink entry (the object type bits).
const GITLINK: u32 = 0o160000;
const TYPE_BITS: u32 = 0o170000;
/// The bytes of an entry before its object name: ten 32-bit stat fields.
const STAT_BYTES: usize = 40;
/// More gitlink path bytes than this are not kept: the rest is said to be unread.
const MAX_PATH_BYTES: usize = 1 << 20;
/// A path longer than this is not a path git wrote.
const MAX_NAME: usize = 64 * 1024;

/// What an index says of submodules.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Gitlinks {
    pub paths: BTreeSet<Vec<u8>>,
    /// The shared index this one names (`sharedindex.<hex>`), for a split index.
    pub shared: Option<String>,
    /// False when more gitlink paths were found than are kept.
    pub complete: bool,
}

fn corrupt(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("not an index git can read: {what}"))
}

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

// ANCHOR: gitlinks
/// The gitlinks of the index `file`, with the shared index it names, if any.
pub fn gitlinks(file: File) -> io::Result<Gitlinks> {
    let size = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut header = [0u8; 12];
    reader.read_exact(&mut header)?;
    let (version, count) = (be32(&header[4..]), be32(&header[8..]) as u64);
    if &header[..4] != b"DIRC" || !(2..=4).contains(&version) {
        return Err(corrupt("no DIRC header of version 2, 3 or 4"));
    }
    if count.saturating_mul(STAT_BYTES as u64) > size {
        return Err(corrupt("more entries than the file can hold"));
    }
    let hash = match count {
        0 => 20,
        _ => hash_size(reader.fill_buf()?, version)?,
    };
    let mut found = Gitlinks { complete: true, ..Gitlinks::default() };
    let (mut kept, mut read) = (0usize, 12u64);
    let mut path = Vec::new();
    let mut fixed = vec![0u8; STAT_BYTES + hash + 2];
    for _ in 0..count {
        reader.read_exact(&mut fixed)?;
        let mode = be32(&fixed[24..]);
        let flags = u16::from_be_bytes([fixed[STAT_BYTES + hash], fixed[STAT_BYTES + hash + 1]]);
        let mut entry_bytes = fixed.len();
        if version >= 3 && flags & 0x4000 != 0 {
            reader.read_exact(&mut [0u8; 2])?; // the extended flags
            entry_bytes += 2;
        }
        if version == 4 {
            let (strip, width) = varint(&mut reader)?;
            let keep = path.len().checked_sub(strip).ok_or_else(|| corrupt("a path prefix too long"))?;
            path.truncate(keep);
            entry_bytes += width + read_name(&mut reader, &mut path)?;
            // Each entry may keep all of the path before it: without a bound, a crafted index
            // of short entries would grow one path without end.
            if path.len() > MAX_NAME {
                return Err(corrupt("a path longer than git writes"));
            }
        } else {
            path.clear();
            let with_nul = read_name(&mut reader, &mut path)?;
            // Padded with NULs to a multiple of eight bytes, at least one NUL.
            let padded = (entry_bytes + path.len() + 8) & !7;
            let padding = padded - entry_bytes - with_nul;
            io::copy(&mut (&mut reader).take(padding as u64), &mut io::sink())?;
            entry_bytes = padded;
        }
        read += entry_bytes as u64;
        if mode & TYPE_BITS == GITLINK {
            kept += path.len();
            match kept <= MAX_PATH_BYTES {
                true => drop(found.paths.insert(path.clone())),
                false => found.complete = false,
            }
        }
    }
    found.shared = shared_index(&mut reader, read, size, hash)?;
    Ok(found)
}
// ANCHOR_END: gitlinks

/// 20 or 32: the object name size under which the first entry (at the start of `buffer`)
/// reads as an entry git wrote: its name as long as its flags say, then a NUL.
fn hash_size(buffer: &[u8], version: u32) -> io::Result<usize> {
    let fits = |hash: usize| -> bool {
        let flags_at = STAT_BYTES + hash;
        let Some(flags) = buffer.get(flags_at..flags_at + 2) else { return false };
        let flags = u16::from_be_bytes([flags[0], flags[1]]);
        let length = usize::from(flags & 0xfff);
        let mut name_at = flags_at + 2 + if version >= 3 && flags & 0x4000 != 0 { 2 } else { 0 };
        if version == 4 {
            // The first path drops nothing from the (empty) one before: one byte, 0.
            if buffer.get(name_at) != Some(&0) {
                return false;
            }
            name_at += 1;
        }
        let Some(name) = buffer.get(name_at..) else { return false };
        match name.iter().position(|&byte| byte == 0) {
            // Empty in a split index's entries that replace shared ones.
            Some(end) => length == 0xfff && end >= 0xfff || end == length,
            None => false,
        }
    };
    [20, 32].into_iter().find(|&hash| fits(hash)).ok_or_else(|| corrupt("its first entry"))
}

/// Appends the NUL-terminated name to `path`; returns the bytes read, NUL included.
fn read_name(reader: &mut impl BufRead, path: &mut Vec<u8>) -> io::Result<usize> {
    let before = path.len();
    let n = reader.take(MAX_NAME as u64).read_until(0, path)?;
    if path.pop() != Some(0) {
        return Err(corrupt("a path without its NUL"));
    }
    debug_assert_eq!(path.len() - before + 1, n);
    Ok(n)
}

/// Git's variable-width integer (version 4's prefix length): seven bits a byte, high bit
/// "more follows", each continuation adding one. Returns it and its width in bytes.
fn varint(reader: &mut impl Read) -> io::Result<(usize, usize)> {
    let mut byte = [0u8; 1];
    reader.read_exact(&mut byte)?;
    let (mut value, mut width) = (usize::from(byte[0] & 0x7f), 1);
    while byte[0] & 0x80 != 0 {
        reader.read_exact(&mut byte)?;
        width += 1;
        value = value
            .checked_add(1)
            .and_then(|value| value.checked_mul(128))
            .map(|value| value | usize::from(byte[0] & 0x7f))
            .filter(|_| width <= 8)
            .ok_or_else(|| corrupt("a prefix length out of range"))?;
    }
    Ok((value, width))
}

/// The extensions after the entries: the name of the shared index, if a `link` one names it.
fn shared_index(reader: &mut impl Read, mut read: u64, size: u64, hash: usize) -> io::Result<Option<String>> {
    let end = size.saturating_sub(hash as u64);
    while read + 8 <= end {
        let mut header = [0u8; 8];
        reader.read_exact(&mut header)?;
        let length = u64::from(be32(&header[4..]));
        read += 8 + length;
        if &header[..4] == b"link" && length >= hash as u64 {
            let mut name = vec![0u8; hash];
            reader.read_exact(&mut name)?;
            if name.iter().all(|&byte| byte == 0) {
                return Ok(None);
            }
            let hex: String = name.iter().map(|byte| format!("{byte:02x}")).collect();
            return Ok(Some(format!("sharedindex.{hex}")));
        }
        io::copy(&mut reader.take(length), &mut io::sink())?;
    }
    Ok(None)
}
