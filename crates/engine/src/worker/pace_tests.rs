//! The open model's lateness rule at its boundaries: a request sent within the threshold of
//! its intended time is on time (latency from the send), one sent later waited for a
//! connection and that wait is in its latency. Each assertion fails under one mutation of the
//! rule: `>` made `>=`, the threshold made longer or shorter, the instants swapped.

use super::{pace, pace_within, LATE_THRESHOLD, TIMER_SLACK};
use stats::Bucket;
use std::time::{Duration, Instant};

const US: Duration = Duration::from_micros(1);

/// (the instant latency is measured from, late count, largest lag in µs) for a request due
/// at `due` and sent `lag` after it, under `on_time`.
fn paced(lag: Duration, on_time: Option<Duration>) -> (Duration, u64, u64) {
    let mut rec = Bucket::new(0);
    let due = Instant::now();
    let now = due + lag;
    let from = match on_time {
        Some(t) => pace_within(&mut rec, due, now, t),
        None => pace(&mut rec, due, now),
    };
    (from - due, rec.late, rec.max_lag_us)
}

#[test]
fn exactly_the_threshold_late_is_on_time_and_a_microsecond_more_is_late() {
    // Kills `lag > on_time` made `lag >= on_time`: exactly 1 ms late is still on time.
    assert_eq!(paced(LATE_THRESHOLD, None), (LATE_THRESHOLD, 0, 1000));
    // Kills a threshold made longer (2 ms, say): 1 ms and 1 µs late is late, and its latency
    // runs from the due instant.
    assert_eq!(paced(LATE_THRESHOLD + US, None), (Duration::ZERO, 1, 1001));
    // Kills a threshold made shorter (0.5 ms, say): 999 µs late is on time.
    assert_eq!(
        paced(LATE_THRESHOLD - US, None),
        (LATE_THRESHOLD - US, 0, 999)
    );
    // On time to the microsecond: from the send, nothing late.
    assert_eq!(paced(Duration::ZERO, None), (Duration::ZERO, 0, 0));
}

#[test]
fn the_rule_is_the_threshold_it_is_given() {
    // The tokio path's slack (3 ms): 3 ms late is on time, 3 ms and 1 µs late is not.
    assert_eq!(
        paced(TIMER_SLACK, Some(TIMER_SLACK)),
        (TIMER_SLACK, 0, 3000)
    );
    assert_eq!(
        paced(TIMER_SLACK + US, Some(TIMER_SLACK)),
        (Duration::ZERO, 1, 3001)
    );
    // A request sent 2 s late carries those 2 s in its latency (kills returning `now` when
    // late: coordinated omission).
    let (from, late, lag) = paced(Duration::from_secs(2), Some(TIMER_SLACK));
    assert_eq!((from, late, lag), (Duration::ZERO, 1, 2_000_000));
}
