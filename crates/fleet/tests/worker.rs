//! A worker against a coordinator that misbehaves, played here over a real HTTP/2 stream: one
//! that falls silent mid-run (the worker stops within its heartbeat lapse and keeps what it
//! measured on disk), and one that behaves (the worker's copy is removed).

use bytes::Bytes;
use fleet::lines::Lines;
use fleet::proto::{FromWorker, ToWorker, PROTOCOL};
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use workload::{Request, Workload};

/// An open-model GET of `url` at 100/s for 60 s.
fn spec(url: &str) -> engine::RunSpec {
    let target = engine::Target::parse(url).expect("url");
    let step = Request::fixed("GET", "GET", &target.path, &[], b"");
    engine::RunSpec {
        target,
        workload: Arc::new(Workload::single(step)),
        load: engine::Load::Open {
            rate: engine::Curve::flat(100.0, Some(Duration::from_secs(60))),
            pool: 10,
        },
        max_requests: None,
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
        keepalive: true,
        tls: engine::TlsOptions::default(),
        ok_status: engine::StatusSet::default(),
        ok_codes: vec![0],
        connections: None,
        threads: 1,
        grace: Duration::from_secs(1),
        capture_limit: workload::capture::DEFAULT_LIMIT,
        max_message: engine::DEFAULT_GRPC_MAX_MESSAGE,
        events: engine::EventRule::default(),
        every: None,
        discovered: None,
    }
}

fn line(m: &ToWorker) -> Bytes {
    let mut v = serde_json::to_vec(m).unwrap();
    v.push(b'\n');
    Bytes::from(v)
}

/// A coordinator's stream to the worker at `addr`: what it sends, what it reads, and the
/// connection (kept open while it is held).
type Stream = (
    mpsc::Sender<Bytes>,
    hyper::body::Incoming,
    hyper::client::conn::http2::SendRequest<accept::ChannelBody>,
);

async fn open(addr: std::net::SocketAddr) -> Stream {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut h2, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(conn);
    let (tx, rx) = mpsc::channel(16);
    let req = hyper::Request::post(format!("http://{addr}/run"))
        .header("authorization", "Bearer t0k")
        .body(accept::ChannelBody(rx))
        .unwrap();
    tx.send(line(&ToWorker::Run {
        version: "v".into(),
        protocol: PROTOCOL,
        order: String::new(),
        digest: String::new(),
        index: 0,
        count: 1,
        job: 0,
        level: None,
        env: vec![],
    }))
    .await
    .unwrap();
    let resp = h2.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    (tx, resp.into_body(), h2)
}

/// Reads messages until Done (or the stream ends); with `beat`, sends a heartbeat each second.
async fn follow(
    tx: &mpsc::Sender<Bytes>,
    body: &mut hyper::body::Incoming,
    beat: bool,
) -> (usize, bool) {
    let (mut lines, mut seconds) = (Lines::default(), 0);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            f = body.frame() => {
                let Some(Ok(f)) = f else { return (seconds, false) };
                for m in lines.feed::<FromWorker>(&f.into_data().unwrap_or_default()).unwrap() {
                    match m {
                        FromWorker::Second { .. } => seconds += 1,
                        FromWorker::Done { .. } => return (seconds, true),
                        FromWorker::Failed { why } => panic!("{why}"),
                        _ => {}
                    }
                }
            }
            _ = tick.tick(), if beat => {
                let _ = tx.send(line(&ToWorker::Heartbeat)).await;
            }
        }
    }
}

fn worker(url: String, keep: &std::path::Path) -> (std::net::SocketAddr, accept::Running) {
    let w = fleet::worker::Worker {
        token: "t0k".into(),
        version: "v".into(),
        compile: Box::new(move |_, _, _| Ok(spec(&url))),
        keep_dir: Some(keep.to_path_buf()),
        tls: None,
    };
    let (addr, running, _) = fleet::worker::listen(([127, 0, 0, 1], 0).into(), w).unwrap();
    (addr, running)
}

