//! The series as Prometheus families and samples, once, for both writers: the text format a
//! scrape reads (`text`) and remote write (`remote`). Every family is always listed, with its
//! samples (possibly none), so the list of names a dashboard may query is [`FAMILIES`]. The
//! latency histogram is also given as native histograms ([`natives`]), which only remote
//! write carries (the text format has no form for them).

use crate::series::{Request, Scenario, Series, BOUNDS, QUANTILES};
use stats::ErrorKind;

/// Every family written, with its type: what a dashboard may query.
pub const FAMILIES: [(&str, &str); 21] = [
    ("brink_requests_total", "counter"),
    ("brink_responses_total", "counter"),
    ("brink_errors_total", "counter"),
    ("brink_grpc_total", "counter"),
    ("brink_late_total", "counter"),
    ("brink_websocket_upgrades_total", "counter"),
    ("brink_websocket_upgrades_refused_total", "counter"),
    ("brink_websocket_messages_total", "counter"),
    ("brink_websocket_closes_total", "counter"),
    ("brink_websocket_unexpected_closes_total", "counter"),
    ("brink_request_duration_seconds", "histogram"),
    ("brink_latency_seconds", "gauge"),
    ("brink_seconds_total", "counter"),
    ("brink_load_target", "gauge"),
    ("brink_in_flight", "gauge"),
    ("brink_step_pass", "gauge"),
    ("brink_scenario_start_timestamp_seconds", "gauge"),
    ("brink_scenario_end_timestamp_seconds", "gauge"),
    ("brink_cpu_seconds_total", "counter"),
    ("brink_resident_memory_bytes", "gauge"),
    ("brink_run_info", "gauge"),
];

/// Labels as written, in order: the run's, then the sample's own.
pub type Labels = Vec<(String, String)>;

/// One sample: its name (the family's, or a histogram's `_bucket`, `_sum`, `_count`).
pub struct Sample {
    pub name: String,
    pub labels: Labels,
    pub value: f64,
}

/// One family: its name, type, help and samples.
pub struct Family {
    pub name: &'static str,
    pub kind: &'static str,
    pub help: &'static str,
    pub samples: Vec<Sample>,
}

impl Family {
    /// The family `name` of [`FAMILIES`] (its type from there).
    fn new(name: &'static str, help: &'static str) -> Family {
        let kind = FAMILIES
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("untyped", |(_, k)| *k);
        Family {
            name,
            kind,
            help,
            samples: Vec::new(),
        }
    }

    fn add(&mut self, suffix: &str, labels: Labels, value: f64) {
        self.samples.push(Sample {
            name: format!("{}{suffix}", self.name),
            labels,
            value,
        });
    }
}

fn run(s: &Series) -> Labels {
    s.labels.clone()
}

fn per(s: &Series, sc: &Scenario) -> Labels {
    let mut l = run(s);
    l.push(("scenario".into(), sc.name.clone()));
    l
}

fn with(l: &Labels, k: &str, v: String) -> Labels {
    let mut l = l.clone();
    l.push((k.into(), v));
    l
}

/// Every request of every scenario, with its labels.
fn each(s: &Series) -> impl Iterator<Item = (Labels, &Request)> {
    s.scenarios.iter().flat_map(move |sc| {
        sc.requests.iter().map(move |r| {
            let l = with(&per(s, sc), "request", r.name.clone());
            (l, r)
        })
    })
}

/// One request's latency as a native histogram: `brink_request_duration_seconds` with the
/// classic histogram's labels but `le`.
pub struct Native<'a> {
    pub labels: Labels,
    pub count: u64,
    pub sum: f64,
    /// Observations by bucket index at [`crate::series::NATIVE_SCHEMA`].
    pub buckets: &'a std::collections::BTreeMap<i32, u64>,
}

/// Every request's native latency histogram.
pub fn natives(s: &Series) -> Vec<Native<'_>> {
    each(s)
        .map(|(labels, r)| Native {
            labels,
            count: r.count,
            sum: r.sum,
            buckets: &r.native,
        })
        .collect()
}

/// The series' families, in [`FAMILIES`]' order.
pub fn families(s: &Series) -> Vec<Family> {
    let mut out = per_request(s);
    out.extend(per_scenario(s));
    out.extend(process(s));
    let mut info = Family::new("brink_run_info", "Always 1: the run's labels, to join on.");
    info.add("", run(s), 1.0);
    out.push(info);
    out
}

