//! The plan file as written: YAML read into raw structs that keep every value's position, so a
//! later check (a bad duration, an unknown template name, an invalid JSONPath) can point at
//! `file:line:column` just like a syntax error does. Nothing here is interpreted; `compile`
//! turns these into runnable scenarios.
//!
//! ```yaml
//! target: http://127.0.0.1:8080          # base URL; a scenario may set its own
//! defaults:                              # apply to every scenario (a scenario may override)
//!   timeout: 30s
//!   connect_timeout: 5s
//!   headers: { Content-Type: application/json }
//!   ok_status: 200-399
//!   ok_codes: OK,NOT_FOUND                 # gRPC codes that succeed (default OK)
//!   trace: 0.1                             # traceparent on every request, 10% sampled
//!   http2: false
//!   http3: false                           # HTTP/3 over QUIC (an https:// target); auto: if Alt-Svc says so
//!   0rtt: false                            # HTTP/3 early data on resumed connections; all: any method
//!   stream: false                          # every answer read as Server-Sent Events
//!   idle_timeout: 10s                      # a streamed answer silent this long: a timeout
//!   hold: false                            # event streams held for the run, reopened as a browser does
//!   insecure: false
//!   keepalive: true
//! data:
//!   users: { csv: users.csv, per: iteration }   # per: iteration (next row each time) | vu
//!   prompts: { jsonl: prompts.jsonl }           # one JSON object per line, keys as columns
//! hooks:                                 # brink find: commands at moments of the search
//!   peak: { run: "./profile.sh", at: 0.5, timeout: 60s, required: false }
//!   after: "./collect-logs.sh"           # also each_step, on_fail
//! scenarios:
//!   - name: register
//!     load: { connections: 50, requests: 300 }  # connections, rate, stages, duration, requests
//!     requests:                                 # a weighted mix ...
//!       - { name: register, method: POST, path: /register, body: '...', weight: 1 }
//!     flow:                                     # ... or a sequence per iteration
//!       - { name: login, path: /login, extract: { token: "$.access_token" } }
//!       - name: book                            # answered 202: poll the job until it is done
//!         method: POST
//!         path: /book
//!         extract: { job: "header:Location" }
//!         complete: { get: "{{job}}", until: '$.state == "CONFIRMED"', every: 200ms, within: 30s }
//!         check:                                # every answer; a failure fails the request
//!           - { status: [200, 202] }
//!           - { name: booked, json: $.state, equals: PENDING }
//!           - { header: content-type, contains: json }
//!           - { body_contains: '"id"', count_only: true }   # counted, never a failure
//!           - { body_matches: 'error', not: true }          # also size: "< 64KB"
//!   - name: greet                               # gRPC: a grpc:// or grpcs:// target
//!     target: grpc://127.0.0.1:50051
//!     requests:
//!       - grpc:
//!           call: helloworld.Greeter/SayHello
//!           proto: greeter.proto                # or a list; import_paths, protoset; none:
//!                                               # the server's reflection
//!           data: { name: "user{{seq}}" }       # or data_file: messages.ndjson
//!           metadata: { authorization: "Bearer {{env TOKEN}}" }
//!           stream: { messages: 10, interval: 100ms }   # client and bidi streaming
//!         extract: { reply: "$.message" }       # JSONPath on the decoded response
//!     slo: [ "errors < 1%", "p95 < 20s", "complete < 30s" ]
//!     complete_when:                            # async completion: poll until the work is done
//!       { get: /sold, until: "$.sold >= 1000", progress: "$.sold", every: 100ms, within: 2m }
//!     # or { get: http://127.0.0.1:9308/metrics, prometheus: 'sum(kafka_consumergroup_lag) == 0' }
//!     pause: 10s                                # wait after this scenario
//!   - name: chat                                # a model server's token streams
//!     target: http://127.0.0.1:8000
//!     requests:
//!       - path: /v1/chat/completions            # or /v1/completions
//!         llm: { model: tiny, prompt: "{{data.prompts.text}}", max_tokens: 128 }
//!                                               # or prompt_tokens: 200 (synthetic)
//!     slo: [ "ttft.p99 < 1s", "itl.p99 < 50ms", "tpot.p90 < 40ms" ]
//! ```

use serde::Deserialize;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;

/// A string, number or boolean scalar kept as the text the user wrote (`connections: 50`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

impl Scalar {
    pub fn text(&self) -> String {
        match self {
            Scalar::Int(n) => n.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Text(s) => s.clone(),
        }
    }
}