fn journals(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

#[test]
fn a_worker_whose_coordinator_falls_silent_stops_and_keeps_what_it_measured() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let keep = tempfile::tempdir().unwrap();
    let (addr, _running) = worker(srv.url("/"), keep.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (seconds, done, took) = rt.block_on(async {
        let (tx, mut body, _h2) = open(addr).await;
        tx.send(line(&ToWorker::StartAt {
            unix_ns: fleet::now_ns(),
        }))
        .await
        .unwrap();
        let t0 = Instant::now();
        // Then nothing: no heartbeat, no stop, the stream left open.
        let (seconds, done) = follow(&tx, &mut body, false).await;
        (seconds, done, t0.elapsed())
    });
    assert!(done, "the worker says Done to whoever still reads");
    // 5 s without a word, checked every half second; the load had been asked for 60 s.
    assert!(
        (Duration::from_millis(4500)..Duration::from_secs(9)).contains(&took),
        "{took:?}"
    );
    let sent = srv.counters.requests.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        srv.counters.requests.load(Ordering::Relaxed),
        sent,
        "the load stopped"
    );
    assert!((400..=900).contains(&sent), "{sent} requests at 100/s");
    let kept = journals(keep.path());
    assert_eq!(kept.len(), 1, "{kept:?}");
    use std::os::unix::fs::MetadataExt;
    let mode = std::fs::metadata(&kept[0]).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o600, "what was measured is this user's alone");
    let text = std::fs::read_to_string(&kept[0]).unwrap();
    let msgs: Vec<FromWorker> = Lines::default().feed(text.as_bytes()).unwrap();
    let in_file = msgs
        .iter()
        .filter(|m| matches!(m, FromWorker::Second { .. }))
        .count();
    assert_eq!(in_file, seconds, "every second sent is on disk");
    // Its last word says it stopped on its own, and why: a coordinator that comes back
    // reports the run short, not this worker done.
    match msgs.last() {
        Some(FromWorker::Done { stopped, .. }) => assert_eq!(
            stopped.as_deref(),
            Some("stopped its load early: its coordinator was silent for 5s")
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_worker_whose_coordinator_stays_keeps_nothing() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let keep = tempfile::tempdir().unwrap();
    let (addr, _running) = worker(srv.url("/"), keep.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, mut body, _h2) = open(addr).await;
        tx.send(line(&ToWorker::StartAt {
            unix_ns: fleet::now_ns(),
        }))
        .await
        .unwrap();
        let stop = tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let _ = stop.send(line(&ToWorker::Stop)).await;
        });
        let (seconds, done) = follow(&tx, &mut body, true).await;
        assert!(done && seconds >= 2, "{seconds}");
        // The coordinator closes its side once it has the last line; the connection stays
        // open until the worker has ended the session.
        drop(tx);
        tokio::time::sleep(Duration::from_millis(300)).await;
    });
    assert!(
        journals(keep.path()).is_empty(),
        "{:?}",
        journals(keep.path())
    );
}

/// Starts a load on `addr`, stops it after `for_ms`, and reads it to its Done.
async fn one_load(addr: std::net::SocketAddr, for_ms: u64) -> Stream {
    let (tx, mut body, h2) = open(addr).await;
    tx.send(line(&ToWorker::StartAt {
        unix_ns: fleet::now_ns(),
    }))
    .await
    .unwrap();
    let stop = tx.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(for_ms)).await;
        let _ = stop.send(line(&ToWorker::Stop)).await;
    });
    let (_, done) = follow(&tx, &mut body, true).await;
    assert!(done, "the load said Done");
    (tx, body, h2)
}

#[test]
fn a_worker_is_free_for_the_next_load_once_its_last_line_is_out() {
    // A search's steps follow one another: the coordinator has every worker's Done and
    // starts the next step at once, before the worker's session has wound down.
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let keep = tempfile::tempdir().unwrap();
    let (addr, _running) = worker(srv.url("/"), keep.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for _ in 0..5 {
            // The previous step's stream stays open while the next starts.
            let (tx, _body, _h2) = one_load(addr, 300).await;
            let (tx2, _body2, _h22) = one_load(addr, 300).await;
            drop((tx, tx2));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    assert!(
        journals(keep.path()).is_empty(),
        "a coordinator that closed its side had everything: {:?}",
        journals(keep.path())
    );
}

#[test]
fn a_worker_whose_coordinator_breaks_off_after_the_last_line_keeps_it() {
    // Done was queued, but the stream was reset rather than closed: whether the coordinator
    // read it is unknown, so the copy stays.
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let keep = tempfile::tempdir().unwrap();
    let (addr, _running) = worker(srv.url("/"), keep.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, body, h2) = one_load(addr, 300).await;
        drop((body, h2));
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(tx);
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        journals(keep.path()).len(),
        1,
        "{:?}",
        journals(keep.path())
    );
}