fn per_request(s: &Series) -> Vec<Family> {
    let mut requests = Family::new(
        "brink_requests_total",
        "Attempts finished: responses and errors.",
    );
    let mut responses = Family::new("brink_responses_total", "Responses by HTTP status.");
    let mut errors = Family::new(
        "brink_errors_total",
        "Attempts that got no response, by kind.",
    );
    let mut grpc = Family::new("brink_grpc_total", "gRPC calls by status code.");
    let mut late = Family::new(
        "brink_late_total",
        "Open model: requests started more than 1 ms after their intended time.",
    );
    let mut duration = Family::new(
        "brink_request_duration_seconds",
        "Latency from the intended start, responses only.",
    );
    let mut quantiles = Family::new(
        "brink_latency_seconds",
        "The last second's latency from the intended start at a quantile, exact to HDR precision.",
    );
    for (l, r) in each(s) {
        requests.add("", l.clone(), r.requests as f64);
        for (code, n) in &r.status {
            responses.add("", with(&l, "status", code.to_string()), *n as f64);
        }
        for k in ErrorKind::ALL {
            let n = r.errors[k.index()] as f64;
            errors.add("", with(&l, "kind", k.name().to_string()), n);
        }
        for (code, n) in &r.grpc {
            grpc.add("", with(&l, "code", code.to_string()), *n as f64);
        }
        late.add("", l.clone(), r.late as f64);
        for (bound, n) in BOUNDS.iter().zip(r.buckets) {
            duration.add("_bucket", with(&l, "le", bound.to_string()), n as f64);
        }
        duration.add("_bucket", with(&l, "le", "+Inf".into()), r.count as f64);
        duration.add("_sum", l.clone(), r.sum);
        duration.add("_count", l.clone(), r.count as f64);
        if let Some(last) = r.last {
            for (q, v) in QUANTILES.iter().zip(last) {
                quantiles.add("", with(&l, "quantile", q.to_string()), v);
            }
        }
    }
    let mut out = vec![requests, responses, errors, grpc, late];
    out.extend(websocket(s));
    out.extend([duration, quantiles]);
    out
}

/// WebSocket requests: their connections' upgrades (and refusals by status), messages each
/// way, closes by code and those the server ended; no samples for other protocols.
fn websocket(s: &Series) -> Vec<Family> {
    let mut upgrades = Family::new(
        "brink_websocket_upgrades_total",
        "WebSocket upgrades completed.",
    );
    let mut refused = Family::new(
        "brink_websocket_upgrades_refused_total",
        "WebSocket upgrades refused, by the status the server answered with.",
    );
    let mut messages = Family::new(
        "brink_websocket_messages_total",
        "WebSocket data messages, by direction (sent, received).",
    );
    let mut closes = Family::new(
        "brink_websocket_closes_total",
        "WebSocket connections closed, by the server's close code (1006: ended without one).",
    );
    let mut unexpected = Family::new(
        "brink_websocket_unexpected_closes_total",
        "WebSocket connections the server ended before brink closed them.",
    );
    for (l, r) in each(s) {
        let Some(w) = &r.ws else {
            continue;
        };
        upgrades.add("", l.clone(), w.upgrades as f64);
        for (status, n) in &w.refused {
            refused.add("", with(&l, "status", status.to_string()), *n as f64);
        }
        messages.add("", with(&l, "direction", "sent".into()), w.sent as f64);
        messages.add(
            "",
            with(&l, "direction", "received".into()),
            w.received as f64,
        );
        for (code, n) in &w.closes {
            closes.add("", with(&l, "code", code.to_string()), *n as f64);
        }
        unexpected.add("", l, w.unexpected as f64);
    }
    vec![upgrades, refused, messages, closes, unexpected]
}

/// Per scenario: the seconds merged, the level asked, the requests in flight, a search
/// step's verdict, and when it
/// started and ended (run markers).
fn per_scenario(s: &Series) -> Vec<Family> {
    let mut seconds = Family::new(
        "brink_seconds_total",
        "Seconds of the scenario merged so far.",
    );
    let mut target = Family::new(
        "brink_load_target",
        "The load asked for now: requests/s (open model) or connections (closed); a search step's level.",
    );
    let mut in_flight = Family::new(
        "brink_in_flight",
        "Requests sent and not yet answered when the last second ended.",
    );
    let mut pass = Family::new(
        "brink_step_pass",
        "A search step's verdict once it is judged: 1 passed, 0 failed.",
    );
    let mut start = Family::new(
        "brink_scenario_start_timestamp_seconds",
        "When the scenario (or search step) started.",
    );
    let mut end = Family::new(
        "brink_scenario_end_timestamp_seconds",
        "When the scenario (or search step) ended.",
    );
    for sc in &s.scenarios {
        let l = per(s, sc);
        seconds.add("", l.clone(), sc.seconds as f64);
        if let Some(t) = sc.target {
            target.add("", l.clone(), t);
        }
        if let Some(n) = sc.in_flight {
            in_flight.add("", l.clone(), n as f64);
        }
        if let Some(p) = sc.pass {
            pass.add("", l.clone(), f64::from(u8::from(p)));
        }
        start.add("", l.clone(), sc.started);
        if let Some(e) = sc.ended {
            end.add("", l, e);
        }
    }
    vec![seconds, target, in_flight, pass, start, end]
}

/// brink's own process: what generating the load costs it.
fn process(s: &Series) -> Vec<Family> {
    let mut cpu = Family::new(
        "brink_cpu_seconds_total",
        "CPU time brink's process has used (user and system), load generation included.",
    );
    let mut rss = Family::new("brink_resident_memory_bytes", "brink's resident memory.");
    if let Some(p) = &s.process {
        cpu.add("", run(s), p.cpu_s);
        rss.add("", run(s), p.rss_bytes);
    }
    vec![cpu, rss]
}
