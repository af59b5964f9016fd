//! gRPC calls as brink sends them, settled before any load: the `.proto` files compiled at run
//! time (protox: no `protoc` needed, well-known types included), the method looked up by
//! `package.Service/Method`, and its codec ([`codec`]): JSON messages to framed protobuf (one
//! byte of flags, four of length, the message) and responses back to JSON. On the wire a call
//! is then an ordinary HTTP/2 POST the engine already sends; the engine reads its
//! `grpc-status`. This crate has no runtime: errors are one line naming the file, the method or
//! the field at fault.

mod codec;
mod files;
pub mod reflection;

pub use codec::{encode_json, frame, MethodCodec};
pub use prost_reflect::DescriptorPool;
use prost_reflect::MethodDescriptor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A unary call's method, ready to encode messages for.
#[derive(Clone, Debug)]
pub struct Call {
    /// `/package.Service/Method`.
    pub path: String,
    /// `package.Service/Method`, as the user wrote it.
    pub name: String,
    /// Request JSON to wire bytes, response bytes to JSON.
    pub codec: Arc<MethodCodec>,
    /// The client sends a stream of messages.
    pub client_streaming: bool,
    /// The server answers with a stream of messages.
    pub server_streaming: bool,
}

/// Where the service definitions come from: `.proto` files (compiled here) and/or compiled
/// descriptor sets (`protoc --descriptor_set_out`, `buf build -o`).
#[derive(Clone, Debug, Default)]
pub struct Sources {
    pub protos: Vec<PathBuf>,
    pub includes: Vec<PathBuf>,
    pub protosets: Vec<PathBuf>,
}

impl Sources {
    /// No definitions given: the server's reflection must provide them.
    pub fn is_empty(&self) -> bool {
        self.protos.is_empty() && self.protosets.is_empty()
    }
}

/// Every service and method the sources define.
pub fn pool(src: &Sources) -> Result<DescriptorPool, String> {
    if src.is_empty() {
        return Err("no service definitions: give --proto FILE or --protoset FILE".into());
    }
    let mut pool = if src.protos.is_empty() {
        DescriptorPool::new()
    } else {
        compile(&src.protos, &src.includes)?
    };
    for set in &src.protosets {
        let bytes = model::input::read(set).map_err(|e| format!("--protoset {e}"))?;
        pool.decode_file_descriptor_set(bytes.as_slice())
            .map_err(|e| format!("--protoset {}: not a descriptor set: {e}", set.display()))?;
    }
    Ok(pool)
}

/// The services and their methods, one per line (`package.Service/Method`, the message types
/// and the kind of call), for `--list`.
pub fn list(pool: &DescriptorPool) -> String {
    let mut out = String::new();
    for svc in pool.services() {
        for m in svc.methods() {
            let kind = match (m.is_client_streaming(), m.is_server_streaming()) {
                (false, false) => "unary",
                (true, false) => "client streaming",
                (false, true) => "server streaming",
                (true, true) => "bidi streaming",
            };
            out.push_str(&format!(
                "{}/{}  ({} -> {}, {kind})\n",
                svc.full_name(),
                m.name(),
                m.input().full_name(),
                m.output().full_name()
            ));
        }
    }
    out
}

