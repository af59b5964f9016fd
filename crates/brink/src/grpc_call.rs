//! `grpc://` and `grpcs://` URLs: `--call`, `--proto`, `-I`, `--data`/`--data-file` and `-H`
//! (metadata) become the one request every call sends (a POST of the framed message with
//! gRPC's headers), checked before any load: a `.proto` that does not compile, an unknown
//! method or data that does not fit the message is one line and exit 2. String values of the
//! message and metadata values may hold templates; messages without placeholders are encoded
//! once. The engine sends `--timeout` as the call's deadline (`grpc-timeout`). `--ok-codes` says which
//! status codes succeed.

use crate::cli::LoadArgs;
use crate::exit::Fail;
use engine::workload::message::{parse_documents, Message};
use engine::workload::template::{Names, Template};
use engine::Request;
use model::Target;

/// What every call sends. `target`'s path becomes the method's.
pub fn request(a: &LoadArgs, target: &mut Target) -> Result<Request, Fail> {
    if a.method.is_some() || a.body.is_some() || a.body_file.is_some() {
        return Err(Fail::input(
            "-m, -b and --body-file apply to HTTP; a gRPC call is --call with --data (JSON)",
        ));
    }
    let call = a
        .call
        .as_deref()
        .ok_or_else(|| Fail::input("a grpc:// URL needs --call package.Service/Method"))?;
    let src = sources(a);
    let prepared = if src.is_empty() {
        let (service, _) = grpc::split_call(call).map_err(Fail::input)?;
        let (_, pool) = reflect(a, target, Some(service))
            .map_err(|e| Fail::input(format!("--call {call}: {e}")))?;
        grpc::prepare_in(&pool, call)
    } else {
        grpc::prepare(&src, call)
    }
    .map_err(Fail::input)?;
    target.path = prepared.path.clone();
    let names = Names {
        data: &[],
        vars: &[],
        env: &model::env::var,
    };
    let (docs, origin) = documents(a)?;
    let interval = a
        .stream_interval
        .as_deref()
        .map(|d| {
            model::parse_duration(d).map_err(|e| Fail::input(format!("--stream-interval: {e}")))
        })
        .transpose()?;
    let stream = grpc::streaming(&prepared, a.stream_messages, interval).map_err(|e| {
        Fail::input(format!(
            "--call {call}: {e} (--stream-messages, --stream-interval)"
        ))
    })?;
    let mut message = Message::new(prepared.codec.clone(), &docs, &names).map_err(|e| {
        let at = if docs.len() > 1 {
            format!(" message {}", e.row + 1)
        } else {
            String::new()
        };
        Fail::input(format!("{origin}{at}: {}", e.message))
    })?;
    let headers = flag_headers(a)?;
    let mut req = Request::fixed(
        &format!("POST {}", prepared.path),
        "POST",
        &prepared.path,
        &[],
        b"",
    );
    req.headers = headers;
    message.stream = stream;
    req.message = Some(message);
    Ok(req)
}

/// The message documents (`--data`, `--data-file`, or `{}`) and the flag they came from.
fn documents(a: &LoadArgs) -> Result<(Vec<serde_json::Value>, String), Fail> {
    if let Some(path) = &a.data_file {
        let shown = format!("--data-file {}", path.display());
        let text =
            model::input::read_string(path).map_err(|e| Fail::input(format!("--data-file {e}")))?;
        let docs = parse_documents(&text).map_err(|e| Fail::input(format!("{shown}: {e}")))?;
        return Ok((docs, shown));
    }
    let text = a.data.as_deref().unwrap_or("{}");
    let doc =
        serde_json::from_str(text).map_err(|e| Fail::input(format!("--data: not JSON: {e}")))?;
    Ok((vec![doc], "--data".to_string()))
}

/// `-H` values, for every protocol, as templates (`{{seq}}`, `{{uuid}}`, `{{env NAME}}`, ...):
/// HTTP headers and gRPC metadata alike (the engine adds gRPC's own headers and deadline).
pub fn flag_headers(a: &LoadArgs) -> Result<Vec<(String, Template)>, Fail> {
    let names = Names {
        data: &[],
        vars: &[],
        env: &model::env::var,
    };
    a.headers
        .iter()
        .map(|h| {
            let (name, value) = model::parse_header(h).map_err(|e| Fail::input(e.to_string()))?;
            let t = Template::compile(&value, &names)
                .map_err(|e| Fail::input(format!("-H {name}: {}", e.message)))?;
            Ok((name, t))
        })
        .collect()
}

