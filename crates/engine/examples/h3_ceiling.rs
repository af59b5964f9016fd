//! The HTTP/3 efficiency ceiling for brink's QUIC stack on a given machine: a closed-loop
//! client on quinn (the QUIC library brink uses) that does only what any HTTP/3 client must
//! over it (its control stream with SETTINGS, a precomputed HEADERS frame per request stream,
//! reading each answer to its end) and measures nothing; it skips QPACK and frame decoding,
//! which a real client cannot. `bench/h3.sh` runs it beside brink and oha: its requests per
//! CPU-second bound what a generator on quinn can reach against the same server.
//!
//! `cargo run --release -p engine --example h3_ceiling -- CONNS STREAMS SECONDS [ADDR]`
//! ADDR must be a loopback address (default 127.0.0.1:18443, `bench/h3.sh`'s server); the
//! loop stops after SECONDS.

use std::error::Error;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

type Res<T> = Result<T, Box<dyn Error>>;

/// The client's control stream: its type (0x00) and an empty SETTINGS frame.
const CONTROL: &[u8] = b"\x00\x04\x00";

fn main() {
    if let Err(e) = run() {
        eprintln!("h3_ceiling: {e}");
        std::process::exit(2);
    }
}

/// A GET of `/` as a HEADERS frame, QPACK with the static table only: `:method GET` (17),
/// `:scheme https` (23), `:path /` (1), and `:authority` as a literal named by entry 0.
fn request(authority: &str) -> Res<Bytes> {
    let mut block = vec![0x00, 0x00, 0xc0 | 17, 0xc0 | 23, 0xc0 | 1, 0x50];
    let len = u8::try_from(authority.len()).ok().filter(|l| *l < 0x7f);
    block.push(len.ok_or("authority too long")?);
    block.extend_from_slice(authority.as_bytes());
    let mut frame = vec![
        0x01,
        u8::try_from(block.len()).map_err(|_| "block too long")?,
    ];
    frame.extend_from_slice(&block);
    Ok(Bytes::from(frame))
}

fn run() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let mut next = |default: &str| args.next().unwrap_or_else(|| default.to_string());
    let conns: usize = next("4").parse()?;
    let streams: usize = next("50").parse()?;
    let seconds: u64 = next("5").parse()?;
    let addr: SocketAddr = next("127.0.0.1:18443").parse()?;
    if !addr.ip().is_loopback() {
        return Err("the ceiling only loads loopback addresses".into());
    }
    let opts = engine::TlsOptions {
        insecure: true,
        ..Default::default()
    };
    let tls = engine::tls::client_config(&opts, engine::Protocol::Http3)?;
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let done = rt.block_on(async move {
        let mut endpoint = quinn::Endpoint::client(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(quic)));
        let req = request(&addr.to_string())?;
        let count = Rc::new(std::cell::Cell::new(0u64));
        let end = Instant::now() + Duration::from_secs(seconds);
        let local = tokio::task::LocalSet::new();
        for _ in 0..conns {
            let conn = endpoint.connect(addr, "localhost")?.await?;
            let mut control = conn.open_uni().await?;
            control.write_all(CONTROL).await?;
            local.spawn_local(async move {
                let _control = control;
                tokio::time::sleep_until(end.into()).await;
            });
            for _ in 0..streams {
                let (conn, req, count) = (conn.clone(), req.clone(), count.clone());
                local.spawn_local(async move {
                    while Instant::now() < end {
                        let Ok((mut send, mut recv)) = conn.open_bi().await else {
                            return;
                        };
                        if send.write_chunk(req.clone()).await.is_err() || send.finish().is_err() {
                            return;
                        }
                        loop {
                            match recv.read_chunk(4096, true).await {
                                Ok(Some(_)) => {}
                                Ok(None) => break,
                                Err(_) => return,
                            }
                        }
                        count.set(count.get() + 1);
                    }
                });
            }
        }
        local.await;
        Ok::<_, Box<dyn Error>>(count.get())
    })?;
    println!("{done} requests in {seconds} s");
    Ok(())
}
