//! The HTTP/1.1 fast path: the request is written from bytes serialised once, the response is
//! read into one reusable per-connection buffer, the head is parsed in place and the body is
//! skipped while counting bytes. Nothing is allocated per request.

pub mod parse;

use crate::conn::{io_kind, Transport};
use parse::{parse_head, Chunked, Framing};
use stats::ErrorKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Initial read buffer: large enough for common heads; grows up to [`MAX_HEAD`].
const INITIAL_BUF: usize = 8 * 1024;
/// Longest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Buffer size used once a connection has seen a large body, to read it in fewer calls.
const BULK_BUF: usize = 64 * 1024;

/// What a completed exchange produced.
#[derive(Clone, Copy, Debug)]
pub struct Reply {
    pub status: u16,
    pub bytes_in: u64,
    /// Whether the connection may carry another request.
    pub keep_alive: bool,
}

/// One HTTP/1.1 connection over any transport (plain TCP or TLS).
pub struct H1Conn<S> {
    io: S,
    buf: Vec<u8>,
}

impl<S: Transport> H1Conn<S> {
    pub fn new(io: S) -> Self {
        H1Conn {
            io,
            buf: vec![0; INITIAL_BUF],
        }
    }

    /// Writes `req` and reads one full response.
    pub async fn roundtrip(&mut self, req: &[u8], head_request: bool) -> Result<Reply, ErrorKind> {
        self.io.write_all(req).await.map_err(|e| io_kind(&e))?;
        let mut filled = 0;
        let mut bytes_in = 0u64;
        let head = loop {
            let n = self.read_at(filled).await?;
            filled += n;
            bytes_in += n as u64;
            match parse_head(&self.buf[..filled], head_request).map_err(|_| ErrorKind::Protocol)? {
                Some(h) if (100..200).contains(&h.status) && h.status != 101 => {
                    // Interim response: drop it and keep reading for the final one.
                    self.buf.copy_within(h.len..filled, 0);
                    filled -= h.len;
                }
                Some(h) => break h,
                None if filled == self.buf.len() => {
                    if self.buf.len() >= MAX_HEAD {
                        return Err(ErrorKind::Protocol);
                    }
                    self.buf.resize(self.buf.len() * 2, 0);
                }
                None => {}
            }
        };
        let rest = filled - head.len;
        bytes_in += match head.framing {
            Framing::Empty => 0,
            Framing::Length(n) => self.skip_length(n.saturating_sub(rest as u64)).await?,
            Framing::Chunked => self.skip_chunked(head.len, filled).await?,
            Framing::Close => self.skip_to_eof().await?,
        };
        if head.keep_alive {
            self.io.clear_read_ready();
        }
        Ok(Reply {
            status: head.status,
            bytes_in,
            keep_alive: head.keep_alive,
        })
    }

    /// Reads into `buf[at..]`; a closed connection is an error here.
    async fn read_at(&mut self, at: usize) -> Result<usize, ErrorKind> {
        match self.io.read(&mut self.buf[at..]).await {
            Ok(0) => Err(ErrorKind::Closed),
            Ok(n) => Ok(n),
            Err(e) => Err(io_kind(&e)),
        }
    }

    fn grow_for_bulk(&mut self, remaining: u64) {
        if remaining > self.buf.len() as u64 && self.buf.len() < BULK_BUF {
            self.buf.resize(BULK_BUF, 0);
        }
    }

    async fn skip_length(&mut self, mut remaining: u64) -> Result<u64, ErrorKind> {
        let mut read = 0;
        self.grow_for_bulk(remaining);
        while remaining > 0 {
            let n = self.read_at(0).await? as u64;
            read += n;
            remaining = remaining.saturating_sub(n);
        }
        Ok(read)
    }

    async fn skip_chunked(&mut self, from: usize, to: usize) -> Result<u64, ErrorKind> {
        let mut dec = Chunked::default();
        if dec
            .feed(&self.buf[from..to])
            .map_err(|_| ErrorKind::Protocol)?
        {
            return Ok(0);
        }
        let mut read = 0;
        loop {
            let n = self.read_at(0).await?;
            read += n as u64;
            if dec.feed(&self.buf[..n]).map_err(|_| ErrorKind::Protocol)? {
                return Ok(read);
            }
        }
    }

    async fn skip_to_eof(&mut self) -> Result<u64, ErrorKind> {
        let mut read = 0;
        loop {
            match self.io.read(&mut self.buf[..]).await {
                Ok(0) => return Ok(read),
                Ok(n) => read += n as u64,
                Err(e) => return Err(io_kind(&e)),
            }
        }
    }
}
