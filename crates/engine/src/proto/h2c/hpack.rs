//! HPACK decoding (RFC 7541): a response's header block to its fields, keeping the dynamic
//! table in step with the server's. Bounded: the table never exceeds the size our SETTINGS
//! allow (4096, the default), integers past 2^32 and strings past the block are errors.

use crate::proto::huffman;
use std::collections::VecDeque;

/// Our SETTINGS_HEADER_TABLE_SIZE (the default): the most a size update may ask for.
const MAX_TABLE: usize = 4096;

/// RFC 7541 Appendix A.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// A block that cannot be decoded: the connection cannot go on (its table is lost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bad;

/// The decoder's state: the dynamic table, newest first.
pub struct Decoder {
    table: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    max: usize,
    /// Huffman-decoded strings, reused.
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max: MAX_TABLE,
            name: Vec::new(),
            value: Vec::new(),
        }
    }
}

impl Decoder {
    /// Decodes `block`, calling `each` with every field's name and value.
    pub fn decode(&mut self, block: &[u8], mut each: impl FnMut(&[u8], &[u8])) -> Result<(), Bad> {
        let mut at = 0;
        let mut fields = false;
        while at < block.len() {
            let b = block[at];
            if b & 0x80 != 0 {
                let (i, n) = int(&block[at..], 7)?;
                at += n;
                let (name, value) = self.entry(i)?;
                each(name, value);
                fields = true;
            } else if b & 0xe0 == 0x20 {
                // A size update: only before the first field.
                let (size, n) = int(&block[at..], 5)?;
                at += n;
                if fields || size > MAX_TABLE {
                    return Err(Bad);
                }
                self.max = size;
                self.evict(0);
            } else {
                let (prefix, index) = if b & 0xc0 == 0x40 {
                    (6, true)
                } else {
                    (4, false)
                };
                let (i, n) = int(&block[at..], prefix)?;
                at += n;
                let mut name = std::mem::take(&mut self.name);
                let mut value = std::mem::take(&mut self.value);
                name.clear();
                value.clear();
                if i == 0 {
                    at += string(&block[at..], &mut name)?;
                } else {
                    name.extend_from_slice(self.entry(i)?.0);
                }
                at += string(&block[at..], &mut value)?;
                each(&name, &value);
                fields = true;
                if index {
                    self.insert(name.clone(), value.clone());
                }
                self.name = name;
                self.value = value;
            }
        }
        Ok(())
    }

    fn entry(&self, i: usize) -> Result<(&[u8], &[u8]), Bad> {
        match i {
            0 => Err(Bad),
            1..=61 => {
                let (n, v) = STATIC[i - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => self
                .table
                .get(i - 62)
                .map(|(n, v)| (n.as_slice(), v.as_slice()))
                .ok_or(Bad),
        }
    }

    fn insert(&mut self, name: Vec<u8>, value: Vec<u8>) {
        let size = name.len() + value.len() + 32;
        self.evict(size);
        if size <= self.max {
            self.size += size;
            self.table.push_front((name, value));
        }
    }

    /// Drops the oldest entries until `room` more fits (all of them when it cannot).
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            let Some((n, v)) = self.table.pop_back() else {
                break;
            };
            self.size -= n.len() + v.len() + 32;
        }
    }
}

/// An integer with an `n`-bit prefix (RFC 7541 §5.1): its value and the bytes it took.
fn int(b: &[u8], n: u32) -> Result<(usize, usize), Bad> {
    let max = (1usize << n) - 1;
    let first = usize::from(*b.first().ok_or(Bad)?) & max;
    if first < max {
        return Ok((first, 1));
    }
    let mut v = max;
    for (k, &byte) in b[1..].iter().enumerate() {
        if k >= 4 {
            return Err(Bad); // past 2^32: no header block needs that
        }
        v += usize::from(byte & 0x7f) << (7 * k);
        if byte & 0x80 == 0 {
            return Ok((v, k + 2));
        }
    }
    Err(Bad)
}

/// A string literal (RFC 7541 §5.2) into `out`: the bytes it took.
fn string(b: &[u8], out: &mut Vec<u8>) -> Result<usize, Bad> {
    let huffman = b.first().ok_or(Bad)? & 0x80 != 0;
    let (len, n) = int(b, 7)?;
    let raw = b.get(n..n.checked_add(len).ok_or(Bad)?).ok_or(Bad)?;
    if huffman {
        huffman::decode(raw, out).map_err(|_| Bad)?;
    } else {
        out.extend_from_slice(raw);
    }
    Ok(n + len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(d: &mut Decoder, block: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        d.decode(block, |n, v| {
            out.push((
                String::from_utf8_lossy(n).to_string(),
                String::from_utf8_lossy(v).to_string(),
            ))
        })
        .expect("decodes");
        out
    }

    #[test]
    fn rfc_7541_c6_responses_with_huffman() {
        // C.6.1: the first response, every field indexed into the table.
        let c61 = hex("488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3");
        // The examples' table holds 256 bytes.
        let mut d = Decoder {
            max: 256,
            ..Decoder::default()
        };
        let want = [
            (":status", "302"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
            ("location", "https://www.example.com"),
        ];
        let got = fields(&mut d, &c61);
        assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())));
        assert_eq!(d.size, 222);
        // C.6.2: ":status 307" evicts ":status 302"; the rest comes from the table.
        let c62 = hex("4883640effc1c0bf");
        let got = fields(&mut d, &c62);
        assert_eq!(got[0], (":status".into(), "307".into()));
        assert_eq!(
            got[3],
            ("location".into(), "https://www.example.com".into())
        );
        assert_eq!(d.size, 222);
    }

    #[test]
    fn hostile_blocks_are_errors_not_panics() {
        let mut d = Decoder::default();
        for bad in [
            &[0x80][..],                           // index 0
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // an index past 2^32
            &[0xbf],                               // index 62 of an empty table
            &[0x3f, 0xe2, 0x1f],                   // a table of 4097 bytes: over ours
            &[0x40, 0x85, 0x61],                   // a name longer than the block
            &[0x82, 0x20],                         // a size update after a field
        ] {
            assert_eq!(d.decode(bad, |_, _| {}), Err(Bad), "{bad:?}");
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }
}
