//! Where `brink run` and `brink find` generate their load: this process's engine, or workers
//! (`--workers N`: N `brink worker` processes started here on loopback with a fresh token;
//! `--worker HOST:PORT`: workers started elsewhere with `--token-file`). Every worker is given
//! a [`WorkerOrder`]: the load's flags and a search's, typed, with the seed (never what only
//! the coordinator does: outputs, history, observation, hooks), so each compiles the same run
//! and takes its part of it.

use crate::cli::{FleetArgs, LoadArgs, RunArgs, SearchArgs};
use crate::exit::Fail;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Most local worker processes.
const MOST_LOCAL: usize = 64;

/// The executor a command runs on, with the worker processes it started (stopped on drop).
pub struct Generators {
    pub exec: Box<dyn runner::Executor>,
    _local: LocalWorkers,
}

/// Worker processes started by this one: killed and reaped when dropped.
#[derive(Default)]
struct LocalWorkers(Vec<Child>);

impl Drop for LocalWorkers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The generators `a` asks for, each given `order` (with the run's seed, so every worker
/// renders the same values).
pub fn generators(a: &FleetArgs, order: &WorkerOrder) -> Result<Generators, Fail> {
    let local = || Generators {
        exec: Box::new(runner::Local),
        _local: LocalWorkers::default(),
    };
    let (addrs, token, children) = match (a.workers, a.worker.is_empty()) {
        (None, true) => return Ok(local()),
        (Some(_), false) => {
            return Err(Fail::input(
                "--workers starts workers here and --worker names workers elsewhere: give one",
            ))
        }
        (Some(n), true) => {
            if !(1..=MOST_LOCAL).contains(&n) {
                return Err(Fail::input(format!(
                    "--workers {n}: from 1 to {MOST_LOCAL}"
                )));
            }
            share_warning(n);
            let token = fleet::trust::new_token().map_err(Fail::input)?;
            let children = start_local(n, &token)?;
            (children.1, token, children.0)
        }
        (None, false) => {
            let file = a.token_file.as_ref().ok_or_else(|| {
                Fail::input("--worker needs --token-file: the token the workers were started with")
            })?;
            let token = fleet::trust::read_token(file).map_err(Fail::input)?;
            (a.worker.clone(), token, LocalWorkers::default())
        }
    };
    let wait = match &a.worker_wait {
        Some(w) => {
            plan::parse_duration(w).map_err(|e| Fail::input(format!("--worker-wait: {e}")))?
        }
        None => Duration::ZERO,
    };
    let version = env!("CARGO_PKG_VERSION").to_string();
    let mut fleet = fleet::coordinator::Fleet::new(addrs, token, order.to_text(), version, wait)
        .map_err(Fail::input)?;
    if let Some(ca) = &a.worker_cacert {
        let identity = a.worker_cert.clone().zip(a.worker_key.clone());
        fleet = fleet.with_tls(fleet::tls::connector(ca.clone(), identity).map_err(Fail::input)?);
    }
    Ok(Generators {
        exec: Box::new(fleet),
        _local: children,
    })
}

/// Local workers share this machine's cores: more than one adds no capacity to generate load
/// (one process's engine already uses every core), and each may wait for a CPU. Said once.
fn share_warning(n: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    if n > 1 {
        crate::console::warn(&format!(
            "--workers {n} starts {n} worker processes on this machine's {cores} cores: they share them, so more of them add no capacity to generate load; --worker HOST:PORT adds other machines"
        ));
    }
}

/// What a local worker does between fork and exec: asks the kernel for SIGTERM when its
/// parent ends, and ends at once if the parent (`parent`) is already gone.
fn end_with_parent(parent: u32) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
    move || {
        // SAFETY: prctl and getppid are async-signal-safe system calls that touch no memory
        // of the parent's; nothing here allocates or takes a lock.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
        }
        Ok(())
    }
}

/// Starts `n` workers on loopback; their addresses in order.
fn start_local(n: usize, token: &str) -> Result<(LocalWorkers, Vec<String>), Fail> {
    let exe = std::env::current_exe()
        .map_err(|e| Fail::input(format!("cannot find brink's own binary: {e}")))?;
    let mut started = LocalWorkers::default();
    let mut addrs = Vec::new();
    for i in 0..n {
        let mut cmd = Command::new(&exe);
        cmd.args(["worker", "--listen", "127.0.0.1:0", "--read-anywhere"])
            .env(fleet::trust::TOKEN_ENV, token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of their own: Ctrl-C at the terminal reaches this coordinator, which
            // tells every worker to stop and keeps all they measured, not the workers at once.
            .process_group(0);
        // ...and they go with it when it is killed outright (SIGKILL gives it no say).
        // SAFETY: the closure only makes async-signal-safe system calls (see end_with_parent).
        unsafe {
            cmd.pre_exec(end_with_parent(std::process::id()));
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| Fail::input(format!("cannot start worker {i}: {e}")))?;
        let first = first_line(&mut child);
        let addr = first
            .as_deref()
            .and_then(|l| l.strip_prefix("brink worker listening on "))
            .map(str::to_string);
        match addr {
            Some(a) => addrs.push(a),
            None => {
                let _ = child.kill();
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                let _ = child.wait();
                return Err(Fail::input(format!(
                    "worker {i} did not start: {}",
                    err.lines().next().unwrap_or("no word from it")
                )));
            }
        }
        started.0.push(child);
    }
    Ok((started, addrs))
}

/// The first line `child` prints, within 10 s.
fn first_line(child: &mut Child) -> Option<String> {
    let out = child.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        let mut line = String::new();
        let _ = r.read_line(&mut line);
        let _ = tx.send(line);
        // Keep reading so the worker never blocks on a full pipe.
        let _ = std::io::copy(&mut r, &mut std::io::sink());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .ok()
        .map(|l| l.trim().to_string())
}

/// What a worker runs: the load's settings and, for a search, the search's, with the run's
/// seed. It is built from the typed flags (their groups say what travels: a new load flag
/// travels by construction) and serialized whole, so a worker compiles exactly the run the
/// coordinator compiled. The fleet protocol's version covers its shape.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct WorkerOrder {
    pub load: LoadArgs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchArgs>,
}

