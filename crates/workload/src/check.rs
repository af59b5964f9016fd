//! Response checks: what a plan's `check:` says a right answer looks like, beyond its status.
//! A server that answers 200 with an error page, an empty list or someone else's data is not
//! working, and a load test that counts those as successes overstates what the service can
//! take. Each check runs on every answered attempt of its request (any status) and counts a
//! pass or a failure in its own slot; a failure makes an otherwise successful attempt an error
//! of kind `check`, unless the check only counts (`count_only`), as k6's checks do.

use crate::capture::Captured;
use model::StatusSet;
use stats::CheckOutcome;

/// One check of a request's answers.
#[derive(Debug)]
pub struct Check {
    /// Unique within the scenario; SLOs name it (`check.NAME > 99.9%`).
    pub name: String,
    pub test: Test,
    /// Inverts the test (`not: true`): the answer must not match.
    pub negate: bool,
    /// A failure counts in the check's pass rate only; the attempt stays a success.
    pub count_only: bool,
    /// Where its counts go: the index of this check among all of the scenario's checks.
    pub slot: usize,
}

/// What a check tests.
#[derive(Debug)]
pub enum Test {
    /// The HTTP status is in the set.
    Status(StatusSet),
    /// The body contains these bytes.
    BodyContains(Vec<u8>),
    /// A regex matches the body.
    BodyMatches(regex::bytes::Regex),
    /// A JSONPath on a JSON body: its first match equals the value, or (`None`) it matches.
    Json {
        path: serde_json_path::JsonPath,
        equals: Option<serde_json::Value>,
    },
    /// A response header (case-insensitive name) is present, equal, containing or matching.
    Header { name: String, want: HeaderWant },
    /// The body's length in bytes compares so with a size.
    Size { op: SizeOp, bytes: u64 },
}

/// What a header check wants of the value.
#[derive(Debug)]
pub enum HeaderWant {
    Present,
    Equals(String),
    Contains(String),
    Matches(regex::Regex),
}

/// A size comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeOp {
    Lt,
    Le,
    Eq,
    Ge,
    Gt,
}

impl SizeOp {
    pub fn symbol(self) -> &'static str {
        match self {
            SizeOp::Lt => "<",
            SizeOp::Le => "<=",
            SizeOp::Eq => "==",
            SizeOp::Ge => ">=",
            SizeOp::Gt => ">",
        }
    }

    fn holds(self, a: u64, b: u64) -> bool {
        match self {
            SizeOp::Lt => a < b,
            SizeOp::Le => a <= b,
            SizeOp::Eq => a == b,
            SizeOp::Ge => a >= b,
            SizeOp::Gt => a > b,
        }
    }
}

/// Longest piece of a body or header quoted in a failure's reason.
const QUOTED: usize = 60;

impl Check {
    /// Whether the test needs the response's headers or body kept.
    pub fn needs_response(&self) -> bool {
        !matches!(self.test, Test::Status(_))
    }

    /// Whether the test reads the body's content (not only its length).
    pub fn needs_body(&self) -> bool {
        matches!(
            self.test,
            Test::BodyContains(_) | Test::BodyMatches(_) | Test::Json { .. }
        )
    }

    /// Runs the check on an answer with HTTP `status` and, when kept, its headers and body:
    /// passed, failed and why (one line, quoted values escaped and short), or not checked
    /// because brink did not keep the body (the capture budget was full): that is brink's
    /// limit, never the service's failure.
    pub fn run(&self, status: u16, kept: Option<&Captured>) -> CheckOutcome {
        let seen = match self.observe(status, kept) {
            Ok(seen) => seen,
            Err(Unseen::Failed(why)) => return CheckOutcome::Failed(why),
            Err(Unseen::NotKept(why)) => return CheckOutcome::Unchecked(why),
        };
        match (seen.holds, self.negate) {
            (true, false) | (false, true) => CheckOutcome::Passed,
            (true, true) => CheckOutcome::Failed(format!("{} (it must not)", seen.what)),
            (false, false) => CheckOutcome::Failed(seen.what),
        }
    }

