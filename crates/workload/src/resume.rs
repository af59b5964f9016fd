//! What a browser's `EventSource` keeps between the streams it opens (the WHATWG HTML
//! standard's reconnection): the last event ID a stream confirmed, sent back as
//! `Last-Event-ID` so the server can resume after it, and the reconnection time the stream
//! set with `retry:`. A held stream (`--hold`) is one virtual user's `EventSource`, so this
//! is part of the virtual user.

use std::time::Duration;

/// The reconnection time an `EventSource` starts with: Chrome's (Firefox waits 5 s).
pub const DEFAULT_RETRY: Duration = Duration::from_secs(3);

/// The longest last event ID sent back; a longer one is not sent (a server could otherwise
/// make every reconnect carry an event-sized header).
pub const MAX_ID: usize = 8 * 1024;

/// One virtual user's reconnection state.
#[derive(Clone, Debug, Default)]
pub struct Resume {
    last_id: Vec<u8>,
    /// The reconnection time the last stream set (`retry:`).
    pub retry: Option<Duration>,
    /// Streams opened so far: all after the first are reconnects.
    pub opened: u64,
}

impl Resume {
    /// A stream confirmed `id` as its last event ID (empty: it reset it), read as UTF-8 as a
    /// browser reads the stream (a broken sequence becomes U+FFFD). An ID that cannot be a
    /// header value (control bytes other than tab) or is longer than [`MAX_ID`] is kept as
    /// none.
    pub fn confirm(&mut self, id: &[u8]) {
        self.last_id.clear();
        let sendable = |b: &u8| *b == b'\t' || (*b >= 0x20 && *b != 0x7f);
        if id.len() <= MAX_ID && id.iter().all(sendable) {
            self.last_id
                .extend_from_slice(String::from_utf8_lossy(id).as_bytes());
        }
    }

    /// The `Last-Event-ID` the next stream sends, if any.
    pub fn last_id(&self) -> Option<&[u8]> {
        (!self.last_id.is_empty()).then_some(&self.last_id[..])
    }

    /// How long after a stream ended the next one opens.
    pub fn delay(&self) -> Duration {
        self.retry.unwrap_or(DEFAULT_RETRY)
    }
}

/// Inserts `Last-Event-ID: id` as the last header of the HTTP/1.1 request in `buf`.
pub fn add_to_h1(buf: &mut Vec<u8>, id: &[u8]) {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return;
    };
    let at = end + 2;
    let mut line = Vec::with_capacity(id.len() + 17);
    line.extend_from_slice(b"Last-Event-ID: ");
    line.extend_from_slice(id);
    line.extend_from_slice(b"\r\n");
    buf.splice(at..at, line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_goes_last_in_the_head() {
        let mut buf = b"GET /e HTTP/1.1\r\nHost: a\r\n\r\nbody\r\n\r\n".to_vec();
        add_to_h1(&mut buf, b"42");
        assert_eq!(
            buf,
            b"GET /e HTTP/1.1\r\nHost: a\r\nLast-Event-ID: 42\r\n\r\nbody\r\n\r\n"
        );
    }

    #[test]
    fn an_id_that_cannot_be_sent_is_none() {
        let mut r = Resume::default();
        r.confirm(b"abc 7");
        assert_eq!(r.last_id(), Some(&b"abc 7"[..]));
        for bad in [&b"a\x01b"[..], b"a\x7fb", &vec![b'x'; MAX_ID + 1]] {
            r.confirm(bad);
            assert_eq!(r.last_id(), None, "{bad:?}");
        }
        r.confirm("é\tx".as_bytes());
        assert_eq!(
            r.last_id(),
            Some("é\tx".as_bytes()),
            "obs-text and tab are header text"
        );
        r.confirm(b"a\xffb");
        assert_eq!(
            r.last_id(),
            Some("a\u{fffd}b".as_bytes()),
            "read as UTF-8, as a browser"
        );
        r.confirm(b"");
        assert_eq!((r.last_id(), r.delay()), (None, DEFAULT_RETRY));
    }
}
