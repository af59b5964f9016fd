//! The command line as the user types it (raw values, validated in `resolve`).

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "brink",
    version,
    about = "How much load can this service take, where does it break, and why?"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run one load test against a URL: closed (-c), open (--rate) or staged (--stages) load.
    Run(Box<RunArgs>),
    /// Start a built-in service with a real bottleneck on 127.0.0.1 and load it.
    Demo(DemoArgs),
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Target URL (http:// or https://).
    pub url: String,
    /// Connections: the closed-model concurrency, or the open model's pool (max in flight).
    #[arg(short = 'c', long = "connections", allow_hyphen_values = true)]
    pub connections: Option<String>,
    /// Run for this long (e.g. 30s, 2m). Default 10s unless -n is given.
    #[arg(short = 'd', long = "duration", allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Send exactly this many requests in total.
    #[arg(short = 'n', long = "requests", allow_hyphen_values = true)]
    pub requests: Option<String>,
    /// Open model: requests per second at fixed intended times (e.g. 5000 or 5000/s).
    #[arg(long, allow_hyphen_values = true)]
    pub rate: Option<String>,
    /// Stages DUR:TARGET,...: targets with /s are rates (open), bare numbers connections (closed).
    #[arg(long)]
    pub stages: Option<String>,
    /// HTTP method.
    #[arg(short = 'm', long = "method", default_value = "GET")]
    pub method: String,
    /// Request header 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Request body.
    #[arg(short = 'b', long = "body", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Read the request body from a file.
    #[arg(long = "body-file")]
    pub body_file: Option<PathBuf>,
    /// Per-request timeout, from the send to the end of the response.
    #[arg(long, default_value = "30s")]
    pub timeout: String,
    /// Timeout for opening a connection (TCP and TLS handshake).
    #[arg(long = "connect-timeout", default_value = "5s")]
    pub connect_timeout: String,
    /// Open a new connection for every request.
    #[arg(long = "no-keepalive")]
    pub no_keepalive: bool,
    /// Use HTTP/2 (h2c prior knowledge for http://, ALPN for https://).
    #[arg(long)]
    pub http2: bool,
    /// Accept any TLS certificate.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Trust the CA certificates in this PEM file.
    #[arg(long)]
    pub cacert: Option<PathBuf>,
    /// Statuses that count as success, e.g. 200-299,404 (default: below 400).
    #[arg(long = "ok-status")]
    pub ok_status: Option<String>,
    /// Worker threads (default: one per core, capped by connections).
    #[arg(long)]
    pub threads: Option<usize>,
    /// How long requests in flight at the end of the schedule may take to finish.
    #[arg(long, default_value = "5s")]
    pub grace: String,
    /// Write the result (schema brink.result/v1) to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// How long to load the demo service.
    #[arg(short = 'd', long = "duration", default_value = "8s")]
    pub duration: String,
    /// Write the result to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}
