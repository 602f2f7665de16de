//! Waiting for a line without being deaf to Ctrl+C: `poll` the descriptor for 50 ms at a
//! time, look at a stop condition between waits, and `read` only once the kernel says the
//! read will not block. The type-ahead reader (this chapter) and the permission question
//! (chapter 12) both wait this way, so it is written once; the C calls and their constants
//! come from the `libc` crate, whose values are right on every platform.

use std::io;

/// What one [`read_when_ready`] gave.
#[derive(Debug, PartialEq)]
pub(crate) enum Ready {
    /// `n` bytes were read into the buffer.
    Bytes(usize),
    /// A read of nothing: the end of a pipe, or Ctrl+D on an empty terminal line.
    /// `hung_up` says the other side is gone for good (not a Ctrl+D).
    End { hung_up: bool },
    /// `stop()` said so before anything arrived.
    Stopped,
    /// The descriptor failed (other than by a signal arriving).
    Failed,
}

/// Waits until `fd` has something to read, asking `stop()` every 50 ms, then reads once into
/// `buffer`. In a cooked-mode terminal `poll` says "readable" only once a whole line is
/// there, so the read does not block. A signal (`EINTR`) is not a failure: it waits again.
pub(crate) fn read_when_ready(fd: i32, buffer: &mut [u8], stop: impl Fn() -> bool) -> Ready {
    loop {
        if stop() {
            return Ready::Stopped;
        }
        let mut poll_fd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, and we say so.
        if unsafe { libc::poll(&mut poll_fd, 1, 50) } <= 0 {
            continue; // nothing yet, or EINTR from a signal: look at `stop` again
        }
        // SAFETY: the buffer is valid for its length.
        let count = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
        match count {
            n if n > 0 => return Ready::Bytes(n as usize),
            0 => return Ready::End { hung_up: poll_fd.revents & (libc::POLLHUP | libc::POLLERR) != 0 },
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
            _ => return Ready::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn bytes_then_the_end_of_a_closed_pipe_and_a_stop_before_anything() {
        let (reader, mut writer) = io::pipe().unwrap();
        let mut buffer = [0u8; 16];
        assert_eq!(read_when_ready(reader.as_raw_fd(), &mut buffer, || true), Ready::Stopped);
        writer.write_all(b"hi\n").unwrap();
        assert_eq!(read_when_ready(reader.as_raw_fd(), &mut buffer, || false), Ready::Bytes(3));
        assert_eq!(&buffer[..3], b"hi\n");
        drop(writer);
        assert_eq!(read_when_ready(reader.as_raw_fd(), &mut buffer, || false), Ready::End { hung_up: true });
    }
}
