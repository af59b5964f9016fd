//! The messages of a distributed run, one JSON object per line each way on one long-lived
//! stream per worker. The coordinator opens it with [`ToWorker::Run`] (the same inputs every
//! worker gets, plus its part); the worker answers [`FromWorker::Hello`] and waits for the
//! start instant; then one [`FromWorker::Second`] per second of load, and [`FromWorker::Done`]
//! or [`FromWorker::Failed`] at the end. Heartbeats keep a worker going: without one for
//! [`HEARTBEAT_LAPSE`] it stops on its own and keeps its partial result.

use serde::{Deserialize, Serialize};
use stats::WireBucket;
use std::time::Duration;

/// The protocol's version: a coordinator and a worker that differ refuse each other. 2: the
/// run is a typed order, no longer a command line.
pub const PROTOCOL: u32 = 2;

/// How often the coordinator says it is still there: a write to every worker, the most
/// frequent the coordinator makes, so no more often than a worker needs (it allows
/// [`HEARTBEAT_LAPSE`], two and a half of these).
pub const HEARTBEAT: Duration = Duration::from_secs(2);

/// A worker that hears nothing for this long stops its load.
pub const HEARTBEAT_LAPSE: Duration = Duration::from_secs(5);

/// Coordinator -> worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToWorker {
    /// The run: brink's version and the protocol's, the order (what to run, typed by brink
    /// and serialized: the load's settings, a search's, the seed), the digest of the order
    /// and what it compiled to, and this worker's part.
    Run {
        version: String,
        protocol: u32,
        order: String,
        digest: String,
        index: u64,
        count: u64,
        /// Which of the command's jobs, and a search step's level (`runner::Unit`).
        job: usize,
        level: Option<f64>,
        /// The `{{env NAME}}` values the coordinator read: a worker compiles with these,
        /// never with its own environment.
        #[serde(default)]
        env: Vec<(String, String)>,
    },
    /// A clock ping: the worker answers [`FromWorker::Pong`] at once with its own clock.
    Ping {
        id: u32,
    },
    /// Start the load at this instant of the worker's own clock (ns since the Unix epoch).
    StartAt {
        unix_ns: u64,
    },
    /// A capacity search's next level (connections or requests per second).
    Level {
        level: f64,
    },
    /// Stop sending, finish what is in flight within the grace, and say Done.
    Stop,
    /// An objective with `abort` broke: stop at once.
    Abort {
        why: String,
    },
    Heartbeat,
}

/// Worker -> coordinator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromWorker {
    /// Who the worker is and what it compiled.
    Hello {
        version: String,
        protocol: u32,
        digest: String,
        host: String,
        cores: u64,
        /// The histograms' highest trackable value (µs) and significant digits: both sides
        /// must agree for the merge to be exact.
        hist_max_us: u64,
        hist_digits: u8,
    },
    Pong {
        id: u32,
        unix_ns: u64,
    },
    /// One second of load: a bucket per request of the workload, in the workload's order.
    Second {
        parts: Vec<WireBucket>,
    },
    /// The load is over.
    Done {
        /// Requests in flight when it stopped (not in any second).
        unfinished: u64,
        /// Its engine threads' ns on a CPU, ns ready but waiting for one, and times put on a
        /// CPU, summed (where the kernel keeps them).
        sched: Option<[u64; 3]>,
        /// Its process's CPU time over the run, seconds.
        cpu_s: f64,
        /// Share (0..1) of the periods its cgroup's CPU limit throttled it (a pod's limit).
        #[serde(default)]
        throttled: Option<f64>,
        /// When its load actually started, ns since the Unix epoch on its own clock, and how
        /// long it ran (s).
        started_ns: u64,
        wall_s: f64,
        /// Its engine's threads.
        threads: u64,
        /// Steps with `complete:`: how its jobs ended, per request of the workload.
        #[serde(default)]
        completions: Vec<Completions>,
        /// Why it stopped before its load was over, on its own (its coordinator fell silent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stopped: Option<String>,
    },
    /// It could not run (its one-line reason).
    Failed {
        why: String,
    },
}

