//! `--metrics-listen` and `--out prometheus=URL`: the run's live metrics for the user's
//! Prometheus, as a sink. Every merged second goes into the `metrics` crate's series, which
//! its endpoint serves and each remote writer queues; each scenario (or search step) starts
//! and ends a set of series and its start/end markers. The labels are the run (its start
//! time), the target and the user's `--tag`s. Checked before any load: an address beyond
//! loopback needs a token, a tag must be a valid label name, an `--out` must name a kind and
//! an http(s) URL. At the end the writers get [`FLUSH`] to deliver what is queued; the exit
//! code never depends on them.

use crate::cli::LiveArgs;
use crate::exit::Fail;
use runner::{Event, Job, Sink};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Labels brink sets itself: a tag cannot take their names.
const OWN: [&str; 9] = [
    "run", "target", "scenario", "request", "status", "kind", "code", "le", "quantile",
];

/// How long the remote writers may take to deliver what is queued when the run ends.
const FLUSH: Duration = Duration::from_secs(10);

pub struct LiveMetrics {
    series: Arc<Mutex<metrics::Series>>,
    endpoint: Option<metrics::Endpoint>,
    remote: Vec<metrics::RemoteWrite>,
    /// Each job's request names, by job index.
    requests: Vec<Vec<String>>,
    search: bool,
    steps: usize,
    linger: Duration,
}

/// The sink, when `--metrics-listen` or `--out` asks for one: its endpoint is listening and
/// its writers started on return.
pub fn sink(
    a: &LiveArgs,
    quiet: bool,
    jobs: &[Job],
    tags: &[(String, String)],
) -> Result<Option<LiveMetrics>, Fail> {
    if a.metrics_listen.is_none() && a.out.is_empty() {
        if !a.out_headers.is_empty() {
            return Err(Fail::input("--out-header goes with --out"));
        }
        return Ok(None);
    }
    let destinations = outs(a)?;
    let listen = match &a.metrics_listen {
        Some(l) => {
            let addr = resolve(l)?;
            Some((l, addr, token(a, l, addr)?))
        }
        None => None,
    };
    let linger = plan::parse_duration(&a.metrics_linger)
        .map_err(|e| Fail::input(format!("--metrics-linger: {e}")))?;
    let mut labels = vec![
        (
            "run".to_string(),
            results::rfc3339_utc(std::time::SystemTime::now()),
        ),
        (
            "target".to_string(),
            // Without its query string: a scraper (or anyone who reads the store) gets no key
            // that a URL carries there.
            jobs.first().map_or_else(String::new, |j| {
                let shown = runner::target_info(&j.spec).shown();
                shown
                    .split(['?', '#'])
                    .next()
                    .unwrap_or_default()
                    .to_string()
            }),
        ),
    ];
    for (k, v) in tags {
        check_label(k)?;
        labels.push((k.clone(), v.clone()));
    }
    let series = Arc::new(Mutex::new(metrics::Series::new(labels)));
    let endpoint = match listen {
        Some((listen, addr, token)) => {
            let e = metrics::listen(addr, token, series.clone())
                .map_err(|e| Fail::input(format!("--metrics-listen {listen}: {e}")))?;
            if !quiet {
                eprintln!("metrics at http://{}/metrics", e.addr);
            }
            Some(e)
        }
        None => None,
    };
    let remote = destinations
        .into_iter()
        .map(|d| {
            metrics::RemoteWrite::start(d)
                .map_err(|e| Fail::input(format!("--out: cannot start its writer: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(LiveMetrics {
        series,
        endpoint,
        remote,
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

/// The token scrapers must present: required beyond loopback.
fn token(a: &LiveArgs, listen: &str, addr: SocketAddr) -> Result<Option<String>, Fail> {
    match &a.metrics_token_file {
        Some(f) => Ok(Some(fleet::trust::read_token(f).map_err(Fail::input)?)),
        None if addr.ip().is_loopback() => Ok(None),
        None => Err(Fail::input(format!(
            "--metrics-listen {listen} is reachable from other machines: give --metrics-token-file FILE (scrapers send Authorization: Bearer TOKEN)"
        ))),
    }
}

/// Every `--out KIND=URL`, with the `--out-header`s, checked.
fn outs(a: &LiveArgs) -> Result<Vec<metrics::Destination>, Fail> {
    let headers = a
        .out_headers
        .iter()
        .map(|h| model::parse_header(h).map_err(|e| Fail::input(format!("--out-header: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    a.out
        .iter()
        .map(|o| {
            let bad = |why: String| Fail::input(format!("--out {o}: {why}"));
            let url = match o.split_once('=') {
                Some(("prometheus", url)) => url,
                Some((kind, _)) => {
                    return Err(bad(format!(
                        "unknown kind '{kind}' (prometheus=URL writes to Prometheus remote write)"
                    )))
                }
                None => {
                    return Err(bad(
                        "expected KIND=URL, e.g. prometheus=http://127.0.0.1:9090/api/v1/write"
                            .into(),
                    ))
                }
            };
            let url = model::Target::parse(url).map_err(|e| bad(e.to_string()))?;
            if !url.protocol.is_http() {
                return Err(bad("remote write goes to an http:// or https:// URL".into()));
            }
            let tls = if url.tls {
                let config = engine::tls::client_config(
                    &engine::TlsOptions::default(),
                    model::Protocol::Http1,
                )
                .map_err(|e| bad(e.to_string()))?;
                let name = engine::tls::server_name(&url.host).map_err(|e| bad(e.to_string()))?;
                Some((tokio_rustls::TlsConnector::from(config), name))
            } else {
                None
            };
            Ok(metrics::Destination {
                url,
                headers: headers.clone(),
                tls,
            })
        })
        .collect()
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
            "--tag {k}=...: with --metrics-listen or --out a tag is a metrics label: letters, digits and _, not starting with a digit or __, and none of {}",
            OWN.join(", ")
        )));
    }
    Ok(())
}

impl LiveMetrics {
    /// Changes the series, then queues them for every remote writer.
    fn with(&self, f: impl FnOnce(&mut metrics::Series)) {
        if let Ok(mut s) = self.series.lock() {
            f(&mut s);
            for w in &self.remote {
                w.push(&s);
            }
        }
    }

    /// Gives the writers [`FLUSH`] to deliver, and says what did not arrive.
    fn finish(&mut self) {
        for w in self.remote.drain(..) {
            let url = w.url.clone();
            let d = w.finish(FLUSH);
            if d.lost > 0 {
                eprintln!(
                    "brink: remote write to {url}: {} of {} updates (one a second) not delivered ({})",
                    d.lost,
                    d.lost + d.sent,
                    d.failure.as_deref().unwrap_or("the store refused them")
                );
            } else if d.failure.is_some() {
                eprintln!("brink: remote write to {url}: every second delivered after all");
            }
            if let Some(why) = &d.natives_refused {
                eprintln!(
                    "brink: note: {url} does not take native histograms ({why}); latency went as the classic histogram only"
                );
            }
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
            Event::Second(view) => {
                let me = observe::procfs::usage(std::process::id());
                self.with(|s| {
                    s.second(view);
                    s.process = me.map(|(cpu_s, rss_bytes)| metrics::Process { cpu_s, rss_bytes });
                });
            }
            Event::StepDone(row) if !row.interrupted => self.with(|s| s.verdict(row.pass)),
            Event::RunEnded => self.with(|s| s.end()),
            Event::Exit(_) => {
                self.finish();
                if self.endpoint.is_some() && !self.linger.is_zero() {
                    std::thread::sleep(self.linger);
                }
            }
            _ => {}
        }
        Ok(())
    }
}
