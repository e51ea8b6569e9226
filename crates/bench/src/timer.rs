//! A one-shot timer on a timerfd, registered in the event loop beside the sockets, so an
//! open-loop schedule wakes the loop on time to the microsecond. epoll_wait's timeout only
//! has millisecond granularity: sleeping on it would make sends (and so the latencies
//! measured from their intended times) up to a millisecond late; spinning would burn a core.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

pub struct Timer {
    fd: OwnedFd,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        // SAFETY: plain syscall; a negative return is an error, else we own the new fd.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor owned by nobody else.
        Ok(Timer {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Fires once, `after` from now (at least 1 ns: zero would disarm it).
    pub fn arm(&self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: valid fd and a valid itimerspec; the old value is not requested.
        let r =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Consumes an expiry, so the next one raises a new edge.
    pub fn clear(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer; EAGAIN is fine.
        unsafe {
            libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len());
        }
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::unix::SourceFd;
    use mio::{Events, Interest, Poll, Token};
    use std::time::Instant;

    #[test]
    fn wakes_the_poll_sub_millisecond() {
        let mut poll = Poll::new().expect("poll");
        let t = Timer::new().expect("timerfd");
        poll.registry()
            .register(&mut SourceFd(&t.raw()), Token(0), Interest::READABLE)
            .expect("register");
        let mut events = Events::with_capacity(4);
        for _ in 0..3 {
            let start = Instant::now();
            t.arm(Duration::from_micros(300)).expect("arm");
            poll.poll(&mut events, Some(Duration::from_secs(2)))
                .expect("poll");
            let took = start.elapsed();
            assert!(events.iter().any(|e| e.token() == Token(0)));
            assert!(took >= Duration::from_micros(300), "{took:?}");
            assert!(took < Duration::from_millis(500), "{took:?}");
            t.clear();
        }
    }
}
