//! `brink k8s`: distributed runs on Kubernetes with no operator and no custom resource. The
//! cluster places and runs the pods of one Indexed Job; every pod runs `brink k8s pod`, which
//! makes index 0 the coordinator (`brink run ... --worker NAME-1.NAME:7700 ...`) and every other
//! index a worker, so the protocol, the split and the merge are those of `--worker`.
//! `render` prints the objects for `kubectl apply` or Git.

mod certs;
mod check;
mod cluster;
mod inputs;
mod pod;
mod rbac;
mod render;
mod run;
mod yaml;

use crate::cli::{
    FindArgs, FleetArgs, HookArgs, K8sAction, K8sArgs, K8sObjectArgs, K8sPodArgs, KeepArgs,
    LiveArgs, LoadArgs, RunArgs, SearchArgs, WatchArgs, WorkerArgs,
};
use crate::exit::Fail;
use crate::resolve::run_config;
use std::path::{Component, Path};
use std::time::Duration;

pub fn k8s_cmd(a: &K8sArgs) -> Result<i32, Fail> {
    match &a.action {
        K8sAction::Render(r) => render_cmd(&What::run(&r.run), &r.objects, r.rbac),
        K8sAction::Run(r) => run::run_cmd(&What::run(&r.run), &r.objects, &r.pod_wait),
        K8sAction::Find(f) if f.render && f.find.dry_run => Err(Fail::input(
            "--dry-run with --render: --render already runs nothing; drop one",
        )),
        K8sAction::Find(f) if f.render => render_cmd(&What::find(&f.find), &f.objects, f.rbac),
        K8sAction::Find(f) if f.find.dry_run => Err(Fail::input(
            "--dry-run: a search on pods shows what it would create with --render",
        )),
        K8sAction::Find(f) => run::run_cmd(&What::find(&f.find), &f.objects, &f.pod_wait),
        K8sAction::Pod(p) => pod_cmd(p),
    }
}

/// What the pods do: a run, or a search (its steps, and the hooks it was given, refused).
pub struct What<'a> {
    pub run: &'a RunArgs,
    pub search: Option<(&'a SearchArgs, &'a HookArgs)>,
}

