//! `brink worker`: this machine generates its part of a distributed run for a coordinator.
//! It compiles the order the coordinator sends (the load's and a search's typed flags, the
//! seed) exactly as `brink run` / `brink find` would, with the same files read from this
//! machine's disk, so both sides hold the same spec; the `fleet` crate does the rest.

use crate::cli::{LoadArgs, WorkerArgs};
use crate::distribute::WorkerOrder;
use crate::exit::Fail;
use crate::resolve::run_config;
use engine::RunSpec;
use fleet::trust::TOKEN_ENV;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub fn worker_cmd(a: &WorkerArgs) -> Result<i32, Fail> {
    serve_worker(a, None)
}

/// Serves as a worker until interrupted or, with `idle`, until it has served a coordinator and
/// then heard from none for that long.
pub fn serve_worker(a: &WorkerArgs, idle: Option<Duration>) -> Result<i32, Fail> {
    let token = match &a.token_file {
        Some(f) => fleet::trust::read_token(f).map_err(Fail::input)?,
        None => std::env::var(TOKEN_ENV).ok().filter(|t| !t.trim().is_empty()).ok_or_else(|| {
            Fail::input(format!(
                "a worker needs a token: --token-file FILE (or ${TOKEN_ENV}); the coordinator presents the same"
            ))
        })?,
    };
    let addr: SocketAddr = a.listen.parse().map_err(|_| {
        Fail::input(format!(
            "--listen {}: expected HOST:PORT, e.g. 0.0.0.0:7700",
            a.listen
        ))
    })?;
    let worker = fleet::worker::Worker {
        token: token.trim().to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        compile: {
            let anywhere = a.read_anywhere;
            Box::new(move |args, job, level| compile(args, job, level, anywhere))
        },
        keep_dir: a.keep_dir.clone(),
        tls: tls(a)?,
    };
    if !a.read_anywhere {
        let here = std::path::Path::new(".");
        model::input::confine(here).map_err(Fail::input)?;
    }
    let (bound, running, activity) = fleet::worker::listen(addr, worker)
        .map_err(|e| Fail::input(format!("cannot listen on {addr}: {e}")))?;
    // The first line says where: a coordinator that started this process reads it.
    let mut out = std::io::stdout();
    let _ = writeln!(out, "brink worker listening on {bound}");
    let _ = out.flush();
    let interrupt = crate::signals::install_signals()?;
    while !interrupt.load(Ordering::Relaxed) && !idle_long_enough(&activity, idle) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(running);
    Ok(0)
}

/// The acceptor for `--tls-cert`/`--tls-key` (and `--client-ca`), if given.
fn tls(a: &WorkerArgs) -> Result<Option<tokio_rustls::TlsAcceptor>, Fail> {
    let (Some(cert), Some(key)) = (&a.tls_cert, &a.tls_key) else {
        return Ok(None);
    };
    let files = fleet::tls::ServerFiles {
        cert: cert.clone(),
        key: key.clone(),
        client_ca: a.client_ca.clone(),
    };
    fleet::tls::acceptor(&files).map(Some).map_err(Fail::input)
}

/// Whether a worker that exits when idle (`idle`: in a pod) has served and been idle that long.
fn idle_long_enough(a: &fleet::worker::Activity, idle: Option<Duration>) -> bool {
    let Some(idle) = idle else { return false };
    let last = a.last_end_ns.load(Ordering::Acquire);
    a.open.load(Ordering::Acquire) == 0
        && last > 0
        && fleet::now_ns().saturating_sub(last) > idle.as_nanos() as u64
}

/// A worker reads only files below its working directory, as relative paths: whoever holds
/// its token chooses the command, and a plan or file elsewhere on this machine (whose lines an
/// error would quote) is not theirs to read. `named` are a plan's files, relative to it.
fn below_here(a: &LoadArgs, named: &[String]) -> Result<(), String> {
    let below = |p: &std::path::Path| {
        p.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
    };
    let plan = crate::resolve::is_plan(&a.url).then(|| std::path::PathBuf::from(&a.url));
    let plan_dir = plan
        .as_ref()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()));
    let files = plan.iter().cloned().chain(
        [&a.body_file, &a.data_file, &a.cacert, &a.cert, &a.key]
            .into_iter()
            .flatten()
            .cloned(),
    );
    let files = files
        .chain(
            a.proto
                .iter()
                .chain(&a.protosets)
                .chain(&a.import_paths)
                .cloned(),
        )
        .chain(
            named
                .iter()
                .map(|n| plan_dir.clone().unwrap_or_default().join(n)),
        );
    for f in files {
        if !below(&f) {
            return Err(format!(
                "a worker reads only files below its working directory, given as relative paths: {}",
                f.display()
            ));
        }
    }
    Ok(())
}

/// The whole run's spec for `job` of the coordinator's `order` (a search step: at `level`).
fn compile(order: &str, job: usize, level: Option<f64>, anywhere: bool) -> Result<RunSpec, String> {
    let order = WorkerOrder::parse(order)?;
    let run = order.run_args();
    let check = |named: &[String]| match anywhere {
        true => Ok(()),
        false => below_here(&run.load, named),
    };
    check(&[])?;
    let cfg = run_config(&run).map_err(|f| f.message)?;
    check(&cfg.plan_files)?;
    let Some(search) = order.search else {
        let count = cfg.jobs.len();
        return cfg
            .jobs
            .into_iter()
            .nth(job)
            .map(|j| j.spec)
            .ok_or_else(|| format!("the command has {count} scenarios, not {}", job + 1));
    };
    let j = super::find::base_job(&search, cfg.jobs).map_err(|f| f.message)?;
    let s = super::find::steps(&search, &run.load, &j).map_err(|f| f.message)?;
    Ok(match level {
        Some(level) => runner::step_spec(&j.spec, s.by, level, s.step, s.pool),
        // The check before the search: the job itself.
        None => j.spec,
    })
}
