//! HTTP/2 over cleartext TCP (h2c, prior knowledge) without hyper: a sans-I/O client
//! connection ([`client`]) over the frame layer ([`frame`]), driven by the epoll worker
//! (`worker::h2poll`) as HTTP/1.1 is, so a request costs a share of one `send`, one `recv` and
//! one `epoll_wait` with many streams in each. Plain requests take this path; gRPC, TLS and
//! responses kept for extraction take hyper's (`proto::h2`).

pub mod client;
#[cfg(test)]
mod client_cuts;
mod fields;
pub mod frame;
mod hpack;
