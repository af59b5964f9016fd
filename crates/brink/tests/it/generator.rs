//! CPU on a shared machine. brink watching itself: a generator made to be the bottleneck is
//! blamed, not the service, in `find` and in a plain `run`; a generator kept waiting for a CPU
//! that another process holds says so too, though its own CPU share alone would look idle
//! enough; a light run says nothing. And the service starved of CPU by what shares its core is
//! diagnosed as such.

use crate::find::{find, rules};
use crate::support::{brink_json, brink_json_on_cpu, brink_json_on_cpu_niced};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A plan whose every request carries 64 KiB of freshly generated random text, against a
/// server that only reads and discards it: brink's worker spends its time rendering.
/// `load` is the scenario's `load:` line (empty for none).
pub(crate) fn heavy_plan(dir: &std::path::Path, url: &str, load: &str) -> String {
    let plan = dir.join("heavy.yaml");
    let body = "{{rand_str 4096}}".repeat(16);
    std::fs::write(
        &plan,
        format!("target: {url}\nscenarios:\n  - name: heavy\n{load}    requests: [ {{ method: POST, path: /, body: \"{body}\" }} ]\n"),
    )
    .unwrap();
    plan.to_string_lossy().into_owned()
}

#[test]
fn a_busy_generator_is_blamed_not_the_service() {
    let _cpu = crate::support::cpu_exclusive();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = heavy_plan(dir.path(), &srv.url(""), "");
    let (code, r, text) = find(
        &[
            &plan,
            "--threads",
            "1",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--to",
            "64",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, Some(crate::find::search_exit(&r)), "{text}");
    let f = &r["find"];
    assert_eq!(f["stop"]["reason"], "generator_bound", "{f}\n{text}");
    assert!(
        rules(f).contains(&"generator_bound".to_string()),
        "{}",
        f["findings"]
    );
}

#[test]
fn a_plain_run_says_when_the_generator_was_the_limit() {
    let _cpu = crate::support::cpu_exclusive();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let load = "    load: { connections: 16, duration: 2s }\n";
    let plan = heavy_plan(dir.path(), &srv.url(""), load);
    let ran = brink_json(&["run", &plan, "--threads", "1"]);
    let g = &ran.result["scenarios"][0]["generator"];
    assert_eq!(g["limited"], true, "{g}\n{}", ran.stdout);
    // Busy on its CPU, or ready to be and kept waiting for it on a busy machine.
    let busy = g["busy_percent"].as_f64().unwrap();
    let ready = busy + g["waiting_percent"].as_f64().unwrap_or(0.0);
    assert!(ready >= 90.0, "{g}");
    assert!(
        ran.stdout
            .contains("generator     WARNING brink's workers were"),
        "{}",
        ran.stdout
    );

    // A light run: the generator idles and says nothing.
    let slow = testkit::serve(testkit::handlers::fixed(Duration::from_millis(5))).unwrap();
    let ran = brink_json(&["run", &slow.url("/"), "-c", "2", "-n", "100"]);
    let g = &ran.result["scenarios"][0]["generator"];
    assert_eq!(g["limited"], false, "{g}");
    assert!(g["busy_percent"].as_f64().unwrap() < 50.0, "{g}");
    assert!(g["waiting_percent"].is_number(), "{g}");
    assert!(!ran.stdout.contains("WARNING"));
}

/// The first CPU this process may run on.
fn first_cpu() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: pid 0 is this thread; `set` is a cpu_set_t of `size` bytes.
    let rc = unsafe { libc::sched_getaffinity(0, size, &mut set) };
    assert_eq!(rc, 0, "sched_getaffinity");
    // SAFETY: CPU_ISSET reads the set filled above.
    (0..libc::CPU_SETSIZE as usize)
        .find(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .expect("at least one CPU")
}

/// Busy loops on `cpu`, `n` threads of them; they stop when the returned guard is dropped
/// (or after 60 s).
struct Burners(Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>);

impl Burners {
    fn start(cpu: usize, n: usize) -> Burners {
        let stop = Arc::new(AtomicBool::new(false));
        Burners(
            stop.clone(),
            (0..n).map(|_| burn(cpu, stop.clone())).collect(),
        )
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        for t in self.1.drain(..) {
            let _ = t.join();
        }
    }
}

/// Spins on `cpu` until `stop` is set (or 60 s have passed).
fn burn(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // SAFETY: as in first_cpu; the set holds just `cpu`, applied to this thread only.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            let rc = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            assert_eq!(rc, 0, "sched_setaffinity");
        }
        let t = Instant::now();
        while !stop.load(Ordering::Relaxed) && t.elapsed() < Duration::from_secs(60) {
            std::hint::spin_loop();
        }
    })
}

