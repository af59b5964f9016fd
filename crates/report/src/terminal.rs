//! The terminal summary, in the shape of the tables users paste into reports: counts,
//! success rate, a percentile table and a latency distribution.

use crate::fmt::{fmt_bytes, fmt_count, fmt_ms, fmt_rate, observed_value};
use crate::ScenarioResult;
use std::fmt::Write;

/// The whole summary as printed at the end of `brink run`.
pub fn render(r: &ScenarioResult) -> String {
    let mut o = String::new();
    heading(&mut o, r);
    counts(&mut o, r);
    checks(&mut o, &r.checks);
    connections(&mut o, &r.summary, r.target.protocol);
    notes(&mut o, r);
    let s = &r.summary;
    if s.requests > s.unanswered() {
        latency_table(&mut o, r);
        distribution(&mut o, r);
    }
    o.push_str(&crate::sla::requests_table(r));
    o.push_str(&crate::sla::sla_table(r));
    o
}

/// `--http3=auto`: what the asking request found and what the run chose.
fn discovered(d: &model::alt_svc::Discovered) -> String {
    let asked = format!(
        "asked over {} ({}, {})",
        d.asked_over,
        d.status,
        fmt_ms(d.ms)
    );
    let said = match &d.alt_svc {
        Some(h) => format!("Alt-Svc: {h}"),
        None => "no Alt-Svc".to_string(),
    };
    let chose = match (d.port, d.not_taken.is_empty()) {
        (Some(p), _) => format!("HTTP/3 on UDP port {p}"),
        (None, true) => format!("{} (no HTTP/3 advertised)", d.chose),
        (None, false) => format!("{} (no advertised HTTP/3 taken)", d.chose),
    };
    let mut text = format!("--http3=auto: {asked}; {said}; running over {chose}");
    for why in &d.not_taken {
        let _ = write!(text, "\n    not taken: {why}");
    }
    text
}

/// The target, the load, and whether the run was cut short.
fn heading(o: &mut String, r: &ScenarioResult) {
    let s = &r.summary;
    let _ = writeln!(
        o,
        "\n{} {}  ({}, {})",
        r.target.method,
        r.target.shown(),
        r.target.protocol,
        describe_load(&r.load)
    );
    if let Some(at) = &r.target.dialled {
        let _ = writeln!(o, "  dialled {at} (the URL's authority is sent as Host)");
    }
    if let Some(d) = &r.target.discovered {
        let _ = writeln!(o, "  {}", discovered(d));
    }
    match model::WorkerReport::first_short(&r.workers) {
        // A worker gave up or was lost: the run is short of its share, not interrupted.
        Some(why) if r.interrupted => {
            let _ = writeln!(o, "  short: {why}: figures cover what the workers sent");
        }
        _ if r.interrupted => {
            let _ = writeln!(
                o,
                "  interrupted: figures cover the {:.1}s that ran",
                s.duration_s
            );
        }
        _ => {}
    }
    if let Some(slo) = &r.aborted_by {
        let _ = writeln!(
            o,
            "  aborted: SLO '{slo}' broke; figures cover the {:.1}s that ran",
            s.duration_s
        );
    }
    if r.unreachable {
        let _ = writeln!(
            o,
            "  stopped after {:.1}s: every connect was refused and none ever succeeded",
            s.duration_s
        );
    }
    if let Some(short) = s.schedule.as_ref().and_then(|x| x.shortfall_text()) {
        let _ = writeln!(o, "  SHORTFALL {short}");
    }
    let _ = writeln!(o);
}

