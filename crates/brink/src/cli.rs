//! The command line as the user types it (raw values, validated in `resolve`).

use clap::{Args, Parser, Subcommand};
use results::find::By;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "brink",
    version,
    about = "How much load can this service take, where does it break, and why?"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The exit codes of `run`, as `exit.rs` gives them.
const RUN_EXIT: &str = "Exit codes: 0 done and every objective held; 1 an objective failed; 2 invalid input or a tool error (a worker lost or failed: the run is short, its result kept); 3 no request succeeded; 130 interrupted (the result is still written).";
/// The exit codes of `find`.
const FIND_EXIT: &str = "Exit codes: 0 a capacity found; 1 no level held the objectives, the service stopped answering, or a required hook failed; 2 invalid input or a tool error (a step could not run: a worker lost or failed; the steps run are kept); 130 interrupted (the result is still written).";

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a load test: a URL (closed -c, open --rate or staged --stages load) or a plan file
    /// (every scenario in order, with its SLA table; exit 1 if an SLO fails).
    #[command(after_help = RUN_EXIT)]
    Run(Box<RunArgs>),
    /// Find the most load a service sustains within its SLOs: step the load up (connections or
    /// rate) until an SLO breaks, bisect, and report the steps, the knee, a USL fit and a diagnosis.
    #[command(after_help = FIND_EXIT)]
    Find(Box<FindArgs>),
    /// Check a plan file (syntax, keys, durations, rates, templates, JSONPaths, SLOs); run nothing.
    Validate(ValidateArgs),
    /// Start a built-in service with a real bottleneck on 127.0.0.1 and find its capacity.
    Demo(DemoArgs),
    /// Turn a result file into an HTML report and/or CSV.
    Report(ReportArgs),
    /// The recorded runs, newest first (`rm ID`, `baseline ID` change them).
    History(HistoryArgs),
    /// A recorded run's summary again: ID, latest or latest~N (`--json`: the stored result).
    Show(ShowArgs),
    /// Browse the run history in a web browser (runs, reports, comparisons, live runs), on
    /// 127.0.0.1 unless --bind says otherwise (which needs a token).
    Serve(ServeArgs),
    /// Compare results before and after a change: steady-state figures, 95% intervals by
    /// resampling, and a verdict per metric (exit 1 when a deciding metric regressed: p50,
    /// p90, p99, mean, errors or throughput, unless --decide names others).
    Compare(CompareArgs),
    /// Generate load for a coordinator (`brink run --worker HOST:PORT`): serve runs over
    /// HTTP/2 to whoever holds the token, one at a time.
    Worker(WorkerArgs),
    /// Distributed runs on Kubernetes: an Indexed Job whose pod 0 coordinates and whose other
    /// pods are workers.
    K8s(K8sArgs),
}

#[derive(Args, Debug, Clone)]
pub struct K8sArgs {
    #[command(subcommand)]
    pub action: K8sAction,
}

#[derive(Subcommand, Debug, Clone)]
pub enum K8sAction {
    /// Print the objects of a run over --workers pods (one Secret with the token, the run's
    /// certificates, the command and the plan with its files; headless Service, Indexed Job,
    /// NetworkPolicy; with --rbac the Role, ServiceAccount and RoleBinding), to apply with
    /// `kubectl apply -f -` or keep in Git.
    Render(Box<K8sRenderArgs>),
    /// Run over --workers pods: create the objects, wait for the pods, follow the
    /// coordinator's progress, keep its result here (history, --json/--html/--csv), and
    /// delete everything at the end or on Ctrl-C (which keeps what was measured).
    Run(Box<K8sRunArgs>),
    /// A capacity search over --workers pods: every pod moves through the search's steps
    /// together (the coordinator pod sends each level), the merged seconds judge each step,
    /// and the result is the `find` result, kept here (with --render: the objects only).
    Find(Box<K8sFindArgs>),
    /// What every pod of a rendered Job runs: index 0 coordinates, the others are workers.
    #[command(hide = true)]
    Pod(K8sPodArgs),
}

#[derive(Args, Debug, Clone)]
pub struct K8sRenderArgs {
    /// The run, as for `brink run` (--workers N: the worker pods; the command, the plan and
    /// its files go into the run's Secret).
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub objects: K8sObjectArgs,
    /// Also print the least Role `brink k8s run` needs for a run of this --name, and a
    /// ServiceAccount bound to it (for a run started from inside the cluster).
    #[arg(long)]
    pub rbac: bool,
}

#[derive(Args, Debug, Clone)]
pub struct K8sRunArgs {
    /// The run, as for `brink run` (--workers N: the worker pods).
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub objects: K8sObjectArgs,
    /// How long the pods may take to start (images pulled, nodes found).
    #[arg(long = "pod-wait", default_value = "5m")]
    pub pod_wait: String,
}

#[derive(Args, Debug, Clone)]
pub struct K8sFindArgs {
    /// The search, as for `brink find` (--workers N: the worker pods).
    #[command(flatten)]
    pub find: FindArgs,
    #[command(flatten)]
    pub objects: K8sObjectArgs,
    /// How long the pods may take to start (images pulled, nodes found).
    #[arg(long = "pod-wait", default_value = "5m")]
    pub pod_wait: String,
    /// Print the search's objects (as `k8s render` does a run's) instead of running it.
    #[arg(long)]
    pub render: bool,
    /// With --render: also the Role, ServiceAccount and RoleBinding.
    #[arg(long, requires = "render")]
    pub rbac: bool,
}

