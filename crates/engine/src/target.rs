//! The request given on the command line (method, headers, body): it becomes the workload's
//! single step.

use bytes::Bytes;
use model::{parse_header, Target, TargetError};
use workload::Request;

/// One request as the user described it.
#[derive(Clone, Debug)]
pub struct RequestSpec {
    pub target: Target,
    pub method: String,
    /// `(name, value)` pairs in the order given.
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl RequestSpec {
    /// A request; `headers` are `Name: value` strings as given on the command line.
    pub fn new(
        target: Target,
        method: &str,
        headers: &[String],
        body: Bytes,
    ) -> Result<RequestSpec, TargetError> {
        let method = method.to_ascii_uppercase();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(TargetError::Method(method));
        }
        let headers = headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<_, _>>()?;
        Ok(RequestSpec {
            target,
            method,
            headers,
            body,
        })
    }

    /// The request as the workload's single step, named `METHOD /path`.
    pub fn request(&self) -> Request {
        let name = format!("{} {}", self.method, self.target.path);
        Request::fixed(
            &name,
            &self.method,
            &self.target.path,
            &self.headers,
            &self.body,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_a_post() {
        let t = Target::parse("http://127.0.0.1:8080/register").unwrap();
        let r = RequestSpec::new(
            t,
            "post",
            &["Content-Type: application/json".into()],
            Bytes::from("{}"),
        )
        .unwrap();
        let w = workload::Workload::single(r.request());
        let mut vu = workload::Vu::new(&w, 0);
        vu.next(&w);
        vu.render_h1(&w, "127.0.0.1:8080", false).unwrap();
        let s = String::from_utf8(vu.buf.clone()).unwrap();
        assert!(
            s.starts_with("POST /register HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
            "{s}"
        );
        assert!(s.contains("Connection: close\r\n"));
        assert!(s.contains("Content-Type: application/json\r\n"));
        assert!(s.ends_with("Content-Length: 2\r\n\r\n{}"));
    }
}