/// `--proto`, `-I` and `--protoset`.
fn sources(a: &LoadArgs) -> grpc::Sources {
    grpc::Sources {
        protos: a.proto.clone(),
        includes: a.import_paths.clone(),
        protosets: a.protosets.clone(),
    }
}

/// `--list`: the services and methods the definitions hold (from the server's reflection
/// when none are given); sends no load.
pub fn list(a: &LoadArgs) -> Result<i32, Fail> {
    let src = sources(a);
    let pool = if src.is_empty() {
        let target = Target::parse(&a.url).map_err(|e| Fail::input(e.to_string()))?;
        if target.protocol != model::Protocol::Grpc {
            return Err(Fail::input(
                "--list needs a grpc:// or grpcs:// URL, or --proto/--protoset",
            ));
        }
        reflect(a, &target, None)
            .map_err(|e| Fail::input(format!("{}: {e}", a.url)))?
            .1
    } else {
        grpc::pool(&src).map_err(Fail::input)?
    };
    crate::console::emit(&grpc::list(&pool));
    Ok(0)
}

/// Asks the server's reflection for `service` (every service when `None`), over a connection
/// made as the run's will be (TLS options, `--authority`), each exchange held to
/// `--connect-timeout`.
pub fn reflect(
    a: &LoadArgs,
    target: &Target,
    service: Option<&str>,
) -> Result<(Vec<String>, grpc::DescriptorPool), String> {
    let (target, tls) =
        crate::connect_flags::tls_options(a, target.clone(), &plan::Settings::default())
            .map_err(|f| f.message)?;
    let timeout = match &a.connect_timeout {
        Some(t) => model::parse_duration(t).map_err(|e| format!("--connect-timeout: {e}"))?,
        None => crate::connect_flags::DEFAULT_CONNECT_TIMEOUT,
    };
    reflect_with(&target, &tls, timeout, service)
}

/// [`reflect`] with the TLS options and time limit given.
pub fn reflect_with(
    target: &Target,
    tls: &engine::TlsOptions,
    timeout: std::time::Duration,
    service: Option<&str>,
) -> Result<(Vec<String>, grpc::DescriptorPool), String> {
    let mut ask = |path: &str, body: Vec<u8>| {
        engine::grpc_call(target, tls, timeout, path, body)
            .map(|answer| (answer.code, answer.body))
            .map_err(|e| format!("server reflection: {e}"))
    };
    grpc::reflection::reflect(&mut ask, service)
}

/// Refuses the flags that describe a gRPC call on an HTTP URL or a plan (whose steps say
/// what they call).
pub fn refuse_flags(a: &LoadArgs, plan: bool) -> Result<(), Fail> {
    if a.call.is_some()
        || !a.proto.is_empty()
        || !a.protosets.is_empty()
        || a.data.is_some()
        || a.data_file.is_some()
        || a.stream_messages.is_some()
        || a.stream_interval.is_some()
    {
        return Err(Fail::input(if plan {
            "--call, --proto, --protoset, --data, --data-file and --stream-* apply to a grpc:// URL; a plan's steps say what they call (grpc: {call, proto, data, stream})"
        } else {
            "--call, --proto, --protoset, --data, --data-file and --stream-* apply to grpc:// and grpcs:// URLs"
        }));
    }
    if !plan && a.ok_codes.is_some() {
        return Err(Fail::input(
            "--ok-codes applies to grpc:// and grpcs:// URLs and plans",
        ));
    }
    Ok(())
}

/// `--ok-codes OK,NOT_FOUND` (names or numbers), when given.
pub fn ok_codes(a: &LoadArgs) -> Result<Option<Vec<u16>>, Fail> {
    a.ok_codes
        .as_deref()
        .map(|list| {
            model::grpc::parse_list(list).map_err(|e| Fail::input(format!("--ok-codes: {e}")))
        })
        .transpose()
}
