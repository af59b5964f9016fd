//! The shapes of every answer the web UI gives, for the router (`http`) and the handlers
//! (`api`, `pages`) alike: whole bodies with the headers every page carries (no sniffing, no
//! caching), HTML, JSON, plain text, and the body type a stream of events shares.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Response, StatusCode};
use std::convert::Infallible;

/// Any response body here: whole, or a stream of events.
pub type Out = Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>;

/// A response with a whole body.
pub fn whole(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Out {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    let h = r.headers_mut();
    if let Ok(v) = content_type.parse() {
        h.insert(hyper::header::CONTENT_TYPE, v);
    }
    h.insert(
        hyper::header::X_CONTENT_TYPE_OPTIONS,
        hyper::header::HeaderValue::from_static("nosniff"),
    );
    h.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    r
}

pub fn html(body: String) -> Out {
    whole(StatusCode::OK, "text/html; charset=utf-8", body)
}

pub fn json<T: serde::Serialize>(v: &T) -> Out {
    match serde_json::to_vec_pretty(v) {
        Ok(b) => whole(StatusCode::OK, "application/json", b),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

pub fn text(status: StatusCode, msg: &str) -> Out {
    whole(status, "text/plain; charset=utf-8", format!("{msg}\n"))
}

pub fn not_found() -> Out {
    text(StatusCode::NOT_FOUND, "no such page")
}
