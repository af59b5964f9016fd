//! The command line's WebSocket request: `ws://` and `wss://` URLs send `--message` (or
//! `--message-file`) on each upgraded connection and wait for each answer. HTTP's and gRPC's
//! request flags are refused there, and `--message` anywhere else, so a flag never goes
//! silently unused.

use crate::cli::LoadArgs;
use crate::exit::Fail;
use engine::workload::WsStep;
use engine::{Request, RequestSpec, Target};
use std::time::Duration;

/// The request a `ws://` URL sends: a GET upgrade to the URL's path with the `-H` headers,
/// then the message (templated as a body is).
pub fn request(a: &LoadArgs, target: &Target) -> Result<Request, Fail> {
    crate::grpc_call::refuse_flags(a, false)?;
    let http_only = [
        (a.method.is_some(), "-m/--method"),
        (a.body.is_some(), "-b/--body"),
        (a.body_file.is_some(), "--body-file"),
        (a.http2, "--http2"),
    ];
    if let Some((_, flag)) = http_only.iter().find(|(given, _)| *given) {
        return Err(Fail::input(format!(
            "{flag} applies to http:// and https:// URLs; a ws:// URL sends --message"
        )));
    }
    let message = match (&a.message, &a.message_file) {
        (Some(m), _) => Some(m.as_bytes().to_vec()),
        (None, Some(p)) => Some(
            model::input::read(p).map_err(|e| Fail::input(format!("--message-file {e}")))?,
        ),
        // Held connections ping when they have no message; a subscription may send none.
        (None, None) if a.hold || a.subscribe => None,
        (None, None) => {
            return Err(Fail::input(
                "a ws:// URL needs the message it sends: --message TEXT or --message-file FILE (or --hold to hold connections that ping)",
            ))
        }
    };
    let ws = match (a.subscribe, &message) {
        (true, _) => WsStep::Await,
        (false, None) => WsStep::Ping,
        (false, Some(_)) => WsStep::Message,
    };
    let body = message.unwrap_or_default();
    let mut req = RequestSpec::new(target.clone(), "GET", &a.headers, body.into())
        .map_err(|e| Fail::input(e.to_string()))?
        .request();
    req.headers = crate::grpc_call::flag_headers(a)?;
    if let Some(m) = &a.message {
        // `--message` is templated as -H is ({{seq}}, {{uuid}}, ...); a file goes as it is.
        let names = engine::workload::template::Names {
            data: &[],
            vars: &[],
            env: &model::env::var,
        };
        req.body = engine::workload::template::Template::compile(m, &names)
            .map_err(|e| Fail::input(format!("--message: {}", e.message)))?;
    }
    req.ws = ws;
    req.sent_at = match &a.sent_at {
        Some(p) => Some(
            serde_json_path::JsonPath::parse(p)
                .map_err(|e| Fail::input(format!("--sent-at {p}: {e}")))?,
        ),
        None => None,
    };
    Ok(req)
}

/// `--every` (and `--hold`'s default of one second): the least time between a connection's
/// messages; closed model only.
pub fn every(a: &LoadArgs, load: &engine::Load, target: &Target) -> Result<Option<Duration>, Fail> {
    if target.protocol != engine::Protocol::Ws {
        refuse_flags(a)?;
    }
    let every = match (&a.every, a.hold) {
        (Some(e), _) => Some(plan::load::positive_duration("--every", e).map_err(Fail::input)?),
        (None, true) => Some(HOLD_EVERY),
        (None, false) => None,
    };
    if a.subscribe && !matches!(load, engine::Load::Closed { .. }) {
        return Err(Fail::input(
            "--subscribe takes what the server pushes on each of the -c connections; the server sets the rate, not --rate",
        ));
    }
    if every.is_some() && !matches!(load, engine::Load::Closed { .. }) {
        return Err(Fail::input(
            "--hold and --every pace each connection of the closed model (-c); with --rate the schedule sets the pace",
        ));
    }
    Ok(every)
}

/// How often a held connection pings when `--every` is not given.
const HOLD_EVERY: Duration = Duration::from_secs(1);

/// WebSocket flags given for a URL that is not a WebSocket.
pub fn refuse_flags(a: &LoadArgs) -> Result<(), Fail> {
    if a.message.is_some()
        || a.message_file.is_some()
        || a.hold
        || a.every.is_some()
        || a.subscribe
        || a.sent_at.is_some()
    {
        return Err(Fail::input(
            "--message, --message-file, --hold, --every, --subscribe and --sent-at apply to ws:// and wss:// URLs",
        ));
    }
    Ok(())
}
