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
//!
//! One race hides in the mark. A process in the middle of `exec` has already left its old
//! memory, and the kernel lays out the new program's environment last: for that moment
//! `/proc/<pid>/environ` reads empty. A daemon started through a wrapper (`exec env …`,
//! `exec nice …`) passes through that moment several times, and a reaper that looked then saw
//! an unmarked stranger and let it go (the red team saw it once, under load). So an empty
//! environment is not an answer: the reaper looks again until the exec is done.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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
/// children to us, and while a child is between two programs (its mark unreadable for now).
/// Returns how many had left the group and were still running (one that had already exited
/// or was exiting, as git's detached maintenance does at once, is only reaped).
pub fn kill_escaped(mark: &str, group: i32) -> usize {
    kill_escaped_or(mark, group, &|_| false)
}

/// [`kill_escaped`], also taking the children for which `started_inside` holds: a mark the
/// process cannot remove (chapter 20's sandbox knows its own), for one that cleared the
/// environment with `env -i`.
pub fn kill_escaped_or(mark: &str, group: i32, started_inside: &dyn Fn(i32) -> bool) -> usize {
    let wanted = format!("{MARK_VARIABLE}={mark}");
    let (mut escaped, mut rounds, mut clean_looks) = (0, 0, 0);
    let mut looked_empty = Vec::new();
    let patience = Instant::now() + EXEC_PATIENCE;
    // Two clean looks in a row: the kernel lists children one at a time, and one that exits
    // meanwhile can hide the next.
    while rounds < 16 && clean_looks < 2 {
        let (ours, unsettled) = the_runs_children(&wanted, group, started_inside, &mut looked_empty);
        if ours.is_empty() {
            if unsettled && Instant::now() < patience {
                std::thread::sleep(Duration::from_millis(1));
            } else {
                clean_looks += 1;
            }
            continue;
        }
        clean_looks = 0;
        rounds += 1;
        for (pid, running_outside) in ours {
            // SAFETY: kill and waitpid take plain integers; `pid` is our own child, so it
            // cannot be reused before we reap it here.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            escaped += usize::from(running_outside);
        }
    }
    escaped
}
// ANCHOR_END: kill_escaped

/// This process's children that belong to the run (each with whether it left the group and is
/// still running), and whether a child's answer is not in yet.
fn the_runs_children(
    wanted: &str,
    group: i32,
    started_inside: &dyn Fn(i32) -> bool,
    looked_empty: &mut Vec<i32>,
) -> (Vec<(i32, bool)>, bool) {
    let mut unsettled = false;
    let mut ours = Vec::new();
    for pid in own_children() {
        let Some(seen) = seen(pid) else {
            continue; // gone already
        };
        let in_group = seen.group == group;
        let running_outside = !in_group && !seen.finished;
        if in_group || started_inside(pid) {
            ours.push((pid, running_outside));
            continue;
        }
        match belongs(pid, wanted) {
            Belongs::Yes => ours.push((pid, running_outside)),
            Belongs::No => {}
            Belongs::NotYet => unsettled = true,
            // Empty twice is an empty environment (`env -i`), not an exec half done.
            Belongs::Empty if looked_empty.contains(&pid) => {}
            Belongs::Empty => {
                looked_empty.push(pid);
                unsettled = true;
            }
        }
    }
    (ours, unsettled)
}

/// How long a child between two programs is waited for. An `exec` takes well under a
/// millisecond to a few; this bound only matters for one that hangs inside the kernel.
const EXEC_PATIENCE: Duration = Duration::from_secs(2);

/// Whether a child belongs to the run, as its environment says.
enum Belongs {
    Yes,
    No,
    /// In the middle of `exec`: no environment laid out yet.
    NotYet,
    /// Laid out, and empty: `env -i`, or the last instant of an `exec` (one more look tells).
    Empty,
}

// ANCHOR: belongs
/// Reads the child's environment. Empty is not an answer: `exec` drops the old memory first
/// and lays the new environment out last, so a process between two programs reads empty;
/// `/proc/<pid>/stat` then tells whether the environment is there yet.
fn belongs(pid: i32, wanted: &str) -> Belongs {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return Belongs::No; // gone, or not ours to read (a set-uid program)
    };
    if environ.split(|&byte| byte == 0).any(|entry| entry == wanted.as_bytes()) {
        return Belongs::Yes;
    }
    if !environ.is_empty() {
        return Belongs::No; // another run's
    }
    match environment_span(pid) {
        None => Belongs::No, // a zombie, or gone
        Some((start, end)) if end == 0 || end > start => Belongs::NotYet,
        Some(_) => Belongs::Empty,
    }
}

