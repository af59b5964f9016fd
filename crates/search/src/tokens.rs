//! What a search over token streams says of its first failing step: against the lowest
//! step, did the time to the first token grow (streams wait for the server to admit them:
//! its batch, KV-cache or slot limit) or the time between tokens (the server decodes a larger
//! batch more slowly)? The two call for different fixes, so the finding names one.

use crate::facts::StepFacts;
use results::find::Finding;

/// TTFT grown at least this much (p99, ×) while ITL did not slow: the streams queued.
const QUEUED: f64 = 1.5;
/// ITL grown at least this much (p99, ×): decoding slowed (whatever TTFT did).
const SLOWED: f64 = 1.25;

/// The p99 (ms) of TTFT and ITL at a step, when it read token streams with both.
fn p99s(s: &StepFacts) -> Option<(f64, f64)> {
    let l = s.steady.events.as_deref()?.llm.as_deref()?;
    let p99 =
        |h: &stats::Histogram| (!h.is_empty()).then(|| h.value_at_quantile(0.99) as f64 / 1000.0);
    Some((p99(&l.ttft)?, p99(&l.itl)?))
}

/// The finding for `failed` (the first failing step) against the lowest judged step.
pub fn token_streams(failed: &StepFacts, steps: &[StepFacts]) -> Option<Finding> {
    let base = steps
        .iter()
        .filter(|s| !s.interrupted && s.row.level < failed.row.level)
        .min_by(|a, b| a.row.level.total_cmp(&b.row.level))?;
    let ((t0, i0), (t1, i1)) = (p99s(base)?, p99s(failed)?);
    let (ttft, itl) = (t1 / t0.max(0.001), i1 / i0.max(0.001));
    let slowed = itl >= SLOWED;
    let queued = ttft >= QUEUED && !slowed;
    (queued || slowed).then_some(Finding::TokenStreams {
        level: failed.row.level,
        from: base.row.level,
        ttft_from_ms: t0,
        ttft_to_ms: t1,
        itl_from_ms: i0,
        itl_to_ms: i1,
        queued,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::find::StepRow;
    use stats::Bucket;

    /// A step at `level` whose streams had TTFT `ttft` ms and ITL `itl` ms.
    fn step(level: f64, ttft: u64, itl: u64) -> (StepRow, Bucket) {
        let row = StepRow {
            level,
            pass: ttft < 100,
            ..StepRow::default()
        };
        let mut b = Bucket::new(0);
        let l = b.events_mut().llm_mut();
        l.ttft.saturating_record(ttft * 1000);
        l.itl.saturating_record(itl * 1000);
        (row, b)
    }

    fn finding(steps: &[(StepRow, Bucket)]) -> Option<Finding> {
        let facts: Vec<StepFacts> = steps
            .iter()
            .map(|(row, steady)| StepFacts {
                row,
                stuck: false,
                interrupted: false,
                steady,
            })
            .collect();
        token_streams(&facts[facts.len() - 1], &facts)
    }

    #[test]
    fn the_time_that_grew_names_the_limit() {
        let queued = finding(&[step(2.0, 20, 10), step(4.0, 22, 10), step(8.0, 300, 11)]);
        assert!(
            matches!(queued, Some(Finding::TokenStreams { queued: true, from, .. }) if from == 2.0),
            "{queued:?}"
        );
        let slowed = finding(&[step(2.0, 20, 10), step(8.0, 30, 30)]);
        assert!(
            matches!(slowed, Some(Finding::TokenStreams { queued: false, .. })),
            "{slowed:?}"
        );
        assert_eq!(
            finding(&[step(2.0, 20, 10), step(8.0, 120, 11)]).map(|_| ()),
            Some(())
        );
        assert!(
            finding(&[step(2.0, 90, 10), step(8.0, 110, 11)]).is_none(),
            "neither grew enough"
        );
        assert!(
            finding(&[step(8.0, 300, 10)]).is_none(),
            "no lower step to compare with"
        );
    }
}