/// Where and how the pods of a run on Kubernetes run.
#[derive(Args, Debug, Clone)]
pub struct K8sObjectArgs {
    /// The image the pods run (build it with the Containerfile).
    #[arg(long)]
    pub image: String,
    /// The Job's name, and the prefix of the objects beside it (default: `brink` for render,
    /// `brink-` and five random characters for run).
    #[arg(long = "name")]
    pub job_name: Option<String>,
    /// The namespace of every object (default: kubectl's).
    #[arg(long)]
    pub namespace: Option<String>,
    /// CPU for each pod, requested and limited (e.g. 2, 500m): with --memory the pods are
    /// Guaranteed, and a generator is never throttled unseen.
    #[arg(long)]
    pub cpu: Option<String>,
    /// Memory for each pod, requested and limited (e.g. 1Gi).
    #[arg(long)]
    pub memory: Option<String>,
    /// Run only on nodes with this label (repeatable).
    #[arg(long = "node-selector", value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// Tolerate this taint (repeatable): KEY[=VALUE]:EFFECT.
    #[arg(long = "toleration", value_name = "KEY[=VALUE]:EFFECT")]
    pub toleration: Vec<String>,
    /// Annotate the pods (repeatable), e.g. `sidecar.istio.io/inject=false`: a service-mesh
    /// sidecar in a generator pod adds its own latency to every figure.
    #[arg(long = "annotation", value_name = "KEY=VALUE")]
    pub annotation: Vec<String>,
    /// Pull the image with this Secret (repeatable).
    #[arg(long = "image-pull-secret", value_name = "NAME")]
    pub image_pull_secret: Vec<String>,
    /// Run the pods as this ServiceAccount (they are given no API token either way).
    #[arg(long = "service-account", value_name = "NAME")]
    pub service_account: Option<String>,
    /// Spread the pods: hostname (one per node where possible), zone, or none.
    #[arg(long, default_value = "hostname")]
    pub spread: String,
    /// Keep the finished Job (and its pods' logs) this long.
    #[arg(long, default_value = "1h")]
    pub ttl: String,
    /// No NetworkPolicy (for clusters without a policy controller); by default only the
    /// coordinator pod may reach the workers' port.
    #[arg(long = "no-network-policy")]
    pub no_network_policy: bool,
    /// Aim at a loopback address from the pods anyway (inside a pod it is the pod itself):
    /// a warning instead of a refusal.
    #[arg(long = "allow-loopback-target")]
    pub allow_loopback_target: bool,
}