pub type S<T> = Spanned<T>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPlan {
    pub target: Option<S<String>>,
    #[serde(default)]
    pub defaults: RawSettings,
    #[serde(default)]
    pub data: BTreeMap<String, S<RawData>>,
    pub scenarios: S<Vec<S<RawScenario>>>,
    /// Commands at moments of a capacity search (`brink find`).
    #[serde(default)]
    pub hooks: RawHooks,
}

/// `hooks: { peak: CMD, each_step: ..., on_fail: ..., after: ... }`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHooks {
    pub peak: Option<S<RawHook>>,
    pub each_step: Option<S<RawHook>>,
    pub on_fail: Option<S<RawHook>>,
    pub after: Option<S<RawHook>>,
}

/// A hook: the command, or `{ run: CMD, at: 0.5, timeout: 60s, required: true }`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawHook {
    Command(String),
    Full {
        run: String,
        at: Option<f64>,
        timeout: Option<String>,
        #[serde(default)]
        required: bool,
    },
}

/// Settings a plan's `defaults:` and each scenario may set.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSettings {
    pub timeout: Option<S<String>>,
    pub connect_timeout: Option<S<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, S<String>>,
    pub ok_status: Option<S<Scalar>>,
    pub ok_codes: Option<S<String>>,
    /// W3C trace context on every request: the sampled share (0-1), or true for all.
    pub trace: Option<S<Scalar>>,
    pub http2: Option<bool>,
    /// HTTP/3 over QUIC (`--http3`), for an `https://` target: true, false or auto.
    pub http3: Option<S<Scalar>>,
    /// HTTP/3 0-RTT (`--0rtt`): true (idempotent methods), all, or false.
    #[serde(rename = "0rtt")]
    pub zero_rtt: Option<S<Scalar>>,
    pub insecure: Option<bool>,
    pub keepalive: Option<bool>,
    /// Read every answer as Server-Sent Events (`--stream`).
    pub stream: Option<bool>,
    /// A streamed answer silent this long is a timeout (`--idle-timeout`).
    pub idle_timeout: Option<S<String>>,
    /// Hold the event streams for the run, reopening each that ends (`--hold`).
    pub hold: Option<bool>,
    /// WebSocket, closed model: the least time between a connection's messages.
    pub every: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawData {
    pub csv: Option<S<String>>,
    /// JSON Lines: one object per line, its keys the columns.
    pub jsonl: Option<S<String>>,
    pub per: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: S<String>,
    pub target: Option<S<String>>,
    #[serde(default)]
    pub load: Option<S<RawLoad>>,
    pub requests: Option<S<Vec<S<RawRequest>>>>,
    pub flow: Option<S<Vec<S<RawRequest>>>>,
    #[serde(default)]
    pub slo: Vec<S<String>>,
    pub pause: Option<S<String>>,
    /// Async completion: poll until the work the load started is done.
    pub complete_when: Option<S<RawComplete>>,
    pub timeout: Option<S<String>>,
    pub connect_timeout: Option<S<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, S<String>>,
    pub ok_status: Option<S<Scalar>>,
    pub ok_codes: Option<S<String>>,
    /// W3C trace context on every request: the sampled share (0-1), or true for all.
    pub trace: Option<S<Scalar>>,
    pub http2: Option<bool>,
    /// HTTP/3 over QUIC (`--http3`), for an `https://` target: true, false or auto.
    pub http3: Option<S<Scalar>>,
    /// HTTP/3 0-RTT (`--0rtt`): true (idempotent methods), all, or false.
    #[serde(rename = "0rtt")]
    pub zero_rtt: Option<S<Scalar>>,
    pub insecure: Option<bool>,
    pub keepalive: Option<bool>,
    /// Read every answer as Server-Sent Events (`--stream`).
    pub stream: Option<bool>,
    pub idle_timeout: Option<S<String>>,
    pub hold: Option<bool>,
    pub every: Option<S<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLoad {
    pub connections: Option<S<Scalar>>,
    pub rate: Option<S<Scalar>>,
    pub stages: Option<S<String>>,
    pub duration: Option<S<Scalar>>,
    pub requests: Option<S<Scalar>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRequest {
    pub name: Option<S<String>>,
    pub method: Option<S<String>>,
    pub path: Option<S<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, S<String>>,
    pub body: Option<S<String>>,
    pub body_file: Option<S<String>>,
    pub weight: Option<S<u32>>,
    #[serde(default)]
    pub extract: BTreeMap<String, S<RawExtract>>,
    /// A gRPC call instead of an HTTP request.
    pub grpc: Option<S<RawGrpc>>,
    /// A token stream asked of an OpenAI-compatible server (the body is built from it).
    pub llm: Option<S<RawLlm>>,
    /// Async completion of each answered attempt: `{ get: "{{job}}", until: ..., every, within }`.
    pub complete: Option<S<RawComplete>>,
    /// What every answer is checked for.
    #[serde(default)]
    pub check: Vec<S<RawCheck>>,
    /// WebSocket: the message sent (templated), or a file that holds it.
    pub message: Option<S<String>>,
    pub message_file: Option<S<String>>,
    /// WebSocket: a ping, answered by its pong (a held connection's heartbeat).
    pub ping: Option<S<bool>>,
    /// WebSocket: the next message the server pushes (the step's message, if any, is sent
    /// once as the connection opens).
    pub subscribe: Option<S<bool>>,
    /// WebSocket subscriptions: the JSON path of a pushed message's send time.
    pub sent_at: Option<S<String>>,
    /// WebSocket: the answer is the message whose id (found as `extract` finds a value)
    /// equals the id of the message sent.
    pub match_id: Option<S<RawExtract>>,
}

/// One response check: one subject (`status`, `body_contains`, `body_matches`, `json`,
/// `header`, `size`), what it must be, and how a failure counts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCheck {
    pub name: Option<S<String>>,
    /// `200`, `"200-299,404"`, `[200, 201]`.
    pub status: Option<S<Codes>>,
    pub body_contains: Option<S<String>>,
    pub body_matches: Option<S<String>>,
    /// A JSONPath that must match (or, with `equals`, whose first match must equal a value).
    pub json: Option<S<String>>,
    /// A response header that must be present (or equal, contain, match).
    pub header: Option<S<String>>,
    /// `"< 64KB"`, `">= 1"`, `0`: the body's length.
    pub size: Option<S<Scalar>>,
    /// `equals: null` is a value to compare with, not a missing key.
    #[serde(default, deserialize_with = "present")]
    pub equals: Option<S<serde_json::Value>>,
    pub contains: Option<S<String>>,
    pub matches: Option<S<String>>,
    /// The answer must not pass the test.
    #[serde(default)]
    pub not: bool,
    /// A failure counts in the check's pass rate only, never as a failed request.
    #[serde(default)]
    pub count_only: bool,
}

/// A key that is there, whatever its value (`null` included).
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// Status codes as one value or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Codes {
    One(Scalar),
    More(Vec<Scalar>),
}

