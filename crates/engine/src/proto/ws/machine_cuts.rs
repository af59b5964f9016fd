//! The WebSocket machine against itself: an upgrade's answer and the frames after it, fed
//! whole, cut in two at every position, or a byte at a time, give the same outcome (the
//! upgrade's verdict, the exchange's, the pongs queued, the bytes counted). A socket hands
//! bytes over in any cut, so a verdict that depends on where the cut fell is a bug.

use super::handshake;
use super::machine::Machine;
use crate::net::conn::Connector;
use crate::proto::reply::Unopened;
use stats::ErrorKind;
use workload::Vu;

/// What one connection's exchange came to.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// The upgrade's verdict: `Ok(true)` once it completed.
    upgrade: Result<bool, Unopened>,
    /// The exchange's: its answer's status, or the error that ended it; `None` while it
    /// needs more bytes.
    exchange: Option<Result<u16, ErrorKind>>,
    /// Bytes queued to send after the message (pongs, an echoed close): masked with random
    /// keys, so only their length can be compared.
    queued: usize,
    /// Bytes read, when every byte was read (a failure ends the reading where it is found,
    /// so how many were read depends on the cut).
    bytes_in: Option<u64>,
}

/// A server frame (unmasked): FIN and `opcode`, `payload`.
fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 126);
    let mut f = vec![u8::from(fin) << 7 | opcode, payload.len() as u8];
    f.extend_from_slice(payload);
    f
}

/// The upgrade's answer for the request `m` queued, with `accept` as its proof (`None`: the
/// right one).
fn switching(m: &Machine, accept: Option<&str>) -> Vec<u8> {
    let request = String::from_utf8_lossy(m.unsent()).into_owned();
    let key = request
        .lines()
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        .expect("the upgrade carries its key")
        .trim()
        .to_owned();
    let accept = accept.map_or_else(|| handshake::accept(&key), str::to_owned);
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    )
    .into_bytes()
}

/// One connection: the upgrade sent, then `server` (made from the request) fed in `pieces`,
/// the message sent as soon as the upgrade completes.
fn exchange(
    connector: &Connector,
    server: &dyn Fn(&Machine) -> Vec<u8>,
    pieces: &dyn Fn(usize) -> Vec<usize>,
) -> Outcome {
    let workload = &connector.workload;
    let mut vu = Vu::new(workload, 0);
    vu.next(workload);
    let mut m = Machine::new(64);
    let up = m.upgrade(connector, &mut vu).expect("the upgrade renders");
    let bytes = server(&m);
    m.wrote(m.unsent().len());
    let step = &workload.requests[vu.current];
    let mut upgrade = Ok(false);
    let mut awaiting = None;
    let mut exchange = None;
    let mut rest = &bytes[..];
    'feeding: for piece in pieces(bytes.len()) {
        let mut piece = &rest[..piece];
        rest = &rest[piece.len()..];
        while !piece.is_empty() {
            let Some(spare) = m.spare() else {
                exchange = Some(Err(ErrorKind::Protocol));
                break 'feeding;
            };
            let n = spare.len().min(piece.len());
            spare[..n].copy_from_slice(&piece[..n]);
            piece = &piece[n..];
            m.got(n);
            if upgrade == Ok(false) {
                upgrade = m.upgraded(&up);
                match upgrade {
                    Ok(true) => {
                        let a = m.begin(connector, &mut vu).expect("the message renders");
                        m.wrote(m.unsent().len());
                        awaiting = Some(a);
                    }
                    Ok(false) => continue,
                    Err(_) => break 'feeding,
                }
            }
            if let Some(a) = &awaiting {
                if let Some(outcome) = m.advance(connector, step, a) {
                    exchange = Some(outcome.map(|(reply, _)| reply.status));
                    break 'feeding;
                }
            }
        }
    }
    let queued = m.unsent().len();
    let mut rec = stats::Bucket::new(1);
    m.account(&mut rec, false);
    let failed = upgrade.is_err() || matches!(exchange, Some(Err(_)));
    Outcome {
        upgrade,
        exchange,
        queued,
        bytes_in: (!failed).then_some(rec.bytes_in),
    }
}

type Server = Box<dyn Fn(&Machine) -> Vec<u8>>;

