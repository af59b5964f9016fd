//! The health probe of a capacity search: does the service still answer? Any HTTP status is an
//! answer (a 503 from a live server is not "stuck"); no answer within the timeout is not. For
//! `https://` a completed TCP connect is the answer (enough to tell a dead listener from a live
//! one without a TLS client here).

use engine::Target;
use std::net::TcpStream;
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
/// took, `None` if it never answered (or `stop` said to give up).
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
            left.clamp(Duration::from_millis(100), Duration::from_secs(2)),
        ) {
            return Some(start.elapsed());
        }
        if start.elapsed() >= within || stop() {
            return None;
        }
        std::thread::sleep(Duration::from_secs(1).min(within.saturating_sub(start.elapsed())));
    }
}
