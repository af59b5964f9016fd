//! gRPC request messages as a workload holds them: JSON documents (one, or the rows of a data
//! file taken in turn) whose string values may hold templates (`{"name": "user{{seq}}"}`), and
//! the codec that turns a rendered document into the framed protobuf the call sends, and a
//! response back into JSON for extraction. A placeholder only ever fills a JSON string value:
//! what a data row or an extracted variable holds cannot add a field or change the document's
//! shape. Documents without placeholders are encoded once, before the run. The codec lives in
//! the `grpc` crate (it needs the method's descriptors); this crate only knows its trait.

use crate::template::{Names, Scope, Template, TemplateError};
use model::Counter;
use serde_json::{Map, Value};
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

/// Turns JSON into a call's wire message and a response's messages back into JSON.
pub trait Codec: Send + Sync + Debug {
    /// The framed request message for `json`; `Err` names the field and the type at fault.
    fn encode(&self, json: &Value) -> Result<Vec<u8>, String>;
    /// The response body (gRPC frames): the one message as JSON, or an array when the body
    /// holds several.
    fn decode(&self, body: &[u8]) -> Result<Value, String>;
}

/// A JSON document whose string values are templates.
#[derive(Clone, Debug)]
enum Doc {
    Fixed(Value),
    Text(Template),
    Array(Vec<Doc>),
    Object(Vec<(String, Doc)>),
}

impl Doc {
    fn compile(v: &Value, names: &Names) -> Result<Doc, TemplateError> {
        Ok(match v {
            Value::String(s) => {
                let t = Template::compile(s, names)?;
                if t.is_static() {
                    Doc::Fixed(v.clone())
                } else {
                    Doc::Text(t)
                }
            }
            Value::Array(items) => Doc::Array(
                items
                    .iter()
                    .map(|i| Doc::compile(i, names))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(fields) => Doc::Object(
                fields
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), Doc::compile(v, names)?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
            other => Doc::Fixed(other.clone()),
        })
    }

    fn is_static(&self) -> bool {
        match self {
            Doc::Fixed(_) => true,
            Doc::Text(_) => false,
            Doc::Array(items) => items.iter().all(Doc::is_static),
            Doc::Object(fields) => fields.iter().all(|(_, d)| d.is_static()),
        }
    }

    fn render(&self, scope: &mut Scope, scratch: &mut Vec<u8>) -> Value {
        match self {
            Doc::Fixed(v) => v.clone(),
            Doc::Text(t) => {
                scratch.clear();
                t.render(scope, scratch);
                Value::String(String::from_utf8_lossy(scratch).into_owned())
            }
            Doc::Array(items) => {
                Value::Array(items.iter().map(|i| i.render(scope, scratch)).collect())
            }
            Doc::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, d)| (k.clone(), d.render(scope, scratch)))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

/// One document of a message: compiled, and encoded when it has no placeholders.
#[derive(Debug)]
struct Row {
    doc: Doc,
    encoded: Option<Vec<u8>>,
}

/// The message a gRPC request sends: its documents, taken in turn, and their codec.
#[derive(Debug)]
pub struct Message {
    codec: Arc<dyn Codec>,
    rows: Vec<Row>,
    next: Counter,
    /// A streaming method: what each call sends and receives.
    pub stream: Option<Streaming>,
}

/// A streaming call: client streaming sends `messages` messages (each the next document,
/// rendered afresh) `interval` apart, then half-closes; server streaming reads every message
/// the answer carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Streaming {
    pub client: bool,
    pub server: bool,
    pub messages: u32,
    pub interval: Duration,
}

impl Streaming {
    /// Messages each call sends.
    pub fn sent(&self) -> u32 {
        if self.client {
            self.messages
        } else {
            1
        }
    }
}

/// Why a message cannot be built: the document (0-based) and what is wrong in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageError {
    pub row: usize,
    pub message: String,
}

impl Message {
    /// Takes only `part`'s documents in turn (a distributed run's worker).
    pub fn set_part(&mut self, part: model::Part) {
        self.next.set_part(part);
    }