#[test]
fn a_generator_kept_waiting_for_a_cpu_says_so() {
    let _cpu = crate::support::cpu_exclusive();
    // brink and a busy loop share one CPU. brink's worker has work all the time but gets only
    // part of that CPU: its CPU share alone looks like a generator with room to spare, and the
    // time it spent ready but waiting shows it was not.
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let load = "    load: { connections: 16, duration: 3s }\n";
    let plan = heavy_plan(dir.path(), &srv.url(""), load);
    let cpu = first_cpu();
    let burners = Burners::start(cpu, 1);
    let ran = brink_json_on_cpu(cpu, &["run", &plan, "--threads", "1"]);
    drop(burners);
    let g = &ran.result["scenarios"][0]["generator"];
    assert_eq!(g["limited"], true, "{g}\n{}{}", ran.stdout, ran.stderr);
    let busy = g["busy_percent"].as_f64().unwrap();
    let waiting = g["waiting_percent"].as_f64().unwrap();
    assert!(waiting >= 10.0 && busy < 90.0, "{g}");
    let why = g["why"].as_str().unwrap();
    assert!(
        why.contains("% waiting for a CPU other processes held")
            && why.contains("this machine is short of CPU"),
        "{why}"
    );
    assert!(ran.stdout.contains("waiting for a CPU"), "{}", ran.stdout);
}

#[test]
fn responses_seen_late_for_want_of_a_cpu_are_warned_of() {
    let _cpu = crate::support::cpu_exclusive();
    // A light run (4 connections to a 2 ms service) with brink kept on one CPU. Alone there it
    // idles; with eight busy loops on that CPU each wake-up waits its turn, responses are seen
    // late, and the run warns of it: its workers had time to spare, but waited for a CPU a
    // large share of the time, and the figures are partly brink's.
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(2))).unwrap();
    let cpu = first_cpu();
    let url = srv.url("/");
    let args = ["run", &url, "-c", "4", "-d", "2s", "--threads", "1"];
    let alone = brink_json_on_cpu(cpu, &args);
    let burners = Burners::start(cpu, 8);
    let crowded = brink_json_on_cpu(cpu, &args);
    drop(burners);
    let p50 = |r: &crate::support::Ran| r.result["summary"]["latency_ms"]["p50"].as_f64().unwrap();
    let g = &crowded.result["scenarios"][0]["generator"];
    let (busy, waiting) = (
        g["busy_percent"].as_f64().unwrap(),
        g["waiting_percent"].as_f64().unwrap(),
    );
    assert!(busy < 50.0 && waiting >= 15.0, "{g}");
    assert_eq!(g["limited"], true, "{g}");
    let delay = g["wake_delay_ms"].as_f64().unwrap();
    assert!(delay >= 0.1, "{g}");
    let why = g["why"]
        .as_str()
        .unwrap_or_else(|| panic!("no warning: {g}"));
    assert!(
        why.contains("ms on average each time they woke")
            && why.contains("other processes held the CPUs brink needed"),
        "{why}"
    );
    assert!(
        crowded
            .stdout
            .contains("generator     WARNING brink's workers were"),
        "{}",
        crowded.stdout
    );
    // The warning is about something real: the crowded run measured the same service slower.
    assert!(
        p50(&crowded) > p50(&alone),
        "{} vs {}",
        p50(&crowded),
        p50(&alone)
    );
    let g = &alone.result["scenarios"][0]["generator"];
    assert_eq!(g["limited"], false, "alone on its CPU: {g}");
}

