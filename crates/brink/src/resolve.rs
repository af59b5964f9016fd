//! Raw command line (and plan file) -> a checked [`RunConfig`]: the jobs to run, each a
//! validated [`RunSpec`] with its SLOs, and the [`Session`] they run in (one seed, the outputs,
//! the observers). A URL gives one job built from the flags; a plan gives one job per scenario,
//! where any flag the user typed overrides the plan's value (`-d 10s` shortens every scenario).
//! Every error names the flag, or the plan's file:line:column, at fault. Nothing past this
//! module reads a flag string.

use crate::cli::{KeepArgs, LoadArgs, RunArgs, WatchArgs};
use crate::exit::Fail;
use engine::{RequestSpec, RunSpec, StatusSet, Target, Workload};
use model::Protocol;
use plan::load::{self, LoadInput, FLAGS};
use plan::{parse_duration, Settings};
pub use runner::Job;
use runner::Observing;
use stats::slo::Slo;
use std::sync::Arc;
use std::time::Duration;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// Most worker threads a run may start.
const MAX_THREADS: usize = 1024;
/// Descriptors brink needs besides its connections (epoll, timers, pipes, files, observers,
/// and the most the live-metrics endpoint keeps, so no scraper can take one the load needs).
const SPARE_FILES: u64 = 64 + metrics::MOST_SCRAPERS as u64;

/// Refuses, before the run, more connections than this process may open files (each
/// connection is one): the run would otherwise fail part-way with connect errors that say
/// nothing about the cause.
pub fn check_open_files(what: &str, connections: usize) -> Result<(), Fail> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } != 0 {
        return Ok(());
    }
    let limit: u64 = l.rlim_cur;
    let need = connections as u64 + SPARE_FILES;
    if need > limit {
        return Err(Fail::input(format!(
            "{what} connections need {need} open files (with brink's own) but this process may open {limit} (raise the limit with ulimit -n)"
        )));
    }
    Ok(())
}

/// What every command that sends load shares, checked.
pub struct Session {
    /// The seed of template random values: `--seed`, else one drawn once from the clock. The
    /// result records it, so giving it back renders the same values.
    pub seed: u64,
    /// Print nothing but errors.
    pub quiet: bool,
    /// The result files to write.
    pub files: crate::output::Files,
    /// What is observed on the server, if anything.
    pub observing: Option<Observing>,
    /// Where the run is recorded.
    pub recording: crate::record::Recording,
}

/// A checked `brink run` (and the run part of `find` and `demo`).
pub struct RunConfig {
    pub jobs: Vec<Job>,
    pub session: Session,
    /// A plan's hooks (`brink find` runs them).
    pub hooks: plan::Hooks,
    /// A plan's files (what it names, relative to its directory); empty for a URL.
    pub plan_files: Vec<String>,
}

/// Checks `brink run`'s flags (and plan) into a [`RunConfig`].
pub fn run_config(a: &RunArgs) -> Result<RunConfig, Fail> {
    set_input_limit(&a.load.max_data_size)?;
    let seed = a.load.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let (jobs, hooks, plan_files) = jobs(&a.load, seed)?;
    Ok(RunConfig {
        jobs,
        hooks,
        plan_files,
        session: Session {
            seed,
            quiet: a.quiet,
            files: crate::output::Files {
                json: a.keep.json.clone(),
                html: a.keep.html.clone(),
                csv: a.keep.csv.clone(),
            },
            observing: observing(&a.watch)?,
            recording: recording(&a.keep)?,
        },
    })
}

