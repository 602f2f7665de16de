//! Telling the model that the sandbox refused, not the system.
//!
//! To the model, "Permission denied" from the sandbox looks like a bug to work around: it
//! retries with `sudo`, another path, another tool, and each retry is refused again. One line
//! appended to the result changes that: it says a sandbox is there, what it enforces on this
//! run (the start-up line's facts, never more: no read-only `.git/hooks` where there is no
//! namespace or no `.git` directory), and which flag lifts it, so the model can tell the
//! person. It is appended only when the output holds an error the sandbox produces (`EACCES`,
//! `EPERM`, `EROFS`, `EBUSY` for a pinned `.git`, and with the network off a failed name
//! lookup), and it says "may": the same words also come from ordinary permission errors.

use super::Mode;

/// Error texts the sandbox's refusals produce (strerror of EACCES, EPERM, EROFS, EBUSY).
const REFUSALS: [&str; 4] =
    ["Permission denied", "Operation not permitted", "Read-only file system", "Device or resource busy"];

/// What a program prints when it cannot reach the network at all.
const OFFLINE: [&str; 4] = [
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Name or service not known",
    "Network is unreachable",
];

// ANCHOR: explain
/// The line for a command's `output`, when it shows a refusal the sandbox could have made:
/// what the sandbox of `mode` enforces here (`enforced`, in the start-up line's words, so that
/// the model is told no more than the kernel does), and the flags that lift it.
pub fn explain(output: &str, mode: Mode, enforced: &[String], network_off: bool) -> Option<String> {
    let refused = REFUSALS.iter().any(|words| output.contains(words));
    let offline = network_off && OFFLINE.iter().any(|words| output.contains(words));
    if enforced.is_empty() || (!refused && !offline) {
        return None;
    }
    let lift = if network_off { "--sandbox off, or --allow-net for the network" } else { "--sandbox off" };
    Some(format!(
        "sandbox: this command ran in the {} sandbox, which may have refused it; here it enforces: \
         {}. Do not work around it: tell the user, who can rerun with {lift}",
        mode.name(),
        enforced.join(", ")
    ))
}
// ANCHOR_END: explain
