//! Where `brink run` and `brink find` generate their load: this process's engine, or workers
//! (`--workers N`: N `brink worker` processes started here on loopback with a fresh token;
//! `--worker HOST:PORT`: workers started elsewhere with `--token-file`). Every worker is given
//! the command exactly as the user typed it, minus what only the coordinator does (outputs,
//! history, observation, hooks), plus the seed, so each compiles the same run and takes its
//! part of it.

use crate::cli::RunArgs;
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

/// The generators `a` asks for; `seed` is the run's, so every worker renders the same values.
pub fn generators(a: &RunArgs, seed: u64) -> Result<Generators, Fail> {
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
    let args = worker_args(command().into_iter(), seed);
    let wait = match &a.worker_wait {
        Some(w) => {
            plan::parse_duration(w).map_err(|e| Fail::input(format!("--worker-wait: {e}")))?
        }
        None => Duration::ZERO,
    };
    let version = env!("CARGO_PKG_VERSION").to_string();
    let mut fleet =
        fleet::coordinator::Fleet::new(addrs, token, args, version, wait).map_err(Fail::input)?;
    if let Some(ca) = &a.worker_cacert {
        let identity = a.worker_cert.clone().zip(a.worker_key.clone());
        fleet = fleet.with_tls(fleet::tls::connector(ca.clone(), identity).map_err(Fail::input)?);
    }
    Ok(Generators {
        exec: Box::new(fleet),
        _local: children,
    })
}

/// Starts `n` workers on loopback; their addresses in order.
fn start_local(n: usize, token: &str) -> Result<(LocalWorkers, Vec<String>), Fail> {
    let exe = std::env::current_exe()
        .map_err(|e| Fail::input(format!("cannot find brink's own binary: {e}")))?;
    let mut started = LocalWorkers::default();
    let mut addrs = Vec::new();
    for i in 0..n {
        let mut child = Command::new(&exe)
            .args(["worker", "--listen", "127.0.0.1:0", "--read-anywhere"])
            .env(fleet::trust::TOKEN_ENV, token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of their own: Ctrl-C at the terminal reaches this coordinator, which
            // tells every worker to stop and keeps all they measured, not the workers at once.
            .process_group(0)
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

/// Flags about the workers themselves and about what a run keeps (outputs, history), with
/// whether each takes a value: no worker acts on them, nor does a coordinator in a pod.
pub const WORKERS_AND_KEEPING: [(&str, bool); 20] = [
    ("--workers", true),
    ("--worker", true),
    ("--token-file", true),
    ("--worker-wait", true),
    ("--worker-cacert", true),
    ("--worker-cert", true),
    ("--worker-key", true),
    ("--json", true),
    ("--html", true),
    ("--csv", true),
    ("--history", true),
    ("--no-history", false),
    ("--tag", true),
    ("--note", true),
    ("--hooks-dir", true),
    ("--metrics-listen", true),
    ("--metrics-token-file", true),
    ("--metrics-linger", true),
    ("--out", true),
    ("--out-header", true),
];

/// The rest of what only the coordinator acts on: observing the server, hooks, printing.
const COORDINATOR_ONLY: [(&str, bool); 10] = [
    ("--observe", true),
    ("--metric", true),
    ("--at-peak", true),
    ("--hook-each-step", true),
    ("--hook-on-fail", true),
    ("--hook-after", true),
    ("--hook-required", false),
    ("--dry-run", false),
    ("--quiet", false),
    ("-q", false),
];

/// The command this run was given as (without the program's name): the process's arguments,
/// unless a pod of a rendered Job built the command itself.
static COMMAND: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Says which command this process runs when it is not its own arguments.
pub fn set_command(args: Vec<String>) {
    let _ = COMMAND.set(args);
}

fn command() -> Vec<String> {
    COMMAND
        .get()
        .cloned()
        .unwrap_or_else(|| std::env::args().skip(1).collect())
}

/// `args` without the flags in `drop` (each with whether it takes a value, given as
/// `--flag value` or `--flag=value`).
pub fn strip(args: impl Iterator<Item = String>, drop: &[(&str, bool)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for a in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        if let Some((_, takes)) = drop.iter().find(|(f, _)| *f == name) {
            skip_value = *takes && !a.contains('=');
            continue;
        }
        out.push(a);
    }
    out
}

/// The command a worker compiles: the user's, without [`WORKERS_AND_KEEPING`] and
/// [`COORDINATOR_ONLY`] flags, with the
/// run's seed (when the user gave none, the one drawn here).
pub fn worker_args(args: impl Iterator<Item = String>, seed: u64) -> Vec<String> {
    let mut out = strip(
        strip(args, &WORKERS_AND_KEEPING).into_iter(),
        &COORDINATOR_ONLY,
    );
    let seeded = out
        .iter()
        .any(|a| a == "--seed" || a.starts_with("--seed="));
    if !seeded {
        out.extend(["--seed".to_string(), seed.to_string()]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_get_the_command_without_what_only_the_coordinator_does() {
        let args = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        let got = worker_args(
            args("run plan.yaml --workers 3 --json=out.json --html r.html -q -c 10 --tag a=b")
                .into_iter(),
            42,
        );
        assert_eq!(got, args("run plan.yaml -c 10 --seed 42"));
        let got = worker_args(
            args("find http://x/ --seed 7 --worker h:1 --by rate").into_iter(),
            1,
        );
        assert_eq!(got, args("find http://x/ --seed 7 --by rate"));
    }
}
