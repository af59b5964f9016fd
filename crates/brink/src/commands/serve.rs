//! `brink serve`: checks the address and token, starts the web UI on the history, prints its
//! URL with the token and serves until interrupted. The token is always on: loopback is not a
//! boundary between the users of one machine, so without it any of them could read or delete
//! the history.

use crate::cli::ServeArgs;
use crate::emitln;
use crate::exit::Fail;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The environment variable that may carry the token instead of `--token-file`.
const TOKEN_ENV: &str = "BRINK_SERVE_TOKEN";

pub fn serve_cmd(a: &ServeArgs) -> Result<i32, Fail> {
    let bind: IpAddr = a
        .bind
        .parse()
        .map_err(|_| Fail::input(format!("--bind {}: not an IP address", a.bind)))?;
    let token = token(a)?;
    let history = a
        .history
        .clone()
        .or_else(history::default_path)
        .ok_or_else(|| Fail::input("no history: set --history PATH or BRINK_HISTORY"))?;
    let server = serve::start(serve::Config {
        bind,
        port: a.port,
        token: token.clone(),
        history: history.clone(),
        allowed_hosts: a.allow_host.clone(),
    })
    .map_err(Fail::input)?;
    let interrupt = crate::signals::install_signals()?;
    emitln!(
        "brink serve: {} (history {})",
        server.url(),
        history.display()
    );
    emitln!("Every request needs the token in that URL (or Authorization: Bearer TOKEN).");
    emitln!("Ctrl-C stops it.");
    while !interrupt.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(server);
    Ok(0)
}

/// The token: `--token-file`, else `$BRINK_SERVE_TOKEN`, else a fresh one. Never from the
/// command line, where every user of the machine can read it.
fn token(a: &ServeArgs) -> Result<String, Fail> {
    if a.token.is_some() {
        return Err(Fail::input(format!(
            "--token: every user of this machine can read a command line; put the token in a file (--token-file FILE) or in ${TOKEN_ENV}"
        )));
    }
    let given = match &a.token_file {
        Some(f) => {
            use std::os::unix::fs::MetadataExt;
            let open = std::fs::metadata(f).is_ok_and(|m| m.mode() & 0o077 != 0);
            if open {
                return Err(Fail::input(format!(
                    "--token-file {}: other users may read it: chmod 600 {}",
                    f.display(),
                    f.display()
                )));
            }
            Some(fleet::trust::read_token(f).map_err(Fail::input)?)
        }
        None => std::env::var(TOKEN_ENV)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty()),
    };
    match given {
        Some(t) if t.len() < 16 => Err(Fail::input(format!(
            "the token ({}) is {} characters: use at least 16",
            a.token_file
                .as_ref()
                .map_or_else(|| format!("${TOKEN_ENV}"), |f| f.display().to_string()),
            t.len()
        ))),
        Some(t) => Ok(t),
        None => serve::generate_token().map_err(Fail::input),
    }
}
