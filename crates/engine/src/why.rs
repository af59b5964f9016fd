//! Why an answer failed: the rule the server's answer broke, in words.
//!
//! Protocol machines return a bare [`ErrorKind`] (one byte, cheap on the hot path, and the
//! same value on every transport). Where a machine knows why an answer failed (the rule it
//! broke, the way it ended), it says so here, on its worker's thread, as it fails
//! ([`protocol`], [`failed`]); the worker takes the reason as it records the error and keeps
//! the first of each kind, which the summary prints beside the count
//! (`protocol 5,281 of 'GET /'; first: its Content-Length is not a number`).

use std::borrow::Cow;
use std::cell::RefCell;

use stats::ErrorKind;

thread_local! {
    static WHY: RefCell<Option<(ErrorKind, Cow<'static, str>)>> = const { RefCell::new(None) };
}

/// A `protocol` error because the answer broke `rule`.
pub(crate) fn protocol(rule: &'static str) -> ErrorKind {
    failed(ErrorKind::Protocol, rule)
}

/// An error of `kind`, for the reason `why`.
pub(crate) fn failed(kind: ErrorKind, why: impl Into<Cow<'static, str>>) -> ErrorKind {
    WHY.with_borrow_mut(|w| *w = Some((kind, why.into())));
    kind
}

/// The latest reason said on this thread, once; `None` when its machine said none.
fn take() -> Option<(ErrorKind, Cow<'static, str>)> {
    WHY.with_borrow_mut(Option::take)
}

/// Records why an error of `kind` happened on `rec` (the reason said for it, or for a
/// `protocol` error a generic one), and forgets a reason said for another kind.
pub(crate) fn keep(rec: &mut stats::Bucket, kind: ErrorKind) {
    match take() {
        Some((k, why)) if k == kind => rec.note_answer_failure(kind, &why),
        _ if kind == ErrorKind::Protocol => {
            rec.note_answer_failure(kind, "the answer broke its protocol's framing")
        }
        _ => {}
    }
}

/// Forgets a reason left on this thread (a connection's own record says it instead).
pub(crate) fn forget() {
    let _ = take();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(rec: &stats::Bucket, kind: ErrorKind) -> Option<&str> {
        rec.answer_failures
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, w)| w.as_str())
    }

    #[test]
    fn the_first_reason_of_each_kind_is_kept_and_a_stale_one_never_lingers() {
        let mut rec = stats::Bucket::new(0);
        let _ = protocol("its Content-Length is not a number");
        keep(&mut rec, ErrorKind::Protocol);
        let _ = protocol("its status is outside 100-599");
        keep(&mut rec, ErrorKind::Protocol);
        let _ = failed(ErrorKind::Closed, format!("closed after {} bytes", 5));
        keep(&mut rec, ErrorKind::Closed);
        assert_eq!(
            first(&rec, ErrorKind::Protocol),
            Some("its Content-Length is not a number")
        );
        assert_eq!(first(&rec, ErrorKind::Closed), Some("closed after 5 bytes"));
        // A reason said for one kind is dropped when the error recorded is another.
        let _ = protocol("stale");
        keep(&mut rec, ErrorKind::Timeout);
        assert_eq!(take(), None);
        assert_eq!(first(&rec, ErrorKind::Timeout), None);
        let mut fresh = stats::Bucket::new(0);
        keep(&mut fresh, ErrorKind::Protocol);
        assert_eq!(
            first(&fresh, ErrorKind::Protocol),
            Some("the answer broke its protocol's framing")
        );
    }
}
