//! HPACK's Huffman code (RFC 7541 Appendix B), which QPACK uses too for its string literals
//! (RFC 9204 §4.1.2): one decoder for what a server sends over brink's own HTTP/2 (h2c) and
//! HTTP/3 readers; brink never Huffman-codes what it sends. The code table is the RFC's; the
//! decoder is a state machine over 4-bit steps built from it on first use, so decoding costs two
//! table lookups per byte.

use std::sync::OnceLock;

/// Each symbol's code (right-aligned), symbols 0-255 then EOS (256).
const CODES: [u32; 257] = [
    0x1ff8, 0x7fffd8, 0xfffffe2, 0xfffffe3, 0xfffffe4, 0xfffffe5, 0xfffffe6, 0xfffffe7, 0xfffffe8,
    0xffffea, 0x3ffffffc, 0xfffffe9, 0xfffffea, 0x3ffffffd, 0xfffffeb, 0xfffffec, 0xfffffed,
    0xfffffee, 0xfffffef, 0xffffff0, 0xffffff1, 0xffffff2, 0x3ffffffe, 0xffffff3, 0xffffff4,
    0xffffff5, 0xffffff6, 0xffffff7, 0xffffff8, 0xffffff9, 0xffffffa, 0xffffffb, 0x14, 0x3f8,
    0x3f9, 0xffa, 0x1ff9, 0x15, 0xf8, 0x7fa, 0x3fa, 0x3fb, 0xf9, 0x7fb, 0xfa, 0x16, 0x17, 0x18,
    0x0, 0x1, 0x2, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x5c, 0xfb, 0x7ffc, 0x20, 0xffb,
    0x3fc, 0x1ffa, 0x21, 0x5d, 0x5e, 0x5f, 0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70, 0x71, 0x72, 0xfc, 0x73, 0xfd, 0x1ffb, 0x7fff0,
    0x1ffc, 0x3ffc, 0x22, 0x7ffd, 0x3, 0x23, 0x4, 0x24, 0x5, 0x25, 0x26, 0x27, 0x6, 0x74, 0x75,
    0x28, 0x29, 0x2a, 0x7, 0x2b, 0x76, 0x2c, 0x8, 0x9, 0x2d, 0x77, 0x78, 0x79, 0x7a, 0x7b, 0x7ffe,
    0x7fc, 0x3ffd, 0x1ffd, 0xffffffc, 0xfffe6, 0x3fffd2, 0xfffe7, 0xfffe8, 0x3fffd3, 0x3fffd4,
    0x3fffd5, 0x7fffd9, 0x3fffd6, 0x7fffda, 0x7fffdb, 0x7fffdc, 0x7fffdd, 0x7fffde, 0xffffeb,
    0x7fffdf, 0xffffec, 0xffffed, 0x3fffd7, 0x7fffe0, 0xffffee, 0x7fffe1, 0x7fffe2, 0x7fffe3,
    0x7fffe4, 0x1fffdc, 0x3fffd8, 0x7fffe5, 0x3fffd9, 0x7fffe6, 0x7fffe7, 0xffffef, 0x3fffda,
    0x1fffdd, 0xfffe9, 0x3fffdb, 0x3fffdc, 0x7fffe8, 0x7fffe9, 0x1fffde, 0x7fffea, 0x3fffdd,
    0x3fffde, 0xfffff0, 0x1fffdf, 0x3fffdf, 0x7fffeb, 0x7fffec, 0x1fffe0, 0x1fffe1, 0x3fffe0,
    0x1fffe2, 0x7fffed, 0x3fffe1, 0x7fffee, 0x7fffef, 0xfffea, 0x3fffe2, 0x3fffe3, 0x3fffe4,
    0x7ffff0, 0x3fffe5, 0x3fffe6, 0x7ffff1, 0x3ffffe0, 0x3ffffe1, 0xfffeb, 0x7fff1, 0x3fffe7,
    0x7ffff2, 0x3fffe8, 0x1ffffec, 0x3ffffe2, 0x3ffffe3, 0x3ffffe4, 0x7ffffde, 0x7ffffdf,
    0x3ffffe5, 0xfffff1, 0x1ffffed, 0x7fff2, 0x1fffe3, 0x3ffffe6, 0x7ffffe0, 0x7ffffe1, 0x3ffffe7,
    0x7ffffe2, 0xfffff2, 0x1fffe4, 0x1fffe5, 0x3ffffe8, 0x3ffffe9, 0xffffffd, 0x7ffffe3, 0x7ffffe4,
    0x7ffffe5, 0xfffec, 0xfffff3, 0xfffed, 0x1fffe6, 0x3fffe9, 0x1fffe7, 0x1fffe8, 0x7ffff3,
    0x3fffea, 0x3fffeb, 0x1ffffee, 0x1ffffef, 0xfffff4, 0xfffff5, 0x3ffffea, 0x7ffff4, 0x3ffffeb,
    0x7ffffe6, 0x3ffffec, 0x3ffffed, 0x7ffffe7, 0x7ffffe8, 0x7ffffe9, 0x7ffffea, 0x7ffffeb,
    0xffffffe, 0x7ffffec, 0x7ffffed, 0x7ffffee, 0x7ffffef, 0x7fffff0, 0x3ffffee, 0x3fffffff,
];

/// Each code's length in bits.
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/// A code that cannot be read: a bit sequence no symbol has, EOS inside the string, or
/// padding that is not the start of EOS or is longer than 7 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadCode;

/// One 4-bit step from a state: the next state, and the symbol it completed, if any.
#[derive(Clone, Copy, Default)]
struct Step {
    next: u8,
    sym: u8,
    flags: u8,
}

