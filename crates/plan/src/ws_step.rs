//! A plan step of a WebSocket scenario (a `ws://` or `wss://` target): a message sent and
//! its answer awaited (`message:` or `message_file:`, templated as a body is, the answer
//! matched by id with `match_id:`), a ping (`ping: true`), or the next message the server
//! pushes (`subscribe: true`, with `sent_at:` for the delivery delay). Every step of a
//! scenario runs on the connection its upgrade opened: the upgrade goes to the target's
//! path with the scenario's headers, so a step's own path or headers are refused rather
//! than quietly unused, as are HTTP's keys; a WebSocket key on an HTTP step is refused too.

use crate::compile::Cx;
use crate::error::PlanError;
use crate::file::{RawRequest, S};
use model::Target;
use workload::template::{Names, Template};
use workload::{Extractor, Request, WsStep};

impl Cx<'_> {
    /// The step `st` of a WebSocket scenario.
    pub(crate) fn ws_step(
        &self,
        st: &S<RawRequest>,
        target: &Target,
        scenario_headers: &[(String, S<String>)],
        names: &Names,
    ) -> Result<Request, PlanError> {
        let r = &st.value;
        self.refuse_http_keys(st)?;
        let shape = self.ws_shape(st)?;
        let message = match (&r.message, &r.message_file) {
            (Some(_), Some(f)) => {
                return Err(self.err(f, "'message' and 'message_file' cannot both be set"))
            }
            (Some(m), None) => Some(self.template(m, names)?),
            (None, Some(f)) => {
                // UTF-8 text is templated (and goes as a text frame); anything else goes as
                // it is, in a binary frame.
                let p = self.named_file(&f.value);
                let bytes =
                    model::input::read(&p).map_err(|e| self.err(f, format!("message_file {e}")))?;
                Some(match String::from_utf8(bytes) {
                    Ok(text) => Template::compile(&text, names)
                        .map_err(|e| self.err(f, format!("{}: {}", p.display(), e.message)))?,
                    Err(binary) => Template::literal(binary.as_bytes()),
                })
            }
            (None, None) => None,
        };
        if shape == WsStep::Message && message.is_none() {
            return Err(self.err(
                st,
                "a WebSocket step sends a message (message: or message_file:), or is { ping: true } or { subscribe: true }",
            ));
        }
        if shape == WsStep::Ping && message.is_some() {
            return Err(self.err(st, "a ping step sends a ping, not a message"));
        }
        if let (WsStep::Ping, Some(c)) = (shape, r.check.first()) {
            return Err(self.err(c, "a ping's answer is its pong: there is nothing to check"));
        }
        if let (WsStep::Ping, Some(x)) = (shape, r.extract.values().next()) {
            return Err(self.err(
                x,
                "a ping's answer is its pong: there is nothing to extract",
            ));
        }
        for x in r.extract.values() {
            if let Extractor::Header(_) = self.extractor(x)? {
                return Err(self.err(x, "a WebSocket answer is a message: it has no headers to extract from (json or regex)"));
            }
        }
        let name = match &r.name {
            Some(n) => n.value.clone(),
            None => match shape {
                WsStep::Message => "message".to_string(),
                WsStep::Ping => "ping".to_string(),
                WsStep::Await => "subscribe".to_string(),
            },
        };
        let mut req = Request::fixed(&name, "GET", &target.path, &[], b"");
        req.headers = self.headers(scenario_headers, names)?;
        req.body = message.unwrap_or_default();
        req.ws = shape;
        req.weight = self.weight(r)?;
        req.sent_at = match &r.sent_at {
            Some(p) if shape != WsStep::Await => {
                return Err(self.err(
                    p,
                    "sent_at reads a pushed message's send time: it goes with subscribe: true",
                ))
            }
            Some(p) => Some(
                serde_json_path::JsonPath::parse(&p.value)
                    .map_err(|e| self.err(p, format!("invalid JSONPath '{}': {e}", p.value)))?,
            ),
            None => None,
        };
        req.match_id = match &r.match_id {
            Some(m) if shape != WsStep::Message => {
                return Err(self.err(
                    m,
                    "match_id finds the answer to a message by its id: it goes with message:",
                ))
            }
            Some(m) => match self.extractor(m)? {
                Extractor::Header(_) => {
                    return Err(self.err(
                        m,
                        "match_id: a WebSocket message has no headers; give json or regex",
                    ))
                }
                e => Some(e),
            },
            None => None,
        };
        Ok(req)
    }

    /// What the step does: a message unless it says `ping: true` or `subscribe: true`.
    fn ws_shape(&self, st: &S<RawRequest>) -> Result<WsStep, PlanError> {
        let r = &st.value;
        let on = |b: &Option<S<bool>>| b.as_ref().is_some_and(|b| b.value);
        match (on(&r.ping), on(&r.subscribe)) {
            (true, true) => Err(self.err(st, "a step is a ping or a subscription, not both")),
            (true, false) => Ok(WsStep::Ping),
            (false, true) => Ok(WsStep::Await),
            (false, false) => Ok(WsStep::Message),
        }
    }

    /// HTTP's keys on a WebSocket step, each named where it stands.
    fn refuse_http_keys(&self, st: &S<RawRequest>) -> Result<(), PlanError> {
        let r = &st.value;
        let msg = |key: &str| {
            format!("'{key}' is HTTP's: a WebSocket step sends message:, ping: or subscribe: (its upgrade goes to the target's path)")
        };
        let given = [
            r.method.as_ref().map(|v| self.err(v, msg("method"))),
            r.path.as_ref().map(|v| self.err(v, msg("path"))),
            r.body.as_ref().map(|v| self.err(v, msg("body"))),
            r.body_file.as_ref().map(|v| self.err(v, msg("body_file"))),
            r.grpc.as_ref().map(|v| self.err(v, msg("grpc"))),
            r.complete.as_ref().map(|v| self.err(v, msg("complete"))),
            r.headers.values().next().map(|h| self.err(h, "a WebSocket step's headers would reach only its connection's upgrade: set them on the scenario (headers:)")),
        ];
        match given.into_iter().flatten().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// WebSocket keys on a step of an HTTP or gRPC scenario.
    pub(crate) fn refuse_ws_keys(&self, st: &S<RawRequest>) -> Result<(), PlanError> {
        let r = &st.value;
        let msg = |key: &str| format!("'{key}' goes with a ws:// or wss:// target");
        let given = [
            r.message.as_ref().map(|v| self.err(v, msg("message"))),
            r.message_file
                .as_ref()
                .map(|v| self.err(v, msg("message_file"))),
            r.ping.as_ref().map(|v| self.err(v, msg("ping"))),
            r.subscribe.as_ref().map(|v| self.err(v, msg("subscribe"))),
            r.sent_at.as_ref().map(|v| self.err(v, msg("sent_at"))),
            r.match_id.as_ref().map(|v| self.err(v, msg("match_id"))),
        ];
        match given.into_iter().flatten().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
