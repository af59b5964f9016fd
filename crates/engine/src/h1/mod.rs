//! The HTTP/1.1 path: the request is written from bytes serialised once, the response is read
//! into one reusable per-connection buffer and handed to the sans-I/O [`reader::Reader`], which
//! parses the head in place and skips the body while counting bytes. Nothing is allocated per
//! request. This async client serves TLS connections; plain TCP uses the epoll loop
//! (`worker::epoll`), which drives the same reader.

pub mod parse;
pub mod reader;
mod scan;

use crate::conn::io_kind;
use crate::workload::Captured;
pub use reader::Reply;
use reader::{ReadBuf, Reader};
use stats::ErrorKind;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// One HTTP/1.1 connection over any async transport.
pub struct H1Conn<S> {
    io: S,
    buf: ReadBuf,
}

impl<S: AsyncRead + AsyncWrite + Unpin> H1Conn<S> {
    pub fn new(io: S) -> Self {
        H1Conn {
            io,
            buf: ReadBuf::default(),
        }
    }

    /// Writes `req` and reads one full response, keeping it when `capture` is set.
    pub async fn roundtrip(
        &mut self,
        req: &[u8],
        head_request: bool,
        capture: bool,
    ) -> Result<(Reply, Option<Captured>), ErrorKind> {
        self.io.write_all(req).await.map_err(|e| io_kind(&e))?;
        let mut reader = if capture {
            Reader::capturing(head_request)
        } else {
            Reader::new(head_request)
        };
        self.buf.filled = 0;
        loop {
            let n = self
                .io
                .read(self.buf.spare())
                .await
                .map_err(|e| io_kind(&e))?;
            let reply = if n == 0 {
                Some(reader.eof()?)
            } else {
                reader.advance(&mut self.buf, n)?
            };
            if let Some(reply) = reply {
                return Ok((reply, reader.take_capture()));
            }
        }
    }
}