impl Codes {
    /// As the text `StatusSet::parse` reads: `200,201`.
    pub fn text(&self) -> String {
        match self {
            Codes::One(s) => s.text(),
            Codes::More(v) => v.iter().map(Scalar::text).collect::<Vec<_>>().join(","),
        }
    }
}

/// `complete_when: { get: /sold, until: "$.sold >= 1000", progress: "$.sold", every: 100ms,
/// within: 2m }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawComplete {
    pub get: S<String>,
    /// A JSONPath comparison on the answer ...
    pub until: Option<S<String>>,
    /// ... or a series of a Prometheus text-format answer: `sum(lag) == 0`.
    pub prometheus: Option<S<String>>,
    pub progress: Option<S<String>>,
    pub every: Option<S<String>>,
    pub within: Option<S<String>>,
}

/// A step's gRPC call.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGrpc {
    pub call: S<String>,
    pub proto: Option<S<OneOrMore>>,
    pub import_paths: Option<S<OneOrMore>>,
    pub protoset: Option<S<OneOrMore>>,
    /// The message: a mapping, or JSON text.
    pub data: Option<S<serde_json::Value>>,
    pub data_file: Option<S<String>>,
    #[serde(default)]
    pub metadata: BTreeMap<String, S<String>>,
    /// Client and bidi streaming: what each call sends.
    pub stream: Option<S<RawStream>>,
}

/// `llm: { model: NAME, prompt: TEXT, max_tokens: N }` (or `prompt_tokens: N` for a
/// synthetic prompt).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLlm {
    pub model: S<String>,
    pub prompt: Option<S<String>>,
    pub prompt_tokens: Option<S<u32>>,
    pub max_tokens: Option<S<u32>>,
}

/// `stream: { messages: 10, interval: 100ms }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStream {
    pub messages: Option<S<u32>>,
    pub interval: Option<S<String>>,
}

/// `x` or `[x, y]` (an error points at the whole value: untagged values keep no positions).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum OneOrMore {
    One(String),
    More(Vec<String>),
}

impl OneOrMore {
    pub fn items(&self) -> &[String] {
        match self {
            OneOrMore::One(s) => std::slice::from_ref(s),
            OneOrMore::More(v) => v,
        }
    }
}

/// `token: "$.access_token"` (JSONPath), or `{ json: ... }`, `{ header: ... }`, `{ regex: ... }`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawExtract {
    Path(String),
    Map(ExtractMap),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractMap {
    pub json: Option<String>,
    pub header: Option<String>,
    pub regex: Option<String>,
}
