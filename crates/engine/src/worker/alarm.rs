//! A nanosecond-precision wake-up for both workers. `epoll_wait` timeouts, and so tokio's
//! timers, are whole milliseconds (rounded up), which would start open-model requests up to a
//! millisecond or two late; a `timerfd` wakes the loop when the next request is due: in the
//! epoll worker's own epoll set ([`Alarm`]), or in tokio's reactor ([`AsyncAlarm`]).

use super::sys::{timespec, Epoll};
use rustix::fd::OwnedFd;
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
    Timespec,
};
use std::io;
use std::time::{Duration, Instant};

/// The least time between two wake-ups for the schedule. Arrivals closer together go out in
/// one wake-up (each a little after its instant, well within the late threshold, and timed from
/// its send): a wake-up per arrival at 20,000/s costs more CPU than the requests. At 250 µs,
/// 0.3% of requests start late at 20,000/s over h2c and a request costs 1.4x the CPU of tokio's
/// 1 ms timer, which started half of them late; 100 µs costs 1.9x, 500 µs brings the late share
/// near 1% (bench/punctual.sh).
pub const WAKE_GAP: Duration = Duration::from_micros(250);

/// A one-shot monotonic timer registered under its own token.
pub struct Alarm {
    fd: OwnedFd,
    armed: Option<Instant>,
    fired: Option<Instant>,
}

impl Alarm {
    /// Creates the timer and registers it with `epoll` under `token`.
    pub fn new(epoll: &Epoll, token: usize) -> io::Result<Alarm> {
        let fd = timer()?;
        epoll.add(&fd, token, false)?;
        Ok(Alarm {
            fd,
            armed: None,
            fired: None,
        })
    }

    /// Arms the timer to fire at `at`, or [`WAKE_GAP`] after it last fired if that is later
    /// (unless it already is armed so).
    pub fn set(&mut self, at: Instant, now: Instant) {
        let at = self.fired.map_or(at, |f| at.max(f + WAKE_GAP));
        if self.armed == Some(at) {
            return;
        }
        if arm(&self.fd, at, now).is_ok() {
            self.armed = Some(at);
        }
    }

    /// Consumes an expiry event.
    pub fn fired(&mut self) {
        let _ = drain(&self.fd);
        self.armed = None;
        self.fired = Some(Instant::now());
    }
}

fn timer() -> io::Result<OwnedFd> {
    let flags = TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC;
    Ok(timerfd_create(TimerfdClockId::Monotonic, flags)?)
}

/// Arms `fd` to fire once at `at`.
fn arm(fd: &OwnedFd, at: Instant, now: Instant) -> io::Result<()> {
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
    timerfd_settime(fd, TimerfdTimerFlags::empty(), &spec)?;
    Ok(())
}

/// Reads the expiry count; `WouldBlock` when the timer has not fired.
fn drain(fd: &OwnedFd) -> io::Result<()> {
    let mut count = [0u8; 8];
    rustix::io::read(fd, &mut count)?;
    Ok(())
}

/// The timer in tokio's reactor: [`AsyncAlarm::sleep_until`] is a precise `sleep_until`.
pub struct AsyncAlarm {
    fd: tokio::io::unix::AsyncFd<OwnedFd>,
}

impl AsyncAlarm {
    /// Needs a tokio runtime with I/O enabled.
    pub fn new() -> io::Result<AsyncAlarm> {
        let interest = tokio::io::Interest::READABLE;
        // SAFETY: the `OwnedFd` is moved into the `AsyncFd` and owned by it until it drops,
        // so its descriptor stays open and the same for the `AsyncFd`'s whole life.
        let fd = unsafe { tokio::io::unix::AsyncFd::register_with_interest(timer()?, interest) };
        Ok(AsyncAlarm {
            fd: fd.map_err(|e| io::Error::other(e.to_string()))?,
        })
    }

    /// Resolves at `at`, to within the kernel's wake-up latency; at once if it has passed.
    pub async fn sleep_until(&self, at: Instant) {
        let now = Instant::now();
        if at <= now {
            return;
        }
        if arm(self.fd.get_ref(), at, now).is_err() {
            return tokio::time::sleep_until(at.into()).await;
        }
        loop {
            let Ok(mut ready) = self.fd.readable().await else {
                return tokio::time::sleep_until(at.into()).await;
            };
            // Fired or not, the timer is not readable now: the next wait starts clean.
            let fired = drain(ready.get_inner());
            ready.clear_ready();
            if !matches!(&fired, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
                return;
            }
        }
    }
}
