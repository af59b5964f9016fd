//! A nanosecond-precision wake-up for the epoll loop. `epoll_wait` timeouts are whole
//! milliseconds (rounded up), which would start open-model requests up to a millisecond or two
//! late; a `timerfd` in the same epoll set wakes the loop when the next request is due.

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A one-shot monotonic timer registered under its own token.
pub struct Alarm {
    fd: OwnedFd,
    armed: Option<Instant>,
}

impl Alarm {
    /// Creates the timer and registers it with `registry` under `token`.
    pub fn new(registry: &Registry, token: Token) -> io::Result<Alarm> {
        // SAFETY: timerfd_create has no memory-safety preconditions; the result is checked.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        Ok(Alarm { fd, armed: None })
    }

    /// Arms the timer to fire at `at` (unless it already is).
    pub fn set(&mut self, at: Instant, now: Instant) {
        if self.armed == Some(at) {
            return;
        }
        // A zero it_value would disarm the timer: fire after 1 ns instead.
        let d = at
            .saturating_duration_since(now)
            .max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: libc::c_long::from(d.subsec_nanos() as i32),
            },
        };
        // SAFETY: `spec` is a valid itimerspec; a null old-value pointer is allowed.
        if unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) }
            == 0
        {
            self.armed = Some(at);
        }
    }

    /// Consumes an expiry event.
    pub fn fired(&mut self) {
        let mut count = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer from our own descriptor.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), count.as_mut_ptr().cast(), count.len()) };
        self.armed = None;
    }
}
