//! Kubernetes objects as YAML documents, for `kubectl apply -f` and Git. The objects are built
//! as typed values (k8s-openapi) and serialised to JSON values; this writes those values as
//! block YAML. A string is written double-quoted with JSON's escapes (valid YAML, never
//! mistaken for a number, a boolean or null), or, when it is several lines of plain text (a
//! plan, a data file), as a literal block that reads as the file does; keys are bare when they
//! are plain names.

use serde_json::Value;
use std::fmt::Write;

/// `docs` as one YAML stream, each document after `---`.
pub fn documents(docs: &[Value]) -> String {
    let mut out = String::new();
    for d in docs {
        out.push_str("---\n");
        block(&mut out, d, 0);
    }
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => quoted(s),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// `s` double-quoted: JSON's escapes, and `\uXXXX` for what JSON leaves raw but YAML does not
/// read back as it is (DEL and the C1 controls, NEL among them, which YAML refuses or folds
/// into a space; the Unicode line and paragraph separators; the non-characters).
fn quoted(s: &str) -> String {
    let json = Value::String(s.to_string()).to_string();
    let raw_in_yaml = |c: char| {
        matches!(
            c,
            '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}'
        )
    };
    if !json.contains(raw_in_yaml) {
        return json;
    }
    json.chars()
        .map(|c| {
            if raw_in_yaml(c) {
                format!("\\u{:04x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && k.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    if plain {
        k.to_string()
    } else {
        quoted(k)
    }
}

fn empty(v: &Value) -> Option<&'static str> {
    match v {
        Value::Object(m) if m.is_empty() => Some("{}"),
        Value::Array(a) if a.is_empty() => Some("[]"),
        Value::Object(_) | Value::Array(_) => None,
        _ => None,
    }
}

/// Writes `v` (an object or array) as a block at `indent` spaces.
fn block(out: &mut String, v: &Value, indent: usize) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let _ = write!(out, "{pad}{}:", key(k));
                value_after(out, x, indent);
            }
        }
        Value::Array(a) => {
            for x in a {
                let _ = write!(out, "{pad}-");
                match x {
                    Value::Object(m) if !m.is_empty() => {
                        // The first key on the dash's line, the rest aligned under it.
                        let mut first = true;
                        for (k, y) in m {
                            if first {
                                let _ = write!(out, " {}:", key(k));
                                first = false;
                            } else {
                                let _ = write!(out, "{pad}  {}:", key(k));
                            }
                            value_after(out, y, indent + 2);
                        }
                    }
                    _ => value_after(out, x, indent),
                }
            }
        }
        other => {
            let _ = writeln!(out, "{pad}{}", scalar(other));
        }
    }
}

/// The value after `key:` or `-`: on the same line when it is a scalar or empty, else a block
/// below it.
fn value_after(out: &mut String, v: &Value, indent: usize) {
    match (v, empty(v)) {
        (_, Some(e)) => {
            let _ = writeln!(out, " {e}");
        }
        (Value::Object(_) | Value::Array(_), None) => {
            out.push('\n');
            block(out, v, indent + 2);
        }
        (Value::String(s), None) if literal(s) => {
            let chomp = if s.ends_with('\n') { "" } else { "-" };
            let _ = writeln!(out, " |{chomp}");
            let pad = " ".repeat(indent + 2);
            for l in s.strip_suffix('\n').unwrap_or(s).split('\n') {
                if l.is_empty() {
                    out.push('\n');
                } else {
                    let _ = writeln!(out, "{pad}{l}");
                }
            }
        }
        _ => {
            let _ = writeln!(out, " {}", scalar(v));
        }
    }
}

/// Whether `s` reads as a literal block and back unchanged: several lines of printable text,
/// the first not indented (the block's indentation is taken from it), no trailing whitespace
/// on a line, and at most one newline at the end.
fn literal(s: &str) -> bool {
    s.contains('\n')
        && !s.ends_with("\n\n")
        && !s.starts_with([' ', '\t', '\n'])
        && s.chars()
            .all(|c| c == '\n' || (!c.is_control() && c != '\u{feff}'))
        && s.split('\n').all(|l| !l.ends_with([' ', '\t']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_become_block_yaml_with_every_string_quoted() {
        let v = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"labels": {"app.kubernetes.io/name": "brink", "odd key": "yes"}},
            "spec": {
                "containers": [{"name": "c", "args": ["run", "1", "true", "a: b"], "ports": [{"containerPort": 7700}]}],
                "empty": {}, "none": [], "n": null, "b": true
            }
        });
        let y = documents(&[v]);
        assert_eq!(
            y,
            r#"---
apiVersion: "v1"
kind: "Pod"
metadata:
  labels:
    app.kubernetes.io/name: "brink"
    "odd key": "yes"
spec:
  b: true
  containers:
    - args:
        - "run"
        - "1"
        - "true"
        - "a: b"
      name: "c"
      ports:
        - containerPort: 7700
  empty: {}
  n: null
  none: []
"#
        );
    }

    /// DEL and NEL (and the other C1 controls) are escaped: raw, YAML refuses the first and
    /// reads the second as a space.
    #[test]
    fn characters_yaml_reads_otherwise_are_escaped() {
        let y = documents(&[serde_json::json!({ "a\u{85}k": "x\u{7f}y\u{85}z\u{2028}" })]);
        assert_eq!(y, "---\n\"a\\u0085k\": \"x\\u007fy\\u0085z\\u2028\"\n");
    }

    #[test]
    fn lines_of_text_are_literal_blocks_and_anything_else_is_quoted() {
        let y = documents(&[serde_json::json!({"a": "x: 1\n  y\n\nz\n", "b": "no end\nhere"})]);
        assert_eq!(
            y,
            "---\na: |\n  x: 1\n    y\n\n  z\nb: |-\n  no end\n  here\n"
        );
        for s in [
            " lead\nx",
            "trail \nx",
            "two\n\n",
            "ctl\u{7}\nx",
            "one line",
        ] {
            let y = documents(&[serde_json::json!({ "a": s })]);
            assert_eq!(
                y,
                format!("---\na: {}\n", serde_json::Value::String(s.into())),
                "{s:?}"
            );
        }
    }
}
