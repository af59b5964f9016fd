//! `brink compare` on real runs: the same service twice compares as unchanged (exit 0; its p99
//! may honestly be inconclusive on a busy machine, never a regression or an improvement); the
//! service made slower (20 ms of work instead of 10: about +90% end to end) regresses on p50,
//! with the measured change inside its interval, and on p99 (exit 1) unless a stall of the
//! machine made the p99 inconclusive (exit 0, never "unchanged"); a service that fails 2% of
//! its requests regresses on errors; runs that differ in load or duration are
//! refused (exit 2) unless `--allow-mismatch`. The runs are 48 s each (a verdict needs 40
//! steady seconds per side), so the four run side by side at a modest open-model rate.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use testkit::{Reply, Req};

fn brink() -> Command {
    crate::support::held(Command::cargo_bin("brink")).expect("binary built")
}

/// A service that answers after `ms`, failing one request in `fail_every` with 503.
fn service(ms: u64, fail_every: u64) -> testkit::Server {
    testkit::serve(Arc::new(move |r: &Req| {
        if fail_every > 0 && r.seq.is_multiple_of(fail_every) {
            Reply::status(503)
        } else {
            Reply::ok("ok\n", Duration::from_millis(ms))
        }
    }))
    .expect("server starts")
}

/// Runs `url` at 200 req/s for `secs` into `out`.
fn record(url: String, secs: u64, out: PathBuf) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let o = brink()
            .args([
                "run",
                &url,
                "--rate",
                "200",
                "-c",
                "20",
                "--threads",
                "1",
                "-q",
            ])
            .args(["-d", &format!("{secs}s"), "--json", out.to_str().unwrap()])
            .timeout(Duration::from_secs(secs + 30))
            .output()
            .unwrap();
        assert!(
            matches!(o.status.code(), Some(0)),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    })
}

fn compare(args: &[&Path], extra: &[&str]) -> (Option<i32>, Value, String) {
    let mut c = brink();
    c.arg("compare");
    for a in args {
        c.arg(a);
    }
    let out = c.args(["--format", "json"]).args(extra).output().unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code(),
        json,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The committed schema describes real output.
fn assert_schema(c: &Value) {
    let problems = crate::support::schema_problems(crate::support::COMPARE_SCHEMA, c);
    assert!(problems.is_empty(), "{problems:?}");
}

/// A latency row's verdict is what its interval says against the tolerance `t` (fractions):
/// wholly within +-t unchanged, wholly beyond +t regressed, below -t improved, and
/// inconclusive only when the interval reaches across a bound. A compare that called every
/// p99 inconclusive fails here.
fn honest(r: &Value, t: f64) -> &str {
    let (lo, hi) = (
        r["interval"][0].as_f64().unwrap(),
        r["interval"][1].as_f64().unwrap(),
    );
    let said = r["verdict"].as_str().unwrap();
    let read = if lo > t {
        "regressed"
    } else if hi < -t {
        "improved"
    } else if lo >= -t && hi <= t {
        "unchanged"
    } else {
        "inconclusive"
    };
    // Latency changes smaller than the histograms can tell read as unchanged.
    let (before, after) = (r["before"].as_f64().unwrap(), r["after"].as_f64().unwrap());
    let untold = (after - before).abs() < (before.max(after) * 0.002).max(0.002);
    if !(untold && said == "unchanged") {
        assert_eq!(said, read, "the verdict is not its interval's: {r}");
    }
    said
}

fn tol_of(c: &Value, metric: &str) -> f64 {
    c["tolerances"][metric].as_f64().unwrap()
}

fn row<'a>(c: &'a Value, metric: &str) -> &'a Value {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric && r["request"].is_null())
        .unwrap_or_else(|| panic!("no {metric} row in {c}"))
}

