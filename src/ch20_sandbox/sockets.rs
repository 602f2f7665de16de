//! seccomp: the sockets Landlock cannot name.
//!
//! Landlock's network rules speak of TCP ports, nothing else. A command could still send a
//! key in a UDP packet (`/dev/udp/…` in bash, a DNS query to a server it chose), over a raw
//! or packet socket, or through netlink. Those start with `socket(2)`, and a seccomp filter —
//! a small BPF program the kernel runs on every system call — can look at its first argument,
//! the address family. This one lets `AF_UNIX` through (pipes between local programs, which
//! build tools use) and answers `EPERM` to every other family, TCP included: defence in depth
//! where Landlock's TCP rules exist, the only network rule where they do not. It also refuses
//! `io_uring_setup`, because io_uring can open a socket without calling `socket(2)`.
//!
//! Why `seccompiler` rather than twenty lines of BPF through `libc`? The hard part of a
//! filter is not the comparison but the architecture check before it (a 32-bit program on
//! x86_64 makes the same call under another number); rust-vmm's compiler, which Firecracker
//! runs in production, writes that check for us, has `libc` as its only dependency, and
//! returns a plain vector of instructions we build before forking.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};
use std::collections::BTreeMap;

// ANCHOR: socket_filter
/// The filter: `socket(family ≠ AF_UNIX, …)` and `io_uring_setup` fail with `EPERM`;
/// everything else is allowed. `Err` on an architecture seccompiler does not know.
pub fn socket_filter() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|error| error.to_string())?;
    let not_unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)
        .map_err(|error| error.to_string())?;
    let rules = BTreeMap::from([
        (libc::SYS_socket, vec![SeccompRule::new(vec![not_unix]).map_err(|error| error.to_string())?]),
        // No conditions: the call number alone matches.
        (libc::SYS_io_uring_setup, vec![]),
    ]);
    let refuse = SeccompAction::Errno(libc::EPERM as u32);
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, refuse, arch).map_err(|error| error.to_string())?;
    filter.try_into().map_err(|error: seccompiler::BackendError| error.to_string())
}
// ANCHOR_END: socket_filter
