//! Helpers shared by the topics: building a run for a URL and running it in-process.

use engine::workload::Request;
use engine::{Curve, Load, RunOutput, RunSpec, StatusSet, Target, Workload};
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
        http2: false,
        insecure: false,
        cacert: None,
        ok_status: StatusSet::default(),
        threads: 2,
        grace: Duration::from_secs(2),
        capture_limit: engine::workload::capture::DEFAULT_LIMIT,
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
        &mut |_: &engine::SecondView| false,
    )
    .expect("run starts")
}

/// Relative difference |a-b|/b.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b
}
