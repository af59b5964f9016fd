//! The one epoll loop the plain-TCP workers run (HTTP/1.1 in `epoll.rs`, h2c in `h2poll.rs`,
//! `ws://` in `wspoll.rs`): the seconds sent on time, housekeeping every [`TICK`], the end of
//! the run, the open model's alarm, the wait, and the events and the connections left with
//! more to read. The slot policy lives here once too: which slot starts an attempt when
//! (the closed model's connection curve and ramp downs, the open model's due requests on
//! free slots past their rest, pacing, a flow's next step at once), in [`housekeep_closed`],
//! [`start_due`] and [`next`]. What an attempt is on the wire, and what a connection does
//! with an event, is the protocol's ([`Conns`]).

use super::alarm::Alarm;
use super::sys::{token_of, Epoll, Sock};
use super::{buckets, closed_may_send, open_due, pace, send_seconds, Msg, Shared, ALARM, TICK};
use model::Load;
use stats::Bucket;
use std::io;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

/// What the loop keeps for any protocol.
pub(super) struct Core<'a> {
    pub shared: &'a Shared,
    pub id: usize,
    pub tx: &'a Sender<Msg>,
    pub poll: Epoll,
    /// This second's buckets, one per request of the workload.
    pub rec: Vec<Bucket>,
    pub second: u64,
    pub in_flight: u64,
    /// Closed model: slots `>= target` retire.
    pub target: usize,
    /// Open model: the next request (index, due time) not yet started.
    pub pending: Option<(u64, Instant)>,
    /// Open model: free slots.
    pub idle: Vec<usize>,
    /// Open model: wakes the loop when the next request is due.
    pub alarm: Option<Alarm>,
    /// Connections that had more to read when their turn's reads ran out (edge-triggered
    /// epoll will not report them again): served on the next turn.
    pub again: Vec<usize>,
}

impl<'a> Core<'a> {
    /// The loop's state for worker `id` of `shared` with `slots` slots: its epoll, and in the
    /// open model its alarm, its first due request and every slot free.
    pub fn new(
        shared: &'a Shared,
        id: usize,
        tx: &'a Sender<Msg>,
        slots: usize,
    ) -> Result<Core<'a>, String> {
        let poll = Epoll::new().map_err(|e| format!("cannot create epoll: {e}"))?;
        let open = matches!(shared.load, Load::Open { .. });
        let alarm = if open {
            Some(Alarm::new(&poll, ALARM).map_err(|e| format!("cannot create timer: {e}"))?)
        } else {
            None
        };
        Ok(Core {
            shared,
            id,
            tx,
            poll,
            rec: buckets(shared, 0),
            second: 0,
            in_flight: 0,
            target: 0,
            pending: if open {
                open_due(shared, id as u64).map(|due| (id as u64, due))
            } else {
                None
            },
            idle: if open {
                (0..slots).rev().collect()
            } else {
                Vec::new()
            },
            alarm,
            again: Vec::new(),
        })
    }
}

impl Core<'_> {
    /// Closed model: sets `target` to this worker's share of the connection curve now; false
    /// once the curve has ended (target 0). `None` in the open model, which has no curve.
    pub fn follow_curve(&mut self, now: Instant) -> Option<bool> {
        let Load::Closed { connections } = &self.shared.load else {
            return None;
        };
        let level = connections.value_at(now - self.shared.start);
        self.target = level.map_or(0, |l| self.shared.share_of(l.round() as usize, self.id));
        Some(level.is_some())
    }

    /// Open model: slot `k` is free again (it may be resting: its `free_at` says until when).
    /// The closed model keeps no free list: its housekeeping finds free slots itself.
    pub fn release(&mut self, k: usize) {
        if matches!(self.shared.load, Load::Open { .. }) {
            self.idle.push(k);
        }
    }

    /// A non-blocking connect to the target, registered with this loop's epoll as `token`;
    /// `None` when either failed.
    pub fn dial(&self, token: usize) -> Option<Sock> {
        let s = Sock::connect(self.shared.connector.addr).ok()?;
        self.poll.add(&s, token, true).ok()?;
        Some(s)
    }
}

/// Worker `id`'s share of the run's slots: the closed model's most connections, or the open
/// model's pool.
pub(super) fn slots(shared: &Shared, id: usize) -> usize {
    match &shared.load {
        Load::Closed { connections } => shared.share_of(connections.peak().round() as usize, id),
        Load::Open { pool, .. } => shared.share_of(*pool, id),
    }
}

/// A protocol's slots and connections, driven by [`run`]. A slot carries one attempt at a
/// time; the driver decides when each starts.
pub(super) trait Conns<'a> {
    fn core(&self) -> &Core<'a>;
    fn core_mut(&mut self) -> &mut Core<'a>;
    /// Requests and connects past their deadline fail.
    fn expire(&mut self, now: Instant);
    /// How many slots there are (`0..slot_count()`).
    fn slot_count(&self) -> usize;
    /// Whether slot `k` carries no attempt (free, or resting after a failure).
    fn is_free(&self, k: usize) -> bool;
    /// When free slot `k` can start: now, or after its rest (a connect backoff, a refusal).
    fn free_at(&self, k: usize, now: Instant) -> Instant;
    /// Free slot `k`, past its rest, is taken for an attempt or a retirement: it leaves its
    /// rest.
    fn claim(&mut self, _k: usize) {}
    /// Starts an attempt on slot `k`, its latency measured from `base`.
    fn start(&mut self, k: usize, base: Instant, now: Instant);
    /// Closed model: free slot `k` is at or past the connection curve's level (a ramp down).
    fn retire(&mut self, _k: usize, _now: Instant) {}
    /// Whether slot `k` is inside a flow iteration: its next step goes at once.
    fn in_iteration(&self, k: usize) -> bool;
    /// Sends what the turn queued (a protocol that writes as it goes has nothing to do).
    fn flush(&mut self) {}
    /// The current second is over: a protocol whose connections keep counts of their own
    /// between exchanges adds them to the second's buckets before they are sent.
    fn second_over(&mut self) {}
    /// Connection `k` is readable (or, with `writable`, writable).
    fn on_event(&mut self, k: usize, writable: bool);
    /// Connection `k` had more to read when its last turn's reads ran out.
    fn resume(&mut self, k: usize);
}

