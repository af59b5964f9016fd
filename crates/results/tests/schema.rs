//! `schemas/brink.result.v1.json` and the types that write a result say the same thing: every
//! object the schema describes lists exactly the fields its type (de)serializes, every tagged
//! enum's variants are the schema's `oneOf` entries with their fields, and every object in the
//! schema is tied to a type here. A field added to a type and not to the schema (or the other
//! way round) fails this test, not a user's validator.

use results::find::{
    FindResult, Finding, HookRun, KneeInfo, LittleCause, LittleGap, Observed, StepRow, Stop,
    Sustained, UslInfo,
};
use results::*;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde_json::{json, Value};
use std::collections::BTreeSet;

const SCHEMA: &str = include_str!("../../../schemas/brink.result.v1.json");

/// The field names serde_derive gives a struct type, read from its `Deserialize`.
fn fields<T: DeserializeOwned>() -> BTreeSet<String> {
    struct Probe<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut names: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut names));
    assert!(
        !names.is_empty(),
        "{} is not a struct",
        std::any::type_name::<T>()
    );
    names.iter().map(|s| s.to_string()).collect()
}

fn properties(node: &Value) -> BTreeSet<String> {
    node["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

fn at<'a>(schema: &'a Value, pointer: &str) -> &'a Value {
    schema
        .pointer(pointer.trim_start_matches('#'))
        .unwrap_or_else(|| panic!("the schema has no {pointer}"))
}

