//! Async completion: when the work the load started is really done. A service that answers
//! 202 and finishes through a queue is judged by when the last job completes, not by its
//! response times. A probe polls a URL (from the start of the load, every `every`) until a
//! condition on its body holds (`$.sold >= 1000` on JSON, `sum(lag) == 0` on a Prometheus
//! scrape) at a poll after the last response, or `within` runs out; it keeps the progress
//! value over time. It runs on its own thread with bounded requests, so it
//! never changes the load and never hangs the run.

use model::Target;
use serde_json::Value;
use serde_json_path::JsonPath;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A comparison on a poll's body: a JSONPath on JSON (`$.sold >= 1000`), or a series of a
/// Prometheus text-format scrape (`sum(kafka_consumergroup_lag) == 0`).
#[derive(Clone, Debug)]
pub struct Condition {
    pub left: Left,
    pub op: Cmp,
    pub value: Value,
    /// As written.
    pub text: String,
}

/// What a condition compares.
#[derive(Clone, Debug)]
pub enum Left {
    /// The first match of a JSONPath in a JSON body.
    Json(JsonPath),
    /// The sum of the series matching `NAME{labels}` in a Prometheus text-format body.
    Prometheus(String),
}

/// What one body said: whether the condition held, the compared value, and the body as JSON
/// (for a progress path) when it is JSON.
pub struct Reading {
    pub holds: bool,
    pub found: Option<Value>,
    pub json: Option<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Condition {
    /// `$.sold >= 1000`, `$.state == "CONFIRMED"`: a JSONPath, a comparison, and a JSON
    /// value (number, string in double quotes, true, false, null). The comparison is the last
    /// one outside brackets and quotes, so a filter inside the path may hold its own.
    pub fn parse(text: &str) -> Result<Condition, String> {
        let (at, op, len) = last_operator(text)
            .ok_or_else(|| format!("'{text}': expected PATH OP VALUE, e.g. '$.sold >= 1000'"))?;
        let path_text = text[..at].trim();
        let value_text = text[at + len..].trim();
        let path = JsonPath::parse(path_text)
            .map_err(|e| format!("'{text}': invalid JSONPath '{path_text}': {e}"))?;
        Condition::with(text, Left::Json(path), op, value_text)
    }

    /// `sum(SERIES) OP NUMBER` or `SERIES OP NUMBER` on a Prometheus text-format body
    /// (`SERIES` is `name` or `name{label="v",...}`; matching series are summed).
    pub fn parse_prometheus(text: &str) -> Result<Condition, String> {
        let (at, op, len) = last_operator(text).ok_or_else(|| {
            format!("'{text}': expected SERIES OP NUMBER, e.g. 'sum(kafka_consumergroup_lag) == 0'")
        })?;
        let left = text[..at].trim();
        let series = left
            .strip_prefix("sum(")
            .and_then(|s| s.strip_suffix(')'))
            .unwrap_or(left)
            .trim();
        let name_ok = series.split('{').next().is_some_and(|n| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_:".contains(&b))
        });
        if !name_ok {
            return Err(format!(
                "'{text}': '{left}' is not a series (name or name{{labels}})"
            ));
        }
        let c = Condition::with(
            text,
            Left::Prometheus(series.to_string()),
            op,
            text[at + len..].trim(),
        )?;
        if !c.value.is_number() {
            return Err(format!("'{text}': a series compares with a number"));
        }
        Ok(c)
    }

    fn with(text: &str, left: Left, op: Cmp, value_text: &str) -> Result<Condition, String> {
        let value: Value = serde_json::from_str(value_text).map_err(|_| {
            format!("'{text}': '{value_text}' is not a JSON value (a number, \"text\", true, false or null)")
        })?;
        if matches!(op, Cmp::Lt | Cmp::Le | Cmp::Gt | Cmp::Ge) && !value.is_number() {
            return Err(format!(
                "'{text}': {value_text} is not a number to compare with"
            ));
        }
        Ok(Condition {
            left,
            op,
            value,
            text: text.trim().to_string(),
        })
    }

