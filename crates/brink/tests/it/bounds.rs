//! No flag value can make brink panic, allocate without bound or hang: random numbers and
//! strings go to every numeric flag of `run` and `find`, and brink must end with a defined exit
//! code (0; 1 when a search against a closed port ends stuck; 2; 3 when the value makes every
//! request fail) and never print a panic. Values
//! that are valid but describe a long run are let run briefly, then interrupted: they must
//! stop at once with exit 130, and not have panicked either.

use proptest::prelude::*;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Text a user might type where a number belongs: edge values, numbers of every size and
/// sign, with and without units, and junk.
fn value() -> impl Strategy<Value = String> {
    let edge = prop::sample::select(vec![
        "0",
        "-1",
        "1",
        "1e-300",
        "1e300",
        "nan",
        "inf",
        "-inf",
        "0.0000001",
        "1e9",
        "18446744073709551615",
        "18446744073709551616",
        "4294967296",
        "1e-300/s",
        "1e300/s",
        "0/s",
        "1ns",
        "999999999h",
        "1h:1e-300/s",
        "1s:4294967295",
        "1s:0/s",
        "",
        " ",
        "%",
        "1.5",
        "-0",
        "0x10",
        "1_000",
    ])
    .prop_map(str::to_string);
    let unit = prop::sample::select(vec!["", "s", "ms", "ns", "h", "m", "/s", "/m", "%", "x"]);
    let number = (any::<u64>(), unit.clone()).prop_map(|(n, u)| format!("{n}{u}"));
    let float = (any::<f64>(), unit).prop_map(|(f, u)| format!("{f}{u}"));
    let small = (0u32..5000, prop::sample::select(vec!["", "s", "ms", "/s"]))
        .prop_map(|(n, u)| format!("{n}{u}"));
    let stages = prop::collection::vec((0u64..100_000, 0u64..u64::MAX, any::<bool>()), 1..4)
        .prop_map(|v| {
            v.iter()
                .map(|(d, t, r)| format!("{d}ms:{t}{}", if *r { "/s" } else { "" }))
                .collect::<Vec<_>>()
                .join(",")
        });
    let junk = "[0-9a-z.:/%,e+-]{0,14}";
    prop_oneof![edge, number, float, small, stages, junk]
}

/// Runs brink with `args` for at most `limit`; checks the exit code is a defined one and that
/// nothing panicked. A run still going at `limit` (it accepted a long run) is interrupted and
/// must end with 130 within 3 s: a hang fails.
fn runs_cleanly(args: &[String], limit: Duration) -> Result<(), TestCaseError> {
    let mut child = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| TestCaseError::fail(format!("spawn: {e}")))?;
    let start = Instant::now();
    let mut interrupted: Option<Instant> = None;
    // `None`: still running 3 s after the interrupt (killed then).
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(5)),
            // A long run it accepted: interrupted as a user would, it must stop within the
            // second the README promises (3 s here, on a busy machine) with exit 130.
            Ok(None) if interrupted.is_none() => {
                let _ = Command::new("kill")
                    .args(["-INT", &child.id().to_string()])
                    .status();
                interrupted = Some(Instant::now());
            }
            Ok(None) if interrupted.is_some_and(|t| t.elapsed() < Duration::from_secs(3)) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    prop_assert!(!err.contains("panicked"), "{args:?}: {err}");
    prop_assert!(
        status.is_some(),
        "{args:?}: still running 3 s after SIGINT: {err}"
    );
    let code = status.and_then(|s| s.code());
    // An interrupt that came before brink set its handler (a start slowed by a busy
    // machine: seen once in CI at 600 ms) ends the process by the signal itself, with
    // nothing measured yet: it ended, which is what this checks.
    let by_the_signal =
        interrupted.is_some() && status.and_then(|s| s.signal()) == Some(libc::SIGINT);
    prop_assert!(
        matches!(code, Some(0) | Some(1) | Some(2))
            || (code == Some(130) && interrupted.is_some())
            || by_the_signal
            || (code == Some(3) && err.contains("no request succeeded")),
        "{args:?}: exit {code:?} ({status:?}): {err}"
    );
    if code == Some(2) {
        prop_assert_eq!(err.lines().count(), 1, "{:?}: {}", args, err);
    }
    Ok(())
}

