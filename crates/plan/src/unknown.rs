//! Every unknown key of a plan at once. The YAML reader stops at the first key the plan format
//! does not know; a plan with four typos would take four rounds. So the reader is run again on
//! the text with that key (and its value) blanked out, until it reads or fails for another
//! reason. Blanking replaces characters with spaces and keeps every line, so the positions of
//! later errors stay those of the file as written.

use crate::error::Pos;

/// At most this many unknown keys are collected from one plan.
pub const MOST: usize = 50;

/// Keys other tools use for what a brink plan calls something else.
const OTHER_TOOLS: [(&str, &str); 7] = [
    ("thresholds", "slo"),
    ("vus", "connections"),
    ("iterations", "requests"),
    ("url", "path"),
    ("checks", "check"),
    ("expect", "check"),
    ("executor", "load"),
];

/// ` (brink calls it 'slo')` for a key another tool uses, or nothing.
pub fn other_tool(key: &str) -> Option<String> {
    OTHER_TOOLS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, ours)| format!(" (brink calls it '{ours}')"))
}

/// `text` with the key at `at` and its value blanked out; `None` when no key is there.
pub fn blank_key(text: &str, at: Pos) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let row = (at.line as usize).checked_sub(1)?;
    let line = *lines.get(row)?;
    let col = line
        .char_indices()
        .nth((at.column as usize).checked_sub(1)?)
        .map(|(i, _)| i)?;
    let before = line[..col].trim_end();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    if before.ends_with('{') || before.ends_with(',') {
        // A flow mapping: the pair runs to the next comma or brace at its own depth.
        let end = flow_end(&line[col..]).map(|n| col + n)?;
        out[row] = blank(line, col, end);
    } else {
        // A block mapping: the rest of the line, and every following line indented deeper
        // than the key (its value).
        let key_indent = line[..col].chars().count();
        out[row] = blank(line, col, line.trim_end_matches(['\n', '\r']).len());
        for (i, l) in lines.iter().enumerate().skip(row + 1) {
            let content = l.trim_end_matches(['\n', '\r']);
            let indent = content.len() - content.trim_start().len();
            if !content.trim().is_empty() && indent <= key_indent {
                break;
            }
            out[i] = blank(l, 0, content.len());
        }
    }
    Some(out.concat())
}

/// Where a flow-mapping pair starting at the beginning of `s` ends: after its comma, or just
/// before the closing brace; quotes and nested brackets are skipped.
fn flow_end(s: &str) -> Option<usize> {
    let (mut depth, mut quote) = (0i32, None::<char>);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '{' | '[') => depth += 1,
            (None, '}' | ']') if depth == 0 => return Some(i),
            (None, '}' | ']') => depth -= 1,
            (None, ',') if depth == 0 => return Some(i + 1),
            (None, '\n') => return Some(i),
            _ => {}
        }
    }
    Some(s.len())
}

/// `line` with bytes `from..to` replaced by spaces (one per character).
fn blank(line: &str, from: usize, to: usize) -> String {
    let spaces = " ".repeat(line[from..to].chars().count());
    format!("{}{spaces}{}", &line[..from], &line[to..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u64, column: u64) -> Pos {
        Pos { line, column }
    }

    #[test]
    fn a_block_key_goes_with_its_value_and_the_lines_stay() {
        let text = "a: 1\nduraton:\n  x: 2\n  y: 3\nb: 4\n";
        let out = blank_key(text, at(2, 1)).unwrap();
        assert_eq!(out, "a: 1\n        \n      \n      \nb: 4\n");
        // A key that starts a list item leaves the dash, and the item's other keys.
        let text = "s:\n  - nmae: a\n    load: {}\n";
        let out = blank_key(text, at(2, 5)).unwrap();
        assert_eq!(out, "s:\n  -        \n    load: {}\n");
    }

    #[test]
    fn a_flow_pair_goes_up_to_its_comma_or_brace() {
        let text = "load: { duraton: 10s, conections: 5 }\n";
        let out = blank_key(text, at(1, 9)).unwrap();
        assert_eq!(out, format!("load: {{{}conections: 5 }}\n", " ".repeat(15)));
        let out = blank_key(&out, at(1, 23)).unwrap();
        assert_eq!(out, format!("load: {{{}}}\n", " ".repeat(29)));
        let text = "r: { h: { a: \"x,}\" }, b: 1 }\n";
        assert_eq!(
            blank_key(text, at(1, 6)).unwrap(),
            format!("r: {{{}b: 1 }}\n", " ".repeat(18))
        );
    }

    #[test]
    fn keys_of_other_tools_are_named() {
        assert_eq!(
            other_tool("thresholds").as_deref(),
            Some(" (brink calls it 'slo')")
        );
        assert_eq!(other_tool("durration"), None);
    }
}
