//! `--metrics-listen`: the run's live metrics for the user's Prometheus, as a sink. Every
//! merged second goes into the `metrics` crate's series, which its endpoint serves; each
//! scenario (or search step) starts and ends a set of series and its start/end markers. The
//! labels are the run (its start time), the target and the user's `--tag`s. Checked before
//! any load: an address beyond loopback needs a token, a tag must be a valid label name.

use crate::cli::RunArgs;
use crate::exit::Fail;
use runner::{Event, Job, Sink};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Labels brink sets itself: a tag cannot take their names.
const OWN: [&str; 9] = [
    "run", "target", "scenario", "request", "status", "kind", "code", "le", "quantile",
];

pub struct LiveMetrics {
    series: Arc<Mutex<metrics::Series>>,
    _endpoint: metrics::Endpoint,
    /// Each job's request names, by job index.
    requests: Vec<Vec<String>>,
    search: bool,
    steps: usize,
    linger: Duration,
}

/// The sink, when `--metrics-listen` asks for one: its endpoint is listening on return.
pub fn sink(
    a: &RunArgs,
    jobs: &[Job],
    tags: &[(String, String)],
) -> Result<Option<LiveMetrics>, Fail> {
    let Some(listen) = &a.metrics_listen else {
        return Ok(None);
    };
    let addr = resolve(listen)?;
    let token = match &a.metrics_token_file {
        Some(f) => Some(fleet::trust::read_token(f).map_err(Fail::input)?),
        None if addr.ip().is_loopback() => None,
        None => {
            return Err(Fail::input(format!(
                "--metrics-listen {listen} is reachable from other machines: give --metrics-token-file FILE (scrapers send Authorization: Bearer TOKEN)"
            )))
        }
    };
    let linger = plan::parse_duration(&a.metrics_linger)
        .map_err(|e| Fail::input(format!("--metrics-linger: {e}")))?;
    let mut labels = vec![
        (
            "run".to_string(),
            report::rfc3339_utc(std::time::SystemTime::now()),
        ),
        (
            "target".to_string(),
            jobs.first()
                .map_or_else(String::new, |j| runner::target_info(&j.spec).shown()),
        ),
    ];
    for (k, v) in tags {
        check_label(k)?;
        labels.push((k.clone(), v.clone()));
    }
    let series = Arc::new(Mutex::new(metrics::Series::new(labels)));
    let endpoint = metrics::listen(addr, token, series.clone())
        .map_err(|e| Fail::input(format!("--metrics-listen {listen}: {e}")))?;
    if !a.quiet {
        eprintln!("metrics at http://{}/metrics", endpoint.addr);
    }
    Ok(Some(LiveMetrics {
        series,
        _endpoint: endpoint,
        requests: jobs
            .iter()
            .map(|j| {
                let w = &j.spec.workload;
                w.requests.iter().map(|r| r.name.clone()).collect()
            })
            .collect(),
        search: false,
        steps: 0,
        linger,
    }))
}

fn resolve(listen: &str) -> Result<SocketAddr, Fail> {
    listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| Fail::input(format!("--metrics-listen {listen}: expected HOST:PORT")))
}

/// A tag becomes a label: its name must be one (letters, digits, `_`, not starting with a
/// digit) and not one brink sets.
fn check_label(k: &str) -> Result<(), Fail> {
    let valid = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !k.starts_with("__");
    if !valid || OWN.contains(&k) {
        return Err(Fail::input(format!(
            "--tag {k}=...: with --metrics-listen a tag is a metrics label: letters, digits and _, not starting with a digit or __, and none of {}",
            OWN.join(", ")
        )));
    }
    Ok(())
}

impl LiveMetrics {
    fn with(&self, f: impl FnOnce(&mut metrics::Series)) {
        if let Ok(mut s) = self.series.lock() {
            f(&mut s);
        }
    }
}

impl Sink for LiveMetrics {
    fn event(&mut self, e: &Event) -> Result<(), runner::Error> {
        match e {
            Event::Scenario { name, index, .. } => {
                let requests = self.requests.get(*index).cloned().unwrap_or_default();
                self.with(|s| s.start(name, &requests));
            }
            Event::Search { .. } => self.search = true,
            Event::RunStarted { .. } if self.search => {
                self.steps += 1;
                let requests = self.requests.first().cloned().unwrap_or_default();
                let step = format!("step {}", self.steps);
                self.with(|s| s.start(&step, &requests));
            }
            Event::Second(view) => self.with(|s| s.second(view)),
            Event::RunEnded => self.with(|s| s.end()),
            Event::Exit(_) if !self.linger.is_zero() => std::thread::sleep(self.linger),
            _ => {}
        }
        Ok(())
    }
}