#[derive(Args, Debug, Clone)]
pub struct K8sPodArgs {
    /// Worker pods (indexes 1..=N).
    #[arg(long)]
    pub workers: usize,
    /// The Job's name (and its headless Service's).
    #[arg(long)]
    pub name: String,
    #[arg(long, default_value_t = 7700)]
    pub port: u16,
    #[arg(long = "token-file")]
    pub token_file: PathBuf,
    /// Report the progress, the result and the exit code on log lines marked with this
    /// (`brink k8s run` reads them).
    #[arg(long)]
    pub report: Option<String>,
    /// A file holding what the coordinator runs, a JSON `PodOrder` (in the run's Secret: the
    /// load may hold credentials).
    #[arg(long = "order-file", value_name = "FILE")]
    pub order_file: PathBuf,
    /// The run's TLS files (ca.crt, worker.crt/key, coordinator.crt/key): workers serve
    /// mutual TLS, the coordinator presents its certificate.
    #[arg(long = "tls-dir", value_name = "DIR")]
    pub tls_dir: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct WorkerArgs {
    /// Address to listen on (port 0: any free port; the address is printed first).
    #[arg(long, default_value = "127.0.0.1:7700")]
    pub listen: String,
    /// A file whose first line is the token coordinators must present (else
    /// $BRINK_WORKER_TOKEN). Required.
    #[arg(long = "token-file", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Where a load's seconds are kept until the coordinator has them; kept there when the
    /// coordinator is lost (default: a fresh folder only this user can enter, under
    /// $XDG_RUNTIME_DIR or the system's temporary directory; files are 0600).
    #[arg(long = "keep-dir", value_name = "DIR")]
    pub keep_dir: Option<PathBuf>,
    /// Serve over TLS with this certificate chain (PEM) ...
    #[arg(long = "tls-cert", value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// ... and this private key (PEM).
    #[arg(long = "tls-key", value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// With TLS: accept only coordinators presenting a certificate issued by this CA (PEM).
    #[arg(long = "client-ca", value_name = "FILE", requires = "tls_cert")]
    pub client_ca: Option<PathBuf>,
    /// Read files anywhere on this machine, not only below the working directory (set for the
    /// workers `--workers N` starts: they serve the user who started them).
    #[arg(long = "read-anywhere", hide = true)]
    pub read_anywhere: bool,
}

/// `brink run`'s flags, in groups by who acts on them: the load itself travels to every worker
/// and pod (a new flag there travels with it, by construction); the rest is this process's.
#[derive(Args, Debug, Clone, Default)]
pub struct RunArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// gRPC: print the services and methods of --proto/--protoset and send nothing.
    #[arg(long)]
    pub list: bool,
    /// Print nothing but errors.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    #[command(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    pub keep: KeepArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// What the load is: target, requests, load shape, timeouts, TLS, objectives, seed. A worker
/// or pod compiles the same run from it (it is what `WorkerOrder` carries).
#[derive(Args, Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
// A flag left out of an order is its default: orders are written without them.
#[serde(default)]
pub struct LoadArgs {
    /// Target URL (http://, https://, grpc://, grpcs://, ws:// or wss://), or a plan file (.yaml).
    #[arg(value_name = "URL|PLAN")]
    pub url: String,
    /// Concurrency: the closed model's connections (HTTP/1.1) or requests in flight (HTTP/2,
    /// gRPC), or the open model's pool (most in flight).
    /// k6's `--vus` is accepted too (each virtual user is a connection looping requests).
    #[arg(
        short = 'c',
        long = "concurrency",
        alias = "vus",
        allow_hyphen_values = true
    )]
    pub connections: Option<String>,
    /// HTTP/2 and gRPC: carry the -c requests in flight over this many connections, as
    /// streams (default: gRPC one per worker thread; HTTP/2 one per request in flight).
    #[arg(long = "connections", value_name = "N")]
    pub h2_connections: Option<String>,
    /// Run for this long (e.g. 30s, 2m). Default 10s unless -n is given. `-z` is accepted
    /// too (oha's and ghz's duration flag).
    #[arg(
        short = 'd',
        long = "duration",
        short_alias = 'z',
        allow_hyphen_values = true
    )]
    pub duration: Option<String>,
    /// Send exactly this many requests in total.
    #[arg(short = 'n', long = "requests", allow_hyphen_values = true)]
    pub requests: Option<String>,
    /// Open model: requests per second at fixed intended times (e.g. 5000 or 5000/s).
    #[arg(long, allow_hyphen_values = true)]
    pub rate: Option<String>,
    /// Stages DUR:TARGET,...: targets with /s are rates (open), bare numbers connections (closed).
    #[arg(long)]
    pub stages: Option<String>,
    /// HTTP method (default GET).
    #[arg(short = 'm', long = "method")]
    pub method: Option<String>,
    /// Request header 'Name: value' (repeatable): HTTP headers and gRPC metadata alike. The
    /// value is a template on every protocol: {{seq}}, {{uuid}}, {{rand_int A B}},
    /// {{env NAME}} (a secret from the environment rather than the command line, which every
    /// user of the machine can read).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Request body; `@FILE` reads it from FILE, as curl's `-d @FILE` does (a body that starts
    /// with `@` itself goes in --body-file).
    #[arg(short = 'b', long = "body", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Read the request body from a file.
    #[arg(long = "body-file")]
    pub body_file: Option<PathBuf>,
    /// WebSocket (ws:// or wss:// URLs): the message sent on each connection, templated as a
    /// body is; each waits for its answer (the next message the server sends).
    #[arg(long, conflicts_with = "message_file")]
    pub message: Option<String>,
    /// WebSocket: read the message from a file, sent as it is (binary unless it is UTF-8
    /// text; no templates).
    #[arg(long = "message-file")]
    pub message_file: Option<PathBuf>,
    /// WebSocket: hold the -c connections open for the run, each sending a ping (or the
    /// --message) every --every (default 1s); measures upgrades, how long connections stay
    /// up and how they end. Event streams (http/https): hold the -c streams for the run,
    /// each reopened when it ends as a browser's EventSource does (after the stream's
    /// retry:, default 3s, sending Last-Event-ID), counting reconnects; a held stream ends
    /// only when it goes quiet for --idle-timeout (default: --timeout).
    #[arg(long)]
    pub hold: bool,
    /// WebSocket, closed model: each connection sends one message (or ping) per this interval
    /// (`500ms`, `5s`): the first as it opens, then on a phase of its own within the interval;
    /// each is measured from when it was due.
    #[arg(long, value_name = "DURATION")]
    pub every: Option<String>,
    /// WebSocket: each connection takes the messages the server pushes (sending --message
    /// once, when given, to subscribe); each message is a request, its latency the wait for
    /// it.
    #[arg(long, conflicts_with = "hold")]
    pub subscribe: bool,
    /// WebSocket subscriptions and event streams: the JSON path where a pushed message (an
    /// event's data) carries its send time (epoch seconds, ms, µs or ns), for the delivery
    /// delay (`$.ts`).
    #[arg(long = "sent-at", value_name = "JSONPATH")]
    pub sent_at: Option<String>,
    /// WebSocket messages: the answer is the first message with the same id as the message
    /// sent, found by a JSON path (`$.id`) or else a regex (its first group, or the whole
    /// match without one); other messages
    /// are counted and passed over. Without it the next message answers.
    #[arg(long = "match-id", value_name = "JSONPATH|REGEX", conflicts_with_all = ["hold", "subscribe"])]
    pub match_id: Option<String>,
    /// gRPC (grpc:// or grpcs:// URLs): the unary method to call, package.Service/Method.
    #[arg(long)]
    pub call: Option<String>,
    /// gRPC: a .proto file that defines the method (repeatable; compiled at run time).
    #[arg(long)]
    pub proto: Vec<PathBuf>,
    /// gRPC: a compiled descriptor set (protoc --descriptor_set_out, buf build -o), instead of
    /// or beside --proto (repeatable).
    #[arg(long = "protoset", value_name = "FILE")]
    pub protosets: Vec<PathBuf>,
    /// gRPC: a directory to look for imported .proto files in (repeatable).
    #[arg(short = 'I', long = "import-path", value_name = "DIR")]
    pub import_paths: Vec<PathBuf>,
    /// gRPC: the request message as JSON (proto3 JSON mapping; default {}); string values may
    /// hold templates ({{seq}}, {{uuid}}, ...). Metadata: -H, templated too.
    #[arg(long, conflicts_with = "data_file")]
    pub data: Option<String>,
    /// gRPC: request messages from a file, a JSON array or one JSON message per line, sent
    /// in turn.
    #[arg(long = "data-file", value_name = "FILE")]
    pub data_file: Option<PathBuf>,
    /// The largest input file read (plan, CSV data, body, .proto, certificates), and the
    /// largest body a template may expand to (default 1GiB); a file that is not a regular
    /// file (a device, a FIFO) is never read.
    #[arg(long = "max-data-size", value_name = "SIZE")]
    pub max_data_size: Option<String>,
    /// gRPC client and bidi streaming: messages each call sends (default 1).
    #[arg(long = "stream-messages", value_name = "N")]
    pub stream_messages: Option<u32>,
    /// gRPC client and bidi streaming: the pause between a call's messages (default none).
    #[arg(long = "stream-interval", value_name = "DURATION")]
    pub stream_interval: Option<String>,
    /// gRPC: status codes that count as success, e.g. OK,NOT_FOUND (default OK).
    #[arg(long = "ok-codes")]
    pub ok_codes: Option<String>,
    /// Per-request timeout, from the send to the end of the response (default 30s).
    #[arg(long)]
    pub timeout: Option<String>,
    /// Timeout for opening a connection: TCP and TLS handshake, or QUIC's (default 5s).
    #[arg(long = "connect-timeout")]
    pub connect_timeout: Option<String>,
    /// Open a new connection for every request.
    #[arg(long = "no-keepalive")]
    pub no_keepalive: bool,
    /// Use HTTP/2 (h2c prior knowledge for http://, ALPN for https://).
    #[arg(long)]
    pub http2: bool,
    /// Use HTTP/3 over QUIC (an https:// URL; TLS 1.3, ALPN h3). `--http3=auto`: ask once over
    /// HTTP/2 and run over HTTP/3 when the server's Alt-Svc advertises it, else over HTTP/2.
    #[arg(long = "http3", value_name = "auto", num_args = 0..=1, require_equals = true,
          default_missing_value = "on", value_parser = ["on", "auto"])]
    pub http3_flag: Option<String>,
    /// HTTP/3: connections that resume an earlier session send requests as 0-RTT early data,
    /// before their handshake ends (GET, HEAD, OPTIONS, TRACE, PUT, DELETE; `--0rtt=all` for
    /// every method, which a replay of the early data could repeat).
    #[arg(long = "0rtt", value_name = "all", num_args = 0..=1, require_equals = true,
          default_missing_value = "idempotent", value_parser = ["idempotent", "all"])]
    pub zero_rtt: Option<String>,
    /// Accept any TLS certificate.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Trust the CA certificates in this PEM file.
    #[arg(long)]
    pub cacert: Option<PathBuf>,
    /// Async completion: poll a URL (or a path on the target) from the start of the load until
    /// a JSONPath condition on its body holds, e.g. '/sold until $.sold >= 1000'.
    #[arg(long = "complete-when", value_name = "URL until CONDITION")]
    pub complete_when: Option<String>,
    /// With --complete-when: a number to chart while the work drains (default: the
    /// condition's own path).
    #[arg(long = "complete-progress", value_name = "JSONPATH")]
    pub complete_progress: Option<String>,
    /// With --complete-when: how often to poll (default 100ms).
    #[arg(long = "complete-every", value_name = "DURATION")]
    pub complete_every: Option<String>,
    /// With --complete-when: how long after the first send the work may take (default 2m).
    #[arg(long = "complete-within", value_name = "DURATION")]
    pub complete_within: Option<String>,
    /// Send a W3C traceparent (fresh ids) and baggage on every request, the sampled flag on
    /// this share of them (default 1.0); the result keeps the slowest and first failed ids.
    #[arg(
        long,
        value_name = "RATIO",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "1.0"
    )]
    pub trace: Option<f64>,
    /// Where a trace opens, with {trace_id} for the id (e.g. 'http://jaeger:16686/trace/{trace_id}').
    #[arg(long = "trace-link", value_name = "URL")]
    pub trace_link: Option<String>,
    /// Mutual TLS: present this client certificate (PEM chain); needs --key.
    #[arg(long)]
    pub cert: Option<PathBuf>,
    /// Mutual TLS: the client certificate's private key (PEM).
    #[arg(long)]
    pub key: Option<PathBuf>,
    /// Send this authority (HTTP/2 :authority, HTTP/1.1 Host) and expect it in the server's
    /// certificate, instead of the URL's host and port.
    #[arg(long)]
    pub authority: Option<String>,
    /// Statuses that count as success, e.g. 200-299,404 (default: below 400).
    #[arg(long = "ok-status")]
    pub ok_status: Option<String>,
    /// Worker threads (default: one per core, capped by connections).
    #[arg(long)]
    pub threads: Option<usize>,
    /// wrk's `--latency` (print the latency distribution): brink always prints it.
    #[arg(long, hide = true)]
    pub latency: bool,
    /// How long requests in flight at the end of the schedule may take to finish (default 5s).
    #[arg(long)]
    pub grace: Option<String>,
    /// Memory all responses kept for extraction may hold together (default 64MiB); a response
    /// that does not fit fails its extraction, with its size in the summary.
    #[arg(long = "capture-limit", value_name = "SIZE")]
    pub capture_limit: Option<String>,
    /// Largest message an answer may carry (default 4MiB, as gRPC clients receive): a larger
    /// gRPC message fails the call as RESOURCE_EXHAUSTED, a larger WebSocket message closes
    /// the connection (1009) and counts as a protocol error.
    #[arg(long = "max-message-size", value_name = "SIZE")]
    pub max_message_size: Option<String>,
    /// Read every answer as Server-Sent Events, whatever its Content-Type (answers that say
    /// text/event-stream always are): time to the first event and between events.
    #[arg(long)]
    pub stream: bool,
    /// Largest Server-Sent Event read (default 1MiB): a larger one, or an endless line, ends
    /// its answer as a protocol error.
    #[arg(long = "max-event-size", value_name = "SIZE")]
    pub max_event_size: Option<String>,
    /// A streamed answer (events, tokens) that sends nothing for this long ends as a timeout
    /// (default: only --timeout bounds it).
    #[arg(long = "idle-timeout", value_name = "DURATION")]
    pub idle_timeout: Option<String>,
    /// Read each answer as an OpenAI-compatible token stream: time to the first token (TTFT),
    /// between tokens (ITL), per output token (TPOT), output tokens and goodput. With a URL
    /// that ends in /chat/completions or /completions, sends the request --model, --prompt
    /// and --max-tokens describe (POST, JSON, stream: true) unless -b gives the body.
    #[arg(long)]
    pub llm: bool,
    /// With --llm: the model asked for.
    #[arg(long, value_name = "NAME", requires = "llm")]
    pub model: Option<String>,
    /// With --llm: the prompt, a template ('{{words 200}}': 200 synthetic words, about 200
    /// tokens, new for each request). Default: 64 synthetic words.
    #[arg(
        long,
        value_name = "TEXT",
        requires = "llm",
        conflicts_with = "prompt_tokens"
    )]
    pub prompt: Option<String>,
    /// With --llm: a synthetic prompt of about N tokens, new for each request.
    #[arg(long = "prompt-tokens", value_name = "N", requires = "llm")]
    pub prompt_tokens: Option<u32>,
    /// With --llm: the output tokens asked for (max_tokens; default 128).
    #[arg(long = "max-tokens", value_name = "N", requires = "llm")]
    pub max_tokens: Option<u32>,
    /// Service-level objective, e.g. 'p95<100ms', 'errors<0.1%', 'rps>=190', 'p99<1s over 10s abort'
    /// (repeatable; with a plan, added to every scenario).
    #[arg(long = "slo")]
    pub slo: Vec<String>,
    /// With a plan: send to this scheme://host:port instead of the plan's target.
    #[arg(long = "target")]
    pub target: Option<String>,
    /// Run only these scenarios of the plan (repeatable or comma-separated).
    #[arg(long = "only", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Seed for template random values ({{uuid}}, {{rand_int}}, ...): same seed, same values.
    #[arg(long)]
    pub seed: Option<u64>,
}

