//! Helpers of the engine's tests: a run for a URL, run in-process (holding the CPU lock
//! shared, as every load a test makes does).

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
    let _cpu = cpu_shared();
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

/// The one CPU lock of every test process ([`testkit::cpu`]), exclusive: for a test whose
/// verdict depends on time or that takes a CPU from others.
pub fn cpu_exclusive() -> testkit::cpu::Cpu {
    testkit::cpu::exclusive()
}

/// The same lock, light: for a test whose verdict depends on time but whose load is light
/// (under a quarter of a CPU in all, measured); it runs beside other light ones only.
pub fn cpu_light() -> testkit::cpu::Cpu {
    testkit::cpu::light()
}

/// The same lock, shared: [`run`] takes it itself.
pub fn cpu_shared() -> testkit::cpu::Cpu {
    testkit::cpu::shared()
}
