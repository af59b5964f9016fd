//! One bounded HTTP/1.1 `GET` over a blocking socket: enough for scrapes and health probes,
//! which must never hang (every step has a deadline) and never need more than a status and a
//! body of a few hundred kilobytes.

use model::Target;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const MAX_BODY: usize = 8 << 20;

/// `GET target` within `timeout`: the status and the body (read until the connection closes).
pub fn get(target: &Target, timeout: Duration) -> Result<(u16, Vec<u8>), String> {
    get_full(target, timeout).map(|(status, _, body)| (status, body))
}

/// The status of `GET target` within `timeout`, read from the head alone: a health probe
/// needs no body, and an answer that streams (chunked and kept open, an event stream) has
/// answered once its head is in.
pub fn status(target: &Target, timeout: Duration) -> Result<u16, String> {
    let buf = exchange(target, timeout, |b| {
        memchr::memmem::find(b, b"\r\n\r\n").is_some()
    })?;
    let head_end = memchr::memmem::find(&buf, b"\r\n\r\n").ok_or("no complete response head")?;
    status_of(&String::from_utf8_lossy(&buf[..head_end]))
}

/// [`get`], with the response's `Retry-After` in seconds when it gives one.
pub fn get_full(target: &Target, timeout: Duration) -> Result<(u16, Option<f64>, Vec<u8>), String> {
    let buf = exchange(target, timeout, |_| false)?;
    let head_end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no complete response head")?;
    let head = String::from_utf8_lossy(&buf[..head_end]);
    let status = status_of(&head)?;
    let mut body = buf[head_end + 4..].to_vec();
    let lower = head.to_ascii_lowercase();
    if lower.contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    let retry_after = lower
        .lines()
        .find_map(|l| l.strip_prefix("retry-after:"))
        .and_then(|v| v.trim().parse::<f64>().ok());
    Ok((status, retry_after, body))
}

/// The status code of a response head.
fn status_of(head: &str) -> Result<u16, String> {
    head.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| "no status code".to_string())
}

/// Sends `GET target` and reads the answer until the connection closes or `enough` says the
/// bytes so far will do, within `timeout` and [`MAX_BODY`].
fn exchange(
    target: &Target,
    timeout: Duration,
    enough: impl Fn(&[u8]) -> bool,
) -> Result<Vec<u8>, String> {
    let deadline = Instant::now() + timeout;
    let req = model::guard::get_head(
        &target.path,
        &target.authority,
        &[
            ("User-Agent", "brink-observe"),
            ("Accept", "text/plain"),
            ("Connection", "close"),
        ],
    )?;
    let addr = target.resolve().map_err(|e| e.to_string())?;
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect: {e}"))?;
    let left = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    s.set_write_timeout(Some(left()))
        .map_err(|e| e.to_string())?;
    s.write_all(req.as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    while !enough(&buf) {
        if Instant::now() >= deadline {
            return Err("timed out".into());
        }
        s.set_read_timeout(Some(left()))
            .map_err(|e| e.to_string())?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > MAX_BODY {
                    return Err("response too large".into());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    Ok(buf)
}

fn dechunk(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = raw;
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = String::from_utf8_lossy(&rest[..eol]);
        let Ok(n) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16) else {
            break;
        };
        rest = &rest[eol + 2..];
        if n == 0 || n > rest.len() {
            break;
        }
        out.extend_from_slice(&rest[..n]);
        rest = rest.get(n + 2..).unwrap_or(&[]);
    }
    out
}