impl LoadArgs {
    /// `--http3` or `--http3=auto`.
    pub fn http3(&self) -> bool {
        self.http3_flag.is_some()
    }

    /// `--http3=auto`: HTTP/3 only when the server advertises it.
    pub fn http3_auto(&self) -> bool {
        self.http3_flag.as_deref() == Some("auto")
    }
}

/// Watching the server during the run (the coordinator does it, not the workers).
#[derive(Args, Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
// A flag left out of an order is its default: orders are written without them.
#[serde(default)]
pub struct WatchArgs {
    /// Watch the server on the load's timeline: prometheus=URL (scraped every second) or
    /// pid=N (a local process from /proc). Repeatable. A failed scrape is a gap, not an error.
    #[arg(long = "observe")]
    pub observe: Vec<String>,
    /// With prometheus=: also record SERIES as NAME (gauges as values, counters as rates),
    /// e.g. db_conns=pgxpool_acquired_conns. Repeatable.
    #[arg(long = "metric")]
    pub metric: Vec<String>,
}

/// What this machine keeps of the run: result files and the history entry.
#[derive(Args, Debug, Clone, Default)]
pub struct KeepArgs {
    /// Write the result (schema brink.result/v1) to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML report (charts and tables, opens offline) to this file.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Write one CSV row per second to this file (with `find`, also NAME.steps.csv: one row
    /// per step).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// The run history file (default: $BRINK_HISTORY, else ~/.local/share/brink/history.db).
    #[arg(long, value_name = "PATH")]
    pub history: Option<PathBuf>,
    /// Do not record this run in the history.
    #[arg(long = "no-history", conflicts_with = "history")]
    pub no_history: bool,
    /// Tag the run in the history, KEY=VALUE (repeatable).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// A note kept with the run in the history.
    #[arg(long)]
    pub note: Option<String>,
}