#[test]
fn compare_knows_a_regression_from_noise() {
    // Eight busy loops on one CPU (another test) stall these servers for hundreds of ms: a
    // stall in one run widens its p99 interval past any verdict.
    let _cpu = crate::support::cpu_exclusive();
    let (same_a, same_b) = (service(10, 0), service(10, 0));
    let (slow, failing) = (service(20, 0), service(10, 50));
    // Under a millisecond: an answer at once, and one after 0.7 ms of work.
    let fast = service(0, 0);
    let spin = testkit::serve(Arc::new(|_: &Req| {
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_micros(700) {
            std::hint::spin_loop();
        }
        Reply::ok("ok\n", Duration::ZERO)
    }))
    .expect("server starts");
    let dir = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("BRINK_KEEP_COMPARE").map(PathBuf::from);
    let base = keep.unwrap_or_else(|| dir.path().to_path_buf());
    let p = |n: &str| base.join(n);
    let runs = [
        record(same_a.url("/"), 48, p("a.json")),
        record(same_b.url("/"), 48, p("b.json")),
        record(slow.url("/"), 48, p("slow.json")),
        record(failing.url("/"), 48, p("errors.json")),
        record(fast.url("/"), 48, p("fast.json")),
        record(spin.url("/"), 48, p("spin.json")),
    ];
    for r in runs {
        r.join().expect("run finished");
    }
    // Different servers listen on different ports: the targets differ by design here, so
    // every comparison allows that one mismatch and the test checks it is the only one.
    let allow = ["--allow-mismatch"];

    let (code, c, err) = compare(&[&p("a.json"), &p("b.json")], &allow);
    assert_eq!(code, Some(0), "{c}\n{err}");
    assert_schema(&c);
    assert!(
        c["mismatches"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m.as_str().unwrap().contains("targets")),
        "{c}"
    );
    for m in ["ok req/s", "error rate"] {
        assert_eq!(row(&c, m)["verdict"], "unchanged", "{m}: {}", row(&c, m));
    }
    // The tail is where a busy machine shows: with the other tests running beside these four
    // runs, a slow spell can widen the p99 interval past its 10% tolerance, and then the honest
    // verdict is "inconclusive (run longer)". What must never happen is a verdict either way.
    let p99 = row(&c, "p99");
    assert!(
        matches!(honest(p99, tol_of(&c, "p99")), "unchanged" | "inconclusive"),
        "{p99}"
    );
    assert!(c["steady_seconds"][0][1].as_u64().unwrap() >= 40, "{c}");

    let (code, c, err) = compare(&[&p("a.json"), &p("slow.json")], &allow);
    // The median doubles and is stable whatever the machine does: always a regression, and
    // the median decides, so the exit code is 1 whatever a stall made of the p99 (its
    // interval can honestly widen to inconclusive, but never reads "unchanged" or
    // "improved").
    let p50 = row(&c, "p50");
    assert_eq!(p50["verdict"], "regressed", "{p50}");
    assert_eq!(p50["decides"], true, "{p50}");
    let p99 = row(&c, "p99");
    let p99_verdict = honest(p99, tol_of(&c, "p99"));
    assert!(matches!(p99_verdict, "regressed" | "inconclusive"), "{p99}");
    // Twice the work is slower at the tail too: the interval reaches past the tolerance.
    assert!(
        p99["interval"][1].as_f64().unwrap() > tol_of(&c, "p99"),
        "{p99}"
    );
    assert_eq!(code, Some(1), "{c}\n{err}");
    let change = p50["change"].as_f64().unwrap();
    assert!((0.6..1.2).contains(&change), "p50 change {change}: {p50}");
    let (lo, hi) = (
        p50["interval"][0].as_f64().unwrap(),
        p50["interval"][1].as_f64().unwrap(),
    );
    assert!(lo <= change && change <= hi, "{p50}");
    assert!(p50["change_text"].as_str().unwrap().ends_with("% slower"));

    // A service answering in well under a millisecond can regress: 0.7 ms of work on top of
    // an answer at once is several times slower (it used to read "unchanged", under 1 ms).
    let (_, c, err) = compare(&[&p("fast.json"), &p("spin.json")], &allow);
    let p50 = row(&c, "p50");
    assert_eq!(p50["verdict"], "regressed", "{p50}\n{err}");
    let words = p50["change_text"].as_str().unwrap_or_default();
    assert!(words.ends_with("x slower"), "{words}");

    // A team that accepts the slower build says so with --tolerance (the same doubling is
    // within 400%) and --decide (only p50, p99, errors and throughput fail it): no
    // regression, and the exit code says so.
    let (code, c, err) = compare(
        &[&p("a.json"), &p("slow.json")],
        &[
            allow[0],
            "--tolerance",
            "p50=400%",
            "--tolerance",
            "p99=400",
            "--decide",
            "p50,p99,errors,throughput",
        ],
    );
    assert_eq!(row(&c, "p90")["verdict"], "regressed", "{c}");
    assert_eq!(row(&c, "p90")["decides"], false, "{c}");
    assert_eq!((tol_of(&c, "p50"), tol_of(&c, "p99")), (4.0, 4.0), "{c}");
    assert_eq!(
        tol_of(&c, "p90"),
        0.05,
        "the others keep their default: {c}"
    );
    assert_eq!(honest(row(&c, "p50"), 4.0), "unchanged", "{err}");
    assert!(
        matches!(honest(row(&c, "p99"), 4.0), "unchanged" | "inconclusive"),
        "{c}"
    );
    assert_eq!(code, Some(0), "{c}\n{err}");

    let (code, c, err) = compare(&[&p("a.json"), &p("errors.json")], &allow);
    assert_eq!(code, Some(1), "{c}\n{err}");
    assert_eq!(row(&c, "error rate")["verdict"], "regressed", "{c}");

    // The Markdown form is a table ready for a pull-request comment.
    let out = brink()
        .args(["compare", "--format", "md", "--allow-mismatch"])
        .arg(p("a.json"))
        .arg(p("slow.json"))
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("| scenario | metric | before | after | change | 95% interval | verdict |"));
    // The median's regression is in bold with the star of a deciding row; the deciding p99
    // carries its star whatever a busy machine made its verdict (regressed, or inconclusive
    // after a stall); p95 informs and carries none.
    let line = |metric: &str| {
        md.lines()
            .find(|l| l.contains(&format!("| {metric} |")))
            .unwrap_or_default()
    };
    assert!(line("p50").ends_with("| **regressed \\*** |"), "{md}");
    assert!(line("p99").contains("\\*"), "{md}");
    assert!(!line("p95").contains("\\*"), "{md}");

    // Several files per side put their steady seconds one after another.
    let (_, c, err) = compare(
        &[],
        &[
            "--allow-mismatch",
            "--before",
            p("a.json").to_str().unwrap(),
            "--before",
            p("b.json").to_str().unwrap(),
            "--after",
            p("slow.json").to_str().unwrap(),
        ],
    );
    let (b, a) = (
        c["steady_seconds"][0][1].as_u64().unwrap(),
        c["steady_seconds"][0][2].as_u64().unwrap(),
    );
    assert!(b >= 2 * a - 2 && b <= 2 * a + 2, "{b} vs {a}: {err}");

    // Without --allow-mismatch the differing targets are refused, in one line.
    let (code, _, err) = compare(&[&p("a.json"), &p("b.json")], &[]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("not comparable") && err.contains("targets"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn runs_with_different_load_are_not_compared() {
    let srv = service(1, 0);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    for (rate, d, out) in [("50", "2s", &a), ("20", "4s", &b)] {
        brink()
            .args([
                "run",
                &srv.url("/"),
                "--rate",
                rate,
                "-d",
                d,
                "-q",
                "--json",
            ])
            .arg(out)
            .timeout(Duration::from_secs(30))
            .assert()
            .code(0);
    }
    let (code, _, err) = compare(&[&a, &b], &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("rates 50/s vs 20/s"), "{err}");
    assert!(err.contains("durations"), "{err}");
    let (code, c, _) = compare(&[&a, &b], &["--allow-mismatch"]);
    assert_eq!(code, Some(0));
    assert_eq!(row(&c, "p99")["verdict"], "insufficient_data");
    assert_eq!(c["mismatches"].as_array().unwrap().len(), 2, "{c}");
    assert_schema(&c);
    brink()
        .args(["compare", "--tolerance", "p42=5%"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("unknown metric 'p42'"));
    brink()
        .args(["compare"])
        .arg(&a)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("give two results"));
}

/// A wrk-style before and after: 10 s each. A 20x slower service reads regressed (exit 1);
/// two runs of one service give no regression.
#[test]
fn ten_second_runs_get_a_verdict() {
    let _cpu = crate::support::cpu_exclusive();
    let (fast, slow) = (service(1, 0), service(20, 0));
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let closed = |url: String, out: PathBuf| {
        std::thread::spawn(move || {
            brink()
                .args(["run", &url, "-c", "4", "-d", "10s", "--threads", "1", "-q"])
                .arg("--json")
                .arg(&out)
                .timeout(Duration::from_secs(40))
                .assert()
                .code(0);
        })
    };
    let runs = [
        closed(fast.url("/"), p("before.json")),
        closed(fast.url("/"), p("again.json")),
        closed(slow.url("/"), p("after.json")),
    ];
    for r in runs {
        r.join().expect("run finished");
    }
    let allow = ["--allow-mismatch"];
    let (code, c, err) = compare(&[&p("before.json"), &p("after.json")], &allow);
    assert_schema(&c);
    assert_eq!(row(&c, "p99")["verdict"], "regressed", "{c}\n{err}");
    assert_eq!(row(&c, "p50")["verdict"], "regressed", "{c}");
    assert_eq!(row(&c, "ok req/s")["verdict"], "regressed", "{c}");
    assert_eq!(code, Some(1), "{c}\n{err}");
    let notes = c["notes"].to_string();
    assert!(notes.contains("interval widened"), "{notes}");

    let (code, c, err) = compare(&[&p("before.json"), &p("again.json")], &allow);
    assert_eq!(code, Some(0), "{c}\n{err}");
    for m in ["p50", "p99", "ok req/s"] {
        assert_ne!(row(&c, m)["verdict"], "regressed", "{m}: {c}");
        assert_ne!(row(&c, m)["verdict"], "insufficient_data", "{m}: {c}");
    }
}

/// A hand-made run of 45 seconds, each of 1,000 answers: `median_ms` give or take 10%, and
/// a tail (20 to 100 ms) of 0 to 2% that moves from second to second, from a fixed seed: its
/// p99 interval is wide whatever the median does.
fn hand_made(template: &Value, median_ms: f64, seed: u64) -> Value {
    hand_made_with(template, median_ms, seed, Tail::Moving)
}

/// The slow answers of a hand-made second.
#[derive(Clone, Copy)]
enum Tail {
    /// 0 to 2% of a second, 20 to 100 ms: the p99 sits where the body ends.
    Moving,
    /// Always 2% of a second, 3 to 4 times the median: the p99 sits in the middle of the
    /// tail, and moves exactly as the median does.
    Steady,
}

fn hand_made_with(template: &Value, median_ms: f64, seed: u64, tail: Tail) -> Value {
    let mut r = template.clone();
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut rows = Vec::new();
    for t in 0..45u64 {
        let mut h = stats::new_histogram();
        // 0 to 2% of the second's answers are slow: about 1% over the run, so the p99 sits
        // where the body ends and the tail begins, and resamples put it on either side.
        let slow = match tail {
            Tail::Moving => (next() * 21.0) as usize,
            Tail::Steady => 20,
        };
        for i in 0..1000 {
            let us = if i < slow {
                match tail {
                    Tail::Moving => 20_000.0 + next() * 80_000.0,
                    Tail::Steady => median_ms * 1000.0 * (3.0 + next()),
                }
            } else {
                median_ms * 1000.0 * (0.9 + 0.2 * next())
            };
            h.record(us as u64).expect("in bounds");
        }
        rows.push(serde_json::json!({
            "t": t, "requests": 1000, "ok": 1000, "errors": 0,
            "p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0,
            "latency_hdr": stats::encode(&h),
        }));
    }
    let sc = &mut r["scenarios"][0];
    sc["timeseries"] = Value::Array(rows);
    sc["summary"]["duration_s"] = 45.0.into();
    // The template's own run may have found its brink short of CPU (a busy machine): these
    // seconds are made by hand, and no generator limited them.
    sc["generator"] = Value::Null;
    r
}

/// A real result file of a few requests, the shape the hand-made ones take their keys from.
fn template(dir: &tempfile::TempDir) -> Value {
    let srv = service(0, 0);
    let tpl = dir.path().join("tpl.json");
    let o = brink()
        .args(["run", &srv.url("/"), "-n", "20", "-c", "1", "-q"])
        .args(["--no-history", "--json"])
        .arg(&tpl)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&std::fs::read(&tpl).unwrap()).unwrap()
}

/// `v` written to `name` in `dir`: its path.
fn written(dir: &tempfile::TempDir, name: &str, v: &Value) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, serde_json::to_vec(v).unwrap()).unwrap();
    path
}

