//! `grpc://` and `grpcs://` URLs: `--call`, `--proto`, `-I`, `--data` and `-H` (metadata) become
//! the one request every call sends (a POST of the framed message with gRPC's headers), checked
//! before any load: a `.proto` that does not compile, an unknown method or data that does not
//! fit the message is one line and exit 2. `--timeout` is sent as the call's deadline
//! (`grpc-timeout`). `--ok-codes` says which status codes succeed.

use crate::cli::RunArgs;
use crate::exit::Fail;
use model::Target;

/// What every call sends: method, headers, body. `target`'s path becomes the method's.
pub fn request(a: &RunArgs, target: &mut Target) -> Result<(String, Vec<String>, Vec<u8>), Fail> {
    if a.method.is_some() || a.body.is_some() || a.body_file.is_some() {
        return Err(Fail::input(
            "-m, -b and --body-file apply to HTTP; a gRPC call is --call with --data (JSON)",
        ));
    }
    let call = a
        .call
        .as_deref()
        .ok_or_else(|| Fail::input("a grpc:// URL needs --call package.Service/Method"))?;
    let data = a.data.as_deref().unwrap_or("{}");
    let prepared = grpc::prepare(&sources(a), call, data).map_err(Fail::input)?;
    target.path = prepared.path;
    // The server learns the deadline the call is held to (`--timeout`, 30 s by default).
    let timeout = match &a.timeout {
        Some(t) => model::parse_duration(t).map_err(|e| Fail::input(format!("--timeout: {e}")))?,
        None => crate::resolve::DEFAULT_TIMEOUT,
    };
    let mut headers = vec![
        "content-type: application/grpc".to_string(),
        "te: trailers".to_string(),
        format!(
            "grpc-timeout: {}m",
            timeout.as_millis().clamp(1, 99_999_999)
        ),
    ];
    headers.extend(a.headers.iter().cloned());
    Ok(("POST".to_string(), headers, prepared.frame))
}

/// `--proto`, `-I` and `--protoset`.
fn sources(a: &RunArgs) -> grpc::Sources {
    grpc::Sources {
        protos: a.proto.clone(),
        includes: a.import_paths.clone(),
        protosets: a.protosets.clone(),
    }
}

/// `--list`: the services and methods the definitions hold; sends nothing.
pub fn list(a: &RunArgs) -> Result<i32, Fail> {
    let pool = grpc::pool(&sources(a)).map_err(Fail::input)?;
    crate::console::emit(&grpc::list(&pool));
    Ok(0)
}

/// Refuses gRPC flags on an HTTP URL.
pub fn refuse_flags(a: &RunArgs) -> Result<(), Fail> {
    if a.call.is_some()
        || !a.proto.is_empty()
        || !a.protosets.is_empty()
        || a.data.is_some()
        || a.ok_codes.is_some()
    {
        return Err(Fail::input(
            "--call, --proto, --protoset, --data and --ok-codes apply to grpc:// and grpcs:// URLs",
        ));
    }
    Ok(())
}

/// `--ok-codes OK,NOT_FOUND` (names or numbers); OK alone by default.
pub fn ok_codes(a: &RunArgs) -> Result<Vec<u16>, Fail> {
    let Some(list) = &a.ok_codes else {
        return Ok(vec![0]);
    };
    list.split(',')
        .map(|c| {
            model::grpc::parse(c).ok_or_else(|| {
                Fail::input(format!(
                    "--ok-codes: '{}' is not a gRPC status code (OK, CANCELLED, ..., UNAUTHENTICATED, or 0-16)",
                    c.trim()
                ))
            })
        })
        .collect()
}
