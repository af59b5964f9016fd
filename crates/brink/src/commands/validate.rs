//! `brink validate`: check a plan (syntax, keys, durations, rates, templates, JSONPaths, SLOs,
//! literal values that could never be sent) and run nothing. A gRPC step without `proto` or
//! `protoset` is checked against the server's reflection (a question, not load), with TLS
//! verified as the system's roots allow.

use crate::cli::ValidateArgs;
use crate::emitln;
use crate::exit::Fail;

pub fn validate_cmd(a: &ValidateArgs) -> Result<i32, Fail> {
    crate::resolve::set_input_limit(&a.max_data_size)?;
    let reflect = |t: &model::Target, service: &str| {
        let tls = engine::TlsOptions::default();
        crate::grpc_call::reflect_with(
            t,
            &tls,
            crate::connect_flags::DEFAULT_CONNECT_TIMEOUT,
            Some(service),
        )
        .map(|(_, pool)| pool)
    };
    let plan =
        plan::load_file_with(&a.plan, 0, &reflect).map_err(|e| Fail::input(e.to_string()))?;
    emitln!("{}: ok, {} scenario(s)", plan.file, plan.scenarios.len());
    for s in &plan.scenarios {
        let kind = if s.workload.flow { "flow" } else { "mix" };
        let steps: Vec<&str> = s
            .workload
            .requests
            .iter()
            .map(|x| x.name.as_str())
            .collect();
        let slos: Vec<&str> = s.slos.iter().map(|o| o.text.as_str()).collect();
        emitln!(
            "  {}: {} over {}, {} of {} ({}), {} SLO(s){}{}",
            s.name,
            s.target.url(),
            spoken(s),
            kind,
            steps.len(),
            steps.join(", "),
            s.slos.len(),
            if slos.is_empty() { "" } else { ": " },
            slos.join(", ")
        );
    }
    Ok(0)
}

/// What a scenario speaks, as its settings say (a plan's `http2:`/`http3:` over the URL's).
fn spoken(s: &plan::Scenario) -> &'static str {
    let x = &s.settings;
    match (x.http3_auto, x.http3, x.http2) {
        (true, _, _) => "h3 if the server's Alt-Svc advertises it (http3: auto)",
        (false, Some(true), _) => "h3",
        (false, _, Some(true)) if s.target.protocol == engine::Protocol::Http1 => "h2",
        _ => s.target.protocol.wire().name(),
    }
}
