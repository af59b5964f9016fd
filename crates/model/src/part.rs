//! One part of a run split over several processes (a distributed run's workers), and the rule
//! every split follows so the parts add up to exactly the whole: part `index` of `count` takes
//! the global numbers `index`, `index + count`, `index + 2 * count`, ... of everything counted
//! (open-model arrivals, `{{seq}}`, data rows taken in turn, virtual users) and
//! `total / count` (plus one for the first `total % count` parts) of everything sized
//! (connections at every stage, `-n`, the pool). Inside a part, its threads split its share
//! the same way again, so any number of threads per part keeps the partition exact.

use std::sync::atomic::{AtomicU64, Ordering};

/// Part `index` of `count` (`0 of 1`: the whole run, in one process).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub index: u64,
    pub count: u64,
}

impl Default for Part {
    fn default() -> Part {
        Part::WHOLE
    }
}

impl Part {
    /// The whole run.
    pub const WHOLE: Part = Part { index: 0, count: 1 };

    /// Part `index` of `count`; `None` unless `index < count`.
    pub fn new(index: u64, count: u64) -> Option<Part> {
        (index < count).then_some(Part { index, count })
    }

    /// The global number of this part's `local`-th item.
    pub fn global(self, local: u64) -> u64 {
        self.index + self.count * local
    }

    /// This part's share of `total`.
    pub fn share(self, total: u64) -> u64 {
        total / self.count + u64::from(self.index < total % self.count)
    }

    /// Whether this is the whole run.
    pub fn is_whole(self) -> bool {
        self.count == 1
    }
}

/// A counter of global numbers (`{{seq}}`, the next data row) that takes only its part's.
#[derive(Debug, Default)]
pub struct Counter {
    next: AtomicU64,
    part: Part,
}

impl Counter {
    /// A counter from `start` (in the part's own numbering).
    pub fn new(start: u64) -> Counter {
        Counter {
            next: AtomicU64::new(start),
            part: Part::WHOLE,
        }
    }

    /// Counts only `part`'s numbers from now on.
    pub fn set_part(&mut self, part: Part) {
        self.part = part;
    }

    /// The next global number of this part.
    pub fn take(&self) -> u64 {
        self.part.global(self.next.fetch_add(1, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_of_a_split_add_up_to_the_whole() {
        for count in 1..=7u64 {
            for total in 0..50u64 {
                let parts: Vec<Part> = (0..count).map(|i| Part::new(i, count).unwrap()).collect();
                assert_eq!(parts.iter().map(|p| p.share(total)).sum::<u64>(), total);
                // The global numbers of every part's share cover 0..total once each.
                let mut seen: Vec<u64> = parts
                    .iter()
                    .flat_map(|p| (0..p.share(total)).map(move |l| p.global(l)))
                    .collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..total).collect::<Vec<_>>(), "{total} over {count}");
            }
        }
        assert_eq!(Part::new(3, 3), None);
    }

    #[test]
    fn counters_of_the_parts_never_meet() {
        let mut a = Counter::new(0);
        let mut b = Counter::new(0);
        a.set_part(Part { index: 0, count: 2 });
        b.set_part(Part { index: 1, count: 2 });
        let (x, y): (Vec<u64>, Vec<u64>) = (0..4).map(|_| (a.take(), b.take())).unzip();
        assert_eq!((x, y), (vec![0, 2, 4, 6], vec![1, 3, 5, 7]));
    }
}