    /// Whether the JSON `body` meets the condition (its path's first match compared), and
    /// that match. A Prometheus condition never holds on JSON.
    pub fn eval(&self, body: &Value) -> (bool, Option<Value>) {
        let Left::Json(path) = &self.left else {
            return (false, None);
        };
        let found = path.query(body).first().cloned();
        let holds = found
            .as_ref()
            .is_some_and(|v| compare(v, self.op, &self.value));
        (holds, found)
    }

    /// Reads a poll's raw body: JSON for a JSONPath condition, the text format for a
    /// Prometheus one; `Err` says why the body could not be read.
    pub fn read(&self, body: &[u8]) -> Result<Reading, String> {
        match &self.left {
            Left::Json(_) => {
                let json: Value = serde_json::from_slice(body)
                    .map_err(|e| format!("the answer is not JSON: {e}"))?;
                let (holds, found) = self.eval(&json);
                Ok(Reading {
                    holds,
                    found,
                    json: Some(json),
                })
            }
            Left::Prometheus(series) => {
                let scrape = crate::prom::Scrape::parse(&String::from_utf8_lossy(body));
                let found = scrape.value(series).map(Value::from);
                let holds = found
                    .as_ref()
                    .is_some_and(|v| compare(v, self.op, &self.value));
                Ok(Reading {
                    holds,
                    found,
                    json: None,
                })
            }
        }
    }
}

/// Finds the last comparison operator outside `[...]` and quotes: (offset, op, length).
fn last_operator(text: &str) -> Option<(usize, Cmp, usize)> {
    let b = text.as_bytes();
    let (mut depth, mut quote, mut found) = (0i32, None::<u8>, None);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                b'"' | b'\'' => quote = Some(c),
                b'[' | b'(' => depth += 1,
                b']' | b')' => depth -= 1,
                b'<' | b'>' | b'=' | b'!' if depth == 0 => {
                    let two = b.get(i + 1) == Some(&b'=');
                    let op = match (c, two) {
                        (b'<', true) => Some(Cmp::Le),
                        (b'>', true) => Some(Cmp::Ge),
                        (b'=', true) => Some(Cmp::Eq),
                        (b'!', true) => Some(Cmp::Ne),
                        (b'<', false) => Some(Cmp::Lt),
                        (b'>', false) => Some(Cmp::Gt),
                        _ => None,
                    };
                    if let Some(op) = op {
                        let len = if two { 2 } else { 1 };
                        found = Some((i, op, len));
                        i += len;
                        continue;
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    found
}

fn compare(found: &Value, op: Cmp, want: &Value) -> bool {
    // A number may come as a string ("1000"), as some APIs write them.
    let num = |v: &Value| {
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
    };
    match op {
        Cmp::Eq | Cmp::Ne => {
            let same = match (num(found), want.as_f64()) {
                (Some(a), Some(b)) => a == b,
                _ => found == want,
            };
            same == (op == Cmp::Eq)
        }
        _ => match (num(found), want.as_f64()) {
            (Some(a), Some(b)) => match op {
                Cmp::Lt => a < b,
                Cmp::Le => a <= b,
                Cmp::Gt => a > b,
                _ => a >= b,
            },
            _ => false,
        },
    }
}

/// How a poll is fetched: `GET target` within the time given, giving the status, the
/// `Retry-After` in seconds and the body. The default speaks plain HTTP/1.1; the engine gives
/// one that speaks TLS with the run's options.
pub type Fetch =
    Arc<dyn Fn(&Target, Duration) -> Result<(u16, Option<f64>, Vec<u8>), String> + Send + Sync>;

/// Plain HTTP/1.1 polls (an `https://` target is refused with a reason).
pub fn plain_fetch() -> Fetch {
    Arc::new(|t: &Target, timeout: Duration| {
        if t.tls {
            return Err(format!("{}: this poller speaks plain http only", t.url()));
        }
        crate::http::get_full(t, timeout)
    })
}

/// What to poll and when it counts as complete.
#[derive(Clone)]
pub struct Probe {
    pub target: Target,
    pub until: Condition,
    /// A number to chart while it drains (default: the condition's own path).
    pub progress: Option<JsonPath>,
    pub every: Duration,
    pub within: Duration,
    /// How each poll is fetched.
    pub fetch: Fetch,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("target", &self.target.url())
            .field("until", &self.until.text)
            .field("every", &self.every)
            .field("within", &self.within)
            .finish()
    }
}

impl Probe {
    /// A probe of `get` (a full `http://` or `https://` URL, or a path on `base`'s host)
    /// until `until` holds, with an optional `progress` JSONPath. It polls in plain HTTP/1.1
    /// until given a [`Fetch`] that speaks TLS.
    pub fn new(
        base: &Target,
        get: &str,
        until: &str,
        progress: Option<&str>,
        every: Duration,
        within: Duration,
    ) -> Result<Probe, String> {
        let target = if get.starts_with('/') {
            if !base.protocol.is_http() {
                return Err(format!(
                    "get {get}: a gRPC target has no URL to poll; give a full http(s):// URL"
                ));
            }
            Target {
                path: get.to_string(),
                ..base.clone()
            }
        } else {
            let t = Target::parse(get).map_err(|e| format!("get {get}: {e}"))?;
            if !t.protocol.is_http() {
                return Err(format!(
                    "get {get}: the probe polls http:// or https:// URLs"
                ));
            }
            t
        };
        let progress = progress
            .map(|p| {
                JsonPath::parse(p).map_err(|e| format!("progress '{p}': invalid JSONPath: {e}"))
            })
            .transpose()?;
        if every.is_zero() || within.is_zero() {
            return Err("every and within must be longer than zero".into());
        }
        Ok(Probe {
            target,
            until: match until.strip_prefix("prometheus:") {
                Some(expr) => Condition::parse_prometheus(expr.trim())?,
                None => Condition::parse(until)?,
            },
            progress,
            every,
            within,
            fetch: plain_fetch(),
        })
    }
}

/// What a probe saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// When the condition first held, from the start.
    pub complete_at: Option<Duration>,
    /// The last value of the condition's path, as JSON text.
    pub last_value: Option<String>,
    /// (seconds from the start, progress value) per poll that read one.
    pub timeline: Vec<(f64, f64)>,
    pub polls: u64,
    /// Polls that got no usable answer (connection, status, not JSON), and the first reason.
    pub failed_polls: u64,
    pub first_failure: Option<String>,
}