    /// Compiles `docs` (at least one) for `codec`: every placeholder is checked, and every
    /// document without one is encoded now, so a document that does not fit the message
    /// type fails before any load.
    pub fn new(
        codec: Arc<dyn Codec>,
        docs: &[Value],
        names: &Names,
    ) -> Result<Message, MessageError> {
        if docs.is_empty() {
            return Err(MessageError {
                row: 0,
                message: "no message to send".into(),
            });
        }
        let rows = docs
            .iter()
            .enumerate()
            .map(|(row, v)| {
                let err = |message: String| MessageError { row, message };
                let doc = Doc::compile(v, names).map_err(|e| err(e.message))?;
                let encoded = if doc.is_static() {
                    Some(codec.encode(v).map_err(err)?)
                } else {
                    None
                };
                Ok(Row { doc, encoded })
            })
            .collect::<Result<_, _>>()?;
        Ok(Message {
            codec,
            rows,
            next: Counter::new(0),
            stream: None,
        })
    }

    /// The wire bytes when they never change (one document, no placeholders, one message
    /// per call).
    pub fn fixed(&self) -> Option<&[u8]> {
        if self.stream.is_some_and(|s| s.sent() > 1) {
            return None;
        }
        match self.rows.as_slice() {
            [only] => only.encoded.as_deref(),
            _ => None,
        }
    }

    /// Appends what one call sends to `out`: the next document's wire bytes, or for client
    /// streaming as many messages as a call sends, back to back. `Err` holds the rendered
    /// document when it does not fit the message type (a value that made an integer field
    /// non-numeric).
    pub fn render(&self, scope: &mut Scope, out: &mut Vec<u8>) -> Result<(), String> {
        let n = self.stream.map_or(1, |s| s.sent());
        for _ in 0..n {
            self.render_one(scope, out)?;
            // Each message of a stream gets its own `{{seq}}`.
            scope.seq_value = None;
        }
        Ok(())
    }

    fn render_one(&self, scope: &mut Scope, out: &mut Vec<u8>) -> Result<(), String> {
        let i = match self.rows.len() {
            1 => 0,
            n => (self.next.take() % n as u64) as usize,
        };
        let row = &self.rows[i];
        if let Some(b) = &row.encoded {
            out.extend_from_slice(b);
            return Ok(());
        }
        let mut scratch = Vec::new();
        let json = row.doc.render(scope, &mut scratch);
        let bytes = self.codec.encode(&json).map_err(|_| json.to_string())?;
        out.extend_from_slice(&bytes);
        Ok(())
    }

    /// The codec, to read responses back as JSON.
    pub fn codec(&self) -> &Arc<dyn Codec> {
        &self.codec
    }
}