/// Closed model: follows the connection curve (free slots past its level retire, the others
/// past their rest start an attempt); true once nothing more will be started.
pub(super) fn housekeep_closed<'a, C: Conns<'a>>(c: &mut C, now: Instant) -> bool {
    match c.core_mut().follow_curve(now) {
        None => return false,
        Some(false) => return true,
        Some(true) => {}
    }
    for k in 0..c.slot_count() {
        if !c.is_free(k) || c.free_at(k, now) > now {
            continue;
        }
        c.claim(k);
        let core = c.core();
        if k >= core.target {
            c.retire(k, now);
        } else if closed_may_send(core.shared, k, core.target, now) {
            c.start(k, now, now);
        }
    }
    c.core().shared.tickets_exhausted()
}

/// Open model: starts every due request that has a free slot past its rest, its latency
/// from when it was due if it is sent late ([`pace`]).
pub(super) fn start_due<'a, C: Conns<'a>>(c: &mut C, now: Instant) {
    loop {
        let core = c.core();
        let Some((i, due)) = core.pending else { return };
        if due > now {
            return;
        }
        let Some(pos) = core.idle.iter().rposition(|&k| c.free_at(k, now) <= now) else {
            return;
        };
        let core = c.core_mut();
        let k = core.idle.swap_remove(pos);
        let next = i + core.shared.workers as u64;
        core.pending = open_due(core.shared, next).map(|d| (next, d));
        let base = pace(&mut core.rec[0], due, now);
        c.claim(k);
        c.start(k, base, now);
    }
}

/// Slot `k`'s attempt ended at `done`: its next one at once (the closed model while the
/// curve keeps it, a flow iteration's next step while the run lasts), or it retires (past a
/// ramp down) or frees for the open model's next due request.
pub(super) fn next<'a, C: Conns<'a>>(c: &mut C, k: usize, done: Instant) {
    let core = c.core();
    match core.shared.load {
        Load::Closed { .. } => {
            if closed_may_send(core.shared, k, core.target, done) {
                c.start(k, done, done);
            } else if k >= core.target {
                c.retire(k, done);
            }
        }
        Load::Open { .. } => {
            // A flow iteration goes on at once; only its first step waits for the schedule.
            if c.in_iteration(k) && core.shared.running(done) {
                c.start(k, done, done);
            } else {
                c.core_mut().idle.push(k);
                start_due(c, done);
            }
        }
    }
}

/// Runs the loop until the run is over (its end, or nothing more to send and nothing in
/// flight) or epoll fails.
pub(super) fn run<'a, C: Conns<'a>>(c: &mut C) {
    let mut events = Vec::with_capacity(1024);
    let mut next_tick = Instant::now();
    let mut closed_over = false;
    loop {
        let now = Instant::now();
        let core = c.core_mut();
        if core.shared.past_end(now) {
            return;
        }
        if now >= core.shared.start + Duration::from_secs(core.second + 1) {
            c.second_over();
        }
        let core = c.core_mut();
        send_seconds(
            core.shared,
            core.id,
            core.tx,
            &mut core.second,
            &mut core.rec,
            (now, core.in_flight),
        );
        if now >= next_tick {
            next_tick = now + TICK;
            c.expire(now);
            closed_over = housekeep_closed(c, now);
        }
        start_due(c, now);
        c.flush();
        let core = c.core();
        let over = match core.shared.load {
            Load::Closed { .. } => closed_over,
            Load::Open { .. } => core.pending.is_none(),
        };
        if over && core.in_flight == 0 {
            return;
        }
        // Wake for the next due request, but not before a free slot can take it: slots in
        // connect backoff are not free until their retry time.
        let free_at = core.idle.iter().map(|&k| c.free_at(k, now)).min();
        let core = c.core_mut();
        if let (Some((_, due)), Some(free_at), Some(alarm)) =
            (core.pending, free_at, core.alarm.as_mut())
        {
            alarm.set(due.max(free_at), now);
        }
        let wake = next_tick.min(core.shared.start + Duration::from_secs(core.second + 1));
        let again = std::mem::take(&mut core.again);
        let timeout = if again.is_empty() {
            wake.saturating_duration_since(now)
        } else {
            Duration::ZERO
        };
        if let Err(e) = core.poll.wait(&mut events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                return;
            }
        }
        for ev in &events {
            match (token_of(ev), c.core_mut().alarm.as_mut()) {
                ((ALARM, _), Some(alarm)) => alarm.fired(),
                ((k, writable), _) => c.on_event(k, writable),
            }
        }
        for k in again {
            c.resume(k);
        }
    }
}