const EMIT: u8 = 1;
const FAIL: u8 = 2;
/// A child slot of the code tree: unset, an inner node's index, or a leaf (`LEAF | symbol`).
const LEAF: u16 = 0x8000;

/// The state machine: 16 steps for each inner node of the code tree (256 of them), and for
/// each node whether ending there is valid padding.
struct Machine {
    steps: Vec<[Step; 16]>,
    may_end: Vec<bool>,
}

fn machine() -> &'static Machine {
    static M: OnceLock<Machine> = OnceLock::new();
    M.get_or_init(build)
}

/// The code tree: inner nodes with two child slots each, the root at 0.
fn tree() -> Vec<[u16; 2]> {
    let mut nodes = vec![[0u16; 2]];
    for (sym, (&code, &len)) in CODES.iter().zip(&LENGTHS).enumerate() {
        let mut at = 0usize;
        for i in (0..len).rev() {
            let bit = ((code >> i) & 1) as usize;
            if i == 0 {
                nodes[at][bit] = LEAF | sym as u16;
            } else {
                if nodes[at][bit] == 0 {
                    nodes.push([0; 2]);
                    nodes[at][bit] = (nodes.len() - 1) as u16;
                }
                at = usize::from(nodes[at][bit]);
            }
        }
    }
    nodes
}

fn build() -> Machine {
    let nodes = tree();
    // Valid padding: the first up to 7 bits of EOS, all ones.
    let mut may_end = vec![false; nodes.len()];
    let mut at = 0usize;
    may_end[0] = true;
    for _ in 0..7 {
        at = usize::from(nodes[at][1]);
        may_end[at] = true;
    }
    let steps = (0..nodes.len())
        .map(|n| std::array::from_fn(|nibble| step(&nodes, n, nibble)))
        .collect();
    Machine { steps, may_end }
}

/// Where 4 bits lead from node `n`; a code is at least 5 bits, so a step completes at most
/// one symbol.
fn step(nodes: &[[u16; 2]], n: usize, nibble: usize) -> Step {
    let mut out = Step::default();
    let mut at = n;
    for i in (0..4).rev() {
        let child = nodes[at][(nibble >> i) & 1];
        if child & LEAF != 0 {
            let sym = child & !LEAF;
            if sym > 255 {
                out.flags = FAIL;
                return out;
            }
            (out.sym, out.flags, at) = (sym as u8, EMIT, 0);
        } else {
            at = usize::from(child);
        }
    }
    out.next = at as u8;
    out
}

/// Decodes `src` onto the end of `out`.
pub fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), BadCode> {
    let m = machine();
    let mut state = 0usize;
    for &b in src {
        for nibble in [b >> 4, b & 0xf] {
            let s = m.steps[state][usize::from(nibble)];
            if s.flags & FAIL != 0 {
                return Err(BadCode);
            }
            if s.flags & EMIT != 0 {
                out.push(s.sym);
            }
            state = usize::from(s.next);
        }
    }
    if m.may_end[state] {
        Ok(())
    } else {
        Err(BadCode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes as the RFC does (for the tests: brink sends no Huffman).
    fn encode(src: &[u8]) -> Vec<u8> {
        let (mut out, mut acc, mut bits) = (Vec::new(), 0u64, 0u32);
        for &b in src {
            let (code, len) = (
                u64::from(CODES[usize::from(b)]),
                u32::from(LENGTHS[usize::from(b)]),
            );
            acc = (acc << len) | code;
            bits += len;
            while bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        if bits > 0 {
            out.push(((acc << (8 - bits)) as u8) | (0xff >> bits));
        }
        out
    }

    #[test]
    fn the_rfc_examples_decode() {
        // RFC 7541 C.4.1 and C.6.1.
        let cases: [(&[u8], &str); 3] = [
            (
                &[
                    0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
                ],
                "www.example.com",
            ),
            (&[0x64, 0x02], "302"),
            (&[0xae, 0xc3, 0x77, 0x1a, 0x4b], "private"),
        ];
        for (code, text) in cases {
            let mut out = Vec::new();
            decode(code, &mut out).unwrap();
            assert_eq!(out, text.as_bytes());
        }
    }

    #[test]
    fn every_byte_round_trips_in_every_neighbourhood() {
        for b in 0..=255u8 {
            for text in [vec![b], vec![b'a', b, b'z'], vec![b; 7]] {
                let mut out = Vec::new();
                decode(&encode(&text), &mut out).unwrap();
                assert_eq!(out, text, "byte {b}");
            }
        }
    }

    #[test]
    fn whole_strings_round_trip() {
        let all: Vec<u8> = (0..=255).collect();
        for s in [&b"www.example.com"[..], b"no-cache", b"", &all] {
            let mut out = Vec::new();
            decode(&encode(s), &mut out).unwrap();
            assert_eq!(out, s);
        }
    }

    #[test]
    fn bad_padding_and_eos_are_refused() {
        let mut out = Vec::new();
        // '0' is 00000 (5 bits); padding with zeros is not EOS's prefix.
        assert_eq!(decode(&[0x00], &mut out), Err(BadCode));
        // A whole byte of ones after a full symbol: 8 bits of padding (more than 7).
        let mut padded = encode(b"0");
        padded.push(0xff);
        assert_eq!(decode(&padded, &mut out), Err(BadCode));
        // EOS itself (30 ones) inside the string.
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xfc], &mut out), Err(BadCode));
        // The empty string is fine.
        assert_eq!(decode(&[], &mut out), Ok(()));
    }
}
