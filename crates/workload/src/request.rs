//! What each attempt sends: one request, a weighted mix of requests, or a flow (a sequence of
//! steps per iteration whose responses feed later steps through extracted variables), plus the
//! data sets templates read. A [`Vu`] (virtual user: one connection slot) walks the workload:
//! it picks the next request, renders it into its own buffer, and takes the response back to
//! extract variables and move the flow on. Requests without placeholders are serialised once
//! before the run and never rendered again.
//!
//! Flow rules (where the plan format is silent, these are the choices):
//! * an iteration runs the steps in order; a step's `weight` is how many times it runs in a row;
//! * a step that fails (transport error, failing status, or an extraction that finds nothing)
//!   ends the iteration: the next attempt starts a new iteration at the first step, because
//!   later steps usually depend on what the failed one should have returned;
//! * variables and data rows are per iteration: a new iteration clears the variables and takes
//!   the next row of each data set (or keeps the virtual user's own row with `per: vu`).
//!
//! In a mix, every attempt is its own iteration: it picks a request by weight and takes fresh
//! data rows.

use crate::capture::{Captured, Extractor};
use crate::check::Check;
use crate::message::Message;
use crate::template::Table;
use crate::template::{Scope, Template};
use model::{guard, Counter, Part};
use stats::rng::Rng;
use stats::{Bucket, CheckOutcome, ErrorKind, Refusal};

/// One request of a mix or step of a flow.
#[derive(Debug)]
pub struct Request {
    pub name: String,
    pub method: String,
    /// Path and query (`/items?page=2`).
    pub path: Template,
    /// The path as written, placeholders unexpanded (`/items/{{seq}}`): what results show,
    /// so an `{{env}}` value never reaches a result file.
    pub path_text: String,
    pub headers: Vec<(String, Template)>,
    pub body: Template,
    /// A gRPC call's message: replaces `body` (the framed protobuf of a JSON document).
    pub message: Option<Message>,
    /// Async completion of each answered attempt: poll a URL (templated, e.g. from an
    /// extracted `Location`) until a condition holds.
    pub complete: Option<StepComplete>,
    /// (variable index, where it comes from)
    pub extract: Vec<(usize, Extractor)>,
    /// What every answer is checked for.
    pub checks: Vec<Check>,
    /// Mix: relative weight. Flow: times the step runs in a row per iteration.
    pub weight: u32,
    /// WebSocket: what the step does on its connection.
    pub ws: WsStep,
    /// WebSocket subscriptions: where a pushed message (JSON) carries its send time, for the
    /// delivery delay.
    pub sent_at: Option<serde_json_path::JsonPath>,
    /// WebSocket messages: the answer is the first message whose id (found by this in it)
    /// equals the id found in the message sent; others are counted and passed over. `None`:
    /// the next message is the answer.
    pub match_id: Option<Extractor>,
}

/// What a WebSocket step does on its connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WsStep {
    /// Sends the step's message and waits for the answer (the next data message).
    #[default]
    Message,
    /// Sends a ping and waits for its pong (a held connection's heartbeat).
    Ping,
    /// Waits for the next message the server pushes (a subscription); the step's message,
    /// when it has one, is sent once, when the connection opens.
    Await,
}

impl Request {
    /// A request without placeholders.
    pub fn fixed(
        name: &str,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Request {
        Request {
            name: name.to_string(),
            method: method.to_string(),
            path: Template::literal(path.as_bytes()),
            path_text: path.to_string(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.clone(), Template::literal(v.as_bytes())))
                .collect(),
            body: Template::literal(body),
            message: None,
            complete: None,
            extract: Vec::new(),
            checks: Vec::new(),
            weight: 1,
            ws: WsStep::Message,
            sent_at: None,
            match_id: None,
        }
    }

    /// Whether its answers must be kept (headers and body, under the capture budget) for an
    /// extraction or a check to read.
    pub fn keeps_response(&self) -> bool {
        !self.extract.is_empty() || self.checks.iter().any(Check::needs_response)
    }

    /// Whether what it keeps of an answer includes the body (an extraction, or a check on
    /// the body's content); headers and the body's length need no room in the budget.
    pub fn keeps_body(&self) -> bool {
        !self.extract.is_empty() || self.checks.iter().any(Check::needs_body)
    }

    pub fn is_head(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }

