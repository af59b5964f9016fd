//! The request of a token stream: what an OpenAI-compatible server is asked for, written once
//! for the command line (`--llm --model --prompt --max-tokens`) and for a plan's `llm:` step.
//! Which API it is comes from the path the user wrote (`…/chat/completions` or
//! `…/completions`); the body asks for a stream (`stream: true`) and for the server's own
//! token count at its end (`stream_options.include_usage`), with the prompt a template whose
//! values are escaped into the JSON string.

use crate::template::{Names, Template, TemplateError};

/// Which OpenAI-compatible API a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `/v1/chat/completions`: the prompt is one user message, tokens come in `delta.content`.
    Chat,
    /// `/v1/completions`: the prompt as it is, tokens come in `text`.
    Completions,
}

impl Api {
    /// The API of `path` (its query aside); `None` when it ends in neither.
    pub fn of_path(path: &str) -> Option<Api> {
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let path = path.strip_suffix('/').unwrap_or(path);
        if path.ends_with("/chat/completions") {
            Some(Api::Chat)
        } else if path.ends_with("/completions") {
            Some(Api::Completions)
        } else {
            None
        }
    }
}

/// The prompt of a request that says nothing of one: 64 synthetic words (about 64 tokens),
/// drawn anew for each request.
pub const DEFAULT_PROMPT: &str = "{{words 64}}";
/// The output tokens asked for when nothing says how many.
pub const DEFAULT_MAX_TOKENS: u32 = 128;

/// What one token stream asks for.
pub struct Ask<'a> {
    pub api: Api,
    pub model: &'a str,
    /// A template (`{{data.prompts.text}}`, `{{words 200}}`).
    pub prompt: &'a str,
    pub max_tokens: u32,
}

impl Ask<'_> {
    /// The body, its prompt's placeholders resolved by `names`.
    pub fn body(&self, names: &Names) -> Result<Template, TemplateError> {
        let prompt = Template::compile(self.prompt, names)?.json_string();
        let model = Template::literal(self.model.as_bytes()).json_string();
        let mut body = Template::literal(b"{\"model\":\"");
        body.append(model);
        body.append(Template::literal(match self.api {
            Api::Chat => b"\",\"messages\":[{\"role\":\"user\",\"content\":\"",
            Api::Completions => b"\",\"prompt\":\"",
        }));
        body.append(prompt);
        let close: &str = match self.api {
            Api::Chat => "\"}]",
            Api::Completions => "\"",
        };
        body.append(Template::literal(
            format!(
                "{close},\"max_tokens\":{},\"stream\":true,\"stream_options\":{{\"include_usage\":true}}}}",
                self.max_tokens
            )
            .as_bytes(),
        ));
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{Scope, Table};
    use model::Counter;
    use stats::rng::Rng;

    fn render(t: &Template) -> serde_json::Value {
        let (seq, mut rng) = (Counter::new(0), Rng::new(1));
        let mut scope = Scope {
            seq: &seq,
            seq_value: None,
            vu: 0,
            rng: &mut rng,
            vars: &[],
            tables: &[] as &[Table],
            rows: &[],
        };
        let mut out = Vec::new();
        t.render(&mut scope, &mut out);
        serde_json::from_slice(&out).expect("the body is JSON")
    }

    #[test]
    fn the_path_says_which_api() {
        assert_eq!(Api::of_path("/v1/chat/completions"), Some(Api::Chat));
        assert_eq!(Api::of_path("/v1/chat/completions/?x=1"), Some(Api::Chat));
        assert_eq!(Api::of_path("/v1/completions"), Some(Api::Completions));
        assert_eq!(
            Api::of_path("/openai/deployments/d/completions?api-version=2"),
            Some(Api::Completions)
        );
        assert_eq!(Api::of_path("/v1/models"), None);
        assert_eq!(Api::of_path("/"), None);
    }

    #[test]
    fn bodies_ask_for_a_stream_with_its_usage() {
        let names = Names {
            data: &[],
            vars: &[],
            env: &|_| None,
        };
        let chat = Ask {
            api: Api::Chat,
            model: "m\"x",
            prompt: "say \"hi\"\n{{words 3}}",
            max_tokens: 7,
        };
        let v = render(&chat.body(&names).unwrap());
        assert_eq!(v["model"], "m\"x");
        assert_eq!(v["messages"][0]["role"], "user");
        let content = v["messages"][0]["content"].as_str().unwrap();
        assert!(
            content.starts_with("say \"hi\"\n") && content.split(' ').count() == 4,
            "{content}"
        );
        assert_eq!(
            (v["max_tokens"].as_u64(), v["stream"].as_bool()),
            (Some(7), Some(true))
        );
        assert_eq!(v["stream_options"]["include_usage"], true);
        let plain = Ask {
            api: Api::Completions,
            model: "m",
            prompt: "once",
            max_tokens: 1,
        };
        let v = render(&plain.body(&names).unwrap());
        assert_eq!(
            (v["prompt"].as_str(), v.get("messages")),
            (Some("once"), None)
        );
        let bad = Ask {
            api: Api::Chat,
            model: "m",
            prompt: "{{nope}}",
            max_tokens: 1,
        };
        assert!(bad.body(&names).is_err());
    }
}
