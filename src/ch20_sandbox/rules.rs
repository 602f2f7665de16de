//! Landlock: what a command may touch, said to the kernel as allow-lists.
//!
//! A Landlock ruleset first names the kinds of access it *handles* — every filesystem right,
//! TCP connect and bind, and the signal and abstract-socket scopes — and then allows some of
//! them beneath some directories. Whatever is handled and not allowed is refused, to the
//! process that restricts itself and to everything it starts, for good: no later rule, `sudo`
//! or `setuid` program can widen it (`no_new_privs`). Here: read and execute everywhere; write
//! beneath the writable roots and to a few devices; no TCP port at all; no signal, `ptrace`
//! or abstract UNIX socket out of the sandbox.
//!
//! Two things shape the code. Kernels differ: each Landlock ABI added rights (files in Linux
//! 5.13, TCP in 6.7, scopes in 6.12), and the `landlock` crate's best-effort mode silently
//! drops what the running kernel lacks. Silence is what this chapter must not allow, so each
//! layer is first probed with `HardRequirement` and reported. And rules are allow-lists over
//! hierarchies: a rule on the root covers `.mini_agent/` too, and no rule can take a right back
//! beneath it — the namespaces (`namespaces.rs`) do that part.

use super::Coverage;
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetError, Scope, path_beneath_rules,
};
use std::path::Path;

/// The newest ABI whose rights this code was written and tested against (Linux 6.12). Newer
/// kernels enforce it unchanged; older ones enforce what they have, and the probes say what.
const TARGET: ABI = ABI::V6;

/// Devices any program may write: the null sink, and the zero and full devices. Not the
/// terminals (`/dev/tty`, `/dev/pts`): a command has none of its own, and writing or sending
/// `TIOCSTI` to the person's terminal is exactly what must not happen.
const DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

// ANCHOR: probe
/// Which Landlock layers this kernel enforces: each one asked for as a hard requirement,
/// which fails here, before anything is created, when the running ABI lacks it.
pub fn probe() -> Coverage {
    let strict = || Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
    Coverage {
        files: strict().handle_access(AccessFs::from_all(ABI::V1)).is_ok(),
        tcp: strict().handle_access(AccessNet::from_all(ABI::V4)).is_ok(),
        signals: strict().scope(Scope::Signal).is_ok(),
        ..Coverage::default()
    }
}
// ANCHOR_END: probe

// ANCHOR: ruleset
/// The ruleset for commands that may write beneath `writable`. It is created (a file
/// descriptor) now, in the parent; each child only calls `landlock_restrict_self` on it.
pub fn ruleset(writable: &[&Path], allow_net: bool) -> Result<RulesetCreated, RulesetError> {
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(TARGET))?.scope(Scope::Signal)?;
    if !allow_net {
        // Handled and never allowed: every TCP connect and bind is refused.
        ruleset = ruleset.handle_access(AccessNet::from_all(TARGET))?.scope(Scope::AbstractUnixSocket)?;
    }
    ruleset
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(TARGET)))?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(TARGET)))?
        .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(TARGET)))
}
// ANCHOR_END: ruleset