/// Documents from a data file: a JSON array of messages, or one JSON message per line
/// (NDJSON, blank lines skipped). `Err` names the line (1-based) of the first bad document.
pub fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("line {}: {e}", e.line()))?;
        let Value::Array(items) = v else {
            return Err("line 1: expected a JSON array".into());
        };
        if items.is_empty() {
            return Err("the array holds no message".into());
        }
        return Ok(items);
    }
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?);
    }
    if out.is_empty() {
        return Err("no message in the file".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stats::rng::Rng;

    /// Encodes the JSON text itself, refusing a non-numeric `n`.
    #[derive(Debug)]
    struct Text;

    impl Codec for Text {
        fn encode(&self, json: &Value) -> Result<Vec<u8>, String> {
            if let Some(n) = json.get("n") {
                if n.as_str().is_some_and(|s| s.parse::<i64>().is_err()) {
                    return Err("field n: not a number".into());
                }
            }
            Ok(json.to_string().into_bytes())
        }
        fn decode(&self, body: &[u8]) -> Result<Value, String> {
            serde_json::from_slice(body).map_err(|e| e.to_string())
        }
    }

    fn names() -> Names<'static> {
        Names {
            data: &[],
            vars: &[],
            env: &|_| None,
        }
    }

    fn render_all(m: &Message, times: usize) -> Vec<Result<String, String>> {
        let seq = model::Counter::new(0);
        let mut rng = Rng::stream(1, 0);
        (0..times)
            .map(|_| {
                let mut scope = Scope {
                    seq: &seq,
                    seq_value: None,
                    vu: 0,
                    rng: &mut rng,
                    vars: &[],
                    tables: &[],
                    rows: &[],
                };
                let mut out = Vec::new();
                m.render(&mut scope, &mut out)
                    .map(|()| String::from_utf8(out).unwrap())
            })
            .collect()
    }

    #[test]
    fn placeholders_fill_string_values_only() {
        let doc = serde_json::json!({"name": "user{{seq}}", "tags": ["{{vu}}", 3], "n": "{{seq}}"});
        let m = Message::new(Arc::new(Text), &[doc], &names()).unwrap();
        assert!(m.fixed().is_none());
        let out = render_all(&m, 2);
        assert_eq!(
            out[0].as_deref(),
            Ok(r#"{"n":"0","name":"user0","tags":["0",3]}"#)
        );
        assert_eq!(
            out[1].as_deref(),
            Ok(r#"{"n":"1","name":"user1","tags":["0",3]}"#)
        );
    }

    #[test]
    fn a_value_cannot_change_the_document() {
        // A variable holding JSON syntax stays inside its string.
        let vars = vec!["v".to_string()];
        let n = Names {
            data: &[],
            vars: &vars,
            env: &|_| None,
        };
        let m = Message::new(Arc::new(Text), &[serde_json::json!({"name": "{{v}}"})], &n).unwrap();
        let seq = model::Counter::new(0);
        let mut rng = Rng::stream(1, 0);
        let values = [Some(r#"x","admin":true,"y":""#.to_string())];
        let mut scope = Scope {
            seq: &seq,
            seq_value: None,
            vu: 0,
            rng: &mut rng,
            vars: &values,
            tables: &[],
            rows: &[],
        };
        let mut out = Vec::new();
        m.render(&mut scope, &mut out).unwrap();
        let back: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(back.as_object().unwrap().len(), 1, "{back}");
        assert_eq!(back["name"], r#"x","admin":true,"y":""#);
    }

    #[test]
    fn rows_in_turn_encoded_once_and_bad_ones_named() {
        let docs = parse_documents("{\"n\":\"1\"}\n\n{\"n\":\"2\"}\n").unwrap();
        let m = Message::new(Arc::new(Text), &docs, &names()).unwrap();
        let out: Vec<String> = render_all(&m, 3).into_iter().map(Result::unwrap).collect();
        assert_eq!(out, [r#"{"n":"1"}"#, r#"{"n":"2"}"#, r#"{"n":"1"}"#]);
        let one = Message::new(Arc::new(Text), &docs[..1], &names()).unwrap();
        assert_eq!(one.fixed(), Some(&br#"{"n":"1"}"#[..]));

        let docs = parse_documents(r#"[{"n":"1"},{"n":"x"}]"#).unwrap();
        let e = Message::new(Arc::new(Text), &docs, &names()).unwrap_err();
        assert_eq!((e.row, e.message.as_str()), (1, "field n: not a number"));
        // A rendered value that does not fit is refused with the rendered document.
        let m = Message::new(
            Arc::new(Text),
            &[serde_json::json!({"n": "a{{seq}}"})],
            &names(),
        )
        .unwrap();
        assert_eq!(render_all(&m, 1)[0], Err(r#"{"n":"a0"}"#.to_string()));
        let e = Message::new(
            Arc::new(Text),
            &[serde_json::json!({"n": "{{sq}}"})],
            &names(),
        )
        .unwrap_err();
        assert!(e.message.contains("sq"), "{e:?}");

        assert_eq!(
            parse_documents("{\"a\":1}\n{oops}")
                .unwrap_err()
                .split(':')
                .next(),
            Some("line 2")
        );
        assert!(parse_documents("[]").is_err());

        // A client stream sends three messages per call, each the next row.
        let mut m = Message::new(Arc::new(Text), &docs[..1], &names()).unwrap();
        m.stream = Some(Streaming {
            client: true,
            server: false,
            messages: 3,
            interval: Duration::ZERO,
        });
        assert!(m.fixed().is_none());
        assert_eq!(
            render_all(&m, 1)[0].as_deref(),
            Ok(r#"{"n":"1"}{"n":"1"}{"n":"1"}"#)
        );
        assert!(parse_documents("\n\n").is_err());
    }
}
