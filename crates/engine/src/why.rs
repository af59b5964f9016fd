//! Why a `protocol` error: the rule the server's answer broke, in words.
//!
//! Protocol machines return a bare [`ErrorKind`] (one byte, cheap on the hot path, and the
//! same value on every transport). Where a machine knows which rule an answer broke, it says
//! so here, on its worker's thread, as it fails ([`protocol`]); the worker takes the reason as
//! it records the error and keeps the first one, which the summary prints beside the count
//! (`protocol 5,281 of 'GET /'; first: its Content-Length is not a number`).

use std::cell::Cell;

use stats::ErrorKind;

thread_local! {
    static WHY: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// A `protocol` error because the answer broke `rule`.
pub(crate) fn protocol(rule: &'static str) -> ErrorKind {
    WHY.set(Some(rule));
    ErrorKind::Protocol
}

/// The rule the latest `protocol` error on this thread broke, once; `None` when its machine
/// said none.
pub(crate) fn take() -> Option<&'static str> {
    WHY.take()
}

/// Records a `protocol` error's reason on `rec` (a generic one when its machine said none),
/// and forgets a reason left by an error of another kind.
pub(crate) fn keep(rec: &mut stats::Bucket, kind: ErrorKind) {
    let why = take();
    if kind == ErrorKind::Protocol {
        rec.note_protocol_failure(why.unwrap_or("the answer broke its protocol's framing"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_is_kept_and_a_stale_one_never_lingers() {
        let mut rec = stats::Bucket::new(0);
        let _ = protocol("its Content-Length is not a number");
        keep(&mut rec, ErrorKind::Protocol);
        let _ = protocol("its status is outside 100-599");
        keep(&mut rec, ErrorKind::Protocol);
        assert_eq!(
            rec.protocol_failure.as_deref().map(String::as_str),
            Some("its Content-Length is not a number")
        );
        // A reason set by a machine whose error became another kind is dropped with it.
        let _ = protocol("stale");
        keep(&mut rec, ErrorKind::Timeout);
        assert_eq!(take(), None);
        let mut fresh = stats::Bucket::new(0);
        keep(&mut fresh, ErrorKind::Protocol);
        assert_eq!(
            fresh.protocol_failure.as_deref().map(String::as_str),
            Some("the answer broke its protocol's framing")
        );
    }
}
