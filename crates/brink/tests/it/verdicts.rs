//! What brink says about its numbers reads right to a user coming from wrk, k6, oha or ghz:
//! objectives in k6's spellings and with bare numbers mean what k6 means, and every objective
//! is echoed normalised, with its unit.

use crate::support::brink_json;
use std::time::Duration;

/// `--slo 'p99<200'` is 200 ms (it was read as 200 s and passed a p99 it should judge), k6's
/// `p(95)` and `http_req_failed` read as brink's objectives, `errors < 1 %` is accepted, and
/// the terminal, the result and `validate` show each objective normalised with its unit.
#[test]
fn bare_numbers_are_milliseconds_and_k6_forms_read_right() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(20))).expect("server");
    let ran = brink_json(&[
        "run",
        &srv.url("/"),
        "-n",
        "40",
        "-c",
        "2",
        "--slo",
        "p99<200",
        "--slo",
        "p(95)<5",
        "--slo",
        "errors < 1 %",
        "--slo",
        "http_req_failed < 0.01",
    ]);
    let slo = &ran.result["scenarios"][0]["slo"];
    let shown: Vec<(&str, bool)> = slo
        .as_array()
        .expect("objectives")
        .iter()
        .map(|o| {
            (
                o["slo"].as_str().unwrap_or(""),
                o["pass"].as_bool().unwrap_or(true),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("p99 < 200ms", true),
            ("p95 < 5ms", false),
            ("errors < 1%", true),
            ("errors < 1%", true)
        ],
        "{slo}"
    );
    assert_eq!(
        ran.code,
        Some(1),
        "a 20 ms service fails p(95)<5: {}",
        ran.stdout
    );
    assert!(ran.stdout.contains("< 200ms"), "{}", ran.stdout);

    let dir = tempfile::tempdir().expect("temp dir");
    let plan = dir.path().join("p.yaml");
    std::fs::write(
        &plan,
        "target: http://127.0.0.1:9/\nscenarios:\n  - name: a\n    load: { requests: 10 }\n    slo: [\"p99 < 200\", \"avg<50\"]\n",
    )
    .expect("write");
    let out = assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args(["validate", plan.to_str().unwrap()])
        .output()
        .expect("brink runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 SLO(s): p99 < 200ms, mean < 50ms"),
        "{text}"
    );
}

/// An open-model run that cannot send at the rate asked says so first: the rate asked (it was
/// reported as the rate achieved), what it achieved, and which limit held it: the pool (a
/// service answering in a constant 20 ms, five connections) or the service (two slots that
/// queue work inside it).
#[test]
fn an_overloaded_open_model_run_headlines_the_shortfall() {
    let constant =
        testkit::serve(testkit::handlers::fixed(Duration::from_millis(20))).expect("server");
    let queueing = testkit::serve_with(
        testkit::Options {
            slots: Some(2),
            ..testkit::Options::default()
        },
        std::sync::Arc::new(|_: &testkit::Req| testkit::Reply::Full {
            status: 200,
            body: b"ok".to_vec(),
            delay: Duration::from_millis(5),
            slot: true,
            close: false,
        }),
    )
    .expect("server");
    for (srv, pool, limit) in [(&constant, "5", "pool"), (&queueing, "50", "service")] {
        let dir = tempfile::tempdir().expect("temp dir");
        let html = dir.path().join("r.html");
        let ran = brink_json(&[
            "run",
            &srv.url("/"),
            "--rate",
            "1000",
            "-c",
            pool,
            "-d",
            "3s",
            "--html",
            html.to_str().unwrap(),
        ]);
        let sc = &ran.result["summary"]["schedule"];
        assert_eq!(sc["intended_rps"].as_f64(), Some(1000.0), "{sc}");
        let f = &sc["shortfall"];
        assert_eq!(f["limit"], limit, "{sc}");
        assert!(f["achieved_rps"].as_f64().unwrap_or(1e9) < 950.0, "{sc}");
        let head = ran.stdout.lines().nth(2).unwrap_or_default();
        assert!(
            head.contains("SHORTFALL achieved") && head.contains("of 1,000 req/s asked"),
            "{}",
            ran.stdout
        );
        let page = std::fs::read_to_string(&html).expect("html written");
        assert!(page.contains("Shortfall: achieved"), "the page says it too");
        let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &ran.result);
        assert!(problems.is_empty(), "{problems:?}");
    }
    // A run that keeps up has no shortfall.
    let ran = brink_json(&[
        "run",
        &constant.url("/"),
        "--rate",
        "50",
        "-c",
        "5",
        "-d",
        "2s",
    ]);
    assert!(ran.result["summary"]["schedule"]["shortfall"].is_null());
}

