//! Server reflection in front of a test gRPC handler, as grpc-go and tonic serve it: the
//! services of the given files, and files by symbol or by name. A file is sent without its
//! imports, so a client must ask for those by name as it would of a real server that does the
//! same. Which versions answer (v1, v1alpha, none) is the test's choice.

use crate::grpc::{Answer, Call, GrpcHandler};
use grpc::reflection::pb::{
    ErrorResponse, FileDescriptorResponse, ListServiceResponse, MessageRequest, MessageResponse,
    ServerReflectionRequest, ServerReflectionResponse, ServiceResponse,
};
use grpc::reflection::PATHS;
use prost::Message;
use prost_reflect::DescriptorPool;
use std::sync::Arc;

/// Which reflection versions the server offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versions {
    Both,
    V1AlphaOnly,
}

/// `handler`, with reflection of `pool`'s files answered first.
pub fn with_reflection(
    handler: GrpcHandler,
    pool: DescriptorPool,
    versions: Versions,
) -> GrpcHandler {
    Arc::new(move |c: &Call| {
        let offered = match versions {
            Versions::Both => &PATHS[..],
            Versions::V1AlphaOnly => &PATHS[1..],
        };
        if !offered.contains(&c.path) {
            return handler(c);
        }
        match ServerReflectionRequest::decode(c.message) {
            Ok(req) => Answer::ok(answer(&pool, req).encode_to_vec()),
            Err(_) => Answer::code(3),
        }
    })
}

fn answer(pool: &DescriptorPool, req: ServerReflectionRequest) -> ServerReflectionResponse {
    let file = |f: prost_reflect::FileDescriptor| {
        MessageResponse::FileDescriptorResponse(FileDescriptorResponse {
            file_descriptor_proto: vec![f.file_descriptor_proto().encode_to_vec()],
        })
    };
    let not_found = |what: &str| {
        MessageResponse::ErrorResponse(ErrorResponse {
            error_code: 5,
            error_message: format!("{what} not found"),
        })
    };
    let response = match req.message_request {
        Some(MessageRequest::ListServices(_)) => {
            let mut service: Vec<ServiceResponse> = pool
                .services()
                .map(|s| ServiceResponse {
                    name: s.full_name().to_string(),
                })
                .collect();
            service.push(ServiceResponse {
                name: "grpc.reflection.v1.ServerReflection".into(),
            });
            MessageResponse::ListServicesResponse(ListServiceResponse { service })
        }
        Some(MessageRequest::FileContainingSymbol(sym)) => {
            match pool.get_service_by_name(&sym).map(|s| s.parent_file()) {
                Some(f) => file(f),
                None => not_found(&sym),
            }
        }
        Some(MessageRequest::FileByFilename(name)) => match pool.get_file_by_name(&name) {
            Some(f) => file(f),
            None => not_found(&name),
        },
        None => not_found("request"),
    };
    ServerReflectionResponse {
        valid_host: String::new(),
        message_response: Some(response),
    }
}

/// A hostile reflection service: it lists one service, and every file request is answered
/// with `per_answer` new files, each importing names never sent before, so a client that
/// follows imports without a bound never ends. Counts the requests it answered.
pub fn endless_imports(per_answer: usize, asked: Arc<std::sync::atomic::AtomicU64>) -> GrpcHandler {
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Arc::new(move |c: &Call| {
        if !PATHS.contains(&c.path) {
            return Answer::code(12);
        }
        asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Ok(req) = ServerReflectionRequest::decode(c.message) else {
            return Answer::code(3);
        };
        let response = match req.message_request {
            Some(MessageRequest::ListServices(_)) => {
                MessageResponse::ListServicesResponse(ListServiceResponse {
                    service: vec![ServiceResponse {
                        name: "evil.Svc".into(),
                    }],
                })
            }
            Some(MessageRequest::FileContainingSymbol(_)) => files(&next, None, per_answer),
            Some(MessageRequest::FileByFilename(name)) => files(&next, Some(name), per_answer),
            _ => return Answer::code(3),
        };
        Answer::ok(
            ServerReflectionResponse {
                valid_host: String::new(),
                message_response: Some(response),
            }
            .encode_to_vec(),
        )
    })
}

/// `per_answer` files (the one asked for by name first), each importing two names never sent.
fn files(
    next: &std::sync::atomic::AtomicU64,
    asked: Option<String>,
    per_answer: usize,
) -> MessageResponse {
    let base = next.fetch_add(per_answer as u64 * 3, std::sync::atomic::Ordering::Relaxed);
    let file_descriptor_proto = (0..per_answer as u64)
        .map(|i| {
            let name = match (&asked, i) {
                (Some(n), 0) => n.clone(),
                _ => format!("f{}.proto", base + i),
            };
            prost_types::FileDescriptorProto {
                name: Some(name),
                dependency: vec![
                    format!("f{}.proto", base + per_answer as u64 + i),
                    format!("g{}.proto", base + i),
                ],
                ..Default::default()
            }
            .encode_to_vec()
        })
        .collect();
    MessageResponse::FileDescriptorResponse(FileDescriptorResponse {
        file_descriptor_proto,
    })
}
