//! The Server-Sent Events efficiency ceiling on a given machine: a closed-loop client that does
//! nothing but what every reader of an event stream must (send the request; read the head and
//! its Content-Length; split the body into lines, a blank one told by its first byte, and count
//! the blank ones, the events) and
//! measures nothing: an edge-triggered epoll loop, like brink's HTTP/1.1 one. `bench/sse.sh`
//! runs it beside brink against the same server: its events per CPU-second bound what any
//! generator can reach there.
//!
//! `cargo run --release -p engine --example sse_ceiling -- CONNS SECONDS ADDR PATH`
//! ADDR must be a loopback address; the loop stops after SECONDS.

use std::error::Error;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

const BUF: usize = 64 * 1024;

fn main() {
    if let Err(e) = run() {
        eprintln!("sse_ceiling: {e}");
        std::process::exit(2);
    }
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [conns, secs, addr, path] = args.as_slice() else {
        return Err("usage: sse_ceiling CONNS SECONDS LOOPBACK-ADDR PATH".into());
    };
    let addr: SocketAddr = addr.parse()?;
    if !addr.ip().is_loopback() {
        return Err(format!("{addr} is not a loopback address").into());
    }
    let run = Duration::from_secs(secs.parse::<u64>()?.min(600));
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();
    let socks = (0..conns.parse::<usize>()?)
        .map(|_| TcpStream::connect(addr))
        .collect::<Result<Vec<_>, _>>()?;
    let (events, answers) = epoll_loop(&socks, &req, run)?;
    println!("{events} events in {answers} answers");
    Ok(())
}

/// One connection's answer being read.
#[derive(Default)]
struct Answer {
    /// Body bytes still to come; `None` while the head is being read.
    left: Option<usize>,
    head: Vec<u8>,
    /// The current line is not empty (a blank line ends an event).
    in_line: bool,
}

impl Answer {
    /// Reads `bytes`; the events they complete, and whether the answer is over.
    fn feed(&mut self, mut bytes: &[u8]) -> Res<(u64, bool)> {
        if self.left.is_none() {
            if self.head.is_empty() {
                // The whole head in this read (as it nearly always is): no copy of the body.
                if let Some(end) = memchr::memmem::find(bytes, b"\r\n\r\n") {
                    self.left = Some(length(&bytes[..end])?);
                    return self.body(&bytes[end + 4..]);
                }
            }
            self.head.extend_from_slice(bytes);
            let Some(end) = self.head.windows(4).position(|w| w == b"\r\n\r\n") else {
                return Ok((0, false));
            };
            let len = length(&self.head[..end])?;
            let rest = self.head.split_off(end + 4);
            self.head.clear();
            self.left = Some(len);
            return self.body(&rest);
        }

        let left = self.left.unwrap_or(0);
        if bytes.len() > left {
            bytes = &bytes[..left];
        }
        self.body(bytes)
    }

    fn body(&mut self, bytes: &[u8]) -> Res<(u64, bool)> {
        let mut events = 0;
        let mut at = 0;
        if self.in_line {
            match memchr::memchr(b'\n', bytes) {
                Some(end) => at = end + 1,
                None => at = bytes.len(),
            }
            self.in_line = at == bytes.len() && bytes.last() != Some(&b'\n');
        }
        // A blank line is told by its first byte; any other line is searched for its end.
        while let Some(&first) = bytes.get(at) {
            if first == b'\n' {
                events += 1;
                at += 1;
                continue;
            }
            match memchr::memchr(b'\n', &bytes[at..]) {
                Some(off) => at += off + 1,
                None => {
                    self.in_line = true;
                    at = bytes.len();
                }
            }
        }
        let left = self.left.unwrap_or(0) - bytes.len();
        self.left = Some(left);
        if left == 0 {
            *self = Answer::default();
            return Ok((events, true));
        }
        Ok((events, false))
    }
}

/// The Content-Length of a head.
fn length(head: &[u8]) -> Res<usize> {
    let head = std::str::from_utf8(head)?;
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .ok_or_else(|| "an answer without Content-Length".into())
}

fn epoll_loop(socks: &[TcpStream], req: &[u8], run: Duration) -> Res<(u64, u64)> {
    use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
    use rustix::net::{recv, send, RecvFlags, SendFlags};
    let ep = epoll::create(CreateFlags::CLOEXEC)?;
    for (i, s) in socks.iter().enumerate() {
        s.set_nonblocking(true)?;
        let flags = EventFlags::IN | EventFlags::ET;
        epoll::add(&ep, s, EventData::new_u64(i as u64), flags)?;
        send(s, req, SendFlags::NOSIGNAL)?;
    }
    let mut buf = vec![0u8; BUF];
    let mut answers: Vec<Answer> = socks.iter().map(|_| Answer::default()).collect();
    let (mut events, mut done) = (0u64, 0u64);
    let end = Instant::now() + run;
    let mut ready = Vec::with_capacity(1024);
    let tick = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 10_000_000,
    };
    while Instant::now() < end {
        ready.clear();
        epoll::wait(&ep, rustix::buffer::spare_capacity(&mut ready), Some(&tick))?;
        for ev in &ready {
            let i = ev.data.u64() as usize;
            loop {
                let (k, _) = match recv(&socks[i], &mut buf, RecvFlags::empty()) {
                    Err(rustix::io::Errno::AGAIN) => break,
                    r => r?,
                };
                if k == 0 {
                    return Err("server closed a connection".into());
                }
                let (n, over) = answers[i].feed(&buf[..k])?;
                events += n;
                if over {
                    done += 1;
                    send(&socks[i], req, SendFlags::NOSIGNAL)?;
                }
            }
        }
    }
    Ok((events, done))
}
