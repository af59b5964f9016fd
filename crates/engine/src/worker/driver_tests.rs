//! The slot policy every epoll worker shares ([`driver`]), driven without sockets: a fake
//! protocol whose slots are free, busy or resting as each test sets them, and which records
//! what the driver asked of it. Each assertion names the rule it holds.

use super::driver::{self, Conns, Core};
use super::{Msg, Shared};
use crate::{Curve, Load};
use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);

/// A run of `load` against a port nobody dials here (the fake opens no connection), on one
/// worker thread.
fn shared(load: Load) -> Shared {
    crate::run::prepare(&crate::run::test_spec("http://127.0.0.1:9/", load)).expect("prepares")
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Slot {
    Free,
    Busy,
    /// Free, resting until then.
    Resting(Instant),
}

struct Fake<'a> {
    core: Core<'a>,
    slots: Vec<Slot>,
    in_flow: Vec<bool>,
    /// What the driver asked, in order.
    started: Vec<(usize, Instant)>,
    claimed: Vec<usize>,
    retired: Vec<usize>,
}

impl<'a> Fake<'a> {
    fn new(shared: &'a Shared, tx: &'a Sender<Msg>, slots: Vec<Slot>) -> Fake<'a> {
        let n = slots.len();
        Fake {
            core: Core::new(shared, 0, tx, n).expect("epoll"),
            slots,
            in_flow: vec![false; n],
            started: Vec::new(),
            claimed: Vec::new(),
            retired: Vec::new(),
        }
    }
}

impl<'a> Conns<'a> for Fake<'a> {
    fn core(&self) -> &Core<'a> {
        &self.core
    }
    fn core_mut(&mut self) -> &mut Core<'a> {
        &mut self.core
    }
    fn expire(&mut self, _now: Instant) {}
    fn slot_count(&self) -> usize {
        self.slots.len()
    }
    fn is_free(&self, k: usize) -> bool {
        self.slots[k] != Slot::Busy
    }
    fn free_at(&self, k: usize, now: Instant) -> Instant {
        match self.slots[k] {
            Slot::Resting(until) => until,
            _ => now,
        }
    }
    fn claim(&mut self, k: usize) {
        self.claimed.push(k);
        self.slots[k] = Slot::Free;
    }
    fn start(&mut self, k: usize, base: Instant, _now: Instant) {
        assert_ne!(self.slots[k], Slot::Busy, "slot {k} started twice");
        self.slots[k] = Slot::Busy;
        self.started.push((k, base));
    }
    fn retire(&mut self, k: usize, _now: Instant) {
        self.retired.push(k);
    }
    fn in_iteration(&self, k: usize) -> bool {
        self.in_flow[k]
    }
    fn on_event(&mut self, _k: usize, _writable: bool) {}
    fn resume(&mut self, _k: usize) {}
}

fn closed(connections: f64) -> Load {
    Load::Closed {
        connections: Curve::flat(connections, Some(Duration::from_secs(60))),
    }
}

fn open(rate: f64, pool: usize) -> Load {
    Load::Open {
        rate: Curve::flat(rate, Some(Duration::from_secs(60))),
        pool,
    }
}

/// The closed model at a level of 3 with 5 slots: the free slots under the level start (a
/// resting one only once its rest is over), busy ones are left alone, and the free slots at
/// or past the level retire (a resting one too once its rest is over: it holds no attempt).
#[test]
fn the_closed_model_starts_free_slots_under_the_level_and_retires_the_rest() {
    let shared = shared(closed(3.0));
    let (tx, _rx) = channel();
    let now = Instant::now();
    let slots = vec![
        Slot::Free,
        Slot::Busy,
        Slot::Resting(now + 50 * MS),
        Slot::Free,
        Slot::Resting(now - MS),
    ];
    let mut f = Fake::new(&shared, &tx, slots);
    assert!(!driver::housekeep_closed(&mut f, now), "the curve goes on");
    assert_eq!(f.core.target, 3);
    assert_eq!(
        f.started,
        vec![(0, now)],
        "slot 0 starts now; 1 is busy; 2 rests"
    );
    // Slot 3 is exactly at the level: `k >= target` retires it (`>` would start it).
    assert_eq!(f.retired, vec![3, 4]);
    assert_eq!(
        f.claimed,
        vec![0, 3, 4],
        "only free slots past their rest are taken"
    );
    // Once its rest is over, slot 2 starts too; the started one is left alone.
    let later = now + 60 * MS;
    driver::housekeep_closed(&mut f, later);
    assert_eq!(f.started, vec![(0, now), (2, later)]);
}

