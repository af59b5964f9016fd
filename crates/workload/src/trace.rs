//! W3C trace context on every request (`--trace`): each attempt carries a `traceparent` with a
//! fresh random 16-byte trace id and 8-byte span id, the sampled flag set for the asked share,
//! and a `baggage` naming the run and scenario. The header is part of the request as written
//! (a fixed-width placeholder), so the id is stamped into the bytes already prepared: no
//! allocation per request. The ids come from a generator of their own, so `--seed` renders the
//! same template values with or without tracing.

use stats::rng::Rng;

/// `traceparent` before stamping: version 00, zero ids, sampled.
pub const PLACEHOLDER: &str = "00-00000000000000000000000000000000-0000000000000000-01";

/// Tracing settings of a workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Tracing {
    /// Share of requests marked sampled (0.0-1.0).
    pub ratio: f64,
    /// The `baggage` value (`brink.run=ID,brink.scenario=NAME`).
    pub baggage: String,
    /// `--trace-link`: a URL with `{trace_id}` where a trace can be opened.
    pub link: Option<String>,
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn hex_into(out: &mut [u8], bytes: &[u8]) {
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = HEX[usize::from(b >> 4)];
        pair[1] = HEX[usize::from(b & 15)];
    }
}

/// Writes a fresh `traceparent` value into `value` (which holds [`PLACEHOLDER`] or an earlier
/// stamp, 55 bytes) and returns its trace id.
pub fn stamp(value: &mut [u8], rng: &mut Rng, ratio: f64) -> [u8; 16] {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&rng.next_u64().to_be_bytes());
    id[8..].copy_from_slice(&rng.next_u64().to_be_bytes());
    if id == [0; 16] {
        id[15] = 1; // an all-zero trace id is invalid
    }
    let span = rng.next_u64().max(1).to_be_bytes();
    let sampled = ratio >= 1.0 || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= ratio;
    if value.len() >= PLACEHOLDER.len() {
        hex_into(&mut value[3..35], &id);
        hex_into(&mut value[36..52], &span);
        value[53..55].copy_from_slice(if sampled { b"01" } else { b"00" });
    }
    id
}

/// Where the `traceparent` value starts in a serialised HTTP/1.1 request, if it has one.
pub fn find_in_h1(request: &[u8]) -> Option<usize> {
    const NAME: &[u8] = b"\r\ntraceparent: ";
    request
        .windows(NAME.len())
        .position(|w| w.eq_ignore_ascii_case(NAME))
        .map(|i| i + NAME.len())
}

/// A trace id as 32 lowercase hex digits.
pub fn id_hex(id: &[u8; 16]) -> String {
    let mut out = [0u8; 32];
    hex_into(&mut out, id);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_valid_distinct_ids_in_place() {
        let mut rng = Rng::stream(1, 0);
        let mut req =
            format!("GET / HTTP/1.1\r\nHost: h\r\ntraceparent: {PLACEHOLDER}\r\n\r\n").into_bytes();
        let at = find_in_h1(&req).unwrap();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let id = stamp(&mut req[at..at + 55], &mut rng, 1.0);
            let v = std::str::from_utf8(&req[at..at + 55]).unwrap();
            let parts: Vec<&str> = v.split('-').collect();
            assert_eq!(parts.len(), 4, "{v}");
            assert_eq!((parts[0], parts[3]), ("00", "01"));
            assert_eq!(parts[1], id_hex(&id));
            assert!(parts[1]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            assert_ne!(parts[2], "0000000000000000");
            assert!(seen.insert(id), "distinct ids");
        }
        assert!(req.ends_with(b"\r\n\r\n"), "nothing else moved");
        // A ratio samples about that share.
        let mut v = PLACEHOLDER.as_bytes().to_vec();
        let sampled = (0..10_000)
            .filter(|_| {
                stamp(&mut v, &mut rng, 0.25);
                v.ends_with(b"01")
            })
            .count();
        assert!((2_200..2_800).contains(&sampled), "{sampled}");
    }
}
