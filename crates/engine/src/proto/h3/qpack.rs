//! QPACK (RFC 9204) as brink reads a server's field sections: static-table references and
//! literals, Huffman or not. brink's SETTINGS allow no dynamic table, so a section that
//! refers to one is an error (QPACK_DECOMPRESSION_FAILED), as is any length past the
//! section's end.

use crate::proto::huffman;

/// A field section brink cannot read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Undecodable;

/// Calls `each` with every field line of `block`, in order: name, then value.
pub fn decode(
    block: &[u8],
    scratch: &mut (Vec<u8>, Vec<u8>),
    mut each: impl FnMut(&[u8], &[u8]),
) -> Result<(), Undecodable> {
    let mut r = Reader { b: block, at: 0 };
    // Required Insert Count must be 0 (no dynamic table); the Base that follows is unused.
    if r.int(8)? != 0 {
        return Err(Undecodable);
    }
    r.int(7)?;
    while r.at < block.len() {
        let first = block[r.at];
        let (name, value): (&[u8], &[u8]) = if first & 0x80 != 0 {
            // Indexed field line: static only (T bit).
            if first & 0x40 == 0 {
                return Err(Undecodable);
            }
            let (n, v) = entry(r.int(6)?)?;
            (n.as_bytes(), v.as_bytes())
        } else if first & 0x40 != 0 {
            // Literal with a name reference: static only (T bit).
            if first & 0x10 == 0 {
                return Err(Undecodable);
            }
            let (n, _) = entry(r.int(4)?)?;
            scratch.1.clear();
            (n.as_bytes(), r.string(7, &mut scratch.1)?)
        } else if first & 0x20 != 0 {
            // Literal with a literal name.
            scratch.0.clear();
            scratch.1.clear();
            let name = r.string(3, &mut scratch.0)?;
            (name, r.string(7, &mut scratch.1)?)
        } else {
            // Indexed post-base, or a literal naming a post-base entry: dynamic.
            return Err(Undecodable);
        };
        each(name, value);
    }
    Ok(())
}

fn entry(i: u64) -> Result<(&'static str, &'static str), Undecodable> {
    usize::try_from(i)
        .ok()
        .and_then(|i| STATIC.get(i))
        .copied()
        .ok_or(Undecodable)
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A prefixed integer (RFC 7541 §5.1) in the low `bits` bits of the next byte; at most
    /// 2^32, which no section brink reads needs.
    fn int(&mut self, bits: u32) -> Result<u64, Undecodable> {
        let max = (1u64 << bits) - 1;
        let first = *self.b.get(self.at).ok_or(Undecodable)?;
        self.at += 1;
        let mut v = u64::from(first) & max;
        if v < max {
            return Ok(v);
        }
        for shift in (0..35).step_by(7) {
            let b = *self.b.get(self.at).ok_or(Undecodable)?;
            self.at += 1;
            v += u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Undecodable)
    }

    /// A string literal whose length is in the low `bits` bits of the next byte, with the
    /// Huffman flag just above them: the bytes in the block, or decoded into `out`.
    fn string<'o>(&mut self, bits: u32, out: &'o mut Vec<u8>) -> Result<&'o [u8], Undecodable>
    where
        'a: 'o,
    {
        let huff = self.b.get(self.at).ok_or(Undecodable)? & (1 << bits) != 0;
        let len = usize::try_from(self.int(bits)?).map_err(|_| Undecodable)?;
        let end = self.at.checked_add(len).ok_or(Undecodable)?;
        let raw = self.b.get(self.at..end).ok_or(Undecodable)?;
        self.at = end;
        if !huff {
            return Ok(raw);
        }
        huffman::decode(raw, out).map_err(|_| Undecodable)?;
        Ok(out)
    }
}

/// The static table (RFC 9204 Appendix A).
const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

#[cfg(test)]
mod tests {
    use super::super::wire;
    use super::*;

    fn fields(block: &[u8]) -> Result<Vec<(String, String)>, Undecodable> {
        let mut out = Vec::new();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        decode(block, &mut Default::default(), |n, v| {
            out.push((text(n), text(v)))
        })?;
        Ok(out)
    }

    #[test]
    fn a_request_brink_encodes_reads_back_whole() {
        let long = "v".repeat(300);
        let headers: [(&str, &[u8]); 5] = [
            ("X-Trace", b"abc"),
            ("Connection", b"keep-alive"),
            ("x-long", long.as_bytes()),
            ("TE", b"gzip"),
            ("te", b"trailers"),
        ];
        for (method, path) in [("GET", "/"), ("PATCH", "/a?b=c")] {
            let mut frame = Vec::new();
            let head = wire::Head {
                method,
                authority: "localhost:8443",
                path,
                headers: &headers,
            };
            wire::put_headers(&mut frame, &head);
            let (_, a) = wire::varint(&frame).unwrap();
            let (len, b) = wire::varint(&frame[a..]).unwrap();
            assert_eq!(len as usize, frame.len() - a - b);
            let got = fields(&frame[a + b..]).unwrap();
            let want: Vec<(String, String)> = [
                (":method", method),
                (":scheme", "https"),
                (":authority", "localhost:8443"),
                (":path", path),
                ("x-trace", "abc"),
                ("x-long", long.as_str()),
                ("te", "trailers"),
            ]
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn huffman_literals_are_decoded() {
        // `content-type` (static 44's name) with a Huffman value, and a Huffman name and value
        // (RFC 7541 C.4.1's "www.example.com" as both).
        let www = [
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        let mut block = vec![0, 0, 0xd9, 0x5f, 0x1d, 0x80 | www.len() as u8];
        block.extend_from_slice(&www);
        block.extend_from_slice(&[0x28 | 7, 12 - 7]);
        block.extend_from_slice(&www);
        block.extend_from_slice(&[0x80 | www.len() as u8]);
        block.extend_from_slice(&www);
        let got = fields(&block).unwrap();
        assert_eq!(got[0], (":status".into(), "200".into()));
        assert_eq!(got[1], ("content-type".into(), "www.example.com".into()));
        assert_eq!(got[2], ("www.example.com".into(), "www.example.com".into()));
    }

    #[test]
    fn dynamic_references_and_cut_sections_are_refused() {
        let refused: [&[u8]; 8] = [
            &[0x01, 0x00, 0xd9],                   // a Required Insert Count: a dynamic table
            &[0x00, 0x00, 0x80],                   // indexed, dynamic
            &[0x00, 0x00, 0x10],                   // indexed, post-base
            &[0x00, 0x00, 0x40, 0x00],             // name reference, dynamic
            &[0x00, 0x00, 0x00, 0x00],             // name reference, post-base
            &[0x00, 0x00, 0xff, 0x64],             // static index 163: past the table
            &[0x00, 0x00, 0x5f, 0x1d, 0x05, b'a'], // a value longer than the section
            &[0x00, 0x00, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], // an endless index
        ];
        for block in refused {
            assert_eq!(fields(block), Err(Undecodable), "{block:?}");
        }
        assert_eq!(fields(&[0x00]), Err(Undecodable));
        assert_eq!(fields(&[0x00, 0x00]).unwrap(), vec![]);
    }
}