/// Where the process's environment starts and ends in its memory (fields 50 and 51 of
/// `/proc/<pid>/stat`; both 0 until `exec` has laid it out). `None` for a zombie or the gone.
fn environment_span(pid: i32) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    Some((fields.get(47)?.parse().ok()?, fields.get(48)?.parse().ok()?))
}
// ANCHOR_END: belongs

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

/// What `/proc/<pid>/stat` says of a process (readable for zombies too).
struct Seen {
    group: i32,
    /// A zombie, or exiting already: its program has ended, nothing is left to stop.
    finished: bool,
}

/// The kernel's flag for a process tearing itself down (no /proc to read elsewhere).
#[cfg(target_os = "linux")]
const EXITING: u64 = libc::PF_EXITING as u64;
#[cfg(not(target_os = "linux"))]
const EXITING: u64 = 0;

/// The fields after the command name in parentheses are state, parent, group, session,
/// terminal, terminal group and flags.
fn seen(pid: i32) -> Option<Seen> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let flags: u64 = fields.get(6)?.parse().ok()?;
    let finished = matches!(state, 'Z' | 'X') || flags & EXITING != 0;
    Some(Seen { group: fields.get(2)?.parse().ok()?, finished })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Instant;

    /// Kills what carries `mark` when a test ends, passed or failed: an escaped `sleep 1000`
    /// left by a failed assertion kept the test runner's descriptors (a lock among them) open.
    struct Reaped(String);

    impl Drop for Reaped {
        fn drop(&mut self) {
            kill_escaped(&self.0, -1);
        }
    }

    #[test]
    fn what_left_the_group_is_found_by_its_mark_and_killed() {
        let mark = new_mark();
        let _cleanup = Reaped(mark.clone());
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
            assert!(started.elapsed().as_secs() < 60, "the escaped process never started");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        // The pid is written just before the `exec`; during it the process's environment (its
        // mark) cannot be read, so look once it is `sleep`. Found at 8 test threads under load.
        let comm = || std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        while comm() != "sleep\n" {
            assert!(started.elapsed().as_secs() < 60, "the escaped process never became `sleep`");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
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
        let _cleanup = Reaped(mark.clone());
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
            assert!(started.elapsed().as_secs() < 60, "the sleeper never died");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(own_children().contains(&sleeper), "its zombie is ours");
        assert_eq!(kill_escaped(&mark, group), 0, "it never left the group");
        assert!(state().is_none(), "reaped");
    }

    /// Settled environments are read as they are: the run's mark, another's, or none at all
    /// (`env -i`), which is told from an exec half done by `/proc/<pid>/stat`.
    #[test]
    fn an_environment_is_read_once_its_program_has_started() {
        let spawn = |command: &mut Command| command.stdin(std::process::Stdio::piped()).spawn().expect("cat");
        let mut marked = spawn(Command::new("cat").env(MARK_VARIABLE, "this-run"));
        let mut other = spawn(Command::new("cat").env(MARK_VARIABLE, "another-run"));
        let mut empty = spawn(Command::new("cat").env_clear());
        for child in [&marked, &other, &empty] {
            // Until `cat` runs, the process may still be between programs.
            let comm = || std::fs::read_to_string(format!("/proc/{}/comm", child.id())).unwrap_or_default();
            let started = Instant::now();
            while comm().trim() != "cat" {
                assert!(started.elapsed().as_secs() < 10, "cat never started");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let wanted = format!("{MARK_VARIABLE}=this-run");
        let settled = |child: &std::process::Child| loop {
            match belongs(child.id() as i32, &wanted) {
                Belongs::NotYet => std::thread::sleep(std::time::Duration::from_millis(1)),
                answer => break answer,
            }
        };
        assert!(matches!(settled(&marked), Belongs::Yes));
        assert!(matches!(settled(&other), Belongs::No));
        assert!(matches!(settled(&empty), Belongs::Empty));
        for child in [&mut marked, &mut other, &mut empty] {
            drop(child.stdin.take());
            child.wait().expect("cat ends");
        }
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
