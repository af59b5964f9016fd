//! The command line's WebSocket request: `ws://` and `wss://` URLs send `--message` (or
//! `--message-file`) on each upgraded connection and wait for each answer. HTTP's and gRPC's
//! request flags are refused there, and `--message` anywhere else, so a flag never goes
//! silently unused.

use crate::cli::LoadArgs;
use crate::exit::Fail;
use engine::{Request, RequestSpec, Target};

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
        (Some(m), _) => m.as_bytes().to_vec(),
        (None, Some(p)) => {
            model::input::read(p).map_err(|e| Fail::input(format!("--message-file {e}")))?
        }
        (None, None) => {
            return Err(Fail::input(
                "a ws:// URL needs the message it sends: --message TEXT or --message-file FILE",
            ))
        }
    };
    let mut req = RequestSpec::new(target.clone(), "GET", &a.headers, message.into())
        .map_err(|e| Fail::input(e.to_string()))?
        .request();
    req.headers = crate::grpc_call::flag_headers(a)?;
    Ok(req)
}

/// `--message` and `--message-file` given for a URL that is not a WebSocket.
pub fn refuse_flags(a: &LoadArgs) -> Result<(), Fail> {
    if a.message.is_some() || a.message_file.is_some() {
        return Err(Fail::input(
            "--message and --message-file apply to ws:// and wss:// URLs",
        ));
    }
    Ok(())
}
