//! What a coordinator spends on one worker's second: the line parsed, its histograms read
//! and checked, and the second merged into the seconds being assembled. `bench/coordinator.sh`
//! measures the whole coordinator over a thousand simulated workers; this isolates the part
//! that grows with what they measured. `cargo bench -p fleet`.

use criterion::{criterion_group, criterion_main, Criterion};
use fleet::lines::Lines;
use fleet::proto::FromWorker;
use std::hint::black_box;

#[path = "../examples/sim/second.rs"]
mod sim;

fn worker_second(c: &mut Criterion) {
    // Seconds that differ, as a thousand workers' do: one second read again and again
    // would let the branch predictor learn it.
    let lines: Vec<Vec<u8>> = (0..64)
        .map(|seed| {
            let mut line = serde_json::to_vec(&FromWorker::Second {
                parts: vec![sim::second(3, 42 + 2 * seed)],
            })
            .expect("serialises");
            line.push(b'\n');
            line
        })
        .collect();
    let mut into = stats::Bucket::new(3);
    let mut counts = [Vec::new(), Vec::new()];
    c.bench_function("worker_second/parse", |b| {
        let mut next = lines.iter().cycle();
        b.iter(|| {
            let got: Vec<FromWorker> = Lines::default()
                .feed(black_box(next.next().expect("cycles")))
                .expect("parses");
            got
        })
    });
    c.bench_function("worker_second/parse_check_merge", |b| {
        let mut next = lines.iter().cycle();
        b.iter(|| {
            let got: Vec<FromWorker> = Lines::default()
                .feed(black_box(next.next().expect("cycles")))
                .expect("parses");
            for m in got {
                if let FromWorker::Second { parts } = m {
                    for p in parts {
                        let d = stats::Decoded::try_from(p).expect("checks");
                        d.merge_counted(&mut into, &mut counts);
                    }
                }
            }
        })
    });
}

criterion_group!(benches, worker_second);
criterion_main!(benches);