/// A target nothing can connect to stops the run after its first seconds (not its whole
/// duration) and says why in the system's words, with the address; the exit code is as before.
#[test]
fn an_unreachable_target_fails_fast_and_says_why() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_exclusive();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let t = std::time::Instant::now();
    let ran = brink_json(&["run", &format!("http://127.0.0.1:{port}/"), "-d", "30s"]);
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    assert_eq!(ran.code, Some(3), "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains(&format!("connection refused: 127.0.0.1:{port}")),
        "{}",
        ran.stderr
    );
    assert_eq!(ran.result["scenarios"][0]["unreachable"], true);
    assert!(
        ran.stdout.contains("every connect was refused"),
        "{}",
        ran.stdout
    );
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &ran.result);
    assert!(problems.is_empty(), "{problems:?}");
}

/// An error summary names what failed: gRPC codes (an all-UNIMPLEMENTED run said
/// "100 attempts: " and nothing), and a 200 outside `--ok-status` reads as such.
#[test]
fn failures_are_named_by_status_and_code() {
    use testkit::grpc::{Answer, Call};
    let handler: testkit::grpc::GrpcHandler = std::sync::Arc::new(|_: &Call| Answer::code(12));
    let srv = testkit::grpc::serve_grpc(testkit::Options::default(), handler).expect("server");
    let ran = crate::hostile::say_hello(srv.addr, &[]);
    assert_eq!(ran.code, Some(3));
    assert!(
        ran.stderr.contains("(20 attempts: UNIMPLEMENTED: 20)"),
        "{}",
        ran.stderr
    );
    let http = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let ran = brink_json(&["run", &http.url("/"), "-n", "10", "--ok-status", "201"]);
    assert!(
        ran.stdout
            .contains("errors        10  (200 outside --ok-status: 10)"),
        "{}",
        ran.stdout
    );
}

/// `validate` reports every error of a plan at once, each at its file:line:column, and an
/// indentation mistake reads as one, not as the YAML parser's text.
#[test]
fn validate_reports_every_error_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = dir.path().join("multi.yaml");
    std::fs::write(
        &plan,
        "target: http://127.0.0.1:9/\nscenarios:\n  - name: a\n    load: { rate: 10x }\n    slo: [\"p99 < fast\", \"errors < 1%\"]\n  - name: b\n    pause: soon\n    requests:\n      - { path: \"/x/{{nope}}\" }\n",
    )
    .expect("write");
    let validate = |p: &std::path::Path| {
        let out =
            assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
                .args(["validate", p.to_str().unwrap()])
                .output()
                .expect("brink runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = validate(&plan);
    assert_eq!(code, Some(2), "{err}");
    for at in [
        "multi.yaml:4:19: rate",
        "multi.yaml:5:11: invalid SLO",
        "multi.yaml:7:12: pause",
        "multi.yaml:9:21: unknown template name 'nope'",
    ] {
        assert!(err.contains(at), "{at}:\n{err}");
    }
    assert!(
        err.trim_end().ends_with("4 errors in ") || err.contains("4 errors in "),
        "{err}"
    );
    let indented = dir.path().join("indent.yaml");
    std::fs::write(
        &indented,
        "target: http://127.0.0.1:9/\nscenarios:\n  - name: a\n    load: { connections: 2 }\n      requests:\n        - path: /\n",
    )
    .expect("write");
    let (code, err) = validate(&indented);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("indent.yaml:5:7: `requests` (column 7) does not line up with `load` (line 4, column 5)"),
        "{err}"
    );
    assert!(!err.contains("block mapping"), "{err}");
}

