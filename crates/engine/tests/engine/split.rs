//! A run divided into parts (what each worker of a distributed run generates) sends, all parts
//! together, exactly what the run sends whole: `-n` attempts, the open model's arrivals at
//! their intended times, `{{seq}}` numbers and data rows taken in turn, each once and only once,
//! with the connections of every stage shared out. The parts run side by side in this process
//! against one server that records every path it is sent.

use crate::common::{closed, run, spec};
use engine::{Curve, Load, RunSpec};
use model::Part;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::{Reply, Req};

/// The paths the server was sent, in arrival order.
fn recording() -> (testkit::Server, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let server = testkit::serve(Arc::new(move |r: &Req| {
        s.lock().unwrap().push(r.path.to_string());
        Reply::ok("ok\n", Duration::ZERO)
    }))
    .expect("server starts");
    (server, seen)
}

/// A GET of `/r/{{seq}}/{{data.ids.id}}` over a data set of 7 rows, for part `part`.
fn spec_for(url: &str, load: Load, part: Part) -> RunSpec {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ids.csv"), "id\na\nb\nc\nd\ne\nf\ng\n").unwrap();
    let source = format!(
        "target: {url}\ndata:\n  ids: {{ csv: ids.csv }}\nscenarios:\n  - name: s\n    load: {{ connections: 1, duration: 1s }}\n    requests: [ {{ path: \"/r/{{{{seq}}}}/{{{{data.ids.id}}}}\" }} ]\n"
    );
    let plan = plan::parse("split.yaml", &source, dir.path(), 7, &|_| None).expect("plan");
    let mut workload = plan.scenarios.into_iter().next().unwrap().workload;
    workload.set_part(part);
    let mut s = spec(url, load);
    s.workload = Arc::new(workload);
    s
}

/// Runs the `count` parts of `load` side by side; returns each part's attempts.
fn run_parts(url: &str, load: &Load, n: Option<u64>, count: u64) -> Vec<u64> {
    let handles: Vec<_> = (0..count)
        .map(|i| {
            let mut s = spec_for(url, load.clone(), Part::new(i, count).unwrap());
            s.max_requests = n;
            std::thread::spawn(move || run(&s).totals.all.requests)
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// (seq, row) of every path.
fn sent(seen: &Mutex<Vec<String>>) -> Vec<(u64, String)> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|p| {
            let mut it = p.trim_start_matches("/r/").split('/');
            let seq = it.next().and_then(|s| s.parse().ok()).expect("a seq");
            (seq, it.next().unwrap_or_default().to_string())
        })
        .collect()
}

#[test]
fn the_parts_of_a_closed_run_send_exactly_n_with_every_number_once() {
    // Three parts sending as fast as they can take the machine's CPU.
    let _cpu = crate::common::cpu_exclusive();
    let (server, seen) = recording();
    let url = server.url("/");
    let load = closed(5, Some(30.0));
    let per_part = run_parts(&url, &load, Some(1001), 3);
    assert_eq!(
        per_part,
        vec![334, 334, 333],
        "-n split as 1001 = 334 + 334 + 333"
    );
    let mut got = sent(&seen);
    got.sort();
    let seqs: Vec<u64> = got.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs, (0..1001).collect::<Vec<_>>(), "each {{seq}} once");
    // Rows are taken in turn across the parts: row i of the run is row i % 7, whichever
    // part sent it, so every row is sent 143 times in all (1001 / 7).
    let mut per_row = std::collections::BTreeMap::new();
    for (_, row) in &got {
        *per_row.entry(row.clone()).or_insert(0) += 1;
    }
    assert_eq!(per_row.len(), 7, "{per_row:?}");
    assert!(per_row.values().all(|&n| n == 143), "{per_row:?}");
}

#[test]
fn the_parts_of_an_open_run_keep_the_one_schedule() {
    let (server, seen) = recording();
    let url = server.url("/");
    // A ramp to 400/s over 0.5 s, 1 s there, a ramp to 0 over 1 s: 100 + 400 + 200 arrivals.
    let rate = Curve::stages(&[
        (Duration::from_millis(500), 400.0),
        (Duration::from_secs(1), 400.0),
        (Duration::from_secs(1), 0.0),
    ]);
    let whole = Load::Open {
        rate: rate.clone(),
        pool: 30,
    };
    let single = run(&spec(&url, whole.clone())).totals.all.requests;
    assert_eq!(single, 700);
    seen.lock().unwrap().clear();
    let per_part = run_parts(&url, &whole, None, 3);
    assert_eq!(
        per_part.iter().sum::<u64>(),
        single,
        "{per_part:?} vs {single}"
    );
    let mut seqs: Vec<u64> = sent(&seen).into_iter().map(|(s, _)| s).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..single).collect::<Vec<_>>());
    // Striping: part i of 3 sends arrivals i, i + 3, ...: shares differ by at most one.
    let (lo, hi) = (
        per_part.iter().min().unwrap(),
        per_part.iter().max().unwrap(),
    );
    assert!(hi - lo <= 1, "{per_part:?}");
}
