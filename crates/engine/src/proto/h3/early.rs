//! 0-RTT (`--0rtt`): a connection that resumes an earlier session may carry requests before
//! its handshake ends. Until the server says whether it took that early data, requests that
//! may go early do, the others wait; once it refused it, the requests it lost are sent again
//! (quinn reports them as `ZeroRttRejected`) and brink's control stream is opened anew, as the
//! refused one never arrived.

use super::wire;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

const HANDSHAKING: u8 = 0;
const ACCEPTED: u8 = 1;
const REFUSED: u8 = 2;

/// Where a 0-RTT connection's handshake is, and a signal for the requests that wait for it.
#[derive(Default)]
pub struct Early {
    phase: AtomicU8,
    settled: Notify,
}

impl Early {
    /// Whether the handshake is still going on (requests sent now are early data).
    pub fn handshaking(&self) -> bool {
        self.phase.load(Ordering::Acquire) == HANDSHAKING
    }

    /// Waits until the server has taken or refused the early data.
    pub async fn settled(&self) {
        loop {
            let signal = self.settled.notified();
            if !self.handshaking() {
                return;
            }
            signal.await;
        }
    }

    fn settle(&self, accepted: bool) {
        let phase = if accepted { ACCEPTED } else { REFUSED };
        self.phase.store(phase, Ordering::Release);
        self.settled.notify_waiters();
    }
}

/// Runs until the connection ends: settles `early` when the server answers the early data
/// and, when it refused it, opens brink's control stream again and holds it open.
pub async fn watch(quic: quinn::Connection, accepted: quinn::ZeroRttAccepted, early: Arc<Early>) {
    let took = accepted.await;
    early.settle(took);
    if took {
        return;
    }
    let Ok(mut control) = quic.open_uni().await else {
        return;
    };
    if control.write_all(&wire::control_stream()).await.is_ok() {
        quic.closed().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_wake_when_the_handshake_settles() {
        let early = Arc::new(Early::default());
        assert!(early.handshaking());
        let waiting = tokio::spawn({
            let early = early.clone();
            async move { early.settled().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        early.settle(false);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .expect("joined");
        assert!(!early.handshaking());
        // Settled already: no wait at all.
        early.settled().await;
    }
}
