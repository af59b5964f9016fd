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
    /// What each source observed, in words (`pid 812 (nginx) and 2 descendants (nginx x2)`).
    pub seen: Vec<String>,
}

/// A running sampler; stop it to get the samples.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    thread: Option<JoinHandle<()>>,
}

/// How far past its CPUs' worth a process's CPU figure may read (a tick's rounding) before
/// it is a figure no process can reach.
const CPU_SLACK: f64 = 1.1;

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
    /// The last reading of a process tree, and when.
    tree: Option<(Instant, crate::tree::Tree)>,
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
            // A sampler held up (a busy machine) takes one sample and waits a whole period
            // for the next: samples back to back would divide a counter's ticks by a few
            // milliseconds (a process pinned to one core shown at 320% CPU).
            next = (next + period).max(now + period / 2);
            let mut s = Sample {
                at: now,
                values: BTreeMap::new(),
                gaps: Vec::new(),
                seen: Vec::new(),
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
        Source::Pid(pid) => match crate::tree::read(*pid) {
            Some(t) => {
                // The counters were read just now, not when the sample began.
                let now = Instant::now();
                tree_figures(&t, prev, s, now, period);
                if let Some((periods, throttled)) = t.root().and_then(|r| r.cfs) {
                    throttle(prev, s, now, periods, throttled);
                }
                s.seen.push(t.said.clone());
                prev.tree = Some((now, t));
                host_figures(prev, s, now);
            }
            None => s.gaps.push(format!("pid {pid}: process not found")),
        },
        Source::Cgroup(dir) => match crate::cgroup::read(dir) {
            Some(r) => {
                if let Some(rate) = prev.rate("cgroup cpu", now, r.cpu_s) {
                    s.values.insert(CPU.into(), rate * 100.0);
                }
                if let Some(m) = r.memory_bytes {
                    s.values.insert(RSS.into(), m);
                }
                if let Some(n) = r.tasks {
                    s.values.insert(THREADS.into(), n);
                }
                if let Some((periods, throttled)) = r.cfs {
                    throttle(prev, s, now, periods, throttled);
                }
                s.seen.push(format!("cgroup {}", dir.display()));
                host_figures(prev, s, now);
            }
            None => s.gaps.push(format!("cgroup {}: not found", dir.display())),
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

/// A process tree's figures: gauges summed, counters as rates over the processes of both
/// readings (see [`crate::tree`]).
///
/// A rate is taken over at least half a period (CPU time comes in 10 ms ticks: over a few
/// milliseconds one tick reads as hundreds of percent), and a CPU figure past what the
/// processes' CPUs allow (each may run on so many) is left out, never shown or judged.
fn tree_figures(
    t: &crate::tree::Tree,
    prev: &Prev,
    s: &mut Sample,
    now: Instant,
    period: Duration,
) {
    s.values.insert(RSS.into(), t.sum(|r| r.rss_bytes));
    s.values.insert(THREADS.into(), t.sum(|r| r.threads));
    s.values.insert(FDS.into(), t.sum(|r| r.fds));
    s.values.insert(SOCKETS.into(), t.sum(|r| r.sockets));
    if let Some((then, before)) = &prev.tree {
        let dt = now.duration_since(*then).as_secs_f64();
        if dt >= period.as_secs_f64() / 2.0 {
            let per_s = |f: fn(&procfs::Reading) -> Option<f64>| t.grew(before, f).map(|v| v / dt);
            let most = t.sum(|r| r.cpus_allowed);
            match per_s(|r| Some(r.cpu_s)) {
                Some(cpu) if most > 0.0 && cpu > most * CPU_SLACK => s.gaps.push(format!(
                    "{CPU}: {:.0}% over {:.0} ms, past the {most:.0} CPUs it may use: left out",
                    cpu * 100.0,
                    dt * 1000.0
                )),
                Some(cpu) => {
                    s.values.insert(CPU.into(), cpu * 100.0);
                }
                None => {}
            }
            if let Some(wait) = per_s(|r| r.waiting_s) {
                s.values.insert(CPU_WAIT.into(), wait * 100.0);
            }
            for (name, f) in [
                (
                    CTX_VOL,
                    (|r: &procfs::Reading| Some(r.ctx_vol)) as fn(&procfs::Reading) -> Option<f64>,
                ),
                (CTX_INVOL, |r| Some(r.ctx_invol)),
            ] {
                if let Some(v) = per_s(f) {
                    s.values.insert(name.into(), v);
                }
            }
        }
    }
}

/// This host's listen-queue overflows and drops and its retransmissions, per second.
fn host_figures(prev: &mut Prev, s: &mut Sample, now: Instant) {
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

#[cfg(test)]
mod cpu_tests {
    use super::*;

    fn tree(cpu_s: f64, cpus_allowed: f64) -> crate::tree::Tree {
        let reading = procfs::Reading {
            cpu_s,
            rss_bytes: 0.0,
            threads: 1.0,
            fds: 0.0,
            sockets: 0.0,
            ctx_vol: 0.0,
            ctx_invol: 0.0,
            cpus_allowed,
            cfs: None,
            waiting_s: None,
        };
        crate::tree::Tree {
            root: 1,
            said: String::new(),
            procs: [(1, reading)].into_iter().collect(),
        }
    }

    fn cpu_after(dt_ms: u64, grew_s: f64, cpus: f64) -> Option<f64> {
        let t0 = Instant::now();
        let prev = Prev {
            tree: Some((t0, tree(10.0, cpus))),
            ..Prev::default()
        };
        let mut s = Sample {
            at: t0,
            values: BTreeMap::new(),
            gaps: Vec::new(),
            seen: Vec::new(),
        };
        let now = t0 + Duration::from_millis(dt_ms);
        tree_figures(
            &tree(10.0 + grew_s, cpus),
            &prev,
            &mut s,
            now,
            Duration::from_secs(1),
        );
        s.values.get(CPU).copied()
    }

    #[test]
    fn a_cpu_figure_is_taken_over_half_a_period_and_within_the_cpus_allowed() {
        let near = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < 1e-6);
        assert!(near(cpu_after(1000, 0.9, 1.0), 90.0));
        // One 10 ms tick over 3 ms (samples back to back) is no figure at all.
        assert_eq!(cpu_after(3, 0.01, 1.0), None);
        assert!(
            near(cpu_after(500, 0.25, 1.0), 50.0),
            "half a period is enough"
        );
        // A process pinned to one CPU cannot take 320% of one; on four it can.
        assert_eq!(cpu_after(1000, 3.2, 1.0), None);
        assert!(near(cpu_after(1000, 3.2, 4.0), 320.0));
        // The tick's rounding past 100% is kept: 105% of one CPU.
        assert!(near(cpu_after(1000, 1.05, 1.0), 105.0));
    }
}
