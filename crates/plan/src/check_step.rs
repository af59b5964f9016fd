//! A step's `check:` list compiled into [`Check`]s: one subject per check, the qualifiers that
//! subject takes, regexes and JSONPaths parsed and sizes read before any load is sent, every
//! error pointing at the value at fault. A check without a `name:` is named for what it tests
//! (`body contains "ok"`), so the summary and the result say which one failed.

use crate::compile::Cx;
use crate::error::PlanError;
use crate::file::{RawCheck, RawRequest, Scalar, S};
use model::StatusSet;
use workload::check::{HeaderWant, SizeOp, Test};
use workload::Check;

/// The keys that say what a check looks at; exactly one per check.
const SUBJECTS: &str = "status, body_contains, body_matches, json, header, size";

impl Cx<'_> {
    /// The checks of step `st`, named; their slots are numbered by the scenario. Every
    /// mistake among them is reported at once.
    pub(crate) fn checks(
        &self,
        st: &S<RawRequest>,
        protocol: model::Protocol,
    ) -> Result<Vec<Check>, PlanError> {
        let grpc = st.value.grpc.is_some();
        let ws = protocol == model::Protocol::Ws;
        let (mut ok, mut errs) = (Vec::new(), Vec::new());
        for c in &st.value.check {
            match self.check(c, grpc, ws) {
                Ok(c) => ok.push(c),
                Err(e) => errs.push(e),
            }
        }
        match PlanError::all(errs) {
            Some(e) => Err(e),
            None => Ok(ok),
        }
    }

    fn check(&self, at: &S<RawCheck>, grpc: bool, ws: bool) -> Result<Check, PlanError> {
        let c = &at.value;
        let (test, what) = self.test(at)?;
        if ws && matches!(test, Test::Status(_) | Test::Header { .. }) {
            return Err(self.err(
                at,
                "a WebSocket answer is a message: check its body (body_contains, body_matches, json, size), not a status or header",
            ));
        }
        if grpc && matches!(test, Test::Status(_)) {
            return Err(self.err(
                at,
                "a gRPC call's status is its code: set ok_codes, not a status check",
            ));
        }
        let name = match &c.name {
            Some(n) => {
                if n.value.trim().is_empty() || n.value.contains(['<', '>', '\n']) {
                    return Err(self.err(
                        n,
                        format!(
                            "check name '{}' must not be empty or hold '<', '>' or a line break (SLOs name it: check.NAME > 99%)",
                            n.value.escape_debug()
                        ),
                    ));
                }
                n.value.trim().to_string()
            }
            None if c.not => format!("not {what}"),
            None => what,
        };
        Ok(Check {
            name,
            test,
            negate: c.not,
            count_only: c.count_only,
            slot: 0,
        })
    }

    /// The check's test and a description of it (its default name).
    fn test(&self, at: &S<RawCheck>) -> Result<(Test, String), PlanError> {
        let c = &at.value;
        let subjects = [
            c.status.is_some(),
            c.body_contains.is_some(),
            c.body_matches.is_some(),
            c.json.is_some(),
            c.header.is_some(),
            c.size.is_some(),
        ];
        if subjects.iter().filter(|x| **x).count() != 1 {
            return Err(self.err(at, format!("a check tests exactly one of: {SUBJECTS}")));
        }
        self.qualifiers_fit(at)?;
        if let Some(s) = &c.status {
            let text = s.value.text();
            let set = StatusSet::parse(&text).map_err(|e| self.err(s, e.to_string()))?;
            return Ok((Test::Status(set), format!("status {text}")));
        }
        if let Some(b) = &c.body_contains {
            if b.value.is_empty() {
                return Err(self.err(b, "body_contains is empty: every body contains it"));
            }
            let what = format!("body contains \"{}\"", b.value.escape_debug());
            return Ok((Test::BodyContains(b.value.as_bytes().to_vec()), what));
        }
        if let Some(re) = &c.body_matches {
            let r = regex::bytes::Regex::new(&re.value)
                .map_err(|e| self.err(re, format!("invalid regex: {}", regex_why(&e))))?;
            return Ok((Test::BodyMatches(r), format!("body matches /{}/", re.value)));
        }
        if let Some(p) = &c.json {
            let path = serde_json_path::JsonPath::parse(&p.value)
                .map_err(|e| self.err(p, format!("invalid JSONPath '{}': {e}", p.value)))?;
            let equals = c.equals.as_ref().map(|e| e.value.clone());
            let what = match &equals {
                Some(v) => format!("{} == {v}", p.value),
                None => format!("{} exists", p.value),
            };
            return Ok((Test::Json { path, equals }, what));
        }
        if let Some(h) = &c.header {
            return self.header(c, h);
        }
        match &c.size {
            Some(s) => self.size(s),
            None => Err(self.err(at, format!("a check tests one of: {SUBJECTS}"))),
        }
    }

    /// `equals` goes with `json` or `header`; `contains` and `matches` with `header`.
    fn qualifiers_fit(&self, at: &S<RawCheck>) -> Result<(), PlanError> {
        let c = &at.value;
        if let Some(e) = &c.equals {
            if c.json.is_none() && c.header.is_none() {
                return Err(self.err(e, "'equals' goes with 'json' or 'header'"));
            }
        }
        for (key, set) in [("contains", &c.contains), ("matches", &c.matches)] {
            if let Some(v) = set {
                if c.header.is_none() {
                    let hint = if key == "contains" {
                        "body_contains"
                    } else {
                        "body_matches"
                    };
                    return Err(self.err(
                        v,
                        format!("'{key}' goes with 'header' (on the body: '{hint}')"),
                    ));
                }
            }
        }
        let wants = [
            c.equals.is_some(),
            c.contains.is_some(),
            c.matches.is_some(),
        ];
        if wants.iter().filter(|x| **x).count() > 1 {
            return Err(self.err(at, "give at most one of equals, contains, matches"));
        }
        Ok(())
    }

    fn header(&self, c: &RawCheck, h: &S<String>) -> Result<(Test, String), PlanError> {
        let name = h.value.trim().to_string();
        if !model::guard::is_token(name.as_bytes()) {
            return Err(self.err(h, format!("invalid header name '{}'", name.escape_debug())));
        }
        let (want, what) = if let Some(e) = &c.equals {
            let text = match &e.value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let what = format!("header {name} == \"{}\"", text.escape_debug());
            (HeaderWant::Equals(text), what)
        } else if let Some(s) = &c.contains {
            let what = format!("header {name} contains \"{}\"", s.value.escape_debug());
            (HeaderWant::Contains(s.value.clone()), what)
        } else if let Some(re) = &c.matches {
            let r = regex::Regex::new(&re.value)
                .map_err(|e| self.err(re, format!("invalid regex: {}", regex_why(&e))))?;
            (
                HeaderWant::Matches(r),
                format!("header {name} matches /{}/", re.value),
            )
        } else {
            (HeaderWant::Present, format!("header {name}"))
        };
        Ok((Test::Header { name, want }, what))
    }

    /// `size: "< 64KB"`, `">= 1"`, `0` (exactly).
    fn size(&self, s: &S<Scalar>) -> Result<(Test, String), PlanError> {
        let text = s.value.text();
        let t = text.trim();
        let (op, rest) = [
            ("<=", SizeOp::Le),
            (">=", SizeOp::Ge),
            ("==", SizeOp::Eq),
            ("<", SizeOp::Lt),
            (">", SizeOp::Gt),
            ("=", SizeOp::Eq),
        ]
        .iter()
        .find_map(|(p, op)| t.strip_prefix(p).map(|r| (*op, r)))
        .unwrap_or((SizeOp::Eq, t));
        let bytes = model::parse_bytes(rest).map_err(|e| {
            self.err(
                s,
                format!("size: {e}; write a comparison and a size, e.g. \"< 64KB\""),
            )
        })?;
        let what = format!("size {} {}", op.symbol(), rest.trim());
        Ok((Test::Size { op, bytes }, what))
    }
}