/// Every object with `properties` in the schema, by pointer.
fn objects(node: &Value, path: String, out: &mut BTreeSet<String>) {
    match node {
        Value::Object(m) => {
            if m.contains_key("properties") {
                out.insert(path.clone());
            }
            for (k, v) in m {
                objects(v, format!("{path}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                objects(v, format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// A value of the type a schema node describes, with every property it lists filled in.
fn sample(node: &Value) -> Value {
    if let Some(c) = node.get("const") {
        return c.clone();
    }
    if let Some(e) = node.get("enum").and_then(Value::as_array) {
        return e[0].clone();
    }
    let ty = match &node["type"] {
        Value::Array(t) => t.iter().find(|t| *t != "null").cloned().unwrap_or_default(),
        t => t.clone(),
    };
    match ty.as_str().unwrap_or("object") {
        "integer" => json!(1),
        "number" => json!(1.5),
        "string" => json!("x"),
        "boolean" => json!(true),
        "array" => json!([]),
        _ => Value::Object(
            node["properties"]
                .as_object()
                .map(|p| p.iter().map(|(k, v)| (k.clone(), sample(v))).collect())
                .unwrap_or_default(),
        ),
    }
}

/// The variant names of an internally tagged enum, from serde's own "expected one of" list.
fn variants<T: DeserializeOwned>(tag: &str) -> BTreeSet<String> {
    let err = match serde_json::from_value::<T>(json!({ tag: "no such variant" })) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a made-up variant was accepted"),
    };
    let list = err
        .split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("no variant list in {err:?}"));
    list.split(", ")
        .map(|v| {
            v.trim_matches(|c: char| c == '`' || c.is_whitespace())
                .to_string()
        })
        .filter(|v| !v.is_empty())
        .collect()
}

/// Each `oneOf` entry of a tagged enum reads as the type and writes back exactly its fields,
/// and the entries are exactly the type's variants. Returns the entries' pointers.
fn tagged<T: DeserializeOwned + serde::Serialize>(
    schema: &Value,
    pointer: &str,
    tag: &str,
) -> BTreeSet<String> {
    let entries = at(schema, pointer)["oneOf"]
        .as_array()
        .unwrap_or_else(|| panic!("{pointer} has no oneOf"));
    let mut named = BTreeSet::new();
    let mut covered = BTreeSet::new();
    for (i, entry) in entries.iter().enumerate() {
        let value = sample(entry);
        named.insert(value[tag].as_str().unwrap_or_default().to_string());
        let typed: T = serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("{pointer}/oneOf/{i} does not read as the type: {e}"));
        let back = serde_json::to_value(&typed).unwrap_or_default();
        assert_eq!(
            keys(&back),
            properties(entry),
            "{pointer}/oneOf/{i}: the type writes other fields than the schema lists"
        );
        covered.insert(format!("{pointer}/oneOf/{i}"));
    }
    assert_eq!(named, variants::<T>(tag), "{pointer}: variants differ");
    covered
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn the_result_schema_describes_the_result_types_field_for_field() {
    let schema: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    let find = "#/$defs/find/properties";
    let scenario = "#/$defs/scenario/properties";
    let summary = "#/$defs/summary/properties";
    let structs: Vec<(String, BTreeSet<String>)> = vec![
        ("#".into(), fields::<RunResult>()),
        ("#/$defs/target".into(), fields::<TargetInfo>()),
        (
            "#/$defs/target/properties/discovered".into(),
            fields::<model::alt_svc::Discovered>(),
        ),
        ("#/$defs/load".into(), fields::<LoadInfo>()),
        (
            "#/$defs/load/properties/stages/items".into(),
            fields::<StageJson>(),
        ),
        ("#/$defs/summary".into(), fields::<SummaryJson>()),
        (
            format!("{summary}/latency_ms"),
            fields::<stats::LatencySummary>(),
        ),
        (
            format!("{summary}/service_time_ms"),
            fields::<stats::LatencySummary>(),
        ),
        (
            format!("{summary}/errors_by_kind"),
            stats::ErrorKind::ALL
                .iter()
                .map(|k| k.name().to_string())
                .collect(),
        ),
        (
            format!("{summary}/schedule/oneOf/1"),
            fields::<ScheduleInfo>(),
        ),
        (
            format!("{summary}/schedule/oneOf/1/properties/shortfall"),
            fields::<Shortfall>(),
        ),
        (
            format!("{summary}/latency_histogram/items"),
            fields::<HistBin>(),
        ),
        (format!("{summary}/grpc_stream"), fields::<StreamJson>()),
        (format!("{summary}/websocket"), fields::<WebSocketJson>()),
        (format!("{summary}/zero_rtt"), fields::<ZeroRttJson>()),
        (
            format!("{summary}/stream"),
            fields::<results::events::EventStreamJson>(),
        ),
        (
            format!("{summary}/llm"),
            fields::<results::events::LlmJson>(),
        ),
        ("#/$defs/second".into(), fields::<SecondRow>()),
        ("#/$defs/slo".into(), fields::<SloResult>()),
        ("#/$defs/scenario".into(), fields::<ScenarioResult>()),
        (
            format!("{scenario}/requests/items"),
            fields::<RequestResult>(),
        ),
        (
            format!("{scenario}/observed/additionalProperties"),
            fields::<Observed>(),
        ),
        (format!("{scenario}/refused/items"), fields::<RefusedJson>()),
        (
            format!("{scenario}/extract_failures/items"),
            fields::<ExtractFailureJson>(),
        ),
        (
            format!("{scenario}/setup_failures/items"),
            fields::<SetupFailureJson>(),
        ),
        (
            format!("{scenario}/answer_failures/items"),
            fields::<AnswerFailureJson>(),
        ),
        (format!("{scenario}/checks/items"), fields::<CheckJson>()),
        (format!("{scenario}/traces"), fields::<TracesJson>()),
        (format!("{scenario}/generator"), fields::<GeneratorJson>()),
        (format!("{scenario}/completion"), fields::<CompletionJson>()),
        (format!("{scenario}/async"), fields::<AsyncJson>()),
        (format!("{scenario}/broke"), fields::<BrokeJson>()),
        (
            format!("{scenario}/workers/items"),
            fields::<model::WorkerReport>(),
        ),
        ("#/$defs/find".into(), fields::<FindResult>()),
        (format!("{find}/max_sustainable"), fields::<Sustained>()),
        (format!("{find}/knee"), fields::<KneeInfo>()),
        (format!("{find}/usl"), fields::<UslInfo>()),
        (format!("{find}/hooks/items"), fields::<HookRun>()),
        ("#/$defs/latency".into(), fields::<stats::LatencySummary>()),
        ("#/$defs/trace".into(), fields::<TraceJson>()),
    ];
    let mut covered: BTreeSet<String> = BTreeSet::new();
    for (pointer, want) in &structs {
        assert_eq!(
            &properties(at(&schema, pointer)),
            want,
            "{pointer}: the schema's properties and the type's fields differ"
        );
        covered.insert(pointer.clone());
    }
    // Steps, the capture steps and the steps run again are the same type, with the same
    // nested objects.
    for rows in ["steps", "captures", "reruns"] {
        let row = format!("{find}/{rows}/items");
        let little = format!("{row}/properties/little");
        for (pointer, want) in [
            (row.clone(), fields::<StepRow>()),
            (
                format!("{row}/properties/observed/additionalProperties"),
                fields::<Observed>(),
            ),
            (little.clone(), fields::<LittleGap>()),
            (
                format!("{row}/properties/held"),
                fields::<results::find::HeldStep>(),
            ),
        ] {
            assert_eq!(properties(at(&schema, &pointer)), want, "{pointer}");
            covered.insert(pointer);
        }
        // The cause is one object listing every variant's fields, `kind` naming the variant.
        let cause = format!("{little}/properties/cause");
        let node = at(&schema, &cause);
        let kinds: BTreeSet<String> = node["properties"]["kind"]["enum"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(kinds, variants::<LittleCause>("kind"), "{cause}: kinds");
        let mut written = BTreeSet::from(["kind".to_string()]);
        for kind in &kinds {
            let mut value = sample(node);
            value["kind"] = json!(kind);
            let typed: LittleCause = serde_json::from_value(value)
                .unwrap_or_else(|e| panic!("{cause} kind {kind} does not read: {e}"));
            written.extend(keys(&serde_json::to_value(&typed).unwrap_or_default()));
        }
        assert_eq!(written, properties(node), "{cause}: fields");
        covered.insert(cause);
    }
    covered.extend(tagged::<Finding>(
        &schema,
        &format!("{find}/findings/items"),
        "rule",
    ));
    covered.extend(tagged::<Stop>(&schema, &format!("{find}/stop"), "reason"));

    let mut all = BTreeSet::new();
    objects(&schema, "#".into(), &mut all);
    let untied: Vec<&String> = all.difference(&covered).collect();
    assert!(
        untied.is_empty(),
        "objects of the schema tied to no type: {untied:?}"
    );
}

#[test]
fn the_probe_sees_a_field_the_schema_lacks() {
    // The oracle above is only as good as `fields`: it must see every field, optional ones too.
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Two {
        a: u64,
        #[serde(default)]
        b: Option<String>,
    }
    assert_eq!(fields::<Two>(), BTreeSet::from(["a".into(), "b".into()]));
}
