//! Connection set-up, together: TCP with a connect timeout, TLS (rustls + ring) with ALPN, and
//! the dispatch to the negotiated protocol ([`conn`]); the client TLS configuration ([`tls`]).

pub mod conn;
pub mod tls;
