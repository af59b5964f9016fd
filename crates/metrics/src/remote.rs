//! Prometheus remote write 1.0, a second reader of the series: each second's snapshot is
//! encoded (protobuf `WriteRequest`, every sample stamped with the time it was taken) into a
//! bounded queue the moment the second is merged, and a thread of its own posts the queue in
//! order (snappy-compressed, the protocol's headers plus the user's). The load never waits
//! for it: a store that is down or answers 5xx or 429 is retried with backoff while the queue
//! keeps the seconds (at most [`MOST_QUEUED`] bytes; past it the oldest are dropped and
//! counted), a 4xx answer drops that batch (the store will never take it), and the first
//! failure is reported once. At the end the queue is drained for a bounded time and what
//! could not be delivered is said.
//!
//! Latency goes as the classic histogram (`_bucket`, `_sum`, `_count`) and as a native
//! (exponential) histogram on the family's own name, which `histogram_quantile` reads at about
//! 9% resolution whatever the latency. A store that does not take native histograms (a
//! Prometheus without `--enable-feature=native-histograms` answers 500 "native histograms are
//! disabled") refuses the whole request: the queued seconds are then sent again without them,
//! nothing is lost, and every later second goes with the classic histogram only.

use crate::families::{families, natives, Family, Native};
use crate::series::Series;
use crate::series::NATIVE_SCHEMA;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use model::Target;
use prost::Message;
use rustls::pki_types::ServerName;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// The most the queue holds, encoded, before its oldest seconds are dropped: a store down for
/// about a quarter of an hour loses nothing on a typical plan.
pub const MOST_QUEUED: usize = 64 << 20;
/// The most one request carries, encoded (before compression).
const MOST_PER_POST: usize = 4 << 20;
/// How long one request may take.
const POST_TIMEOUT: Duration = Duration::from_secs(10);
/// Backoff after a failure: doubling from the first to the last.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(200), Duration::from_secs(5));

#[derive(Clone, PartialEq, Message)]
struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, Message)]
struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    histograms: Vec<Histogram>,
}

/// A native histogram sample (prompb `Histogram`, integer counts, positive buckets only).
#[derive(Clone, PartialEq, Message)]
struct Histogram {
    #[prost(uint64, tag = "1")]
    count_int: u64,
    #[prost(double, tag = "3")]
    sum: f64,
    #[prost(sint32, tag = "4")]
    schema: i32,
    #[prost(double, tag = "5")]
    zero_threshold: f64,
    #[prost(uint64, tag = "6")]
    zero_count_int: u64,
    #[prost(message, repeated, tag = "11")]
    positive_spans: Vec<BucketSpan>,
    /// The first bucket's count, then each bucket's difference from the one before.
    #[prost(sint64, repeated, tag = "12")]
    positive_deltas: Vec<i64>,
    #[prost(int64, tag = "15")]
    timestamp: i64,
}

/// A run of consecutive buckets: `offset` from the end of the previous run (from index 0 for
/// the first), `length` buckets.
#[derive(Clone, PartialEq, Message)]
struct BucketSpan {
    #[prost(sint32, tag = "1")]
    offset: i32,
    #[prost(uint32, tag = "2")]
    length: u32,
}

/// `buckets` (index -> count, ascending) as spans of consecutive indexes and count deltas.
fn spans(buckets: &std::collections::BTreeMap<i32, u64>) -> (Vec<BucketSpan>, Vec<i64>) {
    let (mut spans, mut deltas) = (Vec::new(), Vec::new());
    let (mut next, mut previous): (Option<i32>, i64) = (None, 0);
    for (&i, &n) in buckets.iter().filter(|(_, n)| **n > 0) {
        match next {
            Some(at) if at == i => {
                if let Some(last) = spans.last_mut() {
                    let last: &mut BucketSpan = last;
                    last.length += 1;
                }
            }
            _ => spans.push(BucketSpan {
                offset: next.map_or(i, |at| i - at),
                length: 1,
            }),
        }
        deltas.push(n as i64 - previous);
        previous = n as i64;
        next = Some(i + 1);
    }
    (spans, deltas)
}

