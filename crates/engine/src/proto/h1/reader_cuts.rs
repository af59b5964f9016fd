//! The HTTP/1.1 reader against itself: every answer here, fed whole, cut in two at every
//! position, or one byte at a time, gives the same outcome (the reply or the error, what an
//! end of stream then says, the events read, the body kept). A socket hands bytes over in
//! any cut, so a verdict that depends on where the cut fell is a bug.

use super::reader::{is_stray, ReadBuf, Reader, INITIAL_BUF};
use crate::proto::events::EventRule;
use crate::proto::reply::Reply;
use stats::ErrorKind;
use std::time::Instant;
use workload::capture::Budget;

/// What feeding an answer came to.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// The reply when the answer completed, or the error that ended it.
    done: Result<Option<Reply>, ErrorKind>,
    /// With nothing more to come, what the end of the stream then says (when the answer had
    /// not completed or failed already).
    at_eof: Option<Result<Reply, ErrorKind>>,
    events: Option<u64>,
    kept_body: Option<Vec<u8>>,
}

/// Feeds `answer` in `pieces` (lengths adding up to its length, each cut further by the
/// buffer's free room as a socket read would be). Bytes past the answer's end that a later
/// read would bring are judged as the workers judge them on the idle connection: the answer
/// is stray when they are ([`is_stray`]), and the connection is not used again.
fn feed(answer: &[u8], pieces: &[usize], make: &dyn Fn() -> Reader) -> Outcome {
    let mut r = make();
    let mut buf = ReadBuf::default();
    let now = Instant::now();
    let mut rest = answer;
    let mut done = Ok(None);
    let mut left_in_piece: &[u8] = &[];
    'feeding: for &piece in pieces {
        let mut piece = &rest[..piece];
        rest = &rest[piece.len()..];
        while !piece.is_empty() {
            let spare = buf.spare();
            let n = spare.len().min(piece.len());
            spare[..n].copy_from_slice(&piece[..n]);
            piece = &piece[n..];
            done = r.advance_at(&mut buf, n, Some(now));
            if !matches!(done, Ok(None)) {
                left_in_piece = piece;
                break 'feeding;
            }
        }
    }
    if let Ok(Some(reply)) = &mut done {
        let unread = &answer[answer.len() - rest.len()..];
        // What was left of the piece being fed when the answer completed.
        reply.stray |= is_stray(left_in_piece) || is_stray(unread);
        reply.keep_alive &= left_in_piece.is_empty() && unread.is_empty();
    }
    let at_eof = matches!(done, Ok(None)).then(|| r.eof());
    Outcome {
        done,
        at_eof,
        events: r.events_ref().map(|e| e.count),
        kept_body: r.take_capture().map(|c| c.body.clone()),
    }
}

