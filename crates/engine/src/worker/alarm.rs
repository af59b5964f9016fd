//! A nanosecond-precision wake-up for the epoll loop. `epoll_wait` timeouts are whole
//! milliseconds (rounded up), which would start open-model requests up to a millisecond or two
//! late; a `timerfd` in the same epoll set wakes the loop when the next request is due.

use super::sys::{timespec, Epoll};
use rustix::fd::OwnedFd;
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
    Timespec,
};
use std::io;
use std::time::{Duration, Instant};

/// A one-shot monotonic timer registered under its own token.
pub struct Alarm {
    fd: OwnedFd,
    armed: Option<Instant>,
}

impl Alarm {
    /// Creates the timer and registers it with `epoll` under `token`.
    pub fn new(epoll: &Epoll, token: usize) -> io::Result<Alarm> {
        let flags = TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC;
        let fd = timerfd_create(TimerfdClockId::Monotonic, flags)?;
        epoll.add(&fd, token, false)?;
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
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: timespec(d),
        };
        if timerfd_settime(&self.fd, TimerfdTimerFlags::empty(), &spec).is_ok() {
            self.armed = Some(at);
        }
    }

    /// Consumes an expiry event.
    pub fn fired(&mut self) {
        let mut count = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut count);
        self.armed = None;
    }
}
