//! Token streams (`--llm`): the request an OpenAI-compatible server is sent, and what a user
//! of a language model waits for (the first token, each next one, per token), checked
//! against a server of known cadence; streams that break the rules are errors of their own.

use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::{Reply, Req};

fn run(args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let r = crate::support::brink_json(&all);
    (r.code, r.result, format!("{}{}", r.stdout, r.stderr))
}

/// A model server's cadence: the first token 60 ms after the head, then one every 20 ms,
/// ten in all (TTFT 60 ms, ITL and TPOT 20 ms, 240 ms a stream), keeping the last body it
/// was sent.
fn model_server(chat: bool, usage: bool, h2: bool) -> (testkit::Server, Arc<Mutex<Vec<u8>>>) {
    let body = Arc::new(Mutex::new(Vec::new()));
    let kept = body.clone();
    let handler: testkit::Handler = Arc::new(move |r: &Req| {
        if let Ok(mut b) = kept.lock() {
            *b = r.body.to_vec();
        }
        Reply::Tokens {
            first: Duration::from_millis(60),
            every: Duration::from_millis(20),
            tokens: 10,
            slot: false,
            chat,
            usage,
        }
    });
    let opts = testkit::Options::default();
    let srv = match h2 {
        true => testkit::serve_hyper(opts, handler),
        false => testkit::serve_with(opts, handler),
    };
    (srv.unwrap(), body)
}

