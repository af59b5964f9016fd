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

/// `200` after holding one of the server's service slots (`Options::slots`) for `service`:
/// with N slots it serves at most N / `service` requests a second, and the rest queue.
pub fn slotted(service: Duration) -> Handler {
    Arc::new(move |_: &Req| Reply::Full {
        status: 200,
        body: b"ok".to_vec(),
        delay: service,
        slot: true,
        close: false,
    })
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

/// A pipeline that answers 202 at once and does the work later, as a ticket sale through a
/// queue does: `POST /book` is accepted and queued; consumers sell `rate` bookings per second
/// from the first booking on; `GET /sold` answers `{"sold": N, "booked": M}` and `GET /metrics`
/// the queue's lag (booked, not yet sold) in the Prometheus text format. The moment the
/// last of `total` bookings is sold is known exactly ([`Pipeline::sold_out_at`]).
pub fn pipeline(rate: f64) -> (Handler, Arc<Pipeline>) {
    let p = Arc::new(Pipeline {
        rate,
        booked: std::sync::atomic::AtomicU64::new(0),
        first: std::sync::OnceLock::new(),
    });
    let state = p.clone();
    let handler: Handler = Arc::new(move |r: &Req| match (r.method, r.path) {
        ("POST", "/book") => {
            state.first.get_or_init(Instant::now);
            state
                .booked
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Reply::status(202)
        }
        (_, "/metrics") => Reply::ok(
            &format!(
                "# TYPE queue_lag gauge\nqueue_lag{{queue=\"tickets\"}} {}\n",
                state.booked() - state.sold(Instant::now())
            ),
            Duration::ZERO,
        ),
        (_, "/sold") => {
            let body = format!(
                "{{\"sold\":{},\"booked\":{}}}",
                state.sold(Instant::now()),
                state.booked()
            );
            Reply::ok(&body, Duration::ZERO)
        }
        _ => Reply::status(404),
    });
    (handler, p)
}

/// The state of [`pipeline`].
pub struct Pipeline {
    rate: f64,
    booked: std::sync::atomic::AtomicU64,
    first: std::sync::OnceLock<Instant>,
}

impl Pipeline {
    pub fn booked(&self) -> u64 {
        self.booked.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bookings sold by `now`: the consumers' pace since the first booking, never more than
    /// were booked.
    pub fn sold(&self, now: Instant) -> u64 {
        let Some(first) = self.first.get() else {
            return 0;
        };
        let done = (now.saturating_duration_since(*first).as_secs_f64() * self.rate) as u64;
        done.min(self.booked())
    }

    /// When the `total`-th booking is sold (all of them booked by then).
    pub fn sold_out_at(&self, total: u64) -> Option<Instant> {
        let first = *self.first.get()?;
        Some(first + Duration::from_secs_f64(total as f64 / self.rate))
    }

    /// When the first booking arrived.
    pub fn first_booking(&self) -> Option<Instant> {
        self.first.get().copied()
    }
}
