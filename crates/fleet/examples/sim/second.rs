//! One second as a busy worker fills it: a latency histogram of 2,000 values spread from
//! 200 µs to 50 ms (a wide spread: most land in buckets of their own, the most a coordinator
//! has to read per value), statuses and bytes. Shared by the simulated workers and the
//! coordinator's merge benchmark.

pub fn second(s: u64, seed: u64) -> stats::WireBucket {
    let mut b = stats::Bucket::new(s);
    let mut x = seed | 1;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let us = 200 + x % 50_000;
        b.corrected.saturating_record(us);
        b.service.saturating_record(us * 9 / 10);
    }
    b.requests = 2000;
    b.ok = 1990;
    b.status.add(200, 1990);
    b.status.add(503, 10);
    b.bytes_in = 2000 * 180;
    b.bytes_out = 2000 * 90;
    stats::WireBucket::from(&b)
}