    /// Whether the request is the same bytes every time.
    pub fn is_static(&self) -> bool {
        self.path.is_static()
            && self.body.is_static()
            && self.message.as_ref().is_none_or(|m| m.fixed().is_some())
            && self.headers.iter().all(|(_, v)| v.is_static())
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// Renders the HTTP/1.1 request into `out` (cleared first); `body` is scratch space.
    /// A rendered path or header value that breaks the wire rules ([`guard`]) is refused: the
    /// bytes in `out` must then not be sent.
    pub fn render_h1(
        &self,
        scope: &mut Scope,
        authority: &str,
        keepalive: bool,
        out: &mut Vec<u8>,
        body: &mut Vec<u8>,
    ) -> Result<(), Refusal> {
        out.clear();
        body.clear();
        self.body.render(scope, body);
        out.extend_from_slice(self.method.as_bytes());
        out.push(b' ');
        let at = out.len();
        self.path.render(scope, out);
        if guard::path_fault(&out[at..]).is_some() {
            return Err(Refusal::new("path", &out[at..]));
        }
        out.extend_from_slice(b" HTTP/1.1\r\n");
        let line = |out: &mut Vec<u8>, parts: &[&[u8]]| {
            for p in parts {
                out.extend_from_slice(p);
            }
            out.extend_from_slice(b"\r\n");
        };
        if !self.has_header("host") {
            line(out, &[b"Host: ", authority.as_bytes()]);
        }
        if !self.has_header("user-agent") {
            line(
                out,
                &[concat!("User-Agent: brink/", env!("CARGO_PKG_VERSION")).as_bytes()],
            );
        }
        if !keepalive && !self.has_header("connection") {
            line(out, &[b"Connection: close"]);
        }
        for (n, v) in &self.headers {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            let at = out.len();
            v.render(scope, out);
            if guard::header_value_fault(&out[at..]).is_some() {
                return Err(Refusal::new(format!("header {n}"), &out[at..]));
            }
            out.extend_from_slice(b"\r\n");
        }
        let wants_length =
            !body.is_empty() || matches!(self.method.as_str(), "POST" | "PUT" | "PATCH");
        if wants_length && !self.has_header("content-length") {
            line(
                out,
                &[b"Content-Length: ", body.len().to_string().as_bytes()],
            );
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
        Ok(())
    }

    /// Checks the parts that never change (method, header names, literal values), so a
    /// request that could never be sent is refused before the run. `Err` says what and why.
    pub fn check_literals(&self) -> Result<(), String> {
        if !guard::is_token(self.method.as_bytes()) {
            return Err(format!("invalid method '{}'", self.method.escape_debug()));
        }
        for (n, v) in &self.headers {
            if !guard::is_token(n.as_bytes()) {
                return Err(format!("invalid header name '{}'", n.escape_debug()));
            }
            if let Some(why) = v.literals().find_map(guard::header_value_fault) {
                return Err(format!("header {n}: {why}"));
            }
        }
        if let Some(why) = self.path.literals().find_map(guard::path_bytes_fault) {
            return Err(format!("path: {why}"));
        }
        if let Some(p) = self.path.static_bytes() {
            if let Some(why) = guard::path_fault(&p) {
                return Err(format!("path: {why}"));
            }
        }
        Ok(())
    }
}

/// A step's `complete: { get, until, every, within }`.
#[derive(Debug)]
pub struct StepComplete {
    pub url: Template,
    pub until: observe::completion::Condition,
    pub every: std::time::Duration,
    pub within: std::time::Duration,
}

/// Everything the virtual users share.
#[derive(Debug)]
pub struct Workload {
    pub requests: Vec<Request>,
    /// A flow (sequence per iteration) rather than a weighted mix.
    pub flow: bool,
    pub tables: Vec<Table>,
    /// Flow variable names, by index.
    pub vars: Vec<String>,
    pub seed: u64,
    /// `{{seq}}`: the next global request number.
    pub seq: Counter,
    /// The part of a distributed run this process generates (the whole run otherwise).
    pub part: Part,
    /// `--trace`: every request carries a fresh `traceparent`.
    pub trace: Option<crate::trace::Tracing>,
    /// Mix: running sums of the weights.
    cumulative: Vec<u64>,
}

impl Workload {
    /// The names of its response checks, by slot.
    pub fn check_names(&self) -> Vec<String> {
        self.requests
            .iter()
            .flat_map(|r| r.checks.iter().map(|c| c.name.clone()))
            .collect()
    }

    /// A flow: the requests one whole iteration sends (each step as many times as its
    /// weight); `None` for a mix, whose every attempt is its own iteration.
    pub fn requests_per_iteration(&self) -> Option<u64> {
        self.flow.then(|| {
            self.requests
                .iter()
                .map(|r| u64::from(r.weight.max(1)))
                .sum()
        })
    }

    pub fn new(
        requests: Vec<Request>,
        flow: bool,
        tables: Vec<Table>,
        vars: Vec<String>,
        seed: u64,
    ) -> Workload {
        let mut sum = 0;
        let cumulative = requests
            .iter()
            .map(|s| {
                sum += u64::from(s.weight.max(1));
                sum
            })
            .collect();
        Workload {
            requests,
            flow,
            tables,
            vars,
            seed,
            seq: Counter::new(0),
            part: Part::WHOLE,
            trace: None,
            cumulative,
        }
    }

    /// Makes this process generate `part` of a distributed run: its `{{seq}}` numbers, data
    /// rows and documents taken in turn, and virtual users are its share of the run's, so no
    /// two workers send the same row or number.
    pub fn set_part(&mut self, part: Part) {
        self.part = part;
        self.seq.set_part(part);
        for t in &mut self.tables {
            t.set_part(part);
        }
        for m in self.requests.iter_mut().filter_map(|r| r.message.as_mut()) {
            m.set_part(part);
        }
    }

    /// Turns on trace context: every request gets a `traceparent` (stamped per attempt) and
    /// `baggage` header, unless it sets them itself.
    pub fn enable_tracing(&mut self, t: crate::trace::Tracing) {
        for r in &mut self.requests {
            for (name, value) in [
                ("traceparent", crate::trace::PLACEHOLDER),
                ("baggage", t.baggage.as_str()),
            ] {
                if !r.has_header(name) {
                    r.headers
                        .push((name.to_string(), Template::literal(value.as_bytes())));
                }
            }
        }
        self.trace = Some(t);
    }

    /// One fixed request (the `brink run URL` case).
    pub fn single(step: Request) -> Workload {
        Workload::new(vec![step], false, Vec::new(), Vec::new(), 0)
    }

    /// Request names, by index.
    pub fn names(&self) -> Vec<String> {
        self.requests.iter().map(|s| s.name.clone()).collect()
    }

    /// Whether any step extracts variables (responses must then be kept).
    pub fn captures(&self, step: usize) -> bool {
        self.requests
            .get(step)
            .is_some_and(|s| !s.extract.is_empty())
    }
}

/// Salt of the trace-id generator (apart from the one templates read).
const TRACE_STREAM: u64 = 0x7472_6163_6570_6172;

/// A request rendered for HTTP/2: path, header values (in the step's order), body.
pub type H2Parts = (String, Vec<Vec<u8>>, Vec<u8>);

/// One virtual user: a connection slot's position in the workload and its private state.
pub struct Vu {
    pub id: u64,
    rng: Rng,
    vars: Vec<Option<String>>,
    rows: Vec<usize>,
    step: usize,
    rep: u32,
    in_iteration: bool,
    /// The request of the attempt in flight.
    pub current: usize,
    /// Rendered request bytes (dynamic requests only).
    pub buf: Vec<u8>,
    /// Why the current request was refused before sending, until it is recorded.
    pub refused: Option<Refusal>,
    /// Why the current request's extraction failed, until it is recorded.
    pub extract_failure: Option<String>,
    body: Vec<u8>,
    /// `--trace`: the current request's trace id, and the generator ids come from.
    pub trace_id: Option<[u8; 16]>,
    trace_rng: Rng,
    /// Its held stream's reconnection state (`--hold` on an event stream).
    pub resume: crate::resume::Resume,
}

impl Vu {
    /// Virtual user `id` of this process (numbered across the run when it is a part).
    pub fn new(w: &Workload, id: u64) -> Vu {
        let id = w.part.global(id);
        Vu {
            id,
            rng: Rng::stream(w.seed, id),
            vars: vec![None; w.vars.len()],
            rows: vec![0; w.tables.len()],
            step: 0,
            rep: 0,
            in_iteration: false,
            current: 0,
            buf: Vec::new(),
            refused: None,
            extract_failure: None,
            body: Vec::new(),
            trace_id: None,
            trace_rng: Rng::stream(w.seed ^ TRACE_STREAM, id),
            resume: Default::default(),
        }
    }

    /// `--trace`: stamps a fresh `traceparent` into the request's serialised HTTP/1.1 bytes
    /// ([`Vu::buf`]) and keeps its trace id. (HTTP/2 stamps in [`Vu::render_parts`].)
    pub fn stamp_trace(&mut self, w: &Workload) {
        let Some(t) = &w.trace else { return };
        if let Some(at) = crate::trace::find_in_h1(&self.buf) {
            let end = (at + crate::trace::PLACEHOLDER.len()).min(self.buf.len());
            self.trace_id = Some(crate::trace::stamp(
                &mut self.buf[at..end],
                &mut self.trace_rng,
                t.ratio,
            ));
        }
    }

    /// Whether a flow iteration is under way (its next step should follow at once).
    pub fn in_iteration(&self) -> bool {
        self.in_iteration
    }

    /// Chooses the request of the next attempt and returns its index.
    pub fn next(&mut self, w: &Workload) -> usize {
        if w.flow {
            if !self.in_iteration {
                self.begin_iteration(w);
            }
            self.in_iteration = true;
            self.current = self.step;
        } else {
            self.take_rows(w);
            self.current = match w.cumulative.last() {
                Some(&total) if w.requests.len() > 1 => {
                    let x = self.rng.below(total);
                    w.cumulative.partition_point(|&c| c <= x)
                }
                _ => 0,
            };
        }
        self.current
    }

    fn begin_iteration(&mut self, w: &Workload) {
        self.step = 0;
        self.rep = 0;
        self.vars.iter_mut().for_each(|v| *v = None);
        self.take_rows(w);
    }

    fn take_rows(&mut self, w: &Workload) {
        for (r, t) in self.rows.iter_mut().zip(&w.tables) {
            *r = t.row_for(self.id);
        }
    }

    /// The current step and the values its templates read.
    fn scope<'a>(&'a mut self, w: &'a Workload) -> (&'a Request, Scope<'a>) {
        let scope = Scope {
            seq: &w.seq,
            seq_value: None,
            vu: self.id,
            rng: &mut self.rng,
            vars: &self.vars,
            tables: &w.tables,
            rows: &self.rows,
        };
        (&w.requests[self.current], scope)
    }

    /// Renders the current request's HTTP/1.1 bytes into [`Vu::buf`]; a refused request
    /// leaves nothing to send.
    pub fn render_h1(
        &mut self,
        w: &Workload,
        authority: &str,
        keepalive: bool,
    ) -> Result<(), Refusal> {
        // The buffers move out and back (no allocation) so the scope can borrow the rest.
        let (mut buf, mut body) = (
            std::mem::take(&mut self.buf),
            std::mem::take(&mut self.body),
        );
        let (step, mut scope) = self.scope(w);
        let r = step.render_h1(&mut scope, authority, keepalive, &mut buf, &mut body);
        if r.is_err() {
            buf.clear();
        }
        (self.buf, self.body) = (buf, body);
        r
    }

    /// The current request's completion URL, rendered with this iteration's variables (after
    /// the extraction of the answer that started it).
    pub fn completion_url(&mut self, w: &Workload) -> Option<String> {
        let (step, mut scope) = self.scope(w);
        let c = step.complete.as_ref()?;
        let mut out = Vec::new();
        c.url.render(&mut scope, &mut out);
        Some(String::from_utf8_lossy(&out).into_owned())
    }

    /// Renders the current request's parts for HTTP/2: (path, header values, body), under the
    /// same wire rules as HTTP/1.1.
    pub fn render_parts(&mut self, w: &Workload) -> Result<H2Parts, Refusal> {
        let (step, mut scope) = self.scope(w);
        let (path, mut headers) = head_in(step, &mut scope)?;
        let mut body = Vec::new();
        body_in(step, &mut scope, &mut body)?;
        let traced = step
            .headers
            .iter()
            .position(|(n, _)| n.eq_ignore_ascii_case("traceparent"));
        if let (Some(t), Some(i)) = (&w.trace, traced) {
            self.trace_id = Some(crate::trace::stamp(
                &mut headers[i],
                &mut self.trace_rng,
                t.ratio,
            ));
        }
        Ok((String::from_utf8_lossy(&path).into_owned(), headers, body))
    }

    /// Renders the current request's path and header values alone (a WebSocket upgrade, made
    /// once per connection), under the wire rules.
    pub fn render_head(&mut self, w: &Workload) -> Result<(String, Vec<Vec<u8>>), Refusal> {
        let (step, mut scope) = self.scope(w);
        let (path, headers) = head_in(step, &mut scope)?;
        Ok((String::from_utf8_lossy(&path).into_owned(), headers))
    }

    /// Renders the current request's body (or message) alone into `out` (a WebSocket
    /// message on an open connection).
    pub fn render_body(&mut self, w: &Workload, out: &mut Vec<u8>) -> Result<(), Refusal> {
        let (step, mut scope) = self.scope(w);
        body_in(step, &mut scope, out)
    }

    /// Takes the outcome of the current request (an answer: its status, whether that counts
    /// as a success, what was kept of it; or why there was none): runs its checks, counting
    /// each in `rec`, extracts its variables and moves the flow on. A failed check (unless it
    /// only counts) turns a success into [`ErrorKind::Check`], an extraction that finds
    /// nothing into [`ErrorKind::Extract`].
    pub fn complete(
        &mut self,
        w: &Workload,
        answer: Result<Answer, ErrorKind>,
        rec: &mut Bucket,
    ) -> Result<(), ErrorKind> {
        let step = &w.requests[self.current];
        let ok = answer.as_ref().is_ok_and(|a| a.ok);
        let mut result = answer.as_ref().map(|_| ()).map_err(|k| *k);
        if let Ok(a) = &answer {
            let decoded = match (&step.message, a.kept) {
                (Some(m), Some(c)) if step.keeps_response() => Some(decode(m, c)),
                _ => None,
            };
            let kept = match &decoded {
                Some(Ok(c)) => Some(c),
                _ => a.kept,
            };
            let unreadable = match &decoded {
                Some(Err(why)) => Some(why.as_str()),
                _ => None,
            };
            if !run_checks(step, a.status, kept, unreadable, rec) && ok {
                result = Err(ErrorKind::Check);
            }
            if let (Some(fault), true) = (a.fault, ok) {
                result = Err(fault);
            }
            if ok && result.is_ok() {
                result = self.extract(step, kept, unreadable);
            }
        }
        if w.flow {
            if ok && result.is_ok() {
                self.rep += 1;
                if self.rep >= step.weight.max(1) {
                    self.rep = 0;
                    self.step += 1;
                }
                self.in_iteration = self.step < w.requests.len();
            } else {
                self.in_iteration = false;
            }
        }
        result
    }

    /// The step's extractions into this iteration's variables; the first that finds nothing
    /// is an [`ErrorKind::Extract`], its reason kept.
    fn extract(
        &mut self,
        step: &Request,
        kept: Option<&Captured>,
        unreadable: Option<&str>,
    ) -> Result<(), ErrorKind> {
        for (var, ex) in &step.extract {
            let found = match (kept, unreadable) {
                (_, Some(why)) => Err(why.to_string()),
                (Some(c), None) => ex.apply(c),
                (None, None) => Err("the response was not kept".to_string()),
            };
            match found {
                Ok(v) => self.vars[*var] = Some(v),
                Err(why) => {
                    self.extract_failure = Some(why);
                    return Err(ErrorKind::Extract);
                }
            }
        }
        Ok(())
    }
}

/// An answered attempt, as the workload sees it.
#[derive(Clone, Copy)]
pub struct Answer<'a> {
    /// The HTTP status.
    pub status: u16,
    /// Whether its status (or gRPC code) counts as a success.
    pub ok: bool,
    /// Its headers and body, when the request keeps its responses.
    pub kept: Option<&'a Captured>,
    /// A streamed answer that broke its own rules (a token stream's `bad_delta`,
    /// `stream_error`, `unfinished`): a success turns into this error, as a failed check does.
    pub fault: Option<ErrorKind>,
}

