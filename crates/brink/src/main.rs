//! The `brink` binary: parse the command line, run the command, map the outcome to an exit code.

mod cli;
mod commands;
mod exit;
mod resolve;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let code = match commands::dispatch(cli.command) {
        Ok(code) => code,
        Err(fail) => {
            if !fail.message.is_empty() {
                eprintln!("error: {}", fail.message);
            }
            fail.code
        }
    };
    std::process::exit(code);
}
