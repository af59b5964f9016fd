//! The Server-Sent Events reader against the least any reader must do: 64 KiB of small events
//! (`data: {"t":N}`, as `bench/sse.sh` serves them) split into lines with each blank one
//! counted ("lines"), beside `sse::Reader` reading them as the HTML standard says ("reader").
//! Their ratio is the parser's share of `bench/sse.sh`'s gap to its ceiling. `cargo bench -p
//! engine --bench sse_read`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use engine::sse::Reader;
use std::hint::black_box;

/// 64 KiB of events, as bench/sse.sh writes them.
fn events() -> Vec<u8> {
    let mut out = Vec::new();
    let mut n = 0;
    while out.len() < 64 * 1024 {
        out.extend_from_slice(format!("data: {{\"t\":{n}}}\n\n").as_bytes());
        n += 1;
    }
    out
}

/// Blank lines in `bytes`, each line found as the ceiling finds it.
fn lines(bytes: &[u8]) -> u64 {
    let (mut events, mut at) = (0, 0);
    while let Some(&first) = bytes.get(at) {
        if first == b'\n' {
            events += 1;
            at += 1;
            continue;
        }
        match memchr::memchr(b'\n', &bytes[at..]) {
            Some(off) => at += off + 1,
            None => break,
        }
    }
    events
}

fn sse(c: &mut Criterion) {
    let body = events();
    let mut g = c.benchmark_group("sse_64KiB");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("lines", |b| b.iter(|| lines(black_box(&body))));
    g.bench_function("reader", |b| {
        b.iter(|| {
            let mut r = Reader::new(1 << 20);
            let mut n = 0u64;
            let _ = r.feed(black_box(&body), &mut |_| n += 1);
            n
        })
    });
    g.finish();
}

criterion_group!(benches, sse);
criterion_main!(benches);