/// Requests, successes, errors by kind, status codes, messages and bytes.
fn counts(o: &mut String, r: &ScenarioResult) {
    let s = &r.summary;
    let row = row_to;
    let mut requests = format!(
        "{}  ({} req/s over {:.2}s",
        fmt_count(s.requests),
        fmt_rate(s.rps),
        s.duration_s
    );
    // The last answer of each connection always comes just after the end: worth a word only
    // when the run had to wait for answers.
    if s.in_grace > 0 && s.grace_s >= 0.05 {
        let _ = write!(
            requests,
            "; {} of them ended in the {:.1}s grace after it, not in the rate",
            fmt_count(s.in_grace),
            s.grace_s
        );
    }
    requests.push(')');
    row(o, "requests", requests);
    let held = s.stream.as_ref().and_then(|st| st.held).unwrap_or(0);
    let ok = if s.requests == 0 && held > 0 {
        // Every stream was held open to the end: none ended, so none is a success or not.
        format!("0  (no stream ended: {} held open)", fmt_count(held))
    } else {
        format!(
            "{}  success rate {:.2}%  ({} ok/s, {} ok/min)",
            fmt_count(s.ok),
            s.success_rate * 100.0,
            fmt_rate(s.ok_rps),
            fmt_rate(s.ok_rps * 60.0)
        )
    };
    row(o, "ok", ok);
    let kinds: Vec<String> = s
        .errors_by_kind
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, n)| format!("{k} {}", fmt_count(*n)))
        .collect();
    let mut err = fmt_count(s.errors);
    if s.errors > 0 {
        let mut parts = kinds;
        parts.extend(failed_answers(r));
        err = format!("{err}  ({})", parts.join(", "));
    }
    row(o, "errors", err);
    let by_code: Vec<String> = s
        .errors_by_code
        .iter()
        .map(|(c, n)| format!("{c} {}", fmt_count(*n)))
        .collect();
    if !by_code.is_empty() {
        row(o, "error codes", by_code.join("  "));
    }
    let status: Vec<String> = s
        .status
        .iter()
        .map(|(c, n)| format!("{c}: {}", fmt_count(*n)))
        .collect();
    // A WebSocket's messages all travel under its upgrade's 101: no status to show.
    let only_upgrades = s.websocket.is_some() && s.status.keys().all(|c| c == "101");
    if !status.is_empty() && !only_upgrades {
        row(o, "status", status.join("  "));
    }
    let codes: Vec<String> = s
        .grpc_status
        .iter()
        .map(|(c, n)| format!("{c}: {}", fmt_count(*n)))
        .collect();
    if !codes.is_empty() {
        row(o, "grpc codes", codes.join("  "));
    }
    if let Some(st) = &s.grpc_stream {
        let mut text = format!(
            "{} sent, {} received ({:.1} per call, {}/s)",
            fmt_count(st.messages_sent),
            fmt_count(st.messages_received),
            st.received_per_call,
            fmt_count(st.received_per_s.round() as u64)
        );
        if let Some(f) = &st.first_message_ms {
            text.push_str(&format!(
                "; first message p50 {} p99 {}",
                fmt_ms(f.p50),
                fmt_ms(f.p99)
            ));
        }
        row(o, "messages", text);
    }
    if let Some(w) = &s.websocket {
        websocket(o, w);
    }
    if let Some(st) = &s.stream {
        events(o, st);
    }
    if let Some(l) = &s.llm {
        tokens(o, l);
    }
    // Bytes are counted when an answer ends: held streams open at the end never did.
    let held = s.stream.as_ref().and_then(|st| st.held).unwrap_or(0);
    let unended = match held {
        0 => String::new(),
        n => format!(
            " (answers that ended; the {} streams held open are not in it)",
            fmt_count(n)
        ),
    };
    row(
        o,
        "transfer",
        format!(
            "in {}, out {}{unended}",
            fmt_bytes(s.bytes_in),
            fmt_bytes(s.bytes_out)
        ),
    );
}

/// A WebSocket run's upgrades, messages each way and how its connections were closed.
fn websocket(o: &mut String, w: &crate::WebSocketJson) {
    let mut up = format!("{} upgraded", fmt_count(w.upgrades));
    if !w.upgrades_refused.is_empty() {
        let refused: u64 = w.upgrades_refused.values().sum();
        up.push_str(&format!(
            ", {} refused ({})",
            fmt_count(refused),
            codes(&w.upgrades_refused)
        ));
    }
    if let Some(u) = &w.upgrade_ms {
        up.push_str(&format!(
            "; upgrade p50 {} p99 {} max {}",
            fmt_ms(u.p50),
            fmt_ms(u.p99),
            fmt_ms(u.max)
        ));
    }
    row_to(o, "websocket", up);
    if w.messages_sent == 0 && w.messages_received == 0 && w.pings == 0 {
        return closes(o, w);
    }
    let mut msgs = format!(
        "{} sent, {} received",
        fmt_count(w.messages_sent),
        fmt_count(w.messages_received)
    );
    if w.pings > 0 {
        msgs.push_str(&format!(", {} pings answered", fmt_count(w.pings)));
    }
    row_to(o, "messages", msgs);
    closes(o, w);
}

