//! `brink serve`: checks the address and token, starts the web UI on the history, prints its
//! URL (with the token when there is one) and serves until interrupted.

use crate::cli::ServeArgs;
use crate::emitln;
use crate::exit::Fail;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub fn serve_cmd(a: &ServeArgs) -> Result<i32, Fail> {
    let bind: IpAddr = a
        .bind
        .parse()
        .map_err(|_| Fail::input(format!("--bind {}: not an IP address", a.bind)))?;
    if a.token.as_deref().is_some_and(|t| t.len() < 8) {
        return Err(Fail::input("--token: use at least 8 characters"));
    }
    let token = match (&a.token, bind.is_loopback()) {
        (Some(t), _) => Some(t.clone()),
        (None, true) => None,
        (None, false) => Some(serve::generate_token().map_err(Fail::input)?),
    };
    let history = a
        .history
        .clone()
        .or_else(history::default_path)
        .ok_or_else(|| Fail::input("no history: set --history PATH or BRINK_HISTORY"))?;
    let server = serve::start(serve::Config {
        bind,
        port: a.port,
        token,
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
    if !bind.is_loopback() {
        emitln!("listening on {bind}: every request needs the token in that URL");
    }
    emitln!("Ctrl-C stops it.");
    while !interrupt.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(server);
    Ok(0)
}
