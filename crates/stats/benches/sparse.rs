//! A coordinator's two walks over each worker histogram: reading (checking) a V2 encoding and
//! adding it to the counters of a second. Histograms of 2,000 values spread from 200 µs to
//! 50 ms, 64 different ones in turn (one read again and again would let the branch predictor
//! learn it). `cargo bench -p stats`.

use criterion::{criterion_group, criterion_main, Criterion};
use stats::sparse::Sparse;
use std::hint::black_box;

fn spread(seed: u64) -> String {
    let mut h = stats::new_histogram();
    let mut x = seed | 1;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        h.saturating_record(200 + x % 50_000);
    }
    stats::encode_plain(&h)
}

fn walks(c: &mut Criterion) {
    let texts: Vec<String> = (0..64).map(|i| spread(42 + 2 * i)).collect();
    let read: Vec<Sparse> = texts
        .iter()
        .map(|t| Sparse::read(t).expect("reads"))
        .collect();
    c.bench_function("sparse/read", |b| {
        let mut next = texts.iter().cycle();
        b.iter(|| Sparse::read(black_box(next.next().expect("cycles"))))
    });
    let (mut counts, mut h) = (Vec::new(), stats::new_histogram());
    c.bench_function("sparse/add_to_counts", |b| {
        let mut next = read.iter().cycle();
        b.iter(|| {
            next.next()
                .expect("cycles")
                .add_to_counts(black_box(&mut counts), &mut h)
        })
    });
}

criterion_group!(benches, walks);
criterion_main!(benches);
