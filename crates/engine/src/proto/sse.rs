//! Server-Sent Events read as a browser reads them (the WHATWG HTML standard's "event stream
//! interpretation"), incrementally, from whatever chunks the transport hands over (HTTP/1.1
//! chunked or not, HTTP/2 DATA frames): lines end at CRLF, LF or CR (a CR at the end of one
//! chunk and an LF at the start of the next are one end); `data:` lines are joined with LF;
//! `event:`, `id:` (refused when it holds NUL) and `retry:` (digits only) are kept; lines that
//! start with a colon are comments; a blank line dispatches the event (none when no data was
//! given); a leading byte-order mark is dropped; what is left unterminated at the end of the
//! stream is no event. A streamed answer is timed by its events, so this is where they are
//! told apart.
//!
//! Bounded: the line being read, and the event being gathered (its data, type and ID
//! together), may each hold at most the reader's `max_event` bytes; past it, the stream is an
//! error (an endless line without a newline, an endless `data:` run without a blank line, or
//! a long `event:` and `id:` beside a long `data:`, cannot grow memory).

/// One event, as dispatched: its type (`message` unless `event:` said otherwise), its data
/// (the `data:` lines joined with LF), and the last event ID the stream set.
#[derive(Debug, PartialEq, Eq)]
pub struct Event<'a> {
    pub kind: &'a [u8],
    pub data: &'a [u8],
    pub id: &'a [u8],
}

/// Why a stream could not be read further.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A line, or the event being gathered, passed `max_event` bytes.
    TooLarge,
}