/// `code: count` pairs, two spaces apart.
fn codes(counts: &std::collections::BTreeMap<String, u64>) -> String {
    let pairs: Vec<String> = counts
        .iter()
        .map(|(c, n)| format!("{c}: {}", fmt_count(*n)))
        .collect();
    pairs.join("  ")
}

/// How a WebSocket run's connections ended, their delivery delays and how long they lasted.
fn closes(o: &mut String, w: &crate::WebSocketJson) {
    if !w.close_codes.is_empty() || w.unexpected_closes > 0 {
        let mut text = codes(&w.close_codes);
        if w.unexpected_closes > 0 {
            text.push_str(&format!(
                "  ({} ended by the server)",
                fmt_count(w.unexpected_closes)
            ));
        }
        row_to(o, "closed", text.trim_start().to_string());
    }
    delivery(o, w.delay_ms.as_ref(), w.undated, "message");
    if let Some(c) = &w.connected_ms {
        row_to(
            o,
            "held",
            format!(
                "connections stayed up p50 {} min {} max {}",
                fmt_ms(c.p50),
                fmt_ms(c.min),
                fmt_ms(c.max)
            ),
        );
    }
}

/// Connections opened and how long opening them took. Over HTTP/3 the connect is the QUIC
/// handshake (TLS 1.3 inside it): said so, as it is not comparable with a TCP connect.
fn connections(o: &mut String, s: &crate::SummaryJson, wire: model::Wire) {
    let row = row_to;
    if s.connections_opened > 0 {
        let pct = |l: &stats::LatencySummary| {
            format!(
                "p50 {} p99 {} max {}",
                fmt_ms(l.p50),
                fmt_ms(l.p99),
                fmt_ms(l.max)
            )
        };
        let mut parts = vec![format!("{} opened", fmt_count(s.connections_opened))];
        if let Some(c) = &s.connect_ms {
            let what = match wire {
                model::Wire::H3 => "QUIC handshake (TLS in it)",
                model::Wire::Http1 | model::Wire::H2 | model::Wire::Ws => "connect",
            };
            parts.push(format!("{what} {}", pct(c)));
        }
        if let Some(t) = &s.tls_ms {
            parts.push(format!("TLS handshake {}", pct(t)));
        }
        if let Some(w) = &s.with_connect_ms {
            parts.push(format!("connect + request {}", pct(w)));
        }
        row(o, "connections", parts.join("; "));
    }
    if let Some(z) = &s.zero_rtt {
        let mut text = format!(
            "{} requests sent as early data on {} connections resuming a session",
            fmt_count(z.requests),
            fmt_count(z.connections)
        );
        if z.refused > 0 {
            let _ = write!(
                text,
                "; {} refused by the server and sent again after the handshake",
                fmt_count(z.refused)
            );
        }
        row(o, "0-RTT", text);
    }
}

/// Answers read as events: how many and how fast, then what a reader of the stream waits
/// for, each from the intended start: the head, the first event, each next one.
fn events(o: &mut String, st: &results::events::EventStreamJson) {
    row_to(
        o,
        "stream",
        format!(
            "{} events read ({}/s); {} answers ended, {:.1} events each",
            fmt_count(st.events),
            fmt_count(st.events_per_s.round() as u64),
            fmt_count(st.streams),
            st.events_per_stream
        ),
    );
    let p = |l: &stats::LatencySummary| format!("p50 {} p99 {}", fmt_ms(l.p50), fmt_ms(l.p99));
    let mut parts = Vec::new();
    if let Some(f) = &st.first_byte_ms {
        parts.push(format!("first byte {}", p(f)));
    }
    if let Some(f) = &st.first_event_ms {
        parts.push(format!("first event {}", p(f)));
    }
    if let Some(g) = &st.event_gap_ms {
        parts.push(format!("between events {}", p(g)));
    }
    if !parts.is_empty() {
        row_to(o, "events", parts.join("; "));
    }
    if st.reconnects > 0 {
        row_to(
            o,
            "reconnects",
            format!(
                "{} (a held stream ended and was reopened), {} with Last-Event-ID",
                fmt_count(st.reconnects),
                fmt_count(st.resumed)
            ),
        );
    }
    delivery(o, st.delay_ms.as_ref(), st.undated, "event");
}