/// A probe polling on its thread.
pub struct Running {
    stop: Arc<AtomicBool>,
    /// Set when the load's last response is in: only then may the condition end the probe
    /// (a queue's lag is 0 before the load starts, too).
    load_done: Arc<AtomicBool>,
    thread: Option<JoinHandle<Outcome>>,
}

impl Probe {
    /// Starts polling now; times are from `start` (the load's start).
    pub fn start(self, start: Instant) -> Running {
        let stop = Arc::new(AtomicBool::new(false));
        let load_done = Arc::new(AtomicBool::new(false));
        let (flag, done) = (stop.clone(), load_done.clone());
        let thread = std::thread::Builder::new()
            .name("brink-completion".into())
            .spawn(move || self.poll(start, &flag, &done))
            .ok();
        Running {
            stop,
            load_done,
            thread,
        }
    }

    fn poll(&self, start: Instant, stop: &AtomicBool, load_done: &AtomicBool) -> Outcome {
        let mut out = Outcome::default();
        let deadline = start + self.within;
        let mut next = Instant::now();
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            let at = Instant::now();
            out.polls += 1;
            // Each poll is bounded: a probe that stops answering cannot hold the run.
            let limit = self
                .every
                .clamp(Duration::from_millis(200), Duration::from_secs(5));
            match (self.fetch)(&self.target, limit) {
                Ok((200..=299, _, body)) => match self.until.read(&body) {
                    Ok(r) => {
                        let t = at.saturating_duration_since(start);
                        let progress = match (&self.progress, &r.json) {
                            (Some(p), Some(json)) => p.query(json).first().and_then(number),
                            _ => r.found.as_ref().and_then(number),
                        };
                        if let Some(v) = progress {
                            out.timeline.push((t.as_secs_f64(), v));
                        }
                        out.last_value = r.found.map(|v| v.to_string());
                        if r.holds && load_done.load(Ordering::Relaxed) {
                            out.complete_at = Some(t);
                            return out;
                        }
                    }
                    Err(e) => failed(&mut out, e),
                },
                Ok((status, _, _)) => failed(&mut out, format!("status {status}")),
                Err(e) => failed(&mut out, e),
            }
            next += self.every;
            let now = Instant::now();
            if next > now {
                sleep_until(next.min(deadline), stop);
            } else {
                next = now;
            }
        }
        out
    }
}

