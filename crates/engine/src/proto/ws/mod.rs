//! WebSocket (RFC 6455): the framing ([`frame`], sans-I/O and strict), the opening handshake
//! ([`handshake`]) and the tokio worker's [`session`]: one upgraded connection per slot, a
//! message sent and its answer awaited per request.

pub mod answer;
pub mod frame;
pub mod handshake;
pub mod machine;
#[cfg(test)]
mod machine_cuts;
pub mod session;