/// The run's live metrics: served for scraping, or pushed (a coordinator pod pushes them too).
#[derive(Args, Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
// A flag left out of an order is its default: orders are written without them.
#[serde(default)]
pub struct LiveArgs {
    /// Serve the run's live metrics for Prometheus at http://ADDR/metrics (loopback; any
    /// other address needs --metrics-token-file).
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// A file whose first line is the token scrapers must present (Authorization: Bearer).
    #[arg(long = "metrics-token-file", value_name = "FILE")]
    pub metrics_token_file: Option<PathBuf>,
    /// Keep serving the metrics this long after the run, so the last seconds are scraped.
    #[arg(long = "metrics-linger", value_name = "DURATION", default_value = "0s")]
    pub metrics_linger: String,
    /// Push the run's metrics every second: prometheus=URL is Prometheus remote write, e.g.
    /// prometheus=http://127.0.0.1:9090/api/v1/write (repeatable).
    #[arg(long = "out", value_name = "KIND=URL")]
    pub out: Vec<String>,
    /// A header sent with every --out request, 'Name: value' (repeatable), e.g.
    /// 'Authorization: Bearer TOKEN' for a hosted store.
    #[arg(long = "out-header", value_name = "HEADER")]
    pub out_headers: Vec<String>,
}

/// Where the load is generated: worker processes here, or workers elsewhere.
#[derive(Args, Debug, Clone, Default)]
pub struct FleetArgs {
    /// Generate the load with N worker processes on this machine (each its share of the
    /// load, every second merged exactly into one result).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Generate the load with the `brink worker` listening at HOST:PORT (repeatable; start
    /// each with the same --token-file). One result, merged exactly.
    #[arg(long = "worker", value_name = "HOST:PORT")]
    pub worker: Vec<String>,
    /// The token file the workers given with --worker were started with.
    #[arg(long = "token-file", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Keep trying to reach a --worker that does not answer yet for this long (workers still
    /// starting, e.g. pods); default: one try.
    #[arg(long = "worker-wait", value_name = "DURATION")]
    pub worker_wait: Option<String>,
    /// Reach the --worker workers over TLS, trusting this CA (PEM) beside the system's.
    #[arg(long = "worker-cacert", value_name = "FILE")]
    pub worker_cacert: Option<PathBuf>,
    /// With --worker-cacert: present this certificate (PEM) to workers that ask for one ...
    #[arg(
        long = "worker-cert",
        value_name = "FILE",
        requires = "worker_key",
        requires = "worker_cacert"
    )]
    pub worker_cert: Option<PathBuf>,
    /// ... with this private key (PEM).
    #[arg(long = "worker-key", value_name = "FILE", requires = "worker_cert")]
    pub worker_key: Option<PathBuf>,
}

