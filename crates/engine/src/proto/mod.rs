//! The protocols brink speaks, together: HTTP/1.1 ([`h1`]: the fast sans-I/O reader both
//! loops drive, and the async client for TLS) and HTTP/2 ([`h2`], through hyper). gRPC will sit
//! here too, on top of the HTTP/2 path.

pub mod h1;
pub mod h2;
