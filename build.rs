//! Tells the tests whether this machine's kernel offers Landlock (chapter 20's sandbox).
//!
//! Tests of the sandbox cannot pass on a kernel that has none, and a test that cannot run
//! must say so as *ignored*, never pass quietly; libtest decides that at compile time, so the
//! question is asked here: `landlock_create_ruleset(NULL, 0, 0)` fails with `ENOSYS` (not
//! built) or `EOPNOTSUPP` (not enabled) where Landlock is missing, and with another error (the
//! null attribute is refused: `EFAULT` on Linux 6.18) where it is there. Without it the build sets `cfg(no_landlock)`, and the sandbox tests are ignored
//! with that reason.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(no_landlock)");
    if !landlock_available() {
        println!("cargo::rustc-cfg=no_landlock");
        println!("cargo::warning=this kernel has no Landlock: the sandbox tests will be ignored");
    }
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
