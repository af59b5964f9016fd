//! The reader's answers read as events: which answers are, the events found in any cut of the
//! bytes and through chunk framing, each stamped with the read that completed it, and an
//! endless event refused within its bound.

use super::*;
use std::time::{Duration, Instant};

/// Feeds `resp` `step` bytes at a time, read `ms_per_read` apart; the reply (if complete),
/// the events and their gaps (µs).
fn feed(
    mut r: Reader,
    resp: &[u8],
    step: usize,
    ms_per_read: u64,
) -> (Option<Reply>, u64, Vec<u64>) {
    let t0 = Instant::now();
    let mut buf = ReadBuf::default();
    let mut gaps = Vec::new();
    let mut reply = None;
    for (i, piece) in resp.chunks(step).enumerate() {
        buf.spare()[..piece.len()].copy_from_slice(piece);
        let at = t0 + Duration::from_millis(ms_per_read * i as u64);
        reply = r.advance_at(&mut buf, piece.len(), Some(at)).unwrap();
        if let Some(e) = r.events() {
            e.drain_gaps(|g, n| gaps.extend(std::iter::repeat_n(g, n as usize)));
        }
        if reply.is_some() {
            break;
        }
    }
    let count = r.events().map_or(0, |e| e.count);
    (reply, count, gaps)
}

const STREAM: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n\
7\r\n: ping\n\r\n\
b\r\ndata: one\n\n\r\n\
1a;ext=1\r\ndata: two\nid: 2\n\ndata: thr\r\n\
5\r\nee\n\n\n\r\n\
0\r\n\r\n";

#[test]
fn an_event_stream_is_read_as_events_in_any_cut() {
    for step in 1..STREAM.len() {
        let (reply, count, _) = feed(Reader::new(false), STREAM, step, 1);
        let reply = reply.expect("complete");
        assert_eq!((reply.status, reply.bytes_in), (200, STREAM.len() as u64));
        assert_eq!(count, 3, "step {step}");
    }
}

#[test]
fn each_event_is_timed_by_the_read_that_completed_it() {
    // Read 10 ms apart: the head and the ping, then one chunk per read.
    let at = |needle: &[u8]| {
        STREAM
            .windows(needle.len())
            .position(|w| w == needle)
            .expect("in the stream")
    };
    let cuts = [
        0,
        at(b"b\r\ndata: one"),
        at(b"1a;ext"),
        at(b"5\r\nee"),
        STREAM.len(),
    ];
    let mut r = Reader::new(false);
    let t0 = Instant::now();
    let mut buf = ReadBuf::default();
    let mut gaps = Vec::new();
    for (i, w) in cuts.windows(2).enumerate() {
        let p = &STREAM[w[0]..w[1]];
        buf.spare()[..p.len()].copy_from_slice(p);
        let now = t0 + Duration::from_millis(10 * i as u64);
        r.advance_at(&mut buf, p.len(), Some(now)).unwrap();
        r.events()
            .expect("an event stream")
            .drain_gaps(|g, n| gaps.extend(std::iter::repeat_n(g, n as usize)));
    }
    let e = r.events().unwrap();
    assert_eq!(e.count, 3);
    assert_eq!(
        e.first_event,
        Some(t0 + Duration::from_millis(10)),
        "`one` in read 2"
    );
    // `two` in read 3, `three` (begun there) completed in read 4.
    assert_eq!(gaps, [10_000, 10_000]);
}

#[test]
fn only_event_streams_are_read_as_events_unless_asked() {
    let plain =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\ndata: x\n\n\n\n";
    let (reply, count, _) = feed(Reader::new(false), plain, 5, 1);
    assert!(reply.is_some());
    assert_eq!(count, 0, "text/plain is no stream of events");
    let (reply, count, _) = feed(Reader::streaming(false, 1024), plain, 5, 1);
    assert!(reply.is_some());
    assert_eq!(count, 1, "asked to read it as events");
    let close = b"HTTP/1.1 200 OK\r\ncontent-type: TEXT/EVENT-STREAM\r\n\r\ndata: a\n\ndata: b\n\n";
    let (reply, count, gaps) = feed(Reader::new(false), close, 8, 5);
    assert!(reply.is_none(), "ends with the connection");
    assert_eq!((count, gaps.len()), (2, 1));
}

#[test]
fn an_endless_event_is_a_protocol_error_within_its_bound() {
    let mut r = Reader::streaming(false, 4096);
    let mut buf = ReadBuf::default();
    let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: ";
    buf.spare()[..head.len()].copy_from_slice(head);
    assert_eq!(r.advance(&mut buf, head.len()), Ok(None));
    let mut fed = 0;
    let err = loop {
        let n = buf.spare().len().min(1000);
        buf.spare()[..n].fill(b'x');
        match r.advance(&mut buf, n) {
            Ok(None) => fed += n,
            other => break other,
        }
        assert!(fed < 100_000, "never refused");
    };
    assert_eq!(err, Err(ErrorKind::Protocol));
    assert!(fed <= 4096, "{fed}");
}