/// `find` sets the load itself: the load flags it shares with `run` are left out of its help
/// (given, they are refused with what to use instead).
#[derive(Args, Debug, Clone)]
#[command(
    mut_arg("duration", |a| a.hide(true)),
    mut_arg("requests", |a| a.hide(true)),
    mut_arg("rate", |a| a.hide(true)),
    mut_arg("stages", |a| a.hide(true)),
    mut_arg("list", |a| a.hide(true))
)]
pub struct FindArgs {
    /// Target, request, SLO and output options, as for `run` (the load flags -c, -d, -n,
    /// --rate, --stages are set by the search; -c is the pool with --by rate).
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub hooks: HookArgs,
    /// Print the search and the hooks that would run, and run nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
}

/// How the search steps and judges: it travels to workers with the load.
#[derive(Args, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SearchArgs {
    /// With a plan: the scenario whose requests and SLOs the search uses (default: the first).
    #[arg(long)]
    pub scenario: Option<String>,
    /// What to step: connections (closed model) or rate (open model, req/s).
    #[arg(long, default_value = "connections", value_parser = by_parser())]
    pub by: By,
    /// First level (default 1 connection, or 10/s).
    #[arg(long)]
    pub from: Option<String>,
    /// Highest level tried (default 1000 connections, or 100000/s).
    #[arg(long)]
    pub to: Option<String>,
    /// Length of each step, warm-up included.
    #[arg(long, default_value = "10s")]
    pub step: String,
    /// Start of each step measured but left out of its verdict.
    #[arg(long, default_value = "2s")]
    pub warmup: String,
    /// Pause between steps.
    #[arg(long, default_value = "1s")]
    pub cooldown: String,
    /// Bisect until the last pass and the first fail are this close (e.g. 5%).
    #[arg(long, default_value = "5%")]
    pub precision: String,
    /// Probed after a failing step to tell "overloaded" from "stuck" (default: the target).
    #[arg(long)]
    pub health: Option<String>,
    /// How long a stuck service may take to answer the health probe again.
    #[arg(long, default_value = "60s")]
    pub recovery: String,
}

