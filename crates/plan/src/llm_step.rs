//! A plan step that asks an OpenAI-compatible server for a token stream (`llm:`): its body
//! is built from the model, the prompt (a template, escaped into the JSON) and the output
//! tokens asked for, for the API its path names. A scenario with such a step reads every
//! answer as a token stream, so all its steps are `llm:` steps.

use crate::compile::Cx;
use crate::error::PlanError;
use crate::file::{RawLlm, RawRequest, S};
use workload::llm::{Api, Ask, DEFAULT_MAX_TOKENS, DEFAULT_PROMPT};
use workload::template::{Names, Template};

impl Cx<'_> {
    /// The body of an `llm:` step whose path is `path` (the target's prefix included).
    pub(crate) fn llm_body(
        &self,
        st: &S<RawRequest>,
        l: &S<RawLlm>,
        path: &str,
        names: &Names,
    ) -> Result<Template, PlanError> {
        let r = &st.value;
        if let Some(b) = r.body.as_ref() {
            return Err(self.err(
                b,
                "an llm: step builds its body; drop 'body' (or drop 'llm:' and write the body)",
            ));
        }
        if let Some(b) = r.body_file.as_ref() {
            return Err(self.err(b, "an llm: step builds its body; drop 'body_file'"));
        }
        let api = Api::of_path(path).ok_or_else(|| {
            self.err(l, format!("llm: the path '{path}' ends in neither /chat/completions nor /completions (set path: /v1/chat/completions)"))
        })?;
        let l = &l.value;
        if let (Some(_), Some(t)) = (&l.prompt, &l.prompt_tokens) {
            return Err(self.err(t, "llm: 'prompt' and 'prompt_tokens' cannot both be set"));
        }
        if let Some(m) = l.max_tokens.as_ref().filter(|m| m.value == 0) {
            return Err(self.err(m, "llm: max_tokens must be at least 1"));
        }
        let words = l
            .prompt_tokens
            .as_ref()
            .map(|n| format!("{{{{words {}}}}}", n.value));
        let prompt = l.prompt.as_ref().map(|p| p.value.as_str());
        let ask = Ask {
            api,
            model: &l.model.value,
            prompt: prompt.or(words.as_deref()).unwrap_or(DEFAULT_PROMPT),
            max_tokens: l
                .max_tokens
                .as_ref()
                .map_or(DEFAULT_MAX_TOKENS, |m| m.value),
        };
        ask.body(names)
            .map_err(|e| match (&l.prompt, &l.prompt_tokens) {
                (Some(p), _) => self.err_in(p, e.at, e.message),
                (None, Some(t)) => self.err(t, e.message),
                (None, None) => self.err(&l.model, e.message),
            })
    }

    /// A scenario's steps are all `llm:` steps or none, and they go to an HTTP target: the
    /// first step that breaks it.
    pub(crate) fn llm_misplaced(
        &self,
        raw_steps: &[&S<RawRequest>],
        protocol: model::Protocol,
    ) -> Option<PlanError> {
        let asks = raw_steps.iter().find(|st| st.value.llm.is_some())?;
        if !matches!(protocol, model::Protocol::Http1 | model::Protocol::Http2) {
            return Some(self.err(
                *asks,
                "an llm: step asks an HTTP server (http:// or https://)",
            ));
        }
        if let Some(g) = asks.value.grpc.as_ref() {
            return Some(self.err(g, "a step is an llm: step or a grpc: call, not both"));
        }
        let plain = raw_steps.iter().find(|st| st.value.llm.is_none())?;
        Some(self.err(*plain, "a scenario with an llm: step reads every answer as a token stream: this request belongs in a scenario of its own"))
    }
}
