//! Flags end to end, each with an oracle that would catch the flag doing nothing: `find
//! --health` is the URL probed after a failing step (not the target), the hook flags run their
//! commands when and as long as they say, `--connect-timeout` ends connects to a listener
//! that never accepts, and gRPC's `-I` and `--protoset` find the method through the CLI.

use serde_json::Value;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use testkit::Options;

/// One slot of 20 ms: p99 < 30 ms holds at 1 connection and fails from 2 on.
fn one_slot() -> testkit::Server {
    testkit::serve_with(
        Options {
            slots: Some(1),
            ..Options::default()
        },
        testkit::handlers::slotted(Duration::from_millis(20)),
    )
    .unwrap()
}

const SEARCH: [&str; 12] = [
    "--slo",
    "p99<30ms",
    "--from",
    "1",
    "--to",
    "4",
    "--step",
    "2s",
    "--warmup",
    "1s",
    "--cooldown",
    "0s",
];

/// A listener on loopback that takes connections and never says a word; how many it took.
fn silent() -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/health", l.local_addr().unwrap());
    let taken = Arc::new(AtomicUsize::new(0));
    let t = taken.clone();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        let end = Instant::now() + Duration::from_secs(90);
        while Instant::now() < end {
            match l.accept() {
                Ok((s, _)) => {
                    t.fetch_add(1, Ordering::Relaxed);
                    held.push(s);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    (url, taken)
}

/// A health endpoint that answers 200 and counts the probes.
fn counting() -> (testkit::Server, Arc<AtomicUsize>) {
    let n = Arc::new(AtomicUsize::new(0));
    let c = n.clone();
    let srv = testkit::serve(Arc::new(move |_: &testkit::Req| {
        c.fetch_add(1, Ordering::Relaxed);
        testkit::Reply::ok("up\n", Duration::ZERO)
    }))
    .unwrap();
    (srv, n)
}

#[test]
fn find_probes_the_health_url_it_is_given() {
    let _cpu = crate::support::cpu_light();
    let target = one_slot();
    // A health URL that never answers: after the first failing step the service counts as
    // stuck, though the target itself answers all along.
    let (dead, taken) = silent();
    let to = target.url("/");
    let mut args: Vec<&str> = vec![&to];
    args.extend(SEARCH);
    args.extend(["--health", &dead, "--recovery", "2s"]);
    let (code, r, text) = crate::find::find(&args, Duration::from_secs(60));
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(
        r["find"]["stop"],
        serde_json::json!({"reason": "stuck", "level": 2.0}),
        "{text}"
    );
    assert!(taken.load(Ordering::Relaxed) >= 1, "the probe went there");
    // A health URL that answers: probed once after each failing step, never otherwise.
    let (health, probes) = counting();
    let url = health.url("/health");
    let mut args: Vec<&str> = vec![&to];
    args.extend(SEARCH);
    args.extend(["--health", &url]);
    let (code, r, text) = crate::find::find(&args, Duration::from_secs(60));
    assert_eq!(code, Some(0), "{text}");
    let failed = r["find"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["pass"] == false)
        .count();
    assert!(failed >= 1, "{text}");
    assert_eq!(probes.load(Ordering::Relaxed), failed, "{text}");
}

/// The search's hooks of one kind, by the step they ran in.
fn hooks<'a>(r: &'a Value, kind: &str) -> Vec<&'a Value> {
    r["find"]["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["hook"] == kind)
        .collect()
}

/// Seconds from the start of the first failing step's each-step hook to its on-fail hook.
fn each_to_fail(r: &Value) -> f64 {
    let fail = hooks(r, "on_fail")[0];
    let each = hooks(r, "each_step")
        .into_iter()
        .find(|h| h["step"] == fail["step"])
        .unwrap_or_else(|| panic!("no each-step hook in {}", fail["step"]));
    fail["started_s"].as_f64().unwrap() - each["started_s"].as_f64().unwrap()
}

#[test]
fn hook_flags_run_when_and_as_long_as_they_say() {
    let _cpu = crate::support::cpu_light();
    let target = one_slot();
    let dir = tempfile::tempdir().unwrap();
    let search = |at: &str, after: bool| {
        let mut args: Vec<String> = vec![target.url("/")];
        args.extend(SEARCH.iter().map(|s| s.to_string()));
        args.extend(
            [
                "--hook-each-step",
                "echo each",
                "--hook-on-fail",
                "echo failed",
                "--hook-at",
                at,
                "--hook-timeout",
                "1s",
                "--hooks-dir",
            ]
            .map(String::from),
        );
        args.push(dir.path().join(at).to_str().unwrap().to_string());
        if after {
            args.extend(["--hook-after".into(), "sleep 30".into()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::find::find(&args, Duration::from_secs(90))
    };
    let (code, early, text) = search("0.1", true);
    // The after hook overran --hook-timeout: stopped, and the command says so (exit 0 still:
    // the hook is not required).
    assert_eq!(code, Some(0), "{text}");
    let steps = early["find"]["steps"].as_array().unwrap();
    let failed = steps.iter().filter(|s| s["pass"] == false).count();
    assert_eq!(hooks(&early, "each_step").len(), steps.len(), "{text}");
    assert_eq!(hooks(&early, "on_fail").len(), failed, "{text}");
    let after = hooks(&early, "after");
    assert_eq!(after.len(), 1, "{text}");
    assert_eq!(after[0]["timed_out"], true, "{}", after[0]);
    let ran = after[0]["ended_s"].as_f64().unwrap() - after[0]["started_s"].as_f64().unwrap();
    assert!((0.9..5.0).contains(&ran), "--hook-timeout 1s, ran {ran} s");
    // --hook-at moves the each-step hook within its 2 s step: at 0.1 it starts 1.6 s earlier
    // before the step's end (where the on-fail hook starts) than at 0.9.
    let (code, late, text) = search("0.9", false);
    assert_eq!(code, Some(0), "{text}");
    let (d_early, d_late) = (each_to_fail(&early), each_to_fail(&late));
    assert!(d_late < 1.0, "at 0.9: {d_late} s before the step's end");
    assert!(
        (1.2..2.2).contains(&(d_early - d_late)),
        "at 0.1 {d_early} s, at 0.9 {d_late} s"
    );
}

/// A listener whose accept queue is full: the kernel drops new SYNs, so a connect to it
/// waits until the client gives up. Its queue holds one connection (backlog 0); two more
/// fill it whatever the kernel counts.
fn never_accepts() -> (String, Vec<TcpStream>) {
    // SAFETY: plain socket calls on a descriptor this function owns; errors are checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    assert!(fd >= 0);
    let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: addr is a valid sockaddr_in of `len` bytes.
    let bound = unsafe { libc::bind(fd, &addr as *const _ as *const libc::sockaddr, len) };
    assert_eq!(bound, 0);
    assert_eq!(unsafe { libc::listen(fd, 0) }, 0);
    let mut got: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut got_len = len;
    // SAFETY: got is a valid sockaddr_in buffer of got_len bytes.
    unsafe { libc::getsockname(fd, &mut got as *mut _ as *mut libc::sockaddr, &mut got_len) };
    let port = u16::from_be(got.sin_port);
    // Leaked on purpose: the listener lives as long as the test process.
    std::mem::forget(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    let fillers = (0..3)
        .filter_map(|_| {
            TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(300))
                .ok()
        })
        .collect();
    (format!("http://127.0.0.1:{port}/"), fillers)
}

#[test]
fn connect_timeout_ends_connects_to_a_listener_that_never_accepts() {
    let _cpu = crate::support::cpu_shared();
    let (url, _fillers) = never_accepts();
    // The queue is full: a connect of ours waits, as brink's will.
    let probe = TcpStream::connect_timeout(
        &url.trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .unwrap(),
        Duration::from_millis(500),
    );
    assert!(probe.is_err(), "the listener still took a connection");
    let started = Instant::now();
    let ran = crate::support::brink_json(&[
        "run",
        &url,
        "-n",
        "3",
        "-c",
        "1",
        "--connect-timeout",
        "300ms",
        "--no-history",
        "-q",
    ]);
    let took = started.elapsed();
    assert_eq!(ran.code, Some(3), "{}", ran.stderr);
    let s = &ran.result["summary"];
    assert_eq!(s["requests"], 3, "{s}");
    assert_eq!(s["errors_by_kind"]["connect_timeout"], 3, "{s}");
    // Three connects of 300 ms and the pauses after them: well within the 5 s one of the
    // default would take alone.
    assert!(took < Duration::from_secs(4), "took {took:?}");
}

/// A Greeter whose request message lives in another folder, found with `-I`; the same
/// service from a compiled descriptor set (`--protoset`).
#[test]
fn grpc_import_paths_and_protosets_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let (api, common) = (dir.path().join("api"), dir.path().join("common"));
    std::fs::create_dir_all(common.join("names")).unwrap();
    std::fs::create_dir_all(&api).unwrap();
    std::fs::write(
        common.join("names/names.proto"),
        "syntax = \"proto3\";\npackage names;\nmessage Name { string name = 1; int32 times = 2; }\nmessage Reply { string message = 1; }\n",
    )
    .unwrap();
    let greet = api.join("greet.proto");
    std::fs::write(
        &greet,
        "syntax = \"proto3\";\npackage helloworld;\nimport \"names/names.proto\";\nservice Greeter { rpc SayHello (names.Name) returns (names.Reply); }\n",
    )
    .unwrap();
    let (srv, seen) = crate::grpc::greeter_server(false, Duration::ZERO);
    let url = format!("grpc://{}", srv.addr);
    let call = [
        "--call",
        "helloworld.Greeter/SayHello",
        "--data",
        r#"{"name":"x","times":3}"#,
    ];
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            url.as_str(),
            "-n",
            "10",
            "-c",
            "1",
            "--no-history",
            "-q",
        ];
        args.extend(call);
        args.extend(extra);
        crate::support::brink_json(&args)
    };
    let greet = greet.to_str().unwrap();
    // Without -I the import is not found: said in one line, nothing sent.
    let ran = run(&["--proto", greet]);
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(ran.stderr.contains("names/names.proto"), "{}", ran.stderr);
    assert_eq!(seen.lock().unwrap().len(), 0);
    let ran = run(&["--proto", greet, "-I", common.to_str().unwrap()]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.result["summary"]["requests"], 10);
    // The same service as a descriptor set, the form protoc --descriptor_set_out writes.
    let set = dir.path().join("greeter.pb");
    let pool = grpc::compile(&[greet.into()], std::slice::from_ref(&common)).unwrap();
    std::fs::write(&set, pool.encode_to_vec()).unwrap();
    let ran = run(&["--protoset", set.to_str().unwrap()]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 20);
    for (path, message, _) in seen.iter() {
        assert_eq!(path, "/helloworld.Greeter/SayHello");
        assert_eq!(message, &[0x0a, 0x01, b'x', 0x10, 0x03]);
    }
    drop(seen);
    // A protoset that is not one: one line, exit 2.
    let junk = dir.path().join("junk.pb");
    std::fs::write(&junk, b"\xff\xff not a descriptor set").unwrap();
    let ran = run(&["--protoset", junk.to_str().unwrap()]);
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert_eq!(ran.stderr.trim().lines().count(), 1, "{}", ran.stderr);
}