/// The most engine threads (and CPUs' worth of time) a worker can report.
const MOST_THREADS: u64 = 4096;

impl FromWorker {
    /// `Err` naming the first figure of a Done that no worker can have measured: its sums
    /// would wrap or its percentages print nonsense. Other messages pass.
    pub fn check_done(&self) -> Result<(), String> {
        let FromWorker::Done {
            unfinished,
            sched,
            cpu_s,
            throttled,
            wall_s,
            threads,
            completions,
            ..
        } = self
        else {
            return Ok(());
        };
        let wall = *wall_s;
        if !(0.0..=1e7).contains(&wall) {
            return Err(format!("ran {wall} s"));
        }
        if *threads > MOST_THREADS {
            return Err(format!("{threads} threads"));
        }
        if !(0.0..=(wall + 1.0) * MOST_THREADS as f64).contains(cpu_s) {
            return Err(format!("{cpu_s} s of CPU in {wall} s"));
        }
        if throttled.is_some_and(|t| !(0.0..=1.0).contains(&t)) {
            return Err(format!("throttled {throttled:?} of the time"));
        }
        // Over the whole run: no more than a second can count, each second.
        let most = (wall + 1.0) * stats::bounds::MOST_PER_SECOND as f64;
        let cpu_ns = (wall + 1.0) * 1e9 * (*threads).max(1) as f64;
        let bad = |n: u64, limit: f64| n as f64 > limit;
        if bad(*unfinished, stats::bounds::MOST_PER_SECOND as f64) {
            return Err(format!("{unfinished} requests unfinished"));
        }
        if let Some(s) = sched.filter(|s| bad(s[0], cpu_ns) || bad(s[1], cpu_ns) || bad(s[2], most))
        {
            return Err(format!(
                "scheduler figures {s:?} for {threads} threads in {wall} s"
            ));
        }
        if let Some(c) = completions
            .iter()
            .find(|c| bad(c.0, most) || bad(c.1, most) || bad(c.2, most))
        {
            return Err(format!("{} completions in {wall} s", c.0.max(c.1).max(c.2)));
        }
        Ok(())
    }
}

/// How one request's jobs (`complete:`) ended on a worker: completed, failed, timed out,
/// their completion times (encoded HDR histogram, µs) and the first failure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Completions(pub u64, pub u64, pub u64, pub String, pub Option<String>);

impl From<&observe::tracker::Counts> for Completions {
    fn from(c: &observe::tracker::Counts) -> Completions {
        Completions(
            c.completed,
            c.failed,
            c.timed_out,
            stats::encode(&c.latency),
            c.first_failure.clone(),
        )
    }
}

impl TryFrom<&Completions> for observe::tracker::Counts {
    type Error = String;
    fn try_from(w: &Completions) -> Result<observe::tracker::Counts, String> {
        Ok(observe::tracker::Counts {
            completed: w.0,
            failed: w.1,
            timed_out: w.2,
            latency: stats::decode(&w.3).map_err(|e| format!("completion times: {e}"))?,
            first_failure: w.4.clone(),
        })
    }
}

/// Why a worker's hello is refused, in one line naming both sides; `None` when it may run.
pub fn refuse_hello(
    worker: &str,
    ours: (&str, &str),
    hello: &FromWorker,
    hist: (u64, u8),
) -> Option<String> {
    let FromWorker::Hello {
        version,
        protocol,
        digest,
        hist_max_us,
        hist_digits,
        ..
    } = hello
    else {
        return Some(format!("worker {worker}: no hello"));
    };
    let (our_version, our_digest) = ours;
    if version != our_version || *protocol != PROTOCOL {
        return Some(format!(
            "worker {worker} runs brink {version} (protocol {protocol}), this is brink {our_version} (protocol {PROTOCOL}): run the same version on both"
        ));
    }
    if digest != our_digest {
        return Some(format!(
            "worker {worker} compiled other inputs (digest {} here {}): give every worker the same plan, data files and flags",
            short(digest),
            short(our_digest)
        ));
    }
    if (*hist_max_us, *hist_digits) != hist {
        return Some(format!(
            "worker {worker} keeps histograms up to {hist_max_us} µs with {hist_digits} digits, this coordinator {} µs with {}: they would not merge exactly",
            hist.0, hist.1
        ));
    }
    None
}

