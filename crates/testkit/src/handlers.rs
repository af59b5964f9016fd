//! Ready-made handlers for the classic test targets: a fixed service time, a server that pauses
//! completely for part of every period (the coordinated-omission test), and faults chosen by
//! path or by arrival order.

use crate::{Handler, Reply, Req};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Every request answered `200` after exactly `service`.
pub fn fixed(service: Duration) -> Handler {
    Arc::new(move |_: &Req| Reply::ok("hello, world\n", service))
}

/// Answers at once, except that for the first `pause` of every `period` (counted from now) the
/// server is frozen: a request arriving then is held until the pause ends.
pub fn pausing(period: Duration, pause: Duration) -> Handler {
    let origin = Instant::now();
    Arc::new(move |_: &Req| {
        let phase = Duration::from_nanos((origin.elapsed().as_nanos() % period.as_nanos()) as u64);
        let delay = pause.saturating_sub(phase);
        Reply::ok("hello, world\n", delay)
    })
}

/// Behaviour by path: `/status/NNN`, `/delay/MS`, `/drop`, `/hang`, `/partial`, `/chunked`,
/// `/close`, `/mix` (by arrival order, out of every 10: 6 ok, one 503, one dropped, one hang,
/// one truncated body); anything else is `200`.
pub fn faults() -> Handler {
    Arc::new(|r: &Req| {
        let path = r.path.split('?').next().unwrap_or("");
        if let Some(code) = path.strip_prefix("/status/").and_then(|c| c.parse().ok()) {
            return Reply::status(code);
        }
        if let Some(ms) = path.strip_prefix("/delay/").and_then(|c| c.parse().ok()) {
            return Reply::ok("slow\n", Duration::from_millis(ms));
        }
        match path {
            "/drop" => Reply::Drop,
            "/hang" => Reply::Hang,
            "/partial" => Reply::Partial,
            "/chunked" => Reply::Chunked(vec![
                b"hello, ".to_vec(),
                vec![b'x'; 20_000],
                b"world\n".to_vec(),
            ]),
            "/close" => Reply::CloseDelimited(b"close-delimited body\n".to_vec()),
            "/mix" => match r.seq % 10 {
                6 => Reply::status(503),
                7 => Reply::Drop,
                8 => Reply::Hang,
                9 => Reply::Partial,
                _ => Reply::ok("ok\n", Duration::ZERO),
            },
            _ => Reply::ok("ok\n", Duration::ZERO),
        }
    })
}
