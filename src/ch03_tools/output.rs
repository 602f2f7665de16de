//! Output bounds: a long answer keeps its head and tail, says how much was cut, and saves
//! the whole to a spill file the model can read back. The capture holds only a head and a
//! tail in memory, however much a command prints; the spill file has its own size limit.

use super::*;
use crate::text::cut_bytes;

use crate::ch03_tools::bounds::{FILE_MAX_BYTES, prune_outputs};
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// `.mini-agent-tmp.<name>.`: the temporary files of a write to `name` start with this
/// (a long name is cut, so the whole stays within the 255-byte limit of a file name).
pub(crate) fn temp_prefix(name: &OsStr) -> String {
    format!("{TEMP_PREFIX}{}.", cut_bytes(&name.to_string_lossy(), 120))
}

pub(super) fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let millis = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    format!("{millis}-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Where full outputs go: `<root>/.mini_agent/outputs/`, 0700 directories, 0600 files.
#[derive(Clone)]
pub(super) struct OutputStore {
    pub(super) root: PathBuf,
}

impl OutputStore {
    /// A new file for one tool's full output, and its path relative to the root.
    fn create(&self, tool: &str) -> io::Result<(File, String)> {
        let mut directory = self.root.clone();
        for part in [".mini_agent", "outputs"] {
            directory.push(part);
            match fs::DirBuilder::new().mode(0o700).create(&directory) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
            if fs::symlink_metadata(&directory)?.file_type().is_symlink() {
                return Err(io::Error::other(format!(
                    "{} is a symlink; refusing to write there",
                    directory.display()
                )));
            }
            if part == ".mini_agent" {
                super::agent_dir::write_gitignore(&directory);
            }
        }
        prune_outputs(&directory, 0);
        let name = format!("{tool}-{}.txt", unique_suffix());
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(O_NOFOLLOW)
            .open(directory.join(&name))?;
        Ok((file, format!(".mini_agent/outputs/{name}")))
    }
}

// ANCHOR: bounded
impl Workspace {
    /// Keeps the head and the tail of a long answer; the whole goes to a file the model can read.
    pub(crate) fn bounded(&self, tool: &str, text: String) -> String {
        if text.len() <= OUTPUT_LIMIT {
            return text;
        }
        let saved = OutputStore { root: self.root.clone() }
            .create(tool)
            .and_then(|(mut file, name)| file.write_all(text.as_bytes()).map(|()| name));
        let head_end = cut_bytes(&text, HEAD_BYTES).len();
        let mut tail_start = text.len() - TAIL_BYTES;
        while !text.is_char_boundary(tail_start) {
            tail_start += 1;
        }
        let omitted = tail_start - head_end;
        format!("{}\n{}\n{}", &text[..head_end], omission_note(omitted as u64, saved), &text[tail_start..])
    }
}

fn omission_note(omitted: u64, saved: io::Result<String>) -> String {
    match saved {
        Ok(name) if name.starts_with('(') => format!("[… {omitted} bytes omitted; full output {name}]"),
        Ok(name) => format!("[… {omitted} bytes omitted; full output: {name}]"),
        Err(error) => format!("[… {omitted} bytes omitted; the full output could not be saved: {error}]"),
    }
}
// ANCHOR_END: bounded

/// Collects a command's output with bounded memory: everything until the limit, then the
/// head, a rolling tail and a count, while the full stream goes to a spill file.
pub(super) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    spill: Option<io::Result<(File, String)>>,
    store: OutputStore,
    /// Set once the answer was taken: a process that escaped the kill must not fill the disk.
    pub(super) abandoned: bool,
    /// Bytes written to the spill file; it stops at FILE_MAX_BYTES and says it was cut.
    saved: u64,
}

/// The last line of a spill file that reached FILE_MAX_BYTES.
const SPILL_CUT_NOTE: &str = "\n[… the output went on; this file was cut at its size limit]\n";

impl Capture {
    pub(super) fn new(store: OutputStore) -> Capture {
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            spill: None,
            store,
            abandoned: false,
            saved: 0,
        }
    }

    /// Appends to the spill file, up to FILE_MAX_BYTES in all (the cut note included).
    fn save(&mut self, bytes: &[u8]) {
        let room = (FILE_MAX_BYTES - SPILL_CUT_NOTE.len() as u64).saturating_sub(self.saved);
        let Some(Ok((file, _))) = &mut self.spill else { return };
        if room == 0 {
            return; // already cut
        }
        let take = bytes.len().min(room as usize);
        let _ = file.write_all(&bytes[..take]);
        self.saved += take as u64;
        if take < bytes.len() {
            let _ = file.write_all(SPILL_CUT_NOTE.as_bytes());
            self.saved = FILE_MAX_BYTES;
        }
    }

    /// Takes one chunk; false once nobody is listening any more.
    pub(super) fn push(&mut self, chunk: &[u8]) -> bool {
        if self.abandoned {
            return false;
        }
        self.total += chunk.len() as u64;
        if self.spill.is_none() {
            if self.head.len() + chunk.len() <= OUTPUT_LIMIT {
                self.head.extend_from_slice(chunk);
                return true;
            }
            // Crossing the limit: everything so far is still in `head`; spill it, then split.
            self.spill = Some(self.store.create("bash"));
            self.save(&self.head.clone());
            // The head is the first HEAD_BYTES of the stream, even when this first chunk is
            // larger than the whole limit; what follows it starts the tail.
            self.tail.extend(self.head.drain(HEAD_BYTES.min(self.head.len())..));
            let fill = (HEAD_BYTES - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..fill]);
            self.save(chunk);
            self.tail.extend(&chunk[fill..]);
        } else {
            self.save(chunk);
            self.tail.extend(chunk);
        }
        let excess = self.tail.len().saturating_sub(TAIL_BYTES);
        self.tail.drain(..excess);
        true
    }

    pub(super) fn render(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        match &self.spill {
            None => head.into_owned(),
            Some(spill) => {
                let omitted = self.total - self.head.len() as u64 - self.tail.len() as u64;
                let saved = match spill {
                    Ok((_, name)) if self.saved >= FILE_MAX_BYTES => {
                        Ok(format!("(its first {} MiB): {name}", FILE_MAX_BYTES >> 20))
                    }
                    Ok((_, name)) => Ok(name.clone()),
                    Err(error) => Err(io::Error::new(error.kind(), error.to_string())),
                };
                let tail: Vec<u8> = self.tail.iter().copied().collect();
                format!("{head}\n{}\n{}", omission_note(omitted, saved), String::from_utf8_lossy(&tail))
            }
        }
    }
}
