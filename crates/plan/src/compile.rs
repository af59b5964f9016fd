//! A parsed plan file -> runnable scenarios. Everything is checked here, before any load is
//! sent: URLs, durations, rates, stages, counts, templates (names and arguments), JSONPaths and
//! regexes, SLO expressions, data files. Each error points at the value at fault.

use crate::error::{PlanError, Pos};
use crate::file::{RawData, RawLoad, RawPlan, RawRequest, RawScenario, Scalar, S};
use crate::load::{self, LoadInput, KEYS};
use model::guard;
use model::units::parse_duration;
use model::{StatusSet, Target};
use stats::slo::Slo;
use std::path::{Path, PathBuf};
use std::time::Duration;
use workload::template::{did_you_mean, Names, Template};
use workload::{Request, Table, Workload};

/// Per-scenario settings; `None` leaves the command line's (or the built-in) default.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub timeout: Option<Duration>,
    pub connect_timeout: Option<Duration>,
    pub ok_status: Option<StatusSet>,
    /// gRPC status codes that count as success.
    pub ok_codes: Option<Vec<u16>>,
    /// W3C trace context: the sampled share.
    pub trace: Option<f64>,
    pub http2: Option<bool>,
    pub http3: Option<bool>,
    /// `http3: auto`: HTTP/3 only when the server's Alt-Svc advertises it.
    pub http3_auto: bool,
    /// `0rtt: true` (`idempotent`) or `0rtt: all`.
    pub zero_rtt: Option<&'static str>,
    pub insecure: Option<bool>,
    pub keepalive: Option<bool>,
    /// Every answer read as Server-Sent Events (`--stream`).
    pub stream: Option<bool>,
    /// Every answer read as a token stream: the scenario's steps are `llm:` steps.
    pub llm: bool,
    /// A streamed answer silent this long is a timeout.
    pub idle_timeout: Option<Duration>,
    /// Event streams held for the run and reopened as a browser does (`hold: true`).
    pub hold: bool,
    /// WebSocket, closed model: the least time between a connection's messages.
    pub every: Option<Duration>,
}

/// One runnable scenario.
#[derive(Debug)]
pub struct Scenario {
    pub name: String,
    pub target: Target,
    pub load: LoadInput,
    pub workload: Workload,
    pub slos: Vec<Slo>,
    /// Wait after this scenario before the next one.
    pub pause: Duration,
    pub settings: Settings,
    /// Async completion: the probe that says when the work the load started is done.
    pub completion: Option<observe::completion::Probe>,
}

/// A whole plan.
#[derive(Debug)]
pub struct Plan {
    pub file: String,
    pub scenarios: Vec<Scenario>,
    /// Commands at moments of a capacity search.
    pub hooks: Hooks,
    /// Every file the plan names (data, bodies, protos, import directories), as written:
    /// relative to the plan's directory unless absolute. What a copy of the plan elsewhere
    /// (a worker's disk, a Kubernetes ConfigMap) must hold beside it.
    pub files: Vec<String>,
}

/// A plan's hooks (see `brink find`), checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hooks {
    pub peak: Option<HookSpec>,
    pub each_step: Option<HookSpec>,
    pub on_fail: Option<HookSpec>,
    pub after: Option<HookSpec>,
}

/// One hook as the plan gives it; what it leaves out, the command line decides.
#[derive(Clone, Debug, PartialEq)]
pub struct HookSpec {
    pub command: String,
    pub at: Option<f64>,
    pub timeout: Option<Duration>,
    pub required: bool,
}

/// Asks a gRPC server's reflection for a service (a plan step without `proto`/`protoset`):
/// the target and the service's full name give the definitions, or why there are none.
pub type Reflect<'a> = dyn Fn(&Target, &str) -> Result<grpc::DescriptorPool, String> + 'a;

/// Reads and checks the plan at `path`; random template values are seeded with `seed`.
/// gRPC steps without definitions fail: see [`load_file_with`].
pub fn load_file(path: &Path, seed: u64) -> Result<Plan, PlanError> {
    load_file_with(path, seed, &|_, _| {
        Err("no service definitions: give proto or protoset".to_string())
    })
}