/// The servers: each answers the upgrade (or not) and sends frames after it.
fn servers() -> Vec<(&'static str, Server)> {
    let after = |frames: Vec<Vec<u8>>| -> Server {
        Box::new(move |m: &Machine| {
            let mut b = switching(m, None);
            for f in &frames {
                b.extend_from_slice(f);
            }
            b
        })
    };
    vec![
        ("an echo", after(vec![frame(true, 0x1, b"hello")])),
        (
            "a ping, then the echo",
            after(vec![frame(true, 0x9, b"p1"), frame(true, 0x1, b"hello")]),
        ),
        (
            "the echo in fragments, a ping between them",
            after(vec![
                frame(false, 0x1, b"hel"),
                frame(true, 0x9, b"p2"),
                frame(true, 0x0, b"lo"),
            ]),
        ),
        (
            "the largest ping, then the echo",
            after(vec![
                frame(true, 0x9, &[1; 125]),
                frame(true, 0x1, b"hello"),
            ]),
        ),
        (
            "a pong nobody asked for, then the echo",
            after(vec![frame(true, 0xA, b"x"), frame(true, 0x1, b"hello")]),
        ),
        (
            "a close",
            after(vec![frame(true, 0x8, &[0x03, 0xE9, b'b', b'y', b'e'])]),
        ),
        (
            "a masked frame",
            after(vec![vec![
                0x81,
                0x85,
                1,
                2,
                3,
                4,
                b'h' ^ 1,
                b'e' ^ 2,
                b'l' ^ 3,
                b'l' ^ 4,
                b'o' ^ 1,
            ]]),
        ),
        (
            "reserved bits",
            after(vec![frame(true, 0x1 | 0x40, b"hello")]),
        ),
        (
            "a message over the limit",
            after(vec![frame(true, 0x2, &[7; 100])]),
        ),
        (
            "a ping too long",
            after(vec![[&[0x89, 126, 0, 126][..], &[1; 126]].concat()]),
        ),
        (
            "a continuation with nothing to continue",
            after(vec![frame(true, 0x0, b"lo")]),
        ),
        (
            "a refusal",
            Box::new(|_: &Machine| b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".to_vec()),
        ),
        (
            "a wrong proof",
            Box::new(|m: &Machine| switching(m, Some("AAAAAAAAAAAAAAAAAAAAAAAAAAA="))),
        ),
        (
            "an upgrade cut short",
            Box::new(|m: &Machine| {
                let b = switching(m, None);
                b[..b.len() - 3].to_vec()
            }),
        ),
    ]
}

/// A machine that has queued its upgrade.
fn upgrading(connector: &Connector) -> Machine {
    let mut m = Machine::new(64);
    let mut vu = Vu::new(&connector.workload, 0);
    vu.next(&connector.workload);
    m.upgrade(connector, &mut vu).expect("the upgrade renders");
    m
}

fn connector() -> Connector {
    let spec = crate::run::test_spec(
        "ws://127.0.0.1:9/",
        crate::Load::Closed {
            connections: crate::Curve::flat(1.0, None),
        },
    );
    crate::run::prepare(&spec).expect("prepares").connector
}

#[test]
fn an_upgrade_and_its_frames_cut_anywhere_read_as_the_whole() {
    let connector = connector();
    for (what, server) in servers() {
        let whole = exchange(&connector, server.as_ref(), &|len| vec![len]);
        // The server's bytes are as long for every connection (keys have one length).
        let len = server(&upgrading(&connector)).len();
        for cut in 0..=len {
            let two = exchange(&connector, server.as_ref(), &|len| vec![cut, len - cut]);
            assert_eq!(two, whole, "{what}: cut at {cut}");
        }
        let one_by_one = exchange(&connector, server.as_ref(), &|len| vec![1; len]);
        assert_eq!(one_by_one, whole, "{what}: a byte at a time");
    }
}

/// The servers do what they say, fed whole: the comparison above compares outcomes that
/// matter.
#[test]
fn each_server_ends_the_exchange_as_it_says() {
    let connector = connector();
    let whole = |name: &str| {
        let (_, server) = servers().into_iter().find(|(n, _)| *n == name).expect(name);
        exchange(&connector, server.as_ref(), &|len| vec![len])
    };
    for answered in [
        "an echo",
        "a ping, then the echo",
        "the echo in fragments, a ping between them",
        "a pong nobody asked for, then the echo",
        "the largest ping, then the echo",
    ] {
        let o = whole(answered);
        assert_eq!(
            (o.upgrade.clone(), o.exchange),
            (Ok(true), Some(Ok(101))),
            "{answered}"
        );
    }
    // Pings are answered: a pong queued for each.
    assert!(whole("a ping, then the echo").queued > 0);
    assert_eq!(whole("an echo").queued, 0);
    assert_eq!(whole("a close").exchange, Some(Err(ErrorKind::Closed)));
    assert!(whole("a close").queued > 0, "the close is echoed");
    for broken in [
        "a masked frame",
        "reserved bits",
        "a ping too long",
        "a continuation with nothing to continue",
    ] {
        assert_eq!(
            whole(broken).exchange,
            Some(Err(ErrorKind::Protocol)),
            "{broken}: {:?}",
            whole(broken)
        );
    }
    assert!(matches!(
        whole("a message over the limit").exchange,
        Some(Err(_))
    ));
    for refused in ["a refusal", "a wrong proof"] {
        let o = whole(refused);
        assert_eq!(
            o.upgrade.map_err(|u| u.kind),
            Err(ErrorKind::Handshake),
            "{refused}"
        );
    }
    assert_eq!(whole("an upgrade cut short").upgrade, Ok(false));
}