#[test]
fn a_service_starved_of_cpu_is_diagnosed_starved() {
    let _cpu = crate::support::cpu_exclusive();
    // A Python server spending 2 ms of CPU per request, kept on one CPU with two busy loops:
    // it waits for that CPU about two thirds of the time it could run.
    let srv = crate::support::PyServer::start(std::path::Path::new("python3"), 2);
    let cpu = first_cpu();
    let pinned = std::process::Command::new("taskset")
        .args([
            "-a",
            "-p",
            "-c",
            &cpu.to_string(),
            &srv.child.id().to_string(),
        ])
        .output()
        .expect("taskset runs");
    assert!(pinned.status.success(), "{pinned:?}");
    let burners = Burners::start(cpu, 2);
    let pid = format!("pid={}", srv.child.id());
    let (code, r, text) = find(
        &[
            &srv.url,
            "--slo",
            "p99<5ms",
            "--to",
            "16",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--observe",
            &pid,
        ],
        Duration::from_secs(120),
    );
    drop(burners);
    // Whether 5 ms held at the first level on a starved CPU is the machine's to say; the exit
    // code is whatever the search's own result calls for.
    assert_eq!(code, Some(crate::find::search_exit(&r)), "{text}");
    let f = &r["find"];
    let starved = f["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["rule"] == "cpu_starved"))
        .unwrap_or_else(|| panic!("no cpu_starved in {}\n{text}", f["findings"]));
    assert!(
        starved["waiting_percent"].as_f64().unwrap() >= 20.0,
        "{starved}"
    );
    assert!(text.contains("CPU-starved: at "), "{text}");
}

#[test]
fn compare_calls_no_difference_the_service_s_when_brink_was_short_of_cpu() {
    let _cpu = crate::support::cpu_exclusive();
    // The same service before and after (a light load: 4 connections to a 2 ms service); the
    // after run's brink shares its one CPU with four busy loops. Whatever its figures say, the
    // difference is brink's, and compare says so.
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(2))).unwrap();
    let cpu = first_cpu();
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (
        dir.path().join("before.json"),
        dir.path().join("after.json"),
    );
    let url = srv.url("/");
    let args = || {
        [
            "run".to_string(),
            url.clone(),
            "-c".into(),
            "4".into(),
            "-d".into(),
            "4s".into(),
            "--threads".into(),
            "1".into(),
        ]
    };
    let run = |out: &std::path::Path, crowded: bool| {
        let a = args();
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        // Crowded, brink runs at the lowest priority: a mostly idle process that wakes for
        // each answer is otherwise let in ahead of the busy loops often enough to look
        // unhindered, and the test would depend on the kernel's scheduler.
        let ran = if crowded {
            brink_json_on_cpu_niced(cpu, &a)
        } else {
            brink_json_on_cpu(cpu, &a)
        };
        std::fs::write(out, ran.result.to_string()).unwrap();
        ran
    };
    let alone = run(&before, false);
    let g = &alone.result["scenarios"][0]["generator"];
    assert_eq!(g["limited"], false, "alone on its CPU: {g}");
    let burners = Burners::start(cpu, 4);
    let crowded = run(&after, true);
    drop(burners);
    let g = &crowded.result["scenarios"][0]["generator"];
    assert_eq!(g["limited"], true, "{g}\n{}", crowded.stdout);
    assert!(
        crowded.stdout.contains("generator     WARNING"),
        "{}",
        crowded.stdout
    );
    let out = std::process::Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
        .args(["compare", "--format", "json"])
        .arg(&before)
        .arg(&after)
        .output()
        .unwrap();
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{c}");
    assert!(
        c["notes"]
            .to_string()
            .contains("the after run's generator was limited"),
        "{c}"
    );
    for r in c["rows"].as_array().unwrap() {
        assert!(
            r["verdict"] != "regressed" && r["verdict"] != "improved",
            "{r}"
        );
    }
}