/// `--history`, `--no-history`, `--tag`, `--note` (and `BRINK_HISTORY`).
pub fn recording(a: &KeepArgs) -> Result<crate::record::Recording, Fail> {
    let tags = a
        .tags
        .iter()
        .map(|t| match t.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
            _ => Err(Fail::input(format!("--tag '{t}': expected KEY=VALUE"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let path = if a.no_history {
        None
    } else {
        a.history.clone().or_else(history::default_path)
    };
    Ok(crate::record::Recording {
        path,
        tags,
        note: a.note.clone(),
    })
}

fn observing(a: &WatchArgs) -> Result<Option<Observing>, Fail> {
    if a.observe.is_empty() {
        if !a.metric.is_empty() {
            return Err(Fail::input("--metric needs --observe prometheus=URL"));
        }
        return Ok(None);
    }
    let sources = a
        .observe
        .iter()
        .map(|s| observe::parse(s, &a.metric))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Fail::input)?;
    let mut columns = vec![observe::CPU.to_string(), observe::THREADS.to_string()];
    columns.extend(
        a.metric
            .iter()
            .filter_map(|m| m.split_once('=').map(|(n, _)| n.to_string())),
    );
    Ok(Some(Observing { sources, columns }))
}

/// Whether the positional argument names a plan file rather than a URL.
pub fn is_plan(arg: &str) -> bool {
    !arg.contains("://")
        && (arg.ends_with(".yaml") || arg.ends_with(".yml") || std::path::Path::new(arg).is_file())
}

fn read_body(inline: Option<&str>, file: Option<&std::path::Path>) -> Result<Vec<u8>, Fail> {
    match (inline, file) {
        // curl's habit: `--body @payload.json` is the file's content, not the text.
        (Some(b), _) if b.starts_with('@') && b.len() > 1 => {
            model::input::read(std::path::Path::new(&b[1..]))
                .map_err(|e| Fail::input(format!("--body {b}: {e}")))
        }
        (Some(b), _) => Ok(b.as_bytes().to_vec()),
        (None, Some(p)) => {
            model::input::read(p).map_err(|e| Fail::input(format!("--body-file {e}")))
        }
        (None, None) => Ok(Vec::new()),
    }
}

fn flag_duration(flag: &str, v: Option<&str>) -> Result<Option<Duration>, Fail> {
    v.map(|v| load::positive_duration(flag, v).map_err(Fail::input))
        .transpose()
}

fn flag_load(a: &LoadArgs) -> LoadInput {
    LoadInput {
        connections: a.connections.clone(),
        rate: a.rate.clone(),
        stages: a.stages.clone(),
        duration: a.duration.clone(),
        requests: a.requests.clone(),
    }
}

/// The `--slo` objectives for `workload`: its response checks are the ones they may name, and
/// an objective on one request (`list.p99 < 100ms`) must name one of its requests.
fn flag_slos(a: &LoadArgs, workload: &engine::workload::Workload) -> Result<Vec<Slo>, Fail> {
    let (checks, requests) = (workload.check_names(), workload.names());
    a.slo
        .iter()
        .map(|t| {
            let slo = Slo::parse_with_checks(
                t,
                |d| parse_duration(d).map_err(|e| e.to_string()),
                &checks,
            )
            .map_err(|e| Fail::input(format!("--slo: {e}")))?;
            match &slo.request {
                Some(r) if !requests.contains(r) => Err(Fail::input(format!(
                    "--slo '{t}' names request '{r}', which is not one of {}{}",
                    requests.join(", "),
                    engine::workload::template::did_you_mean(r, stats::slo::PREFIXES.into_iter())
                ))),
                _ => Ok(slo),
            }
        })
        .collect()
}

/// Builds the jobs for `brink run`.
/// The jobs of a URL or a plan, with a plan's hooks and the files it names.
type Compiled = (Vec<Job>, plan::Hooks, Vec<String>);

fn jobs(a: &LoadArgs, seed: u64) -> Result<Compiled, Fail> {
    if is_plan(&a.url) {
        return plan_jobs(a, seed);
    }
    if !a.only.is_empty() {
        return Err(Fail::input(
            "--only selects scenarios of a plan file; this is a URL",
        ));
    }
    let mut target = Target::parse(&a.url).map_err(|e| Fail::input(e.to_string()))?;
    // The run is named for what it loads (`GET /api/items`, a gRPC method), so the history and
    // results tell single-URL runs apart.
    crate::llm_flags::refuse_off_http(a, target.protocol)?;
    let (name, request) = match target.protocol {
        Protocol::Grpc => {
            crate::ws_flags::refuse_flags(a, false)?;
            if a.http3() {
                return Err(Fail::input(
                    "--http3 applies to https:// URLs; gRPC runs over HTTP/2",
                ));
            }
            let name = a
                .call
                .clone()
                .unwrap_or_else(|| format!("GET {}", target.path));
            (name, crate::grpc_call::request(a, &mut target)?)
        }
        Protocol::Ws => {
            let request = crate::ws_flags::request(a, &target)?;
            (format!("WS {}", target.path), request)
        }
        Protocol::Http1 | Protocol::Http2 | Protocol::Http3 => {
            crate::grpc_call::refuse_flags(a, false)?;
            crate::ws_flags::refuse_flags(a, true)?;
            let body = read_body(a.body.as_deref(), a.body_file.as_deref())?;
            if a.llm {
                crate::llm_flags::request(a, &target, body)?
            } else {
                let method = a.method.as_deref().unwrap_or("GET");
                let mut req = RequestSpec::new(target.clone(), method, &a.headers, body.into())
                    .map_err(|e| Fail::input(e.to_string()))?
                    .request();
                req.headers = crate::grpc_call::flag_headers(a)?;
                (format!("{method} {}", target.path), req)
            }
        }
    };
    let mut workload = Workload::new(vec![request], false, Vec::new(), Vec::new(), seed);
    let run_id = crate::trace_flags::run_id(seed);
    if let Some(t) = crate::trace_flags::tracing(a, None, &name, &run_id)? {
        workload.enable_tracing(t);
    }
    let mut spec = spec(
        a,
        target,
        workload,
        &LoadInput::default(),
        &Settings::default(),
    )?;
    let completion = completion(a, &spec.target)?.map(|p| with_tls(p, &spec));
    let slos = flag_slos(a, &spec.workload)?;
    crate::llm_flags::judge(&mut spec.events.llm, &slos)?;
    crate::stream_flags::refuse_undated(&spec.events, &slos)?;
    needs_probe(&slos, completion.is_some(), "--complete-when")?;
    let job = Job {
        completion,
        name,
        spec,
        slos,
        pause: Duration::ZERO,
    };
    Ok((vec![job], plan::Hooks::default(), Vec::new()))
}

fn plan_jobs(a: &LoadArgs, seed: u64) -> Result<Compiled, Fail> {
    crate::grpc_call::refuse_flags(a, true)?;
    crate::llm_flags::refuse_with_plan(a)?;
    if a.method.is_some() || !a.headers.is_empty() || a.body.is_some() || a.body_file.is_some() {
        return Err(Fail::input(
            "-m, -H, -b and --body-file apply to a URL; a plan sets requests in its file",
        ));
    }
    if a.complete_when.is_some() {
        return Err(Fail::input(
            "--complete-when applies to a URL; a plan sets complete_when per scenario",
        ));
    }
    let path = std::path::Path::new(&a.url);
    // A gRPC step without definitions asks the server's reflection (with the run's TLS flags).
    let reflect = |t: &Target, service: &str| {
        crate::grpc_call::reflect(a, t, Some(service)).map(|(_, pool)| pool)
    };
    let plan =
        plan::load_file_with(path, seed, &reflect).map_err(|e| Fail::input(e.to_string()))?;
    let run_id = crate::trace_flags::run_id(seed);
    for name in &a.only {
        if !plan.scenarios.iter().any(|s| &s.name == name) {
            let known: Vec<&str> = plan.scenarios.iter().map(|s| s.name.as_str()).collect();
            return Err(Fail::input(format!(
                "--only {name}: {} has no such scenario (scenarios: {})",
                plan.file,
                known.join(", ")
            )));
        }
    }
    let over = a
        .target
        .as_deref()
        .map(|t| Target::parse(t).map_err(|e| Fail::input(format!("--target: {e}"))))
        .transpose()?;
    let hooks = plan.hooks.clone();
    let files = plan.files.clone();
    let jobs = plan
        .scenarios
        .into_iter()
        .filter(|s| a.only.is_empty() || a.only.contains(&s.name))
        .map(|s| {
            // --target replaces scheme, host and port; the plan's path prefix stays in the steps.
            let target = match &over {
                Some(o) => Target {
                    path: s.target.path.clone(),
                    ..o.clone()
                },
                None => s.target,
            };
            let mut workload = s.workload;
            if let Some(t) = crate::trace_flags::tracing(a, s.settings.trace, &s.name, &run_id)? {
                workload.enable_tracing(t);
            }
            let mut spec = spec(a, target, workload, &s.load, &s.settings)
                .map_err(|f| Fail::input(format!("scenario '{}': {}", s.name, f.message)))?;
            let mut slos = s.slos;
            slos.extend(
                flag_slos(a, &spec.workload)
                    .map_err(|f| Fail::input(format!("scenario '{}': {}", s.name, f.message)))?,
            );
            crate::llm_flags::judge(&mut spec.events.llm, &slos)
                .and_then(|()| crate::stream_flags::refuse_undated(&spec.events, &slos))
                .map_err(|f| Fail::input(format!("scenario '{}': {}", s.name, f.message)))?;
            needs_probe(
                &slos,
                s.completion.is_some(),
                "complete_when in the scenario",
            )
            .map_err(|f| Fail::input(format!("scenario '{}': {}", s.name, f.message)))?;
            Ok(Job {
                completion: s.completion.map(|p| with_tls(p, &spec)),
                name: s.name,
                spec,
                slos,
                pause: s.pause,
            })
        })
        .collect::<Result<Vec<Job>, Fail>>()?;
    Ok((jobs, hooks, files))
}

/// A completion probe that polls `https://` with the run's TLS options.
fn with_tls(mut probe: observe::completion::Probe, spec: &RunSpec) -> observe::completion::Probe {
    probe.fetch = engine::completion_fetch(spec.tls.clone());
    probe
}

/// A `complete` objective needs a completion probe (`what` names where it is set).
fn needs_probe(slos: &[Slo], probe: bool, what: &str) -> Result<(), Fail> {
    match slos
        .iter()
        .find(|s| s.metric == stats::slo::Metric::Complete)
    {
        Some(s) if !probe => Err(Fail::input(format!(
            "SLO '{}' needs a completion probe: {what}",
            s.text
        ))),
        _ => Ok(()),
    }
}

/// `--complete-when 'URL until CONDITION'` with `--complete-progress`, `--complete-every` and
/// `--complete-within`.
fn completion(a: &LoadArgs, target: &Target) -> Result<Option<observe::completion::Probe>, Fail> {
    let Some(when) = &a.complete_when else {
        if a.complete_progress.is_some()
            || a.complete_every.is_some()
            || a.complete_within.is_some()
        {
            return Err(Fail::input("--complete-progress, --complete-every and --complete-within go with --complete-when"));
        }
        return Ok(None);
    };
    let (get, until) = when.split_once(" until ").ok_or_else(|| {
        Fail::input(format!(
            "--complete-when '{when}': expected 'URL until CONDITION', e.g. '/sold until $.sold >= 1000'"
        ))
    })?;
    let every = flag_duration("--complete-every", a.complete_every.as_deref())?
        .unwrap_or(plan::DEFAULT_EVERY);
    let within = flag_duration("--complete-within", a.complete_within.as_deref())?
        .unwrap_or(plan::DEFAULT_WITHIN);
    observe::completion::Probe::new(
        target,
        get.trim(),
        until.trim(),
        a.complete_progress.as_deref(),
        every,
        within,
    )
    .map(Some)
    .map_err(|e| Fail::input(format!("--complete-when: {e}")))
}

/// One run: the plan's (or built-in) settings with every typed flag on top.
fn spec(
    a: &LoadArgs,
    target: Target,
    workload: Workload,
    plan_load: &LoadInput,
    plan: &Settings,
) -> Result<RunSpec, Fail> {
    let (load, max_requests) =
        load::build(&plan_load.overridden_by(&flag_load(a)), &FLAGS).map_err(Fail::input)?;
    let ok_status = match &a.ok_status {
        Some(s) => StatusSet::parse(s).map_err(|e| Fail::input(format!("--ok-status: {e}")))?,
        None => plan.ok_status.clone().unwrap_or_default(),
    };
    let (target, tls) = crate::connect_flags::tls_options(a, target, plan)?;
    if let Some(t) = a.threads {
        if !(1..=MAX_THREADS).contains(&t) {
            return Err(Fail::input(format!(
                "--threads must be between 1 and {MAX_THREADS}, got {t}"
            )));
        }
    }
    check_open_files(&load.max_connections().to_string(), load.max_connections())?;
    let timeout = flag_duration("--timeout", a.timeout.as_deref())?;
    let connect_timeout = flag_duration("--connect-timeout", a.connect_timeout.as_deref())?;
    let grace = match &a.grace {
        Some(g) => parse_duration(g).map_err(|e| Fail::input(format!("--grace: {e}")))?,
        // Held event streams never end on their own: nothing is left to wait for.
        None if (a.hold || plan.hold)
            && !matches!(target.protocol, Protocol::Ws | Protocol::Grpc) =>
        {
            Duration::ZERO
        }
        None => DEFAULT_GRACE,
    };
    let capture_limit = match &a.capture_limit {
        Some(c) => {
            plan::parse_size(c).map_err(|e| Fail::input(format!("--capture-limit: {e}")))? as usize
        }
        None => engine::workload::capture::DEFAULT_LIMIT,
    };
    let (http2, http3) = (
        a.http2 || plan.http2.unwrap_or(false),
        a.http3() || plan.http3.unwrap_or(false),
    );
    if http2 && http3 {
        return Err(Fail::input(
            "HTTP/2 and HTTP/3 are two protocols (--http2, --http3, or http2:/http3: in a plan): choose one",
        ));
    }
    let (target, discovered) = if a.http3_auto() || (plan.http3_auto && a.http3_flag.is_none()) {
        let connect = connect_timeout
            .or(plan.connect_timeout)
            .unwrap_or(crate::connect_flags::DEFAULT_CONNECT_TIMEOUT);
        let within = connect + timeout.or(plan.timeout).unwrap_or(DEFAULT_TIMEOUT);
        let (target, found) = crate::h3_auto::choose(target, &tls, within, connect)?;
        (target, Some(found))
    } else {
        let target = target
            .with_http2(http2)
            .with_http3(http3)
            .map_err(|e| Fail::input(e.to_string()))?;
        (target, None)
    };
    let grpc = target.protocol == Protocol::Grpc;
    let threads = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let connections = match &a.h2_connections {
        // gRPC multiplexes by default: one connection per worker thread, as gRPC clients do.
        None if grpc => Some(threads),
        None => None,
        Some(_) if !target.protocol.multiplexed() => {
            return Err(Fail::input(
                "--connections shares connections between requests in flight: it needs --http2, --http3 or a grpc:// URL (with HTTP/1.1, -c is the connections)",
            ))
        }
        Some(n) => Some(plan::load::connections("--connections", n).map_err(Fail::input)?),
    };
    let every = crate::ws_flags::every(a, &load, &target, plan.every)?;
    let timeout = timeout.or(plan.timeout).unwrap_or(DEFAULT_TIMEOUT);
    let counted = max_requests.is_some();
    let events = crate::stream_flags::rule(a, plan, target.protocol, (&load, counted), timeout)?;
    Ok(RunSpec {
        target,
        workload: Arc::new(workload),
        load,
        max_requests,
        timeout,
        connect_timeout: connect_timeout
            .or(plan.connect_timeout)
            .unwrap_or(crate::connect_flags::DEFAULT_CONNECT_TIMEOUT),
        keepalive: !a.no_keepalive && plan.keepalive.unwrap_or(true),
        connections,
        tls,
        ok_status,
        ok_codes: crate::grpc_call::ok_codes(a)?
            .or_else(|| plan.ok_codes.clone())
            .unwrap_or_else(|| vec![0]),
        threads,
        grace,
        capture_limit,
        every,
        max_message: match &a.max_message_size {
            Some(m) => plan::parse_size(m)
                .map_err(|e| Fail::input(format!("--max-message-size: {e}")))?
                as usize,
            None => engine::DEFAULT_GRPC_MAX_MESSAGE,
        },
        events,
        discovered,
    })
}

/// `--max-data-size`: the largest input file read (`model::input`); its default unless given.
pub fn set_input_limit(size: &Option<String>) -> Result<(), Fail> {
    let Some(size) = size else {
        model::input::set_limit(model::input::DEFAULT_LIMIT);
        return Ok(());
    };
    let bytes =
        model::parse_size(size).map_err(|e| Fail::input(format!("--max-data-size {size}: {e}")))?;
    model::input::set_limit(bytes);
    Ok(())
}