impl Cx<'_> {
    /// Numbers a scenario's checks in order (the slot each counts in) and keeps their names
    /// distinct: unnamed checks named alike on several requests are each named for their request
    /// too (`login: status 200`, `list: status 200`); a name given twice is an error at the second.
    pub(crate) fn number_checks(
        &self,
        steps: &mut [workload::Request],
        raw: &[&S<RawRequest>],
    ) -> Result<(), PlanError> {
        let unnamed: Vec<String> = steps
            .iter()
            .zip(raw)
            .flat_map(|(step, st)| {
                step.checks
                    .iter()
                    .zip(&st.value.check)
                    .filter(|(_, rc)| rc.value.name.is_none())
                    .map(|(c, _)| c.name.clone())
            })
            .collect();
        let shared = |name: &str| unnamed.iter().filter(|n| *n == name).count() > 1;
        let mut taken: Vec<String> = Vec::new();
        for (step, st) in steps.iter_mut().zip(raw) {
            for (c, rc) in step.checks.iter_mut().zip(&st.value.check) {
                if rc.value.name.is_none() && shared(&c.name) {
                    c.name = format!("{}: {}", step.name, c.name);
                }
                if taken.contains(&c.name) {
                    let what = match &rc.value.name {
                        Some(_) => format!(
                            "duplicate check name '{}' (give each check a distinct 'name:')",
                            c.name
                        ),
                        None => format!("check '{}' is written twice", c.name),
                    };
                    let at = rc
                        .value
                        .name
                        .as_ref()
                        .map_or_else(|| self.err(rc, ""), |n| self.err(n, ""));
                    return Err(PlanError {
                        message: what,
                        ..at
                    });
                }
                c.slot = taken.len();
                taken.push(c.name.clone());
            }
        }
        Ok(())
    }
}

/// The last line of a regex error, which says what is wrong (`unclosed group`).
fn regex_why(e: &impl std::fmt::Display) -> String {
    let text = e.to_string();
    let last = text.lines().last().unwrap_or("").trim();
    last.strip_prefix("error: ").unwrap_or(last).to_string()
}