/// brink in a cgroup allowed a twentieth of a core (a pod's `--cpu 50m`): the kernel throttles
/// it for real, and the result says so and blames the limit, not the service.
#[test]
fn a_generator_throttled_by_its_cgroup_says_so() {
    let _cpu = crate::support::cpu_shared();
    let Some(limit) = crate::find::CpuLimit::new(5_000) else {
        assert!(
            std::env::var_os("BRINK_REQUIRE_CPU_LIMIT").is_none(),
            "a CPU cgroup is required here but this machine does not let the test create one"
        );
        eprintln!("this machine does not let the test create a CPU cgroup: skipping");
        return;
    };
    let server = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    // brink joins the cgroup before it starts: its first reading is already the limited one.
    let script = format!(
        "echo $$ > '{}/cgroup.procs' && exec \"$0\" \"$@\"",
        limit.0.display()
    );
    let o = std::process::Command::new("sh")
        .args([
            "-c",
            &script,
            crate::support::held(env!("CARGO_BIN_EXE_brink")),
        ])
        .args([
            "run",
            &server.url("/"),
            "-c",
            "8",
            "-d",
            "3s",
            "--no-history",
            "-q",
        ])
        .arg("--json")
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stderr);
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    // Exit 3 says no request succeeded (a throttled brink may send none in time), else 0.
    let ok = r["scenarios"][0]["summary"]["ok"]
        .as_u64()
        .expect("ok count");
    assert_eq!(o.status.code(), Some(if ok == 0 { 3 } else { 0 }), "{text}");
    let g = &r["scenarios"][0]["generator"];
    let throttled = g["throttled_percent"].as_f64().expect("throttled_percent");
    assert!(throttled >= 10.0, "{g}");
    assert_eq!(g["limited"], true, "{g}");
    assert!(
        g["why"]
            .as_str()
            .unwrap()
            .contains("CPU limit of brink's cgroup"),
        "{g}"
    );
    // Without a limit there is nothing to say (where this test itself runs without one).
    if observe::procfs::own_cfs().is_some() {
        return;
    }
    let free = brink_json(&["run", &server.url("/"), "-c", "2", "-d", "1s"]).result;
    assert!(
        free["scenarios"][0]["generator"]["throttled_percent"].is_null(),
        "{free}"
    );
}

/// A search whose brink shares its one CPU with four busy loops: its failing steps were
/// measured while brink waited for a CPU, so each is shown, kept in `find.reruns` and run
/// again before the search believes it; a step that fails so twice is marked disturbed, and
/// `compare` refuses a search that kept one unless told `--allow-disturbed`.
#[test]
fn a_failing_step_brink_s_host_disturbed_is_run_again() {
    let _cpu = crate::support::cpu_exclusive();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(2))).unwrap();
    let cpu = first_cpu();
    let url = srv.url("/");
    let args = [
        "find",
        &url,
        "--slo",
        "p99<3ms",
        "--to",
        "2",
        "--step",
        "3s",
        "--warmup",
        "1s",
        "--cooldown",
        "0s",
        "--threads",
        "1",
        "--no-history",
    ];
    let burners = Burners::start(cpu, 4);
    let ran = brink_json_on_cpu_niced(cpu, &args);
    drop(burners);
    let f = &ran.result["find"];
    let reruns = f["reruns"].as_array().cloned().unwrap_or_default();
    assert!(!reruns.is_empty(), "{}\n{}", f, ran.stdout);
    for r in &reruns {
        assert_eq!(r["pass"], false, "{r}");
        assert!(r["generator_wait"].as_f64().unwrap_or(0.0) >= 0.1, "{r}");
        assert!(
            r["reason"].as_str().unwrap_or("").contains("run again"),
            "{r}"
        );
    }
    // Every rerun's level ran again: the search's own step at that level came after it.
    let steps = f["steps"].as_array().unwrap();
    for r in &reruns {
        assert!(steps.iter().any(|s| s["level"] == r["level"]), "{f}");
    }
    assert!(ran.stdout.contains("Run again: "), "{}", ran.stdout);
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &ran.result);
    assert!(problems.is_empty(), "{problems:?}");
    let kept = steps.iter().any(|s| s["disturbed"] == true);
    assert_eq!(kept, ran.stdout.contains("DISTURBED: "), "{}", ran.stdout);

    // compare: a search that kept a disturbed step is refused unless allowed.
    let dir = tempfile::tempdir().unwrap();
    // The search as measured may have kept one: a clean copy and a marked copy.
    let mut clean = ran.result.clone();
    for s in clean["find"]["steps"].as_array_mut().unwrap() {
        s["disturbed"] = false.into();
    }
    let mut marked = clean.clone();
    marked["find"]["steps"][0]["disturbed"] = true.into();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&a, clean.to_string()).unwrap();
    std::fs::write(&b, marked.to_string()).unwrap();
    let compare = |extra: &[&str]| {
        std::process::Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = compare(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--allow-disturbed") && err.contains("the after search"),
        "{err}"
    );
    let out = compare(&["--allow-disturbed"]);
    assert_ne!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A search by rate and one by connections found levels in different units: refused,
    // whatever --allow-mismatch says (a -67% "unchanged" once came of such a pair).
    let mut by_rate = clean.clone();
    by_rate["find"]["by"] = "rate".into();
    std::fs::write(&b, by_rate.to_string()).unwrap();
    let out = compare(&["--allow-mismatch"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("searched by connections") && err.contains("by rate"),
        "{err}"
    );
}
