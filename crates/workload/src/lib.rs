//! What a run sends, apart from how it is sent: requests, weighted mixes and flows
//! ([`request`]), the templates they are written in and the data sets those read
//! ([`template`]), gRPC messages written as templated JSON ([`message`]), what is taken
//! back from responses under a memory budget ([`capture`]), what answers are checked for
//! ([`check`]), and the trace context stamped on each request ([`trace`]).
//! Plans compile into these types and the engine walks them, so this crate has no runtime,
//! no sockets and no TLS: a plan can be read, checked and rendered without the engine.

pub mod capture;
mod cells;
pub mod check;
pub mod llm;
pub mod message;
mod request;
pub mod resume;
pub mod template;
pub mod trace;

pub use capture::{Captured, Extractor};
pub use cells::Cells;
pub use check::Check;
pub use message::{Codec, Message, Streaming};
pub use request::{Answer, H2Parts, Request, StepComplete, Vu, Workload, WsStep};
pub use template::Table;