/// Delivery delays from the send time each pushed `what` (a message, an event) carries, and
/// how many carried none that could be read.
fn delivery(o: &mut String, delay: Option<&stats::LatencySummary>, undated: u64, what: &str) {
    if let Some(d) = delay {
        let mut text = format!(
            "p50 {} p99 {} max {} from the send time each {what} carries",
            fmt_ms(d.p50),
            fmt_ms(d.p99),
            fmt_ms(d.max)
        );
        if undated > 0 {
            text.push_str(&format!("; {} without a readable one", fmt_count(undated)));
        }
        row_to(o, "delivery", text);
    } else if undated > 0 {
        row_to(
            o,
            "delivery",
            format!(
                "{} {what}s without a readable send time",
                fmt_count(undated)
            ),
        );
    }
}

/// Token streams: how many and how many tokens, what a user of the model waits for (the
/// first token, each next one, per token), and how many streams met every objective.
fn tokens(o: &mut String, l: &results::events::LlmJson) {
    // Said for the streams it is true of: a server may send usage on some streams only.
    let estimated = match l.estimated_streams {
        _ if !l.tokens_estimated => String::new(),
        n if n == 0 || n >= l.streams => {
            " (counted from the deltas: the server sent no usage)".to_string()
        }
        n => format!(
            " ({} of the streams counted from their deltas: the server sent no usage on them)",
            fmt_count(n)
        ),
    };
    row_to(
        o,
        "tokens",
        format!(
            "{} streams, {} output tokens ({}/s; {}/s per stream){estimated}",
            fmt_count(l.streams),
            fmt_count(l.output_tokens),
            fmt_count(l.output_tokens_per_s.round() as u64),
            per_stream(l.output_tokens_per_stream_s)
        ),
    );
    let p = |l: &stats::LatencySummary| format!("p50 {} p99 {}", fmt_ms(l.p50), fmt_ms(l.p99));
    let times = [
        ("TTFT", &l.ttft_ms),
        ("ITL", &l.itl_ms),
        ("TPOT", &l.tpot_ms),
    ];
    let parts: Vec<String> = times
        .iter()
        .filter_map(|(name, t)| Some(format!("{name} {}", p(t.as_ref()?))))
        .collect();
    if !parts.is_empty() {
        row_to(o, "per token", parts.join("; "));
    }
    if let (Some(rate), Some(good)) = (l.goodput_per_s, l.good_streams) {
        let share = if l.streams > 0 {
            100.0 * good as f64 / l.streams as f64
        } else {
            0.0
        };
        row_to(
            o,
            "goodput",
            format!(
                "{rate:.1} streams/s met every objective ({share:.1}% of {})",
                fmt_count(l.streams)
            ),
        );
    }
}

/// Output tokens per second of one stream: one decimal while small, grouped digits past it.
fn per_stream(rate: f64) -> String {
    if rate < 100.0 {
        format!("{rate:.1}")
    } else {
        fmt_count(rate.round() as u64)
    }
}

