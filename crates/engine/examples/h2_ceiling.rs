//! The HTTP/2 efficiency ceiling on a given machine: a closed-loop h2c client that does only
//! what any HTTP/2 client must (the preface and SETTINGS, a precomputed HEADERS frame per
//! request, reading frames, answering SETTINGS and PING, spotting END_STREAM) over an
//! edge-triggered epoll loop, and measures nothing; it skips HPACK decoding, which a real client
//! cannot. `bench/h2.sh` runs it beside brink and h2load: its requests per CPU-second bound
//! what a generator can reach against the same server.
//!
//! `cargo run --release -p engine --example h2_ceiling -- CONNS STREAMS SECONDS [ADDR]`
//! ADDR must be a loopback address (default 127.0.0.1:18097, the bench h2c nginx); the loop
//! stops after SECONDS.

use rustix::event::epoll;
use std::error::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn Error>>;

fn main() {
    if let Err(e) = run() {
        eprintln!("h2_ceiling: {e}");
        std::process::exit(2);
    }
}

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len();
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// One connection: its socket, unparsed input, the next stream id, and output to send.
struct Conn {
    sock: TcpStream,
    input: Vec<u8>,
    next: u32,
    out: Vec<u8>,
}

impl Conn {
    fn request(&mut self, block: &[u8]) {
        frame(&mut self.out, 1, 0x5, self.next, block);
        self.next += 2;
    }

    /// Handles the whole frames in `input`; how many responses ended.
    fn frames(&mut self) -> u64 {
        let mut at = 0;
        let mut done = 0;
        while self.input.len() - at >= 9 {
            let h = &self.input[at..at + 9];
            let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
            let (kind, flags) = (h[3], h[4]);
            let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
            if self.input.len() - at < 9 + len {
                break;
            }
            let payload = self.input[at + 9..at + 9 + len].to_vec();
            match kind {
                4 if flags & 1 == 0 => frame(&mut self.out, 4, 1, 0, &[]),
                6 if flags & 1 == 0 => frame(&mut self.out, 6, 1, 0, &payload),
                0 | 1 if flags & 1 != 0 && stream % 2 == 1 => done += 1,
                _ => {}
            }
            at += 9 + len;
        }
        self.input.drain(..at);
        done
    }
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: h2_ceiling CONNS STREAMS SECONDS [LOOPBACK-ADDR]";
    let [conns, streams, secs, rest @ ..] = args.as_slice() else {
        return Err(usage.into());
    };
    let addr: SocketAddr = rest.first().map_or("127.0.0.1:18097", |s| s).parse()?;
    if !addr.ip().is_loopback() {
        return Err(format!("{addr} is not a loopback address").into());
    }
    let (conns, streams): (usize, usize) = (conns.parse()?, streams.parse()?);
    let run = Duration::from_secs(secs.parse::<u64>()?.min(600));
    // :method GET, :scheme http, :path /, :authority ADDR (literal, static name).
    let mut block = vec![0x82, 0x86, 0x84, 0x01];
    let authority = addr.to_string();
    block.push(authority.len() as u8);
    block.extend_from_slice(authority.as_bytes());
    let poll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
    let mut all = Vec::new();
    for i in 0..conns {
        let sock = TcpStream::connect(addr)?;
        sock.set_nodelay(true)?;
        let mut c = Conn {
            sock,
            input: Vec::new(),
            next: 1,
            out: b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
        };
        frame(&mut c.out, 4, 0, 0, &[0, 4, 0x7f, 0xff, 0xff, 0xff]);
        frame(&mut c.out, 8, 0, 0, &0x7fff_0000u32.to_be_bytes());
        for _ in 0..streams {
            c.request(&block);
        }
        c.sock.write_all(&c.out)?;
        c.out.clear();
        c.sock.set_nonblocking(true)?;
        let flags = epoll::EventFlags::IN | epoll::EventFlags::ET;
        epoll::add(&poll, &c.sock, epoll::EventData::new_u64(i as u64), flags)?;
        all.push(c);
    }
    let end = Instant::now() + run;
    let mut total = 0u64;
    let mut buf = vec![0u8; 64 << 10];
    let mut events = Vec::with_capacity(1024);
    while Instant::now() < end {
        events.clear();
        epoll::wait(
            &poll,
            rustix::buffer::spare_capacity(&mut events),
            Some(&rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            }),
        )?;
        for ev in &events {
            let c = &mut all[ev.data.u64() as usize];
            loop {
                match c.sock.read(&mut buf) {
                    Ok(0) => return Err("the server closed a connection".into()),
                    Ok(n) => c.input.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e.into()),
                }
            }
            let done = c.frames();
            total += done;
            for _ in 0..done {
                c.request(&block);
            }
            let mut sent = 0;
            while sent < c.out.len() {
                match c.sock.write(&c.out[sent..]) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        // Rare: the socket buffer is full; finish blocking.
                        c.sock.set_nonblocking(false)?;
                        c.sock.write_all(&c.out[sent..])?;
                        c.sock.set_nonblocking(true)?;
                        sent = c.out.len();
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            c.out.clear();
        }
    }
    println!("{total}");
    Ok(())
}
