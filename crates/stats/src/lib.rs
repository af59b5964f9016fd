//! Measurements shared by every layer: what one request can end as ([`ErrorKind`]), what one
//! worker saw in one second ([`Bucket`]), and what a whole run adds up to ([`Totals`]). Everything here merges exactly, so per-worker, per-second data can be combined
//! across threads (and later steps and machines) without losing a single count.

pub mod bounds;
mod bucket;
pub mod capacity;
pub mod events;
mod hist;
mod kind;
pub mod llm;
pub mod rng;
pub mod slo;
pub mod sparse;
mod summary;
mod timeline;
pub mod traces;
mod wire;

pub use bucket::{
    Bucket, CheckOutcome, Checked, Refusal, Setup, StatusCounts, Streamed, WsCounts, ZeroRtt,
};
pub use hist::{
    decode, encode, encode_plain, new_histogram, DecodeError, Histogram, HIST_DIGITS, HIST_MAX_US,
};
pub use kind::ErrorKind;
pub use summary::{Grace, LatencySummary, Totals};
pub use timeline::Timeline;
pub use wire::{Decoded, WireBucket, WireChecked, WireTrace};