/// A distributed run's workers: how many, how closely they started, and each one that did
/// not finish (it delivered less than its share).
fn workers(o: &mut String, ws: &[model::WorkerReport]) {
    if ws.is_empty() {
        return;
    }
    let most = |f: fn(&model::WorkerReport) -> Option<f64>| {
        ws.iter()
            .filter_map(f)
            .map(f64::abs)
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    let finished = ws
        .iter()
        .filter(|w| w.status == model::WorkerStatus::Done)
        .count();
    let mut line = match finished == ws.len() {
        true => format!("{} merged", ws.len()),
        false => format!("{} merged, {finished} of them finished", ws.len()),
    };
    if let Some(skew) = most(|w| w.start_skew_ms) {
        // Only those that said Done said when they started.
        let who = if finished == ws.len() {
            "each"
        } else {
            "each that finished"
        };
        line.push_str(&format!(
            "; {who} started within {} of the agreed instant",
            fmt_ms(skew)
        ));
    }
    if let Some(bound) = most(|w| w.clock_bound_ms) {
        line.push_str(&format!(" (clocks known to {})", fmt_ms(bound)));
    }
    row_to(o, "workers", line);
    for w in ws.iter().filter(|w| w.status != model::WorkerStatus::Done) {
        row_to(
            o,
            "worker",
            format!(
                "{}; it sent {} requests in {} seconds, and its share was not re-run",
                w.said(),
                fmt_count(w.requests),
                w.seconds
            ),
        );
    }
}

/// Response checks: the share of all that passed, then each with its own pass rate and, when
/// it failed, how often and why first. A check that only counts says so.
fn checks(o: &mut String, checks: &[crate::CheckJson]) {
    if checks.is_empty() {
        return;
    }
    let (passed, runs) = crate::CheckJson::total(checks);
    row_to(
        o,
        "checks",
        format!(
            "{} passed  ({} of {} checks run on answers)",
            crate::fmt::pass_share(passed, runs),
            fmt_count(passed),
            fmt_count(runs)
        ),
    );
    let width = checks
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0);
    for c in checks {
        let mut line = format!(
            "    {:<width$}  {:>7}  on {}",
            c.name,
            crate::fmt::pass_share(c.passed, c.passed + c.failed),
            c.request
        );
        if c.failed > 0 {
            let _ = write!(line, "; {} failed", fmt_count(c.failed));
            if c.count_only {
                line.push_str(" (counted only: those requests still succeeded)");
            }
            if let Some(why) = &c.first_failure {
                let _ = write!(line, "; first: {why}");
            }
        }
        if c.unchecked > 0 {
            let _ = write!(
                line,
                "; {} answers not checked, brink kept no body for them ({}; raise --capture-limit)",
                fmt_count(c.unchecked),
                c.first_unchecked.as_deref().unwrap_or("no reason kept")
            );
        }
        let _ = writeln!(o, "{line}");
    }
}

/// The answers that counted as failures, by status or gRPC code: `status 503: 12`,
/// `UNIMPLEMENTED: 100`, `200 outside --ok-status: 5` (a 200 fails only when `--ok-status`
/// leaves it out).
pub fn failed_answers(r: &ScenarioResult) -> Vec<String> {
    let s = &r.summary;
    let statuses = s.status.iter().filter_map(|(code, n)| {
        let c: u16 = code.parse().ok()?;
        match (r.counts_as_ok(c), c < 400) {
            (true, _) => None,
            (false, true) => Some(format!("{code} outside --ok-status: {}", fmt_count(*n))),
            (false, false) => Some(format!("status {code}: {}", fmt_count(*n))),
        }
    });
    let codes = s
        .grpc_status
        .iter()
        .filter(|(code, _)| !r.code_counts_as_ok(code))
        .map(|(code, n)| format!("{code}: {}", fmt_count(*n)));
    statuses.chain(codes).collect()
}

/// What else the run has to say: server figures, the schedule, refusals, extraction
/// failures, completion, async jobs, traces, the generator check, requests left in flight.
fn notes(o: &mut String, r: &ScenarioResult) {
    let (s, row) = (&r.summary, row_to);
    if !r.observed.is_empty() {
        let figures: Vec<String> = r
            .observed
            .iter()
            .map(|(k, v)| {
                format!(
                    "{k} {} (mean {})",
                    observed_value(k, v.peak),
                    observed_value(k, v.mean)
                )
            })
            .collect();
        let mut text = figures.join(", ");
        if !r.observed_sources.is_empty() {
            text = format!("{text}  (of {})", r.observed_sources.join("; "));
        }
        row(o, "server", text);
    }
    workers(o, &r.workers);
    if let Some(sc) = &s.schedule {
        let (what, rate) = if sc.iterations {
            ("iterations", "iterations/s")
        } else {
            ("requests", "req/s")
        };
        // Paced connections send once as they open, then every period: the periods are the
        // schedule, the opening sends come on top (so more requests than intended is kept).
        let opening = if r.load.every_ms.is_some() {
            ", besides each connection's first as it opened"
        } else {
            ""
        };
        row(
            o,
            "schedule",
            format!(
                "{} {what} intended ({} {rate}{opening}); {} started late, worst lag {}; {} not sent",
                fmt_count(sc.intended),
                fmt_rate(sc.intended_rps),
                fmt_count(sc.late),
                fmt_ms(sc.max_lag_ms),
                fmt_count(sc.not_sent)
            ),
        );
    }
    for r in &r.refused {
        row(
            o,
            "refused",
            format!(
                "{} attempt(s) of '{}' never sent: {} would have been \"{}\"",
                fmt_count(r.count),
                r.request,
                r.part,
                r.value
            ),
        );
    }
    for x in &r.setup_failures {
        row(
            o,
            "unopened",
            format!(
                "{} {} of '{}'; first: {}",
                fmt_count(x.count),
                x.kind,
                x.request,
                x.reason
            ),
        );
    }
    for x in &r.answer_failures {
        row(
            o,
            &x.kind,
            format!(
                "{} of '{}'; first: {}",
                fmt_count(x.count),
                x.request,
                x.reason
            ),
        );
    }
    for x in &r.extract_failures {
        row(
            o,
            "extract",
            format!(
                "{} of '{}' found nothing; first: {}",
                fmt_count(x.count),
                x.request,
                x.reason
            ),
        );
    }
    if let Some(c) = &r.completion {
        row(o, "completion", completion_text(c));
    }
    if let Some(j) = &r.async_jobs {
        row(o, "async", async_text(j));
    }
    if let Some(t) = &r.traces {
        traces(o, t);
    }
    if let Some(b) = &r.broke {
        row(o, "broke", b.describe());
    }
    if let Some(g) = &r.generator {
        if let Some(why) = &g.why {
            row(o, "generator", format!("WARNING {why}"));
        } else if let Some(note) = &g.note {
            row(o, "generator", format!("NOTE {note}"));
        }
    }
    if let Some(held) = s.stream.as_ref().and_then(|st| st.held).filter(|&n| n > 0) {
        row(
            o,
            "held",
            format!(
                "{} streams open at the end of the run (held, not counted as requests)",
                fmt_count(held)
            ),
        );
    } else if s.unfinished > 0 {
        row(
            o,
            "unfinished",
            format!(
                "{} requests still in flight at the end (not counted)",
                fmt_count(s.unfinished)
            ),
        );
    }
}

