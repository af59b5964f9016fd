//! Every server brink starts (the demo service, `brink serve`, a worker's listener, the test
//! servers) runs the same way: a thread of its own with its own tokio runtime, so it never
//! competes with the load engine's threads or a caller's runtime, an accept loop that ends
//! when told, and a handle whose drop stops the loop and waits for the thread. This crate is
//! that one piece of code; what each server does with a connection stays with the server.
//! Also here: a body fed by a channel, for what streams (live events, a worker's seconds), and
//! the names a loopback server answers ([`host`]), and the bound on what a connection that has
//! not proved itself may hold ([`gate`]).

pub mod gate;
pub mod host;

use bytes::Bytes;
use hyper::body::Frame;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// How long the accept loop rests after a failed accept.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A server's thread: dropping it tells the server to stop and waits for its thread.
pub struct Running {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A body fed by a channel: each message is one chunk; it ends when the sender is dropped.
pub struct ChannelBody(pub tokio::sync::mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|m| m.map(|b| Ok(Frame::data(b))))
    }
}

/// Fires when the server's [`Running`] handle is dropped.
pub type Stop = oneshot::Receiver<()>;

/// Starts a thread named `name` with a runtime of `threads` worker threads; `bind` runs inside
/// that runtime (so it may create tokio sockets) and its value goes to `serve` with the stop
/// signal. Returns what `bind` gave back for the caller (its address) and the handle.
pub fn spawn<B, S, F, T>(
    name: &str,
    threads: usize,
    bind: B,
    serve: S,
) -> std::io::Result<(T, Running)>
where
    B: FnOnce() -> std::io::Result<(T, TcpListener)>,
    S: FnOnce(TcpListener, Stop) -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()?;
    let (info, listener) = {
        let _in_runtime = rt.enter();
        bind()?
    };
    let (stop_tx, stop_rx) = oneshot::channel();
    let thread = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            rt.block_on(serve(listener, stop_rx));
            rt.shutdown_background();
        })?;
    Ok((
        info,
        Running {
            stop: Some(stop_tx),
            thread: Some(thread),
        },
    ))
}

/// Binds `addr` (port 0: any free port) as a tokio listener: for [`spawn`]'s `bind`.
pub fn bind(addr: SocketAddr) -> std::io::Result<(SocketAddr, TcpListener)> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    Ok((bound, TcpListener::from_std(listener)?))
}

/// Accepts connections until `stop` fires, handing each to `each` (on the runtime, so it may
/// spawn a task for it) and then waiting `pause` (a slow acceptor, for tests; zero otherwise).
/// A failed accept (a connection reset before it was taken, too many open files) is skipped
/// after [`ACCEPT_BACKOFF`]: out of descriptors, accepting again at once would fail at once,
/// and the loop would spin on a core until one is freed.
pub async fn accept_loop<F>(listener: TcpListener, mut stop: Stop, pause: Duration, mut each: F)
where
    F: FnMut(TcpStream, SocketAddr),
{
    loop {
        let (sock, peer) = tokio::select! {
            _ = &mut stop => break,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(_) => {
                    tokio::select! {
                        _ = &mut stop => break,
                        () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                    }
                }
            },
        };
        each(sock, peer);
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
}

/// [`spawn`] with [`bind`] and [`accept_loop`]: the common server.
pub fn serve<F>(
    name: &str,
    threads: usize,
    addr: SocketAddr,
    each: F,
) -> std::io::Result<(SocketAddr, Running)>
where
    F: FnMut(TcpStream, SocketAddr) + Send + 'static,
{
    spawn(
        name,
        threads,
        || bind(addr),
        move |listener, stop| accept_loop(listener, stop, Duration::ZERO, each),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn serves_until_dropped_and_then_refuses() {
        let seen = Arc::new(AtomicUsize::new(0));
        let s = seen.clone();
        let (addr, running) = serve(
            "accept-test",
            1,
            ([127, 0, 0, 1], 0).into(),
            move |mut sock, _| {
                s.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    use tokio::io::AsyncWriteExt;
                    let _ = sock.write_all(b"hi").await;
                });
            },
        )
        .expect("binds");
        let mut c = std::net::TcpStream::connect(addr).expect("connects");
        let mut got = [0u8; 2];
        c.read_exact(&mut got).expect("reads");
        assert_eq!(&got, b"hi");
        let _ = c.write_all(b"x");
        drop(running);
        assert_eq!(seen.load(Ordering::Relaxed), 1);
        // The listener is closed with the runtime: nothing accepts any more.
        assert!(std::net::TcpStream::connect(addr).is_err());
    }
}