fn server() -> &'static testkit::Server {
    static SRV: std::sync::OnceLock<testkit::Server> = std::sync::OnceLock::new();
    SRV.get_or_init(|| {
        testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server starts")
    })
}

const RUN_FLAGS: [&str; 11] = [
    "-c",
    "-d",
    "-n",
    "--rate",
    "--stages",
    "--timeout",
    "--connect-timeout",
    "--threads",
    "--grace",
    "--seed",
    "--capture-limit",
];

const FIND_FLAGS: [&str; 8] = [
    "--from",
    "--to",
    "--step",
    "--warmup",
    "--cooldown",
    "--precision",
    "--recovery",
    "-c",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_run_flag_value_is_an_answer_or_a_clear_error(
        flag in prop::sample::select(RUN_FLAGS.to_vec()),
        v in value(),
    ) {
        let url = server().url("/");
        // Keep valid runs short and light: one request, or 200 ms at 50/s when the flag is -n.
        let bound: &[&str] = if flag == "-n" {
            &["-d", "200ms", "--rate", "50"]
        } else {
            &["-n", "1"]
        };
        let mut args: Vec<String> = vec!["run".into(), url, "-q".into()];
        args.extend(bound.iter().map(|s| s.to_string()));
        args.push(format!("{flag}={v}"));
        runs_cleanly(&args, Duration::from_millis(1500))?;
    }

    #[test]
    fn any_find_flag_value_is_a_search_or_a_clear_error(
        flag in prop::sample::select(FIND_FLAGS.to_vec()),
        v in value(),
    ) {
        // A closed port: the checks run as for any target, and a search that starts costs
        // no CPU (connects are refused and backed off) while it is let run.
        let url = "http://127.0.0.1:1/".to_string();
        let mut args: Vec<String> = vec!["find".into(), url, "-q".into()];
        if flag == "-c" {
            args.extend(["--by".into(), "rate".into()]);
        }
        args.push(format!("{flag}={v}"));
        // A valid search takes seconds per step: its checks are done well within this.
        runs_cleanly(&args, Duration::from_millis(600))?;
    }
}

/// The values that used to panic or allocate tens of gigabytes are one-line errors now, and
/// more connections than the open-file limit allows is refused naming both numbers.
#[test]
fn the_values_that_used_to_crash_are_clear_errors() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_exclusive();
    let url = server().url("/");
    let cases: [(&[&str], &str); 6] = [
        (
            &["--rate", "1e-300", "-n", "2"],
            "--rate: rate '1e-300' is out of range",
        ),
        (
            &["-c", "18446744073709551615"],
            "-c/--concurrency must be at most 1000000",
        ),
        (
            &["-c", "10000000"],
            "-c/--concurrency must be at most 1000000",
        ),
        (
            &["--stages", "1s:4294967295"],
            "4294967295 connections is more than 1000000",
        ),
        (
            &["--threads", "100000"],
            "--threads must be between 1 and 1024",
        ),
        (&["-d", "100000000h"], "out of range (at most 365 days)"),
    ];
    for (args, want) in cases {
        let out = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
            .args(["run", url.as_str(), "-q"])
            .args(args)
            .output()
            .expect("brink runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // The open-file limit, lowered for the child: both numbers are named.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 256 && exec {} run {url} -c 500 -n 1 -q",
            crate::support::held(assert_cmd::cargo::cargo_bin("brink")).display()
        ))
        .output()
        .expect("sh runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("500 connections need 580 open files") && err.contains("may open 256"),
        "{err}"
    );
    // A valid hour-long run: interrupted after a second, it stops at once with 130.
    let args: Vec<String> = ["run", url.as_str(), "-d", "1h", "-c", "1", "-q"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    let started = Instant::now();
    runs_cleanly(&args, Duration::from_secs(1)).expect("interrupted cleanly");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
