//! brink's HTTP/2 client against itself: what a server sends on a connection (its SETTINGS,
//! answers in HEADERS, CONTINUATION and DATA frames, pings, resets, a GOAWAY, and broken
//! frames), fed whole, cut in two at every position, or a byte at a time, gives the same
//! outcome: the streams' ends, the connection's error, and every byte the client queues in
//! answer (acknowledgements, window updates). A socket hands bytes over in any cut, so a
//! verdict that depends on where the cut fell is a bug.

use super::client::{Client, Event};
use super::frame as f;
use bytes::Bytes;
use stats::ErrorKind;

#[derive(Debug, PartialEq)]
struct Outcome {
    /// The first error that broke the connection, if any.
    broken: Option<ErrorKind>,
    events: Vec<Event>,
    /// What the client queued to send after its preface and the two requests.
    answered: Vec<u8>,
}

/// A frame from the server.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    f::put_head(&mut out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
    out
}

/// Two requests (streams 1 and 3), then `server` fed in `pieces`.
fn connection(server: &[u8], pieces: &[usize]) -> Outcome {
    let mut c = Client::new();
    let mut block = Vec::new();
    f::request_block(
        &mut block,
        "GET",
        false,
        "127.0.0.1:9",
        b"/",
        std::iter::empty(),
    );
    c.open(0, &block, Bytes::new(), false);
    c.open(1, &block, Bytes::new(), false);
    c.flushed();
    let mut broken = None;
    let mut rest = server;
    for &piece in pieces {
        let (now, later) = rest.split_at(piece);
        rest = later;
        if let Err(e) = c.feed(now) {
            broken = Some(e);
            break;
        }
    }
    Outcome {
        broken,
        events: std::mem::take(&mut c.events),
        answered: std::mem::take(&mut c.out),
    }
}

/// `:status 200` (static table index 8), and `:status 404` (index 13).
const OK: &[u8] = &[0x88];
const NOT_FOUND: &[u8] = &[0x8D];

fn servers() -> Vec<(&'static str, Vec<u8>)> {
    let settings = frame(f::SETTINGS, 0, 0, &[]);
    let ack = frame(f::SETTINGS, f::ACK, 0, &[]);
    let start = [settings, ack].concat();
    let with = |frames: &[Vec<u8>]| [&start[..], &frames.concat()].concat();
    vec![
        (
            "two answers",
            with(&[
                frame(f::HEADERS, f::END_HEADERS, 1, OK),
                frame(f::DATA, f::END_STREAM, 1, b"hello"),
                frame(f::HEADERS, f::END_HEADERS | f::END_STREAM, 3, NOT_FOUND),
            ]),
        ),
        (
            "a head continued, a ping between answers, padding",
            with(&[
                frame(f::HEADERS, 0, 3, &[]),
                frame(f::CONTINUATION, f::END_HEADERS, 3, OK),
                frame(f::PING, 0, 0, b"12345678"),
                frame(f::DATA, f::END_STREAM | f::PADDED, 3, b"\x02ok\0\0"),
                frame(f::HEADERS, f::END_HEADERS, 1, OK),
                frame(f::DATA, 0, 1, &[b'x'; 1000]),
                frame(f::DATA, f::END_STREAM, 1, &[b'y'; 1000]),
            ]),
        ),
        (
            "a refused stream and a GOAWAY",
            with(&[
                frame(f::RST_STREAM, 0, 3, &f::REFUSED_STREAM.to_be_bytes()),
                frame(f::GOAWAY, 0, 0, &[0, 0, 0, 1, 0, 0, 0, 0]),
                frame(f::HEADERS, f::END_HEADERS | f::END_STREAM, 1, OK),
            ]),
        ),
        (
            "a stream reset with an error",
            with(&[frame(f::RST_STREAM, 0, 1, &f::PROTOCOL_ERROR.to_be_bytes())]),
        ),
        ("data on stream 0", with(&[frame(f::DATA, 0, 0, b"x")])),
        ("a frame over the limit", {
            let mut b = start.clone();
            f::put_head(&mut b, f::MAX_FRAME + 1, f::DATA, 0, 1);
            b
        }),
        (
            "padding longer than the frame",
            with(&[frame(f::DATA, f::PADDED, 1, b"\x09ok")]),
        ),
        (
            "a continuation with no head before it",
            with(&[frame(f::CONTINUATION, f::END_HEADERS, 1, OK)]),
        ),
        (
            "cut short",
            with(&[frame(f::HEADERS, f::END_HEADERS, 1, OK)])[..25].to_vec(),
        ),
    ]
}

#[test]
fn what_a_server_sends_cut_anywhere_reads_as_the_whole() {
    for (what, server) in servers() {
        let whole = connection(&server, &[server.len()]);
        for cut in 0..=server.len() {
            let two = connection(&server, &[cut, server.len() - cut]);
            assert_eq!(two, whole, "{what}: cut at {cut}");
        }
        let one_by_one = connection(&server, &vec![1; server.len()]);
        assert_eq!(one_by_one, whole, "{what}: a byte at a time");
    }
}

/// The servers do what they say, fed whole: the comparison above compares outcomes that
/// matter.
#[test]
fn each_server_ends_the_streams_as_it_says() {
    let all: std::collections::HashMap<_, _> = servers().into_iter().collect();
    let whole = |what: &str| connection(&all[what], &[all[what].len()]);
    let ends = |o: &Outcome| -> Vec<(usize, Result<u16, ErrorKind>)> {
        o.events
            .iter()
            .filter_map(|e| match *e {
                Event::Done(slot, r) => Some((slot, Ok(r.status))),
                Event::Failed(slot, k) => Some((slot, Err(k))),
                Event::Unprocessed(_) => None,
            })
            .collect()
    };
    let two = whole("two answers");
    assert_eq!(two.broken, None);
    assert_eq!(ends(&two), [(0, Ok(200)), (1, Ok(404))]);
    let more = whole("a head continued, a ping between answers, padding");
    assert_eq!(ends(&more), [(1, Ok(200)), (0, Ok(200))]);
    assert!(
        more.answered.windows(8).any(|w| w == b"12345678"),
        "the ping is answered"
    );
    let refused = whole("a refused stream and a GOAWAY");
    assert!(
        refused.events.contains(&Event::Unprocessed(1)),
        "{refused:?}"
    );
    assert_eq!(ends(&refused), [(0, Ok(200))]);
    assert!(matches!(
        ends(&whole("a stream reset with an error"))[..],
        [(0, Err(_))]
    ));
    for broken in [
        "data on stream 0",
        "a frame over the limit",
        "padding longer than the frame",
        "a continuation with no head before it",
    ] {
        assert_eq!(whole(broken).broken, Some(ErrorKind::Protocol), "{broken}");
    }
    let short = whole("cut short");
    assert_eq!((short.broken, ends(&short).len()), (None, 0));
}
