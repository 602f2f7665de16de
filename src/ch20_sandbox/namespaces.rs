//! The agent's own state, read-only inside a writable root.
//!
//! Landlock cannot do this part: its rules only ever *allow*, over whole hierarchies, so a
//! command allowed to write the root may write `.mini_agent/` beneath it (the journals the
//! agent resumes from) and `.git/hooks` or `.git/config` (code that the person's next `git`
//! runs outside any sandbox, and that no diff shows). A mount namespace can: inside it, each of
//! those paths is a bind mount of itself, remounted read-only. Creating one needs
//! `CAP_SYS_ADMIN`, which an unprivileged process has inside a user namespace of its own;
//! where those are disabled (some distributions restrict them), the start-up line says so.
//!
//! The namespaces are made once per run, by a helper process forked for the purpose: it
//! `unshare`s, maps its own user and group id, makes the mounts, reports, and is killed; the
//! agent keeps the two namespaces open by file descriptor. Each command then only `setns`es
//! into them between fork and exec — two system calls, instead of copying the mount table
//! per command. And because no process can leave a user namespace, it is also the mark by
//! which the reaper finds a process that cleared its environment (`env -i setsid …`).
//!
//! Git's object store, index and refs stay writable, so `git commit` works; the repository's
//! hooks and configuration do not. Files owned by users other than the person show up as
//! owned by `nobody` inside, as only the person's own ids are mapped.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A user namespace and a mount namespace, held open.
pub struct Namespaces {
    user: File,
    mount: File,
    /// The user namespace's identity (device and inode of its `nsfs` file).
    user_id: (u64, u64),
}

/// The steps of the helper, for the error that says which one failed.
const STEPS: [&str; 8] = [
    "",
    "create a user and mount namespace (unshare)",
    "write /proc/self/setgroups",
    "map the user id",
    "map the group id",
    "bind-mount a protected path",
    "remount a protected path read-only",
    "make the namespace helper dumpable (prctl)",
];

impl Namespaces {
    // ANCHOR: create
    /// Makes the namespaces with each of `read_only` (existing paths) read-only, after making
    /// each of `pinned` a mount point of its own, which cannot be renamed or replaced.
    pub fn create(pinned: &[PathBuf], read_only: &[PathBuf]) -> io::Result<Namespaces> {
        // Everything the helper needs is made here: after fork it may only make system calls.
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let uid_map = format!("{uid} {uid} 1");
        let gid_map = format!("{gid} {gid} 1");
        let pins = pinned.iter().map(|path| Ok((c_path(path)?, NO_REMOUNT)));
        let read_only = read_only.iter().map(|path| read_only_remount(path));
        let mounts: Vec<(CString, libc::c_ulong)> = pins.chain(read_only).collect::<io::Result<_>>()?;
        let (report_read, report_write) = io::pipe()?;
        // SAFETY: getpid cannot fail.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child runs `helper`, which makes only async-signal-safe system calls on
        // memory prepared above, and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: see above; this is the forked child.
            unsafe {
                helper(parent, uid_map.as_bytes(), gid_map.as_bytes(), &mounts, report_write.as_raw_fd())
            }
        }
        drop(report_write);
        let outcome = read_report(report_read);
        let namespaces = outcome.and_then(|()| {
            let user = File::open(format!("/proc/{pid}/ns/user"))?;
            let mount = File::open(format!("/proc/{pid}/ns/mnt"))?;
            let meta = user.metadata()?;
            Ok(Namespaces { user, mount, user_id: (meta.dev(), meta.ino()) })
        });
        // SAFETY: `pid` is our own child, not yet reaped, so it cannot have been reused.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        namespaces
    }
    // ANCHOR_END: create

    // ANCHOR: enter
    /// Moves the calling process into the namespaces, then back to `directory` (entering a
    /// mount namespace resets the working directory to its root).
    ///
    /// # Safety
    /// Meant for a forked child before exec: only system calls, no allocation.
    pub unsafe fn enter(&self, directory: &CStr) -> io::Result<()> {
        // SAFETY: plain system calls on descriptors we own and a valid C string.
        let entered = unsafe {
            libc::setns(self.user.as_raw_fd(), libc::CLONE_NEWUSER) == 0
                && libc::setns(self.mount.as_raw_fd(), libc::CLONE_NEWNS) == 0
                && libc::chdir(directory.as_ptr()) == 0
        };
        if entered { Ok(()) } else { Err(io::Error::last_os_error()) }
    }
    // ANCHOR_END: enter

    /// Whether process `pid` lives in our user namespace: a mark it cannot remove.
    pub fn holds(&self, pid: i32) -> bool {
        std::fs::metadata(format!("/proc/{pid}/ns/user"))
            .is_ok_and(|meta| (meta.dev(), meta.ino()) == self.user_id)
    }
}

/// The remount flags of a path that is only pinned (bind-mounted onto itself, still writable).
const NO_REMOUNT: libc::c_ulong = 0;

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)
}

