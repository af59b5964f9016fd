//! Server reflection: when no `.proto` or descriptor set is given, the server is asked which
//! services it offers and for the files that define them (`grpc.reflection.v1`, falling back to
//! `v1alpha` for older servers), and those files become the descriptor pool the call is built
//! from. The messages are the reflection protocol's own, declared here with prost; the
//! transport is the caller's (`Ask`), so this crate stays without a runtime.

use prost::Message;
use prost_reflect::prost_types::FileDescriptorProto;
use prost_reflect::DescriptorPool;
use std::collections::BTreeMap;

/// The reflection protocol's messages (`grpc/reflection/v1/reflection.proto`; v1alpha has
/// the same fields under another package).
pub mod pb {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ServerReflectionRequest {
        #[prost(string, tag = "1")]
        pub host: String,
        #[prost(oneof = "MessageRequest", tags = "3, 4, 7")]
        pub message_request: Option<MessageRequest>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum MessageRequest {
        #[prost(string, tag = "3")]
        FileByFilename(String),
        #[prost(string, tag = "4")]
        FileContainingSymbol(String),
        #[prost(string, tag = "7")]
        ListServices(String),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ServerReflectionResponse {
        #[prost(string, tag = "1")]
        pub valid_host: String,
        #[prost(oneof = "MessageResponse", tags = "4, 6, 7")]
        pub message_response: Option<MessageResponse>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum MessageResponse {
        #[prost(message, tag = "4")]
        FileDescriptorResponse(FileDescriptorResponse),
        #[prost(message, tag = "6")]
        ListServicesResponse(ListServiceResponse),
        #[prost(message, tag = "7")]
        ErrorResponse(ErrorResponse),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct FileDescriptorResponse {
        #[prost(bytes = "vec", repeated, tag = "1")]
        pub file_descriptor_proto: Vec<Vec<u8>>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ListServiceResponse {
        #[prost(message, repeated, tag = "1")]
        pub service: Vec<ServiceResponse>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ServiceResponse {
        #[prost(string, tag = "1")]
        pub name: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ErrorResponse {
        #[prost(int32, tag = "1")]
        pub error_code: i32,
        #[prost(string, tag = "2")]
        pub error_message: String,
    }
}

use pb::{MessageRequest, MessageResponse, ServerReflectionRequest, ServerReflectionResponse};

/// The reflection method of each version, newest first.
pub const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// Sends one framed message to a method path and returns (gRPC status code, response body).
pub type Ask<'a> = dyn FnMut(&str, Vec<u8>) -> Result<(u16, Vec<u8>), String> + 'a;

/// UNIMPLEMENTED: the server has no such method.
const UNIMPLEMENTED: u16 = 12;

/// How much a server's reflection may make brink ask for and hold: a server answering with an
/// endless chain of imports ends in a clear error, not in memory without end. Real services
/// need a few dozen files and a few hundred kilobytes.
pub const MOST_REQUESTS: usize = 256;
/// Most distinct files taken.
pub const MOST_FILES: usize = 1000;
/// Most bytes of file descriptors taken in all.
pub const MOST_BYTES: usize = 32 << 20;
/// Longest the whole exchange may take.
pub const MOST_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// A reflection session: the version the server answered to, and what it has cost so far.
struct Session<'a, 'b> {
    ask: &'a mut Ask<'b>,
    path: &'static str,
    requests: usize,
    bytes: usize,
    deadline: std::time::Instant,
}

impl Session<'_, '_> {
    fn new<'a, 'b>(
        ask: &'a mut Ask<'b>,
        path: &'static str,
        deadline: std::time::Instant,
    ) -> Session<'a, 'b> {
        Session {
            ask,
            path,
            requests: 0,
            bytes: 0,
            deadline,
        }
    }

    fn request(&mut self, req: MessageRequest) -> Result<MessageResponse, String> {
        self.try_request(req)?
            .map_err(|code| format!("server reflection failed with {}", model::grpc::name(code)))
    }

    /// The answer, or the call's status code when it is not OK.
    fn try_request(&mut self, req: MessageRequest) -> Result<Result<MessageResponse, u16>, String> {
        let msg = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(req),
        };
        self.requests += 1;
        if self.requests > MOST_REQUESTS {
            return Err(too_much(format!("more than {MOST_REQUESTS} requests")));
        }
        if std::time::Instant::now() >= self.deadline {
            return Err(too_much(format!("more than {}s", MOST_TIME.as_secs())));
        }
        let (code, body) = (self.ask)(self.path, crate::frame(&msg.encode_to_vec()))?;
        self.bytes += body.len();
        if self.bytes > MOST_BYTES {
            return Err(too_much(format!("more than {} MiB", MOST_BYTES >> 20)));
        }
        if code != 0 {
            return Ok(Err(code));
        }
        let bytes = body
            .get(5..)
            .ok_or("server reflection gave an empty answer")?;
        let resp = ServerReflectionResponse::decode(bytes)
            .map_err(|e| format!("server reflection gave an unreadable answer: {e}"))?;
        match resp.message_response {
            Some(MessageResponse::ErrorResponse(e)) => Err(format!(
                "server reflection: {} ({})",
                e.error_message,
                model::grpc::name(u16::try_from(e.error_code).unwrap_or(2))
            )),
            Some(r) => Ok(Ok(r)),
            None => Err("server reflection gave an empty answer".into()),
        }
    }

    /// The services listed, or `None` when this version of reflection is unimplemented.
    fn services(&mut self) -> Result<Option<Vec<String>>, String> {
        match self.try_request(MessageRequest::ListServices(String::new()))? {
            Err(UNIMPLEMENTED) => Ok(None),
            Err(code) => Err(format!(
                "server reflection failed with {}",
                model::grpc::name(code)
            )),
            Ok(MessageResponse::ListServicesResponse(l)) => {
                Ok(Some(l.service.into_iter().map(|s| s.name).collect()))
            }
            Ok(_) => {
                Err("server reflection answered the list of services with something else".into())
            }
        }
    }

    fn files(&mut self, req: MessageRequest) -> Result<Vec<FileDescriptorProto>, String> {
        match self.request(req)? {
            MessageResponse::FileDescriptorResponse(f) => f
                .file_descriptor_proto
                .iter()
                .map(|b| {
                    FileDescriptorProto::decode(b.as_slice())
                        .map_err(|e| format!("server reflection sent an unreadable file: {e}"))
                })
                .collect(),
            _ => Err("server reflection answered a file request with something else".into()),
        }
    }
}

/// The services the server offers (its reflection services left out), and a pool with the
/// files defining `wanted` (every service when `None`) and everything they import. An
/// unknown service lists those that exist; a server without reflection says so.
pub fn reflect(
    ask: &mut Ask,
    wanted: Option<&str>,
) -> Result<(Vec<String>, DescriptorPool), String> {
    let deadline = std::time::Instant::now() + MOST_TIME;
    let mut session = None;
    for path in PATHS {
        let mut s = Session::new(ask, path, deadline);
        if let Some(list) = s.services()? {
            session = Some((path, list));
            break;
        }
    }
    let Some((path, mut services)) = session else {
        return Err(
            "the server does not offer reflection (grpc.reflection.v1 and v1alpha are unimplemented): give the service definitions with --proto FILE or --protoset FILE"
                .into(),
        );
    };
    services.retain(|s| !s.starts_with("grpc.reflection."));
    services.sort();
    let mut s = Session::new(ask, path, deadline);
    let wanted: Vec<String> = match wanted {
        Some(w) if services.iter().any(|s| s == w) => vec![w.to_string()],
        Some(w) => {
            return Err(format!(
                "no service {w} on the server (services: {})",
                if services.is_empty() {
                    "none".to_string()
                } else {
                    services.join(", ")
                }
            ))
        }
        None => services.clone(),
    };
    let mut files: BTreeMap<String, FileDescriptorProto> = BTreeMap::new();
    for svc in &wanted {
        add(
            &mut files,
            s.files(MessageRequest::FileContainingSymbol(svc.clone()))?,
        );
    }
    // Imports the server did not send along are asked for by name.
    loop {
        let missing: Vec<String> = files
            .values()
            .flat_map(|f| f.dependency.iter())
            .filter(|d| !files.contains_key(*d))
            .cloned()
            .collect();
        if missing.is_empty() {
            break;
        }
        for name in missing {
            let got = s.files(MessageRequest::FileByFilename(name.clone()))?;
            if !got.iter().any(|f| f.name() == name) {
                return Err(format!("server reflection did not send {name}"));
            }
            add(&mut files, got);
            if files.len() > MOST_FILES {
                return Err(too_much(format!("more than {MOST_FILES} files")));
            }
        }
    }
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_protos(files.into_values())
        .map_err(|e| format!("the files from server reflection do not fit together: {e}"))?;
    Ok((services, pool))
}

/// The error for a reflection that would not end.
fn too_much(what: String) -> String {
    format!("server reflection gave up after {what}: the server keeps sending imports; give the service definitions with --proto FILE or --protoset FILE")
}

fn add(files: &mut BTreeMap<String, FileDescriptorProto>, got: Vec<FileDescriptorProto>) {
    for f in got {
        files.entry(f.name().to_string()).or_insert(f);
    }
}