fn short(d: &str) -> &str {
    d.get(..12).unwrap_or(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(version: &str, digest: &str) -> FromWorker {
        FromWorker::Hello {
            version: version.into(),
            protocol: PROTOCOL,
            digest: digest.into(),
            host: "h1".into(),
            cores: 2,
            hist_max_us: 60_000_000,
            hist_digits: 3,
        }
    }

    #[test]
    fn messages_are_one_json_line_each() {
        let m = ToWorker::StartAt { unix_ns: 1 << 62 };
        let line = serde_json::to_string(&m).expect("serialises");
        assert!(!line.contains('\n'));
        assert_eq!(line, r#"{"type":"start_at","unix_ns":4611686018427387904}"#);
        assert_eq!(serde_json::from_str::<ToWorker>(&line).ok(), Some(m));
        let bad = serde_json::from_str::<FromWorker>(r#"{"type":"take_over"}"#);
        assert!(bad.is_err());
    }

    #[test]
    fn a_hello_that_differs_is_refused_naming_both_sides() {
        let ours = ("0.1.0", "abcdef0123456789");
        let hist = (60_000_000, 3);
        assert_eq!(
            refuse_hello("w1", ours, &hello("0.1.0", "abcdef0123456789"), hist),
            None
        );
        let v = refuse_hello("w1", ours, &hello("0.2.0", "abcdef0123456789"), hist).unwrap();
        assert!(
            v.contains("brink 0.2.0") && v.contains("brink 0.1.0"),
            "{v}"
        );
        let d = refuse_hello("w1", ours, &hello("0.1.0", "ffff"), hist).unwrap();
        assert!(d.contains("other inputs") && d.contains("ffff"), "{d}");
        let h = refuse_hello("w1", ours, &hello("0.1.0", "abcdef0123456789"), (1, 2)).unwrap();
        assert!(h.contains("would not merge exactly"), "{h}");
        let n = refuse_hello("w1", ours, &FromWorker::Failed { why: "x".into() }, hist);
        assert!(n.is_some());
    }

    /// A worker's Done line with `field` set to `value` (JSON, as a worker sends it), checked.
    fn done(field: &str, value: serde_json::Value) -> Result<(), String> {
        let mut d = serde_json::json!({
            "type": "done", "unfinished": 3, "sched": [1_900_000_000u64, 50_000_000, 4_000],
            "cpu_s": 2.1, "throttled": 0.0, "started_ns": 1u64 << 60, "wall_s": 2.0,
            "threads": 2, "completions": [[10, 0, 0, "", null]],
        });
        d[field] = value;
        serde_json::from_value::<FromWorker>(d)
            .expect("a Done")
            .check_done()
    }

    #[test]
    fn a_done_no_worker_can_have_measured_is_refused() {
        use serde_json::json;
        assert_eq!(done("unfinished", json!(3)), Ok(()));
        let bad = |f: &str, v: serde_json::Value| done(f, v).unwrap_err();
        assert!(bad("cpu_s", json!(1e12)).contains("of CPU"));
        assert!(bad("cpu_s", json!(-0.5)).contains("of CPU"));
        assert!(bad("wall_s", json!(-1.0)).starts_with("ran "));
        assert!(bad("wall_s", json!(1e300)).starts_with("ran "));
        assert_eq!(
            bad("threads", json!(1u64 << 40)),
            format!("{} threads", 1u64 << 40)
        );
        assert!(bad("throttled", json!(5.0)).starts_with("throttled"));
        assert!(bad("unfinished", json!(u64::MAX)).contains("unfinished"));
        assert!(bad("sched", json!([u64::MAX, 0, 0])).starts_with("scheduler"));
        let c = bad("completions", json!([[u64::MAX, 0, 0, "", null]]));
        assert!(c.contains("completions"), "{c}");
    }
}