/// [`load_file`], with gRPC steps without `proto`/`protoset` defined by `reflect`.
pub fn load_file_with(path: &Path, seed: u64, reflect: &Reflect) -> Result<Plan, PlanError> {
    let file = path.display().to_string();
    let source = model::input::read_string(path)
        .map_err(|e| PlanError::at(&file, "", None, format!("cannot read plan: {e}")))?;
    let dir = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    parse_with(&file, &source, &dir, seed, &model::env::var, reflect)
}

/// Checks a plan given as text; `dir` is where relative data and body files are looked up.
pub fn parse(
    file: &str,
    source: &str,
    dir: &Path,
    seed: u64,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Plan, PlanError> {
    parse_with(file, source, dir, seed, env, &|_, _| {
        Err("no service definitions: give proto or protoset".to_string())
    })
}

/// [`parse`], with gRPC steps without `proto`/`protoset` defined by `reflect`.
pub fn parse_with(
    file: &str,
    source: &str,
    dir: &Path,
    seed: u64,
    env: &dyn Fn(&str) -> Option<String>,
    reflect: &Reflect,
) -> Result<Plan, PlanError> {
    let cx = Cx {
        file,
        source,
        dir,
        env,
        reflect,
        files: Default::default(),
    };
    // Every error of the plan is found before any is reported: every unknown key, then what
    // the rest of the plan gets wrong.
    let (raw, mut errs) = cx.read()?;
    let mut tables = Vec::new();
    for (name, d) in &raw.data {
        tables.extend(keep(&mut errs, cx.table(name, d)));
    }
    if raw.scenarios.value.is_empty() {
        errs.push(cx.err(&raw.scenarios, "a plan needs at least one scenario"));
    }
    let mut scenarios: Vec<Scenario> = Vec::new();
    for s in &raw.scenarios.value {
        let sc = match cx.scenario(&raw, s, &tables, seed) {
            Ok(sc) => sc,
            Err(mut e) => {
                errs.append(&mut e);
                continue;
            }
        };
        if scenarios.iter().any(|o| o.name == sc.name) {
            errs.push(cx.err(
                &s.value.name,
                format!("duplicate scenario name '{}'", sc.name),
            ));
        }
        scenarios.push(sc);
    }
    let hooks = keep(&mut errs, cx.hooks(&raw.hooks));
    match (PlanError::all(errs), hooks) {
        (Some(e), _) => Err(e),
        (None, Some(hooks)) => Ok(Plan {
            file: file.to_string(),
            scenarios,
            hooks,
            files: cx.files.take(),
        }),
        (None, None) => Err(PlanError::at(
            file,
            source,
            None,
            "plan hooks could not be read",
        )),
    }
}

/// The value of `r`, or `None` with its error kept in `errs`.
pub(crate) fn keep<T>(errs: &mut Vec<PlanError>, r: Result<T, PlanError>) -> Option<T> {
    r.map_err(|mut e| {
        let others = std::mem::take(&mut e.others);
        errs.push(e);
        errs.extend(others);
    })
    .ok()
}

pub(crate) struct Cx<'a> {
    file: &'a str,
    source: &'a str,
    pub(crate) dir: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
    pub(crate) reflect: &'a Reflect<'a>,
    /// Every file the plan names, as written (relative to its directory), in order.
    files: std::cell::RefCell<Vec<String>>,
}

