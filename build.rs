//! Tells the tests what this machine lets them check of chapter 20's sandbox.
//!
//! Tests of the sandbox cannot pass on a kernel that has none, and a test that cannot run
//! must say so as *ignored*, never pass quietly; libtest decides that at compile time, so the
//! questions are asked here.
//!
//! * Landlock: `landlock_create_ruleset(NULL, 0, 0)` fails with `ENOSYS` (not built) or
//!   `EOPNOTSUPP` (not enabled) where Landlock is missing, and with another error (the null
//!   attribute is refused: `EFAULT` on Linux 6.18) where it is there. Without it the build
//!   sets `cfg(no_landlock)`, and the sandbox tests are ignored with that reason.
//! * A user who is not root: the agent's state is read-only through a user namespace, which
//!   root gets where nobody else does (and CI runs as root). A test runs the real binary as
//!   `nobody` when the tests run as root, as themselves otherwise; a child forked here checks
//!   that such a user can reach the binary and make a user namespace with its ids mapped.
//!   Where not, the build sets `cfg(no_other_user)`, and that test is ignored with the reason.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(no_landlock)");
    println!("cargo::rustc-check-cfg=cfg(no_other_user)");
    if !landlock_available() {
        println!("cargo::rustc-cfg=no_landlock");
        println!("cargo::warning=this kernel has no Landlock: the sandbox tests will be ignored");
    } else if !other_user_gets_namespaces() {
        println!("cargo::rustc-cfg=no_other_user");
        println!(
            "cargo::warning=no user but root can make a user namespace here: the sandbox test as nobody will be ignored"
        );
    }
}

/// The user the tests run the binary as when they run as root (`nobody`, on every Linux).
#[cfg(target_os = "linux")]
const NOBODY: u32 = 65534;

/// Whether a user who is not root (`nobody` if we are root) can reach the binaries built here
/// and make a user and mount namespace with its own ids mapped, as the sandbox does.
#[cfg(target_os = "linux")]
fn other_user_gets_namespaces() -> bool {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    // OUT_DIR is <target>/<profile>/build/<package>-<hash>/out; the binaries are in <profile>.
    let Some(out_dir) = std::env::var_os("OUT_DIR") else { return false };
    let Some(profile) = std::path::Path::new(&out_dir).ancestors().nth(3) else { return false };
    let Ok(profile) = CString::new(profile.as_os_str().as_bytes()) else { return false };
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = if root { (NOBODY, NOBODY) } else { unsafe { (libc::getuid(), libc::getgid()) } };
    let maps = [
        (c"/proc/self/setgroups", "deny".to_string()),
        (c"/proc/self/uid_map", format!("{uid} {uid} 1")),
        (c"/proc/self/gid_map", format!("{gid} {gid} 1")),
    ];
    // SAFETY: a build script has one thread; the child makes system calls on memory made
    // above, and ends with _exit.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            // Changing ids makes a process non-dumpable (its /proc files root's) until it execs.
            let switched = !root
                || (libc::setgroups(0, std::ptr::null()) == 0
                    && libc::setgid(gid) == 0
                    && libc::setuid(uid) == 0
                    && libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) == 0);
            let mut ok = switched
                && libc::access(profile.as_ptr(), libc::X_OK) == 0
                && libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) == 0;
            for (file, text) in &maps {
                let fd = if ok { libc::open(file.as_ptr(), libc::O_WRONLY) } else { -1 };
                ok = fd >= 0 && libc::write(fd, text.as_ptr().cast(), text.len()) == text.len() as isize;
            }
            libc::_exit(if ok { 0 } else { 1 });
        }
        let mut status = 0;
        pid > 0
            && libc::waitpid(pid, &mut status, 0) == pid
            && libc::WIFEXITED(status)
            && libc::WEXITSTATUS(status) == 0
    }
}

#[cfg(not(target_os = "linux"))]
fn other_user_gets_namespaces() -> bool {
    false
}

#[cfg(target_os = "linux")]
fn landlock_available() -> bool {
    // SAFETY: a system call with a null attribute of size 0: the kernel reads nothing.
    let result =
        unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 0u32) };
    let missing = [Some(libc::ENOSYS), Some(libc::EOPNOTSUPP)];
    result < 0 && !missing.contains(&std::io::Error::last_os_error().raw_os_error())
}

#[cfg(not(target_os = "linux"))]
fn landlock_available() -> bool {
    false
}
