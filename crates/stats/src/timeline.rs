//! Whole seconds from many sources. Each source (a worker thread today, a remote worker
//! tomorrow) sends its buckets for second 0, 1, 2, ... in order; the timeline merges them and
//! hands out second `s` once every source still running has sent `s` or later. Merging is exact
//! (counts add, histograms with identical bounds add), so the seconds and the totals do not
//! depend on how the load was split across sources: a coordinator merging remote workers uses
//! this unchanged.

use crate::bucket::Bucket;
use std::collections::BTreeMap;

/// Seconds being assembled from several sources.
#[derive(Debug)]
pub struct Timeline {
    /// Buckets per second (one per request name).
    width: usize,
    pending: BTreeMap<u64, Vec<Bucket>>,
    /// Remote seconds' latency histograms summed as counters per bucket (latency, service
    /// time; one pair per request), recorded into `pending` when the second is taken.
    counts: BTreeMap<u64, Vec<[Vec<u32>; 2]>>,
    /// Highest second received from each source.
    seen: Vec<Option<u64>>,
    finished: Vec<bool>,
    next: u64,
}

impl Timeline {
    /// A timeline for `sources` sources, each sending `width` buckets per second.
    pub fn new(sources: usize, width: usize) -> Timeline {
        Timeline {
            width: width.max(1),
            pending: BTreeMap::new(),
            counts: BTreeMap::new(),
            seen: vec![None; sources],
            finished: vec![false; sources],
            next: 0,
        }
    }

    /// Adds `source`'s buckets for one second (the second is in the buckets).
    pub fn add(&mut self, source: usize, buckets: Vec<Bucket>) {
        let Some(second) = buckets.first().map(|b| b.second) else {
            return;
        };
        if let Some(seen) = self.seen.get_mut(source) {
            *seen = Some(seen.map_or(second, |s| s.max(second)));
        }
        match self.pending.get_mut(&second) {
            Some(p) => p.iter_mut().zip(&buckets).for_each(|(p, b)| p.merge(b)),
            None => {
                self.pending.insert(second, buckets);
            }
        }
    }

    /// Adds `source`'s checked wire buckets for one second (a remote worker's): merged into
    /// what is pending without building their histograms.
    pub fn add_decoded(&mut self, source: usize, parts: &[crate::wire::Decoded]) {
        let Some(second) = parts.first().map(|d| d.second()) else {
            return;
        };
        if let Some(seen) = self.seen.get_mut(source) {
            *seen = Some(seen.map_or(second, |s| s.max(second)));
        }
        let width = self.width;
        let pending = self
            .pending
            .entry(second)
            .or_insert_with(|| vec![Bucket::new(second); width]);
        let counts = self
            .counts
            .entry(second)
            .or_insert_with(|| vec![[Vec::new(), Vec::new()]; width]);
        for ((p, c), d) in pending.iter_mut().zip(counts.iter_mut()).zip(parts) {
            d.merge_counted(p, c);
        }
    }

    /// `source` will send nothing more.
    pub fn finish(&mut self, source: usize) {
        if let Some(f) = self.finished.get_mut(source) {
            *f = true;
        }
    }

    /// Whether every source has finished.
    pub fn finished(&self) -> bool {
        self.finished.iter().all(|&f| f)
    }

    /// Whether `source` has finished.
    pub fn is_finished(&self, source: usize) -> bool {
        self.finished.get(source).copied().unwrap_or(true)
    }

    /// The next second, once every running source has sent it (or a later one): its number
    /// and its merged buckets. A second no source had anything for comes out empty when a
    /// later one exists, so seconds are never skipped.
    pub fn pop_complete(&mut self) -> Option<(u64, Vec<Bucket>)> {
        let s = self.next;
        let ready = self
            .finished
            .iter()
            .zip(&self.seen)
            .all(|(&f, seen)| f || seen.is_some_and(|x| x >= s));
        if !ready || self.pending.range(s..).next().is_none() {
            return None;
        }
        Some(self.take(s))
    }

    /// Whatever is left, in order, complete or not (at the end of a run).
    pub fn pop_any(&mut self) -> Option<(u64, Vec<Bucket>)> {
        let &last = self.pending.keys().next_back()?;
        (self.next <= last).then(|| self.take(self.next))
    }