/// Runs every check of `step` on an answer, counting each in `rec`; whether none that
/// decides (every check but those that only count) failed.
fn run_checks(
    step: &Request,
    status: u16,
    kept: Option<&Captured>,
    unreadable: Option<&str>,
    rec: &mut Bucket,
) -> bool {
    let mut passed = true;
    for c in &step.checks {
        let outcome = match unreadable {
            Some(why) if c.needs_body() => CheckOutcome::Failed(why.to_string()),
            _ => c.run(status, kept),
        };
        passed &= !matches!(outcome, CheckOutcome::Failed(_)) || c.count_only;
        rec.record_check(c.slot, outcome);
    }
    passed
}

/// A gRPC response as JSON, for the extractors: its headers kept, its messages decoded.
fn decode(m: &Message, c: &Captured) -> Result<Captured, String> {
    if let Some(why) = c.unusable() {
        return Err(why);
    }
    let json = m
        .codec()
        .decode(&c.body)
        .map_err(|e| format!("the response message does not decode: {e}"))?;
    Ok(Captured::of(
        c.headers.clone(),
        json.to_string().into_bytes(),
    ))
}

/// `step`'s path and header values rendered in `scope`, refused when one breaks the wire rules.
fn head_in(step: &Request, scope: &mut Scope) -> Result<(Vec<u8>, Vec<Vec<u8>>), Refusal> {
    let mut path = Vec::new();
    step.path.render(scope, &mut path);
    if guard::path_fault(&path).is_some() {
        return Err(Refusal::new("path", &path));
    }
    let mut headers = Vec::with_capacity(step.headers.len());
    for (n, v) in &step.headers {
        let mut out = Vec::new();
        v.render(scope, &mut out);
        if guard::header_value_fault(&out).is_some() {
            return Err(Refusal::new(format!("header {n}"), &out));
        }
        headers.push(out);
    }
    Ok((path, headers))
}

