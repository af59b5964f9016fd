//! `brink k8s`: distributed runs on Kubernetes with no operator and no custom resource. The
//! cluster places and runs the pods of one Indexed Job; every pod runs `brink k8s pod`, which
//! makes index 0 the coordinator (`brink run ... --worker NAME-1.NAME:7700 ...`) and every other
//! index a worker, so the protocol, the split and the merge are those of `--worker`.
//! `render` prints the objects for `kubectl apply` or Git.

mod cluster;
mod render;
mod run;
mod yaml;

use crate::cli::{
    FleetArgs, K8sAction, K8sArgs, K8sObjectArgs, K8sPodArgs, K8sRenderArgs, KeepArgs, LiveArgs,
    LoadArgs, RunArgs, WatchArgs, WorkerArgs,
};
use crate::exit::Fail;
use crate::resolve::run_config;
use std::path::{Component, Path};
use std::time::Duration;

pub fn k8s_cmd(a: &K8sArgs) -> Result<i32, Fail> {
    match &a.action {
        K8sAction::Render(r) => render_cmd(r),
        K8sAction::Run(r) => run::run_cmd(r),
        K8sAction::Pod(p) => pod_cmd(p),
    }
}

/// What a rendered Job's coordinator runs, in the run's Secret: the load, the watching of the
/// server, the live metrics it pushes (`--out`) and whether it prints. Its workers are the
/// Job's other pods and a pod keeps no history, so nothing else of this machine's flags goes.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PodOrder {
    pub load: LoadArgs,
    pub watch: WatchArgs,
    pub live: LiveArgs,
    pub quiet: bool,
    /// The `{{env NAME}}` values the run read where it was rendered: the pod has none of
    /// that environment, and the Secret is where credentials go.
    pub env: Vec<(String, String)>,
}

impl PodOrder {
    /// The run of the coordinator pod of `p`: this order, with its sibling pods as workers.
    fn run_args(self, p: &K8sPodArgs) -> RunArgs {
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
                ..FleetArgs::default()
            },
        }
    }
}

fn render_cmd(a: &K8sRenderArgs) -> Result<i32, Fail> {
    let name = a.objects.job_name.as_deref().unwrap_or("brink");
    let (inputs, _) = inputs(&a.objects, name, None)?;
    let objects = render::objects(&a.objects, &inputs)?;
    crate::console::emit(&yaml::documents(&objects.values(a.rbac)?));
    Ok(0)
}

/// What the objects of the run `a` are made of, checked, and the run as this machine checked
/// it; `report`: the mark of the coordinator's report lines (`k8s run`).
fn inputs(
    a: &K8sObjectArgs,
    name: &str,
    report: Option<String>,
) -> Result<(render::Inputs, crate::resolve::RunConfig), Fail> {
    let r = &a.run;
    let workers = r
        .fleet
        .workers
        .ok_or_else(|| Fail::input("k8s render needs --workers N: the worker pods"))?;
    if workers == 0 || workers > 1000 {
        return Err(Fail::input(format!("--workers {workers}: from 1 to 1000")));
    }
    if !r.fleet.worker.is_empty() {
        return Err(Fail::input(
            "--worker names workers elsewhere; k8s render starts its own (--workers N)",
        ));
    }
    check_name(name)?;
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
            "k8s render: {flag} names a file on this machine; name it in a plan (a plan and its files go into the run's Secret)"
        )));
    }
    let cfg = run_config(r)?;
    let token = match &r.fleet.token_file {
        Some(f) => fleet::trust::read_token(f).map_err(Fail::input)?,
        None => fleet::trust::new_token().map_err(Fail::input)?,
    };
    let files = if crate::resolve::is_plan(&r.load.url) {
        plan_files(Path::new(&r.load.url), &cfg.plan_files)?
    } else {
        Vec::new()
    };
    let length = cfg.jobs.iter().try_fold(Duration::ZERO, |sum, j| {
        j.spec.load.end().map(|d| sum + d + j.pause)
    });
    let mut load = r.load.clone();
    if let Some((plan, _)) = files.first() {
        // The plan is in the pod's working directory, under its own name.
        load.url = plan.clone();
    }
    let order = PodOrder {
        load,
        watch: r.watch.clone(),
        live: r.live.clone(),
        quiet: r.quiet,
        // What compiling the run here read (run_config above).
        env: model::env::read(),
    };
    let order = crate::distribute::order_text(&order);
    let inputs = render::Inputs {
        name: name.to_string(),
        workers,
        token,
        files,
        order,
        length,
        report,
    };
    Ok((inputs, cfg))
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
        let ip = std::env::var(render::POD_IP)
            .ok()
            .and_then(|v| v.parse::<std::net::IpAddr>().ok())
            .unwrap_or(std::net::IpAddr::from([0u8; 4]));
        let w = WorkerArgs {
            listen: std::net::SocketAddr::new(ip, p.port).to_string(),
            token_file: Some(p.token_file.clone()),
            keep_dir: None,
            tls_cert: None,
            tls_key: None,
            client_ca: None,
            read_anywhere: false,
        };
        // A worker has nothing left to do a minute after its coordinator's last session.
        return crate::commands::worker::serve_worker(&w, Some(Duration::from_secs(60)));
    }
    let text = model::input::read_string(&p.order_file).map_err(Fail::input)?;
    let order: PodOrder = serde_json::from_str(&text).map_err(|e| {
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
    crate::commands::run::run_cmd(&order.run_args(p))
}
