//! The few system calls the epoll loop makes per request, issued directly (rustix's raw Linux
//! backend) rather than through libc: glibc wraps `send`, `recv` and `epoll_wait` as thread
//! cancellation points, and that bookkeeping alone was a visible share of the loop's user time.
//! Errors come back as `std::io::Error`, so callers match on `io::ErrorKind` as usual.

use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::net::{self, sockopt, AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};
use rustix::time::Timespec;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// A non-blocking TCP socket (Nagle off); closed on drop, which also removes it from epoll.
pub struct Sock(OwnedFd);

/// Where a non-blocking connect stands.
pub enum Connect {
    Pending,
    Done,
    Failed,
}

impl Sock {
    /// Starts a non-blocking connect to `addr`.
    pub fn connect(addr: SocketAddr) -> io::Result<Sock> {
        let family = match addr {
            SocketAddr::V4(_) => AddressFamily::INET,
            SocketAddr::V6(_) => AddressFamily::INET6,
        };
        let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
        let fd = net::socket_with(family, SocketType::STREAM, flags, None)?;
        sockopt::set_tcp_nodelay(&fd, true)?;
        match net::connect(&fd, &addr) {
            Ok(()) | Err(rustix::io::Errno::INPROGRESS) => Ok(Sock(fd)),
            Err(e) => Err(e.into()),
        }
    }

    /// After the socket became ready: whether the connect went through.
    pub fn connect_state(&self) -> Connect {
        match (sockopt::socket_error(&self.0), net::getpeername(&self.0)) {
            (Ok(Ok(())), Ok(_)) => Connect::Done,
            (Ok(Ok(())), Err(rustix::io::Errno::NOTCONN)) => Connect::Pending,
            _ => Connect::Failed,
        }
    }

    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(net::recv(&self.0, buf, RecvFlags::empty())?.0)
    }

    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        Ok(net::send(&self.0, buf, SendFlags::NOSIGNAL)?)
    }
}

impl AsFd for Sock {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// An epoll instance; every descriptor is registered once, edge-triggered, under a token.
pub struct Epoll(OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        Ok(Epoll(epoll::create(CreateFlags::CLOEXEC)?))
    }

    /// Registers `fd` for readability (and writability when `write`) under `token`.
    pub fn add(&self, fd: impl AsFd, token: usize, write: bool) -> io::Result<()> {
        let mut flags = EventFlags::IN | EventFlags::RDHUP | EventFlags::ET;
        if write {
            flags |= EventFlags::OUT;
        }
        Ok(epoll::add(
            &self.0,
            fd,
            EventData::new_u64(token as u64),
            flags,
        )?)
    }

    /// Waits up to `timeout` (rounded up to a millisecond) and fills `events`.
    pub fn wait(&self, events: &mut Vec<Event>, timeout: Duration) -> io::Result<()> {
        events.clear();
        let ts = timespec(timeout);
        epoll::wait(&self.0, rustix::buffer::spare_capacity(events), Some(&ts))?;
        Ok(())
    }
}

/// A duration as the kernel's timespec (saturating at `i64::MAX` seconds).
pub fn timespec(d: Duration) -> Timespec {
    Timespec {
        tv_sec: d.as_secs().try_into().unwrap_or(i64::MAX),
        tv_nsec: d.subsec_nanos().into(),
    }
}

/// The token and writability of an event.
pub fn token_of(ev: &Event) -> (usize, bool) {
    let (data, flags) = (ev.data, ev.flags);
    (data.u64() as usize, flags.contains(EventFlags::OUT))
}