/// Output for scripts: `--json -` and `--csv -` write the result to standard output (the
/// summary for people goes to stderr), two results cannot share it; away from a terminal a
/// progress line is printed every 10 s so a CI log shows life, and `-q` silences it.
#[test]
fn results_to_stdout_and_progress_in_a_log() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(1))).expect("server");
    let run = |args: &[&str]| {
        assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
            .arg("run")
            .arg(srv.url("/"))
            .args(args)
            .timeout(Duration::from_secs(60))
            .output()
            .expect("brink runs")
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let out = assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .current_dir(dir.path())
        .args(["run", &srv.url("/"), "-n", "30", "--json", "-"])
        .output()
        .expect("brink runs");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is the result");
    assert_eq!(r["summary"]["requests"], 30);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("requests"),
        "the summary went to stderr"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("list").count(),
        0,
        "no file named -"
    );
    let out = run(&["-n", "30", "--csv", "-", "-q"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("scenario,t,requests,"));
    let out = run(&["-n", "5", "--csv", "-", "--json", "-"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("only one result can go to standard output")
    );

    let out = run(&["-c", "2", "-d", "11s"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("  [")).collect();
    assert_eq!(lines.len(), 1, "one line at 10 s: {err}");
    assert!(lines[0].starts_with("  [10s/11s]  "), "{err}");
    let out = run(&["-c", "2", "-d", "11s", "-q"]);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// CSV headers are machine names with units (`srv_cpu_percent`, `srv_rss_bytes`), never the
/// display names with spaces and slashes a script would have to quote.
#[test]
fn csv_headers_are_machine_names() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(1))).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let csv = dir.path().join("r.csv");
    let pid = format!("pid={}", std::process::id());
    let ran = brink_json(&[
        "run",
        &srv.url("/"),
        "-c",
        "2",
        "-d",
        "3s",
        "--observe",
        &pid,
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let text = std::fs::read_to_string(&csv).expect("csv written");
    let header = text.lines().next().unwrap_or_default();
    for column in ["srv_cpu_percent", "srv_rss_bytes", "srv_threads"] {
        assert!(header.split(',').any(|c| c == column), "{column}: {header}");
    }
    assert!(
        header
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b','),
        "{header}"
    );
}

/// The load reads as what it is: over HTTP/2 and gRPC `-c` is requests in flight carried as
/// streams over fewer connections, and a flow's rate is iterations, each of several requests.
#[test]
fn the_load_says_calls_over_connections_and_iterations() {
    let h2 = testkit::serve_hyper(
        testkit::Options::default(),
        testkit::handlers::fixed(Duration::ZERO),
    )
    .expect("server");
    let ran = brink_json(&[
        "run",
        &h2.url("/"),
        "--http2",
        "-c",
        "8",
        "--connections",
        "2",
        "-n",
        "40",
    ]);
    assert!(
        ran.stdout
            .contains("closed model: 8 calls in flight over 2 connections"),
        "{}",
        ran.stdout
    );
    assert_eq!(ran.result["load"]["over_connections"], 2);

    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = dir.path().join("flow.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nscenarios:\n  - name: shop\n    load: {{ rate: 10/s, duration: 2s }}\n    flow:\n      - {{ name: list, path: /a }}\n      - {{ name: buy, path: /b }}\n",
            srv.url("")
        ),
    )
    .expect("write");
    let ran = brink_json(&["run", plan.to_str().unwrap()]);
    assert!(
        ran.stdout
            .contains("open model: 10 iterations/s (20 requests/s)"),
        "{}",
        ran.stdout
    );
}

