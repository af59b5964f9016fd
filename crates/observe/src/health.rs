//! The health probe of a capacity search: does the service still answer? Any HTTP status is an
//! answer (a 503 from a live server is not "stuck"), read from the head alone (a chunked answer
//! kept open, an event stream, has answered); no answer within the timeout is not. For
//! `https://` a completed TCP connect is the answer (enough to tell a dead listener from a live
//! one without a TLS client here).

use model::Target;
use std::net::TcpStream;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// Whether `target` answers within `timeout`.
pub fn answers(target: &Target, timeout: Duration) -> bool {
    if target.tls {
        return target
            .resolve()
            .is_ok_and(|a| TcpStream::connect_timeout(&a, timeout).is_ok());
    }
    crate::http::status(target, timeout).is_ok()
}

/// Probes every second until the service answers or `within` has passed; returns how long it
/// took, `None` if it never answered (or `stop` said to give up). Each probe runs on its own
/// thread, so `stop` is heard within 100 ms even while a probe waits on a hung service (the
/// abandoned probe ends by its own timeout).
pub fn wait_for_recovery(
    target: &Target,
    within: Duration,
    stop: &dyn Fn() -> bool,
) -> Option<Duration> {
    let start = Instant::now();
    loop {
        let left = within.saturating_sub(start.elapsed());
        let timeout = left.clamp(Duration::from_millis(100), Duration::from_secs(2));
        let (tx, rx) = std::sync::mpsc::channel();
        let t = target.clone();
        std::thread::Builder::new()
            .name("brink-health".into())
            .spawn(move || {
                let _ = tx.send(answers(&t, timeout));
            })
            .ok()?;
        let answered = loop {
            match rx.recv_timeout(TICK) {
                Ok(a) => break a,
                Err(RecvTimeoutError::Timeout) if !stop() => {}
                Err(_) => return None,
            }
        };
        if answered {
            return Some(start.elapsed());
        }
        let next = Instant::now() + Duration::from_secs(1);
        loop {
            if stop() || start.elapsed() >= within {
                return None;
            }
            if Instant::now() >= next {
                break;
            }
            std::thread::sleep(TICK);
        }
    }
}

/// How often a wait checks whether it should give up.
const TICK: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A server that answers once with `head` and then keeps the connection open, silent.
    fn open_answer(head: &'static [u8]) -> Target {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let mut req = [0u8; 1024];
                let _ = s.read(&mut req);
                let _ = s.write_all(head);
                std::thread::sleep(Duration::from_secs(5));
            }
        });
        Target::parse(&format!("http://127.0.0.1:{port}/health")).unwrap()
    }

    #[test]
    fn a_streaming_answer_kept_open_is_an_answer() {
        for head in [
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: x\n\n",
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100\r\n\r\n",
        ] {
            let started = Instant::now();
            assert!(answers(&open_answer(head), Duration::from_secs(3)));
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "answered at its head"
            );
        }
        let half = open_answer(b"HTTP/1.1 200 OK\r\nContent-");
        assert!(
            !answers(&half, Duration::from_millis(300)),
            "no whole head, no answer"
        );
    }
}