/// Everything 20% slower is a regression the gate fails, though the p99 cannot tell (its
/// interval is wide): the median and the mean decide. Two draws of the same service are
/// unchanged, exit 0. Hand-made seconds with a known shift: no machine's noise in the
/// verdict.
#[test]
fn compare_fails_a_slowdown_of_everything_on_runs_with_a_known_shift() {
    let dir = tempfile::tempdir().unwrap();
    let template = template(&dir);
    let write = |name: &str, v: &Value| written(&dir, name, v);
    let before = write("before.json", &hand_made(&template, 10.0, 1));
    let same = write("same.json", &hand_made(&template, 10.0, 2));
    let after = write("after.json", &hand_made(&template, 12.0, 3));

    let (code, c, err) = compare(&[&before, &after], &[]);
    assert_schema(&c);
    for m in ["p50", "p90", "mean"] {
        let r = row(&c, m);
        assert_eq!(
            (&r["verdict"], &r["decides"]),
            (&"regressed".into(), &true.into()),
            "{r}"
        );
    }
    let p50 = row(&c, "p50");
    let change = p50["change"].as_f64().unwrap();
    assert!((0.19..=0.21).contains(&change), "{p50}");
    let p99 = row(&c, "p99");
    assert_eq!(p99["verdict"], "inconclusive", "{p99}");
    assert!(p99["interval"][0].as_f64().unwrap() >= -1.0, "{p99}");
    assert_eq!(code, Some(1), "{c}\n{err}");

    let (code, c, err) = compare(&[&before, &same], &[]);
    for m in ["p50", "p90", "mean", "ok req/s", "error rate"] {
        assert_eq!(row(&c, m)["verdict"], "unchanged", "{m}: {}", row(&c, m));
    }
    assert_eq!(code, Some(0), "{c}\n{err}");

    // Only the tail decides: the same slowdown passes the gate, and the table says which rows
    // decided.
    let (code, c, _) = compare(&[&before, &after], &["--decide", "p99,errors"]);
    assert_eq!(code, Some(0), "{c}");
    assert_eq!(row(&c, "p50")["decides"], false);
    let (code, _, err) = compare(&[&before, &after], &["--decide", "p42"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("unknown metric 'p42'"), "{err}");
}

/// The tail's verdicts, on hand-made seconds whose tail is steady (2% of each second at 3 to
/// 4 times the median, so the p99 is the tail's middle): the same service drawn twice is
/// unchanged at p99 and p99.9 too, and 30% slower everywhere is a regression at p99 as at p50,
/// with the p99's interval holding the true +30%. The live comparison above runs on a real
/// machine, whose stalls may honestly widen a p99 interval to inconclusive; here no machine
/// is in the numbers, so the verdicts are exact.
#[test]
fn compare_calls_a_known_tail_shift_regressed_and_known_noise_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let template = template(&dir);
    let write = |name: &str, v: &Value| written(&dir, name, v);
    let before = write(
        "before.json",
        &hand_made_with(&template, 10.0, 7, Tail::Steady),
    );
    let same = write(
        "same.json",
        &hand_made_with(&template, 10.0, 8, Tail::Steady),
    );
    let after = write(
        "after.json",
        &hand_made_with(&template, 13.0, 9, Tail::Steady),
    );

    let (code, c, err) = compare(&[&before, &same], &[]);
    assert_schema(&c);
    for m in [
        "p50",
        "p90",
        "p95",
        "p99",
        "p99.9",
        "mean",
        "ok req/s",
        "error rate",
    ] {
        assert_eq!(row(&c, m)["verdict"], "unchanged", "{m}: {}", row(&c, m));
    }
    assert_eq!(code, Some(0), "{c}\n{err}");

    let (code, c, err) = compare(&[&before, &after], &[]);
    for m in ["p50", "p90", "p99", "mean"] {
        let r = row(&c, m);
        assert_eq!(r["verdict"], "regressed", "{m}: {r}");
        assert_eq!(r["decides"], true, "{m}: {r}");
    }
    let p99 = row(&c, "p99");
    let (lo, hi) = (
        p99["interval"][0].as_f64().unwrap(),
        p99["interval"][1].as_f64().unwrap(),
    );
    assert!(lo <= 0.3 && 0.3 <= hi && lo > tol_of(&c, "p99"), "{p99}");
    assert_eq!(code, Some(1), "{c}\n{err}");
}
