//! Helpers of the engine's tests: a run for a URL, run in-process, and the CPU lock.

use engine::workload::Request;
use engine::{Curve, Load, RunSpec, StatusSet, Target, Workload};
use merge::RunOutput;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// A closed-model GET run against `url` with `conns` connections.
pub fn spec(url: &str, load: Load) -> RunSpec {
    let target = Target::parse(url).expect("test URL parses");
    let step = Request::fixed("GET", "GET", &target.path, &[], b"");
    RunSpec {
        target,
        workload: Arc::new(Workload::single(step)),
        load,
        max_requests: None,
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
        keepalive: true,
        tls: engine::TlsOptions::default(),
        ok_status: StatusSet::default(),
        ok_codes: vec![0],
        connections: None,
        threads: 2,
        grace: Duration::from_secs(2),
        capture_limit: engine::workload::capture::DEFAULT_LIMIT,
        max_message: engine::DEFAULT_GRPC_MAX_MESSAGE,
        events: engine::EventRule::default(),
        every: None,
        discovered: None,
    }
}

/// `spec` sending `method` with `headers` and `body` instead of a GET.
pub fn with_request(
    mut spec: RunSpec,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> RunSpec {
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let step = Request::fixed(method, method, &spec.target.path, &headers, body.as_bytes());
    spec.workload = Arc::new(Workload::single(step));
    spec
}

pub fn closed(conns: usize, secs: Option<f64>) -> Load {
    Load::Closed {
        connections: Curve::flat(conns as f64, secs.map(Duration::from_secs_f64)),
    }
}

pub fn open(rate: f64, secs: f64, pool: usize) -> Load {
    Load::Open {
        rate: Curve::flat(rate, Some(Duration::from_secs_f64(secs))),
        pool,
    }
}

pub fn run(spec: &RunSpec) -> RunOutput {
    engine::run(
        spec,
        &AtomicBool::new(false),
        &mut |_: &merge::SecondView| false,
    )
    .expect("run starts")
}

/// Relative difference |a-b|/b.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b
}

/// The CPU lock of this test binary: hogs hold it alone, tests bounded by the clock share it.
static CPU: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Tests that take a CPU from others (busy loops, a service that spins, a saturated
/// generator), or whose verdict a stall of a few hundred milliseconds would spoil, run one at
/// a time: two of them at once in this test binary on a two-core machine would measure each
/// other.
pub fn cpu_exclusive() -> std::sync::RwLockWriteGuard<'static, ()> {
    CPU.write().unwrap_or_else(|e| e.into_inner())
}

/// Tests with a wall-clock bound (a stop within a second, a rate kept) run beside each other
/// but never beside a hog of [`cpu_exclusive`], which would make them miss it.
pub fn cpu_shared() -> std::sync::RwLockReadGuard<'static, ()> {
    CPU.read().unwrap_or_else(|e| e.into_inner())
}
