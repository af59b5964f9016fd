//! The WebSocket efficiency ceiling on a given machine: a closed-loop echo client that does
//! nothing but what every WebSocket client must (upgrade once; then per message frame it,
//! mask it, send it, and find the end of the answer's frame) and measures nothing: an
//! edge-triggered epoll loop, like brink's HTTP/1.1 one. `bench/ws.sh` runs it beside brink
//! against the same echo server: its messages per CPU-second bound what any generator can
//! reach there.
//!
//! `cargo run --release -p engine --example ws_ceiling -- CONNS SECONDS ADDR`
//! ADDR must be a loopback address; the loop stops after SECONDS.

use std::error::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

const BUF: usize = 4096;
const MESSAGE: &[u8] = b"hello";

fn main() {
    if let Err(e) = run() {
        eprintln!("ws_ceiling: {e}");
        std::process::exit(2);
    }
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [conns, secs, addr] = args.as_slice() else {
        return Err("usage: ws_ceiling CONNS SECONDS LOOPBACK-ADDR".into());
    };
    let addr: SocketAddr = addr.parse()?;
    if !addr.ip().is_loopback() {
        return Err(format!("{addr} is not a loopback address").into());
    }
    let run = Duration::from_secs(secs.parse::<u64>()?.min(600));
    let socks = (0..conns.parse::<usize>()?)
        .map(|_| upgrade(addr))
        .collect::<Res<Vec<_>>>()?;
    println!("{} messages", epoll_loop(&socks, run)?);
    Ok(())
}

/// A connection upgraded with a fixed key (this loop checks nothing it need not).
fn upgrade(addr: SocketAddr) -> Res<TcpStream> {
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    let req = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    s.write_all(req.as_bytes())?;
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut b)? == 0 {
            return Err("closed during the upgrade".into());
        }
        head.push(b[0]);
    }
    if !head.starts_with(b"HTTP/1.1 101") {
        return Err("upgrade refused".into());
    }
    Ok(s)
}

/// A masked text frame of [`MESSAGE`] under a key that changes per message.
fn frame(out: &mut Vec<u8>, n: u64) {
    let key = (n as u32).wrapping_mul(0x9E37_79B9).to_ne_bytes();
    out.clear();
    out.extend_from_slice(&[0x81, 0x80 | MESSAGE.len() as u8]);
    out.extend_from_slice(&key);
    out.extend(MESSAGE.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
}

/// The length of the whole server frame at the start of `buf`, once it is all there.
fn whole(buf: &[u8]) -> Option<usize> {
    let (len, at) = match *buf.get(1)? & 0x7F {
        126 => (u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]) as usize, 4),
        127 => return None,
        n => (n as usize, 2),
    };
    (buf.len() >= at + len).then_some(at + len)
}

fn epoll_loop(socks: &[TcpStream], run: Duration) -> Res<u64> {
    use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
    use rustix::net::{recv, send, RecvFlags, SendFlags};
    let ep = epoll::create(CreateFlags::CLOEXEC)?;
    let mut out = Vec::with_capacity(64);
    let mut n = 0u64;
    for (i, s) in socks.iter().enumerate() {
        s.set_nonblocking(true)?;
        let flags = EventFlags::IN | EventFlags::OUT | EventFlags::ET;
        epoll::add(&ep, s, EventData::new_u64(i as u64), flags)?;
        frame(&mut out, n);
        send(s, &out, SendFlags::NOSIGNAL)?;
    }
    let mut bufs = vec![vec![0u8; BUF]; socks.len()];
    let mut fill = vec![0usize; socks.len()];
    let end = Instant::now() + run;
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
            let i = ev.data.u64() as usize;
            loop {
                let (k, _) = match recv(&socks[i], &mut bufs[i][fill[i]..], RecvFlags::empty()) {
                    Err(rustix::io::Errno::AGAIN) => break,
                    r => r?,
                };
                if k == 0 {
                    return Err("server closed a connection".into());
                }
                fill[i] += k;
                if let Some(len) = whole(&bufs[i][..fill[i]]) {
                    n += 1;
                    bufs[i].copy_within(len..fill[i], 0);
                    fill[i] -= len;
                    frame(&mut out, n);
                    send(&socks[i], &out, SendFlags::NOSIGNAL)?;
                    break;
                }
            }
        }
    }
    Ok(n)
}
