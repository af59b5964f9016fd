//! YAML indentation mistakes in words. The parser says "while parsing a block mapping, did not
//! find expected key" or "did not match any variant of untagged enum Scalar"; a user needs to
//! hear which key is out of line with which: "`requests` (column 7) does not line up with
//! `load` (line 4, column 5)". Read from the plan's own text around the parser's position.

use crate::error::Pos;

/// Keys of a scenario whose value is a list: found under another key with a list, they were
/// meant to line up with that key.
const LIST_KEYS: [&str; 3] = ["requests", "flow", "slo"];

/// A key on one line: its name and 1-based column (after spaces and list dashes).
#[derive(Debug, PartialEq)]
struct Key<'a> {
    line: usize,
    column: usize,
    name: &'a str,
}

/// The key a line starts with, if it starts with one.
fn key_of(line_no: usize, text: &str) -> Option<Key<'_>> {
    let mut at = 0;
    let bytes = text.as_bytes();
    while at < bytes.len()
        && (bytes[at] == b' ' || (bytes[at] == b'-' && bytes.get(at + 1) == Some(&b' ')))
    {
        at += 1;
    }
    let rest = &text[at..];
    let (name, _) = rest.split_once(':')?;
    let name = name.trim_end();
    let plain = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    plain.then_some(Key {
        line: line_no,
        column: at + 1,
        name,
    })
}

/// The keys of the lines before `line` (1-based), nearest first.
fn keys_before(source: &str, line: usize) -> impl Iterator<Item = Key<'_>> {
    let lines: Vec<&str> = source.lines().take(line.saturating_sub(1)).collect();
    lines
        .into_iter()
        .enumerate()
        .rev()
        .filter_map(|(i, t)| key_of(i + 1, t))
}

/// The parser's `message` at `pos` as an indentation mistake in words, when it is one.
pub fn hint(source: &str, pos: Pos, message: &str) -> Option<String> {
    let line = pos.line as usize;
    if message.contains("did not find expected key") || message.contains("expected '-' indicator") {
        let here = key_of(line, source.lines().nth(line.checked_sub(1)?)?)?;
        let before = keys_before(source, line).next()?;
        return Some(format!(
            "`{}` (column {}) does not line up with `{}` (line {}, column {}): keys of one mapping line up, one under the other",
            here.name, here.column, before.name, before.line, before.column
        ));
    }
    if message.contains("untagged enum Scalar") || message.contains("invalid type: sequence") {
        let column = pos.column as usize;
        let mut keys = keys_before(source, line + 1);
        let owner = keys.find(|k| k.column < column)?;
        let parent = keys.find(|k| k.column < owner.column)?;
        if LIST_KEYS.contains(&owner.name) {
            return Some(format!(
                "`{}` (line {}) is indented under `{}` (line {}), which takes a single value there: a scenario's `{}` lines up with `{}` (column {})",
                owner.name, owner.line, parent.name, parent.line, owner.name, parent.name, parent.column
            ));
        }
        return Some(format!(
            "`{}` (line {}) takes a single value, not a list or a mapping",
            owner.name, owner.line
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u64, column: u64) -> Pos {
        Pos { line, column }
    }

    #[test]
    fn keys_out_of_line_are_named() {
        let deeper = "scenarios:\n  - name: a\n    load: { connections: 2 }\n      requests:\n        - path: /\n";
        assert_eq!(
            hint(deeper, at(4, 7), "while parsing a block mapping, did not find expected key").as_deref(),
            Some("`requests` (column 7) does not line up with `load` (line 3, column 5): keys of one mapping line up, one under the other")
        );
        let shallower = "scenarios:\n  - name: a\n   load: { connections: 2 }\n";
        let h = hint(shallower, at(3, 4), "did not find expected '-' indicator").unwrap();
        assert!(
            h.starts_with("`load` (column 4) does not line up with `name` (line 2, column 5)"),
            "{h}"
        );
    }

    #[test]
    fn a_list_under_the_wrong_key_is_named() {
        let plan = "scenarios:\n  - name: a\n    load:\n      connections: 2\n      requests:\n        - path: /\n";
        let h = hint(
            plan,
            at(6, 9),
            "data did not match any variant of untagged enum Scalar",
        )
        .unwrap();
        assert_eq!(
            h,
            "`requests` (line 5) is indented under `load` (line 3), which takes a single value there: a scenario's `requests` lines up with `load` (column 5)"
        );
        let typo = "scenarios:\n  - name: a\n    load:\n      rate:\n        - 5\n";
        let h = hint(
            typo,
            at(5, 9),
            "data did not match any variant of untagged enum Scalar",
        )
        .unwrap();
        assert_eq!(
            h,
            "`rate` (line 4) takes a single value, not a list or a mapping"
        );
        assert!(hint(plan, at(1, 1), "unknown field `x`").is_none());
    }
}
