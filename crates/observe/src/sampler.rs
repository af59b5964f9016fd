//! The sampling thread: once a second it reads every source and turns raw figures into the
//! shared names (CPU as a percentage of one core from the counter's rate, gauges as values,
//! `--metric` counters as per-second rates). A failed read is a gap: recorded with its reason,
//! never an error.

use crate::{procfs, prom, Source, CPU, FDS, RSS, SOCKETS, THREADS};
use model::metrics::{
    CPU_WAIT, CTX_INVOL, CTX_VOL, LISTEN_DROPS, LISTEN_OVERFLOWS, RETRANSMITS, THROTTLED,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One second's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// When it was taken.
    pub at: Instant,
    pub values: BTreeMap<String, f64>,
    /// Why a source could not be read this second.
    pub gaps: Vec<String>,
}

/// A running sampler; stop it to get the samples.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    thread: Option<JoinHandle<()>>,
}

const THREAD_SERIES: [&str; 3] = [
    "process_threads",
    "go_goroutines",
    "jvm_threads_live_threads",
];

impl Sampler {
    /// Starts sampling `sources` every `period`.
    pub fn start(sources: Vec<Source>, period: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (st, sa) = (stop.clone(), samples.clone());
        let thread = std::thread::Builder::new()
            .name("brink-observe".into())
            .spawn(move || run(&sources, period, &st, &sa))
            .ok();
        Sampler {
            stop,
            samples,
            thread,
        }
    }

    /// The samples so far (the sampler keeps going).
    pub fn snapshot(&self) -> Vec<Sample> {
        self.samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops and returns every sample.
    pub fn stop(mut self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.snapshot()
    }
}

/// Previous counter readings, for rates.
#[derive(Default)]
struct Prev {
    counters: BTreeMap<String, (Instant, f64)>,
}

impl Prev {
    /// The per-second rate of counter `key` since its last reading.
    fn rate(&mut self, key: &str, now: Instant, v: f64) -> Option<f64> {
        let last = self.counters.insert(key.to_string(), (now, v));
        let (t, old) = last?;
        let dt = now.duration_since(t).as_secs_f64();
        (dt > 0.0 && v >= old).then(|| (v - old) / dt)
    }
}

fn run(sources: &[Source], period: Duration, stop: &AtomicBool, out: &Mutex<Vec<Sample>>) {
    let mut prev = Prev::default();
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next {
            next += period;
            let mut s = Sample {
                at: now,
                values: BTreeMap::new(),
                gaps: Vec::new(),
            };
            for src in sources {
                read(src, &mut prev, &mut s, period);
            }
            out.lock().unwrap_or_else(PoisonError::into_inner).push(s);
        }
        std::thread::sleep(
            Duration::from_millis(20).min(next.saturating_duration_since(Instant::now())),
        );
    }
}

fn read(src: &Source, prev: &mut Prev, s: &mut Sample, period: Duration) {
    let now = s.at;
    match src {
        Source::Pid(pid) => match procfs::read(*pid) {
            Some(r) => {
                if let Some(rate) = prev.rate("pid cpu", now, r.cpu_s) {
                    s.values.insert(CPU.into(), rate * 100.0);
                }
                s.values.insert(RSS.into(), r.rss_bytes);
                s.values.insert(THREADS.into(), r.threads);
                s.values.insert(FDS.into(), r.fds);
                s.values.insert(SOCKETS.into(), r.sockets);
                for (name, v) in [(CTX_VOL, r.ctx_vol), (CTX_INVOL, r.ctx_invol)] {
                    if let Some(rate) = prev.rate(name, now, v) {
                        s.values.insert(name.into(), rate);
                    }
                }
                if let Some((periods, throttled)) = r.cfs {
                    throttle(prev, s, now, periods, throttled);
                }
                if let Some(rate) = r.waiting_s.and_then(|w| prev.rate("pid wait", now, w)) {
                    s.values.insert(CPU_WAIT.into(), rate * 100.0);
                }
                if let Some(c) = crate::netstat::read() {
                    for (name, v) in [
                        (LISTEN_OVERFLOWS, c.listen_overflows),
                        (LISTEN_DROPS, c.listen_drops),
                        (RETRANSMITS, c.retransmits),
                    ] {
                        if let Some(rate) = prev.rate(name, now, v) {
                            s.values.insert(name.into(), rate);
                        }
                    }
                }
            }
            None => s.gaps.push(format!("pid {pid}: process not found")),
        },
        Source::Prometheus { target, extra } => {
            let timeout = period.mul_f64(0.8);
            let body = match crate::http::get(target, timeout) {
                Ok((200, body)) => body,
                Ok((status, _)) => {
                    return s.gaps.push(format!("{}: status {status}", target.url()))
                }
                Err(e) => return s.gaps.push(format!("{}: {e}", target.url())),
            };
            let scrape = prom::Scrape::parse(&String::from_utf8_lossy(&body));
            if let Some(cpu) = scrape.value("process_cpu_seconds_total") {
                if let Some(rate) = prev.rate("prom cpu", now, cpu) {
                    s.values.insert(CPU.into(), rate * 100.0);
                }
            }
            for (name, series) in [
                (RSS, "process_resident_memory_bytes"),
                (FDS, "process_open_fds"),
            ] {
                if let Some(v) = scrape.value(series) {
                    s.values.insert(name.into(), v);
                }
            }
            if let Some(v) = THREAD_SERIES.iter().find_map(|t| scrape.value(t)) {
                s.values.insert(THREADS.into(), v);
            }
            // cAdvisor's view of a container's CPU limit, when the scrape has it.
            if let (Some(periods), Some(throttled)) = (
                scrape.value("container_cpu_cfs_periods_total"),
                scrape.value("container_cpu_cfs_throttled_periods_total"),
            ) {
                throttle(prev, s, now, periods, throttled);
            }
            for (name, series) in extra {
                match scrape.value(series) {
                    Some(v) if scrape.is_counter(series) => {
                        if let Some(r) = prev.rate(name, now, v) {
                            s.values.insert(name.clone(), r);
                        }
                    }
                    Some(v) => {
                        s.values.insert(name.clone(), v);
                    }
                    None => s.gaps.push(format!("{}: no series {series}", target.url())),
                }
            }
        }
    }
}

/// The share of CFS periods throttled since the last reading, in %.
fn throttle(prev: &mut Prev, s: &mut Sample, now: Instant, periods: f64, throttled: f64) {
    let p = prev.rate("cfs periods", now, periods);
    let t = prev.rate("cfs throttled", now, throttled);
    if let (Some(p), Some(t)) = (p, t) {
        if p > 0.0 {
            s.values
                .insert(THROTTLED.into(), (t / p * 100.0).min(100.0));
        }
    }
}

/// Peak and mean of each figure over the samples taken in `[from, to]`.
pub fn summarise(samples: &[Sample], from: Instant, to: Instant) -> BTreeMap<String, (f64, f64)> {
    let mut acc: BTreeMap<String, (f64, f64, u32)> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.at >= from && s.at <= to) {
        for (k, &v) in &s.values {
            let e = acc.entry(k.clone()).or_insert((f64::MIN, 0.0, 0));
            e.0 = e.0.max(v);
            e.1 += v;
            e.2 += 1;
        }
    }
    acc.into_iter()
        .map(|(k, (peak, sum, n))| (k, (peak, sum / f64::from(n))))
        .collect()
}
