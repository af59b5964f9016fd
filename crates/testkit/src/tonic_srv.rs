//! A real tonic gRPC server in-process: `helloworld.Greeter` (SayHello unary, SayHelloStream
//! server streaming) with tonic-reflection (v1 and v1alpha) of the definitions it is given. It
//! checks brink's calls, codes, streams and reflection against the canonical Rust
//! implementation, not only against testkit's own gRPC server.
//!
//! Behaviour by the request's `name`: `unavailable` answers UNAVAILABLE, `slow` waits 300 ms;
//! otherwise the reply is `hello NAME`. SayHelloStream answers `times` replies.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tonic::codegen::{http, Body, Service, StdError};
use tonic::server::NamedService;
use tonic::{Request, Response, Status};

#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int32, tag = "2")]
    pub times: i32,
    #[prost(message, optional, tag = "3")]
    pub at: Option<prost_types::Timestamp>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloReply {
    #[prost(string, tag = "1")]
    pub message: String,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The Greeter; `calls` counts the calls it answered (reflection not included).
#[derive(Clone, Default)]
pub struct Greeter {
    pub calls: Arc<AtomicU64>,
}

impl NamedService for Greeter {
    const NAME: &'static str = "helloworld.Greeter";
}

async fn hello(req: HelloRequest) -> Result<HelloReply, Status> {
    match req.name.as_str() {
        "unavailable" => Err(Status::unavailable("injected")),
        "slow" => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok(HelloReply {
                message: "hello slow".into(),
            })
        }
        name => Ok(HelloReply {
            message: format!("hello {name}"),
        }),
    }
}

/// SayHello as tonic's unary service.
struct Unary;

impl Service<Request<HelloRequest>> for Unary {
    type Response = Response<HelloReply>;
    type Error = Status;
    type Future = BoxFuture<Result<Response<HelloReply>, Status>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, req: Request<HelloRequest>) -> Self::Future {
        Box::pin(async move { hello(req.into_inner()).await.map(Response::new) })
    }
}

type Replies = tokio_stream::Iter<std::vec::IntoIter<Result<HelloReply, Status>>>;

/// SayHelloStream as tonic's server-streaming service.
struct Streaming;

impl Service<Request<HelloRequest>> for Streaming {
    type Response = Response<Replies>;
    type Error = Status;
    type Future = BoxFuture<Result<Response<Replies>, Status>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, req: Request<HelloRequest>) -> Self::Future {
        Box::pin(async move {
            let req = req.into_inner();
            let n = usize::try_from(req.times).unwrap_or(0);
            let reply = hello(req).await?;
            Ok(Response::new(tokio_stream::iter(vec![Ok(reply); n])))
        })
    }
}

impl<B> Service<http::Request<B>> for Greeter
where
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let calls = self.calls.clone();
        let mut grpc = tonic::server::Grpc::new(
            tonic_prost::ProstCodec::<HelloReply, HelloRequest>::default(),
        );
        match req.uri().path() {
            "/helloworld.Greeter/SayHello" => Box::pin(async move {
                calls.fetch_add(1, Ordering::Relaxed);
                Ok(grpc.unary(Unary, req).await)
            }),
            "/helloworld.Greeter/SayHelloStream" => Box::pin(async move {
                calls.fetch_add(1, Ordering::Relaxed);
                Ok(grpc.server_streaming(Streaming, req).await)
            }),
            _ => Box::pin(async { Ok(Status::unimplemented("no such method").into_http()) }),
        }
    }
}

/// A running tonic server; dropping it stops it.
pub struct TonicServer {
    pub addr: std::net::SocketAddr,
    pub greeter: Greeter,
    _running: accept::Running,
}

/// Serves the Greeter and reflection of `descriptor_set` (an encoded FileDescriptorSet holding
/// the Greeter's file) on 127.0.0.1, port 0.
pub fn serve_tonic(descriptor_set: &[u8]) -> std::io::Result<TonicServer> {
    let builder = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(descriptor_set)
    };
    let v1 = builder().build_v1().map_err(std::io::Error::other)?;
    let v1alpha = builder().build_v1alpha().map_err(std::io::Error::other)?;
    let greeter = Greeter::default();
    let serving = greeter.clone();
    let at = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let (addr, running) = accept::spawn(
        "testkit-tonic",
        2,
        || accept::bind(at),
        |l, stop| async move {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(l);
            let _ = tonic::transport::Server::builder()
                .add_service(v1)
                .add_service(v1alpha)
                .add_service(serving)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stop.await;
                })
                .await;
        },
    )?;
    Ok(TonicServer {
        addr,
        greeter,
        _running: running,
    })
}
