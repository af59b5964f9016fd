//! The `brink` binary: parse the command line, run the command, map the outcome to an exit code.

mod cli;
mod commands;
mod exit;
mod resolve;

use clap::Parser;
use std::io::Write;

fn main() {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            // Usage errors are one line (clap's own first line), exit 2.
            let text = e.render().to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            let _ = writeln!(std::io::stderr(), "{} (see 'brink --help')", first.trim());
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
