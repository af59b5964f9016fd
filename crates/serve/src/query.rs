//! Reading a request target: the path, and the query string's `name=value` pairs,
//! percent-decoded (`+` is a space, as forms send it). Invalid escapes are kept as written.

/// Decodes `%XX` escapes and `+`; bytes that do not form UTF-8 become U+FFFD.
pub fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// The query's pairs, in order (a name may repeat).
pub fn pairs(query: Option<&str>) -> Vec<(String, String)> {
    query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

/// The first value of `name`, if not empty.
pub fn get<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, v)| k == name && !v.is_empty())
        .map(|(_, v)| v.as_str())
}

/// Every non-empty value of `name`.
pub fn all<'a>(pairs: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    pairs
        .iter()
        .filter(|(k, v)| k == name && !v.is_empty())
        .map(|(_, v)| v.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode_like_forms_send_them() {
        let p = pairs(Some(
            "target=http%3A%2F%2Fa%2F&tag=env%3Dci&run=1&run=2&name=a+b&x",
        ));
        assert_eq!(get(&p, "target"), Some("http://a/"));
        assert_eq!(get(&p, "tag"), Some("env=ci"));
        assert_eq!(all(&p, "run"), ["1", "2"]);
        assert_eq!(get(&p, "name"), Some("a b"));
        assert_eq!(get(&p, "x"), None);
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz%4"), "%zz%4");
        assert_eq!(decode("%é1"), "%é1");
        assert_eq!(decode("%E2%9C%93"), "✓");
    }
}