    /// What the answer shows for this test, and whether the test holds on it.
    fn observe(&self, status: u16, kept: Option<&Captured>) -> Result<Seen, Unseen> {
        if let Test::Status(set) = &self.test {
            return Ok(Seen::new(set.contains(status), format!("status {status}")));
        }
        let c = kept.ok_or_else(|| Unseen::NotKept("the response was not kept".into()))?;
        if self.needs_body() {
            if let Some(why) = c.unusable() {
                return Err(Unseen::NotKept(why));
            }
        }
        Ok(match &self.test {
            Test::Status(_) => unreachable!("answered above"),
            Test::BodyContains(needle) => {
                let found = find(&c.body, needle);
                Seen::new(found, body_says(&c.body, found, "contains", needle))
            }
            Test::BodyMatches(re) => {
                let found = re.is_match(&c.body);
                let what = if found {
                    format!("the body matches /{}/", re.as_str())
                } else {
                    format!(
                        "the body does not match /{}/: {}",
                        re.as_str(),
                        quote(&c.body)
                    )
                };
                Seen::new(found, what)
            }
            Test::Json { path, equals } => {
                json(c, path, equals.as_ref()).map_err(Unseen::Failed)?
            }
            Test::Header { name, want } => header(c, name, want),
            Test::Size { op, bytes } => {
                let n = c.body_len();
                Seen::new(
                    op.holds(n, *bytes),
                    format!("the body is {n} bytes (wanted {} {bytes})", op.symbol()),
                )
            }
        })
    }
}

/// Why a test could not look at the answer: the answer itself is wrong (a body that is not
/// JSON), or brink did not keep what the test reads.
enum Unseen {
    Failed(String),
    NotKept(String),
}

/// The outcome of looking: whether the test holds, and what was seen, in words.
struct Seen {
    holds: bool,
    what: String,
}

