//! A plan step that is an HTTP request: method, path (under the target's own path), headers,
//! body or body file, weight, extractions (JSONPath, header, regex), checks and a per-attempt
//! completion. Templates are compiled here against the scenario's data sets and variables, and
//! every literal part is checked before any load is sent; each error points at the value at
//! fault.

use crate::compile::Cx;
use crate::error::PlanError;
use crate::file::{RawExtract, RawRequest, S};
use model::{guard, Target};
use workload::template::{Names, Template};
use workload::{Extractor, Request};

impl Cx<'_> {
    pub(crate) fn template(&self, at: &S<String>, names: &Names) -> Result<Template, PlanError> {
        Template::compile(&at.value, names).map_err(|e| self.err_in(at, e.at, e.message))
    }

    pub(crate) fn step(
        &self,
        st: &S<RawRequest>,
        target: &Target,
        scenario_headers: &[(String, S<String>)],
        names: &Names,
        vars: &[String],
    ) -> Result<Request, PlanError> {
        let r = &st.value;
        if target.protocol == model::Protocol::Ws {
            let mut req = self.ws_step(st, target, scenario_headers, names)?;
            req.extract = self.extracts(r, vars)?;
            return Ok(req);
        }
        self.refuse_ws_keys(st)?;
        if let Some(g) = &r.grpc {
            let mut req = self.grpc_request(st, g, target, names)?;
            req.weight = self.weight(r)?;
            req.extract = self.extracts(r, vars)?;
            return Ok(req);
        }
        let method = match &r.method {
            Some(m) => {
                let up = m.value.to_ascii_uppercase();
                if up.is_empty() || !up.bytes().all(|b| b.is_ascii_alphabetic()) {
                    return Err(self.err(m, format!("invalid method '{}'", m.value)));
                }
                up
            }
            None if r.llm.is_some() => "POST".to_string(),
            None => "GET".to_string(),
        };
        let base = target.path.trim_end_matches('/');
        let path_text = r
            .path
            .as_ref()
            .map_or_else(|| target.path.clone(), |p| format!("{base}{}", p.value));
        let path = match &r.path {
            Some(p) => {
                if !p.value.starts_with('/') && !p.value.starts_with("{{") {
                    return Err(self.err(p, format!("path '{}' must start with '/'", p.value)));
                }
                let t = self.template(p, names)?;
                if let Some(why) = t.literals().find_map(guard::path_bytes_fault) {
                    return Err(self.err(p, format!("path '{}': {why}", p.value.escape_debug())));
                }
                let mut prefixed = Template::literal(base.as_bytes());
                prefixed.append(t);
                prefixed
            }
            None => Template::literal(target.path.as_bytes()),
        };
        let mut headers: Vec<(String, S<String>)> = scenario_headers.to_vec();
        for (k, v) in &r.headers {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(k));
            headers.push((k.clone(), v.clone()));
        }
        let body = match (&r.body, &r.body_file) {
            _ if r.llm.is_some() => {
                let l = r.llm.as_ref().expect("an llm: step");
                self.llm_body(st, l, &path_text, names)?
            }
            (Some(_), Some(f)) => {
                return Err(self.err(f, "'body' and 'body_file' cannot both be set"))
            }
            (Some(b), None) => self.template(b, names)?,
            (None, Some(f)) => {
                let p = self.named_file(&f.value);
                let text = model::input::read_string(&p)
                    .map_err(|e| self.err(f, format!("body_file {e}")))?;
                Template::compile(&text, names)
                    .map_err(|e| self.err(f, format!("{}: {}", p.display(), e.message)))?
            }
            (None, None) => Template::default(),
        };
        let weight = self.weight(r)?;
        let extract = self.extracts(r, vars)?;
        let complete = match &r.complete {
            Some(c) => Some(self.step_complete(c, names)?),
            None => None,
        };
        let name = match &r.name {
            Some(n) => n.value.clone(),
            None => format!(
                "{method} {}",
                r.path
                    .as_ref()
                    .map_or(target.path.as_str(), |p| p.value.as_str())
            ),
        };
        Ok(Request {
            name,
            method,
            path,
            path_text,
            headers: self.json_header(r, self.headers(&headers, names)?),
            body,
            message: None,
            complete,
            extract,
            checks: Vec::new(), // compiled by the scenario, apart (see `Cx::checks`)
            weight,
            ws: workload::WsStep::Message,
            sent_at: None,
            match_id: None,
        })
    }

    /// An `llm:` step's headers say its body is JSON, unless they say otherwise.
    fn json_header(
        &self,
        r: &RawRequest,
        mut headers: Vec<(String, Template)>,
    ) -> Vec<(String, Template)> {
        let typed = headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
        if r.llm.is_some() && !typed {
            headers.push((
                "content-type".into(),
                Template::literal(b"application/json"),
            ));
        }
        headers
    }

    pub(crate) fn weight(&self, r: &RawRequest) -> Result<u32, PlanError> {
        match &r.weight {
            Some(w) if w.value == 0 => Err(self.err(w, "weight must be at least 1")),
            Some(w) => Ok(w.value),
            None => Ok(1),
        }
    }

    /// The step's extractions: (variable index, extractor).
    fn extracts(
        &self,
        r: &RawRequest,
        vars: &[String],
    ) -> Result<Vec<(usize, Extractor)>, PlanError> {
        r.extract
            .iter()
            .map(|(var, ex)| {
                let idx = vars.iter().position(|v| v == var).unwrap_or(0);
                Ok((idx, self.extractor(ex)?))
            })
            .collect()
    }

    pub(crate) fn extractor(&self, ex: &S<RawExtract>) -> Result<Extractor, PlanError> {
        let json = |p: &str| {
            serde_json_path::JsonPath::parse(p)
                .map(Extractor::Json)
                .map_err(|e| self.err(ex, format!("invalid JSONPath '{p}': {e}")))
        };
        match &ex.value {
            RawExtract::Path(p) => {
                if let Some(h) = p.strip_prefix("header:") {
                    Ok(Extractor::Header(h.trim().to_string()))
                } else if let Some(re) = p.strip_prefix("regex:") {
                    self.regex(ex, re)
                } else {
                    json(p)
                }
            }
            RawExtract::Map(m) => match (&m.json, &m.header, &m.regex) {
                (Some(p), None, None) => json(p),
                (None, Some(h), None) => Ok(Extractor::Header(h.clone())),
                (None, None, Some(re)) => self.regex(ex, re),
                _ => Err(self.err(ex, "extract: give exactly one of json, header, regex")),
            },
        }
    }

    fn regex(&self, at: &S<RawExtract>, re: &str) -> Result<Extractor, PlanError> {
        regex::bytes::Regex::new(re)
            .map(Extractor::Regex)
            .map_err(|e| {
                let first = e
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                self.err(at, format!("invalid regex '{re}': {first}"))
            })
    }
}
