//! Per-request async completion: after a flow step is answered (a 202 with a job URL), its
//! `complete:` polls that URL until a condition holds. The polls run here, on a few threads of
//! their own at their own pace, so the load's arrival rate is unchanged and poll times never
//! mix into request latency. `Retry-After` is honoured. Each job ends completed (its time from
//! the request's intended send goes into a histogram), failed (an error status), or timed out.

use crate::completion::Condition;
use model::Target;
use stats::Histogram;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Threads polling at once.
const POLLERS: usize = 4;
/// The longest a poller sleeps before it looks at the stop flag again.
const IDLE: Duration = Duration::from_millis(50);

/// One job to follow.
pub struct Job {
    pub target: Target,
    pub until: Condition,
    pub every: Duration,
    pub within: Duration,
    /// The request's intended send: completion time is measured from here.
    pub since: Instant,
    /// The workload request it belongs to.
    pub request: usize,
}

/// What the jobs of one request came to.
#[derive(Clone, Debug)]
pub struct Counts {
    pub completed: u64,
    pub failed: u64,
    pub timed_out: u64,
    /// From the intended send to the condition holding, µs.
    pub latency: Histogram,
    pub first_failure: Option<String>,
}

impl Counts {
    /// Adds `other`'s jobs (another request's, or another worker's of the same request).
    pub fn merge(&mut self, other: &Counts) {
        self.completed += other.completed;
        self.failed += other.failed;
        self.timed_out += other.timed_out;
        // Same bounds on both sides, so `add` cannot fail.
        let _ = self.latency.add(&other.latency);
        if self.first_failure.is_none() {
            self.first_failure.clone_from(&other.first_failure);
        }
    }
}

impl Default for Counts {
    fn default() -> Counts {
        Counts {
            completed: 0,
            failed: 0,
            timed_out: 0,
            latency: stats::new_histogram(),
            first_failure: None,
        }
    }
}

struct Due {
    at: Instant,
    job: Job,
}

impl PartialEq for Due {
    fn eq(&self, other: &Due) -> bool {
        self.at == other.at
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Due) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    /// Earliest first (a max-heap of reversed times).
    fn cmp(&self, other: &Due) -> std::cmp::Ordering {
        other.at.cmp(&self.at)
    }
}

struct State {
    fetch: crate::completion::Fetch,
    queue: Mutex<(BinaryHeap<Due>, usize)>,
    wake: Condvar,
    counts: Mutex<Vec<Counts>>,
    stop: AtomicBool,
}

/// The pollers of one run.
pub struct Tracker {
    state: Arc<State>,
    threads: Vec<JoinHandle<()>>,
}

impl Tracker {
    /// Starts the pollers for a workload of `requests` requests, fetching with `fetch`.
    pub fn start(requests: usize, fetch: crate::completion::Fetch) -> Tracker {
        let state = Arc::new(State {
            fetch,
            queue: Mutex::new((BinaryHeap::new(), 0)),
            wake: Condvar::new(),
            counts: Mutex::new(vec![Counts::default(); requests.max(1)]),
            stop: AtomicBool::new(false),
        });
        let threads = (0..POLLERS)
            .filter_map(|i| {
                let s = state.clone();
                std::thread::Builder::new()
                    .name(format!("brink-complete-{i}"))
                    .spawn(move || poll_loop(&s))
                    .ok()
            })
            .collect();
        Tracker { state, threads }
    }

    /// Follows `job` from now (its first poll right away).
    pub fn submit(&self, job: Job) {
        let mut q = self
            .state
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        q.0.push(Due {
            at: Instant::now(),
            job,
        });
        self.state.wake.notify_one();
    }

    /// Counts a job of `request` that could not even be polled (its URL was refused) as failed.
    pub fn fail(&self, request: usize, why: String) {
        let mut counts = self
            .state
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = counts.get_mut(request) {
            c.failed += 1;
            c.first_failure.get_or_insert(why);
        }
    }

    /// Waits until every job has ended (each is bounded by its `within`), or `interrupt`;
    /// returns the counts per request. Jobs still open when interrupted are dropped uncounted.
    pub fn finish(&self, interrupt: &AtomicBool) -> Vec<Counts> {
        loop {
            let (queued, active) = {
                let q = self
                    .state
                    .queue
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                (q.0.len(), q.1)
            };
            if (queued == 0 && active == 0) || interrupt.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let counts = self
            .state
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        counts.clone()
    }

    fn stop_threads(&mut self) {
        self.state.stop.store(true, Ordering::Relaxed);
        self.state.wake.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

/// Takes the next due job, polls it, and puts it back or counts how it ended.
fn poll_loop(s: &State) {
    loop {
        let job = {
            let mut q = s.queue.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if s.stop.load(Ordering::Relaxed) {
                    return;
                }
                let now = Instant::now();
                let next = q.0.peek().map(|d| d.at);
                if next.is_some_and(|at| at <= now) {
                    q.1 += 1;
                    break q.0.pop().map(|d| d.job);
                }
                // Wake for the next due job, a new one, or the stop flag, whichever first.
                let wait = next.map_or(IDLE, |at| (at - now).min(IDLE));
                q = s
                    .wake
                    .wait_timeout(q, wait)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        };
        let Some(job) = job else { continue };
        let next = poll_once(s, job);
        let mut q = s.queue.lock().unwrap_or_else(PoisonError::into_inner);
        q.1 -= 1;
        if let Some(due) = next {
            q.0.push(due);
        }
    }
}

/// One poll of `job`: `Some` when it must be polled again.
fn poll_once(s: &State, job: Job) -> Option<Due> {
    let now = Instant::now();
    let deadline = job.since + job.within;
    let limit = job
        .every
        .clamp(Duration::from_millis(200), Duration::from_secs(5));
    let mut retry_after = None;
    let outcome = match (s.fetch)(&job.target, limit) {
        Ok((200..=299, ra, body)) => {
            retry_after = ra;
            match job.until.read(&body) {
                Ok(r) if r.holds => Some(Ok(())),
                _ => None,
            }
        }
        // Not ready yet, come back later (as Retry-After says, if it does).
        Ok((429 | 503, ra, _)) => {
            retry_after = ra;
            None
        }
        Ok((status, _, _)) => Some(Err(format!("status {status} from {}", job.target.url()))),
        // A poll that could not connect or timed out is tried again until the deadline; one
        // that can never work (a scheme the poller does not speak) fails now.
        Err(e) if e.contains("speaks plain http only") || e.starts_with("refused") => Some(Err(e)),
        Err(_) => None,
    };
    let mut counts = s.counts.lock().unwrap_or_else(PoisonError::into_inner);
    let c = counts.get_mut(job.request)?;
    match outcome {
        Some(Ok(())) => {
            c.completed += 1;
            let us = now.saturating_duration_since(job.since).as_micros() as u64;
            c.latency.saturating_record(us.clamp(1, stats::HIST_MAX_US));
            None
        }
        Some(Err(why)) => {
            c.failed += 1;
            c.first_failure.get_or_insert(why);
            None
        }
        None => {
            let wait = retry_after
                .map(Duration::from_secs_f64)
                .map_or(job.every, |ra| ra.max(job.every));
            let at = Instant::now() + wait;
            if at > deadline {
                c.timed_out += 1;
                return None;
            }
            drop(counts);
            Some(Due { at, job })
        }
    }
}