/// The incremental reader of one stream.
#[derive(Debug)]
pub struct Reader {
    max_event: usize,
    /// The current line, when it spans chunks.
    line: Vec<u8>,
    /// The event's data so far, when its reader wants it ([`Reader::keeping_data`]).
    data: Vec<u8>,
    /// Its length (with a LF after each line), kept either way: it bounds the event and says
    /// whether there is one.
    data_len: usize,
    keep_data: bool,
    kind: Vec<u8>,
    id: Vec<u8>,
    /// An `id:` line came since the last blank line.
    id_pending: bool,
    /// The ID as the last blank line left it: what a browser's `EventSource` keeps as its
    /// last event ID (`None`: no blank line followed an `id:` yet).
    dispatched_id: Option<Vec<u8>>,
    /// The reconnection time the stream last set, ms.
    retry_ms: Option<u64>,
    /// The previous chunk ended in CR: an LF first in this one ends nothing more.
    after_cr: bool,
    /// Still at the very start of the stream (a byte-order mark may be there).
    start: bool,
    /// Comment lines seen (a server's keep-alive pings).
    comments: u64,
}

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl Reader {
    pub fn new(max_event: usize) -> Reader {
        Reader {
            max_event,
            line: Vec::new(),
            data: Vec::new(),
            data_len: 0,
            keep_data: false,
            kind: Vec::new(),
            id: Vec::new(),
            id_pending: false,
            dispatched_id: None,
            retry_ms: None,
            after_cr: false,
            start: true,
            comments: 0,
        }
    }

    /// This reader, handing each event's data to its callback (without it, events are only
    /// counted and their data not copied).
    pub fn keeping_data(mut self) -> Reader {
        self.keep_data = true;
        self
    }

    /// The reconnection time (`retry:`) the stream last set, ms.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// The last event ID the stream set, as it stands.
    pub fn last_id(&self) -> &[u8] {
        &self.id
    }

    /// The last event ID a blank line confirmed (what a reconnect sends as `Last-Event-ID`;
    /// empty: the stream reset it); `None` when the stream confirmed none, so the one before
    /// it still holds.
    pub fn confirmed_id(&self) -> Option<&[u8]> {
        self.dispatched_id.as_deref()
    }

    /// Comment lines read so far.
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// Reads `chunk`, calling `on_event` for each event it completes, in order.
    pub fn feed<F: FnMut(Event<'_>)>(
        &mut self,
        chunk: &[u8],
        on_event: &mut F,
    ) -> Result<(), Fault> {
        let mut rest = chunk;
        if self.start {
            if self.line.len() + rest.len() < BOM.len()
                && BOM.starts_with(&[&self.line[..], rest].concat())
            {
                // Too short to tell yet: keep it as the line so far.
                self.line.extend_from_slice(rest);
                return Ok(());
            }
            self.start = false;
            if self.line.is_empty() {
                // The whole start is in this chunk: no copy of it.
                let rest = rest.strip_prefix(BOM).unwrap_or(rest);
                return self.feed_lines(rest, on_event);
            }
            let mut head = std::mem::take(&mut self.line);
            head.extend_from_slice(rest);
            let head = head.strip_prefix(BOM).map(<[u8]>::to_vec).unwrap_or(head);
            return self.feed_lines(&head, on_event);
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(r) = rest.strip_prefix(b"\n") {
                rest = r;
            }
        }
        self.feed_lines(rest, on_event)
    }

    fn feed_lines<F: FnMut(Event<'_>)>(
        &mut self,
        rest: &[u8],
        on_event: &mut F,
    ) -> Result<(), Fault> {
        // One search over the chunk (not one per line): lines of an event stream are short,
        // and nearly every stream ends them with LF alone.
        if memchr::memchr(b'\r', rest).is_none() {
            return self.feed_lf_lines(rest, on_event);
        }
        let mut start = 0;
        let mut after_cr = false;
        for at in memchr::memchr2_iter(b'\n', b'\r', rest) {
            if std::mem::take(&mut after_cr) && at == start && rest[at] == b'\n' {
                // The LF of a CRLF: that line has ended already.
                start = at + 1;
                continue;
            }
            if self.line.is_empty() {
                self.take_line(&rest[start..at], on_event)?;
            } else {
                self.end_line(&rest[start..at], on_event)?;
            }
            after_cr = rest[at] == b'\r';
            start = at + 1;
        }
        // A CR that ends the chunk: an LF first in the next one ends nothing more.
        self.after_cr = after_cr && start == rest.len();
        self.grow_line(&rest[start..])
    }

    /// [`Reader::feed_lines`] for a chunk without a CR: every line ends at an LF. The hot
    /// path of every stream: a blank line (an event's end) is told by its first byte, with
    /// no search, and a `data:` line is taken without looking for its colon.
    fn feed_lf_lines<F: FnMut(Event<'_>)>(
        &mut self,
        rest: &[u8],
        on_event: &mut F,
    ) -> Result<(), Fault> {
        let mut start = 0;
        if !self.line.is_empty() {
            let Some(at) = memchr::memchr(b'\n', rest) else {
                return self.grow_line(rest);
            };
            self.end_line(&rest[..at], on_event)?;
            start = at + 1;
        }
        while let Some(&first) = rest.get(start) {
            if first == b'\n' {
                self.dispatch(on_event);
                start += 1;
                continue;
            }
            if self.lone_ready() {
                let at = self.lone_events(rest, start, on_event)?;
                if at != start {
                    start = at;
                    continue;
                }
            }
            let Some(off) = memchr::memchr(b'\n', &rest[start..]) else {
                break;
            };
            let line = &rest[start..start + off];
            start += off + 1;
            self.take_line(line, on_event)?;
        }
        self.grow_line(&rest[start..])
    }

    /// Nothing gathered and nothing to gather: the next event with one data line and no
    /// type or ID of its own can be dispatched where its line is read.
    #[inline]
    fn lone_ready(&self) -> bool {
        !self.keep_data && self.data_len == 0 && !self.id_pending && self.kind.is_empty()
    }

    /// The usual events from `start` on (a `data:` line, then the blank line), dispatched
    /// with nothing gathered: the hot loop of every stream. Where the first other line
    /// begins (`start` itself when it is one).
    #[inline]
    fn lone_events<F: FnMut(Event<'_>)>(
        &self,
        rest: &[u8],
        mut start: usize,
        on_event: &mut F,
    ) -> Result<usize, Fault> {
        // A lone event holds its line less `data:` (and a space), plus an LF, and the last
        // event ID: bound the line.
        let max_line =
            (self.max_event.saturating_sub(self.id.len())).saturating_add(b"data:".len() - 1);
        loop {
            let tail = &rest[start..];
            if !tail.starts_with(b"data:") {
                return Ok(start);
            }
            let Some(end) = memchr::memchr(b'\n', tail) else {
                return Ok(start);
            };
            if tail.get(end + 1) != Some(&b'\n') {
                return Ok(start);
            }
            let space = usize::from(tail.get(5) == Some(&b' ') && end > 5);
            if end - space > max_line {
                return Err(Fault::TooLarge);
            }
            on_event(Event {
                kind: b"message",
                data: &[],
                id: &self.id,
            });
            start += end + 2;
        }
    }
    /// Ends the line begun in an earlier chunk with `tail`, and takes it.
    fn end_line<F: FnMut(Event<'_>)>(
        &mut self,
        tail: &[u8],
        on_event: &mut F,
    ) -> Result<(), Fault> {
        self.grow_line(tail)?;
        let line = std::mem::take(&mut self.line);
        let taken = self.take_line(&line, on_event);
        self.line = line;
        self.line.clear();
        taken
    }

    /// The longest line: `max_event` of value (its LF counted) after `data: `. Every line is
    /// held to it, whole in one read or cut between reads, so where a stream is cut never
    /// changes what it is; the event's data is held to `max_event` by [`Reader::data_line`].
    fn max_line(&self) -> usize {
        self.max_event.saturating_add(b"data:".len())
    }

    /// Adds `bytes` to the unfinished line, within the bound.
    fn grow_line(&mut self, bytes: &[u8]) -> Result<(), Fault> {
        if self.line.len() + bytes.len() > self.max_line() {
            return Err(Fault::TooLarge);
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// One whole line (without its end).
    fn take_line<F: FnMut(Event<'_>)>(
        &mut self,
        line: &[u8],
        on_event: &mut F,
    ) -> Result<(), Fault> {
        if line.is_empty() {
            self.dispatch(on_event);
            return Ok(());
        }
        if line.len() > self.max_line() {
            return Err(Fault::TooLarge);
        }
        if line[0] == b':' {
            self.comments += 1;
            return Ok(());
        }
        if let Some(v) = line.strip_prefix(b"data:") {
            // Nearly every line of a stream: no search for its colon.
            return self.data_line(v.strip_prefix(b" ").unwrap_or(v));
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => self.data_line(value)?,
            b"event" => {
                if self.data_len + value.len() + self.id.len() > self.max_event {
                    return Err(Fault::TooLarge);
                }
                self.kind.clear();
                self.kind.extend_from_slice(value);
            }
            b"id" if !value.contains(&0) => {
                if self.data_len + self.kind.len() + value.len() > self.max_event {
                    return Err(Fault::TooLarge);
                }
                self.id_pending = true;
                self.id.clear();
                self.id.extend_from_slice(value);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry_ms = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
        Ok(())
    }

    /// A `data:` line's value, added to the event being gathered within the bound.
    #[inline]
    fn data_line(&mut self, value: &[u8]) -> Result<(), Fault> {
        let named = self.kind.len() + self.id.len();
        if self.data_len + value.len() + 1 + named > self.max_event {
            return Err(Fault::TooLarge);
        }
        self.data_len += value.len() + 1;
        if self.keep_data {
            self.data.extend_from_slice(value);
            self.data.push(b'\n');
        }
        Ok(())
    }

    /// A blank line: the event gathered so far goes out (none without data), and the type
    /// is forgotten; the ID is kept.
    fn dispatch<F: FnMut(Event<'_>)>(&mut self, on_event: &mut F) {
        if self.id_pending {
            // The browser's last event ID is set at every blank line, data or not.
            self.id_pending = false;
            let d = self.dispatched_id.get_or_insert_with(Vec::new);
            d.clear();
            d.extend_from_slice(&self.id);
        }
        if self.data_len > 0 {
            self.data.pop();
            let kind: &[u8] = if self.kind.is_empty() {
                b"message"
            } else {
                &self.kind
            };
            on_event(Event {
                kind,
                data: &self.data,
                id: &self.id,
            });
        }
        self.data.clear();
        self.data_len = 0;
        self.kind.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `chunks` fed in order, as (type, data, id) strings.
    fn events(chunks: &[&[u8]]) -> Vec<(String, String, String)> {
        let mut r = Reader::new(1 << 16).keeping_data();
        let mut out = Vec::new();
        for c in chunks {
            r.feed(c, &mut |e: Event<'_>| {
                let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                out.push((s(e.kind), s(e.data), s(e.id)));
            })
            .unwrap();
        }
        out
    }

    fn ev(kind: &str, data: &str, id: &str) -> (String, String, String) {
        (kind.into(), data.into(), id.into())
    }

    #[test]
    fn the_standards_examples_read_as_a_browser_reads_them() {
        // From the HTML standard's examples: a comment, multi-line data, ids, and a last
        // block without its blank line (no event).
        let got = events(&[b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n"]);
        assert_eq!(
            got,
            [
                ev("message", "first event", "1"),
                ev("message", "second event", "")
            ]
        );
        let got = events(&[b"data\n\ndata\ndata\n\ndata:\n"]);
        assert_eq!(got, [ev("message", "", ""), ev("message", "\n", "")]);
        let got = events(&[b"data:test\n\ndata: test\n\n"]);
        assert_eq!(got, [ev("message", "test", ""), ev("message", "test", "")]);
        let got =
            events(&[b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\ndata: x\n\n"]);
        assert_eq!(
            got,
            [
                ev("add", "73857293", ""),
                ev("remove", "2153", ""),
                ev("message", "x", "")
            ]
        );
    }

    #[test]
    fn every_line_end_and_every_cut_between_chunks_gives_the_same_events() {
        let whole: &[u8] =
            b"\xEF\xBB\xBFid: 7\r\nevent: tok\rdata: a\r\ndata: b\n\r\n: ping\r\rdata: c\n\n";
        let want = vec![ev("tok", "a\nb", "7"), ev("message", "c", "7")];
        assert_eq!(events(&[whole]), want);
        for cut in 0..=whole.len() {
            assert_eq!(
                events(&[&whole[..cut], &whole[cut..]]),
                want,
                "cut at {cut}"
            );
        }
        let bytes: Vec<&[u8]> = whole.chunks(1).collect();
        assert_eq!(events(&bytes), want, "a byte at a time");
    }

    #[test]
    fn retry_ids_and_comments_follow_the_rules() {
        let mut r = Reader::new(1024);
        let mut n = 0;
        r.feed(
            b"retry: 1500\nretry: 2x\nid: a\0b\n: one\n:two\ndata: d\n\n",
            &mut |_| n += 1,
        )
        .unwrap();
        assert_eq!(
            (n, r.retry_ms(), r.last_id(), r.comments()),
            (1, Some(1500), &b""[..], 2)
        );
        r.feed(b"id: 42\n\n", &mut |_| n += 1).unwrap();
        assert_eq!(
            (n, r.last_id()),
            (1, &b"42"[..]),
            "an id alone dispatches nothing"
        );
        assert_eq!(
            r.confirmed_id(),
            Some(&b"42"[..]),
            "but a blank line confirms it"
        );
    }

    #[test]
    fn the_id_a_reconnect_sends_is_the_one_a_blank_line_confirmed() {
        let mut r = Reader::new(1024);
        r.feed(
            b"data: x

",
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(r.confirmed_id(), None, "no id yet: the one before holds");
        r.feed(
            b"id: 7
data: x

id: 8
data: cut",
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(
            (r.confirmed_id(), r.last_id()),
            (Some(&b"7"[..]), &b"8"[..]),
            "an event cut before its blank line was not delivered"
        );
        r.feed(
            b"

id

",
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(r.confirmed_id(), Some(&b""[..]), "an empty id resets it");
    }

    #[test]
    fn an_endless_line_or_event_is_an_error_within_the_bound() {
        let mut r = Reader::new(100);
        let mut fed = 0;
        let err = loop {
            match r.feed(&[b'x'; 7], &mut |_| {}) {
                Ok(()) => fed += 7,
                Err(e) => break e,
            }
            assert!(fed < 1000, "never refused");
        };
        assert_eq!(err, Fault::TooLarge);
        assert!(fed <= 105 && r.line.capacity() <= 256, "{fed} fed");
        let mut r = Reader::new(100);
        let mut refused = None;
        for i in 0..100 {
            if let Err(e) = r.feed(b"data: 0123456789\n", &mut |_| {}) {
                refused = Some((i, e));
                break;
            }
        }
        assert_eq!(
            refused,
            Some((9, Fault::TooLarge)),
            "data lines without a blank line"
        );
        // Within the bound, an event of exactly max_event bytes of line and data passes.
        let mut r = Reader::new(12).keeping_data();
        let mut got = Vec::new();
        r.feed(b"data: 0123456789\n\n", &mut |e| got.push(e.data.to_vec()))
            .unwrap();
        assert_eq!(got, [b"0123456789".to_vec()]);
    }

    #[test]
    fn an_events_type_id_and_data_share_one_bound() {
        // 6 bytes of type, 5 of ID and "x" with its LF: 13 bytes, one past 12.
        for keep in [false, true] {
            let fresh = || {
                let r = Reader::new(12);
                if keep {
                    r.keeping_data()
                } else {
                    r
                }
            };
            let mut r = fresh();
            let fed = r.feed(b"event: abcdef\nid: 12345\ndata: x\n\n", &mut |_| {});
            assert_eq!(fed, Err(Fault::TooLarge), "keeping {keep}");
            let mut r = fresh();
            let fed = r.feed(b"id: 12345\ndata: x\nevent: abcdef\n\n", &mut |_| {});
            assert_eq!(fed, Err(Fault::TooLarge), "type last, keeping {keep}");
            // The ID a stream set stays with every later event, the usual one too.
            let mut r = fresh();
            let fed = r.feed(b"id: 1234567\n\ndata: 01234\n\n", &mut |_| {});
            assert_eq!(fed, Err(Fault::TooLarge), "a lone event, keeping {keep}");
            let mut r = fresh();
            let mut n = 0;
            let stream = b"event: abcd\nid: 123\ndata: xy\n\ndata: 01234567\n\n";
            let fed = r.feed(stream, &mut |_| n += 1);
            assert_eq!((fed, n), (Ok(()), 2), "12 bytes each, keeping {keep}");
        }
    }

    #[test]
    fn a_reader_that_only_counts_sees_the_same_events_within_the_same_bound() {
        let stream = b"data: a\ndata: b\n\n: ping\n\ndata:\n\nevent: x\n\ndata: 0123456789\n\n";
        let (mut kept, mut counted) = (Reader::new(12).keeping_data(), Reader::new(12));
        let (mut a, mut b) = (Vec::new(), Vec::new());
        kept.feed(stream, &mut |e| a.push(e.kind.to_vec())).unwrap();
        counted
            .feed(stream, &mut |e| b.push((e.kind.to_vec(), e.data.len())))
            .unwrap();
        assert_eq!(a.len(), 3, "two data events, one empty-data event");
        assert_eq!(b.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), a);
        assert!(b.iter().all(|(_, n)| *n == 0), "no data copied");
        assert_eq!(
            counted.feed(b"data: 0123456789xy\n", &mut |_| {}),
            Err(Fault::TooLarge)
        );
    }

    #[test]
    fn the_usual_event_is_bounded_as_any_other() {
        // The counting reader dispatches these where their line is read; the keeping one
        // gathers them: both must refuse at the same size, one byte past the bound.
        for line in [
            &b"data: 0123456789"[..],
            b"data:0123456789",
            b"data: ",
            b"data:",
        ] {
            let value = line.len() - 5 - usize::from(line.get(5) == Some(&b' '));
            let stream = [line, b"\n\n", line, b"\n\n"].concat();
            for max in [value, value + 1] {
                let fits = value < max;
                for keep in [false, true] {
                    let mut r = Reader::new(max);
                    if keep {
                        r = r.keeping_data();
                    }
                    let mut n = 0;
                    let got = r.feed(&stream, &mut |_| n += 1);
                    let want = if fits { Ok(()) } else { Err(Fault::TooLarge) };
                    let what = String::from_utf8_lossy(line);
                    assert_eq!(got, want, "{what:?} within {max}, keeping {keep}");
                    if fits {
                        assert_eq!(n, 2, "{what:?} within {max}");
                    }
                }
            }
        }
    }

    /// Everything a reader says about a stream fed in `chunks`: each event's type and ID,
    /// then the retry, confirmed ID and comments, and the first fault with its chunk.
    fn trace(mut r: Reader, chunks: &[&[u8]]) -> String {
        let mut out = String::new();
        for (i, c) in chunks.iter().enumerate() {
            let fed = r.feed(c, &mut |e| {
                out += &format!("{}#{};", String::from_utf8_lossy(e.kind), e.id.len());
            });
            if let Err(f) = fed {
                out += &format!("{f:?} at {i}");
                return out;
            }
        }
        let id = r.confirmed_id().map(<[u8]>::len);
        out + &format!("{:?} {id:?} {}", r.retry_ms(), r.comments())
    }

    #[test]
    fn counting_and_keeping_readers_agree_on_any_stream_cut_anywhere() {
        const LINES: [&str; 12] = [
            "data: x",
            "data:",
            "data: 0123456",
            "data:abc",
            "event: e",
            "id: 5",
            ": c",
            "",
            "",
            "retry: 10",
            "dat",
            "x",
        ];
        let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for round in 0..3000 {
            let end = ["\n", "\r\n", "\r"][usize::from(round % 5 == 0) * (1 + next(2))];
            let stream: String = (0..next(24))
                .map(|_| LINES[next(LINES.len())].to_string() + end)
                .collect();
            let bytes = stream.as_bytes();
            let mut cuts: Vec<usize> = (0..next(4)).map(|_| next(bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut at = 0;
            for c in cuts.into_iter().chain([bytes.len()]) {
                chunks.push(&bytes[at..c]);
                at = c;
            }
            let max = 4 + next(16);
            let (kept, counted) = (Reader::new(max).keeping_data(), Reader::new(max));
            let cut = trace(counted, &chunks);
            assert_eq!(
                trace(kept, &chunks),
                cut,
                "{stream:?} in {chunks:?} within {max}"
            );
            // Where the stream was cut changes nothing but when a fault is seen.
            let whole = trace(Reader::new(max), &[bytes]);
            let fault = |t: &str| t.find("TooLarge").map(|at| t[..at].to_string());
            if !stream.contains('\r') {
                assert_eq!(
                    fault(&whole).is_some(),
                    fault(&cut).is_some(),
                    "{stream:?} in {chunks:?} within {max}"
                );
                if fault(&whole).is_none() {
                    assert_eq!(whole, cut, "{stream:?} in {chunks:?} within {max}");
                }
            }
        }
    }
}