fn ms(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

#[test]
fn a_chat_stream_is_timed_by_its_tokens_and_asked_as_written() {
    let _cpu = crate::support::cpu_shared();
    let (srv, body) = model_server(true, true, false);
    let url = srv.url("/v1/chat/completions");
    let prompt = "say \"hi\"\nthen {{words 3}}";
    let (code, r, out) = run(&[
        &url,
        "--llm",
        "--model",
        "tiny-\"m\"",
        "--prompt",
        prompt,
        "--max-tokens",
        "10",
        "-c",
        "4",
        "-d",
        "3s",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let sent: Value = serde_json::from_slice(&body.lock().unwrap()).expect("a JSON body");
    assert_eq!(sent["model"], "tiny-\"m\"", "{sent}");
    assert_eq!(
        (sent["stream"].as_bool(), sent["max_tokens"].as_u64()),
        (Some(true), Some(10))
    );
    assert_eq!(sent["stream_options"]["include_usage"], true);
    let content = sent["messages"][0]["content"].as_str().unwrap();
    assert!(
        content.starts_with("say \"hi\"\nthen ") && content.split(' ').count() == 5,
        "{sent}"
    );
    check_cadence(&r, false, &out);
}

#[test]
fn a_completions_stream_over_h2c_without_usage_counts_its_deltas() {
    let _cpu = crate::support::cpu_shared();
    let (srv, body) = model_server(false, false, true);
    let url = srv.url("/v1/completions");
    let (code, r, out) = run(&[
        &url,
        "--llm",
        "--model",
        "m",
        "--prompt-tokens",
        "50",
        "--http2",
        "-c",
        "4",
        "-d",
        "3s",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let sent: Value = serde_json::from_slice(&body.lock().unwrap()).expect("a JSON body");
    assert_eq!(
        sent["prompt"].as_str().unwrap().split(' ').count(),
        50,
        "{sent}"
    );
    assert_eq!(sent["max_tokens"], 128, "the default");
    check_cadence(&r, true, &out);
    assert!(out.contains("counted from the deltas"), "{out}");
}

/// A run against [`model_server`] reads its cadence.
fn check_cadence(r: &Value, estimated: bool, out: &str) {
    let s = &r["summary"];
    let l = &s["llm"];
    let streams = l["streams"].as_u64().unwrap();
    assert_eq!(
        streams,
        s["ok"].as_u64().unwrap(),
        "every answer a good stream: {l}"
    );
    assert_eq!(l["output_tokens"].as_u64(), Some(streams * 10), "{l}");
    assert_eq!(l["tokens_estimated"], estimated, "{l}");
    let counted = if estimated { streams } else { 0 };
    assert_eq!(l["estimated_streams"].as_u64(), Some(counted), "{l}");
    // Little's law: 4 streams held for 240 ms each.
    assert!(
        (40..=52).contains(&streams),
        "{streams} streams in 3 s over 4: {l}"
    );
    let (ttft, itl, tpot) = (
        ms(&l["ttft_ms"]["p50"]),
        ms(&l["itl_ms"]["p50"]),
        ms(&l["tpot_ms"]["p50"]),
    );
    assert!(
        (58.0..=80.0).contains(&ttft),
        "TTFT {ttft} ms, truth 60: {l}"
    );
    assert!((17.0..=26.0).contains(&itl), "ITL {itl} ms, truth 20: {l}");
    assert!(
        (18.0..=24.0).contains(&tpot),
        "TPOT {tpot} ms, truth 20: {l}"
    );
    let per_stream = ms(&l["output_tokens_per_stream_s"]);
    assert!(
        (34.0..=42.0).contains(&per_stream),
        "{per_stream} tokens/s a stream, truth 41.7: {l}"
    );
    assert!(
        l["goodput_per_s"].is_null() && l["good_streams"].is_null(),
        "no objectives: {l}"
    );
    assert!(
        out.contains("TTFT p50") && out.contains("ITL p50") && out.contains("TPOT p50"),
        "{out}"
    );
}

#[test]
fn goodput_counts_the_streams_that_met_every_objective() {
    let _cpu = crate::support::cpu_light();
    let (srv, _) = model_server(true, true, false);
    let url = srv.url("/v1/chat/completions");
    let base = [url.as_str(), "--llm", "--model", "m", "-c", "2", "-d", "2s"];
    let mut met = base.to_vec();
    met.extend([
        "--slo",
        "ttft.p99<150ms",
        "--slo",
        "tpot.p90<=30ms",
        "--slo",
        "p99<400ms",
    ]);
    let (code, r, out) = run(&met);
    assert_eq!(code, Some(0), "{out}");
    let l = &r["summary"]["llm"];
    assert_eq!(l["good_streams"], l["streams"], "{l}");
    assert!(ms(&l["goodput_per_s"]) > 5.0, "{l}");
    // Rates over the schedule, as ok/s is: what ended in the grace after it is left out.
    let ok_rps = ms(&r["summary"]["ok_rps"]);
    assert!(
        (ms(&l["goodput_per_s"]) - ok_rps).abs() < 1e-9,
        "goodput is ok/s here: {l} vs {ok_rps}"
    );
    assert!(
        (ms(&l["output_tokens_per_s"]) - ok_rps * 10.0).abs() < 1e-6,
        "{l} vs {ok_rps}"
    );
    assert!(out.contains("goodput"), "{out}");
    // No stream's first token comes within 30 ms: none is good, and the objective fails.
    let mut missed = base.to_vec();
    missed.extend(["--slo", "ttft.p99<30ms"]);
    let (code, r, out) = run(&missed);
    assert_ne!(code, Some(0), "{out}");
    let l = &r["summary"]["llm"];
    assert_eq!(
        (l["good_streams"].as_u64(), ms(&l["goodput_per_s"])),
        (Some(0), 0.0),
        "{l}"
    );
    // Every stream ended (the same streams as before, none of them good).
    assert_eq!(l["streams"], r["summary"]["ok"], "{l}");
    assert!(l["streams"].as_u64().unwrap() >= 2, "{l}");
}

/// A server whose every answer is `events` (each `data:` line its own event), chunked.
fn streaming(events: &'static [&'static str]) -> testkit::Server {
    testkit::serve_with(
        testkit::Options::default(),
        Arc::new(move |_: &Req| {
            let mut chunks = vec![];
            for e in events {
                chunks.push(format!("data: {e}\n\n").into_bytes());
            }
            Reply::Chunked(chunks)
        }),
    )
    .unwrap()
}

#[test]
fn streams_that_break_the_rules_are_errors_of_their_own_kind() {
    let _cpu = crate::support::cpu_shared();
    let token = r#"{"choices":[{"delta":{"content":"a"}}]}"#;
    for (events, kind) in [
        (&[r#"{"choices":[{"delta":"#, "[DONE]"][..], "bad_delta"),
        (
            &[
                token,
                r#"{"error":{"message":"overloaded","code":503}}"#,
                "[DONE]",
            ][..],
            "stream_error",
        ),
        (&[token, token][..], "unfinished"),
    ] {
        // Leaked so the handler may hold it for the server's life: a test's few bytes.
        let events: &'static [&'static str] = Box::leak(events.to_vec().into_boxed_slice());
        let srv = streaming(events);
        let url = srv.url("/v1/chat/completions");
        let (_, r, out) = run(&[&url, "--llm", "--model", "m", "-c", "1", "-n", "5"]);
        let s = &r["summary"];
        assert_eq!(s["errors_by_kind"][kind], 5, "{kind}: {out}");
        assert_eq!(
            (s["ok"].as_u64(), s["status"]["200"].as_u64()),
            (Some(0), Some(5)),
            "{kind}: answered, not ok"
        );
        let l = &s["llm"];
        assert_eq!(l["streams"], 0, "{kind}: no good stream: {s}");
        assert!(
            l["itl_ms"].is_null() && l["ttft_ms"].is_null(),
            "{kind}: no times of broken streams: {l}"
        );
        assert!(out.contains(kind), "{kind}: {out}");
    }
}

#[test]
fn an_answer_that_is_no_stream_at_all_says_so() {
    // A body without stream: true gets one JSON answer: no event stream to time.
    let srv = testkit::serve(Arc::new(|_: &Req| {
        Reply::ok(
            r#"{"choices":[{"message":{"content":"hi"}}]}"#,
            Duration::ZERO,
        )
    }))
    .unwrap();
    let url = srv.url("/v1/chat/completions");
    let (_, r, out) = run(&[
        &url,
        "--llm",
        "-b",
        r#"{"model":"m","messages":[]}"#,
        "-n",
        "4",
        "-c",
        "1",
    ]);
    let s = &r["summary"];
    assert_eq!(s["errors_by_kind"]["not_stream"], 4, "{out}");
    assert_eq!(
        (s["ok"].as_u64(), s["status"]["200"].as_u64()),
        (Some(0), Some(4)),
        "{s}"
    );
    assert!(out.contains("not_stream"), "{out}");
}

#[test]
fn llm_flags_say_what_is_missing() {
    let srv = streaming(&["[DONE]"]);
    for (args, says) in [
        (
            vec![srv.url("/"), "--llm".into(), "--model".into(), "m".into()],
            "ends in neither",
        ),
        (
            vec![srv.url("/v1/chat/completions"), "--llm".into()],
            "--model NAME is required",
        ),
        (
            vec![
                srv.url("/v1/completions"),
                "--llm".into(),
                "--model".into(),
                "m".into(),
                "--prompt".into(),
                "{{nope}}".into(),
            ],
            "--prompt",
        ),
        (
            vec![
                srv.url("/v1/completions"),
                "--llm".into(),
                "--model".into(),
                "m".into(),
                "--max-tokens".into(),
                "0".into(),
            ],
            "--max-tokens",
        ),
        (
            vec![srv.url("/v1/completions"), "--model".into(), "m".into()],
            "--llm",
        ),
        (
            vec![
                srv.url("/v1/completions"),
                "--slo".into(),
                "ttft.p99<1s".into(),
            ],
            "times token streams: add --llm",
        ),
        (
            vec![
                srv.url("/v1/completions"),
                "--llm".into(),
                "--model".into(),
                "m".into(),
                "--slo".into(),
                "tfft.p99<1s".into(),
            ],
            "did you mean 'ttft'",
        ),
    ] {
        let mut all: Vec<&str> = vec!["run"];
        all.extend(args.iter().map(String::as_str));
        let r = crate::support::brink_json(&all);
        assert_eq!(r.code, Some(2), "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
    assert_eq!(srv.counters.requests(), 0, "nothing was sent");
}

#[test]
fn a_search_on_ttft_finds_the_slots_of_a_model_server() {
    // 4 slots; a stream holds one for 20 ms to its first token and 4 x 10 ms more. Up to 4
    // streams at once the first token comes at 20 ms; a fifth waits up to 60 ms for a slot.
    let _cpu = crate::support::cpu_light();
    let srv = testkit::serve_with(
        testkit::Options {
            threads: 2,
            slots: Some(4),
            ..testkit::Options::default()
        },
        Arc::new(|_: &Req| Reply::Tokens {
            first: Duration::from_millis(20),
            every: Duration::from_millis(10),
            tokens: 5,
            slot: true,
            chat: true,
            usage: true,
        }),
    )
    .unwrap();
    let url = srv.url("/v1/chat/completions");
    let (code, r, text) = crate::find::find(
        &[
            &url,
            "--llm",
            "--model",
            "m",
            "--slo",
            "ttft.p99<50ms",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--to",
            "16",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        r["find"]["max_sustainable"]["level"].as_f64(),
        Some(4.0),
        "{text}"
    );
    let failed: Vec<&Value> = r["find"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["pass"] == false)
        .collect();
    assert!(!failed.is_empty(), "{text}");
    assert!(
        failed
            .iter()
            .all(|s| s["reason"].as_str().unwrap_or("").contains("ttft.p99")),
        "{failed:?}"
    );
    // Past 4 streams the fifth waits for a slot before its first token, while tokens keep
    // their 10 ms pace: the diagnosis says the streams queue, not that decoding slowed.
    let queued = r["find"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "token_streams")
        .unwrap_or_else(|| panic!("no token_streams finding: {text}"));
    assert_eq!(queued["queued"], true, "{queued}");
    assert!(text.contains("token streams queue at the server"), "{text}");
}

#[test]
fn a_plan_asks_with_prompts_from_json_lines_and_judges_its_streams() {
    let _cpu = crate::support::cpu_shared();
    let (srv, body) = model_server(true, true, false);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("prompts.jsonl"),
        "{\"text\": \"what is \\\"brink\\\"?\\nbe short\"}\n",
    )
    .unwrap();
    let plan = dir.path().join("plan.yaml");
    let text = format!(
        "target: {}\ndata:\n  prompts: {{ jsonl: prompts.jsonl }}\nscenarios:\n  - name: chat\n    load: {{ connections: 2, requests: 6 }}\n    requests:\n      - path: /v1/chat/completions\n        llm: {{ model: m, prompt: '{{{{data.prompts.text}}}}', max_tokens: 10 }}\n    slo: [ \"ttft.p99 < 150ms\" ]\n",
        srv.url("")
    );
    std::fs::write(&plan, text).unwrap();
    let (code, r, out) = run(&[plan.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
    let sent: Value = serde_json::from_slice(&body.lock().unwrap()).expect("a JSON body");
    assert_eq!(
        sent["messages"][0]["content"],
        "what is \"brink\"?\nbe short"
    );
    let l = &r["summary"]["llm"];
    assert_eq!(
        (l["streams"].as_u64(), l["good_streams"].as_u64()),
        (Some(6), Some(6)),
        "{l}"
    );
    assert_eq!(l["output_tokens"], 60, "{l}");
}

#[test]
fn two_local_workers_merge_their_token_streams_exactly() {
    // Worker processes generating a light load (under a tenth of a CPU, measured): beside
    // other light tests only.
    let _cpu = crate::support::cpu_light();
    let (srv, _) = model_server(true, false, false);
    let url = srv.url("/v1/chat/completions");
    let (code, r, out) = run(&[
        &url,
        "--llm",
        "--model",
        "m",
        "-c",
        "4",
        "-d",
        "3s",
        "--workers",
        "2",
        "--slo",
        "ttft.p99<200ms",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
    assert!(problems.is_empty(), "{problems:?}");
    let l = &r["summary"]["llm"];
    let streams = l["streams"].as_u64().unwrap();
    assert_eq!(streams, r["summary"]["ok"].as_u64().unwrap(), "{l}");
    assert_eq!(l["output_tokens"].as_u64(), Some(streams * 10), "{l}");
    assert_eq!(
        (l["tokens_estimated"].as_bool(), l["good_streams"].as_u64()),
        (Some(true), Some(streams)),
        "{l}"
    );
    let (ttft, itl) = (ms(&l["ttft_ms"]["p50"]), ms(&l["itl_ms"]["p50"]));
    assert!(
        (58.0..=85.0).contains(&ttft),
        "TTFT {ttft} ms, truth 60: {l}"
    );
    assert!((17.0..=27.0).contains(&itl), "ITL {itl} ms, truth 20: {l}");
    // Little's law over both workers: 4 streams held for 240 ms each.
    assert!((38..=52).contains(&streams), "{streams} streams: {l}");
}

#[test]
fn the_open_model_times_the_first_token_from_the_intended_start() {
    // 2 slots, each stream holding one for 100 ms (first token at 40 ms, then 3 x 20 ms): 20
    // streams/s at most. At 10/s every stream finds a slot; at 40/s they queue, and the first
    // token, counted from when the stream was due, grows with the queue.
    let _cpu = crate::support::cpu_shared();
    let srv = testkit::serve_with(
        testkit::Options {
            slots: Some(2),
            ..testkit::Options::default()
        },
        Arc::new(|_: &Req| Reply::Tokens {
            first: Duration::from_millis(40),
            every: Duration::from_millis(20),
            tokens: 4,
            slot: true,
            chat: true,
            usage: true,
        }),
    )
    .unwrap();
    let url = srv.url("/v1/chat/completions");
    let ttft = |rate: &str| {
        let (code, r, out) = run(&[
            &url, "--llm", "--model", "m", "--rate", rate, "-d", "2s", "-c", "64",
        ]);
        assert_eq!(code, Some(0), "{out}");
        let l = &r["summary"]["llm"];
        (
            ms(&l["ttft_ms"]["p50"]),
            ms(&l["ttft_ms"]["max"]),
            l["streams"].as_u64().unwrap_or(0),
        )
    };
    let (calm, _, n) = ttft("10");
    assert!(
        (38.0..=70.0).contains(&calm),
        "TTFT {calm} ms at 10/s, truth 40"
    );
    assert!((17..=21).contains(&n), "{n} streams at 10/s over 2 s");
    let (_, worst, _) = ttft("40");
    // 80 streams due in 2 s, 40 served: the last waits about a second for its slot.
    assert!(
        worst > 500.0,
        "TTFT max {worst} ms at twice the capacity: the queue is counted"
    );
}

/// A chunk of a third of a million empty choices (1 MiB, under `--max-event-size`) at four
/// streams: only the first choice is read, the rest passed over unbuilt, so brink's memory
/// stays under 64 MiB (building them all took ~30x the chunk's size, 87-93 MB).
#[test]
fn a_chunk_of_many_empty_choices_costs_its_size_not_thirty_times() {
    let _cpu = crate::support::cpu_exclusive();
    let many = format!(
        "data: {{\"choices\":[{{\"text\":\"a\"}}{}]}}\n\n",
        ",{}".repeat(340_000)
    );
    let chunks = vec![many.into_bytes(), b"data: [DONE]\n\n".to_vec()];
    let srv = testkit::serve_with(
        testkit::Options::default(),
        Arc::new(move |_: &Req| Reply::Chunked(chunks.clone())),
    )
    .unwrap();
    let url = srv.url("/v1/completions");
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("r.json");
    let child = std::process::Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
        .args([
            "run", &url, "--llm", "--model", "m", "-c", "4", "-d", "2s", "--stream",
        ])
        .args(["--no-history", "-q", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("brink runs");
    let (code, peak) = crate::support::watch_peak(child, Duration::from_secs(20));
    assert_eq!(code, Some(0), "brink ended by itself");
    assert!(peak < 64, "peak RSS {peak} MiB");
    let r: Value = serde_json::from_slice(&std::fs::read(&json).expect("result")).expect("JSON");
    let s = &r["summary"];
    assert_eq!(s["errors"], 0, "{s}");
    assert_eq!(s["llm"]["streams"], s["ok"], "{s}");
    assert_eq!(
        s["llm"]["output_tokens"], s["ok"],
        "one token a stream: {s}"
    );
}

/// A server's `usage.completion_tokens` that no stream could carry (more than the bytes it
/// sent, 2^32 and more, 2^64-1) is a `bad_delta`: never summed (it wrapped), never a TPOT of
/// a microsecond, and never a second two workers' coordinator must refuse.
#[test]
fn a_usage_no_stream_could_carry_is_a_bad_delta() {
    let _cpu = crate::support::cpu_exclusive();
    for (usage, workers) in [
        ("18446744073709551615", "1"),
        ("5000000000", "2"),
        ("4294967296", "1"),
        ("500", "1"),
    ] {
        let chunks = vec![
            b"data: {\"choices\":[{\"text\":\"a\"}]}\n\n".to_vec(),
            b"data: {\"choices\":[{\"text\":\"b\"}]}\n\n".to_vec(),
            format!("data: {{\"choices\":[],\"usage\":{{\"completion_tokens\":{usage}}}}}\n\n")
                .into_bytes(),
            b"data: [DONE]\n\n".to_vec(),
        ];
        let srv = testkit::serve_with(
            testkit::Options::default(),
            Arc::new(move |_: &Req| Reply::Chunked(chunks.clone())),
        )
        .unwrap();
        let url = srv.url("/v1/completions");
        let (code, r, out) = run(&[
            &url,
            "--llm",
            "--model",
            "m",
            "-c",
            "2",
            "-n",
            "40",
            "--workers",
            workers,
        ]);
        let s = &r["summary"];
        assert_eq!(code, Some(3), "{usage}: no request succeeded: {out}");
        assert_eq!(s["requests"], 40, "{usage}: {out}");
        assert_eq!(s["errors_by_kind"]["bad_delta"], 40, "{usage}: {s}");
        assert_eq!(s["llm"]["output_tokens"], 0, "{usage}: {s}");
        assert!(s["llm"]["tpot_ms"].is_null(), "{usage}: {s}");
    }
}
