//! gRPC's messages inside an answer's DATA (a 5-byte header, then the length it gives),
//! counted and judged as a gRPC client judges them: too large is RESOURCE_EXHAUSTED, a
//! compressed flag without `grpc-encoding`, a bad flag or an answer that ends inside a message
//! is INTERNAL. Independent of the HTTP/2 client that carries the bytes.

use std::time::Instant;

/// What is wrong with an answer's messages, as a gRPC client judges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// A message larger than the largest allowed: RESOURCE_EXHAUSTED (grpc-go, grpc-java).
    TooLarge,
    /// The compressed flag without a `grpc-encoding`, a flag that is neither 0 nor 1, or an
    /// answer that ends inside a message: INTERNAL.
    Malformed,
}

impl Broken {
    pub fn code(self) -> u16 {
        match self {
            Broken::TooLarge => 8,
            Broken::Malformed => 13,
        }
    }
}

/// Counts gRPC messages (5-byte header, then the length it gives) across DATA frames, and
/// notes the first thing wrong with them (after which nothing more is counted).
pub struct Messages {
    header: [u8; 5],
    have: usize,
    /// Bytes of the current message still to come, once its header is complete.
    left: Option<usize>,
    pub count: u64,
    pub first: Option<Instant>,
    /// Largest message allowed.
    max: usize,
    /// The answer names a `grpc-encoding`: compressed messages are allowed.
    encoded: bool,
    broken: Option<Broken>,
}

impl Messages {
    pub fn new(max: usize, encoded: bool) -> Messages {
        Messages {
            header: [0; 5],
            have: 0,
            left: None,
            count: 0,
            first: None,
            max,
            encoded,
            broken: None,
        }
    }

    /// What was wrong, once the whole answer has been fed: a message left unfinished counts.
    pub fn fault(&self) -> Option<Broken> {
        self.broken
            .or((self.have > 0 || self.left.is_some()).then_some(Broken::Malformed))
    }

    pub fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() && self.broken.is_none() {
            match self.left {
                None => {
                    let take = (5 - self.have).min(data.len());
                    self.header[self.have..self.have + take].copy_from_slice(&data[..take]);
                    self.have += take;
                    data = &data[take..];
                    if self.have == 5 {
                        let [flag, a, b, c, d] = self.header;
                        let len = u32::from_be_bytes([a, b, c, d]) as usize;
                        self.broken = match flag {
                            _ if len > self.max => Some(Broken::TooLarge),
                            0 => None,
                            1 if self.encoded => None,
                            _ => Some(Broken::Malformed),
                        };
                        self.left = Some(len);
                    }
                }
                Some(n) => {
                    let take = n.min(data.len());
                    self.left = Some(n - take);
                    data = &data[take..];
                }
            }
            if self.left == Some(0) {
                self.count += 1;
                self.first.get_or_insert_with(Instant::now);
                (self.left, self.have) = (None, 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Broken, Messages};

    #[test]
    fn messages_are_counted_across_frames() {
        let stream: Vec<u8> = [
            &[0u8, 0, 0, 0, 3, 1, 2, 3][..],
            &[0, 0, 0, 0, 0],
            &[0, 0, 0, 0, 2, 9, 9],
        ]
        .concat();
        for cut in 0..stream.len() {
            let mut m = Messages::new(1 << 20, false);
            m.feed(&stream[..cut]);
            m.feed(&stream[cut..]);
            assert_eq!(m.count, 3, "cut at {cut}");
            assert!(m.first.is_some());
        }
        let mut m = Messages::new(1 << 20, false);
        m.feed(&stream[..7]);
        assert_eq!(
            (m.count, m.first.is_none()),
            (0, true),
            "an unfinished message"
        );
    }

    #[test]
    fn broken_answers_are_judged_as_a_grpc_client_does() {
        let judge = |bytes: &[u8], max: usize, encoded: bool| {
            let mut m = Messages::new(max, encoded);
            m.feed(bytes);
            m.fault()
        };
        let ok = [0u8, 0, 0, 0, 2, 1, 2];
        assert_eq!(judge(&ok, 2, false), None);
        assert_eq!(judge(&ok, 1, false), Some(Broken::TooLarge));
        // 4 GiB announced, 5 bytes carried: over any maximum, and unfinished.
        assert_eq!(
            judge(&[0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5], 4 << 20, false),
            Some(Broken::TooLarge)
        );
        assert_eq!(
            judge(&[0, 0, 0, 0, 9, 1, 2], 4 << 20, false),
            Some(Broken::Malformed)
        );
        assert_eq!(judge(&[0, 0, 0], 4 << 20, false), Some(Broken::Malformed));
        let compressed = [1u8, 0, 0, 0, 1, 7];
        assert_eq!(judge(&compressed, 10, false), Some(Broken::Malformed));
        assert_eq!(judge(&compressed, 10, true), None);
        assert_eq!(
            judge(&[2, 0, 0, 0, 1, 7], 10, true),
            Some(Broken::Malformed)
        );
        assert_eq!((Broken::TooLarge.code(), Broken::Malformed.code()), (8, 13));
    }
}