fn number(v: &Value) -> Option<f64> {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

fn failed(out: &mut Outcome, why: String) {
    out.failed_polls += 1;
    out.first_failure.get_or_insert(why);
}

/// Sleeps until `t`, waking early when `stop` is set.
fn sleep_until(t: Instant, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= t {
            return;
        }
        std::thread::sleep((t - now).min(Duration::from_millis(20)));
    }
}

impl Running {
    /// The load's last response is in: from the next poll on, the condition ends the probe.
    pub fn load_done(&self) {
        self.load_done.store(true, Ordering::Relaxed);
    }

    /// Waits for the probe to finish (complete, or out of time); `interrupt` ends the wait
    /// early, keeping what was seen.
    pub fn finish(mut self, interrupt: &AtomicBool) -> Outcome {
        let Some(thread) = self.thread.take() else {
            return Outcome::default();
        };
        while !thread.is_finished() {
            if interrupt.load(Ordering::Relaxed) {
                self.stop.store(true, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        thread.join().unwrap_or_default()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_parse_and_compare() {
        let c = Condition::parse("$.sold >= 1000").unwrap();
        assert!(c.eval(&serde_json::json!({"sold": 1000})).0);
        assert!(!c.eval(&serde_json::json!({"sold": 999})).0);
        assert!(
            c.eval(&serde_json::json!({"sold": "1200"})).0,
            "numbers as strings"
        );
        assert!(!c.eval(&serde_json::json!({})).0);
        let s = Condition::parse(r#"$.state == "CONFIRMED""#).unwrap();
        assert!(s.eval(&serde_json::json!({"state": "CONFIRMED"})).0);
        assert!(!s.eval(&serde_json::json!({"state": "PENDING"})).0);
        // A filter inside the path keeps its own comparison.
        let f = Condition::parse(r#"$.jobs[?@.state == "done"].n > 2"#).unwrap();
        assert!(
            f.eval(&serde_json::json!({"jobs": [{"state": "done", "n": 3}]}))
                .0
        );
        let ne = Condition::parse("$.lag != 0").unwrap();
        assert!(ne.eval(&serde_json::json!({"lag": 4})).0);
        for bad in ["$.sold", "$.sold >= lots", "sold >= 1", r#"$.state < "x""#] {
            assert!(Condition::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prometheus_conditions_sum_the_series_of_a_scrape() {
        let c = Condition::parse_prometheus("sum(kafka_consumergroup_lag) == 0").unwrap();
        let lagging = b"# TYPE kafka_consumergroup_lag gauge\nkafka_consumergroup_lag{partition=\"0\"} 3\nkafka_consumergroup_lag{partition=\"1\"} 4\n";
        let r = c.read(lagging).unwrap();
        assert!(!r.holds);
        assert_eq!(r.found, Some(serde_json::json!(7.0)));
        let drained = b"kafka_consumergroup_lag{partition=\"0\"} 0\nkafka_consumergroup_lag{partition=\"1\"} 0\n";
        assert!(c.read(drained).unwrap().holds);
        let one = Condition::parse_prometheus(r#"jobs_done{queue="a"} >= 2"#).unwrap();
        assert!(
            one.read(b"jobs_done{queue=\"a\"} 2\njobs_done{queue=\"b\"} 0\n")
                .unwrap()
                .holds
        );
        for bad in ["sum(lag)", "sum() == 0", "lag == \"x\""] {
            assert!(Condition::parse_prometheus(bad).is_err(), "{bad}");
        }
    }
}
