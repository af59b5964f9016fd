//! Messages arrive as lines of JSON over a stream that a broken or hostile peer controls: a
//! line may never end, or announce nothing and flood. [`Lines`] buffers at most [`MAX_LINE`]
//! bytes of an unfinished line and then fails, so a peer cannot grow the reader's memory, and
//! a line that is not a message is an error naming what was wrong, never a panic.

use crate::proto::{FromWorker, ToWorker};
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// The longest line accepted: a second of a workload with many requests is well under this.
pub const MAX_LINE: usize = 8 << 20;

/// A line splitter fed with whatever chunks the transport delivers.
#[derive(Debug, Default)]
pub struct Lines {
    buf: Vec<u8>,
}

impl Lines {
    /// Adds `chunk` and returns the messages completed by it, in order; an error once a line
    /// is longer than [`MAX_LINE`] or is not a `T`.
    pub fn feed<T: Message>(&mut self, chunk: &[u8]) -> Result<Vec<T>, String> {
        let mut out = Vec::new();
        let mut rest = chunk;
        while let Some(at) = memchr::memchr(b'\n', rest) {
            if self.buf.len() + at > MAX_LINE {
                return Err(too_long());
            }
            // A line whole in this chunk is read where it is; a line begun in an earlier
            // chunk is completed in the buffer, which is then given back (a coordinator
            // holds one per worker: room kept for the longest line would add up).
            let line = if self.buf.is_empty() {
                &rest[..at]
            } else {
                self.buf.extend_from_slice(&rest[..at]);
                &self.buf[..]
            };
            rest = &rest[at + 1..];
            if !line.iter().all(u8::is_ascii_whitespace) {
                let msg = T::parse(line).map_err(|e| {
                    // Whoever shows it escapes it (once): the words are the peer's.
                    let shown = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
                    format!("not a message ({e}): {shown}")
                });
                self.buf = Vec::new();
                out.push(msg?);
            } else {
                self.buf = Vec::new();
            }
        }
        if self.buf.len() + rest.len() > MAX_LINE {
            return Err(too_long());
        }
        self.buf.extend_from_slice(rest);
        Ok(out)
    }

    /// Bytes of an unfinished line held.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

/// What a line holds: JSON, read as the type derives it unless the type knows a faster way.
pub trait Message: DeserializeOwned {
    fn parse(line: &[u8]) -> serde_json::Result<Self> {
        serde_json::from_slice(line)
    }
}

impl Message for ToWorker {}

impl Message for FromWorker {
    /// A second, the line every worker sends every second, is read as a plain struct: serde
    /// reads an internally tagged enum twice, first into a buffer of its own and then from
    /// it, copying every histogram on the way (a coordinator of a thousand workers spent more
    /// on that than on merging them). Anything else, or a second that does not read, takes
    /// the derived way, whose error is the one reported.
    fn parse(line: &[u8]) -> serde_json::Result<FromWorker> {
        #[derive(Deserialize)]
        enum Kind {
            #[serde(rename = "second")]
            Second,
        }
        #[derive(Deserialize)]
        struct Second {
            #[serde(rename = "type")]
            _kind: Kind,
            parts: Vec<stats::WireBucket>,
        }
        if line.starts_with(br#"{"type":"second","#) {
            if let Ok(s) = serde_json::from_slice::<Second>(line) {
                return Ok(FromWorker::Second { parts: s.parts });
            }
        }
        serde_json::from_slice(line)
    }
}

fn too_long() -> String {
    format!("a message longer than {} MiB", MAX_LINE >> 20)
}

/// What a worker says (its host name, why it failed), as the terminal, the result and the
/// pages may show it: one line, control characters escaped, at most 300 characters. A worker
/// is another machine; its words are never trusted to be tidy.
pub(crate) fn said(text: &str) -> String {
    model::guard::escaped(text.as_bytes(), 300)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_anywhere_arrive_whole() {
        let text = b"{\"type\":\"stop\"}\n\n{\"type\":\"ping\",\"id\":3}\n{\"type\":\"heart";
        let mut l = Lines::default();
        let mut got: Vec<ToWorker> = Vec::new();
        for chunk in text.chunks(5) {
            got.extend(l.feed::<ToWorker>(chunk).unwrap());
        }
        assert_eq!(got, vec![ToWorker::Stop, ToWorker::Ping { id: 3 }]);
        got = l.feed(b"beat\"}\n").unwrap();
        assert_eq!(got, vec![ToWorker::Heartbeat]);
        assert_eq!(l.pending(), 0);
    }

    /// A second read the fast way is the one the derived way reads, whatever the order of
    /// its fields; a broken one is the derived way's error.
    #[test]
    fn a_second_reads_as_the_derived_way_reads_it() {
        let mut b = stats::Bucket::new(4);
        b.corrected.saturating_record(1_234);
        b.service.saturating_record(1_000);
        b.requests = 1;
        let m = FromWorker::Second {
            parts: vec![stats::WireBucket::from(&b)],
        };
        let line = serde_json::to_vec(&m).unwrap();
        assert!(line.starts_with(br#"{"type":"second","#));
        assert_eq!(FromWorker::parse(&line).unwrap(), m);
        let derived: FromWorker = serde_json::from_slice(&line).unwrap();
        assert_eq!(derived, m);
        // Another order of fields, and the tag last.
        let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
        let parts = serde_json::to_string(&value["parts"]).unwrap();
        let reordered = format!(r#"{{"parts":{parts},"type":"second"}}"#);
        assert_eq!(FromWorker::parse(reordered.as_bytes()).unwrap(), m);
        // The tag claims a second, the body is not one.
        let bad = br#"{"type":"second","parts":[{"second":"x"}]}"#;
        let fast = FromWorker::parse(bad).unwrap_err().to_string();
        let slow = serde_json::from_slice::<FromWorker>(bad)
            .unwrap_err()
            .to_string();
        assert_eq!(fast, slow);
        // Other messages read as before.
        let pong = br#"{"type":"pong","id":3,"unix_ns":9}"#;
        assert_eq!(
            FromWorker::parse(pong).unwrap(),
            FromWorker::Pong { id: 3, unix_ns: 9 }
        );
    }

    #[test]
    fn an_endless_line_or_garbage_is_an_error_with_bounded_memory() {
        let mut l = Lines::default();
        let chunk = vec![b'x'; 1 << 20];
        let mut failed = None;
        for i in 0..20 {
            if let Err(e) = l.feed::<ToWorker>(&chunk) {
                failed = Some((i, e));
                break;
            }
            assert!(l.pending() <= MAX_LINE);
        }
        let (i, e) = failed.expect("an endless line fails");
        assert_eq!(i, 8, "fails as the ninth MiB arrives");
        assert!(e.contains("longer than 8 MiB"), "{e}");
        let e = Lines::default()
            .feed::<ToWorker>(b"{\"type\":\"rm -rf\"}\n")
            .unwrap_err();
        assert!(
            e.starts_with("not a message") && e.contains("rm -rf"),
            "{e}"
        );
    }
}
