//! A plan step that is a gRPC call (`grpc: {call, proto, data, metadata}`): the method found in
//! the step's `.proto` files or descriptor sets (or the server's reflection when it gives
//! none), its message written as YAML or JSON with templates in string values, or read from a
//! data file (a JSON array or NDJSON, one message per attempt in turn), and metadata as
//! templated headers. The response decodes to JSON, so `extract` takes JSONPaths from it.
//! Everything is checked here, each error at the value at fault.

use crate::compile::Cx;
use crate::error::PlanError;
use crate::file::{RawGrpc, RawRequest, S};
use model::Target;
use workload::message::{parse_documents, Message};
use workload::template::Names;
use workload::Request;

impl Cx<'_> {
    /// The request of step `st`, whose `grpc:` is `g`; weight and extraction are the caller's.
    pub(crate) fn grpc_request(
        &self,
        st: &S<RawRequest>,
        g: &S<RawGrpc>,
        target: &Target,
        names: &Names,
    ) -> Result<Request, PlanError> {
        let r = &st.value;
        if target.protocol != model::Protocol::Grpc {
            return Err(self.err(
                g,
                format!(
                    "a grpc: step needs a grpc:// or grpcs:// target, not {}",
                    target.url()
                ),
            ));
        }
        for (set, key) in [
            (r.method.is_some(), "method"),
            (r.path.is_some(), "path"),
            (r.body.is_some(), "body"),
            (r.body_file.is_some(), "body_file"),
            (!r.headers.is_empty(), "headers"),
        ] {
            if set {
                return Err(self.err(
                    st,
                    format!(
                        "'{key}' is for HTTP requests; a grpc: step sets call, data and metadata"
                    ),
                ));
            }
        }
        let g = &g.value;
        let call = self.grpc_call(g, target)?;
        let docs = self.grpc_documents(g)?;
        let at_data = |e: String| match (&g.data, &g.data_file) {
            (_, Some(f)) => self.err(f, e),
            (Some(d), None) => self.err(d, e),
            (None, None) => self.err(&g.call, e),
        };
        let mut message = Message::new(call.codec.clone(), &docs, names).map_err(|e| {
            at_data(if docs.len() > 1 {
                format!("message {}: {}", e.row + 1, e.message)
            } else {
                e.message
            })
        })?;
        message.stream = self.grpc_stream(g, &call)?;
        let metadata: Vec<(String, S<String>)> = g
            .metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut req = Request::fixed(&call.name, "POST", &call.path, &[], b"");
        if let Some(n) = &r.name {
            req.name = n.value.clone();
        }
        req.headers = self.headers(&metadata, names)?;
        req.message = Some(message);
        Ok(req)
    }

    /// The method `g.call` names, from the step's definitions or the server's reflection.
    fn grpc_call(&self, g: &RawGrpc, target: &Target) -> Result<grpc::Call, PlanError> {
        let mut src = grpc::Sources::default();
        for (key, list, out) in [
            ("proto", &g.proto, &mut src.protos),
            ("protoset", &g.protoset, &mut src.protosets),
            ("import_paths", &g.import_paths, &mut src.includes),
        ] {
            let Some(list) = list else { continue };
            for item in list.value.items() {
                let path = self.named_file(item);
                let exists = if key == "import_paths" {
                    path.is_dir()
                } else {
                    path.is_file()
                };
                if !exists {
                    return Err(self.err(list, format!("{key} {}: not found", path.display())));
                }
                out.push(path);
            }
        }
        let found = if src.is_empty() {
            let (service, _) = grpc::split_call(&g.call.value).map_err(|e| self.err(&g.call, e))?;
            let pool = (self.reflect)(target, service).map_err(|e| {
                self.err(&g.call, format!("{e} (or give the step proto or protoset)"))
            })?;
            grpc::prepare_in(&pool, &g.call.value)
        } else {
            grpc::prepare(&src, &g.call.value)
        };
        found.map_err(|e| self.err(&g.call, e.trim_start_matches("--call ").to_string()))
    }

    /// How the call streams, with the step's `stream:` settings checked against the method.
    fn grpc_stream(
        &self,
        g: &RawGrpc,
        call: &grpc::Call,
    ) -> Result<Option<workload::Streaming>, PlanError> {
        let (messages, interval) = match &g.stream {
            Some(st) => {
                let interval = match &st.value.interval {
                    Some(i) => Some(self.duration(i, &i.value, "interval")?),
                    None => None,
                };
                (st.value.messages.as_ref().map(|m| m.value), interval)
            }
            None => (None, None),
        };
        grpc::streaming(call, messages, interval).map_err(|e| match &g.stream {
            Some(st) => self.err(st, e),
            None => self.err(&g.call, e),
        })
    }

    /// The step's message documents: `data` (a mapping, or JSON text), `data_file`, or `{}`.
    fn grpc_documents(&self, g: &RawGrpc) -> Result<Vec<serde_json::Value>, PlanError> {
        match (&g.data, &g.data_file) {
            (Some(_), Some(f)) => Err(self.err(f, "'data' and 'data_file' cannot both be set")),
            (Some(d), None) => match &d.value {
                serde_json::Value::String(text) => serde_json::from_str(text)
                    .map(|v| vec![v])
                    .map_err(|e| self.err(d, format!("data: not JSON: {e}"))),
                v => Ok(vec![v.clone()]),
            },
            (None, Some(f)) => {
                let path = self.named_file(&f.value);
                let text = model::input::read_string(&path)
                    .map_err(|e| self.err(f, format!("data_file {e}")))?;
                parse_documents(&text)
                    .map_err(|e| self.err(f, format!("data_file {}: {e}", path.display())))
            }
            (None, None) => Ok(vec![serde_json::json!({})]),
        }
    }
}