/// The load in words: `closed model: 16 connections, 30s`.
pub fn describe_load(l: &crate::LoadInfo) -> String {
    // HTTP/2 and gRPC carry the requests in flight as streams over fewer connections.
    let slots = |n: usize| match l.over_connections {
        Some(m) => format!(
            "{n} {} in flight over {m} connection{}",
            if n == 1 { "call" } else { "calls" },
            if m == 1 { "" } else { "s" }
        ),
        None => format!("{n} connection{}", if n == 1 { "" } else { "s" }),
    };
    // A flow's rate is iterations: each sends `steps` requests.
    let rate_text = |rate: f64| match l.flow_steps {
        Some(k) => format!("{rate} iterations/s ({} requests/s)", rate * k as f64),
        None => format!("{rate} req/s"),
    };
    let mut d = match (l.model.as_str(), l.rate) {
        ("open", Some(rate)) => format!(
            "open model: {}, up to {}",
            rate_text(rate),
            slots(l.connections)
        ),
        ("open", None) => format!(
            "open model: {} stages, up to {}",
            l.stages.len(),
            slots(l.connections)
        ),
        _ if !l.stages.is_empty() => format!(
            "closed model: {} stages, up to {}",
            l.stages.len(),
            slots(l.connections)
        ),
        _ => format!("closed model: {}", slots(l.connections)),
    };
    if let Some(every) = l.every_ms {
        let _ = write!(
            d,
            ", each sending every {}",
            results::fmt::fmt_period(every)
        );
    }
    if let Some(n) = l.requests {
        let _ = write!(d, ", {} requests", fmt_count(n));
    }
    if let (Some(secs), true) = (l.duration_s, l.stages.is_empty()) {
        let _ = write!(d, ", {secs}s");
    }
    d
}

fn latency_table(o: &mut String, r: &ScenarioResult) {
    let s = &r.summary;
    let labels = s.latency_ms.labelled();
    let _ = write!(o, "\n  {:<13}", "latency");
    for (name, _) in labels {
        let _ = write!(o, "{name:>9}");
    }
    let _ = writeln!(o);
    let mut line = |name: &str, values: [(&str, f64); 11]| {
        let _ = write!(o, "  {name:<13}");
        for (_, v) in values {
            let _ = write!(o, "{:>9}", fmt_ms(v));
        }
        let _ = writeln!(o);
    };
    if r.load.model == model::LoadModel::Open || r.load.every_ms.is_some() {
        line("from intended", labels);
        line("service time", s.service_time_ms.labelled());
    } else if s.connections_opened > r.load.connections as u64 {
        // Requests that opened their connection waited for it: the total says so, the
        // service time (from the send) leaves it out.
        line("total", labels);
        line("service time", s.service_time_ms.labelled());
    } else {
        line("total", labels);
    }
}

