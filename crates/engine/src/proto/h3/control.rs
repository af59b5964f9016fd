//! The unidirectional streams of an HTTP/3 connection (RFC 9114 §6.2): brink's control
//! stream, kept open as long as the connection, and the server's, read for GOAWAY (the first
//! request stream the server will not process). The server's QPACK streams are drained (with
//! no dynamic table allowed they carry nothing brink needs); push streams (no push was
//! allowed) and unknown types are refused with STOP_SENDING.

use super::wire::{self, varint};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// No GOAWAY seen yet.
pub const NO_GOAWAY: u64 = u64::MAX;

/// The largest control frame (other than one of unknown type, skipped unread) brink holds.
const MAX_CONTROL_FRAME: u64 = 16 * 1024;

/// Runs until the connection ends: holds brink's control stream open, and serves the
/// server's unidirectional streams. `goaway`: where the server's GOAWAY is noted.
pub async fn serve(quic: quinn::Connection, control: quinn::SendStream, goaway: Arc<AtomicU64>) {
    let _control = control;
    while let Ok(recv) = quic.accept_uni().await {
        tokio::spawn(peer_stream(recv, goaway.clone()));
    }
}

async fn peer_stream(mut recv: quinn::RecvStream, goaway: Arc<AtomicU64>) {
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
        wire::CONTROL_STREAM => control_frames(recv, buf, &goaway).await,
        wire::ENCODER_STREAM | wire::DECODER_STREAM => {
            while let Ok(Some(_)) = recv.read_chunk(usize::MAX, true).await {}
        }
        _ => {
            let _ = recv.stop(quinn::VarInt::from_u32(
                wire::H3_STREAM_CREATION_ERROR as u32,
            ));
        }
    }
}

/// Reads the server's control stream frame by frame, noting each GOAWAY's stream ID.
async fn control_frames(mut recv: quinn::RecvStream, mut buf: Vec<u8>, goaway: &AtomicU64) {
    let mut skip = 0u64;
    loop {
        // Frames of other types (SETTINGS, unknown ones) are passed over.
        let drop = usize::try_from(skip).unwrap_or(usize::MAX).min(buf.len());
        buf.drain(..drop);
        skip -= drop as u64;
        if skip == 0 {
            if let Some((kind, size, at)) = frame_header(&buf) {
                if kind == wire::GOAWAY {
                    if size > MAX_CONTROL_FRAME {
                        return;
                    }
                    let end = at + size as usize;
                    if buf.len() >= end {
                        if let Some((id, _)) = varint(&buf[at..end]) {
                            goaway.fetch_min(id, Ordering::Relaxed);
                        }
                        buf.drain(..end);
                        continue;
                    }
                } else {
                    buf.drain(..at);
                    skip = size;
                    continue;
                }
            }
        }
        match recv.read_chunk(usize::MAX, true).await {
            Ok(Some(c)) => buf.extend_from_slice(&c.bytes),
            _ => return,
        }
    }
}

/// A frame's type, length, and where its payload starts in `b`, once its header is whole.
fn frame_header(b: &[u8]) -> Option<(u64, u64, usize)> {
    let (kind, a) = varint(b)?;
    let (size, n) = varint(&b[a..])?;
    Some((kind, size, a + n))
}
