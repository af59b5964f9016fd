//! What one worker can have counted in one second, at most: a second past it is not a
//! measurement but a broken or hostile worker, refused before anything is summed. Kept to
//! these bounds, the coordinator's sums over a thousand workers and a day of seconds stay
//! exact in 64 bits, and no percentile is taken of a histogram whose count wrapped.

use crate::sparse::Sparse;

/// Requests, answers, errors, connections, messages or recorded values in one second of one
/// worker: four billion, a thousand times what the fastest generator does.
pub const MOST_PER_SECOND: u64 = u32::MAX as u64;
/// Bytes in one direction in one second of one worker: a petabyte.
pub const MOST_BYTES_PER_SECOND: u64 = 1 << 50;

/// `Err` when the histogram `what` holds more values than one second can.
pub fn check_values(what: &str, h: &Sparse) -> Result<(), String> {
    match h.total() {
        n if n > MOST_PER_SECOND => Err(format!("{what}: {n} values in one second")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::{Bucket, Decoded, WireBucket};

    fn honest() -> Bucket {
        let mut b = Bucket::new(3);
        for us in [150, 900, 12_000] {
            b.corrected.saturating_record(us);
            b.service.saturating_record(us);
        }
        b.requests = 3;
        b.ok = 3;
        b.status.add(200, 3);
        b.bytes_in = 600;
        b
    }

    fn refused(w: WireBucket) -> String {
        match Decoded::try_from(w) {
            Ok(_) => panic!("an impossible second was taken"),
            Err(e) => e,
        }
    }

    #[test]
    fn an_honest_second_passes() {
        assert!(Decoded::try_from(WireBucket::from(&honest())).is_ok());
    }

    #[test]
    fn counts_no_second_can_hold_are_refused_before_any_sum() {
        let mut w = WireBucket::from(&honest());
        w.requests = 1 << 62;
        w.ok = 1 << 62;
        assert_eq!(refused(w), format!("requests {} in one second", 1u64 << 62));
        let mut w = WireBucket::from(&honest());
        w.status = vec![(200, u64::MAX)];
        assert!(refused(w).starts_with("status "));
        let mut w = WireBucket::from(&honest());
        w.bytes_out = u64::MAX;
        assert!(refused(w).ends_with("bytes in one second"));
        let mut w = WireBucket::from(&honest());
        w.ok = 4;
        assert_eq!(refused(w), "4 answered of 3 requests");
    }

    #[test]
    fn a_histogram_holding_more_than_a_second_can_is_refused() {
        // Values near 2^62 would wrap the merged count: its percentiles would read as zero.
        let mut b = honest();
        b.corrected.saturating_record_n(1_000, 1 << 62);
        let e = refused(WireBucket::from(&b));
        assert_eq!(
            e,
            format!("latency: {} values in one second", (1u64 << 62) + 3)
        );
        let mut b = honest();
        let mut connect = crate::new_histogram();
        connect.saturating_record_n(500, 1 << 40);
        b.setup.connect = Some(Box::new(connect));
        assert!(
            refused(WireBucket::from(&b)).starts_with("connect"),
            "any histogram"
        );
    }

    #[test]
    fn token_stream_counts_no_second_can_hold_are_refused() {
        let mut b = honest();
        b.events_mut().llm_mut().streams = 2;
        let w = WireBucket::from(&b);
        assert!(Decoded::try_from(w.clone()).is_ok());
        let with = |f: &dyn Fn(&mut crate::llm::WireLlm)| {
            let mut w = w.clone();
            f(w.llm.as_mut().unwrap());
            refused(w)
        };
        assert!(with(&|l| l.output_tokens = 1 << 40).starts_with("output tokens"));
        assert!(with(&|l| l.good = 1).contains("1 good of 2"));
        assert!(with(&|l| l.judged = 3).contains("3 judged"));
        assert!(with(&|l| l.life_us = u64::MAX).contains("lived"));
    }
}
