//! A raw HTTP/1.1 server: parses requests with `httparse` and writes answers byte by byte, so a
//! test can produce exactly the framing or fault it needs (chunked, close-delimited, a dropped
//! connection, a truncated body, a hang).

use crate::{spawn_server, Counters, Handler, Options, Reply, Req, Server};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Semaphore;

pub fn serve(opts: Options, handler: Handler) -> std::io::Result<Server> {
    let slots = opts.slots.map(|k| Arc::new(Semaphore::new(k)));
    let seq = Arc::new(AtomicU64::new(0));
    spawn_server(&opts, false, move |sock, counters, acceptor| {
        let _ = sock.set_nodelay(true);
        let ctx = Ctx {
            early: opts.answer_before_body,
            handler: handler.clone(),
            counters: counters.clone(),
            slots: slots.clone(),
            seq: seq.clone(),
        };
        let acceptor = acceptor.clone();
        let delay = opts.handshake_delay;
        tokio::spawn(async move {
            match acceptor {
                Some(a) => {
                    tokio::time::sleep(delay).await;
                    if let Ok(tls) = a.accept(sock).await {
                        connection(tls, ctx).await;
                    }
                }
                None => connection(sock, ctx).await,
            }
        });
    })
}

struct Ctx {
    early: bool,
    handler: Handler,
    counters: Arc<Counters>,
    slots: Option<Arc<Semaphore>>,
    seq: Arc<AtomicU64>,
}

struct Parsed {
    method: String,
    path: String,
    head_len: usize,
    body_len: usize,
    close: bool,
    headers: Vec<(String, String)>,
}

fn parse(buf: &[u8]) -> Result<Option<Parsed>, ()> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(()),
    };
    let mut body_len = 0;
    let mut close = req.version == Some(0);
    let mut kept = Vec::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        let v = String::from_utf8_lossy(h.value);
        kept.push((h.name.to_string(), v.to_string()));
        if h.name.eq_ignore_ascii_case("content-length") {
            body_len = v.trim().parse().map_err(|_| ())?;
        } else if h.name.eq_ignore_ascii_case("connection") {
            close = v.eq_ignore_ascii_case("close");
        }
    }
    Ok(Some(Parsed {
        method: req.method.unwrap_or("GET").to_string(),
        path: req.path.unwrap_or("/").to_string(),
        head_len,
        body_len,
        close,
        headers: kept,
    }))
}

async fn connection<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, ctx: Ctx) {
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    loop {
        let p = loop {
            match parse(&buf) {
                Ok(Some(p)) if ctx.early => return answer_early(s, &ctx, p).await,
                Ok(Some(p)) if buf.len() >= p.head_len + p.body_len => break p,
                Ok(_) => match s.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                },
                Err(()) => {
                    let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
                    return;
                }
            }
        };
        ctx.counters.requests.fetch_add(1, Ordering::Relaxed);
        let seq = ctx.seq.fetch_add(1, Ordering::Relaxed);
        let body = &buf[p.head_len..p.head_len + p.body_len];
        let reply = (ctx.handler)(&Req {
            method: &p.method,
            path: &p.path,
            seq,
            headers: &p.headers,
            body,
        });
        buf.drain(..p.head_len + p.body_len);
        ctx.counters.in_flight.fetch_add(1, Ordering::Relaxed);
        let keep = answer(&mut s, &ctx, reply, p.method == "HEAD", p.close).await;
        ctx.counters.in_flight.fetch_sub(1, Ordering::Relaxed);
        if !keep {
            let _ = s.shutdown().await;
            return;
        }
    }
}

/// Answers from the head alone, then drains the body slowly for a while and closes.
async fn answer_early<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, ctx: &Ctx, p: Parsed) {
    ctx.counters.requests.fetch_add(1, Ordering::Relaxed);
    let seq = ctx.seq.fetch_add(1, Ordering::Relaxed);
    let reply = (ctx.handler)(&Req {
        method: &p.method,
        path: &p.path,
        seq,
        headers: &p.headers,
        body: &[],
    });
    answer(&mut s, ctx, reply, p.method == "HEAD", true).await;
    let until = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut sink = vec![0u8; 16 * 1024];
    while tokio::time::Instant::now() < until {
        match tokio::time::timeout_at(until, s.read(&mut sink)).await {
            Ok(Ok(n)) if n > 0 => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            _ => break,
        }
    }
    let _ = s.shutdown().await;
}