/// One request's native histogram as its own series.
fn native_series(n: &Native, at_ms: i64) -> TimeSeries {
    let mut labels = sorted_labels(&n.labels, "brink_request_duration_seconds");
    labels.retain(|l| l.name != "le");
    let (positive_spans, positive_deltas) = spans(n.buckets);
    TimeSeries {
        labels,
        samples: Vec::new(),
        histograms: vec![Histogram {
            count_int: n.count,
            sum: n.sum,
            schema: NATIVE_SCHEMA,
            zero_threshold: 0.0,
            zero_count_int: 0,
            positive_spans,
            positive_deltas,
            timestamp: at_ms,
        }],
    }
}

/// `labels` with `__name__`, sorted by name as the protocol asks.
fn sorted_labels(labels: &[(String, String)], name: &str) -> Vec<Label> {
    let mut out: Vec<Label> = labels
        .iter()
        .map(|(k, v)| Label {
            name: k.clone(),
            value: v.clone(),
        })
        .collect();
    out.push(Label {
        name: "__name__".into(),
        value: name.to_string(),
    });
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[derive(Clone, PartialEq, Message)]
struct Label {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

#[derive(Clone, PartialEq, Message)]
struct Sample {
    #[prost(double, tag = "1")]
    value: f64,
    #[prost(int64, tag = "2")]
    timestamp: i64,
}

/// One snapshot as a `WriteRequest`: every sample at `at_ms`, its labels sorted by name with
/// `__name__` among them, as the protocol asks; with `natives`, their histograms too.
fn encode(fams: &[Family], natives: &[Native], at_ms: i64) -> Vec<u8> {
    let mut timeseries: Vec<TimeSeries> = fams
        .iter()
        .flat_map(|f| &f.samples)
        .map(|s| TimeSeries {
            labels: sorted_labels(&s.labels, &s.name),
            samples: vec![Sample {
                value: s.value,
                timestamp: at_ms,
            }],
            histograms: Vec::new(),
        })
        .collect();
    timeseries.extend(natives.iter().map(|n| native_series(n, at_ms)));
    WriteRequest { timeseries }.encode_to_vec()
}

/// A queued `WriteRequest` without its native histograms (for a store that refuses them).
fn classic_only(body: &[u8]) -> Vec<u8> {
    let Ok(mut w) = WriteRequest::decode(body) else {
        return body.to_vec();
    };
    w.timeseries.retain(|t| t.histograms.is_empty());
    w.encode_to_vec()
}

/// Where to write, and how.
pub struct Destination {
    pub url: Target,
    /// Sent with every request (`--out-header`), after the protocol's own.
    pub headers: Vec<(String, String)>,
    /// For `https://`: the client configuration and the name the certificate must hold.
    pub tls: Option<(TlsConnector, ServerName<'static>)>,
}

/// What the writer did, for the closing line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Delivered {
    /// Seconds (snapshots) the store accepted.
    pub sent: u64,
    /// Seconds dropped: the queue was full, the store refused them (4xx), or they were still
    /// queued when the time to drain ran out.
    pub lost: u64,
    /// The first failure, in words.
    pub failure: Option<String>,
    /// The store refused native histograms (what it said): classic ones only were sent.
    pub natives_refused: Option<String>,
}

#[derive(Default)]
struct Queue {
    /// The last snapshot's time: each is stamped later, as a store refuses a whole request
    /// holding two samples of one series at the same millisecond.
    last_ms: i64,
    seconds: VecDeque<Vec<u8>>,
    bytes: usize,
    closing: Option<Instant>,
    done: Delivered,
    /// Native histograms go too (until the store refuses them).
    classic_only: bool,
}

struct Inner {
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// A remote-write output; its thread posts until [`RemoteWrite::finish`].
pub struct RemoteWrite {
    inner: Arc<Inner>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub url: String,
}

impl RemoteWrite {
    /// Starts the writer's thread.
    pub fn start(dest: Destination) -> std::io::Result<RemoteWrite> {
        let inner = Arc::new(Inner {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
        });
        let url = dest.url.url();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let shared = inner.clone();
        let thread = std::thread::Builder::new()
            .name("brink-remote-write".into())
            .spawn(move || rt.block_on(post_loop(&shared, &dest)))?;
        Ok(RemoteWrite {
            inner,
            thread: Some(thread),
            url,
        })
    }

    /// Queues a snapshot of `series` taken now; never waits for the network.
    pub fn push(&self, series: &Series) {
        let now_ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let Ok(mut q) = self.inner.queue.lock() else {
            return;
        };
        let at_ms = now_ms.max(q.last_ms + 1);
        q.last_ms = at_ms;
        let natives = if q.classic_only {
            Vec::new()
        } else {
            natives(series)
        };
        let body = encode(&families(series), &natives, at_ms);
        q.bytes += body.len();
        q.seconds.push_back(body);
        while q.bytes > MOST_QUEUED && q.seconds.len() > 1 {
            if let Some(old) = q.seconds.pop_front() {
                q.bytes -= old.len();
                q.done.lost += 1;
            }
        }
        drop(q);
        self.inner.wake.notify_all();
    }

    /// Drains the queue for at most `within`, stops the thread and says what was delivered.
    pub fn finish(mut self, within: Duration) -> Delivered {
        if let Ok(mut q) = self.inner.queue.lock() {
            q.closing = Some(Instant::now() + within);
        }
        self.inner.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.inner
            .queue
            .lock()
            .map(|q| q.done.clone())
            .unwrap_or_default()
    }
}

impl Drop for RemoteWrite {
    /// Left without [`RemoteWrite::finish`] (the command failed): the thread stops at once.
    fn drop(&mut self) {
        if let Ok(mut q) = self.inner.queue.lock() {
            q.closing.get_or_insert_with(Instant::now);
        }
        self.inner.wake.notify_all();
    }
}

/// What the next request carries: the oldest queued seconds, up to [`MOST_PER_POST`] bytes
/// (concatenated `WriteRequest`s are one `WriteRequest` holding all their series).
fn next_batch(q: &Queue) -> (Vec<u8>, usize) {
    let mut body = Vec::new();
    let mut n = 0;
    for s in &q.seconds {
        if n > 0 && body.len() + s.len() > MOST_PER_POST {
            break;
        }
        body.extend_from_slice(s);
        n += 1;
    }
    (body, n)
}

/// How a request ended.
enum Posted {
    Accepted,
    /// The store refused the batch for good (4xx other than 429).
    Refused(String),
    /// Worth trying again (down, 5xx, 429, timeout).
    Retry(String),
}

async fn post_loop(inner: &Inner, dest: &Destination) {
    let mut backoff = BACKOFF.0;
    loop {
        let (body, n, closing) = {
            let Ok(mut q) = inner.queue.lock() else {
                return;
            };
            while q.seconds.is_empty() && q.closing.is_none() {
                q = match inner.wake.wait(q) {
                    Ok(q) => q,
                    Err(_) => return,
                };
            }
            if q.seconds.is_empty() || q.closing.is_some_and(|c| Instant::now() >= c) {
                let left = q.seconds.len() as u64;
                q.done.lost += left;
                q.seconds.clear();
                return;
            }
            let (body, n) = next_batch(&q);
            (body, n, q.closing)
        };
        let answer = match closing {
            Some(c) => tokio::time::timeout_at(c.into(), post(dest, body))
                .await
                .unwrap_or_else(|_| Posted::Retry("no answer before the end".into())),
            None => post(dest, body).await,
        };
        let wait = {
            let Ok(mut q) = inner.queue.lock() else {
                return;
            };
            let why = match &answer {
                Posted::Refused(why) | Posted::Retry(why) => Some(why.as_str()),
                Posted::Accepted => None,
            };
            if let Some(why) = why.filter(|w| !q.classic_only && refuses_natives(w)) {
                q.drop_natives(why);
                continue;
            }
            match answer {
                Posted::Accepted => {
                    q.done.sent += n as u64;
                    q.pop(n);
                    None
                }
                Posted::Refused(why) => {
                    q.done.lost += n as u64;
                    q.pop(n);
                    fail_once(&mut q.done, &dest.url, &why, false);
                    None
                }
                Posted::Retry(why) => {
                    fail_once(&mut q.done, &dest.url, &why, true);
                    let until = Instant::now() + backoff;
                    Some(q.closing.map_or(until, |c| until.min(c)))
                }
            }
        };
        match wait {
            Some(until) => {
                backoff = (backoff * 2).min(BACKOFF.1);
                tokio::time::sleep_until(until.into()).await;
            }
            None => backoff = BACKOFF.0,
        }
    }
}

/// Whether a store's refusal is of native histograms (Prometheus: "native histograms are
/// disabled"; other stores name them too).
fn refuses_natives(why: &str) -> bool {
    why.to_ascii_lowercase().contains("histogram")
}

impl Queue {
    /// The store does not take native histograms: the queued seconds lose theirs, and later
    /// ones are encoded without.
    fn drop_natives(&mut self, why: &str) {
        self.classic_only = true;
        self.done.natives_refused = Some(why.to_string());
        for s in self.seconds.iter_mut() {
            *s = classic_only(s);
        }
        self.bytes = self.seconds.iter().map(Vec::len).sum();
    }

    /// Removes the `n` oldest seconds (sent, or refused for good).
    fn pop(&mut self, n: usize) {
        for _ in 0..n {
            if let Some(s) = self.seconds.pop_front() {
                self.bytes -= s.len();
            }
        }
    }
}

/// The first failure is said once, on stderr; the run goes on.
fn fail_once(done: &mut Delivered, url: &Target, why: &str, retrying: bool) {
    if done.failure.is_none() {
        let then = if retrying {
            "the metrics are kept and sent again"
        } else {
            "the store refused them for good"
        };
        eprintln!(
            "brink: remote write to {}: {why}; {then} (the load is not affected)",
            url.url()
        );
        done.failure = Some(why.to_string());
    }
}

/// One POST of `body` (uncompressed `WriteRequest` bytes).
async fn post(dest: &Destination, body: Vec<u8>) -> Posted {
    let compressed = match snap::raw::Encoder::new().compress_vec(&body) {
        Ok(c) => c,
        Err(e) => return Posted::Refused(format!("cannot compress: {e}")),
    };
    match tokio::time::timeout(POST_TIMEOUT, send(dest, compressed)).await {
        Err(_) => Posted::Retry(format!("no answer within {POST_TIMEOUT:?}")),
        Ok(Err(e)) => Posted::Retry(e),
        Ok(Ok((status, text))) => match status {
            200..=299 => Posted::Accepted,
            429 | 500..=599 => Posted::Retry(format!("answered {status}: {text}")),
            _ => Posted::Refused(format!("answered {status}: {text}")),
        },
    }
}

/// Sends the request over a fresh connection; returns the status and the start of the
/// answer's text (a store says why it refused there).
async fn send(dest: &Destination, body: Vec<u8>) -> Result<(u16, String), String> {
    let url = &dest.url;
    let tcp = TcpStream::connect((url.host.as_str(), url.port))
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let mut req = hyper::Request::post(url.path.as_str())
        .header(hyper::header::HOST, url.authority.as_str())
        .header(hyper::header::CONTENT_TYPE, "application/x-protobuf")
        .header(hyper::header::CONTENT_ENCODING, "snappy")
        .header("X-Prometheus-Remote-Write-Version", "0.1.0")
        .header(
            hyper::header::USER_AGENT,
            concat!("brink/", env!("CARGO_PKG_VERSION")),
        );
    for (k, v) in &dest.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = req
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("request: {e}"))?;
    match &dest.tls {
        None => exchange(TokioIo::new(tcp), req).await,
        Some((tls, name)) => {
            let stream = tls
                .connect(name.clone(), tcp)
                .await
                .map_err(|e| format!("TLS: {e}"))?;
            exchange(TokioIo::new(stream), req).await
        }
    }
}

async fn exchange<I>(io: I, req: hyper::Request<Full<Bytes>>) -> Result<(u16, String), String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut send, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    tokio::spawn(conn);
    let resp = send
        .send_request(req)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    let status = resp.status().as_u16();
    let mut text = Vec::new();
    let mut body = resp.into_body();
    // The start of the answer is enough to say why; a store that streams without end is cut.
    while text.len() < 300 {
        let Some(Ok(frame)) = body.frame().await else {
            break;
        };
        if let Some(d) = frame.data_ref() {
            let room = 300 - text.len();
            text.extend_from_slice(&d[..d.len().min(room)]);
        }
    }
    let text = String::from_utf8_lossy(&text);
    Ok((status, model::guard::escaped(text.trim().as_bytes(), 200)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_decodes_as_a_write_request_with_sorted_labels() {
        let mut s = Series::new(vec![
            ("run".into(), "r1".into()),
            ("Team".into(), "x".into()),
        ]);
        s.start("s", &["r".to_string()]);
        let bytes = encode(&families(&s), &natives(&s), 1234);
        let both = [bytes.clone(), bytes].concat();
        let w = WriteRequest::decode(both.as_slice()).expect("decodes");
        let one = w.timeseries.len() / 2;
        assert!(one > 10, "{one} series");
        for ts in &w.timeseries {
            let names: Vec<&str> = ts.labels.iter().map(|l| l.name.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted);
            assert!(names.contains(&"__name__"));
            match ts.histograms.first() {
                Some(h) => assert_eq!(h.timestamp, 1234),
                None => assert_eq!(ts.samples[0].timestamp, 1234),
            }
        }
        let req = w
            .timeseries
            .iter()
            .find(|t| t.labels.iter().any(|l| l.value == "brink_requests_total"))
            .expect("requests");
        let value = |k: &str| {
            req.labels
                .iter()
                .find(|l| l.name == k)
                .map(|l| l.value.as_str())
        };
        assert_eq!(
            (
                value("run"),
                value("Team"),
                value("scenario"),
                value("request")
            ),
            (Some("r1"), Some("x"), Some("s"), Some("r"))
        );
    }

    #[test]
    fn native_buckets_travel_as_spans_and_deltas_and_can_be_left_out() {
        let buckets: std::collections::BTreeMap<i32, u64> =
            [(-80, 3), (-79, 5), (-78, 0), (-76, 2), (4, 1)]
                .into_iter()
                .collect();
        let (sp, deltas) = spans(&buckets);
        let sp: Vec<(i32, u32)> = sp.iter().map(|s| (s.offset, s.length)).collect();
        assert_eq!(
            sp,
            [(-80, 2), (2, 1), (79, 1)],
            "an empty bucket breaks a span"
        );
        assert_eq!(deltas, [3, 2, -3, -1]);
        // Decoded back: index by index, the counts.
        let mut at = 0;
        let mut count = 0i64;
        let mut back = Vec::new();
        let mut d = deltas.iter();
        for (offset, length) in sp {
            at += offset;
            for _ in 0..length {
                count += d.next().unwrap();
                back.push((at, count as u64));
                at += 1;
            }
        }
        assert_eq!(back, [(-80, 3), (-79, 5), (-76, 2), (4, 1)]);
        let mut s = Series::new(vec![("run".into(), "r1".into())]);
        s.start("s", &["r".to_string()]);
        let with = encode(&families(&s), &natives(&s), 7);
        let without = classic_only(&with);
        let w = WriteRequest::decode(without.as_slice()).unwrap();
        let all = WriteRequest::decode(with.as_slice()).unwrap();
        assert_eq!(
            w.timeseries.len() + 1,
            all.timeseries.len(),
            "one request, one native"
        );
        assert!(w.timeseries.iter().all(|t| t.histograms.is_empty()));
        assert!(refuses_natives(
            "answered 500: native histograms are disabled"
        ));
    }
}