/// A distribution bin's bound: as the tables write it, but with a third decimal under
/// 0.1 ms, where bins narrower than 0.01 ms would otherwise share one label.
fn bin_label(ms: f64) -> String {
    if ms < 0.1 {
        format!("{ms:.3}ms")
    } else {
        fmt_ms(ms)
    }
}

fn distribution(o: &mut String, r: &ScenarioResult) {
    let bins = &r.summary.latency_histogram;
    let total: u64 = bins.iter().map(|b| b.count).sum();
    let peak = bins.iter().map(|b| b.count).max().unwrap_or(0);
    if total == 0 || peak == 0 {
        return;
    }
    let _ = writeln!(o, "\n  latency distribution");
    for b in bins {
        let width = (b.count as f64 / peak as f64 * 40.0).round() as usize;
        let _ = writeln!(
            o,
            "    <= {:>9}  {:>10}  {:>6.2}%  {}",
            bin_label(b.le_ms),
            fmt_count(b.count),
            b.count as f64 * 100.0 / total as f64,
            "█".repeat(width)
        );
    }
}

/// How the jobs answered attempts started ended, and how long they took.
pub fn async_text(j: &crate::AsyncJson) -> String {
    let mut text = format!(
        "{} completed, {} failed, {} timed out",
        fmt_count(j.completed),
        fmt_count(j.failed),
        fmt_count(j.timed_out)
    );
    if let Some(l) = &j.latency_ms {
        text.push_str(&format!(
            "; send to done p50 {} p95 {} p99 {}",
            fmt_ms(l.p50),
            fmt_ms(l.p95),
            fmt_ms(l.p99)
        ));
    }
    if let Some(f) = &j.first_failure {
        text.push_str(&format!("; first failure: {f}"));
    }
    text
}

/// When the async work was done, beside when the responses were.
pub fn completion_text(c: &crate::CompletionJson) -> String {
    let last = c.last_value.as_deref().unwrap_or("none");
    let mut text = match (c.complete_s, c.drain_s) {
        (Some(done), Some(drain)) => format!(
            "complete at {done:.2}s ({}), {drain:.2}s after the last response at {:.2}s",
            c.until, c.responses_done_s
        ),
        _ => format!(
            "INCOMPLETE: {} never held; last value {last} (last response at {:.2}s)",
            c.until, c.responses_done_s
        ),
    };
    if c.failed_polls > 0 {
        text.push_str(&format!(
            "; {} of {} polls failed (first: {})",
            c.failed_polls,
            c.polls,
            c.first_failure.as_deref().unwrap_or("?")
        ));
    }
    text
}

/// The three slowest traced requests and the first failed one, with links when given.
fn traces(o: &mut String, t: &crate::TracesJson) {
    let line = |x: &crate::TraceJson| {
        let at = t.link_to(&x.trace_id).unwrap_or_else(|| x.trace_id.clone());
        format!(
            "{} {} at {:.1}s  {at}",
            fmt_ms(x.latency_ms),
            x.outcome,
            x.t_s
        )
    };
    for x in t.slowest.iter().take(3) {
        row_to(o, "slowest", line(x));
    }
    if let Some(x) = t.failed.first() {
        row_to(o, "first failed", line(x));
    }
}

/// One labelled line of the summary.
fn row_to(o: &mut String, k: &str, v: String) {
    let _ = writeln!(o, "  {k:<13} {v}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_bins_under_a_tenth_of_a_millisecond_keep_distinct_labels() {
        assert_eq!(bin_label(0.016), "0.016ms");
        assert_ne!(bin_label(0.016), bin_label(0.024));
        assert_eq!(bin_label(0.5), "0.50ms");
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_count(0), "0");
        assert_eq!(fmt_count(1234567), "1,234,567");
        assert_eq!(fmt_count(100), "100");
        assert_eq!(fmt_ms(0.57), "0.57ms");
        assert_eq!(fmt_ms(117.2), "117ms");
        assert_eq!(fmt_ms(1250.0), "1.25s");
        assert_eq!(fmt_ms(19.49), "19.5ms");
        assert_eq!(fmt_rate(109_848.04), "109,848");
        assert_eq!(fmt_rate(12.34), "12.3");
    }
}