/// Writes the answer; returns whether the connection stays open.
async fn answer<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    ctx: &Ctx,
    reply: Reply,
    head: bool,
    client_close: bool,
) -> bool {
    match reply {
        Reply::Full {
            status,
            body,
            delay,
            slot,
            close,
        } => {
            let _permit = slot_for(ctx, slot).await;
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let close = close || client_close;
            let mut out = format!(
                "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\n{}\r\n",
                if status == 200 { "OK" } else { "Status" },
                body.len(),
                if close { "Connection: close\r\n" } else { "" }
            )
            .into_bytes();
            if !head {
                out.extend_from_slice(&body);
            }
            s.write_all(&out).await.is_ok() && !close
        }
        Reply::Endless { head, filler } => {
            let block: Vec<u8> = filler.iter().copied().cycle().take(64 * 1024).collect();
            let until = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
            if s.write_all(&head).await.is_ok() {
                while tokio::time::Instant::now() < until && s.write_all(&block).await.is_ok() {}
            }
            false
        }
        reply @ (Reply::Events { .. } | Reply::Tokens { .. } | Reply::Feed { .. }) => {
            let Some(c) = reply.cadence() else {
                return false;
            };
            let _permit = slot_for(ctx, c.slot).await;
            let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
            if s.write_all(head).await.is_err() {
                return false;
            }
            let start = tokio::time::Instant::now();
            let chunk = |event: &str| format!("{:x}\r\n{event}\r\n", event.len());
            for (n, event) in (0u32..).zip(&c.events) {
                // On a schedule from the head, so the cadence does not drift with writes.
                tokio::time::sleep_until(start + c.first + c.every * n).await;
                if s.write_all(chunk(&crate::stamped(event)).as_bytes())
                    .await
                    .is_err()
                {
                    return false;
                }
            }
            if !c.tail.is_empty() && s.write_all(chunk(&c.tail).as_bytes()).await.is_err() {
                return false;
            }
            s.write_all(b"0\r\n\r\n").await.is_ok() && !client_close
        }
        Reply::Chunked(chunks) => {
            let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            for c in chunks.iter().filter(|c| !c.is_empty()) {
                out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
                out.extend_from_slice(c);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
            s.write_all(&out).await.is_ok() && !client_close
        }
        Reply::CloseDelimited(body) => {
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
                .await;
            let _ = s.write_all(&body).await;
            false
        }
        Reply::Raw { bytes, close } => s.write_all(&bytes).await.is_ok() && !close && !client_close,
        Reply::Stray { body, after, stray } => {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            let ok = s.write_all(head.as_bytes()).await.is_ok() && s.write_all(&body).await.is_ok();
            tokio::time::sleep(after).await;
            ok && s.write_all(&stray).await.is_ok() && !client_close
        }
        Reply::Drop => false,
        Reply::Hang => {
            let mut sink = [0u8; 1024];
            while let Ok(n) = s.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
            false
        }
        Reply::Partial => {
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                .await;
            false
        }
    }
}

/// One of the server's service slots when `slot` asks for one and the server has them
/// (waiting, counted as queued, until one is free); held until dropped.
async fn slot_for(ctx: &Ctx, slot: bool) -> Option<tokio::sync::OwnedSemaphorePermit> {
    match (&ctx.slots, slot) {
        (Some(sem), true) => {
            ctx.counters.queued.fetch_add(1, Ordering::Relaxed);
            let p = sem.clone().acquire_owned().await.ok();
            ctx.counters.queued.fetch_sub(1, Ordering::Relaxed);
            p
        }
        _ => None,
    }
}
