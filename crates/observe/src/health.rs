//! The health probe of a capacity search: does the service still answer? Any HTTP status is an
//! answer (a 503 from a live server is not "stuck"); no answer within the timeout is not. For
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
    crate::http::get(target, timeout).is_ok()
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
