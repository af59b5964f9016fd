//! The tokio worker, for TLS and HTTP/2: a current-thread runtime whose connection tasks share
//! the worker's state through `Rc`/`Cell` (one thread, no locks). A connection task runs
//! `ticket -> exchange` in a loop; only the ticket differs between load models (see the parent
//! module for the rules).

use super::pool::{Pool, Taken};
use super::{
    backoff_delay, buckets, closed_may_send, full_second, micros, open_due, pace, record,
    record_connect_error, CLOSE_WITHIN, REFUSED_REST,
};
use super::{Msg, Shared};
use crate::proto::connect::connect;
use crate::proto::reply::Idle;
use crate::proto::session::{self, Conn, Tally};
use model::Curve;
use model::Load;
use stats::{Bucket, ErrorKind};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::Sleep;
use workload::Vu;

/// How often the closed-model driver re-reads the connection curve and the stop flag is checked.
const POLL: Duration = Duration::from_millis(50);

/// Per-worker state shared by its tasks.
struct Local {
    shared: Arc<Shared>,
    id: usize,
    /// This second's buckets, one per request of the workload.
    rec: RefCell<Vec<Bucket>>,
    /// Open model: next request index this worker will take.
    next: Cell<u64>,
    /// Closed model: slots `>= target` retire after their current request.
    target: Cell<usize>,
    alive: RefCell<Vec<bool>>,
    in_flight: Cell<u64>,
    /// HTTP/2 connections the slots share (`--connections`), when asked.
    pool: Option<Pool>,
    /// Open model: arrivals that are due, handed to idle slots by [`dispatch`].
    arrivals: RefCell<VecDeque<Instant>>,
    arrived: Notify,
    /// Open model: slots waiting for an arrival, and their signal to [`dispatch`].
    idle: Cell<usize>,
    wanted: Notify,
    /// Open model: the schedule has no more arrivals.
    over: Cell<bool>,
    /// When the worker's last exchange ended.
    last_done: Cell<Option<Instant>>,
}

/// Runs the worker; returns its last partial buckets, the requests still in flight, and
/// when its last exchange ended (its slots close their connections after it).
pub fn run(
    shared: &Arc<Shared>,
    id: usize,
    tx: &Sender<Msg>,
) -> Result<(Vec<Bucket>, u64, Option<Instant>), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start runtime: {e}"))?;
    let ctx = Rc::new(Local {
        shared: shared.clone(),
        id,
        rec: RefCell::new(buckets(shared, 0)),
        next: Cell::new(id as u64),
        target: Cell::new(0),
        alive: RefCell::new(Vec::new()),
        in_flight: Cell::new(0),
        pool: shared
            .connections
            .map(|n| Pool::new(shared.share_of(n, id))),
        arrivals: RefCell::new(VecDeque::new()),
        arrived: Notify::new(),
        idle: Cell::new(0),
        wanted: Notify::new(),
        over: Cell::new(false),
        last_done: Cell::new(None),
    });
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let flusher = tokio::task::spawn_local(flush_loop(ctx.clone(), tx.clone()));
        tokio::select! {
            _ = drive(ctx.clone()) => {}
            _ = hard_stop(shared) => {}
        }
        flusher.abort();
    });
    // The slots cut by the hard stop are dropped with the set, in the runtime (their timers
    // are its), and account their connections before the last buckets are taken.
    {
        let _in_runtime = rt.enter();
        drop(local);
    }
    let last = ctx.rec.take();
    Ok((last, ctx.in_flight.get(), ctx.last_done.get()))
}