impl<'a> What<'a> {
    fn run(run: &'a RunArgs) -> What<'a> {
        What { run, search: None }
    }

    fn find(f: &'a FindArgs) -> What<'a> {
        What {
            run: &f.run,
            search: Some((&f.search, &f.hooks)),
        }
    }
}

/// What a rendered Job's coordinator runs, in the run's Secret: the load (and the search,
/// for `k8s find`), the watching of the server, the live metrics it pushes (`--out`) and
/// whether it prints. Its workers are the Job's other pods and a pod keeps no history, so
/// nothing else of this machine's flags goes.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PodOrder {
    pub load: LoadArgs,
    pub search: Option<SearchArgs>,
    pub watch: WatchArgs,
    pub live: LiveArgs,
    pub quiet: bool,
    /// The `{{env NAME}}` values the run read where it was rendered: the pod has none of
    /// that environment, and the Secret is where credentials go.
    pub env: Vec<(String, String)>,
}

impl PodOrder {
    /// The run of the coordinator pod of `p`: this order, with its sibling pods as workers,
    /// reached over the run's TLS.
    fn run_args(self, p: &K8sPodArgs) -> RunArgs {
        let tls = |f: &str| p.tls_dir.as_ref().map(|d| d.join(f));
        RunArgs {
            load: self.load,
            watch: self.watch,
            live: self.live,
            quiet: self.quiet,
            list: false,
            keep: KeepArgs {
                no_history: true,
                ..KeepArgs::default()
            },
            fleet: FleetArgs {
                worker: (1..=p.workers)
                    .map(|i| format!("{}-{i}.{}:{}", p.name, p.name, p.port))
                    .collect(),
                token_file: Some(p.token_file.clone()),
                worker_wait: Some("5m".into()),
                worker_cacert: tls(certs::CA),
                worker_cert: tls(certs::COORDINATOR_CERT),
                worker_key: tls(certs::COORDINATOR_KEY),
                ..FleetArgs::default()
            },
        }
    }
}

fn render_cmd(what: &What, o: &K8sObjectArgs, rbac: bool) -> Result<i32, Fail> {
    let name = o.job_name.as_deref().unwrap_or("brink");
    let k = &what.run.keep;
    let kept = [
        ("--json", k.json.is_some()),
        ("--html", k.html.is_some()),
        ("--csv", k.csv.is_some()),
        ("--history", k.history.is_some()),
        ("--tag", !k.tags.is_empty()),
        ("--note", k.note.is_some()),
    ];
    if let Some((flag, _)) = kept.iter().find(|(_, given)| *given) {
        return Err(Fail::input(format!(
            "{flag}: rendering runs nothing, so there is no result to keep; `brink k8s run` (or `k8s find` without --render) keeps it here"
        )));
    }
    if rbac && o.namespace.is_none() {
        return Err(Fail::input(
            "--rbac needs --namespace: the RoleBinding names its ServiceAccount's namespace",
        ));
    }
    let (inputs, _) = inputs(what, o, name, None)?;
    let objects = render::objects(o, &inputs)?;
    crate::console::emit(&yaml::documents(&objects.values(rbac)?));
    Ok(0)
}

/// What the objects of the run `what` are made of, checked, and the run as this machine
/// checked it; `report`: the mark of the coordinator's report lines (`k8s run`).
fn inputs(
    what: &What,
    o: &K8sObjectArgs,
    name: &str,
    report: Option<String>,
) -> Result<(render::Inputs, crate::resolve::RunConfig), Fail> {
    let r = what.run;
    let workers = r
        .fleet
        .workers
        .ok_or_else(|| Fail::input("a run on pods needs --workers N: the worker pods"))?;
    if workers == 0 || workers > 1000 {
        return Err(Fail::input(format!("--workers {workers}: from 1 to 1000")));
    }
    if !r.fleet.worker.is_empty() {
        return Err(Fail::input(
            "--worker names workers elsewhere; a run on pods starts its own (--workers N)",
        ));
    }
    check_name(name)?;
    check_objects(o)?;
    refuse_local_inputs(r)?;
    let mut cfg = run_config(r)?;
    let length = match what.search {
        None => cfg.jobs.iter().try_fold(Duration::ZERO, |sum, j| {
            j.spec.load.end().map(|d| sum + d + j.pause)
        }),
        Some((search, hooks)) => {
            // A search has one job: the scenario it searches.
            let job = crate::commands::find::base_job(search, std::mem::take(&mut cfg.jobs))?;
            let length = search_length(r, search, hooks, &cfg.hooks, &job)?;
            cfg.jobs = vec![job];
            Some(length)
        }
    };
    for (what, host) in addresses(what, &cfg)? {
        loopback(&what, &host, o.allow_loopback_target)?;
    }
    if length.is_none() {
        crate::console::warn(&format!(
            "the run has no known length (-n without -d): its Job ends by itself after {} minutes",
            (render::UNKNOWN_LENGTH + render::SLACK).as_secs() / 60
        ));
    }
    // Waiting for what the load started (`complete_when`) is part of the run too.
    let waits: Duration = cfg
        .jobs
        .iter()
        .filter_map(|j| j.completion.as_ref().map(|p| p.within))
        .sum();
    let length = length.map(|l| l + waits);
    let token = match &r.fleet.token_file {
        Some(f) => fleet::trust::read_token(f).map_err(Fail::input)?,
        None => fleet::trust::new_token().map_err(Fail::input)?,
    };
    let files = if crate::resolve::is_plan(&r.load.url) {
        plan_files(Path::new(&r.load.url), &cfg.plan_files)?
    } else {
        Vec::new()
    };
    let mut load = r.load.clone();
    if let Some((plan, _)) = files.first() {
        // The plan is in the pod's working directory, under its own name.
        load.url = plan.clone();
    }
    let order = PodOrder {
        load,
        search: what.search.map(|(s, _)| s.clone()),
        watch: r.watch.clone(),
        live: r.live.clone(),
        quiet: r.quiet,
        // What compiling the run here read (run_config above).
        env: model::env::read(),
    };
    let order = crate::distribute::order_text(&order);
    let ttl = plan::parse_duration(&o.ttl).map_err(|e| Fail::input(format!("--ttl: {e}")))?;
    let life = length.unwrap_or(render::UNKNOWN_LENGTH) + render::SLACK + ttl;
    let inputs = render::Inputs {
        name: name.to_string(),
        workers,
        token,
        tls: certs::make(name, workers, life)?,
        files,
        order,
        length,
        report,
    };
    Ok((inputs, cfg))
}

/// The pod flags, as the API server will check them.
fn check_objects(o: &K8sObjectArgs) -> Result<(), Fail> {
    check::image(&o.image)?;
    if let Some(ns) = &o.namespace {
        check::dns_label("--namespace", ns)?;
    }
    if let Some(sa) = &o.service_account {
        check::dns_subdomain("--service-account", sa)?;
    }
    for s in &o.image_pull_secret {
        check::dns_subdomain("--image-pull-secret", s)?;
    }
    Ok(())
}

/// Every address the coordinator's pod reaches, with what names it: the targets, the
/// health check of a search, completion probes, `--out` and `--observe prometheus=`.
fn addresses(what: &What, cfg: &crate::resolve::RunConfig) -> Result<Vec<(String, String)>, Fail> {
    let mut out: Vec<(String, String)> = Vec::new();
    for j in &cfg.jobs {
        out.push(("the target".into(), j.spec.target.host.clone()));
        if let Some(p) = &j.completion {
            out.push(("the completion check".into(), p.target.host.clone()));
        }
    }
    if let Some(h) = what.search.and_then(|(s, _)| s.health.as_ref()) {
        let t = engine::Target::parse(h).map_err(|e| Fail::input(format!("--health: {e}")))?;
        out.push(("--health".into(), t.host));
    }
    let r = what.run;
    let urls = r.live.out.iter().map(|o| ("--out", o));
    for (flag, given) in urls.chain(r.watch.observe.iter().map(|o| ("--observe", o))) {
        let (kind, value) = given.split_once('=').unwrap_or(("", given));
        if flag == "--observe" && matches!(kind, "pid" | "cgroup") {
            return Err(Fail::input(format!(
                "--observe {given}: in a run on pods that is a process of the coordinator's pod, not your service; observe it with --observe prometheus=URL"
            )));
        }
        if let Ok(t) = engine::Target::parse(value) {
            out.push((format!("{flag} {given}"), t.host));
        }
    }
    Ok(out)
}

/// Flags that name something only this machine has.
fn refuse_local_inputs(r: &RunArgs) -> Result<(), Fail> {
    if r.live.metrics_listen.is_some() {
        return Err(Fail::input(
            "--metrics-listen would listen inside the coordinator's pod, where nothing scrapes it: send the run's metrics with --out prometheus=URL (the coordinator pod sends them)",
        ));
    }
    let named_on_the_command_line = [
        ("--body-file", r.load.body_file.is_some()),
        ("--data-file", r.load.data_file.is_some()),
        ("--proto", !r.load.proto.is_empty()),
        ("--protoset", !r.load.protosets.is_empty()),
        ("--import-path", !r.load.import_paths.is_empty()),
        ("--cacert", r.load.cacert.is_some()),
        ("--cert", r.load.cert.is_some()),
        ("--key", r.load.key.is_some()),
        (
            "-b @FILE",
            r.load.body.as_deref().is_some_and(|b| b.starts_with('@')),
        ),
    ];
    if let Some((flag, _)) = named_on_the_command_line.iter().find(|(_, given)| *given) {
        return Err(Fail::input(format!(
            "a run on pods: {flag} names a file on this machine; name it in a plan (a plan and its files go into the run's Secret)"
        )));
    }
    Ok(())
}

/// The longest a search can take: every level doubling from --from to --to, then halving
/// the gap to --precision, each step with its cool-down and the service's recovery. Hooks
/// are refused: they would run in the coordinator's pod, which has no shell.
fn search_length(
    r: &RunArgs,
    search: &SearchArgs,
    hooks: &HookArgs,
    plan_hooks: &plan::Hooks,
    job: &runner::Job,
) -> Result<Duration, Fail> {
    let given = [
        &hooks.at_peak,
        &hooks.hook_each_step,
        &hooks.hook_on_fail,
        &hooks.hook_after,
    ]
    .iter()
    .any(|h| h.is_some());
    let planned = [
        &plan_hooks.peak,
        &plan_hooks.each_step,
        &plan_hooks.on_fail,
        &plan_hooks.after,
    ]
    .iter()
    .any(|h| h.is_some());
    if given || planned {
        return Err(Fail::input(
            "a search on pods runs no hooks: they would run in the coordinator's pod, which has no shell; run `brink find --worker ...` from a machine that can run them",
        ));
    }
    let s = crate::commands::find::steps(search, &r.load, job)?;
    let doublings = (s.to / s.from.max(1.0)).log2().ceil().max(0.0);
    let halvings = (1.0 / s.precision).log2().ceil().max(0.0);
    let steps = (doublings + halvings + 2.0) as u32;
    Ok((s.step + s.cooldown + s.recovery) * steps)
}

/// A loopback address from a pod is the pod itself: refused, or with
/// --allow-loopback-target said once.
fn loopback(what: &str, host: &str, allowed: bool) -> Result<(), Fail> {
    if !check::is_local(host) {
        return Ok(());
    }
    let said = format!(
        "{what} {host} is this machine: inside a pod that is the pod itself, not your service"
    );
    if allowed {
        crate::console::warn(&format!("{said} (--allow-loopback-target)"));
        Ok(())
    } else {
        Err(Fail::input(format!(
            "{said}; aim at the service's address in the cluster (e.g. http://checkout.shop.svc:8080), or --allow-loopback-target"
        )))
    }
}

/// A Job name that leaves room for `-runner` and pod names: a DNS label of at most 52.
fn check_name(n: &str) -> Result<(), Fail> {
    let ok = !n.is_empty()
        && n.len() <= 52
        && n.starts_with(|c: char| c.is_ascii_lowercase())
        && !n.ends_with('-')
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(Fail::input(format!(
            "--name {n}: lowercase letters, digits and '-', starting with a letter, at most 52"
        )))
    }
}

