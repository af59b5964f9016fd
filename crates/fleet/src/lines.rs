//! Messages arrive as lines of JSON over a stream that a broken or hostile peer controls: a
//! line may never end, or announce nothing and flood. [`Lines`] buffers at most [`MAX_LINE`]
//! bytes of an unfinished line and then fails, so a peer cannot grow the reader's memory, and
//! a line that is not a message is an error naming what was wrong, never a panic.

use serde::de::DeserializeOwned;

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
    pub fn feed<T: DeserializeOwned>(&mut self, chunk: &[u8]) -> Result<Vec<T>, String> {
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
                let msg = serde_json::from_slice(line).map_err(|e| {
                    let shown = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
                    format!("not a message ({e}): {}", shown.escape_debug())
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

fn too_long() -> String {
    format!("a message longer than {} MiB", MAX_LINE >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::ToWorker;

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
