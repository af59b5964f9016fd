//! The protocols brink speaks, together: HTTP/1.1 ([`h1`]: the fast sans-I/O reader both
//! loops drive, and the async client for TLS) and HTTP/2 ([`h2`], through hyper), whose
//! request bodies ([`body`]) also carry gRPC's streamed messages; gRPC's status and messages
//! are read on the HTTP/2 path.

pub mod body;
pub mod h1;
pub mod h2;
pub mod h2c;
pub mod reply;
