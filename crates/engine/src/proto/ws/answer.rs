//! Which message answers a WebSocket request, and what of it is kept. By default the next
//! data message is the answer; a step that matches by id (`--match-id`, a plan's
//! `match_id`) takes the first message whose id equals the id of the message it sent, so a
//! server that pushes other messages between (broadcasts, notifications) or answers out of
//! order is measured right. An answer a step's extractions or checks read is kept within
//! the run's capture budget, as an HTTP body is.

use crate::net::conn::Connector;
use stats::Refusal;
use workload::{Captured, Request};

/// The id of the message `sent`, when `step` matches answers by id; a message without one
/// is refused (the id is what its answer is known by).
pub fn id_of(step: &Request, sent: &[u8]) -> Result<Option<String>, Refusal> {
    match &step.match_id {
        None => Ok(None),
        Some(m) => m
            .from_body(sent)
            .map(Some)
            .map_err(|why| Refusal::new(format!("message (no id: {why})"), sent)),
    }
}

/// Whether the message `data` answers the request whose message had id `id`.
pub fn answers(step: &Request, id: Option<&str>, data: &[u8]) -> bool {
    match (&step.match_id, id) {
        (Some(m), Some(id)) => m.from_body(data).is_ok_and(|found| found == id),
        _ => true,
    }
}

/// The answer `data`, kept when `step` reads it (an extraction, a check).
pub fn kept(connector: &Connector, step: &Request, data: &[u8]) -> Option<Captured> {
    connector.capture_for(step).map(|budget| {
        let mut c = Captured::new(budget.clone());
        c.keep(data);
        c
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::Extractor;

    fn step(m: Extractor) -> Request {
        let mut r = Request::fixed("s", "GET", "/", &[], b"");
        r.match_id = Some(m);
        r
    }

    #[test]
    fn answers_are_matched_by_the_id_of_the_message_sent() {
        let json = step(Extractor::Json(
            serde_json_path::JsonPath::parse("$.id").expect("path"),
        ));
        let id = id_of(&json, br#"{"id":7,"op":"get"}"#).expect("an id");
        assert_eq!(id.as_deref(), Some("7"));
        assert!(answers(&json, id.as_deref(), br#"{"id":7,"ok":true}"#));
        assert!(!answers(&json, id.as_deref(), br#"{"id":8,"ok":true}"#));
        assert!(!answers(&json, id.as_deref(), b"not json"));
        let refused = id_of(&json, br#"{"op":"get"}"#).expect_err("no id");
        assert!(refused.part.contains("matched nothing"), "{refused:?}");

        let re = step(Extractor::Regex(
            regex::bytes::Regex::new(r"id=(\d+)").expect("regex"),
        ));
        let id = id_of(&re, b"get id=42").expect("an id");
        assert!(answers(&re, id.as_deref(), b"ok id=42"));
        assert!(!answers(&re, id.as_deref(), b"ok id=420x"));
    }

    #[test]
    fn without_an_id_the_next_message_answers() {
        let plain = Request::fixed("s", "GET", "/", &[], b"");
        assert_eq!(id_of(&plain, b"anything").expect("no id needed"), None);
        assert!(answers(&plain, None, b"whatever came"));
    }
}