/// Commands run at moments of the search, here (never on a worker).
#[derive(Args, Debug, Clone, Default)]
pub struct HookArgs {
    /// After the search, re-run a step at the maximum sustainable level (and one at the first
    /// failing level) and run this command (sh -c) during it, e.g. a profiler or a thread dump.
    /// It gets BRINK_LEVEL, BRINK_STEP, BRINK_DURATION_S, BRINK_OUT_DIR, BRINK_RUN_ID.
    #[arg(long = "at-peak", value_name = "CMD")]
    pub at_peak: Option<String>,
    /// Run this command during every step of the search.
    #[arg(long = "hook-each-step", value_name = "CMD")]
    pub hook_each_step: Option<String>,
    /// Run this command after each failing step.
    #[arg(long = "hook-on-fail", value_name = "CMD")]
    pub hook_on_fail: Option<String>,
    /// Run this command after the search.
    #[arg(long = "hook-after", value_name = "CMD")]
    pub hook_after: Option<String>,
    /// How far into its step a hook starts (default 0.5: halfway).
    #[arg(long = "hook-at", value_name = "SHARE", default_value = "0.5")]
    pub hook_at: f64,
    /// A hook still running after this long is stopped, its whole process group (default 60s).
    #[arg(long = "hook-timeout", default_value = "60s")]
    pub hook_timeout: String,
    /// A hook that fails (non-zero, timed out, did not start) fails the command (exit 1).
    #[arg(long = "hook-required")]
    pub hook_required: bool,
    /// Where hooks write their output, a folder of this user's (default hooks/RUN_ID beside
    /// the history file, e.g. ~/.local/share/brink/hooks/RUN_ID; with --no-history a fresh
    /// private folder under $XDG_RUNTIME_DIR or the temporary directory). Files are 0600.
    #[arg(long = "hooks-dir", value_name = "DIR")]
    pub hooks_dir: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct ValidateArgs {
    /// The plan file to check.
    pub plan: PathBuf,
    /// The largest input file read (plan, data, body, .proto, certificates), and the largest
    /// body a template may expand to (default 1GiB).
    #[arg(long = "max-data-size", value_name = "SIZE")]
    pub max_data_size: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// Only serve the demo service on 127.0.0.1:PORT until Ctrl-C (a target for the plans in
    /// examples/: /api/items, /user/auth/register, /login, /items, /health, /metrics).
    #[arg(long, value_name = "PORT")]
    pub serve: Option<u16>,
    /// Length of each step of the demo's capacity search (the first second is warm-up).
    #[arg(long, default_value = "3s")]
    pub step: String,
    /// Write the result to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the HTML report to this file.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// The run history file (default: $BRINK_HISTORY, else ~/.local/share/brink/history.db).
    #[arg(long, value_name = "PATH")]
    pub history: Option<PathBuf>,
    /// Do not record the demo's search in the history.
    #[arg(long = "no-history", conflicts_with = "history")]
    pub no_history: bool,
}

#[derive(Args, Debug, Clone)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub action: Option<HistoryAction>,
    /// Only runs against this target URL.
    #[arg(long, global = true)]
    pub target: Option<String>,
    /// Only runs with this tag, KEY=VALUE (repeatable: all must match).
    #[arg(long = "tag", value_name = "KEY=VALUE", global = true)]
    pub tags: Vec<String>,
    /// Only runs of this scenario (or plan scenario list) name.
    #[arg(long, global = true)]
    pub name: Option<String>,
    /// At most this many runs.
    #[arg(long, default_value_t = 50, global = true)]
    pub limit: usize,
    /// Print the runs as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// The history file (default: $BRINK_HISTORY, else ~/.local/share/brink/history.db).
    #[arg(long, global = true, value_name = "PATH")]
    pub history: Option<PathBuf>,
}

