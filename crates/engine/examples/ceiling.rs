//! The efficiency ceiling on a given machine: a closed-loop HTTP/1.1 GET client that does
//! nothing but the I/O any client must do (send the request, receive the response, spot its
//! end) and measures nothing, in two shapes: an edge-triggered epoll loop, like brink's, and an
//! io_uring loop (one `io_uring_enter` per batch, registered descriptors, deferred task work).
//! `bench/ceiling.sh` runs both beside brink and wrk: the requests per CPU-second of these loops
//! bound what any generator design can reach against the same server, so brink's distance to
//! them is its real overhead.
//!
//! `cargo run --release -p engine --example ceiling -- epoll|uring CONNS SECONDS [ADDR]`
//! ADDR must be a loopback address (default 127.0.0.1:18081, the bench nginx); the loop stops
//! after SECONDS.

use std::error::Error;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

const BUF: usize = 4096;

fn main() {
    if let Err(e) = run() {
        eprintln!("ceiling: {e}");
        std::process::exit(2);
    }
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: ceiling epoll|uring CONNS SECONDS [LOOPBACK-ADDR]";
    let [mode, conns, secs, rest @ ..] = args.as_slice() else {
        return Err(usage.into());
    };
    let addr: SocketAddr = rest.first().map_or("127.0.0.1:18081", |s| s).parse()?;
    if !addr.ip().is_loopback() {
        return Err(format!("{addr} is not a loopback address").into());
    }
    let secs: u64 = secs.parse()?;
    let run = Duration::from_secs(secs.min(600));
    let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();
    let socks = (0..conns.parse::<usize>()?)
        .map(|_| {
            let s = TcpStream::connect(addr)?;
            s.set_nodelay(true)?;
            Ok(s)
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let n = match mode.as_str() {
        "epoll" => epoll_loop(&socks, &request, run)?,
        "uring" => uring_loop(&socks, &request, run)?,
        _ => return Err(usage.into()),
    };
    println!("{n} requests");
    Ok(())
}

/// Whether `buf` holds a whole response (head, then a Content-Length body).
fn complete(buf: &[u8]) -> Res<bool> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(false);
    };
    let head = std::str::from_utf8(&buf[..end])?;
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .ok_or("response without Content-Length")?;
    Ok(buf.len() >= end + 4 + length)
}

fn epoll_loop(socks: &[TcpStream], request: &[u8], run: Duration) -> Res<u64> {
    use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
    use rustix::net::{recv, send, RecvFlags, SendFlags};
    let ep = epoll::create(CreateFlags::CLOEXEC)?;
    for (i, s) in socks.iter().enumerate() {
        s.set_nonblocking(true)?;
        let flags = EventFlags::IN | EventFlags::OUT | EventFlags::ET;
        epoll::add(&ep, s, EventData::new_u64(i as u64), flags)?;
        send(s, request, SendFlags::NOSIGNAL)?;
    }
    let mut bufs = vec![vec![0u8; BUF]; socks.len()];
    let mut fill = vec![0usize; socks.len()];
    let (end, mut n) = (Instant::now() + run, 0u64);
    let mut events = Vec::with_capacity(1024);
    let tick = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 10_000_000,
    };
    while Instant::now() < end {
        events.clear();
        epoll::wait(
            &ep,
            rustix::buffer::spare_capacity(&mut events),
            Some(&tick),
        )?;
        for ev in &events {
            let data = ev.data;
            let i = data.u64() as usize;
            loop {
                let (k, _) = match recv(&socks[i], &mut bufs[i][fill[i]..], RecvFlags::empty()) {
                    Err(rustix::io::Errno::AGAIN) => break,
                    r => r?,
                };
                if k == 0 {
                    return Err("server closed a connection".into());
                }
                fill[i] += k;
                if complete(&bufs[i][..fill[i]])? {
                    n += 1;
                    fill[i] = 0;
                    send(&socks[i], request, SendFlags::NOSIGNAL)?;
                    break;
                }
            }
        }
    }
    Ok(n)
}

fn uring_loop(socks: &[TcpStream], request: &[u8], run: Duration) -> Res<u64> {
    use io_uring::{opcode, types, IoUring};
    use rustix::io::Errno;
    const SEND: u64 = 1 << 32;
    // A wait that timed out or was interrupted is not an error.
    let benign = [Errno::TIME, Errno::INTR].map(|e| Some(e.raw_os_error()));
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_coop_taskrun()
        .build(1024)?;
    let fds: Vec<i32> = socks.iter().map(|s| s.as_raw_fd()).collect();
    ring.submitter().register_files(&fds)?;
    let mut bufs = vec![vec![0u8; BUF]; socks.len()];
    let mut fill = vec![0usize; socks.len()];
    // Queues (a send and) a receive into the free tail of connection i's buffer.
    let queue = |ring: &mut IoUring, i: usize, buf: &mut [u8], with_send: bool| -> Res<()> {
        let fd = types::Fixed(i as u32);
        let mut sq = ring.submission();
        if with_send {
            let e = opcode::Send::new(fd, request.as_ptr(), request.len() as u32).build();
            // SAFETY: `request` outlives the ring's use of it (the loop ends before it drops).
            unsafe { sq.push(&e.user_data(SEND | i as u64)) }?;
        }
        let e = opcode::Recv::new(fd, buf.as_mut_ptr(), buf.len() as u32).build();
        // SAFETY: each buffer has at most one receive in flight and outlives the ring.
        unsafe { sq.push(&e.user_data(i as u64)) }?;
        Ok(())
    };
    for (i, buf) in bufs.iter_mut().enumerate() {
        queue(&mut ring, i, buf, true)?;
    }
    let (end, mut n) = (Instant::now() + run, 0u64);
    let tick = types::Timespec::new().nsec(10_000_000);
    let wait = types::SubmitArgs::new().timespec(&tick);
    let mut done = Vec::with_capacity(1024);
    while Instant::now() < end {
        match ring.submitter().submit_with_args(1, &wait) {
            Err(e) if !benign.contains(&e.raw_os_error()) => return Err(e.into()),
            _ => {}
        }
        done.clear();
        done.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        for &(tag, res) in &done {
            if res <= 0 {
                return Err(format!("operation {tag:#x} failed: {res}").into());
            }
            if tag & SEND != 0 {
                continue;
            }
            let i = tag as usize;
            fill[i] += res as usize;
            let whole = complete(&bufs[i][..fill[i]])?;
            if whole {
                n += 1;
                fill[i] = 0;
            }
            queue(&mut ring, i, &mut bufs[i][fill[i]..], whole)?;
        }
    }
    Ok(n)
}