/// Flags from the tools users come from get an answer: ghz's and curl's `-d DATA` a hint to
/// `-b`/`--data`, oha's `-q RATE` a hint to `--rate`, vegeta's `--rate 100/1s` and oha's `-z`
/// work; `find --help` lists no load flag it would refuse.
#[test]
fn flags_from_other_tools_get_an_answer() {
    let brink = |args: &[&str]| {
        assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
            .args(args)
            .timeout(Duration::from_secs(30))
            .output()
            .expect("brink runs")
    };
    let err = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let out = brink(&["run", "http://127.0.0.1:9/", "-d", r#"{"name":"x"}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err(&out).contains("send a body with -b/--body"),
        "{}",
        err(&out)
    );
    let out = brink(&["run", "http://127.0.0.1:9/", "-q", "100"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(err(&out).contains("use --rate 100"), "{}", err(&out));
    assert_eq!(err(&out).lines().count(), 1);

    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let ran = brink_json(&["run", &srv.url("/"), "--rate", "100/1s", "-z", "1s"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.result["load"]["rate"], 100.0);
    assert_eq!(ran.result["load"]["duration_s"], 1.0);

    let help = String::from_utf8_lossy(&brink(&["find", "--help"]).stdout).into_owned();
    for refused in ["--duration", "--rate <", "--stages", "--requests"] {
        assert!(!help.contains(refused), "{refused} in find --help");
    }
    assert!(help.contains("--by") && help.contains("--slo"), "{help}");
    let help = String::from_utf8_lossy(&brink(&["run", "--help"]).stdout).into_owned();
    assert!(
        help.contains("--duration") && help.contains("--rate <"),
        "{help}"
    );
}

/// A single-URL run is named for what it loads (`GET /items`, not `run`); `brink history`
/// lists its load, tags and note, and `brink show` heads the summary with the run's id, tags
/// and note.
#[test]
fn runs_are_named_for_what_they_load_and_show_their_labels() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let h = dir.path().join("h.db");
    let brink = |args: &[&str]| {
        let out =
            assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
                .env("BRINK_HISTORY", &h)
                .args(args)
                .timeout(Duration::from_secs(30))
                .output()
                .expect("brink runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let ran = brink(&[
        "run",
        &srv.url("/items"),
        "-c",
        "3",
        "-n",
        "30",
        "--tag",
        "env=ci",
        "--note",
        "pool 20 -> 40",
    ]);
    assert!(ran.contains("GET "), "{ran}");
    let list = brink(&["history"]);
    let row = list.lines().nth(1).unwrap_or_default();
    assert!(row.contains("GET /items"), "{list}");
    assert!(row.contains("3 connections"), "{list}");
    assert!(row.ends_with("env=ci  \"pool 20 -> 40\""), "{list}");
    let show = brink(&["show", "latest"]);
    let first = show.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("run 1 · run GET /items · started ")
            && first.ends_with("env=ci  \"pool 20 -> 40\""),
        "{show}"
    );
}

/// The terminal SLA table keeps its columns aligned whatever the cells hold (a throughput
/// floor's `>= 5 req/s` ran into the result column).
#[test]
fn the_sla_table_aligns() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let ran = brink_json(&[
        "run",
        &srv.url("/"),
        "-c",
        "2",
        "-d",
        "2s",
        "--slo",
        "p99 < 200ms",
        "--slo",
        "rps >= 5",
        "--slo",
        "errors < 1% over 1s",
    ]);
    let lines: Vec<&str> = ran
        .stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("SLO "))
        .take_while(|l| !l.trim_start().starts_with("SLA:"))
        .collect();
    assert_eq!(lines.len(), 4, "{}", ran.stdout);
    let at = |l: &str, word: &str| {
        l.chars()
            .collect::<String>()
            .find(word)
            .map(|b| l[..b].chars().count())
    };
    let status = at(lines[0], "status").expect("a status column");
    for l in &lines[1..] {
        assert_eq!(
            at(l, "PASS").or_else(|| at(l, "FAIL")),
            Some(status),
            "{}",
            ran.stdout
        );
    }
    let result = at(lines[0], "result").expect("a result column") + "result".len();
    for l in &lines[1..] {
        let end = l.chars().take(result).collect::<String>();
        assert!(
            end.ends_with(|c: char| !c.is_whitespace()),
            "results end under their header:\n{}",
            ran.stdout
        );
    }
}

/// The release build users install carries no debug info (the binary was 101 MB with it);
/// symbols live in the `profiling` profile for the benchmarks that read them.
#[test]
fn the_release_build_is_lean() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let toml = std::fs::read_to_string(root).expect("workspace manifest");
    let section = |name: &str| {
        toml.split(&format!("[profile.{name}]"))
            .nth(1)
            .map(|s| s.split("\n[").next().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    let release = section("release");
    assert!(
        release.contains("debug = false") && release.contains("strip = \"debuginfo\""),
        "{release}"
    );
    let profiling = section("profiling");
    assert!(
        profiling.contains("inherits = \"release\"") && profiling.contains("debug = 1"),
        "{profiling}"
    );
}