/// `path` as a C string, with the flags that remount it read-only. Inside a user namespace a
/// remount must keep the flags the original mount was locked with (nosuid, nodev, noexec and
/// the atime ones), or the kernel refuses it; `statvfs` says which they are.
fn read_only_remount(path: &Path) -> io::Result<(CString, libc::c_ulong)> {
    let c_path = c_path(path)?;
    // SAFETY: statvfs writes into the zeroed struct we pass; the path is a valid C string.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut stats) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let kept = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    let locked = kept.iter().filter(|(st, _)| stats.f_flag & st != 0).fold(0, |flags, (_, ms)| flags | ms);
    Ok((c_path, libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | locked))
}

// ANCHOR: helper
/// The forked helper: into new namespaces, its ids mapped, the paths pinned and read-only;
/// then it reports (one byte: 0, or the failed step and the errno) and waits to be killed —
/// by `parent`, or by the kernel if `parent` dies first (a SIGKILL during start-up must not
/// leave it waiting for ever).
unsafe fn helper(
    parent: libc::pid_t,
    uid_map: &[u8],
    gid_map: &[u8],
    mounts: &[(CString, libc::c_ulong)],
    report: i32,
) -> ! {
    const REPORT: i32 = 3;
    let fail = |step: u8| -> ! {
        let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
        let message = [step, (errno & 0xff) as u8, ((errno >> 8) & 0xff) as u8];
        // SAFETY: write and _exit are async-signal-safe; the buffer lives on the stack.
        unsafe {
            libc::write(REPORT, message.as_ptr().cast(), message.len());
            libc::_exit(1)
        }
    };
    // SAFETY: each call is a system call on memory prepared before fork.
    unsafe {
        // Dies with the agent; and if the agent died before this line, goes at once.
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 || libc::getppid() != parent {
            libc::_exit(1);
        }
        // First let go of every descriptor but the report: a copy of another thread's pipe or
        // of a file it is writing would delay that pipe's end, or make exec of that file fail
        // with ETXTBSY, for as long as the helper lives.
        if libc::dup2(report, REPORT) != REPORT {
            libc::_exit(1); // no report: the parent says the helper ended without one
        }
        libc::syscall(libc::SYS_close_range, REPORT as u32 + 1, u32::MAX, 0u32);
        // ANCHOR_END: helper
        // ANCHOR: helper_ids
        // The agent made itself non-dumpable at start (chapter 3's `seal_memory`), and the
        // helper inherits that: its `/proc/self` files then belong to root, so a user who is
        // not root cannot write its own `uid_map`, and the agent cannot open its `ns` files.
        // The helper makes itself dumpable again, alone. That lets processes of the same user
        // read its memory, a copy of the agent's, for as long as it lives; which is safe
        // because none that the agent does not already trust can: it is forked before any
        // command of this root runs, runs nothing, and is killed once it has reported; a
        // sandboxed command of another root (a service) cannot trace a process outside its
        // Landlock domain; and where Landlock is missing, commands read the user's files
        // anyway. Another process image (exec) would need a second entry point in `main`.
        if libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) != 0 {
            fail(7);
        }
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
            fail(1);
        }
        let maps = [
            (c"/proc/self/setgroups", b"deny".as_slice()),
            (c"/proc/self/uid_map", uid_map),
            (c"/proc/self/gid_map", gid_map),
        ];
        for (step, (file, text)) in (2..).zip(maps) {
            let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 || libc::write(fd, text.as_ptr().cast(), text.len()) != text.len() as isize {
                fail(step);
            }
            libc::close(fd);
        }
        // ANCHOR_END: helper_ids
        // ANCHOR: helper_mounts
        for (path, remount) in mounts {
            let none = std::ptr::null();
            if libc::mount(path.as_ptr(), path.as_ptr(), none, libc::MS_BIND | libc::MS_REC, none.cast()) != 0
            {
                fail(5);
            }
            if *remount != NO_REMOUNT && libc::mount(none, path.as_ptr(), none, *remount, none.cast()) != 0 {
                fail(6);
            }
        }
        libc::write(REPORT, [0u8].as_ptr().cast(), 1);
        loop {
            libc::pause();
        }
    }
}
// ANCHOR_END: helper_mounts

/// Reads the helper's report: `Ok` for success, else the failed step and its errno.
fn read_report(mut report: io::PipeReader) -> io::Result<()> {
    // One read: the helper writes its report in one go (atomically: it is under PIPE_BUF).
    let mut buffer = [0u8; 3];
    let n = loop {
        match io::Read::read(&mut report, &mut buffer) {
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue, // a signal
            other => break other?,
        }
    };
    match buffer[..n] {
        [0] => Ok(()),
        [step, low, high] => {
            let error = io::Error::from_raw_os_error(i32::from(low) | (i32::from(high) << 8));
            let what = STEPS.get(usize::from(step)).copied().unwrap_or("set up namespaces");
            Err(io::Error::new(error.kind(), format!("cannot {what}: {error}")))
        }
        _ => Err(io::Error::other("the namespace helper ended without a report")),
    }
}
