//! A small stateful service for the example plans and the tests, with the endpoints they use:
//! `POST /user/auth/register` (unique emails; a repeated one is a `409` and is counted),
//! `POST /login` (hands out a bearer token in `{"access_token": ...}`), `GET /items`
//! (`401` without a token `/login` issued), `GET /health`. It counts what a test needs to check
//! that every request was what the plan meant to send.

use crate::{Answer, Handler, Req};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What the shop saw.
#[derive(Default)]
pub struct Shop {
    emails: Mutex<HashSet<String>>,
    tokens: Mutex<HashSet<String>>,
    pub registered: AtomicU64,
    pub duplicates: AtomicU64,
    pub logins: AtomicU64,
    pub authorized_reads: AtomicU64,
    pub unauthorized_reads: AtomicU64,
}

impl Shop {
    /// Distinct emails registered.
    pub fn distinct_emails(&self) -> usize {
        self.emails
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// The handler and the counters behind it; every answer takes `service` (a worker's time).
pub fn shop(service: Duration) -> (Handler, Arc<Shop>) {
    let state = Arc::new(Shop::default());
    let s = state.clone();
    let handler: Handler = Arc::new(move |r: &Req| answer(&s, r, service));
    (handler, state)
}

fn json(status: u16, body: String, delay: Duration) -> Answer {
    Answer {
        delay,
        ..Answer::new(status, body)
    }
}

fn answer(s: &Shop, r: &Req, service: Duration) -> Answer {
    let path = r.path.split('?').next().unwrap_or("");
    match (r.method, path) {
        ("POST", "/user/auth/register") => {
            let body = String::from_utf8_lossy(r.body);
            let Some(email) = field(&body, "email") else {
                return json(400, r#"{"error":"email missing"}"#.into(), service);
            };
            let fresh = s
                .emails
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(email);
            if fresh {
                s.registered.fetch_add(1, Ordering::Relaxed);
                json(201, format!(r#"{{"id":{}}}"#, r.seq), service)
            } else {
                s.duplicates.fetch_add(1, Ordering::Relaxed);
                json(409, r#"{"error":"email taken"}"#.into(), service)
            }
        }
        ("POST", "/login") => {
            s.logins.fetch_add(1, Ordering::Relaxed);
            let token = format!("tok-{}", r.seq);
            s.tokens
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(token.clone());
            json(
                200,
                format!(r#"{{"access_token":"{token}","expires_in":3600}}"#),
                service,
            )
        }
        ("GET", "/items") => {
            let token = r
                .header("authorization")
                .and_then(|v| v.strip_prefix("Bearer "));
            let known = token.is_some_and(|t| {
                s.tokens
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .contains(t)
            });
            if known {
                s.authorized_reads.fetch_add(1, Ordering::Relaxed);
                json(200, r#"{"items":[{"id":1},{"id":2}]}"#.into(), service)
            } else {
                s.unauthorized_reads.fetch_add(1, Ordering::Relaxed);
                json(401, r#"{"error":"unauthorized"}"#.into(), service)
            }
        }
        (_, "/health") => json(200, r#"{"status":"UP"}"#.into(), Duration::ZERO),
        _ => json(404, r#"{"error":"not found"}"#.into(), Duration::ZERO),
    }
}

/// The string value of `"key":"..."` in a flat JSON object (enough for test bodies).
fn field(body: &str, key: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    v.get(key)?.as_str().map(str::to_string)
}
