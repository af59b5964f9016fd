//! The merge is exact: a run's seconds merged from any number of parts (worker threads or
//! processes), in any order they arrive, equal the same requests recorded in one part, count
//! for count and value for value in the histograms (summed, never percentiles averaged); and
//! merging buckets is associative and commutative.

use merge::{Merger, SecondView};
use model::{Curve, Load};
use proptest::prelude::*;
use stats::{Bucket, ErrorKind, Totals};
use std::time::Duration;

/// One attempt: its second, its request of the workload, and how it ended.
#[derive(Clone, Debug)]
enum Outcome {
    Answer { status: u16, latency_us: u64 },
    Error(usize),
}

#[derive(Clone, Debug)]
struct Attempt {
    second: u64,
    request: usize,
    outcome: Outcome,
}

const SECONDS: u64 = 4;
const REQUESTS: usize = 2;

fn attempt() -> impl Strategy<Value = Attempt> {
    let outcome = prop_oneof![
        (
            prop::sample::select(vec![200u16, 204, 404, 500, 503]),
            1u64..5_000_000
        )
            .prop_map(|(status, latency_us)| Outcome::Answer { status, latency_us }),
        (0..ErrorKind::COUNT).prop_map(Outcome::Error),
    ];
    (0..SECONDS, 0..REQUESTS, outcome).prop_map(|(second, request, outcome)| Attempt {
        second,
        request,
        outcome,
    })
}

fn record(b: &mut Bucket, a: &Attempt) {
    match a.outcome {
        Outcome::Answer { status, latency_us } => {
            b.record_response(status, status < 400, latency_us, latency_us / 2 + 1)
        }
        Outcome::Error(k) => b.record_error(ErrorKind::ALL[k]),
    }
}

/// Each part's buckets: for every second, one bucket per request, holding the attempts
/// `owner` gives it.
fn parts(run: &[Attempt], owner: &[usize], n: usize) -> Vec<Vec<Vec<Bucket>>> {
    let mut p: Vec<Vec<Vec<Bucket>>> = (0..n)
        .map(|_| {
            (0..SECONDS)
                .map(|s| (0..REQUESTS).map(|_| Bucket::new(s)).collect())
                .collect()
        })
        .collect();
    for (a, &w) in run.iter().zip(owner) {
        record(&mut p[w % n][a.second as usize][a.request], a);
    }
    p
}

/// What a merger of `n` parts makes of them, fed in the interleaving `order` (part indexes,
/// each part's seconds in its own order as a worker sends them).
fn merged(p: Vec<Vec<Vec<Bucket>>>, order: &[usize]) -> (Totals, Vec<Totals>, Vec<u64>) {
    let load = Load::Closed {
        connections: Curve::flat(2.0, Some(Duration::from_secs(SECONDS))),
    };
    let n = p.len();
    let mut m = Merger::new(n, &load, REQUESTS);
    let mut left: Vec<std::vec::IntoIter<Vec<Bucket>>> =
        p.into_iter().map(Vec::into_iter).collect();
    let mut seen = Vec::new();
    let mut watch = |v: &SecondView| {
        seen.push(v.second.requests);
        false
    };
    for &w in order {
        let w = w % n;
        match left[w].next() {
            Some(b) => m.bucket(w, b),
            None => m.done(w, 0, None),
        }
        m.emit_ready(&mut watch);
    }
    for (w, rest) in left.iter_mut().enumerate() {
        for b in rest.by_ref() {
            m.bucket(w, b);
        }
        m.done(w, 0, None);
    }
    m.flush(&mut watch);
    (m.totals, m.by_request, seen)
}

/// Requests, ok, statuses, error kinds, and both histograms encoded.
type Face = (u64, u64, Vec<(u16, u64)>, Vec<u64>, String, String);

/// Everything a bucket counts, comparable: counts, statuses, kinds, and both histograms
/// value for value.
fn face(b: &Bucket) -> Face {
    (
        b.requests,
        b.ok,
        b.status.sorted(),
        b.errors_by_kind.to_vec(),
        stats::encode(&b.corrected),
        stats::encode(&b.service),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn n_parts_merge_to_the_run_in_one_part(
        run in prop::collection::vec(attempt(), 0..300),
        owner in prop::collection::vec(0usize..8, 300),
        n in 1usize..6,
        order in prop::collection::vec(0usize..8, 0..40),
    ) {
        let (one, one_by, one_seen) = merged(parts(&run, &vec![0; run.len()], 1), &[]);
        let (many, many_by, many_seen) = merged(parts(&run, &owner[..run.len()], n), &order);
        prop_assert_eq!(face(&many.all), face(&one.all));
        prop_assert_eq!(many.in_grace, one.in_grace);
        for (a, b) in many_by.iter().zip(&one_by) {
            prop_assert_eq!(face(&a.all), face(&b.all));
        }
        // Every second is seen once, in order, whole.
        prop_assert_eq!(many_seen, one_seen);
        // Quantiles of the merged run are the run's, exactly.
        for q in [0.5, 0.9, 0.99, 1.0] {
            prop_assert_eq!(
                many.all.corrected.value_at_quantile(q),
                one.all.corrected.value_at_quantile(q)
            );
        }
        prop_assert_eq!(many.all.requests, run.len() as u64);
    }

    #[test]
    fn merging_buckets_is_associative_and_commutative(
        run in prop::collection::vec(attempt(), 0..200),
        owner in prop::collection::vec(0usize..3, 200),
    ) {
        let mut b = [Bucket::new(0), Bucket::new(0), Bucket::new(0)];
        for (a, &w) in run.iter().zip(&owner) {
            record(&mut b[w], a);
        }
        let [x, y, z] = b;
        let join = |p: &Bucket, q: &Bucket| {
            let mut r = p.clone();
            r.merge(q);
            r
        };
        prop_assert_eq!(face(&join(&x, &y)), face(&join(&y, &x)));
        prop_assert_eq!(
            face(&join(&join(&x, &y), &z)),
            face(&join(&x, &join(&y, &z)))
        );
    }
}

/// Every figure of a merged run's latency summary is its own quantile: latencies of 1 to
/// 1,000 µs (each held exactly: the histograms are exact below 2,048 µs), spread over three
/// parts, read back as p10 = 0.100 ms, p25 = 0.250 ms and so on. A summary that read one
/// quantile for another (p25 at 0.3, p95 at 0.9, ...) fails here, as would a merge that lost
/// or doubled a part.
#[test]
fn a_merged_run_s_summary_reads_each_quantile_it_names() {
    let run: Vec<Attempt> = (1..=1000u64)
        .map(|us| Attempt {
            second: us % SECONDS,
            request: (us % REQUESTS as u64) as usize,
            outcome: Outcome::Answer {
                status: 200,
                latency_us: us,
            },
        })
        .collect();
    let owner: Vec<usize> = (0..run.len()).map(|i| i % 3).collect();
    let (many, _, _) = merged(parts(&run, &owner, 3), &[2, 0, 1, 1, 2, 0]);
    let s = stats::LatencySummary::of(&many.all.corrected);
    let want = [
        ("min", 0.001),
        ("p10", 0.100),
        ("p25", 0.250),
        ("p50", 0.500),
        ("p75", 0.750),
        ("p90", 0.900),
        ("p95", 0.950),
        ("p99", 0.990),
        ("p99.9", 0.999),
        ("max", 1.000),
        ("mean", 0.5005),
    ];
    for ((label, got), (name, value)) in s.labelled().into_iter().zip(want) {
        assert_eq!(label, name);
        assert!((got - value).abs() < 1e-9, "{label}: {got} ms, not {value}");
    }
}