/// `step`'s body, or its message, rendered in `scope` into `out`.
fn body_in(step: &Request, scope: &mut Scope, out: &mut Vec<u8>) -> Result<(), Refusal> {
    match &step.message {
        Some(m) => m
            .render(scope, out)
            .map_err(|doc| Refusal::new("message", doc.as_bytes())),
        None => {
            step.body.render(scope, out);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Names;

    fn step(name: &str, path: &str, vars: &[String], weight: u32) -> Request {
        let names = Names {
            data: &[],
            vars,
            env: &|_| None,
        };
        let mut s = Request::fixed(name, "GET", "/", &[], b"");
        s.path = Template::compile(path, &names).unwrap();
        s.weight = weight;
        s
    }

    #[test]
    fn mix_follows_weights() {
        let w = Workload::new(
            vec![step("a", "/a", &[], 1), step("b", "/b", &[], 3)],
            false,
            Vec::new(),
            Vec::new(),
            7,
        );
        let mut vu = Vu::new(&w, 0);
        let mut counts = [0u32; 2];
        for _ in 0..40_000 {
            counts[vu.next(&w)] += 1;
        }
        let share_b = f64::from(counts[1]) / 40_000.0;
        assert!((share_b - 0.75).abs() < 0.01, "{counts:?}");
    }

    #[test]
    fn flow_extracts_repeats_and_restarts_after_a_failure() {
        let vars = vec!["token".to_string()];
        let mut login = step("login", "/login", &vars, 1);
        login.extract = vec![(
            0,
            Extractor::Json(serde_json_path::JsonPath::parse("$.access_token").unwrap()),
        )];
        let list = step("list", "/items?t={{token}}", &vars, 2);
        let w = Workload::new(vec![login, list], true, Vec::new(), vars, 1);
        let set = model::StatusSet::parse("200-399").unwrap();
        let ok = |status: u16, kept| {
            Ok(Answer {
                status,
                ok: set.contains(status),
                kept,
                fault: None,
            })
        };
        let mut rec = Bucket::new(0);
        let mut vu = Vu::new(&w, 3);
        let token = Captured::of(Vec::new(), br#"{"access_token":"t-1"}"#.to_vec());
        assert_eq!(vu.next(&w), 0);
        assert_eq!(vu.complete(&w, ok(200, Some(&token)), &mut rec), Ok(()));
        assert_eq!(vu.next(&w), 1);
        vu.render_h1(&w, "h", true).unwrap();
        assert!(vu.buf.starts_with(b"GET /items?t=t-1 HTTP/1.1\r\n"));
        assert_eq!(vu.complete(&w, ok(200, None), &mut rec), Ok(()));
        assert_eq!(vu.next(&w), 1, "weight 2: the step runs twice");
        assert_eq!(vu.complete(&w, ok(200, None), &mut rec), Ok(()));
        assert!(!vu.in_iteration(), "iteration over after the last step");
        // A login whose body lacks the token is an extraction error and restarts the flow.
        assert_eq!(vu.next(&w), 0);
        let empty = Captured::of(Vec::new(), Vec::new());
        assert_eq!(
            vu.complete(&w, ok(200, Some(&empty)), &mut rec),
            Err(ErrorKind::Extract)
        );
        assert_eq!(vu.next(&w), 0);
        // A failing status ends the iteration too, and is not an extraction error.
        assert_eq!(vu.complete(&w, ok(503, Some(&token)), &mut rec), Ok(()));
        assert_eq!(vu.next(&w), 0);
    }

    #[test]
    fn checks_count_apart_and_fail_an_answer_unless_they_only_count() {
        use crate::check::Test;
        let check = |name: &str, test, count_only, slot| Check {
            name: name.into(),
            test,
            negate: false,
            count_only,
            slot,
        };
        let mut list = step("list", "/items", &[], 1);
        list.checks = vec![
            check("says ok", Test::BodyContains(b"ok".to_vec()), false, 0),
            check("cached", Test::BodyContains(b"hit".to_vec()), true, 1),
        ];
        let w = Workload::new(vec![list], true, Vec::new(), Vec::new(), 1);
        let mut rec = Bucket::new(0);
        let mut vu = Vu::new(&w, 0);
        let answer = |body: &'static str| Captured::of(Vec::new(), body.into());
        let (fine, miss, wrong) = (answer("ok"), answer("ok hit"), answer("no"));
        for (kept, want) in [
            (&fine, Ok(())),
            (&miss, Ok(())),
            (&wrong, Err(ErrorKind::Check)),
        ] {
            vu.next(&w);
            let a = Answer {
                status: 200,
                ok: true,
                kept: Some(kept),
                fault: None,
            };
            assert_eq!(vu.complete(&w, Ok(a), &mut rec), want);
        }
        // A failing status is already a failure: its checks count, the kind stays the status.
        vu.next(&w);
        let a = Answer {
            status: 500,
            ok: false,
            kept: Some(&wrong),
            fault: None,
        };
        assert_eq!(vu.complete(&w, Ok(a), &mut rec), Ok(()));
        let says_ok = &rec.checks[0];
        assert_eq!((says_ok.passed, says_ok.failed), (2, 2));
        assert!(says_ok.first_failure.as_deref().unwrap().contains("\"no\""));
        let cached = &rec.checks[1];
        assert_eq!((cached.passed, cached.failed), (1, 3));
        // A transport failure runs no check.
        vu.next(&w);
        assert_eq!(
            vu.complete(&w, Err(ErrorKind::Reset), &mut rec),
            Err(ErrorKind::Reset)
        );
        assert_eq!(rec.checks[0].passed + rec.checks[0].failed, 4);
    }

    #[test]
    fn extractors() {
        let r = Captured::of(
            vec![("X-Request-Id".into(), "abc".into())],
            br#"{"items":[{"id":42}],"next":"p2"} id=77"#.to_vec(),
        );
        let json = |p: &str| Extractor::Json(serde_json_path::JsonPath::parse(p).unwrap());
        let why = json("$.items[0].id").apply(&r).unwrap_err();
        assert!(why.starts_with("the body is not JSON"), "{why}");
        let body_json = Captured::of(Vec::new(), br#"{"items":[{"id":42}],"next":"p2"}"#.to_vec());
        assert_eq!(json("$.items[0].id").apply(&body_json).as_deref(), Ok("42"));
        assert_eq!(json("$.next").apply(&body_json).as_deref(), Ok("p2"));
        assert_eq!(
            json("$.missing").apply(&body_json),
            Err("JSONPath $.missing matched nothing".to_string())
        );
        assert_eq!(
            Extractor::Header("x-request-id".into())
                .apply(&r)
                .as_deref(),
            Ok("abc")
        );
        let re = Extractor::Regex(regex::bytes::Regex::new(r"id=(\d+)").unwrap());
        assert_eq!(re.apply(&r).as_deref(), Ok("77"));
    }

    #[test]
    fn data_rows_in_order_or_per_vu() {
        let t = Table::new(
            "u".into(),
            vec!["e".into()],
            vec![vec!["a".into()], vec!["b".into()]],
            false,
        );
        assert_eq!((t.row_for(5), t.row_for(5), t.row_for(5)), (0, 1, 0));
        let t = Table::new(
            "u".into(),
            vec!["e".into()],
            vec![vec!["a".into()], vec!["b".into()]],
            true,
        );
        assert_eq!((t.row_for(5), t.row_for(5), t.row_for(4)), (1, 1, 0));
    }
}
