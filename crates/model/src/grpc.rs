//! gRPC status codes: their names (as counted in results and written in `--ok-codes`), and the
//! code a response carries, read from its HTTP status and `grpc-status` as the gRPC spec says.

/// The codes' names, by number (0-16).
pub const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// `OK`, `UNAVAILABLE`, ...; `CODE_n` beyond 16.
pub fn name(code: u16) -> String {
    CODES
        .get(code as usize)
        .map_or_else(|| format!("CODE_{code}"), |n| n.to_string())
}

/// A code from its name (any case) or number.
pub fn parse(text: &str) -> Option<u16> {
    let t = text.trim();
    if let Ok(n) = t.parse::<u16>() {
        return (n <= 16).then_some(n);
    }
    CODES
        .iter()
        .position(|c| c.eq_ignore_ascii_case(t))
        .map(|i| i as u16)
}

/// `OK,NOT_FOUND` (names or numbers, comma-separated): the codes that count as success.
pub fn parse_list(text: &str) -> Result<Vec<u16>, String> {
    text.split(',')
        .map(|c| {
            parse(c).ok_or_else(|| {
                format!(
                    "'{}' is not a gRPC status code (OK, CANCELLED, ..., UNAUTHENTICATED, or 0-16)",
                    c.trim()
                )
            })
        })
        .collect()
}

/// The status of a gRPC response: a response that is not HTTP 200 maps as the spec says
/// (400 INTERNAL, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 UNIMPLEMENTED, 429 and
/// 502-504 UNAVAILABLE, else UNKNOWN); otherwise its `grpc-status` (trailer, or header for a
/// trailers-only answer), and INTERNAL when there is none (the call did not complete).
pub fn status_of(http_status: u16, grpc_status: Option<&[u8]>) -> u16 {
    if http_status != 200 {
        return match http_status {
            400 => 13,
            401 => 16,
            403 => 7,
            404 => 12,
            429 | 502..=504 => 14,
            _ => 2,
        };
    }
    match grpc_status.and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<u16>().ok()) {
        Some(code) if code <= 16 => code,
        Some(_) => 2,
        None => 13,
    }
}

/// DEADLINE_EXCEEDED: the call's deadline passed, whoever noticed first.
pub const DEADLINE_EXCEEDED: u16 = 4;
/// CANCELLED.
pub const CANCELLED: u16 = 1;

/// The status of a call whose stream the server reset with HTTP/2 error `reason`, as grpc-go
/// maps it: REFUSED_STREAM is UNAVAILABLE, CANCEL is CANCELLED (DEADLINE_EXCEEDED once the
/// call's deadline has passed, the likely cause), ENHANCE_YOUR_CALM is RESOURCE_EXHAUSTED,
/// INADEQUATE_SECURITY is PERMISSION_DENIED, anything else INTERNAL.
pub fn status_of_reset(reason: u32, past_deadline: bool) -> u16 {
    match reason {
        0x7 => 14,
        0x8 if past_deadline => DEADLINE_EXCEEDED,
        0x8 => CANCELLED,
        0xb => 8,
        0xc => 7,
        _ => 13,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_as_the_spec_says() {
        assert_eq!(status_of(200, Some(b"0")), 0);
        assert_eq!(status_of(200, Some(b"14")), 14);
        assert_eq!(status_of(200, Some(b"99")), 2);
        assert_eq!(status_of(200, None), 13);
        assert_eq!(status_of(503, Some(b"0")), 14);
        assert_eq!(status_of(404, None), 12);
        assert_eq!(status_of(500, None), 2);
        assert_eq!(name(14), "UNAVAILABLE");
        assert_eq!(name(20), "CODE_20");
        assert_eq!(parse("unavailable"), Some(14));
        assert_eq!(parse("5"), Some(5));
        assert_eq!(parse("17"), None);
        assert_eq!(parse("NOPE"), None);
    }

    #[test]
    fn resets_read_as_grpc_go_reads_them() {
        assert_eq!(status_of_reset(0x8, true), DEADLINE_EXCEEDED);
        assert_eq!(status_of_reset(0x8, false), CANCELLED);
        assert_eq!(status_of_reset(0x7, true), 14);
        assert_eq!(status_of_reset(0x2, false), 13);
        assert_eq!(status_of_reset(0xb, false), 8);
    }
}
