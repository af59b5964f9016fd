//! The Prometheus text exposition format, read just enough to pick series: `name{labels} value`
//! lines and `# TYPE name kind` comments. A series spec is a metric name, optionally with label
//! matchers (`pgxpool_acquired_conns{db="main"}`); every matching line is summed.

use std::collections::HashMap;

/// One scrape, parsed: (name, labels text, value) per line, and the declared types.
#[derive(Debug, Default)]
pub struct Scrape {
    lines: Vec<(String, String, f64)>,
    types: HashMap<String, String>,
}

impl Scrape {
    pub fn parse(text: &str) -> Scrape {
        let mut s = Scrape::default();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut w = rest.split_whitespace();
                if let (Some(n), Some(k)) = (w.next(), w.next()) {
                    s.types.insert(n.to_string(), k.to_string());
                }
                continue;
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (series, rest) = match line.find('{') {
                Some(open) => match line[open..].find('}') {
                    Some(close) => (&line[..open + close + 1], &line[open + close + 1..]),
                    None => continue,
                },
                None => match line.split_once(char::is_whitespace) {
                    Some((n, r)) => (n, r),
                    None => continue,
                },
            };
            let Some(value) = rest
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
            else {
                continue;
            };
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n, l.trim_end_matches('}')),
                None => (series, ""),
            };
            s.lines.push((name.to_string(), labels.to_string(), value));
        }
        s
    }

    /// The sum of the series matching `spec`, `None` if none does.
    pub fn value(&self, spec: &str) -> Option<f64> {
        let (name, want) = match spec.split_once('{') {
            Some((n, l)) => (n, l.trim_end_matches('}')),
            None => (spec, ""),
        };
        let matchers: Vec<&str> = want
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .collect();
        let mut found = None;
        for (n, labels, v) in &self.lines {
            if n == name
                && matchers
                    .iter()
                    .all(|m| labels.split(',').any(|l| l.trim() == *m))
            {
                *found.get_or_insert(0.0) += v;
            }
        }
        found
    }

    /// Whether `spec`'s metric is a counter (declared, or named `*_total`).
    pub fn is_counter(&self, spec: &str) -> bool {
        let name = spec.split('{').next().unwrap_or(spec);
        self.types.get(name).is_some_and(|k| k == "counter") || name.ends_with("_total")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP process_cpu_seconds_total CPU\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n\
# TYPE pgxpool_acquired_conns gauge\npgxpool_acquired_conns{db=\"main\"} 7\npgxpool_acquired_conns{db=\"audit\"} 2\n\
go_goroutines 61 1700000000000\nweird{unclosed 3\n";

    #[test]
    fn picks_and_sums_series() {
        let s = Scrape::parse(TEXT);
        assert_eq!(s.value("process_cpu_seconds_total"), Some(12.5));
        assert_eq!(s.value("pgxpool_acquired_conns"), Some(9.0));
        assert_eq!(s.value("pgxpool_acquired_conns{db=\"main\"}"), Some(7.0));
        assert_eq!(
            s.value("go_goroutines"),
            Some(61.0),
            "a timestamp after the value is ignored"
        );
        assert_eq!(s.value("nope"), None);
        assert!(s.is_counter("process_cpu_seconds_total"));
        assert!(!s.is_counter("pgxpool_acquired_conns"));
    }
}