/// Compiles `files` (looked up in `includes` and the directories of the files themselves).
pub fn compile(files: &[PathBuf], includes: &[PathBuf]) -> Result<DescriptorPool, String> {
    if files.is_empty() {
        return Err("no .proto file given".into());
    }
    let mut dirs: Vec<PathBuf> = includes.to_vec();
    for f in files {
        if !f.is_file() {
            return Err(format!("--proto {}: no such file", f.display()));
        }
        let dir = f
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    let mut compiler = protox::Compiler::with_file_resolver(files::Includes::new(dirs.clone()));
    compiler.include_imports(true);
    for f in files {
        let name = relative(f, &dirs);
        compiler.open_file(&name).map_err(|e| one_line(&e, &dirs))?;
    }
    Ok(compiler.descriptor_pool())
}

/// `file` as the compiler names it: relative to the first include directory holding it.
fn relative(file: &Path, dirs: &[PathBuf]) -> PathBuf {
    dirs.iter()
        .find_map(|d| file.strip_prefix(d).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| file.to_path_buf())
}

/// An error's text on one line, with `file:line:column` when it points into a file (found
/// in one of `dirs`).
fn one_line(e: &protox::Error, dirs: &[PathBuf]) -> String {
    use miette::Diagnostic;
    let mut text = e.to_string();
    let offset = e.labels().and_then(|mut l| l.next()).map(|l| l.offset());
    let path = e
        .file()
        .and_then(|f| dirs.iter().map(|d| d.join(f)).find(|p| p.is_file()));
    if let (Some(path), Some(offset)) = (path, offset) {
        if let Ok(src) = model::input::read_string(&path) {
            let at = offset.min(src.len());
            let line = src[..at].matches('\n').count() + 1;
            let col = at - src[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
            text = format!("{}:{line}:{col}: {text}", path.display());
        }
    }
    text.replace('\n', " ")
}

/// The method `call` (`package.Service/Method`, or with a dot before the method) names;
/// an unknown one lists what exists.
pub fn method(pool: &DescriptorPool, call: &str) -> Result<MethodDescriptor, String> {
    let (service, name) = split_call(call)?;
    let services: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
    let Some(svc) = pool.get_service_by_name(service) else {
        return Err(format!(
            "--call {call}: no service {service} (services: {})",
            if services.is_empty() {
                "none".to_string()
            } else {
                services.join(", ")
            }
        ));
    };
    let found = svc.methods().find(|m| m.name() == name);
    let Some(m) = found else {
        let names: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        return Err(format!(
            "--call {call}: {service} has no method {name} (methods: {})",
            names.join(", ")
        ));
    };
    Ok(m)
}

/// The service and method `call` names (`package.Service/Method` or `package.Service.Method`).
pub fn split_call(call: &str) -> Result<(&str, &str), String> {
    let (service, name) = call
        .rsplit_once('/')
        .or_else(|| call.rsplit_once('.'))
        .ok_or_else(|| format!("--call {call}: expected package.Service/Method"))?;
    Ok((service.trim_start_matches('/'), name))
}

/// The method `call` names, from the service definitions in `src`.
pub fn prepare(src: &Sources, call: &str) -> Result<Call, String> {
    prepare_in(&pool(src)?, call)
}

/// The method `call` names, from `pool` (compiled, or from server reflection).
pub fn prepare_in(pool: &DescriptorPool, call: &str) -> Result<Call, String> {
    let m = method(pool, call)?;
    Ok(Call {
        path: format!("/{}/{}", m.parent_service().full_name(), m.name()),
        name: call.to_string(),
        codec: Arc::new(MethodCodec::new(&m)),
        client_streaming: m.is_client_streaming(),
        server_streaming: m.is_server_streaming(),
    })
}

/// How `call` streams: `None` for a unary method. `messages` and `interval` (client and bidi
/// streaming only) say what each call sends: by default one message, at once.
pub fn streaming(
    call: &Call,
    messages: Option<u32>,
    interval: Option<std::time::Duration>,
) -> Result<Option<workload::Streaming>, String> {
    if !call.client_streaming && (messages.is_some() || interval.is_some()) {
        return Err(format!(
            "{} does not stream requests: stream messages and interval apply to client and bidi streaming methods",
            call.name
        ));
    }
    if messages == Some(0) {
        return Err("a stream sends at least one message".into());
    }
    Ok(
        (call.client_streaming || call.server_streaming).then(|| workload::Streaming {
            client: call.client_streaming,
            server: call.server_streaming,
            messages: messages.unwrap_or(1),
            interval: interval.unwrap_or_default(),
        }),
    )
}

#[cfg(test)]
mod tests;