impl Cx<'_> {
    /// The path of a file the plan names (`rel`, as written), noted among the plan's files.
    pub(crate) fn named_file(&self, rel: &str) -> PathBuf {
        let mut files = self.files.borrow_mut();
        if !files.iter().any(|f| f == rel) {
            files.push(rel.to_string());
        }
        self.dir.join(rel)
    }

    pub(crate) fn err<T>(&self, at: &S<T>, message: impl Into<String>) -> PlanError {
        PlanError::at(self.file, self.source, Some(at.referenced.into()), message)
    }

    /// An error `offset` bytes into the string value at `at` (skipping an opening quote).
    pub(crate) fn err_in<T>(
        &self,
        at: &S<T>,
        offset: usize,
        message: impl Into<String>,
    ) -> PlanError {
        let mut pos: Pos = at.referenced.into();
        let line = self
            .source
            .lines()
            .nth((pos.line as usize).saturating_sub(1));
        let quoted = line
            .and_then(|l| l.chars().nth((pos.column as usize).saturating_sub(1)))
            .is_some_and(|c| c == '"' || c == '\'');
        pos.column += offset as u64 + u64::from(quoted);
        PlanError::at(self.file, self.source, Some(pos), message)
    }

    /// The plan as written, read past its unknown keys: each is an error (with its position
    /// in the file), and the plan is read again without it. `Err` when the YAML cannot be read
    /// for another reason (the unknown keys found before it are reported with it).
    fn read(&self) -> Result<(RawPlan, Vec<PlanError>), PlanError> {
        let mut text = std::borrow::Cow::Borrowed(self.source);
        let mut unknown = Vec::new();
        loop {
            let e = match serde_saphyr::from_str::<RawPlan>(&text) {
                Ok(raw) => return Ok((raw, unknown)),
                Err(e) => e,
            };
            let err = self.yaml_error(&e);
            let next = match (err.message.starts_with("unknown key '"), err.pos) {
                (true, Some(pos)) if unknown.len() < crate::unknown::MOST => {
                    crate::unknown::blank_key(&text, pos)
                }
                _ => None,
            };
            unknown.push(err);
            match next {
                Some(t) => text = std::borrow::Cow::Owned(t),
                None => return Err(PlanError::all(unknown).expect("one error at least")),
            }
        }
    }

    fn yaml_error(&self, e: &serde_saphyr::Error) -> PlanError {
        let pos = e.location().map(Pos::from);
        let text = e.to_string();
        let first = strip_location(text.lines().next().unwrap_or("invalid YAML"));
        let message = unknown_key_hint(&first)
            .or_else(|| pos.and_then(|p| crate::indent::hint(self.source, p, &first)))
            .unwrap_or(first);
        PlanError::at(self.file, self.source, pos, message)
    }

    pub(crate) fn duration<T>(
        &self,
        at: &S<T>,
        text: &str,
        key: &str,
    ) -> Result<Duration, PlanError> {
        parse_duration(text).map_err(|e| self.err(at, format!("{key}: {e}")))
    }

    fn table(&self, name: &str, d: &S<RawData>) -> Result<Table, PlanError> {
        let per_vu = match d.value.per.as_ref().map(|p| (p, p.value.as_str())) {
            None | Some((_, "iteration")) => false,
            Some((_, "vu")) => true,
            Some((p, other)) => {
                return Err(self.err(p, format!("per: '{other}' is not 'iteration' or 'vu'")))
            }
        };
        let (file, jsonl) = match (&d.value.csv, &d.value.jsonl) {
            (Some(_), Some(j)) => {
                return Err(self.err(j, format!("data '{name}': 'csv' or 'jsonl', not both")))
            }
            (Some(c), None) => (c, false),
            (None, Some(j)) => (j, true),
            (None, None) => {
                return Err(self.err(
                    d,
                    format!("data '{name}': give its file as csv: FILE or jsonl: FILE"),
                ))
            }
        };
        let path = self.named_file(&file.value);
        let text = model::input::read_string(&path)
            .map_err(|e| self.err(file, format!("data '{name}': cannot read {e}")))?;
        let parsed = match jsonl {
            true => crate::jsonl::parse(&text),
            false => crate::csv::parse(text),
        };
        let (columns, rows) = parsed
            .map_err(|e| self.err(file, format!("data '{name}': {}: {e}", path.display())))?;
        if columns.is_empty() && !jsonl {
            return Err(self.err(
                file,
                format!("data '{name}': {} has no header row", path.display()),
            ));
        }
        if rows.rows() == 0 {
            return Err(self.err(
                file,
                format!("data '{name}': {} has no data rows", path.display()),
            ));
        }
        Ok(Table::new(name.to_string(), columns, rows, per_vu))
    }

    fn scenario(
        &self,
        plan: &RawPlan,
        s: &S<RawScenario>,
        tables: &[Table],
        seed: u64,
    ) -> Result<Scenario, Vec<PlanError>> {
        let r = &s.value;
        let name = r.name.value.clone();
        let mut errs = Vec::new();
        let url = r.target.as_ref().or(plan.target.as_ref()).ok_or_else(|| {
            self.err(
                s,
                format!(
                    "scenario '{name}' has no target (set 'target:' at the top or in the scenario)"
                ),
            )
        });
        let target = keep(
            &mut errs,
            url.and_then(|u| Target::parse(&u.value).map_err(|e| self.err(u, e.to_string()))),
        );
        let load = match &r.load {
            Some(l) => keep(&mut errs, self.load(l)).unwrap_or_default(),
            None => LoadInput::default(),
        };
        let (requests, flow) = match (&r.requests, &r.flow) {
            (Some(_), Some(f)) => {
                errs.push(self.err(
                    f,
                    "a scenario has either 'requests:' (a mix) or 'flow:' (a sequence), not both",
                ));
                (None, false)
            }
            (Some(q), None) => (Some(q), false),
            (None, Some(f)) => (Some(f), true),
            (None, None) => (None, false),
        };
        let mut headers: Vec<(String, S<String>)> = Vec::new();
        for (k, v) in plan.defaults.headers.iter().chain(&r.headers) {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(k));
            headers.push((k.clone(), v.clone()));
        }
        let raw_steps: Vec<&S<RawRequest>> = requests
            .map(|q| q.value.iter().collect())
            .unwrap_or_default();
        if let Some(q) = requests.filter(|q| q.value.is_empty()) {
            errs.push(self.err(q, "the list of requests is empty"));
        }
        let vars = variables(&raw_steps, flow);
        let data: Vec<(String, Vec<String>)> = tables
            .iter()
            .map(|t| (t.name.clone(), t.columns.clone()))
            .collect();
        let names = Names {
            data: &data,
            vars: &vars,
            env: self.env,
        };
        let mut steps = match &target {
            Some(t) => self.steps(s, t, &raw_steps, &headers, &names, &mut errs),
            None => Vec::new(),
        };
        if steps.len() == raw_steps.len() {
            keep(&mut errs, self.number_checks(&mut steps, &raw_steps));
        }
        let widest = |set: usize, col: usize| tables.get(set).map_or(0, |t| t.rows.widest(col));
        // Flow variables count as empty here: what they hold is bounded when they are
        // captured (--capture-limit).
        let aligned = steps.len() == raw_steps.len();
        for (st, step) in raw_steps.iter().zip(&steps).filter(|_| aligned) {
            let most = step.body.most_bytes(&widest, 0);
            if most > model::input::limit() {
                errs.push(self.err(
                    *st,
                    format!(
                        "request '{}': its body could reach {most} bytes, over the {} a request may have (raise it with --max-data-size)",
                        step.name,
                        model::input::limit()
                    ),
                ));
            }
        }
        let pause = match &r.pause {
            Some(p) => keep(&mut errs, self.duration(p, &p.value, "pause")).unwrap_or_default(),
            None => Duration::ZERO,
        };
        let settings = keep(&mut errs, self.settings(plan, r)).unwrap_or_default();
        let completion = match (&r.complete_when, &target) {
            (Some(c), Some(t)) => keep(&mut errs, self.completion(c, t)),
            _ => None,
        };
        let completes = r.complete_when.is_some();
        let slos = self.objectives(r, &steps, completes, &mut errs);
        let Some(target) = target.filter(|_| errs.is_empty()) else {
            return Err(errs);
        };
        let owned: Vec<Table> = tables
            .iter()
            .map(|t| Table::new(t.name.clone(), t.columns.clone(), t.rows.clone(), t.per_vu))
            .collect();
        Ok(Scenario {
            name,
            target,
            load,
            workload: Workload::new(steps, flow, owned, vars, seed),
            slos,
            pause,
            settings,
            completion,
        })
    }

    /// A scenario's requests in order: its steps, or a GET of the target's own path when it
    /// lists none. Names are distinct; a gRPC target takes gRPC calls only.
    fn steps(
        &self,
        s: &S<RawScenario>,
        target: &Target,
        raw_steps: &[&S<RawRequest>],
        headers: &[(String, S<String>)],
        names: &Names,
        errs: &mut Vec<PlanError>,
    ) -> Vec<Request> {
        let name = &s.value.name.value;
        let vars = names.vars;
        let mut steps: Vec<Request> = Vec::new();
        if target.protocol == model::Protocol::Grpc {
            if raw_steps.is_empty() {
                errs.push(self.err(s, format!("scenario '{name}' has a gRPC target: its requests are grpc: calls (requests: [{{ grpc: {{ call: package.Service/Method }} }}])")));
                return steps;
            }
            if let Some(st) = raw_steps.iter().find(|st| st.value.grpc.is_none()) {
                errs.push(self.err(*st, "a step of a grpc:// scenario is a grpc: call (grpc: { call: package.Service/Method, data: ... })"));
                return steps;
            }
        }
        if let Some(e) = self.llm_misplaced(raw_steps, target.protocol) {
            errs.push(e);
            return steps;
        }
        if target.protocol == model::Protocol::Ws && raw_steps.is_empty() {
            errs.push(self.err(s, format!("scenario '{name}' has a WebSocket target: its steps send messages (requests: [{{ message: '...' }}], or {{ ping: true }}, or {{ subscribe: true }})")));
            return steps;
        }
        if raw_steps.is_empty() {
            let mut st = Request::fixed("", "GET", &target.path, &[], b"");
            st.name = format!("GET {}", target.path);
            st.headers = keep(errs, self.headers(headers, names)).unwrap_or_default();
            steps.push(st);
        }
        if target.protocol == model::Protocol::Ws && raw_steps.len() > 1 {
            let subscribing = raw_steps
                .iter()
                .find(|st| st.value.subscribe.as_ref().is_some_and(|b| b.value));
            if let Some(st) = subscribing {
                errs.push(self.err(*st, "a subscribe step takes every message the server pushes on its connection: it is its scenario's only step"));
                return steps;
            }
        }
        for st in raw_steps {
            let Some(mut step) = keep(errs, self.step(st, target, headers, names, vars)) else {
                continue;
            };
            // A mistake in a check leaves the step (without its checks), so what else is
            // wrong in the plan is still found.
            step.checks = keep(errs, self.checks(st, target.protocol)).unwrap_or_default();
            if steps.iter().any(|o| o.name == step.name) {
                let at = st
                    .value
                    .name
                    .as_ref()
                    .map_or_else(|| self.err(*st, ""), |n| self.err(n, ""));
                errs.push(PlanError {
                    message: format!(
                        "duplicate request name '{}' (give each request a distinct 'name:')",
                        step.name
                    ),
                    ..at
                });
                continue;
            }
            steps.push(step);
        }
        steps
    }

    /// The scenario's objectives, each checked against its requests' names; `complete` needs
    /// a `complete_when`.
    fn objectives(
        &self,
        r: &RawScenario,
        steps: &[Request],
        completes: bool,
        errs: &mut Vec<PlanError>,
    ) -> Vec<Slo> {
        let step_names: Vec<String> = steps.iter().map(|s| s.name.clone()).collect();
        let checks: Vec<String> = steps
            .iter()
            .flat_map(|s| s.checks.iter().map(|c| c.name.clone()))
            .collect(); // Workload::check_names, before the workload exists
        let written: usize = r
            .requests
            .iter()
            .chain(&r.flow)
            .flat_map(|q| &q.value)
            .map(|st| st.value.check.len())
            .sum();
        // With a check in error, an objective on checks cannot be judged yet: the check's
        // own error is the one to fix first.
        let unsure = checks.len() < written;
        let slos: Vec<Slo> = r
            .slo
            .iter()
            .filter(|t| !(unsure && on_checks(&t.value)))
            .filter_map(|t| keep(errs, self.slo(t, &step_names, &checks)))
            .collect();
        if let Some(t) = r
            .slo
            .iter()
            .find(|t| t.value.trim_start().starts_with("complete"))
        {
            if !completes {
                errs.push(self.err(
                    t,
                    "'complete' needs the scenario's complete_when (what says the work is done)",
                ));
            }
        }
        slos
    }

    fn load(&self, l: &S<RawLoad>) -> Result<LoadInput, PlanError> {
        let v = &l.value;
        let text = |x: &Option<S<Scalar>>| x.as_ref().map(|s| s.value.text());
        let input = LoadInput {
            connections: text(&v.connections),
            rate: text(&v.rate),
            stages: v.stages.as_ref().map(|s| s.value.clone()),
            duration: text(&v.duration),
            requests: text(&v.requests),
        };
        // Each value is checked alone first, so the error points at it ...
        let single = |field: &Option<S<Scalar>>,
                      make: &dyn Fn(String) -> LoadInput|
         -> Result<(), PlanError> {
            if let Some(f) = field {
                load::build(&make(f.value.text()), &KEYS).map_err(|e| self.err(f, e))?;
            }
            Ok(())
        };
        single(&v.connections, &|t| LoadInput {
            connections: Some(t),
            ..Default::default()
        })?;
        single(&v.rate, &|t| LoadInput {
            rate: Some(t),
            ..Default::default()
        })?;
        single(&v.duration, &|t| LoadInput {
            duration: Some(t),
            ..Default::default()
        })?;
        single(&v.requests, &|t| LoadInput {
            requests: Some(t),
            ..Default::default()
        })?;
        if let Some(st) = &v.stages {
            load::build(
                &LoadInput {
                    stages: Some(st.value.clone()),
                    ..Default::default()
                },
                &KEYS,
            )
            .map_err(|e| self.err(st, e))?;
        }
        // ... then how they combine, pointing at the load mapping.
        load::build(&input, &KEYS).map_err(|e| self.err(l, e))?;
        Ok(input)
    }

    pub(crate) fn headers(
        &self,
        headers: &[(String, S<String>)],
        names: &Names,
    ) -> Result<Vec<(String, Template)>, PlanError> {
        headers
            .iter()
            .map(|(k, v)| {
                if !guard::is_token(k.as_bytes()) {
                    return Err(self.err(v, format!("invalid header name '{}'", k.escape_debug())));
                }
                let t = self.template(v, names)?;
                if let Some(why) = t.literals().find_map(guard::header_value_fault) {
                    return Err(self.err(v, format!("header {k}: {why}")));
                }
                Ok((k.clone(), t))
            })
            .collect()
    }

    fn slo(&self, t: &S<String>, steps: &[String], checks: &[String]) -> Result<Slo, PlanError> {
        let slo = Slo::parse_with_checks(
            &t.value,
            |d| parse_duration(d).map_err(|e| e.to_string()),
            checks,
        )
        .map_err(|e| self.err(t, e.0))?;
        if let Some(req) = &slo.request {
            if !steps.contains(req) {
                return Err(self.err(
                    t,
                    format!(
                        "SLO '{}' names request '{req}', which this scenario does not have{}",
                        t.value,
                        did_you_mean(req, steps.iter().map(String::as_str))
                    ),
                ));
            }
        }
        Ok(slo)
    }

    fn settings(&self, plan: &RawPlan, r: &RawScenario) -> Result<Settings, PlanError> {
        let d = &plan.defaults;
        let dur = |v: Option<&S<String>>, key: &str| -> Result<Option<Duration>, PlanError> {
            v.map(|s| {
                let d = self.duration(s, &s.value, key)?;
                if d.is_zero() {
                    return Err(self.err(s, format!("{key} must be longer than zero")));
                }
                Ok(d)
            })
            .transpose()
        };
        let ok_status = r
            .ok_status
            .as_ref()
            .or(d.ok_status.as_ref())
            .map(|s| {
                StatusSet::parse(&s.value.text())
                    .map_err(|e| self.err(s, format!("ok_status: {e}")))
            })
            .transpose()?;
        let ok_codes = r
            .ok_codes
            .as_ref()
            .or(d.ok_codes.as_ref())
            .map(|s| {
                model::grpc::parse_list(&s.value).map_err(|e| self.err(s, format!("ok_codes: {e}")))
            })
            .transpose()?;
        let trace = r
            .trace
            .as_ref()
            .or(d.trace.as_ref())
            .map(|t| match &t.value {
                Scalar::Bool(true) => Ok(Some(1.0)),
                Scalar::Bool(false) => Ok(None),
                v => match v.text().parse::<f64>() {
                    Ok(x) if (0.0..=1.0).contains(&x) => Ok(Some(x)),
                    _ => Err(self.err(
                        t,
                        format!(
                            "trace: '{}' is not a share between 0 and 1 (or true)",
                            v.text()
                        ),
                    )),
                },
            })
            .transpose()?
            .flatten();
        let http3 = r.http3.as_ref().or(d.http3.as_ref());
        let http3 = self.choice(http3, "http3", &[("auto", "auto")])?;
        let zero_rtt = r.zero_rtt.as_ref().or(d.zero_rtt.as_ref());
        let zero_rtt = self.choice(zero_rtt, "0rtt", &[("all", "all")])?;
        Ok(Settings {
            timeout: dur(r.timeout.as_ref().or(d.timeout.as_ref()), "timeout")?,
            connect_timeout: dur(
                r.connect_timeout.as_ref().or(d.connect_timeout.as_ref()),
                "connect_timeout",
            )?,
            ok_status,
            ok_codes,
            trace,
            http2: r.http2.or(d.http2),
            http3: http3.map(|h| h.is_some()),
            http3_auto: http3 == Some(Some("auto")),
            zero_rtt: zero_rtt
                .flatten()
                .map(|z| if z == "on" { "idempotent" } else { z }),
            insecure: r.insecure.or(d.insecure),
            keepalive: r.keepalive.or(d.keepalive),
            stream: r.stream.or(d.stream),
            llm: [&r.requests, &r.flow]
                .into_iter()
                .flatten()
                .any(|steps| steps.value.iter().any(|st| st.value.llm.is_some())),
            idle_timeout: dur(
                r.idle_timeout.as_ref().or(d.idle_timeout.as_ref()),
                "idle_timeout",
            )?,
            hold: r.hold.or(d.hold).unwrap_or(false),
            every: dur(r.every.as_ref().or(d.every.as_ref()), "every")?,
        })
    }
}

