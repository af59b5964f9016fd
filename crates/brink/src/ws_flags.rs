//! The command line's WebSocket request: `ws://` and `wss://` URLs send `--message` (or
//! `--message-file`) on each upgraded connection and wait for each answer. HTTP's and gRPC's
//! request flags are refused there, and `--message` anywhere else, so a flag never goes
//! silently unused.

use crate::cli::LoadArgs;
use crate::exit::Fail;
use engine::workload::{Extractor, WsStep};
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
        (a.http3(), "--http3"),
    ];
    if let Some((_, flag)) = http_only.iter().find(|(given, _)| *given) {
        let urls = match *flag {
            "--http3" => "https:// URLs",
            _ => "http:// and https:// URLs",
        };
        return Err(Fail::input(format!(
            "{flag} applies to {urls}; a WebSocket URL sends --message"
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
    let has_message = message.is_some();
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
    // Named as the run is: what it loads is a WebSocket, not a GET.
    req.name = format!("WS {}", target.path);
    req.ws = ws;
    req.sent_at = match &a.sent_at {
        Some(_) if !a.subscribe => {
            return Err(Fail::input(
                "--sent-at reads the send time of the messages a --subscribe connection takes: add --subscribe",
            ))
        }
        Some(p) => Some(crate::stream_flags::sent_at_path(p)?),
        None => None,
    };
    req.match_id = match &a.match_id {
        Some(m) if !has_message => {
            return Err(Fail::input(format!(
                "--match-id {m}: it finds the answer to --message by its id; give --message"
            )))
        }
        Some(m) => Some(match_id(m).map_err(|e| Fail::input(format!("--match-id {m}: {e}")))?),
        None => None,
    };
    Ok(req)
}

/// `--match-id`: a JSON path when it starts with `$`, else a regex.
pub fn match_id(text: &str) -> Result<Extractor, String> {
    if text.starts_with('$') {
        serde_json_path::JsonPath::parse(text)
            .map(Extractor::Json)
            .map_err(|e| e.to_string())
    } else {
        regex::bytes::Regex::new(text)
            .map(Extractor::Regex)
            .map_err(|e| e.to_string())
    }
}

/// `--every` (else the plan's `every:`, else `--hold`'s default of one second): the least
/// time between a connection's messages; closed model only.
pub fn every(
    a: &LoadArgs,
    load: &engine::Load,
    target: &Target,
    planned: Option<Duration>,
) -> Result<Option<Duration>, Fail> {
    if target.protocol != engine::Protocol::Ws {
        refuse_flags(a, target.protocol.is_http())?;
        if planned.is_some() {
            return Err(Fail::input(
                "the plan's every: paces WebSocket connections: it goes with a ws:// or wss:// target",
            ));
        }
        return Ok(None);
    }
    let every = match (&a.every, a.hold) {
        (Some(e), _) => Some(plan::load::positive_duration("--every", e).map_err(Fail::input)?),
        (None, _) if planned.is_some() => planned,
        (None, true) => Some(HOLD_EVERY),
        (None, false) => None,
    };
    if a.subscribe && !matches!(load, engine::Load::Closed { .. }) {
        return Err(Fail::input(
            "--subscribe takes what the server pushes on each of the -c connections; the server sets the rate, not --rate",
        ));
    }
    if a.subscribe && a.every.is_some() {
        return Err(Fail::input(
            "--every paces what each connection sends; a --subscribe connection sends once and takes what the server pushes",
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

/// WebSocket flags given for a URL that is not a WebSocket (`http`: an `http(s)://` URL,
/// whose event streams `--hold` and `--sent-at` also apply to).
pub fn refuse_flags(a: &LoadArgs, http: bool) -> Result<(), Fail> {
    if a.message.is_some()
        || a.message_file.is_some()
        || a.every.is_some()
        || a.subscribe
        || a.match_id.is_some()
    {
        return Err(Fail::input(
            "--message, --message-file, --every, --subscribe and --match-id apply to ws:// and wss:// URLs",
        ));
    }
    if !http && (a.hold || a.sent_at.is_some()) {
        return Err(Fail::input(
            "--hold and --sent-at apply to ws:// and wss:// URLs, and to event streams at http:// and https:// URLs",
        ));
    }
    Ok(())
}
