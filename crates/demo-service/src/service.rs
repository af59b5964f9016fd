//! The demo service behind `brink demo`: a small pool of service slots in front of a work step
//! whose time follows a log-normal distribution (a median of a few milliseconds and a long
//! tail), so it has a real capacity of about `slots / mean service time` requests per second,
//! past which requests queue. `/metrics` serves Prometheus text for the process.

use crate::{serve, Answer, Handler, Req, Server};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A running demo service.
pub struct Demo {
    pub server: Server,
    pub slots: usize,
    pub median: Duration,
    pub sigma: f64,
}

impl Demo {
    /// Mean service time of the log-normal distribution: median · e^(σ²/2).
    pub fn mean_service(&self) -> Duration {
        self.median.mul_f64((self.sigma * self.sigma / 2.0).exp())
    }
}

/// Starts the demo service on 127.0.0.1 with `slots` slots and the given median service time.
pub fn spawn(slots: usize, median: Duration) -> std::io::Result<Demo> {
    spawn_on(0, slots, median)
}

/// The demo service on 127.0.0.1:`port` (0: any free port).
pub fn spawn_on(port: u16, slots: usize, median: Duration) -> std::io::Result<Demo> {
    let sigma = 0.5;
    let server = serve(port, 1, slots, handler(slots, median, sigma))?;
    Ok(Demo {
        server,
        slots,
        median,
        sigma,
    })
}

fn handler(slots: usize, median: Duration, sigma: f64) -> Handler {
    let rng = Arc::new(AtomicU64::new(0x9E37_79B9_7F4A_7C15));
    let served = Arc::new(AtomicU64::new(0));
    // The shop's endpoints (registration, login, items) for the example plans.
    let (shop, _) = crate::shop::shop(Duration::ZERO);
    Arc::new(move |r: &Req| {
        let path = r.path.split('?').next().unwrap_or("");
        if path == "/health" {
            return shop(r);
        }
        let shop_reply = matches!(path, "/user/auth/register" | "/login" | "/items");
        if r.path == "/metrics" {
            return Answer::new(200, metrics(slots, served.load(Ordering::Relaxed)));
        }
        served.fetch_add(1, Ordering::Relaxed);
        let z = standard_normal(&rng);
        let delay = median.mul_f64((sigma * z).exp()).min(median * 50);
        // Shop answers also wait for a slot and take the service time.
        let a = if shop_reply {
            shop(r)
        } else {
            Answer::new(200, &b"{\"ok\":true}\n"[..])
        };
        Answer {
            delay,
            slot: true,
            ..a
        }
    })
}

/// xorshift64* step on a shared state: good enough for service-time noise.
fn uniform(state: &AtomicU64) -> f64 {
    let mut x = state.load(Ordering::Relaxed);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    state.store(x, Ordering::Relaxed);
    ((x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// Box-Muller transform.
fn standard_normal(state: &AtomicU64) -> f64 {
    let (u1, u2) = (uniform(state), uniform(state));
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn metrics(slots: usize, served: u64) -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may contain spaces) start at field 3.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let field = |i: usize| {
        fields
            .get(i - 3)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let cpu_s = (field(14) + field(15)) / 100.0;
    let threads = field(20);
    let rss = field(24) * 4096.0;
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    format!(
        "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {cpu_s}\n\
         # TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rss}\n\
         # TYPE process_threads gauge\nprocess_threads {threads}\n\
         # TYPE process_open_fds gauge\nprocess_open_fds {fds}\n\
         # TYPE demo_service_slots gauge\ndemo_service_slots {slots}\n\
         # TYPE demo_requests_total counter\ndemo_requests_total {served}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_samples_look_normal() {
        let s = AtomicU64::new(42);
        let n = 20_000;
        let xs: Vec<f64> = (0..n).map(|_| standard_normal(&s)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.05, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "variance {var}");
    }
}
