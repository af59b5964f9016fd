//! Responses kept for extraction, and the one memory budget they share. A flow step that
//! extracts a token must keep its response until the extraction runs; a hostile or broken
//! server could answer every such request with gigabytes. Every kept body draws on a budget
//! shared by all requests in flight (`--capture-limit`, 64 MiB by default): a response that
//! does not fit is not kept (its bytes are still read and counted) and its extraction fails as
//! `extract`, saying how large it was. Chunked bodies are de-chunked in place, and regexes run
//! on the bytes, so no second full copy is made.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Default `--capture-limit`: 64 MiB across all kept responses of a run.
pub const DEFAULT_LIMIT: usize = 64 << 20;

/// The memory all kept responses of a run may hold together.
#[derive(Debug)]
pub struct Budget {
    limit: usize,
    used: AtomicUsize,
}

impl Budget {
    pub fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held now by kept responses.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn reserve(&self, n: usize) -> bool {
        let before = self.used.fetch_add(n, Ordering::Relaxed);
        if before + n > self.limit {
            self.used.fetch_sub(n, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn release(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::Relaxed);
    }
}

/// A response kept for extraction: headers and the (de-chunked) body.
#[derive(Debug, Default)]
pub struct Captured {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Where the body's bytes are accounted; `None` for a capture made outside a run.
    budget: Option<Arc<Budget>>,
    /// Bytes reserved from the budget.
    held: usize,
    /// Body bytes seen, kept or not.
    seen: u64,
    /// The body did not fit in the budget: nothing of it is kept.
    too_large: bool,
}

impl Captured {
    /// An empty capture accounted on `budget`.
    pub fn new(budget: Arc<Budget>) -> Captured {
        let mut c = Captured::default();
        c.budget = Some(budget);
        c
    }

    /// A capture of `body` outside any run (tests, tools).
    pub fn of(headers: Vec<(String, String)>, body: Vec<u8>) -> Captured {
        let mut c = Captured::default();
        c.headers = headers;
        c.seen = body.len() as u64;
        c.body = body;
        c
    }

    /// Keeps `data`, the next bytes of the body, while the budget allows; once it does not,
    /// lets go of everything kept and only counts.
    pub fn keep(&mut self, data: &[u8]) {
        self.seen += data.len() as u64;
        if self.too_large || data.is_empty() {
            return;
        }
        if let Some(b) = &self.budget {
            if !b.reserve(data.len()) {
                b.release(self.held);
                self.held = 0;
                self.too_large = true;
                self.body = Vec::new();
                return;
            }
            self.held += data.len();
        }
        self.body.extend_from_slice(data);
    }

    /// Body bytes seen, whether kept or not.
    pub fn body_len(&self) -> u64 {
        self.seen
    }

    /// Removes chunked framing from the kept body, in place.
    pub fn dechunk(&mut self) {
        if !self.too_large {
            dechunk_in_place(&mut self.body);
        }
    }

    /// Why nothing can be extracted from this response, if nothing can.
    pub(crate) fn unusable(&self) -> Option<String> {
        self.too_large.then(|| {
            let limit = self.budget.as_ref().map_or(0, |b| b.limit());
            format!(
                "response too large to keep: {} bytes of body seen, more than the capture budget allows ({} across requests in flight; --capture-limit)",
                self.seen,
                size_text(limit)
            )
        })
    }
}

/// `64 MiB`, `1 KiB`, `1500 bytes`: a budget as it was most likely written.
fn size_text(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

impl Drop for Captured {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            b.release(self.held);
        }
    }
}

/// Rewrites a complete chunked body (framing already validated by the reader) as its data.
fn dechunk_in_place(buf: &mut Vec<u8>) {
    let (mut read, mut write) = (0, 0);
    while let Some(eol) = buf[read..].iter().position(|&b| b == b'\n') {
        let line = &buf[read..read + eol];
        let size = line.split(|&b| b == b';').next().unwrap_or(&[]);
        let size = std::str::from_utf8(size).map(str::trim).unwrap_or("");
        let Ok(n) = usize::from_str_radix(size, 16) else {
            break;
        };
        read += eol + 1;
        if n == 0 || n > buf.len() - read {
            break;
        }
        buf.copy_within(read..read + n, write);
        write += n;
        read += n;
        if buf[read..].starts_with(b"\r\n") {
            read += 2;
        } else if buf[read..].starts_with(b"\n") {
            read += 1;
        }
    }
    buf.truncate(write);
}

/// Where an extracted variable comes from.
#[derive(Debug)]
pub enum Extractor {
    /// RFC 9535 JSONPath on a JSON body; the first match (strings unquoted).
    Json(serde_json_path::JsonPath),
    /// A response header (case-insensitive).
    Header(String),
    /// A regex on the body: capture group 1, or the whole match without groups.
    Regex(regex::bytes::Regex),
}

impl Extractor {
    /// The value found in `r`, or why there is none.
    pub fn apply(&self, r: &Captured) -> Result<String, String> {
        if let Some(why) = r.unusable() {
            return Err(why);
        }
        match self {
            Extractor::Header(name) => r
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
                .ok_or_else(|| format!("no header {name} in the response")),
            _ => self.from_body(&r.body),
        }
    }

    /// The value found in `body` (a response's, or a WebSocket message), or why there is
    /// none; a header is never in a body.
    pub fn from_body(&self, body: &[u8]) -> Result<String, String> {
        match self {
            Extractor::Json(path) => {
                let v: serde_json::Value = serde_json::from_slice(body)
                    .map_err(|e| format!("the body is not JSON ({e})"))?;
                let found = path
                    .query(&v)
                    .first()
                    .ok_or_else(|| format!("JSONPath {path} matched nothing"))?;
                Ok(match found {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            }
            Extractor::Header(name) => Err(format!("header {name}: a body has no headers")),
            Extractor::Regex(re) => {
                let caps = re
                    .captures(body)
                    .ok_or_else(|| format!("regex {} matched nothing", re.as_str()))?;
                let m = caps.get(1).or_else(|| caps.get(0)).map(|m| m.as_bytes());
                Ok(String::from_utf8_lossy(m.unwrap_or_default()).into_owned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dechunks_in_place() {
        let mut b = b"3\r\n{\"a\r\n4;x=1\r\n\":1}\r\n0\r\n\r\n".to_vec();
        dechunk_in_place(&mut b);
        assert_eq!(b, b"{\"a\":1}");
    }

    #[test]
    fn the_budget_is_shared_and_given_back() {
        let budget = Budget::new(100);
        let mut a = Captured::new(budget.clone());
        a.keep(&[b'x'; 60]);
        let mut b = Captured::new(budget.clone());
        b.keep(&[b'y'; 30]);
        assert_eq!(budget.used(), 90);
        b.keep(&[b'y'; 30]);
        assert_eq!(
            budget.used(),
            60,
            "b no longer fits: it lets go of what it held"
        );
        assert!(b.body.is_empty());
        let why = Extractor::Header("x".into()).apply(&b).unwrap_err();
        assert!(why.contains("60 bytes of body seen"), "{why}");
        drop(a);
        assert_eq!(budget.used(), 0);
    }
}