impl WorkerOrder {
    /// The order for `load` (and `search`), with `seed` when the user gave none.
    pub fn new(load: &LoadArgs, search: Option<&SearchArgs>, seed: u64) -> WorkerOrder {
        let mut load = load.clone();
        load.seed = load.seed.or(Some(seed));
        WorkerOrder {
            load,
            search: search.cloned(),
        }
    }

    /// As sent: one JSON text.
    pub fn to_text(&self) -> String {
        order_text(self)
    }

    pub fn parse(text: &str) -> Result<WorkerOrder, String> {
        serde_json::from_str(text).map_err(|e| format!("not a run order this worker reads: {e}"))
    }

    /// The run's flags as a command given here would have them: the load's, nothing kept
    /// or watched.
    pub fn run_args(&self) -> RunArgs {
        RunArgs {
            load: self.load.clone(),
            ..RunArgs::default()
        }
    }
}

/// An order as JSON, without the flags left at their defaults (null, false, empty lists): what
/// a reader of a rendered Secret or a worker's log sees is what the user set.
pub fn order_text<T: serde::Serialize>(order: &T) -> String {
    fn given(v: serde_json::Value) -> Option<serde_json::Value> {
        use serde_json::Value;
        match v {
            Value::Null | Value::Bool(false) => None,
            Value::Array(a) if a.is_empty() => None,
            Value::Object(m) => Some(Value::Object(
                m.into_iter()
                    .filter_map(|(k, v)| Some((k, given(v)?)))
                    .collect(),
            )),
            v => Some(v),
        }
    }
    let value = serde_json::to_value(order).unwrap_or_default();
    given(value).map_or_else(String::new, |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use results::find::By;

    fn find(line: &str) -> crate::cli::FindArgs {
        let argv = std::iter::once("brink").chain(line.split(' '));
        match Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Command::Find(a)) => *a,
            other => panic!("not a find: {other:?}"),
        }
    }

    #[test]
    fn a_worker_is_ordered_the_load_and_the_search_and_nothing_it_does_not_act_on() {
        let a = find(
            "find plan.yaml --workers 3 --json=out.json --html r.html -q -c 10 --tag a=b \
             --by rate --to 500 --at-peak true --observe pid=1 --timeout 2s",
        );
        let order = WorkerOrder::new(&a.run.load, Some(&a.search), 42);
        let text = order.to_text();
        let back = WorkerOrder::parse(&text).unwrap();
        assert_eq!(back, order);
        assert_eq!(back.load.url, "plan.yaml");
        assert_eq!(back.load.connections.as_deref(), Some("10"));
        assert_eq!(back.load.timeout.as_deref(), Some("2s"));
        assert_eq!(back.load.seed, Some(42));
        let search = back.search.as_ref().unwrap();
        assert_eq!((search.by, search.to.as_deref()), (By::Rate, Some("500")));
        // What only this machine acts on is not in the order at all.
        for word in [
            "out.json", "r.html", "a=b", "pid=1", "at_peak", "workers", "quiet",
        ] {
            assert!(!text.contains(word), "{word} travels: {text}");
        }
        // A seed the user gave is kept.
        let a = find("find http://x/ --seed 7");
        assert_eq!(WorkerOrder::new(&a.run.load, None, 1).load.seed, Some(7));
    }

    #[test]
    fn every_load_flag_travels() {
        // Every flag of the load group, given, comes back from the order unchanged: the order
        // is the group itself, so there is no list of flags to forget.
        let given = [
            "find http://x/ -c 3 --connections 2 -m POST -H a:b --body x --call p.S/M",
            "--proto a.proto --protoset a.pb -I inc --max-data-size 1MiB --stream-messages 2",
            "--stream-interval 1ms --ok-codes OK --timeout 1s --connect-timeout 1s",
            "--no-keepalive --http2 --http3 -k --cacert ca.pem --complete-when /x",
            "--complete-progress $.n --complete-every 1s --complete-within 1m --trace=0.5",
            "--trace-link http://t/{trace_id} --cert c.pem --key k.pem --authority a:1",
            "--ok-status 200 --threads 2 --latency --grace 1s --capture-limit 1MiB",
            "--max-message-size 1MiB --slo p99<1s --target http://y/ --only a,b --seed 3",
        ];
        let a = find(&given.join(" "));
        let order = WorkerOrder::new(&a.run.load, Some(&a.search), 9);
        assert_eq!(
            WorkerOrder::parse(&order.to_text()).unwrap().load,
            a.run.load
        );
        assert_ne!(a.run.load, LoadArgs::default());
    }
}
