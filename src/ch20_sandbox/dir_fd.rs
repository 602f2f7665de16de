//! Directories held by descriptor, for looking at what a command left in the workspace.
//!
//! The check after each command ([`super::git_watch`]) reads and repairs paths a command
//! wrote, so every path it takes may have been made to mislead it: a symlink out of the root,
//! a FIFO where a file was, a directory swapped between two looks. So it never opens a path
//! by name from `/`: it holds the root open and goes down one name at a time with `openat`,
//! `O_NOFOLLOW` on each step (a symlink anywhere fails the open, it is never followed), and
//! `O_NONBLOCK` on files (a FIFO would otherwise wait for a writer that never comes). A
//! rename or an unlink names one entry of a directory it holds: whatever a name leads to, the
//! entry itself is what moves.

use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What `stat` says of an entry, enough to tell whether it changed. `ctime` cannot be set
/// back by a program (`touch -d` sets `mtime`, and moves `ctime` to now), so an entry whose
/// stamp is the same was not written, renamed over or replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub size: i64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

/// The file type bits of a mode, and three types. (`stat`'s field types differ between
/// platforms, hence the casts that are no-ops on some.)
#[allow(clippy::unnecessary_cast)]
const TYPE: u32 = libc::S_IFMT as u32;
#[allow(clippy::unnecessary_cast)]
const DIRECTORY: u32 = libc::S_IFDIR as u32;
#[allow(clippy::unnecessary_cast)]
const REGULAR: u32 = libc::S_IFREG as u32;
#[allow(clippy::unnecessary_cast)]
const SYMLINK: u32 = libc::S_IFLNK as u32;

impl Stamp {
    #[allow(clippy::unnecessary_cast)]
    fn of(stat: &libc::stat) -> Stamp {
        Stamp {
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
            mode: stat.st_mode as u32,
            size: stat.st_size as i64,
            mtime: (stat.st_mtime as i64, stat.st_mtime_nsec as i64),
            ctime: (stat.st_ctime as i64, stat.st_ctime_nsec as i64),
        }
    }

    /// The type bits of its mode: directory, regular file, symlink…
    pub fn kind(&self) -> u32 {
        self.mode & TYPE
    }

    pub fn is_dir(&self) -> bool {
        self.kind() == DIRECTORY
    }

    pub fn is_file(&self) -> bool {
        self.kind() == REGULAR
    }

    pub fn is_link(&self) -> bool {
        self.kind() == SYMLINK
    }

    /// The same object (device, inode and type), whatever happened to its contents.
    pub fn same_object(&self, other: &Stamp) -> bool {
        (self.dev, self.ino, self.kind()) == (other.dev, other.ino, other.kind())
    }
}

/// An open directory.
pub struct Dir(OwnedFd);

/// One entry of a directory, and whether it is a directory itself (never following a link).
pub struct Entry {
    pub name: Vec<u8>,
    pub is_dir: bool,
}

fn c_name(name: &[u8]) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 { Err(io::Error::last_os_error()) } else { Ok(result) }
}

