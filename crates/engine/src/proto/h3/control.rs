//! The unidirectional streams of an HTTP/3 connection (RFC 9114 §6.2): brink's control
//! stream, kept open as long as the connection, and the server's, read for GOAWAY (the first
//! request stream the server will not process) and held to its rules: SETTINGS first and once,
//! no frame that belongs on a request stream, GOAWAY naming request streams and never raising
//! its limit, the stream never ended. A server breaking them has the connection closed with
//! the code the RFC names, which the requests on it then report. The server's QPACK streams are
//! drained (with no dynamic table allowed they carry nothing brink needs); push streams (no push
//! was allowed), a second control stream and unknown types are refused with STOP_SENDING.

use super::wire::{self, varint};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The largest control frame (other than one of unknown type, skipped unread) brink holds.
const MAX_CONTROL_FRAME: u64 = 16 * 1024;

const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
const H3_FRAME_UNEXPECTED: u64 = 0x105;
const H3_EXCESSIVE_LOAD: u64 = 0x107;
const H3_ID_ERROR: u64 = 0x108;
const H3_MISSING_SETTINGS: u64 = 0x10a;

/// What the server's unidirectional streams said about the connection.
pub struct State {
    /// The first request stream the server will not process (its GOAWAY); `u64::MAX` before.
    goaway: AtomicU64,
    /// The code brink closed the connection with when the server broke a rule; 0 if not.
    broken: AtomicU64,
    /// Whether the server's control stream has been seen.
    control: AtomicBool,
    /// Woken at each GOAWAY: a request waiting on a stream the server will not process
    /// stops waiting at once, to be sent again (RFC 9114 §5.2).
    went_away: tokio::sync::Notify,
}

impl Default for State {
    fn default() -> State {
        State {
            goaway: AtomicU64::new(u64::MAX),
            broken: AtomicU64::new(0),
            control: AtomicBool::new(false),
            went_away: tokio::sync::Notify::new(),
        }
    }
}

impl State {
    /// Whether the server said it will not process request stream `id` (or, `None`, any new
    /// one).
    pub fn refuses(&self, id: Option<u64>) -> bool {
        let goaway = self.goaway.load(Ordering::Relaxed);
        goaway != u64::MAX && id.is_none_or(|id| id >= goaway)
    }

    /// Returns once a GOAWAY says the server will not process request stream `id`.
    pub async fn refused(&self, id: u64) {
        loop {
            let woken = self.went_away.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.refuses(Some(id)) {
                return;
            }
            woken.await;
        }
    }

    /// The code brink closed the connection with because the server broke a rule.
    pub fn broken(&self) -> Option<u64> {
        Some(self.broken.load(Ordering::Relaxed)).filter(|c| *c != 0)
    }
}

/// Runs until the connection ends: holds brink's control stream open, and serves the
/// server's unidirectional streams.
pub async fn serve(quic: quinn::Connection, control: quinn::SendStream, state: Arc<State>) {
    let _control = control;
    while let Ok(recv) = quic.accept_uni().await {
        tokio::spawn(peer_stream(quic.clone(), recv, state.clone()));
    }
}

fn code(c: u64) -> quinn::VarInt {
    quinn::VarInt::from_u64(c).unwrap_or(quinn::VarInt::MAX)
}

async fn peer_stream(quic: quinn::Connection, mut recv: quinn::RecvStream, state: Arc<State>) {
    let mut buf = Vec::new();
    let kind = loop {
        if let Some((kind, n)) = varint(&buf) {
            buf.drain(..n);
            break kind;
        }
        match recv.read_chunk(8, true).await {
            Ok(Some(c)) => buf.extend_from_slice(&c.bytes),
            _ => return,
        }
    };
    match kind {
        wire::CONTROL_STREAM if !state.control.swap(true, Ordering::Relaxed) => {
            // The connection's own end (the peer's close, a timeout) is not the stream's.
            if let Some(broke) = control_frames(recv, buf, &state).await {
                state.broken.store(broke, Ordering::Relaxed);
                quic.close(code(broke), b"the server broke its control stream's rules");
            }
        }
        wire::ENCODER_STREAM | wire::DECODER_STREAM => {
            while let Ok(Some(_)) = recv.read_chunk(usize::MAX, true).await {}
        }
        _ => {
            let _ = recv.stop(code(wire::H3_STREAM_CREATION_ERROR));
        }
    }
}

/// Reads the server's control stream frame by frame, noting each GOAWAY's stream ID, until
/// it breaks a rule (the code to close the connection with) or the connection ends (`None`).
async fn control_frames(
    mut recv: quinn::RecvStream,
    mut buf: Vec<u8>,
    state: &State,
) -> Option<u64> {
    let mut skip = 0u64;
    let mut settings = false;
    loop {
        let drop = usize::try_from(skip).unwrap_or(usize::MAX).min(buf.len());
        buf.drain(..drop);
        skip -= drop as u64;
        if skip == 0 {
            if let Some((kind, size, at)) = frame_header(&buf) {
                match kind {
                    wire::SETTINGS if settings => return Some(H3_FRAME_UNEXPECTED),
                    _ if !settings && kind != wire::SETTINGS => return Some(H3_MISSING_SETTINGS),
                    wire::SETTINGS | wire::GOAWAY | 0x3 if size > MAX_CONTROL_FRAME => {
                        return Some(H3_EXCESSIVE_LOAD)
                    }
                    // DATA, HEADERS, PUSH_PROMISE, MAX_PUSH_ID (a client's), HTTP/2's types.
                    0x0..=0x2 | 0x5 | 0x6 | 0x8 | 0x9 | 0xd => return Some(H3_FRAME_UNEXPECTED),
                    wire::GOAWAY => {
                        let end = at + size as usize;
                        if buf.len() >= end {
                            let Some((id, _)) = varint(&buf[at..end]) else {
                                return Some(H3_ID_ERROR);
                            };
                            if !note_goaway(state, id) {
                                return Some(H3_ID_ERROR);
                            }
                            buf.drain(..end);
                            continue;
                        }
                    }
                    _ => {
                        settings = true;
                        buf.drain(..at);
                        skip = size;
                        continue;
                    }
                }
            }
        }
        match recv.read_chunk(usize::MAX, true).await {
            Ok(Some(c)) => buf.extend_from_slice(&c.bytes),
            Ok(None) | Err(quinn::ReadError::Reset(_)) => return Some(H3_CLOSED_CRITICAL_STREAM),
            Err(_) => return None,
        }
    }
}

/// Notes a GOAWAY for stream `id`; false when it breaks the rules (not a request stream's ID,
/// or past an earlier GOAWAY's).
fn note_goaway(state: &State, id: u64) -> bool {
    if !id.is_multiple_of(4) || id > state.goaway.load(Ordering::Relaxed) {
        return false;
    }
    state.goaway.store(id, Ordering::Relaxed);
    state.went_away.notify_waiters();
    true
}

/// A frame's type, length, and where its payload starts in `b`, once its header is whole.
fn frame_header(b: &[u8]) -> Option<(u64, u64, usize)> {
    let (kind, a) = varint(b)?;
    let (size, n) = varint(&b[a..])?;
    Some((kind, size, a + n))
}
