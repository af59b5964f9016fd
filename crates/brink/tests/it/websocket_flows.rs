//! WebSocket answers matched by id and WebSocket flows in plans, against Python's
//! `websockets` server pushing a message of its own before every answer: the answer to each
//! message is the one with its id, extracted values feed the next step, and checks read the
//! answer.

use crate::support::brink_json;
use crate::websocket::python_server;

/// Before each answer the server pushes a message nobody asked for; a `join` gets a token,
/// a `say` is ok when it carries one; anything else is echoed.
const CHATTY: &str = r#"
async def echo(ws):
    n = 0
    async for m in ws:
        n += 1
        await ws.send(json.dumps({"id": "push-%d" % n, "note": "not yours"}))
        try:
            d = json.loads(m)
        except ValueError:
            d = {}
        if d.get("op") == "join":
            await ws.send(json.dumps({"id": d["id"], "token": "T-%s" % d["id"]}))
        elif d.get("op") == "say":
            await ws.send(json.dumps({"id": d["id"], "ok": str(d.get("token")).startswith("T-")}))
        else:
            await ws.send(m)
"#;

#[test]
fn answers_are_matched_by_id_past_what_the_server_pushes_between() {
    let _cpu = crate::support::cpu_shared();
    let dir = tempfile::tempdir().expect("tmp");
    let Some((_server, port)) = python_server(CHATTY, &dir.path().join("log"), &[]) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{port}/");
    for id in ["$.id", r#""id":(\d+)"#] {
        let ran = brink_json(&[
            "run",
            &url,
            "--message",
            r#"{"id":{{seq}},"op":"echo"}"#,
            "--match-id",
            id,
            "-c",
            "3",
            "-n",
            "300",
            "-q",
        ]);
        let s = &ran.result["summary"];
        assert_eq!(s["ok"], 300, "{id}: {s}\n{}", ran.stderr);
        let ws = &s["websocket"];
        // Every answer came after a pushed message: two received per message sent.
        assert_eq!(ws["messages_sent"], 300, "{id}: {ws}");
        assert_eq!(ws["messages_received"], 600, "{id}: {ws}");
    }
    // A message without the id its answer is known by is refused, not sent.
    let ran = brink_json(&[
        "run",
        &url,
        "--message",
        "no id",
        "--match-id",
        "$.id",
        "-n",
        "5",
        "-q",
    ]);
    let s = &ran.result["summary"];
    assert_eq!(s["errors_by_kind"]["invalid_request"], 5, "{s}");
    assert_eq!(s["websocket"]["messages_sent"], 0, "{s}");
    let refused = &ran.result["scenarios"][0]["refused"];
    assert!(
        refused[0]["part"]
            .as_str()
            .is_some_and(|p| p.contains("no id")),
        "{refused}"
    );
}

#[test]
fn a_plan_flow_extracts_from_one_answer_into_the_next_message_and_checks_it() {
    let _cpu = crate::support::cpu_shared();
    let dir = tempfile::tempdir().expect("tmp");
    let Some((_server, port)) = python_server(CHATTY, &dir.path().join("log"), &[]) else {
        return;
    };
    let plan = dir.path().join("chat.yaml");
    let text = format!(
        r#"target: ws://127.0.0.1:{port}/chat
scenarios:
  - name: chat
    load: {{ connections: 2, requests: 200 }}
    flow:
      - name: join
        message: '{{"op":"join","id":"j{{{{seq}}}}"}}'
        match_id: $.id
        extract: {{ token: $.token }}
      - name: say
        message: '{{"op":"say","id":"s{{{{seq}}}}","token":"{{{{token}}}}"}}'
        match_id: $.id
        check: [ {{ name: accepted, json: $.ok, equals: true }} ]
"#
    );
    std::fs::write(&plan, text).expect("plan");
    let ran = brink_json(&["run", plan.to_str().expect("utf-8"), "-q"]);
    let r = &ran.result;
    assert_eq!(r["summary"]["ok"], 200, "{}\n{}", r["summary"], ran.stderr);
    let reqs = r["scenarios"][0]["requests"].as_array().expect("requests");
    let (joins, says) = (&reqs[0]["summary"], &reqs[1]["summary"]);
    assert_eq!(reqs[1]["name"], "say");
    // Each iteration is a join and a say; -n may cut the last iterations short.
    let (joins, says) = (joins["requests"].as_u64(), says["requests"].as_u64());
    let (joins, says) = (joins.expect("joins"), says.expect("says"));
    assert!(
        joins + says == 200 && joins >= says && joins - says <= 2,
        "{joins} joins, {says} says"
    );
    let check = &r["scenarios"][0]["checks"][0];
    assert_eq!(
        (check["name"].as_str(), check["passed"].as_u64()),
        (Some("accepted"), Some(says)),
        "{check}"
    );
}

/// What a scraper reads of a WebSocket run adds up to the result: upgrades, messages each
/// way, closes by code.
#[test]
fn live_metrics_count_what_websocket_connections_carried() {
    let _cpu = crate::support::cpu_shared();
    let dir = tempfile::tempdir().expect("tmp");
    let Some((_server, port)) = python_server(CHATTY, &dir.path().join("log"), &[]) else {
        return;
    };
    let json = dir.path().join("r.json");
    let listen = crate::prom::free_port();
    let mut child = std::process::Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
        .args(["run", &format!("ws://127.0.0.1:{port}/"), "--message", "hi"])
        .args(["-c", "2", "-n", "300", "-q", "--no-history"])
        .args(["--metrics-listen", &format!("127.0.0.1:{listen}")])
        .args(["--metrics-linger", "2s", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("brink starts");
    let start = std::time::Instant::now();
    let mut last = None;
    while child.try_wait().expect("status").is_none() {
        assert!(start.elapsed().as_secs() < 30, "brink did not end");
        if let Some((200, body)) = crate::live_metrics::scrape(listen, None) {
            last = Some(body);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let body = last.expect("a scrape");
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("result")).expect("json");
    let ws = &r["summary"]["websocket"];
    let value = |name: &str, with: &[&str]| crate::live_metrics::value(&body, name, with);
    assert_eq!(value("brink_websocket_upgrades_total", &[]), 2.0);
    let sent = value("brink_websocket_messages_total", &["direction=\"sent\""]);
    let received = value(
        "brink_websocket_messages_total",
        &["direction=\"received\""],
    );
    // Without --match-id each answer is the next message (here the server's push), so how
    // many of the echoes were read before the close depends on timing: the scrape and the
    // result agree on it.
    assert_eq!(sent, 300.0, "{ws}");
    assert_eq!(Some(received), ws["messages_received"].as_f64(), "{ws}");
    assert!(received >= 300.0, "{ws}");
    assert_eq!(
        value("brink_websocket_closes_total", &["code=\"1000\""]),
        2.0
    );
    assert_eq!(value("brink_websocket_unexpected_closes_total", &[]), 0.0);
}