#[derive(Subcommand, Debug, Clone)]
pub enum HistoryAction {
    /// Delete a run (ID, latest or latest~N) and everything recorded with it.
    Rm { run: String },
    /// Mark a run as the baseline of its target and name (`brink compare baseline latest`).
    Baseline { run: String },
    /// The capacity of every search (`find`) recorded, by its tags: one table across the
    /// settings a service was searched under (`--tag cpu=400m --tag replicas=3`).
    Capacity,
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8089)]
    pub port: u16,
    /// Address to listen on. Every request needs the token, on loopback too (another user
    /// of this machine reaches loopback as well).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// A file whose first line is the token every request must carry (as ?token=, a Bearer
    /// header or the cookie the first visit sets); else $BRINK_SERVE_TOKEN, else a fresh one,
    /// printed once in the URL.
    #[arg(long = "token-file", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Refused: a token on the command line is visible to every user in the process list.
    #[arg(long, hide = true)]
    pub token: Option<String>,
    /// On loopback, also serve requests addressed to this name (repeatable; by default only
    /// 127.0.0.1, [::1] and localhost are, so a page on a name rebound to this machine
    /// cannot use the UI).
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// The history file (default: $BRINK_HISTORY, else ~/.local/share/brink/history.db).
    #[arg(long, value_name = "PATH")]
    pub history: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct ShowArgs {
    /// ID, latest or latest~N.
    #[arg(default_value = "latest")]
    pub run: String,
    /// Print the stored result (schema brink.result/v1).
    #[arg(long)]
    pub json: bool,
    /// The history file (default: $BRINK_HISTORY, else ~/.local/share/brink/history.db).
    #[arg(long, value_name = "PATH")]
    pub history: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// BEFORE AFTER: result files or history runs (ID, latest, latest~N, baseline: the
    /// baseline of the other run's target and name). Several per side with --before/--after.
    pub files: Vec<String>,
    /// A result from before the change (repeatable: runs are put one after another).
    #[arg(long)]
    pub before: Vec<String>,
    /// A result from after the change (repeatable).
    #[arg(long)]
    pub after: Vec<String>,
    /// The history file that ids are read from.
    #[arg(long, value_name = "PATH")]
    pub history: Option<PathBuf>,
    /// table, md (a Markdown table for a pull-request comment) or json.
    #[arg(long, default_value = "table", value_parser = ["table", "md", "json"])]
    pub format: String,
    /// How much a metric may change before it counts, e.g. p99=5%, throughput=3%,
    /// errors=0.5% (percentage points). Repeatable.
    #[arg(long)]
    pub tolerance: Vec<String>,
    /// The metrics whose regression fails the comparison (exit 1), comma-separated, from p50,
    /// p90, p95, p99, p99.9, mean, throughput, errors (default: p50,p90,p99,mean,throughput,
    /// errors); the table marks them with *.
    #[arg(long, value_name = "METRICS")]
    pub decide: Option<String>,
    /// Compare even when target, method, load or duration differ (the differences are listed).
    #[arg(long)]
    pub allow_mismatch: bool,
    /// Compare a capacity search that kept a step disturbed by its own host (brink's workers
    /// kept waiting for a CPU twice in a row): its capacity may be the host's.
    #[arg(long)]
    pub allow_disturbed: bool,
}

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// A result file written by `run`, `find` or `demo` with --json, or a history run (ID,
    /// latest, latest~N).
    pub result: String,
    /// The history file that ids are read from.
    #[arg(long, value_name = "PATH")]
    pub history: Option<PathBuf>,
    /// Write the self-contained HTML report here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Write one CSV row per second here (for a search, also NAME.steps.csv).
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

/// `--by`: its two values, listed in the help and errors.
fn by_parser() -> impl clap::builder::TypedValueParser<Value = By> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["connections", "rate"]).map(|s| {
        if s == "rate" {
            By::Rate
        } else {
            By::Connections
        }
    })
}

/// What a flag means in the tool a user comes from, when brink read it otherwise and refused
/// the command line: oha's `-q 100` is a rate (brink's `-q` is quiet); wrk's `-t` threads (or
/// hey's timeout), hey's and ghz's `-D` body or data file, hey's `-T` content type.
pub fn peer_hint(args: &[String]) -> Option<String> {
    let value_after = |flag: &str| {
        let at = args.iter().position(|a| a == flag)?;
        Some(args.get(at + 1).map_or("VALUE", String::as_str))
    };
    if let Some(value) = value_after("-q").filter(|v| v.parse::<f64>().is_ok()) {
        return Some(format!(
            "-q is --quiet in brink; for {value} requests per second (oha's -q) use --rate {value}"
        ));
    }
    if let Some(v) = value_after("-t") {
        return Some(format!(
            "brink has no -t: wrk's -t {v} (threads) is --threads {v}; hey's -t {v} (timeout, seconds) is --timeout {v}s"
        ));
    }
    if let Some(v) = value_after("-D") {
        return Some(format!(
            "brink has no -D: for a request body from a file (hey's -D) use --body-file {v}; for gRPC messages from a file (ghz's -D) use --data-file {v}"
        ));
    }
    if let Some(v) = value_after("-T") {
        return Some(format!(
            "brink has no -T: for a content type (hey's -T) use -H 'Content-Type: {v}'"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::peer_hint;

    #[test]
    fn oha_rate_flag_gets_a_hint() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let h = peer_hint(&args(&["brink", "run", "http://x/", "-q", "100"])).unwrap();
        assert!(h.ends_with("use --rate 100"), "{h}");
        assert!(peer_hint(&args(&["brink", "run", "http://x/", "-q"])).is_none());
        assert!(peer_hint(&args(&["brink", "run", "http://x/", "-q", "--json", "r"])).is_none());
        let h = peer_hint(&args(&["brink", "run", "http://x/", "-t", "2"])).unwrap();
        assert!(
            h.contains("--threads 2") && h.contains("--timeout 2s"),
            "{h}"
        );
        let h = peer_hint(&args(&["brink", "run", "http://x/", "-D", "b.json"])).unwrap();
        assert!(h.contains("--body-file b.json"), "{h}");
        let h = peer_hint(&args(&["brink", "run", "http://x/", "-T", "text/plain"])).unwrap();
        assert!(h.contains("-H 'Content-Type: text/plain'"), "{h}");
    }
}