impl Seen {
    fn new(holds: bool, what: String) -> Seen {
        Seen { holds, what }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

fn body_says(body: &[u8], found: bool, verb: &str, needle: &[u8]) -> String {
    let needle = quote(needle);
    if found {
        format!("the body {verb} {needle}")
    } else {
        format!("the body does not contain {needle}: {}", quote(body))
    }
}

fn json(
    c: &Captured,
    path: &serde_json_path::JsonPath,
    equals: Option<&serde_json::Value>,
) -> Result<Seen, String> {
    let v: serde_json::Value =
        serde_json::from_slice(&c.body).map_err(|e| format!("the body is not JSON ({e})"))?;
    let found = path.query(&v).first().cloned();
    Ok(match (found, equals) {
        (None, _) => Seen::new(false, format!("JSONPath {path} matched nothing")),
        (Some(f), None) => Seen::new(true, format!("JSONPath {path} matched {}", short(&f))),
        (Some(f), Some(want)) => Seen::new(
            same_json(&f, want),
            format!("{path} is {} (wanted {})", short(&f), short(want)),
        ),
    })
}

/// JSON equality where a number written `3` equals `3.0`.
fn same_json(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

/// A JSON value as written (strings keep their quotes), short and escaped.
fn short(v: &serde_json::Value) -> String {
    model::guard::escaped(v.to_string().as_bytes(), QUOTED)
}

fn header(c: &Captured, name: &str, want: &HeaderWant) -> Seen {
    let Some(value) = c
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
    else {
        return Seen::new(false, format!("no header {name} in the response"));
    };
    let holds = match want {
        HeaderWant::Present => true,
        HeaderWant::Equals(s) => value == s,
        HeaderWant::Contains(s) => value.contains(s.as_str()),
        HeaderWant::Matches(re) => re.is_match(value),
    };
    Seen::new(
        holds,
        format!("header {name} is {}", quote(value.as_bytes())),
    )
}

/// Bytes as a short, escaped, double-quoted excerpt.
fn quote(b: &[u8]) -> String {
    format!("\"{}\"", model::guard::escaped(b, QUOTED))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(test: Test) -> Check {
        Check {
            name: "c".into(),
            test,
            negate: false,
            count_only: false,
            slot: 0,
        }
    }

    fn answer(body: &str, headers: &[(&str, &str)]) -> Captured {
        Captured::of(
            headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body.as_bytes().to_vec(),
        )
    }

    #[test]
    fn each_test_passes_and_fails_saying_why() {
        let a = answer(
            r#"{"items":[{"id":7}],"state":"ok","n":3}"#,
            &[("Content-Type", "application/json")],
        );
        let path = |p: &str| serde_json_path::JsonPath::parse(p).unwrap();
        let pass = [
            Test::Status(StatusSet::parse("200-299").unwrap()),
            Test::BodyContains(b"\"ok\"".to_vec()),
            Test::BodyMatches(regex::bytes::Regex::new(r#""id":\d+"#).unwrap()),
            Test::Json {
                path: path("$.items[0].id"),
                equals: None,
            },
            Test::Json {
                path: path("$.n"),
                equals: Some(serde_json::json!(3.0)),
            },
            Test::Header {
                name: "content-type".into(),
                want: HeaderWant::Contains("json".into()),
            },
            Test::Size {
                op: SizeOp::Lt,
                bytes: 100,
            },
        ];
        for t in pass {
            assert_eq!(check(t).run(200, Some(&a)), CheckOutcome::Passed);
        }
        let fail = [
            (Test::Status(StatusSet::parse("200").unwrap()), "status 503"),
            (
                Test::BodyContains(b"done".to_vec()),
                "the body does not contain \"done\": \"{\"items\"",
            ),
            (
                Test::Json {
                    path: path("$.state"),
                    equals: Some(serde_json::json!("done")),
                },
                "$.state is \"ok\" (wanted \"done\")",
            ),
            (
                Test::Json {
                    path: path("$.missing"),
                    equals: None,
                },
                "JSONPath $.missing matched nothing",
            ),
            (
                Test::Header {
                    name: "x-cache".into(),
                    want: HeaderWant::Present,
                },
                "no header x-cache in the response",
            ),
            (
                Test::Size {
                    op: SizeOp::Ge,
                    bytes: 1000,
                },
                "the body is 39 bytes (wanted >= 1000)",
            ),
        ];
        for (t, why) in fail {
            let CheckOutcome::Failed(got) = check(t).run(503, Some(&a)) else {
                panic!("{why}: not a failure");
            };
            assert!(got.starts_with(why), "{got}");
        }
    }

    #[test]
    fn negation_and_bodies_that_cannot_be_read() {
        let failed = |o: CheckOutcome| match o {
            CheckOutcome::Failed(why) => why,
            other => panic!("{other:?}"),
        };
        let mut c = check(Test::BodyContains(b"error".to_vec()));
        c.negate = true;
        assert_eq!(c.run(200, Some(&answer("fine", &[]))), CheckOutcome::Passed);
        let why = failed(c.run(200, Some(&answer("an error\r\n", &[]))));
        assert_eq!(why, "the body contains \"error\" (it must not)");
        let j = check(Test::Json {
            path: serde_json_path::JsonPath::parse("$.a").unwrap(),
            equals: None,
        });
        let why = failed(j.run(200, Some(&answer("<html>", &[]))));
        assert!(why.starts_with("the body is not JSON"), "{why}");
        assert_eq!(
            j.run(200, None),
            CheckOutcome::Unchecked("the response was not kept".into()),
            "a body check without a kept response is not run, never passed nor failed"
        );
    }

    #[test]
    fn header_and_size_checks_need_no_room_for_the_body() {
        // An answer whose body did not fit (here: no room at all) keeps its headers and length.
        let mut kept = Captured::new(crate::capture::Budget::new(0));
        kept.headers = vec![("Content-Type".into(), "application/json".into())];
        kept.keep(&[b'x'; 5000]);
        let header = check(Test::Header {
            name: "content-type".into(),
            want: HeaderWant::Contains("json".into()),
        });
        assert_eq!(header.run(200, Some(&kept)), CheckOutcome::Passed);
        let size = check(Test::Size {
            op: SizeOp::Gt,
            bytes: 4096,
        });
        assert_eq!(size.run(200, Some(&kept)), CheckOutcome::Passed);
        let body = check(Test::BodyContains(b"x".to_vec()));
        assert!(
            matches!(body.run(200, Some(&kept)), CheckOutcome::Unchecked(why) if why.contains("5000 bytes")),
            "a body that did not fit is not checked, and the check says why"
        );
    }
}
