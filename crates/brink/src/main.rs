//! The `brink` binary: parse the command line, run the command, map the outcome to an exit code.

mod cli;
mod commands;
mod connect_flags;
mod console;
mod distribute;
mod exit;
mod grpc_call;
mod h3_auto;
mod k8s;
mod live_metrics;
mod llm_flags;
mod logmark;
mod output;
mod progress;
mod proxy_check;
mod record;
mod resolve;
mod signals;
mod sinks;
mod stream_flags;
mod trace_flags;
mod ws_flags;

use clap::Parser;
use std::io::Write;

/// Raises the open-file soft limit to the hard limit: a thousand connections need a thousand
/// descriptors, and the common default soft limit is 1024.
fn raise_fd_limit() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

fn main() {
    raise_fd_limit();
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = write!(std::io::stderr(), "{}", e.render());
            std::process::exit(exit::INPUT);
        }
        Err(e) => {
            // Usage errors are one line: clap's first paragraph, joined. Exit 2.
            let text = e.render().to_string();
            let first: Vec<&str> = text
                .trim()
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(str::trim)
                .collect();
            let hint = cli::peer_hint(&std::env::args().collect::<Vec<_>>());
            let _ = writeln!(
                std::io::stderr(),
                "{}{} (see 'brink --help')",
                first.join(" "),
                hint.map_or(String::new(), |h| format!(": {h}"))
            );
            std::process::exit(exit::INPUT);
        }
    };
    let code = match commands::dispatch(cli.command) {
        Ok(code) => code,
        Err(fail) => {
            if !fail.message.is_empty() {
                let _ = writeln!(std::io::stderr(), "error: {}", fail.message);
            }
            fail.code
        }
    };
    std::process::exit(code);
}
