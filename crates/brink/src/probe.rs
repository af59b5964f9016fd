//! The health probe of a capacity search: one bounded `GET` that says whether the service still
//! answers. Any HTTP status counts as an answer (a 503 from a live server is not "stuck"); no
//! answer within the timeout is. Plain `http://` speaks HTTP/1.1; for `https://` a completed TCP
//! connect is the answer (enough to tell a dead listener from a live one).

use engine::Target;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Whether `target` answers within `timeout`.
pub fn answers(target: &Target, timeout: Duration) -> bool {
    let Ok(addr) = target.resolve() else {
        return false;
    };
    let Ok(mut s) = TcpStream::connect_timeout(&addr, timeout) else {
        return false;
    };
    if target.tls {
        return true;
    }
    let _ = s.set_read_timeout(Some(timeout));
    let _ = s.set_write_timeout(Some(timeout));
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: brink-probe\r\nConnection: close\r\n\r\n",
        target.path, target.authority
    );
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    let mut got = 0;
    while got < head.len() {
        match s.read(&mut head[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    got >= 12 && head.starts_with(b"HTTP/1.")
}

/// Probes every second until the service answers or `within` has passed; returns how long it
/// took to answer, `None` if it never did.
pub fn wait_for_recovery(
    target: &Target,
    within: Duration,
    stop: &dyn Fn() -> bool,
) -> Option<Duration> {
    let start = Instant::now();
    loop {
        let left = within.saturating_sub(start.elapsed());
        if answers(
            target,
            left.min(Duration::from_secs(2))
                .max(Duration::from_millis(100)),
        ) {
            return Some(start.elapsed());
        }
        if start.elapsed() >= within || stop() {
            return None;
        }
        std::thread::sleep(Duration::from_secs(1).min(within.saturating_sub(start.elapsed())));
    }
}