impl Cx<'_> {
    /// A setting that is true, false, or one of `words`: `None` when absent, `Some(None)` for
    /// false, `Some(Some("on"))` for true, `Some(Some(word))` for a word.
    fn choice(
        &self,
        v: Option<&S<Scalar>>,
        key: &str,
        words: &[(&str, &'static str)],
    ) -> Result<Option<Option<&'static str>>, PlanError> {
        let Some(v) = v else {
            return Ok(None);
        };
        match &v.value {
            Scalar::Bool(true) => Ok(Some(Some("on"))),
            Scalar::Bool(false) => Ok(Some(None)),
            other => {
                let text = other.text();
                match words.iter().find(|(w, _)| *w == text) {
                    Some((_, w)) => Ok(Some(Some(w))),
                    None => {
                        let allowed: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
                        Err(self.err(
                            v,
                            format!(
                                "{key}: '{text}' is not true, false or {}",
                                allowed.join(", ")
                            ),
                        ))
                    }
                }
            }
        }
    }
}

/// The flow's (or mix's) variables, by index: every name a step extracts, in order; a flow
/// shares one variable per name across its steps.
fn variables(raw_steps: &[&S<RawRequest>], flow: bool) -> Vec<String> {
    if flow {
        let mut v: Vec<String> = Vec::new();
        for st in raw_steps {
            for k in st.value.extract.keys() {
                if !v.contains(k) {
                    v.push(k.clone());
                }
            }
        }
        v
    } else {
        raw_steps
            .iter()
            .flat_map(|st| st.value.extract.keys().cloned())
            .collect()
    }
}