/// The answers: every framing, interim answers, stray bytes, events, and the broken ones.
fn answers() -> Vec<(&'static str, Vec<u8>)> {
    let big_head = {
        let mut a = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..15 {
            a.extend_from_slice(format!("X-Filler-{i}: {}\r\n", "v".repeat(600)).as_bytes());
        }
        a.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
        a
    };
    let events =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
        e\r\ndata: one\n\ndat\r\n10\r\na: two\n\n: note\n\r\n9\r\ndata: 3\n\n\r\n0\r\n\r\n";
    vec![
        ("length", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec()),
        (
            "interim",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nabc".to_vec(),
        ),
        (
            "chunked",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nTrailer: v\r\n\r\n".to_vec(),
        ),
        ("no body", b"HTTP/1.1 204 No Content\r\n\r\n".to_vec()),
        ("not modified", b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n".to_vec()),
        ("until close", b"HTTP/1.1 200 OK\r\n\r\nall of it".to_vec()),
        ("closing", b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec()),
        ("stray", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n".to_vec()),
        ("blank after", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\r\n".to_vec()),
        ("short body", b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nonly this".to_vec()),
        ("short chunks", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab".to_vec()),
        ("half a head", b"HTTP/1.1 200 OK\r\nContent-Le".to_vec()),
        ("bad chunk size", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n".to_vec()),
        ("bad status line", b"HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n".to_vec()),
        ("bad length", b"HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\nhello".to_vec()),
        ("a head past the buffer", big_head),
        ("events", events.to_vec()),
    ]
}

/// A way to make the reader an answer is fed to.
type Make = Box<dyn Fn() -> Reader>;

fn readers() -> Vec<(&'static str, Make)> {
    vec![
        ("plain", Box::new(|| Reader::new(false))),
        ("HEAD", Box::new(|| Reader::new(true))),
        (
            "keeping the body",
            Box::new(|| Reader::capturing(false, Budget::new(1 << 20))),
        ),
        (
            "as events",
            Box::new(|| {
                Reader::new(false).with_events(EventRule {
                    force: true,
                    ..EventRule::default()
                })
            }),
        ),
    ]
}

/// Where to cut an answer of `len` bytes: everywhere in a short one; in a long one every 61st
/// byte and every byte within 64 of where the read buffer first fills (8 KiB), where its head
/// grows past it, and where it ends.
fn cuts(len: usize) -> Vec<usize> {
    if len <= 2048 {
        return (0..=len).collect();
    }
    let near = |at: usize| at.saturating_sub(64)..=(at + 64).min(len);
    let mut cuts: Vec<usize> = (0..=len).step_by(61).collect();
    cuts.extend(near(INITIAL_BUF));
    cuts.extend(near(len));
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

#[test]
fn an_answer_cut_anywhere_reads_as_the_whole() {
    for (what, answer) in answers() {
        for (how, make) in readers() {
            let whole = feed(&answer, &[answer.len()], make.as_ref());
            for cut in cuts(answer.len()) {
                let two = feed(&answer, &[cut, answer.len() - cut], make.as_ref());
                assert_eq!(two, whole, "{what}, {how}: cut at {cut}");
            }
            let bytes = vec![1; answer.len()];
            let one_by_one = feed(&answer, &bytes, make.as_ref());
            assert_eq!(one_by_one, whole, "{what}, {how}: a byte at a time");
        }
    }
}

/// The corpus holds what it says: each kind of answer ends as it must when fed whole, so the
/// comparison above compares outcomes that matter (not, say, every answer an error).
#[test]
fn the_answers_end_as_their_framing_says() {
    let plain = || Reader::new(false);
    let all: std::collections::HashMap<_, _> = answers().into_iter().collect();
    let whole = |what: &str| {
        let a = &all[what];
        feed(a, &[a.len()], &plain)
    };
    let status = |what: &str| whole(what).done.ok().flatten().map(|r| r.status);
    assert_eq!(status("length"), Some(200));
    assert_eq!(status("interim"), Some(201));
    assert_eq!(status("chunked"), Some(200));
    assert_eq!(status("no body"), Some(204));
    assert_eq!(status("not modified"), Some(304));
    assert_eq!(status("a head past the buffer"), Some(200));
    assert!(all["a head past the buffer"].len() > INITIAL_BUF);
    let stray = whole("stray").done.unwrap().unwrap();
    assert!(stray.stray && !stray.keep_alive);
    let blank = whole("blank after").done.unwrap().unwrap();
    assert!(!blank.stray && !blank.keep_alive);
    let closing = whole("closing").done.unwrap().unwrap();
    assert!(!closing.keep_alive);
    let until = whole("until close");
    assert_eq!(until.done, Ok(None));
    assert_eq!(until.at_eof.unwrap().map(|r| r.status), Ok(200));
    for cut_short in ["short body", "short chunks", "half a head"] {
        assert_eq!(
            whole(cut_short).at_eof,
            Some(Err(ErrorKind::Closed)),
            "{cut_short}"
        );
    }
    for broken in ["bad chunk size", "bad status line", "bad length"] {
        assert_eq!(whole(broken).done, Err(ErrorKind::Protocol), "{broken}");
    }
    let events = &all["events"];
    let streamed = feed(events, &[events.len()], &|| Reader::new(false));
    assert_eq!(
        streamed.events,
        Some(3),
        "an event stream read as events by its type"
    );
    let kept = feed(&all["chunked"], &[all["chunked"].len()], &|| {
        Reader::capturing(false, Budget::new(1 << 20))
    });
    assert_eq!(kept.kept_body.as_deref(), Some(&b"abc0123456789"[..]));
}
