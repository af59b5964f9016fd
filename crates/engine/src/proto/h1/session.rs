//! HTTP/1.1 as a [`Session`] of the tokio worker (over TLS; plain TCP runs on the epoll
//! loop): the request's bytes as [`Connector::prepare_h1`] makes them, one at a time per
//! connection.

use super::H1Conn;
use crate::net::conn::{Connector, Stream};
use crate::proto::reply::Idle;
use crate::proto::session::{Conn, Exchange, Session, Tally};
use stats::ErrorKind;
use std::task::Context;
use workload::Vu;

/// An HTTP/1.1 session over `stream`.
pub fn session(stream: Stream) -> Conn {
    Box::new(H1Conn::new(stream))
}

impl Session for H1Conn<Stream> {
    fn share(&self) -> Option<Conn> {
        None
    }

    fn idle(&mut self, cx: &mut Context<'_>, _: std::time::Duration) -> Idle {
        self.poll_idle(cx)
    }

    fn events(&mut self) -> Option<Box<crate::proto::events::Events>> {
        self.events.take()
    }

    fn send<'a>(
        &'a mut self,
        connector: &'a Connector,
        vu: &'a mut Vu,
        tally: Tally<'a>,
    ) -> Exchange<'a> {
        Box::pin(async move {
            let len = match connector.prepare_h1(vu) {
                Ok(len) => len,
                Err(kind) => return (Err::<_, ErrorKind>(kind), 0),
            };
            let step = &connector.workload.requests[vu.current];
            let capture = connector.capture_for(step);
            let r = self
                .roundtrip(
                    connector.h1_bytes(vu),
                    step.is_head(),
                    capture,
                    connector.events,
                    Some((tally, vu.current)),
                )
                .await;
            (r, len as u64)
        })
    }
}