impl Dir {
    /// Opens `path`, whose last component must be a directory and not a symlink. For the root
    /// (canonical, so no symlink above it) and the tests.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let path = c_name(path.as_os_str().as_bytes())?;
        Dir::open_c(libc::AT_FDCWD, &path)
    }

    fn open_c(at: libc::c_int, name: &CStr) -> io::Result<Dir> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid C string; the descriptor returned is ours alone.
        let fd = check(unsafe { libc::openat(at, name.as_ptr(), flags) })?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The subdirectory `name` (one component), refused if it is a symlink or not a directory.
    pub fn child(&self, name: &[u8]) -> io::Result<Dir> {
        Dir::open_c(self.0.as_raw_fd(), &c_name(name)?)
    }

    /// The directory `path` beneath this one, one component at a time, never following a link.
    pub fn descend(&self, path: &Path) -> io::Result<Dir> {
        let mut dir = self.child(b".")?;
        for part in path.components() {
            dir = dir.child(part.as_os_str().as_bytes())?;
        }
        Ok(dir)
    }

    /// This directory's own stamp.
    pub fn stamp(&self) -> io::Result<Stamp> {
        // SAFETY: fstat writes into the zeroed struct we pass, on a descriptor we own.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        check(unsafe { libc::fstat(self.0.as_raw_fd(), &mut stat) })?;
        Ok(Stamp::of(&stat))
    }

    /// The stamp of entry `name`, not following it if it is a symlink.
    pub fn stat(&self, name: &[u8]) -> io::Result<Stamp> {
        let name = c_name(name)?;
        // SAFETY: as above; AT_SYMLINK_NOFOLLOW makes it look at the entry itself.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        check(unsafe {
            libc::fstatat(self.0.as_raw_fd(), name.as_ptr(), &mut stat, libc::AT_SYMLINK_NOFOLLOW)
        })?;
        Ok(Stamp::of(&stat))
    }

    /// The regular file `name`, opened for reading: not through a symlink, not a FIFO.
    pub fn file(&self, name: &[u8]) -> io::Result<File> {
        let name = c_name(name)?;
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        // SAFETY: a valid C string; the descriptor returned is ours alone.
        let fd = check(unsafe { libc::openat(self.0.as_raw_fd(), name.as_ptr(), flags) })?;
        // SAFETY: just opened, owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not a regular file"));
        }
        Ok(file)
    }

    /// At most `limit` bytes of the regular file `name`.
    pub fn read_start(&self, name: &[u8], limit: u64) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.file(name)?.take(limit).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The target of the symlink `name`, at most `limit` bytes of it.
    pub fn read_link(&self, name: &[u8], limit: usize) -> io::Result<Vec<u8>> {
        let name = c_name(name)?;
        let mut buffer = vec![0u8; limit];
        // SAFETY: readlinkat writes at most `limit` bytes into the buffer we own.
        let n =
            unsafe { libc::readlinkat(self.0.as_raw_fd(), name.as_ptr(), buffer.as_mut_ptr().cast(), limit) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        buffer.truncate(n as usize);
        Ok(buffer)
    }

    /// The entries `keep` wants (given each name and whether it is a directory; a symlink is
    /// not), `.` and `..` aside, at most `max` of them; and whether that was all of them. Only
    /// what is kept is allocated: a directory of a million files costs a walk, not memory.
    pub fn entries(&self, max: usize, keep: impl Fn(&[u8], bool) -> bool) -> io::Result<(Vec<Entry>, bool)> {
        // fdopendir takes the descriptor over; it gets a duplicate, closed by closedir.
        // SAFETY: dup of a descriptor we own.
        let fd = check(unsafe { libc::fcntl(self.0.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) })?;
        // SAFETY: `fd` is ours; on failure we close it ourselves.
        let stream = unsafe { libc::fdopendir(fd) };
        if stream.is_null() {
            let error = io::Error::last_os_error();
            // SAFETY: fdopendir failed, so `fd` is still ours to close.
            unsafe { libc::close(fd) };
            return Err(error);
        }
        // A duplicate shares the reading position: start from the first entry.
        // SAFETY: a stream fdopendir returned.
        unsafe { libc::rewinddir(stream) };
        let (mut entries, mut complete) = (Vec::new(), true);
        loop {
            // SAFETY: readdir returns null at the end or an entry valid until the next call.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                break;
            }
            // SAFETY: d_name is a NUL-terminated name inside the entry just returned.
            let (name, kind) = unsafe { (CStr::from_ptr((*entry).d_name.as_ptr()), (*entry).d_type) };
            let name = name.to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let is_dir = match kind {
                libc::DT_DIR => true,
                libc::DT_UNKNOWN => self.stat(name).is_ok_and(|stamp| stamp.is_dir()),
                _ => false,
            };
            if !keep(name, is_dir) {
                continue;
            }
            if entries.len() == max {
                complete = false;
                break;
            }
            entries.push(Entry { name: name.to_vec(), is_dir });
        }
        // SAFETY: the stream is ours; this also closes the duplicate.
        unsafe { libc::closedir(stream) };
        Ok((entries, complete))
    }

    /// Creates the directory `name` (mode `mode`), or leaves one that is there.
    pub fn make_dir(&self, name: &[u8], mode: libc::mode_t) -> io::Result<()> {
        let name = c_name(name)?;
        // SAFETY: a valid C string; mkdirat never follows a symlink at the last component.
        match check(unsafe { libc::mkdirat(self.0.as_raw_fd(), name.as_ptr(), mode) }) {
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            other => other.map(drop),
        }
    }

    /// Moves entry `name` (itself, not what a symlink names) to `to`/`new_name`, which must
    /// not exist.
    pub fn move_entry(&self, name: &[u8], to: &Dir, new_name: &[u8]) -> io::Result<()> {
        let (name, new_name) = (c_name(name)?, c_name(new_name)?);
        if to.stat(new_name.as_bytes()).is_ok() {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        // SAFETY: valid C strings, descriptors we own; rename moves the entry, never its target.
        check(unsafe {
            libc::renameat(self.0.as_raw_fd(), name.as_ptr(), to.0.as_raw_fd(), new_name.as_ptr())
        })
        .map(drop)
    }

    /// Removes entry `name` when it is not a directory (a symlink goes, not its target).
    pub fn remove_file(&self, name: &[u8]) -> io::Result<()> {
        let name = c_name(name)?;
        // SAFETY: a valid C string; unlinkat without AT_REMOVEDIR removes no directory.
        check(unsafe { libc::unlinkat(self.0.as_raw_fd(), name.as_ptr(), 0) }).map(drop)
    }
}

/// A name from a directory, as a path component.
pub fn component(name: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(name))
}
