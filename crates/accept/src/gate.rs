//! What a connection may hold before it proves itself. brink's own listeners (a worker's port,
//! the live-metrics endpoint) face peers that may never say anything: each such connection
//! costs a descriptor the load needs. A [`Gate`] bounds them: at most `most` connections are
//! unproven at once (a new one past that closes the oldest unproven one, so a flood of idle
//! peers cannot keep a legitimate one out for longer than it takes to present itself), and an
//! unproven connection is closed `within` after its last sign of life. What proves a
//! connection is the server's call: a worker's, a request with the token ([`Pass::prove`]:
//! no deadline from then on); the metrics endpoint's, nothing (each request only renews the
//! deadline, [`Pass::touch`], so an idle scraper connection is closed too).

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The bound on a listener's unproven connections.
pub struct Gate {
    most: usize,
    within: Duration,
    epoch: Instant,
    open: Mutex<Unproven>,
}

/// The last id given, and the unproven connections, oldest first: (id, its close signal).
type Unproven = (u64, VecDeque<(u64, Arc<Notify>)>);

/// One admitted connection.
pub struct Pass {
    id: u64,
    gate: Arc<Gate>,
    close: Arc<Notify>,
    proven: AtomicBool,
    /// Milliseconds since the gate's epoch at the last sign of life.
    last_ms: AtomicU64,
}

impl Gate {
    /// At most `most` unproven connections, each closed `within` after its last sign of life.
    pub fn new(most: usize, within: Duration) -> Arc<Gate> {
        Arc::new(Gate {
            most: most.max(1),
            within,
            epoch: Instant::now(),
            open: Mutex::new((0, VecDeque::new())),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Unproven> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Admits a new connection; past the bound, the oldest unproven one is told to close.
    pub fn admit(self: &Arc<Gate>) -> Arc<Pass> {
        let close = Arc::new(Notify::new());
        let mut open = self.lock();
        open.0 += 1;
        let id = open.0;
        while open.1.len() >= self.most {
            if let Some((_, oldest)) = open.1.pop_front() {
                oldest.notify_one();
            }
        }
        open.1.push_back((id, close.clone()));
        drop(open);
        Arc::new(Pass {
            id,
            gate: self.clone(),
            close,
            proven: AtomicBool::new(false),
            last_ms: AtomicU64::new(self.now_ms()),
        })
    }

    /// Unproven connections now.
    pub fn unproven(&self) -> usize {
        self.lock().1.len()
    }

    fn forget(&self, id: u64) {
        self.lock().1.retain(|(i, _)| *i != id);
    }
}

impl Pass {
    /// The peer proved itself: no deadline, and never closed to make room.
    pub fn prove(&self) {
        if !self.proven.swap(true, Ordering::AcqRel) {
            self.gate.forget(self.id);
        }
    }

    /// A sign of life: the deadline starts again.
    pub fn touch(&self) {
        self.last_ms.store(self.gate.now_ms(), Ordering::Relaxed);
    }

    /// Runs `conn` (the connection's whole service) until it ends, or until the connection,
    /// still unproven, outlives its deadline or is closed to make room. Dropping `conn`
    /// closes the socket.
    pub async fn guard<F: Future<Output = ()>>(self: Arc<Pass>, conn: F) {
        tokio::pin!(conn);
        loop {
            let due = self.last_ms.load(Ordering::Relaxed) + self.gate.within.as_millis() as u64;
            let wait = Duration::from_millis(due.saturating_sub(self.gate.now_ms()));
            tokio::select! {
                () = &mut conn => return,
                () = self.close.notified() => return,
                () = tokio::time::sleep(wait), if !self.proven.load(Ordering::Acquire) => {
                    let due = self.last_ms.load(Ordering::Relaxed)
                        + self.gate.within.as_millis() as u64;
                    if self.gate.now_ms() >= due && !self.proven.load(Ordering::Acquire) {
                        return;
                    }
                }
            }
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        self.gate.forget(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn unproven_connections_close_at_their_deadline_and_proven_ones_stay() {
        rt().block_on(async {
            let gate = Gate::new(8, Duration::from_millis(100));
            let idle = gate.admit();
            let t = Instant::now();
            idle.guard(std::future::pending()).await;
            assert!(t.elapsed() >= Duration::from_millis(100));
            assert!(t.elapsed() < Duration::from_secs(2));
            let proven = gate.admit();
            proven.prove();
            let kept = tokio::time::timeout(
                Duration::from_millis(300),
                proven.clone().guard(std::future::pending()),
            )
            .await;
            assert!(kept.is_err(), "a proven connection has no deadline");
            assert_eq!(gate.unproven(), 0);
        });
    }

    #[test]
    fn past_the_bound_the_oldest_unproven_one_makes_room() {
        rt().block_on(async {
            let gate = Gate::new(2, Duration::from_secs(60));
            let (a, b) = (gate.admit(), gate.admit());
            let a_task = tokio::spawn(a.guard(std::future::pending()));
            let b_task = tokio::spawn(b.guard(std::future::pending()));
            tokio::task::yield_now().await;
            let c = gate.admit();
            tokio::time::timeout(Duration::from_secs(2), a_task)
                .await
                .expect("the oldest was closed")
                .unwrap();
            assert!(!b_task.is_finished());
            assert_eq!(gate.unproven(), 2);
            c.prove();
            assert_eq!(gate.unproven(), 1);
            b_task.abort();
        });
    }

    #[test]
    fn a_touch_renews_the_deadline() {
        rt().block_on(async {
            let gate = Gate::new(4, Duration::from_millis(200));
            let p = gate.admit();
            let toucher = p.clone();
            let t = Instant::now();
            let guard = tokio::spawn(p.guard(std::future::pending()));
            for _ in 0..4 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                toucher.touch();
            }
            guard.await.unwrap();
            assert!(
                t.elapsed() >= Duration::from_millis(550),
                "{:?}",
                t.elapsed()
            );
        });
    }
}