/// Resolves on an interrupt, or when requests still in flight after the end of the schedule
/// have had their grace period.
async fn hard_stop(shared: &Shared) {
    loop {
        if shared.past_end(Instant::now()) {
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Sends the finished bucket at every whole second since the start.
async fn flush_loop(ctx: Rc<Local>, tx: Sender<Msg>) {
    let mut second = 0u64;
    loop {
        tokio::time::sleep_until((ctx.shared.start + Duration::from_secs(second + 1)).into()).await;
        second += 1;
        let full = full_second(
            &ctx.shared,
            second,
            &mut ctx.rec.borrow_mut(),
            ctx.in_flight.get(),
        );
        if tx.send(Msg::Buckets(ctx.id, full)).is_err() {
            return;
        }
    }
}

async fn drive(ctx: Rc<Local>) {
    match &ctx.shared.load {
        Load::Open { pool, .. } => {
            let mut tasks = JoinSet::new();
            tasks.spawn_local(dispatch(ctx.clone()));
            for slot in 0..ctx.shared.share_of(*pool, ctx.id) {
                tasks.spawn_local(open_task(ctx.clone(), slot));
            }
            while tasks.join_next().await.is_some() {}
        }
        Load::Closed { connections } => closed_driver(ctx.clone(), connections.clone()).await,
    }
}

/// Keeps the number of live closed-model slots on the connection curve.
async fn closed_driver(ctx: Rc<Local>, curve: Curve) {
    let shared = ctx.shared.clone();
    let mut tasks = JoinSet::new();
    while let Some(level) = curve.value_at(shared.start.elapsed()) {
        if shared.tickets_exhausted() && tasks.is_empty() {
            break;
        }
        // Once every `-n` ticket is taken, slots that end are not replaced.
        let wanted = shared.share_of(level.round() as usize, ctx.id);
        let target = if shared.tickets_exhausted() {
            0
        } else {
            wanted
        };
        ctx.target.set(target);
        {
            let mut alive = ctx.alive.borrow_mut();
            if alive.len() < target {
                alive.resize(target, false);
            }
            for (slot, a) in alive.iter_mut().enumerate().take(target) {
                if !*a {
                    *a = true;
                    tasks.spawn_local(closed_task(ctx.clone(), slot));
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    ctx.target.set(0);
    while tasks.join_next().await.is_some() {}
}

async fn closed_task(ctx: Rc<Local>, slot: usize) {
    let mut conn = Slot::new(&ctx, slot);
    // Paced connections: when the next request is due.
    let mut due: Option<Instant> = None;
    loop {
        if let Some(at) = due {
            let until = ctx.shared.end.map_or(at, |end| at.min(end));
            conn.rest(&ctx, until).await;
        }
        if let Some(at) = conn.resume_at.take() {
            // A held stream that ended opens again when it asked, as a browser's would.
            let until = ctx.shared.end.map_or(at, |end| at.min(end));
            conn.rest(&ctx, until).await;
        }
        let now = Instant::now();
        if !closed_may_send(&ctx.shared, slot, ctx.target.get(), now) {
            break;
        }
        // A paced request is measured from when it was due: one held up by a slow answer
        // before it waits in its latency, as in the open model (the timer's own lateness
        // does not count).
        let base = match due {
            Some(at) => {
                let rec = &mut ctx.rec.borrow_mut()[conn.vu.current];
                super::pace_within(rec, at, now, super::TIMER_SLACK)
            }
            None => now,
        };
        due = ctx.shared.every.map(|every| match due {
            Some(at) => at + every,
            // The first goes at once, as the connection opens; then each connection keeps
            // a phase of its own within `every`, so N connections do not all send at the
            // same instant.
            None => now + every.mul_f64(phase(slot * ctx.shared.workers + ctx.id)),
        });
        conn.exchange(&ctx, base, now).await;
    }
    conn.close(&ctx).await;
    if let Some(a) = ctx.alive.borrow_mut().get_mut(slot) {
        *a = false;
    }
}

/// Where in its period paced connection `n` sends, in (0, 1]: the golden-ratio sequence,
/// which spreads any number of connections evenly across the period.
fn phase(n: usize) -> f64 {
    let f = ((n as f64 + 1.0) * 0.618_033_988_749_895).fract();
    if f == 0.0 {
        1.0
    } else {
        f
    }
}

async fn open_task(ctx: Rc<Local>, slot: usize) {
    let mut conn = Slot::new(&ctx, slot);
    loop {
        // A flow iteration goes on at once; only its first step waits for the schedule.
        let running = ctx.shared.end.is_none_or(|end| Instant::now() < end);
        if conn.vu.in_iteration() && running {
            let now = Instant::now();
            conn.exchange(&ctx, now, now).await;
            continue;
        }
        let Some(due) = next_arrival(&ctx).await else {
            break;
        };
        let now = Instant::now();
        let base = pace(&mut ctx.rec.borrow_mut()[0], due, now);
        conn.exchange(&ctx, base, now).await;
    }
    conn.close(&ctx).await;
}

/// Open model: waits, idle, for the next arrival [`dispatch`] hands out; `None` once the
/// schedule is over.
async fn next_arrival(ctx: &Local) -> Option<Instant> {
    ctx.idle.set(ctx.idle.get() + 1);
    ctx.wanted.notify_one();
    let due = loop {
        if let Some(due) = ctx.arrivals.borrow_mut().pop_front() {
            break Some(due);
        }
        if ctx.over.get() {
            break None;
        }
        ctx.arrived.notified().await;
    };
    ctx.idle.set(ctx.idle.get() - 1);
    due
}

/// Open model: hands this worker's arrivals to idle slots, each at its due instant on the
/// precise timer (tokio's own is a millisecond coarse: requests would start up to 1.5 ms
/// late, and the open model would charge that to the server). An arrival is handed out only
/// when a slot is idle to take it: while every slot is busy the schedule waits, and the next
/// arrival, already due, starts late and is measured from its due instant.
async fn dispatch(ctx: Rc<Local>) {
    let alarm = super::alarm::AsyncAlarm::new().ok();
    let mut woke = Instant::now();
    loop {
        while ctx.idle.get() <= ctx.arrivals.borrow().len() {
            ctx.wanted.notified().await;
        }
        let i = ctx.next.get();
        ctx.next.set(i + ctx.shared.workers as u64);
        let Some(due) = open_due(&ctx.shared, i) else {
            break;
        };
        // Arrivals closer together than WAKE_GAP share a wake-up.
        let at = due.max(woke + super::alarm::WAKE_GAP);
        if due > Instant::now() {
            match &alarm {
                Some(a) => a.sleep_until(at).await,
                None => tokio::time::sleep_until(at.into()).await,
            }
            woke = Instant::now();
        }
        ctx.arrivals.borrow_mut().push_back(due);
        ctx.arrived.notify_one();
    }
    ctx.over.set(true);
    ctx.arrived.notify_waiters();
}

/// One connection slot: its virtual user, its connection (opened lazily, reopened after
/// errors), its connect failures, and its request-timeout timer.
struct Slot {
    vu: Vu,
    /// Which connection of the worker's pool this slot uses (with `--connections`).
    slot: usize,
    conn: Option<Conn>,
    /// The pool generation of `conn` when it is shared.
    pooled: Option<u64>,
    failures: u32,
    /// When its last exchange ended.
    last_done: Instant,
    /// Lazy deadline: armed for some earlier request's deadline, which is never later than the
    /// current one. When it fires before the current deadline it is re-armed, so a fast
    /// connection touches the timer wheel about once per timeout period instead of per request.
    timer: Pin<Box<Sleep>>,
    /// Where a connection still open when the slot is dropped is accounted.
    local: Rc<Local>,
    /// When its held stream, ended, opens again (`--hold` on an event stream).
    resume_at: Option<Instant>,
}

impl Drop for Slot {
    /// A slot dropped with its own connection open (the run ended while an exchange waited
    /// for its answer, and the hard stop cut it) accounts what the connection carried: the
    /// messages and bytes it sent are measured, not lost with it.
    fn drop(&mut self) {
        if let (Some(c), None) = (self.conn.as_mut(), self.pooled) {
            if let Ok(mut rec) = self.local.rec.try_borrow_mut() {
                if let Some(b) = rec.get_mut(self.vu.current) {
                    c.account(b, true);
                }
            }
        }
    }
}

impl Slot {
    /// Waits until `until`, its connection (its own, not a shared one) kept as its protocol
    /// asks meanwhile; one that ended is accounted and dropped, to be opened again.
    async fn rest(&mut self, ctx: &Local, until: Instant) {
        match (self.conn.as_mut(), self.pooled) {
            (Some(c), None) => {
                if !c.rest(until).await {
                    c.account(&mut ctx.rec.borrow_mut()[self.vu.current], true);
                    self.conn = None;
                }
            }
            _ => tokio::time::sleep_until(until.into()).await,
        }
    }

    /// Closes the slot's own connection as its protocol asks (a shared one stays for the
    /// others), within [`CLOSE_WITHIN`].
    async fn close(&mut self, ctx: &Local) {
        if let (Some(c), None) = (self.conn.as_mut(), self.pooled) {
            c.close(CLOSE_WITHIN).await;
            c.account(&mut ctx.rec.borrow_mut()[self.vu.current], true);
        }
        self.conn = None;
    }

    fn new(ctx: &Rc<Local>, slot: usize) -> Slot {
        let shared = &ctx.shared;
        Slot {
            local: ctx.clone(),
            vu: Vu::new(
                &shared.connector.workload,
                (slot * shared.workers + ctx.id) as u64,
            ),
            slot,
            conn: None,
            pooled: None,
            failures: 0,
            last_done: Instant::now(),
            timer: Box::pin(tokio::time::sleep(shared.timeout)),
            resume_at: None,
        }
    }

    /// With a pool: takes this slot's shared connection (waiting while another slot opens
    /// it); returns the pool entry when this slot must open it. `now` moves on if it waited.
    async fn take_shared(&mut self, ctx: &Local, now: &mut Instant) -> Option<usize> {
        let pool = ctx.pool.as_ref()?;
        if self.conn.is_some() {
            return None;
        }
        let i = pool.index(self.slot);
        match pool.take(i).await {
            Taken::Shared(c, g) => {
                self.conn = Some(c);
                self.pooled = Some(g);
                *now = Instant::now();
                None
            }
            Taken::Open => Some(i),
        }
    }

    /// One attempt: connect if needed, send, read, record. Latency is measured from `base`
    /// (the intended start) and, as service time, from the send; `now` is a fresh clock reading.
    async fn exchange(&mut self, ctx: &Local, base: Instant, now: Instant) {
        let shared = &ctx.shared;
        let connector = &shared.connector;
        if let Some(c) = self.conn.as_mut() {
            match session::idle(c, now.saturating_duration_since(self.last_done)).await {
                Idle::Open => {}
                Idle::Closed => {
                    c.account(&mut ctx.rec.borrow_mut()[self.vu.current], true);
                    self.conn = None;
                }
                Idle::Stray => {
                    self.conn = None;
                    super::record_stray(&mut ctx.rec.borrow_mut()[self.vu.current]);
                }
            }
        }
        let mut now = now;
        let opening = self.take_shared(ctx, &mut now).await;
        ctx.in_flight.set(ctx.in_flight.get() + 1);
        self.vu.next(&connector.workload);
        let mut opened_at = None;
        let (c, sent) = match &mut self.conn {
            Some(c) => (c, now),
            None => {
                let started = Instant::now();
                // Boxed: a connect (TLS handshake included) is a large future, and a slot
                // that kept room for it inline would hold it for every request in flight.
                // Each stage of the opening keeps its own deadline (`proto::connect`).
                let opened = Box::pin(connect(connector, &mut self.vu)).await;
                match opened {
                    Ok((c, times)) => {
                        self.failures = 0;
                        let sent = Instant::now();
                        let setup = &mut ctx.rec.borrow_mut()[self.vu.current].setup;
                        setup.record_connect(micros(times.connect));
                        if let Some(t) = times.tls {
                            setup.record_tls(micros(t));
                        }
                        if let Some(t) = times.upgrade {
                            setup.record_upgrade(micros(t));
                        }
                        // Latency keeps the attempt's start (the intended one in the open
                        // model): the connect and handshake are part of what the caller
                        // waited for. Service time is from the send.
                        opened_at = Some(started);
                        if let (Some(i), Some(pool)) = (opening, &ctx.pool) {
                            self.pooled = pool.opened(i, &c);
                        }
                        (self.conn.insert(c), sent)
                    }
                    Err(kind) => {
                        if let (Some(i), Some(pool)) = (opening, &ctx.pool) {
                            pool.failed(i);
                        }
                        ctx.in_flight.set(ctx.in_flight.get() - 1);
                        {
                            let mut rec = ctx.rec.borrow_mut();
                            record_connect_error(&mut rec, shared, &mut self.vu, kind);
                        }
                        let mut until = Instant::now() + backoff_delay(self.failures);
                        self.failures += 1;
                        if let Some(end) = shared.end {
                            until = until.min(end);
                        }
                        tokio::time::sleep_until(until.into()).await;
                        return;
                    }
                }
            }
        };
        // A held stream lasts the run: only its silence (the idle timeout) ends it early.
        let held = connector.events.hold;
        let deadline = match shared.end {
            Some(end) if held => end.max(sent) + shared.timeout,
            _ => sent + shared.timeout,
        };
        if held {
            let resumed = connector.resumes(&self.vu);
            let rec = &mut ctx.rec.borrow_mut()[self.vu.current];
            super::held_stream_opens(rec, &mut self.vu, resumed);
        }
        let (result, bytes_out) = {
            let tally = Tally {
                rec: &ctx.rec,
                base,
            };
            let mut send = c.send(connector, &mut self.vu, tally);
            loop {
                // The deadline first: a server streaming without end keeps `send` busy until
                // tokio's budget runs out, and a timer polled after it would find the budget
                // spent every time and never fire.
                tokio::select! {
                    biased;
                    _ = self.timer.as_mut() => {
                        if Instant::now() >= deadline {
                            break (Err(ErrorKind::Timeout), 0);
                        }
                        self.timer.as_mut().reset(deadline.into());
                    }
                    r = &mut send => break r,
                }
            }
        };
        let result = c.at_deadline(connector, result, Instant::now() >= deadline);
        let done = Instant::now();
        self.last_done = done;
        ctx.last_done.set(Some(done));
        if let (Some(started), false, Ok(_)) = (opened_at, shared.keepalive, &result) {
            ctx.rec.borrow_mut()[self.vu.current]
                .setup
                .record_with_connect(micros(done - started));
        }
        let refused = matches!(result, Err(ErrorKind::InvalidRequest));
        ctx.in_flight.set(ctx.in_flight.get() - 1);
        let current = self.vu.current;
        // An answer read as events: what is left of it to record, once it ended well.
        let mut result = result;
        let mut events = c.events();
        if let (Ok((reply, _)), Some(e)) = (&mut result, events.as_deref_mut()) {
            let rec = &mut ctx.rec.borrow_mut()[current];
            super::record_events(rec, shared, e, base, done, reply);
        }
        if held {
            let e = events.as_deref();
            self.resume_at = Some(super::held_stream_ended(&mut self.vu, e, done));
        }
        let failed = result.as_ref().err().copied();
        let keep = record(
            &mut ctx.rec.borrow_mut(),
            shared,
            &mut self.vu,
            result,
            bytes_out,
            base,
            sent,
            done,
        );
        // A stream lost on a connection that carries on is no reason to drop it.
        let keep = keep || (shared.keepalive && failed.is_some_and(|k| c.survives(k)));
        c.account(&mut ctx.rec.borrow_mut()[current], !keep);
        if !keep {
            self.conn = None;
            if let (Some(g), Some(pool)) = (self.pooled.take(), &ctx.pool) {
                pool.drop_conn(pool.index(self.slot), g);
            }
        }
        if refused {
            tokio::time::sleep(REFUSED_REST).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::phase;

    #[test]
    fn paced_connections_spread_across_their_period() {
        for n in [1usize, 2, 10, 100, 1000] {
            let mut at: Vec<f64> = (0..n).map(phase).collect();
            assert!(at.iter().all(|&p| p > 0.0 && p <= 1.0), "{at:?}");
            at.sort_by(f64::total_cmp);
            // No stretch of the period is left empty much beyond an even share's size.
            let widest = at
                .windows(2)
                .map(|w| w[1] - w[0])
                .chain([at[0], 1.0 - at[n - 1] + at[0]])
                .fold(0.0, f64::max);
            assert!(n < 2 || widest < 3.0 / n as f64, "{n}: widest gap {widest}");
        }
    }
}
