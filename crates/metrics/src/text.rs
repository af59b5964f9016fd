//! The series in Prometheus's text exposition format (0.0.4): one `# HELP` and `# TYPE` per
//! family, label values escaped (backslash, double quote, newline), so a scenario named by a
//! plan can never break a line or add a label.

use crate::families::{families, Labels};
use crate::series::Series;
use std::fmt::Write;

/// A label value, escaped.
pub fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn labels(pairs: &Labels) -> String {
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// The whole exposition, as a scrape reads it.
pub fn render(s: &Series) -> String {
    let mut out = String::new();
    for f in families(s) {
        let _ = writeln!(
            out,
            "# HELP {} {}\n# TYPE {} {}",
            f.name, f.help, f.name, f.kind
        );
        for x in f.samples {
            let _ = writeln!(out, "{}{} {}", x.name, labels(&x.labels), x.value);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::FAMILIES;

    #[test]
    fn the_families_written_are_the_ones_listed() {
        let mut s = Series::new(vec![("run".into(), "r1".into())]);
        s.start("s", &["r".to_string()]);
        let typed: Vec<(String, String)> = render(&s)
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split_once(' '))
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        let listed: Vec<(String, String)> = FAMILIES
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        assert_eq!(typed, listed);
    }

    #[test]
    fn hostile_names_stay_inside_their_label() {
        let mut s = Series::new(vec![("run".into(), "r1".into())]);
        s.start("a\"b\\c\nx=\"y", &["get \"x\"".to_string()]);
        let text = render(&s);
        let line = text
            .lines()
            .find(|l| l.starts_with("brink_requests_total{"))
            .expect("a sample");
        assert_eq!(
            line,
            r#"brink_requests_total{run="r1",scenario="a\"b\\c\nx=\"y",request="get \"x\""} 0"#
        );
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("brink_requests_total"))
                .count(),
            1
        );
    }
}