/// After an attempt, the closed model starts the slot's next one at once under the level,
/// and retires a slot at or past it.
#[test]
fn the_closed_model_goes_on_at_once_or_retires_after_an_attempt() {
    let shared = shared(closed(2.0));
    let (tx, _rx) = channel();
    let now = Instant::now();
    let mut f = Fake::new(&shared, &tx, vec![Slot::Free; 3]);
    driver::housekeep_closed(&mut f, now);
    assert_eq!(f.started.len(), 2);
    let done = now + 5 * MS;
    f.slots[1] = Slot::Free;
    driver::next(&mut f, 1, done);
    assert_eq!(
        f.started.last(),
        Some(&(1, done)),
        "latency from the end of the last"
    );
    f.slots[2] = Slot::Free;
    driver::next(&mut f, 2, done);
    assert_eq!(
        f.retired,
        vec![2, 2],
        "past the level (once by the housekeeping, once now)"
    );
}

/// The open model: a due request takes a free slot past its rest (the last listed first),
/// its latency from when it was due when it is sent late, and the next arrival becomes
/// pending; a request not yet due, or with no slot free, waits.
#[test]
fn the_open_model_starts_due_requests_on_free_slots_past_their_rest() {
    // One request a second: the second arrival is due a second after the start.
    let shared = shared(open(1.0, 3));
    let (tx, _rx) = channel();
    let now = Instant::now();
    let mut f = Fake::new(&shared, &tx, vec![Slot::Free; 3]);
    assert_eq!(
        f.core.idle,
        vec![2, 1, 0],
        "every slot free, slot 0 taken first"
    );
    f.slots[0] = Slot::Resting(now + 50 * MS);
    // Due 10 ms ago: late past the threshold, so its latency runs from when it was due.
    let due = now - 10 * MS;
    f.core.pending = Some((0, due));
    driver::start_due(&mut f, now);
    assert_eq!(f.started, vec![(1, due)], "slot 0 rests: slot 1 takes it");
    assert_eq!(f.core.idle, vec![2, 0]);
    assert_eq!(
        f.core.pending,
        Some((1, shared.start + Duration::from_secs(1))),
        "the next arrival is pending"
    );
    assert_eq!(f.core.rec[0].late, 1);
    // Not due yet: nothing starts.
    driver::start_due(&mut f, now + 5 * MS);
    assert_eq!(f.started.len(), 1);
    // Due, but every free slot rests: it waits for one.
    f.slots[2] = Slot::Resting(now + 2 * Duration::from_secs(1));
    let second = shared.start + Duration::from_secs(1);
    f.core.pending = Some((1, second));
    f.core.idle = vec![2];
    driver::start_due(&mut f, second);
    assert_eq!(f.started.len(), 1, "no slot is free");
}

/// After an attempt in the open model, a flow iteration's next step goes at once while the
/// run lasts; otherwise the slot is free for the next due request, which it takes if due.
#[test]
fn the_open_model_goes_on_with_a_flow_or_frees_the_slot() {
    let shared = shared(open(1.0, 2));
    let (tx, _rx) = channel();
    let now = Instant::now();
    let mut f = Fake::new(&shared, &tx, vec![Slot::Free; 2]);
    f.core.idle.clear();
    f.core.pending = Some((1, now + Duration::from_secs(1)));
    f.in_flow[0] = true;
    driver::next(&mut f, 0, now);
    assert_eq!(f.started, vec![(0, now)], "the flow's next step, at once");
    f.slots[1] = Slot::Free;
    driver::next(&mut f, 1, now);
    assert_eq!(
        f.core.idle,
        vec![1],
        "free, and the next arrival is not due yet"
    );
    assert_eq!(f.started.len(), 1);
    // Due now: freeing a slot starts it there.
    f.slots[0] = Slot::Free;
    f.in_flow[0] = false;
    f.core.pending = Some((1, now));
    driver::next(&mut f, 0, now);
    assert_eq!(f.started.last().map(|s| s.0), Some(0));
    assert_eq!(f.core.idle, vec![1]);
}
