//! The protocols brink speaks, together, one folder each: HTTP/1.1 ([`h1`]: the fast
//! sans-I/O reader both epoll loops drive, and the async client for TLS), HTTP/2 through
//! hyper ([`h2`], gRPC included: its status and messages are read there, and its streamed
//! messages go out in [`body`]), brink's own h2c client ([`h2c`]) for the epoll loop, and
//! WebSocket ([`ws`]: an HTTP/1.1 upgrade, then messages); Server-Sent Events are read from
//! any of their bodies by [`sse`] and timed by [`events`], token streams (`--llm`) by [`llm`];
//! a pushed message's or event's delivery delay is read by [`sent_at`]; HPACK's and QPACK's
//! Huffman-coded strings by [`huffman`].
//! The tokio worker reaches any of them through one seam, [`session::Session`], and
//! [`connect`] says which one an opened connection speaks.

pub mod body;
pub mod connect;
pub mod events;
pub mod h1;
pub mod h2;
pub mod h2c;
pub mod h3;
pub mod huffman;
pub mod llm;
pub mod reply;
pub mod sent_at;
pub mod session;
pub mod sse;
pub mod ws;
