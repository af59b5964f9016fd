//! A data set written as JSON Lines (`data: { prompts: { jsonl: prompts.jsonl } }`): one JSON
//! object per line, its keys the columns (those of the first line; each later line must have
//! them all, and may have more). A string is its cell as it is; any other value is its JSON
//! text. This is how prompt sets are usually kept, quotes and newlines inside them included.

use serde_json::{Map, Value};
use workload::Cells;

/// The columns and rows of `text`; `Err` names the line at fault.
pub fn parse(text: &str) -> Result<(Vec<String>, Cells), String> {
    let mut columns: Vec<String> = Vec::new();
    let (mut bytes, mut ends) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let at = i + 1;
        let row: Map<String, Value> = match serde_json::from_str(line) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(format!("line {at}: not a JSON object")),
            Err(e) => return Err(format!("line {at}: {e}")),
        };
        if columns.is_empty() {
            columns = row.keys().cloned().collect();
            if columns.is_empty() {
                return Err(format!("line {at}: an object without keys"));
            }
        }
        for c in &columns {
            match row.get(c) {
                Some(Value::String(s)) => bytes.extend_from_slice(s.as_bytes()),
                Some(v) => bytes.extend_from_slice(v.to_string().as_bytes()),
                None => return Err(format!("line {at}: no '{c}' (the first line has it)")),
            }
            let end = u32::try_from(bytes.len())
                .map_err(|_| "a JSON Lines data set may hold up to 4 GiB of values".to_string())?;
            ends.push(end);
        }
    }
    let cells = Cells::new(bytes, ends, columns.len().max(1)).unwrap_or_default();
    Ok((columns, cells))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_rows_and_keys_are_columns() {
        let text = "{\"text\": \"say \\\"hi\\\"\\nplease\", \"n\": 3}\n\n{\"n\": [1], \"text\": \"é\", \"extra\": 1}\n";
        let (columns, cells) = parse(text).unwrap();
        assert_eq!(columns, ["n", "text"]);
        assert_eq!(cells.rows(), 2);
        assert_eq!(cells.get(0, 1), Some(&b"say \"hi\"\nplease"[..]));
        assert_eq!(cells.get(1, 0), Some(&b"[1]"[..]));
        assert_eq!(cells.get(1, 1), Some("é".as_bytes()));
    }

    #[test]
    fn a_bad_line_is_named() {
        assert_eq!(
            parse("{\"a\":1}\n[1]").unwrap_err(),
            "line 2: not a JSON object"
        );
        assert_eq!(
            parse("{\"a\":1}\n{\"b\":2}").unwrap_err(),
            "line 2: no 'a' (the first line has it)"
        );
        assert!(parse("{\"a\":1}\n{\"a\":")
            .unwrap_err()
            .starts_with("line 2: "));
        assert_eq!(parse("{}").unwrap_err(), "line 1: an object without keys");
        let (columns, cells) = parse("\n\n").unwrap();
        assert!(columns.is_empty() && cells.rows() == 0);
    }
}
