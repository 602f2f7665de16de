//! seccomp: the sockets Landlock cannot name.
//!
//! Landlock's network rules speak of TCP ports, nothing else. A command could still send a
//! key in a UDP packet (`/dev/udp/…` in bash, a DNS query to a server it chose), over a raw
//! or packet socket, or through netlink. Those start with `socket(2)`, and a seccomp filter —
//! a small BPF program the kernel runs on every system call — can look at its first argument,
//! the address family. Without `--allow-net` it answers `EPERM` to every family, TCP included:
//! defence in depth where Landlock's TCP rules exist, the only network rule where they do not.
//! `AF_UNIX` is refused too, with or without `--allow-net`: a pathname UNIX socket is a door
//! to a program of the user outside the sandbox (the SSH agent signs as them, the session bus
//! starts programs for them, `docker.sock` is root), and before Landlock ABI 9 nothing else can
//! tell a socket in the workspace from one outside. `socketpair(2)`, the unnamed pair programs
//! use to talk to their own children, is another call and stays allowed. The filter also
//! refuses `io_uring_setup`, because io_uring can open a socket without calling `socket(2)`,
//! and, on x86_64, every x32 call, which the comparisons would not recognise.
//!
//! Why `seccompiler` rather than twenty lines of BPF through `libc`? The hard part of a
//! filter is not the comparison but the architecture check before it (a 32-bit program on
//! x86_64 makes the same call under another number); rust-vmm's compiler, which Firecracker
//! runs in production, writes that check for us, has `libc` as its only dependency, and
//! returns a plain vector of instructions we build before forking.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch, sock_filter,
};
use std::collections::BTreeMap;

// ANCHOR: socket_filter
/// The filter: `socket()` fails with `EPERM` for every family, or with `allow_net` for
/// `AF_UNIX` alone; so does a datagram `socketpair()`, whose ends may still `sendto` any
/// socket path; `io_uring_setup` fails too; everything else is allowed. `Err` on an
/// architecture seccompiler does not know.
pub fn socket_filter(allow_net: bool) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|error| error.to_string())?;
    // No rule: the call number alone matches, whatever the family.
    let socket_rules = match allow_net {
        true => {
            let unix =
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64)
                    .map_err(|error| error.to_string())?;
            vec![SeccompRule::new(vec![unix]).map_err(|error| error.to_string())?]
        }
        false => vec![],
    };
    // The type, less its flags (SOCK_CLOEXEC, SOCK_NONBLOCK), is the low four bits.
    let datagram = SeccompCondition::new(
        1,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(0xf),
        libc::SOCK_DGRAM as u64,
    )
    .map_err(|error| error.to_string())?;
    let pair_rules = vec![SeccompRule::new(vec![datagram]).map_err(|error| error.to_string())?];
    let rules = BTreeMap::from([
        (libc::SYS_socket, socket_rules),
        (libc::SYS_socketpair, pair_rules),
        (libc::SYS_io_uring_setup, vec![]),
    ]);
    let refuse = SeccompAction::Errno(libc::EPERM as u32);
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, refuse, arch).map_err(|error| error.to_string())?;
    let program: BpfProgram =
        filter.try_into().map_err(|error: seccompiler::BackendError| error.to_string())?;
    Ok([no_x32_calls(), program].concat())
}
// ANCHOR_END: socket_filter

// ANCHOR: no_x32
/// On x86_64, three instructions before the filter refuse every x32 call. An x32 program
/// makes the same calls as a 64-bit one, under the same architecture, with bit 30 set in the
/// number (`socket` is `0x40000029`): the filter's comparisons with 41 never see it, and on a
/// kernel built with x32 support the socket would be made. seccompiler does not check for it.
fn no_x32_calls() -> BpfProgram {
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const LOAD_NR: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS, offset 0: seccomp_data.nr
    const JUMP_IF_AT_LEAST: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    let instruction = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    match cfg!(target_arch = "x86_64") {
        true => vec![
            instruction(LOAD_NR, 0, 0, 0),
            // An x32 call returns EPERM; any other goes on to the filter (one instruction on).
            instruction(JUMP_IF_AT_LEAST, 0, 1, X32_SYSCALL_BIT),
            instruction(RETURN, 0, 0, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        ],
        false => vec![],
    }
}
// ANCHOR_END: no_x32
