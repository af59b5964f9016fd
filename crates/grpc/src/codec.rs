//! A method's messages on the wire: request JSON (canonical proto3 mapping) to framed protobuf,
//! and a response body's frames back to JSON, for extraction.

use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor, MethodDescriptor};
use serde_json::Value;

/// The codec of one method: its request and response message types.
#[derive(Clone, Debug)]
pub struct MethodCodec {
    input: MessageDescriptor,
    output: MessageDescriptor,
}

impl MethodCodec {
    pub fn new(m: &MethodDescriptor) -> MethodCodec {
        MethodCodec {
            input: m.input(),
            output: m.output(),
        }
    }

    /// The framed request for the JSON text `json` (one document, nothing after it).
    pub fn encode_text(&self, json: &str) -> Result<Vec<u8>, String> {
        encode_json(&self.input, json).map(|b| frame(&b))
    }
}

impl workload::Codec for MethodCodec {
    fn encode(&self, json: &Value) -> Result<Vec<u8>, String> {
        let msg = DynamicMessage::deserialize(self.input.clone(), json)
            .map_err(|e| mismatch(&self.input, &e))?;
        Ok(frame(&msg.encode_to_vec()))
    }

    fn decode(&self, body: &[u8]) -> Result<Value, String> {
        let mut out = Vec::new();
        let mut rest = body;
        while !rest.is_empty() {
            let (flags, len) = match rest {
                [f, a, b, c, d, ..] => (*f, u32::from_be_bytes([*a, *b, *c, *d]) as usize),
                _ => return Err("a message frame is cut short".into()),
            };
            if flags & 1 == 1 {
                return Err("the message is compressed".into());
            }
            let bytes = rest.get(5..5 + len).ok_or("a message frame is cut short")?;
            let msg = DynamicMessage::decode(self.output.clone(), bytes)
                .map_err(|e| format!("not a {}: {e}", self.output.full_name()))?;
            out.push(serde_json::to_value(&msg).map_err(|e| e.to_string())?);
            rest = &rest[5 + len..];
        }
        match out.len() {
            0 => Err("the response holds no message".into()),
            1 => Ok(out.swap_remove(0)),
            _ => Ok(Value::Array(out)),
        }
    }
}

/// Why a JSON document does not fit `desc`, naming the type (serde's message names the field).
fn mismatch(desc: &MessageDescriptor, e: &dyn std::fmt::Display) -> String {
    format!("the data does not match {}: {e}", desc.full_name())
}

/// `json` (canonical proto3 JSON) as the wire bytes of message type `desc`.
pub fn encode_json(desc: &MessageDescriptor, json: &str) -> Result<Vec<u8>, String> {
    let mut de = serde_json::Deserializer::from_str(json);
    let msg = DynamicMessage::deserialize(desc.clone(), &mut de).map_err(|e| mismatch(desc, &e))?;
    de.end()
        .map_err(|e| format!("the data for {}: {e}", desc.full_name()))?;
    Ok(msg.encode_to_vec())
}

/// `message` framed as gRPC sends it: uncompressed flag, big-endian length, the bytes.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 5);
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}
