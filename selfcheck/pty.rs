//! The agent on a real pseudo-terminal, as a person meets it: the test types on the master
//! side and reads what the terminal shows. The agent gets the terminal as its *controlling*
//! terminal (a new session, `TIOCSCTTY`), so a typed `^C` is a SIGINT from the kernel.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a wait for the screen may take before the test fails: a hang guard, far above the
/// second or so a step takes on a busy machine, never a measure.
pub const SCREEN_TIMEOUT: Duration = Duration::from_secs(60);

/// The REPL running on a pseudo-terminal: the test types on the master side and reads
/// what the terminal shows.
pub struct Terminal {
    keyboard: File,
    shown: Arc<Mutex<String>>,
    /// How far the screen has been read by `wait_for`.
    seen: usize,
    child: Child,
    /// The thread that copies the terminal's output into `shown`; it ends once the agent has
    /// exited and the terminal is closed.
    reader: std::thread::JoinHandle<()>,
}

impl Terminal {
    pub fn start(root: &Path, args: &[&str]) -> Terminal {
        Terminal::start_with_term(root, args, "dumb")
    }

    /// `term` is `TERM`: "dumb" makes the line editor read plain lines; a real terminal
    /// type gives its raw-mode editing.
    pub fn start_with_term(root: &Path, args: &[&str], term: &str) -> Terminal {
        Terminal::start_with_env(root, args, &[("TERM", term)])
    }

    /// With extra environment variables (`TERM` among them, else "dumb"); an empty value
    /// removes the variable (`("NO_COLOR", "")` gives colour).
    pub fn start_with_env(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Terminal {
        let (mut master, mut slave) = (-1, -1);
        // SAFETY: two valid out-pointers; null name, termios and size are allowed.
        let opened = unsafe {
            libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null())
        };
        assert_eq!(opened, 0, "openpty failed");
        // SAFETY: openpty just returned these two descriptors, owned by nobody else.
        let (master, slave) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let slave_io = || Stdio::from(slave.try_clone().expect("dup the pty"));
        let mut command = crate::harness::agent_command(root);
        command.args(args).env("TERM", "dumb").stdin(slave_io()).stdout(slave_io()).stderr(slave_io());
        for (name, value) in env {
            if value.is_empty() {
                command.env_remove(name);
            } else {
                command.env(name, value);
            }
        }
        // SAFETY: between fork and exec only async-signal-safe calls: setsid and ioctl on
        // fd 0, which is the terminal by then.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("start mini-agent on the terminal");
        drop(slave);
        let keyboard = master.try_clone().expect("dup the master");
        let shown = Arc::new(Mutex::new(String::new()));
        let (mut screen, sink) = (master, shown.clone());
        let reader = std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // Ends with EIO once the agent (the last holder of the terminal) has exited.
            while let Ok(count) = screen.read(&mut buffer) {
                if count == 0 {
                    break;
                }
                sink.lock().expect("screen lock").push_str(&String::from_utf8_lossy(&buffer[..count]));
            }
        });
        Terminal { keyboard, shown, seen: 0, child, reader }
    }

    /// The agent's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn screen(&self) -> String {
        self.shown.lock().expect("screen lock").clone()
    }

    /// Waits until `needle` appears after what was already seen, and moves past it.
    /// Returns when it was seen.
    pub fn wait_for(&mut self, needle: &str) -> Instant {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if let Some(at) = screen.get(self.seen..).and_then(|rest| rest.find(needle)) {
                self.seen += at + needle.len();
                return Instant::now();
            }
            assert!(
                started.elapsed() < SCREEN_TIMEOUT,
                "never saw {needle:?} after:\n{}",
                &screen[self.seen..]
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    pub fn type_keys(&mut self, keys: &str) {
        self.keyboard.write_all(keys.as_bytes()).expect("type on the terminal");
    }

    /// Types `line` and Enter while a turn runs, and waits until the agent has read it: its
    /// echo is on the screen (the terminal has taken the line in) and the terminal holds no
    /// unread input. Then the turn may go on: a fixed nap instead lost the line under load.
    #[allow(dead_code)] // used by the selfcheck target only
    pub fn type_line_and_wait_until_read(&mut self, line: &str) {
        self.type_keys(&format!("{line}\r"));
        self.wait_for(line);
        let started = Instant::now();
        while self.unread_input() > 0 {
            assert!(started.elapsed() < SCREEN_TIMEOUT, "the agent never read {line:?}:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Bytes typed that the agent has not read yet (`FIONREAD` on its terminal).
    fn unread_input(&self) -> i32 {
        use std::os::fd::AsRawFd;
        let terminal = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
            .open(format!("/proc/{}/fd/0", self.pid()))
            .expect("open the agent's terminal");
        let mut unread: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int, which `unread` is.
        let done = unsafe { libc::ioctl(terminal.as_raw_fd(), libc::FIONREAD, &mut unread) };
        assert_eq!(done, 0, "FIONREAD on the agent's terminal");
        unread
    }

    /// Resizes the window, as a person dragging its corner: the agent reads the new width.
    pub fn resize(&mut self, columns: u16, rows: u16) {
        use std::os::fd::AsRawFd;
        let size = libc::winsize { ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: TIOCSWINSZ reads one struct winsize, which `size` is.
        let done = unsafe { libc::ioctl(self.keyboard.as_raw_fd(), libc::TIOCSWINSZ, &size) };
        assert_eq!(done, 0, "resize the terminal");
    }

    /// Waits for the agent to exit by itself; returns its exit code and the whole screen.
    pub fn wait_exit(mut self) -> (Option<i32>, String) {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for mini-agent") {
                break status;
            }
            assert!(started.elapsed() < SCREEN_TIMEOUT, "mini-agent did not exit:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(5));
        };
        self.drain();
        (status.code(), self.screen())
    }

    /// After the agent exited: waits for the reader thread to copy the last bytes and end
    /// (at the terminal's close), so the screen is complete. A fixed short sleep lost the whole
    /// screen on a busy machine; the guard is only for a process that kept the terminal open.
    fn drain(&self) {
        let started = Instant::now();
        while !self.reader.is_finished() && started.elapsed() < SCREEN_TIMEOUT {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits for the agent to exit (however it ends) and returns how it did.
    #[allow(dead_code)] // used by the red-team target only
    pub fn exit_status(&mut self) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for mini-agent") {
                return status;
            }
            assert!(started.elapsed() < SCREEN_TIMEOUT, "mini-agent did not exit:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether the terminal is in its normal line mode (canonical, echoing), not raw mode.
    #[allow(dead_code)] // used by the red-team target only
    pub fn is_cooked(&self) -> bool {
        use std::os::fd::AsRawFd;
        // SAFETY: tcgetattr fills a termios we own from a descriptor we own.
        let mut settings: libc::termios = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::tcgetattr(self.keyboard.as_raw_fd(), &mut settings) }, 0, "tcgetattr");
        settings.c_lflag & libc::ICANON != 0 && settings.c_lflag & libc::ECHO != 0
    }

    /// Types `/exit` at the prompt and expects a clean exit.
    pub fn exit(mut self) -> String {
        self.type_keys("/exit\r");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for mini-agent") {
                break status;
            }
            if started.elapsed() > SCREEN_TIMEOUT {
                let _ = self.child.kill();
                panic!("mini-agent did not exit after /exit:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        self.drain();
        assert!(status.success(), "{status:?}\n{}", self.screen());
        self.screen()
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // A failed test must not leave an agent behind; after `exit` this is a no-op.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