    fn take(&mut self, s: u64) -> (u64, Vec<Bucket>) {
        self.next = s + 1;
        let mut buckets = self
            .pending
            .remove(&s)
            .unwrap_or_else(|| vec![Bucket::new(s); self.width]);
        for (b, [latency, service]) in buckets
            .iter_mut()
            .zip(self.counts.remove(&s).unwrap_or_default())
        {
            crate::sparse::flush(&latency, &mut b.corrected);
            crate::sparse::flush(&service, &mut b.service);
        }
        (s, buckets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::ErrorKind;

    /// A pseudo-random load: (second, request, latency µs or an error).
    fn events(n: usize) -> Vec<(u64, usize, Option<u64>)> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let lat = (x % 5_000_000 + 1) * if x.is_multiple_of(50) { 100 } else { 1 };
                (
                    (i / 700) as u64,
                    (x % 3) as usize,
                    (!x.is_multiple_of(97)).then_some(lat),
                )
            })
            .collect()
    }

    /// Runs `events` split over `sources` (event i goes to `split(i)`), returns every second.
    fn merged(
        ev: &[(u64, usize, Option<u64>)],
        sources: usize,
        split: impl Fn(usize) -> usize,
    ) -> Vec<(u64, Vec<Bucket>)> {
        let seconds = ev.last().map_or(0, |e| e.0 + 1);
        let mut per: Vec<Vec<Vec<Bucket>>> = (0..sources)
            .map(|_| (0..seconds).map(|s| vec![Bucket::new(s); 3]).collect())
            .collect();
        for (i, &(s, r, lat)) in ev.iter().enumerate() {
            let b = &mut per[split(i)][s as usize][r];
            match lat {
                Some(us) => b.record_response(200, true, us, us / 2 + 1),
                None => b.record_error(ErrorKind::Timeout),
            }
        }
        let mut t = Timeline::new(sources, 3);
        let mut out = Vec::new();
        // Sources report in an interleaved order, one second at a time.
        for s in 0..seconds as usize {
            for (src, secs) in per.iter_mut().enumerate().rev() {
                t.add(src, std::mem::take(&mut secs[s]));
                while let Some(x) = t.pop_complete() {
                    out.push(x);
                }
            }
        }
        (0..sources).for_each(|src| t.finish(src));
        while let Some(x) = t.pop_any() {
            out.push(x);
        }
        out
    }

    #[test]
    fn any_split_across_sources_gives_the_same_seconds() {
        let ev = events(20_000);
        let one = merged(&ev, 1, |_| 0);
        for (sources, split) in [
            (2, Box::new(|i: usize| i % 2) as Box<dyn Fn(usize) -> usize>),
            (5, Box::new(|i: usize| (i * 7919) % 5)),
            (3, Box::new(|i: usize| usize::from(i.is_multiple_of(10)))),
        ] {
            let many = merged(&ev, sources, split);
            assert_eq!(many.len(), one.len());
            for ((s1, a), (s2, b)) in one.iter().zip(&many) {
                assert_eq!(s1, s2);
                for (x, y) in a.iter().zip(b) {
                    assert_eq!(x.corrected, y.corrected, "second {s1}");
                    assert_eq!(x.service, y.service);
                    assert_eq!(
                        (x.requests, x.ok, x.errors_by_kind),
                        (y.requests, y.ok, y.errors_by_kind)
                    );
                }
            }
        }
    }

    #[test]
    fn a_second_waits_for_every_running_source() {
        let mut t = Timeline::new(2, 1);
        t.add(0, vec![Bucket::new(0)]);
        assert!(t.pop_complete().is_none(), "source 1 has not sent second 0");
        t.add(1, vec![Bucket::new(1)]);
        assert_eq!(
            t.pop_complete().map(|x| x.0),
            Some(0),
            "1 sent a later second"
        );
        assert!(t.pop_complete().is_none());
        t.finish(0);
        assert_eq!(t.pop_complete().map(|x| x.0), Some(1));
        t.finish(1);
        assert!(t.finished() && t.pop_any().is_none());
    }
}
