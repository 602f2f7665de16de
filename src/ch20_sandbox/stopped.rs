//! Telling the model that the sandbox refused, not the system.
//!
//! To the model, "Permission denied" from the sandbox looks like a bug to work around: it
//! retries with `sudo`, another path, another tool, and each retry is refused again. One line
//! appended to the result changes that: it says a sandbox is there, what it allows, and which
//! flag lifts it, so the model can tell the person. It is appended only when the output holds
//! an error the sandbox produces (`EACCES`, `EPERM`, `EROFS`, `EBUSY` for a pinned `.git`, and
//! with the network off a failed name lookup), and it says "may": the same words also come from ordinary permission errors.

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
/// The line for a command's `output`, when it shows a refusal the sandbox could have made.
pub fn explain(output: &str, mode: Mode, allow_net: bool) -> Option<String> {
    let refused = REFUSALS.iter().any(|words| output.contains(words));
    let offline = !allow_net && OFFLINE.iter().any(|words| output.contains(words));
    if !refused && !offline {
        return None;
    }
    let writes = match mode {
        Mode::ReadOnly => "writes only in $TMPDIR",
        Mode::Workspace | Mode::Require | Mode::Off => "writes only in the workspace and $TMPDIR",
    };
    let net = if allow_net { "" } else { ", no network" };
    let lift = if allow_net { "--sandbox off" } else { "--sandbox off, or --allow-net for the network" };
    Some(format!(
        "sandbox: this command ran in the {} sandbox ({writes}{net}, no signals to other processes, \
         .mini_agent/ and .git hooks/config read-only), which may have refused it; do not work around \
         it: tell the user, who can rerun with {lift}",
        mode.name()
    ))
}
// ANCHOR_END: explain
