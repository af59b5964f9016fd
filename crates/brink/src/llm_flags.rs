//! `--llm`: a URL's answers read as OpenAI-compatible token streams. Here the request is
//! built from `--model`, `--prompt` (or `--prompt-tokens`) and `--max-tokens` when the user
//! gave no body, and the run's objectives on one stream's times (`ttft`, `tpot`, latency)
//! become the per-request objectives goodput counts against.

use crate::cli::LoadArgs;
use crate::exit::Fail;
use engine::workload::llm::{Api, Ask, DEFAULT_MAX_TOKENS, DEFAULT_PROMPT};
use engine::workload::template::{Names, Template};
use engine::{PerRequest, RequestSpec, Target};
use stats::slo::{Metric, Op, Slo, StreamTime};

/// The request of `brink URL --llm`: the user's body as written (`-b`, `--body-file`), or the
/// one the LLM flags describe; POST unless `-m` says otherwise.
pub fn request(
    a: &LoadArgs,
    target: &Target,
    body: Vec<u8>,
) -> Result<(String, engine::Request), Fail> {
    let method = a.method.as_deref().unwrap_or("POST");
    let mut req = RequestSpec::new(target.clone(), method, &a.headers, body.into())
        .map_err(|e| Fail::input(e.to_string()))?
        .request();
    req.headers = crate::grpc_call::flag_headers(a)?;
    if a.body.is_none() && a.body_file.is_none() {
        req.body = built_body(a, &target.path)?;
        if !req
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        {
            req.headers.push((
                "content-type".into(),
                Template::literal(b"application/json"),
            ));
        }
    }
    Ok((format!("{} {}", req.method, target.path), req))
}

/// `--llm` reads HTTP answers; a gRPC or WebSocket URL has none to read.
pub fn refuse_off_http(a: &LoadArgs, protocol: engine::Protocol) -> Result<(), Fail> {
    match protocol {
        engine::Protocol::Http1 | engine::Protocol::Http2 => Ok(()),
        _ if a.llm => Err(Fail::input(
            "--llm reads HTTP answers (an OpenAI-compatible server's http:// or https:// URL)",
        )),
        _ => Ok(()),
    }
}

/// With a plan, its `llm:` steps say what they ask; `--llm` alone (every answer read as a
/// token stream) is fine.
pub fn refuse_with_plan(a: &LoadArgs) -> Result<(), Fail> {
    let given = [
        (a.model.is_some(), "--model"),
        (a.prompt.is_some(), "--prompt"),
        (a.prompt_tokens.is_some(), "--prompt-tokens"),
        (a.max_tokens.is_some(), "--max-tokens"),
    ];
    match given.iter().find(|(g, _)| *g) {
        Some((_, flag)) => Err(Fail::input(format!(
            "{flag} applies to a URL; a plan's llm: step sets what it asks"
        ))),
        None => Ok(()),
    }
}

/// The body the LLM flags describe, for the API the path names.
fn built_body(a: &LoadArgs, path: &str) -> Result<Template, Fail> {
    let api = Api::of_path(path).ok_or_else(|| {
        Fail::input(format!(
            "--llm: the URL path '{path}' ends in neither /chat/completions nor /completions; give the API's path (e.g. /v1/chat/completions) or the body with -b"
        ))
    })?;
    let model = a.model.as_deref().ok_or_else(|| {
        Fail::input(
            "--llm: --model NAME is required to build the request (or give the body with -b)",
        )
    })?;
    let words = a.prompt_tokens.map(|n| format!("{{{{words {n}}}}}"));
    let prompt = a
        .prompt
        .as_deref()
        .or(words.as_deref())
        .unwrap_or(DEFAULT_PROMPT);
    let max_tokens = a.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    if max_tokens == 0 {
        return Err(Fail::input("--max-tokens must be at least 1"));
    }
    let names = Names {
        data: &[],
        vars: &[],
        env: &model::env::var,
    };
    let ask = Ask {
        api,
        model,
        prompt,
        max_tokens,
    };
    ask.body(&names).map_err(|e| {
        let what = if a.prompt.is_some() {
            "--prompt"
        } else {
            "--prompt-tokens"
        };
        Fail::input(format!("{what}: {}", e.message))
    })
}

/// The objectives of a run's token streams: their per-request thresholds when the run reads
/// token streams (`rule`), and an error naming the first `ttft`/`itl`/`tpot` objective when
/// it does not (it could only ever say "no data").
pub fn judge(rule: &mut Option<PerRequest>, slos: &[Slo]) -> Result<(), Fail> {
    if let Some(r) = rule.as_mut() {
        *r = per_request(slos);
        return Ok(());
    }
    let tokens = slos.iter().find(|s| {
        matches!(
            s.metric,
            Metric::Stream(StreamTime::Ttft | StreamTime::Itl | StreamTime::Tpot, _)
        )
    });
    match tokens {
        Some(s) => Err(Fail::input(format!(
            "objective '{}' times token streams: add --llm (or make the steps llm: steps)",
            s.text
        ))),
        None => Ok(()),
    }
}

/// The objectives one token stream is judged against for goodput: for each of TTFT, TPOT
/// and the whole answer's latency, the tightest upper bound the run's objectives (on all its
/// requests) set.
pub fn per_request(slos: &[Slo]) -> PerRequest {
    let mut p = PerRequest::default();
    for s in slos.iter().filter(|s| s.request.is_none()) {
        let slot = match s.metric {
            Metric::Stream(StreamTime::Ttft, _) => &mut p.ttft_us,
            Metric::Stream(StreamTime::Tpot, _) => &mut p.tpot_us,
            Metric::Latency(_) => &mut p.latency_us,
            _ => continue,
        };
        // A stream meets `< limit`; `<= limit` is `< limit + 1 µs`.
        let us = (s.threshold * 1000.0).round() as u64;
        let limit = match s.op {
            Op::Lt => us,
            Op::Le => us + 1,
            Op::Gt | Op::Ge => continue,
        };
        *slot = Some(slot.map_or(limit, |l: u64| l.min(limit)));
    }
    p
}
