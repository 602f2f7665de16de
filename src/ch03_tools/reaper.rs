//! Chapter 3 — the processes that leave the group.
//!
//! Killing a command's process group ends everything it started, except what left the group:
//! `setsid sleep 1000 &`, or a daemon that double-forks into a session of its own. When their
//! parent dies such processes are re-parented to init, and outlive the command, the turn and
//! the agent. On Linux a process may declare itself a *child subreaper*
//! (`prctl(PR_SET_CHILD_SUBREAPER)`): orphans among its descendants are then re-parented to it
//! instead. So the agent becomes one before its first command, marks each command run with an
//! environment variable its descendants inherit, and after the command ends (exited, timed out
//! or interrupted) kills and reaps every child of its own that carries that run's mark. When
//! nothing escaped, that costs one read of a small `/proc` file per command.
//!
//! Why a mark, and not "every child"? The agent may have other children (in the tests, other
//! tests' commands run beside this one), and those must not be touched. A process that clears
//! its environment (`env -i`) loses the mark and escapes; elsewhere than Linux there is no
//! subreaper at all. README "Honest limits" says so.

use std::sync::atomic::{AtomicU64, Ordering};

/// The variable that marks every process of one command run.
pub const MARK_VARIABLE: &str = "MINI_AGENT_TOOL_RUN";

// ANCHOR: reaper
/// A fresh mark for one command run: `pid-counter`, unique within this machine's lifetime
/// of this process.
pub fn new_mark() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    become_subreaper();
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

// ANCHOR_END: reaper
/// Asks the kernel, once, to re-parent orphaned descendants to this process (Linux only).
fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes plain integers.
        ONCE.call_once(|| unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        });
    }
}

// ANCHOR: kill_escaped
/// Kills and reaps this process's children that belong to the command run `mark` whose
/// process group was `group`: those that carry the mark, and those still in the group (killed
/// with it, but re-parented to us when the shell died: without a `waitpid` they would stay
/// zombies for as long as the agent runs). Repeats while killing one re-parents its own
/// children to us. Returns how many had left the group.
pub fn kill_escaped(mark: &str, group: i32) -> usize {
    kill_escaped_or(mark, group, &|_| false)
}

/// [`kill_escaped`], also taking the children for which `started_inside` holds: a mark the
/// process cannot remove (chapter 20's sandbox knows its own), for one that cleared the
/// environment with `env -i`.
pub fn kill_escaped_or(mark: &str, group: i32, started_inside: &dyn Fn(i32) -> bool) -> usize {
    let wanted = format!("{MARK_VARIABLE}={mark}");
    let mut escaped = 0;
    for _round in 0..16 {
        let ours: Vec<(i32, bool)> = own_children()
            .into_iter()
            .filter_map(|pid| {
                let in_group = process_group(pid) == Some(group);
                (in_group || carries(pid, &wanted) || started_inside(pid)).then_some((pid, in_group))
            })
            .collect();
        if ours.is_empty() {
            break;
        }
        for (pid, in_group) in ours {
            // SAFETY: kill and waitpid take plain integers; `pid` is our own child, so it
            // cannot be reused before we reap it here.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            escaped += usize::from(!in_group);
        }
    }
    escaped
}
// ANCHOR_END: kill_escaped

/// The children of this process's main thread. An orphan is re-parented to the first live
/// thread of the subreaper, which is its main thread for as long as the agent runs, so this
/// one small file lists every escaped process (children we started from other threads are
/// listed under those threads, and are not what we look for).
fn own_children() -> Vec<i32> {
    #[cfg(target_os = "linux")]
    {
        let path = format!("/proc/self/task/{}/children", std::process::id());
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.split_whitespace().filter_map(|pid| pid.parse::<i32>().ok()).collect()
    }
    #[cfg(not(target_os = "linux"))]
    Vec::new()
}

/// The process group of `pid`, from `/proc/<pid>/stat` (readable for zombies too): the fields
/// after the command name in parentheses are state, parent, group.
fn process_group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(2)?.parse().ok()
}

/// Whether process `pid` was started with `wanted` (`NAME=value`) in its environment.
fn carries(pid: i32, wanted: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|environ| environ.split(|&byte| byte == 0).any(|entry| entry == wanted.as_bytes()))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Instant;

    #[test]
    fn what_left_the_group_is_found_by_its_mark_and_killed() {
        let mark = new_mark();
        let temp = crate::temp_dir::TempDir::new("reaper");
        let pid_file = temp.join("escaped.pid");
        // The shell starts a process in a session of its own and exits: the orphan is
        // re-parented to this process, the subreaper.
        let script =
            format!("setsid sh -c 'echo $$ > {}; exec sleep 1000' >/dev/null 2>&1 &", pid_file.display());
        let status =
            Command::new("sh").args(["-c", &script]).env(MARK_VARIABLE, &mark).status().expect("sh runs");
        assert!(status.success());
        let started = Instant::now();
        let pid = loop {
            if let Ok(text) = std::fs::read_to_string(&pid_file)
                && let Ok(pid) = text.trim().parse::<i32>()
            {
                break pid;
            }
            assert!(started.elapsed().as_secs() < 5, "the escaped process never started");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(own_children().contains(&pid), "re-parented to us");
        assert_eq!(kill_escaped("another-run", -1), 0, "another run's mark touches nothing");
        assert_eq!(kill_escaped(&mark, -1), 1);
        assert!(!own_children().contains(&pid), "killed and reaped");
    }

    /// A background process killed with its group dies after the shell: as subreaper we
    /// inherit its zombie, and must reap it, or it stays in the process table for as long
    /// as the agent runs.
    #[test]
    fn what_died_with_the_group_is_reaped_not_left_a_zombie() {
        use std::os::unix::process::CommandExt;
        let mark = new_mark();
        let mut shell = Command::new("sh")
            .args(["-c", "sleep 1000 & echo $!; wait"])
            .env(MARK_VARIABLE, &mark)
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh runs");
        let group = shell.id() as i32;
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(shell.stdout.take().expect("piped")),
            &mut line,
        )
        .expect("the pid");
        let sleeper: i32 = line.trim().parse().expect("a pid");
        // SAFETY: kill takes plain integers; the group is the shell's own.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        shell.wait().expect("reap the shell");
        let state = || std::fs::read_to_string(format!("/proc/{sleeper}/stat")).ok();
        let started = Instant::now();
        while state().is_some_and(|stat| {
            !stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        }) {
            assert!(started.elapsed().as_secs() < 5, "the sleeper never died");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(own_children().contains(&sleeper), "its zombie is ours");
        assert_eq!(kill_escaped(&mark, group), 0, "it never left the group");
        assert!(state().is_none(), "reaped");
    }

    #[test]
    fn looking_when_nothing_escaped_is_cheap() {
        let started = Instant::now();
        for _ in 0..100 {
            assert_eq!(kill_escaped("nothing-here", -1), 0);
        }
        println!("figure: kill_escaped with nothing escaped: {:?} per command", started.elapsed() / 100);
    }
}
