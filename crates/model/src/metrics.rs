//! Names of the server figures brink observes, shared by the sources that take them (`/proc`,
//! Prometheus), the result file that stores them and the diagnosis that reads them, so all of
//! them use one name per figure.

/// Server CPU, in % of one core.
pub const CPU: &str = "srv cpu";
/// Server resident memory, in bytes.
pub const RSS: &str = "srv rss";
/// Server threads.
pub const THREADS: &str = "srv threads";
/// Server open file descriptors.
pub const FDS: &str = "srv fds";
/// Server sockets.
pub const SOCKETS: &str = "srv sockets";