/// The plan file (under its own name) and every file it names, each at its path relative to
/// the plan's directory.
fn plan_files(plan: &Path, named: &[String]) -> Result<Vec<(String, Vec<u8>)>, Fail> {
    let dir = plan.parent().unwrap_or(Path::new("."));
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| Fail::input(format!("cannot read {}: {e}", p.display())))
    };
    let name = plan
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| Fail::input(format!("{}: not a file", plan.display())))?;
    let mut out = vec![(name, read(plan)?)];
    for rel in named {
        let p = Path::new(rel);
        let inside = p
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if !inside {
            return Err(Fail::input(format!(
                "{}: the plan names {rel}, outside its own directory; the run's Secret holds only files beside the plan or below it",
                plan.display()
            )));
        }
        let full = dir.join(p);
        if full.is_dir() {
            return Err(Fail::input(format!(
                "{}: {rel} is a directory (import_paths); give the protos as files or a protoset",
                plan.display()
            )));
        }
        out.push((rel.trim_start_matches("./").to_string(), read(&full)?));
    }
    Ok(out)
}

/// What a rendered Job's pod runs: index 0 the coordinator, the others workers.
fn pod_cmd(p: &K8sPodArgs) -> Result<i32, Fail> {
    let index: usize = std::env::var("JOB_COMPLETION_INDEX")
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| {
            Fail::input("k8s pod runs in an Indexed Job's pod ($JOB_COMPLETION_INDEX)")
        })?;
    if index > 0 {
        // The pod's own address, so pods that share a host (and tests) do not collide.
        let ip = std::env::var(pod::POD_IP)
            .ok()
            .and_then(|v| v.parse::<std::net::IpAddr>().ok())
            .unwrap_or(std::net::IpAddr::from([0u8; 4]));
        let w = WorkerArgs {
            listen: std::net::SocketAddr::new(ip, p.port).to_string(),
            token_file: Some(p.token_file.clone()),
            keep_dir: None,
            tls_cert: p.tls_dir.as_ref().map(|d| d.join(certs::WORKER_CERT)),
            tls_key: p.tls_dir.as_ref().map(|d| d.join(certs::WORKER_KEY)),
            client_ca: p.tls_dir.as_ref().map(|d| d.join(certs::CA)),
            read_anywhere: false,
        };
        // A worker has nothing left to do a minute after its coordinator's last session.
        return crate::commands::worker::serve_worker(&w, Some(Duration::from_secs(60)));
    }
    let text = model::input::read_string(&p.order_file).map_err(Fail::input)?;
    let mut order: PodOrder = serde_json::from_str(&text).map_err(|e| {
        Fail::input(format!(
            "{}: not a coordinator's order: {e}",
            p.order_file.display()
        ))
    })?;
    if let Some(nonce) = &p.report {
        crate::logmark::set(nonce);
    }
    // The values {{env NAME}} read where the run was rendered, set before any thread starts.
    for (name, value) in &order.env {
        std::env::set_var(name, value);
    }
    let search = order.search.take();
    let run = order.run_args(p);
    match search {
        None => crate::commands::run::run_cmd(&run),
        Some(search) => crate::commands::find::find_cmd(&FindArgs {
            run,
            search,
            // No hooks on a pod (refused where the search was made); the flags' defaults.
            hooks: HookArgs {
                hook_at: 0.5,
                hook_timeout: "60s".into(),
                ..HookArgs::default()
            },
            dry_run: false,
        }),
    }
}
