//! Each worker's clock against the coordinator's, as NTP estimates it: a ping leaves at `sent`
//! (coordinator's clock), the worker stamps its own clock, the answer arrives at `received`.
//! If the two legs took equally long, the worker's clock read `sent + rtt / 2` at its stamp;
//! whatever the legs took, the true offset lies within `rtt / 2` of that estimate. Of several
//! pings the one with the shortest round trip is kept (least queueing, tightest bound). The
//! coordinator then sends every worker one start instant in its own clock, so the workers
//! start within the bounds of each other, not one after another.

/// One ping, all in ns since the Unix epoch: the coordinator's send and receive, the
/// worker's stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ping {
    pub sent: u64,
    pub worker: u64,
    pub received: u64,
}

/// A worker's clock minus the coordinator's, ns, and how far off that may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offset {
    pub offset_ns: i64,
    pub bound_ns: u64,
}

impl Offset {
    /// `at` of the coordinator's clock in the worker's clock.
    pub fn to_worker(self, at: u64) -> u64 {
        (at as i64 + self.offset_ns).max(0) as u64
    }
}

/// The offset from the ping with the shortest round trip; `None` without a sound ping (one
/// that came back before it left is a broken clock, not a measurement).
pub fn estimate(pings: &[Ping]) -> Option<Offset> {
    let best = pings
        .iter()
        .filter(|p| p.received >= p.sent)
        .min_by_key(|p| p.received - p.sent)?;
    let rtt = best.received - best.sent;
    let midpoint = best.sent + rtt / 2;
    Some(Offset {
        offset_ns: best.worker as i64 - midpoint as i64,
        bound_ns: rtt.div_ceil(2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_gives_the_offset_and_its_bound() {
        // The worker's clock is 5 ms ahead; legs of 1 ms each way, then a slow ping whose
        // answer queued for 20 ms.
        let ahead = 5_000_000i64;
        let ping = |sent: u64, out: u64, back: u64| Ping {
            sent,
            worker: (sent as i64 + out as i64 + ahead) as u64,
            received: sent + out + back,
        };
        let pings = [
            ping(1_000_000_000, 1_000_000, 21_000_000),
            ping(2_000_000_000, 1_000_000, 1_000_000),
        ];
        let o = estimate(&pings).unwrap();
        assert_eq!(
            o,
            Offset {
                offset_ns: ahead,
                bound_ns: 1_000_000
            }
        );
        assert_eq!(o.to_worker(3_000_000_000), 3_005_000_000);
        // Unequal legs: the estimate is off, but by no more than the bound.
        let o = estimate(&[ping(0, 300_000, 1_700_000)]).unwrap();
        assert!((o.offset_ns - ahead).unsigned_abs() <= o.bound_ns, "{o:?}");
        assert_eq!(
            estimate(&[Ping {
                sent: 5,
                worker: 1,
                received: 4
            }]),
            None
        );
        assert_eq!(estimate(&[]), None);
    }
}