/// Removes the YAML library's own "error: line N column M: " prefix (ours replaces it).
fn strip_location(msg: &str) -> String {
    let mut m = msg.trim();
    m = m.strip_prefix("error:").unwrap_or(m).trim_start();
    if let Some(rest) = m.strip_prefix("line ") {
        if let Some(i) = rest.find(": ") {
            if rest[..i].contains("column") {
                return rest[i + 2..].to_string();
            }
        }
    }
    m.to_string()
}

/// Whether an objective reads response checks (`checks`, `list.checks`, `check.NAME`).
fn on_checks(slo: &str) -> bool {
    let left = slo.split(['<', '>']).next().unwrap_or("").trim();
    left == "checks" || left.ends_with(".checks") || left.starts_with("check.")
}

/// "unknown field `x`, expected one of a, b" -> "unknown key 'x' (did you mean 'a'?) ...".
fn unknown_key_hint(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest
        .split_once("expected ")
        .map(|(_, e)| {
            e.trim_start_matches("one of ")
                .split(", ")
                .map(|k| k.trim_matches('`'))
                .collect()
        })
        .unwrap_or_default();
    let mut hint = did_you_mean(field, expected.iter().copied());
    if hint.is_empty() {
        hint = crate::unknown::other_tool(field).unwrap_or_default();
    }
    Some(format!(
        "unknown key '{field}'{hint} (expected one of: {})",
        expected.join(", ")
    ))
}

#[cfg(test)]
#[path = "compile_tests.rs"]
mod tests;
