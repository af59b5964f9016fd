//! How numbers read in every table and summary: milliseconds, counts with separators, rates,
//! byte sizes and observed server figures. One formatter per kind of number.

/// Milliseconds with a precision that suits the magnitude: `0.57ms`, `117ms`, `1.25s`.
pub fn fmt_ms(ms: f64) -> String {
    if ms >= 10_000.0 {
        format!("{:.1}s", ms / 1000.0)
    } else if ms >= 1000.0 {
        format!("{:.2}s", ms / 1000.0)
    } else if ms >= 100.0 {
        format!("{ms:.0}ms")
    } else if ms >= 10.0 {
        format!("{ms:.1}ms")
    } else {
        format!("{ms:.2}ms")
    }
}

/// A period as it was likely written: `1s`, `1.5s`, `200ms`, `250µs` (a pace, not a
/// measurement: no padding digits).
pub fn fmt_period(ms: f64) -> String {
    let trim = |v: f64| {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if ms >= 1000.0 {
        format!("{}s", trim(ms / 1000.0))
    } else if ms >= 1.0 {
        format!("{}ms", trim(ms))
    } else {
        format!("{}µs", trim(ms * 1000.0))
    }
}

/// An integer with thousands separators: `1,234,567`.
pub fn fmt_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An objective's margin (headroom as a fraction of its target): `+61%`, `-24%`, to
/// `decimals` places. A result beyond ten times its target reads as that multiple (`500x
/// the target`), not as a percentage of five digits.
pub fn fmt_margin(m: f64, decimals: usize) -> String {
    if m < -9.0 {
        format!("{:.0}x the target", 1.0 - m)
    } else {
        format!("{:+.*}%", decimals, m * 100.0)
    }
}

/// A rate: `1,234` when large, `12.5` when small.
pub fn fmt_rate(r: f64) -> String {
    if r >= 100.0 {
        fmt_count(r.round() as u64)
    } else {
        format!("{r:.1}")
    }
}

pub fn fmt_bytes(n: u64) -> String {
    let n = n as f64;
    match n {
        n if n >= 1024.0 * 1024.0 * 1024.0 => format!("{:.2} GiB", n / 1024.0 / 1024.0 / 1024.0),
        n if n >= 1024.0 * 1024.0 => format!("{:.1} MiB", n / 1024.0 / 1024.0),
        n if n >= 1024.0 => format!("{:.1} KiB", n / 1024.0),
        n => format!("{n} B"),
    }
}

/// An observed figure in its unit, the same in the summary and the find table: CPU as a
/// percentage, memory in MB, whole counts with separators, other values to one decimal.
pub fn observed_value(name: &str, v: f64) -> String {
    if model::metrics::is_percent(name) {
        format!("{v:.0}%")
    } else if name.ends_with("rss") {
        format!("{:.1} MB", v / 1e6)
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        let sign = if v < 0.0 { "-" } else { "" };
        format!("{sign}{}", fmt_count(v.abs() as u64))
    } else {
        format!("{:.1}", v)
    }
}

/// `100%` only when nothing failed; otherwise rounded down to two decimals, so a check that
/// failed once in a million never reads as 100%.
pub fn pass_share(passed: u64, runs: u64) -> String {
    if runs == 0 {
        return "-".into();
    }
    if passed == runs {
        return "100%".into();
    }
    let p = (passed as f64 * 10_000.0 / runs as f64).floor() / 100.0;
    format!("{p:.2}%")
}

#[cfg(test)]
mod tests {
    use super::{fmt_margin, fmt_period};

    #[test]
    fn periods_read_as_written() {
        let cases = [
            (1000.0, "1s"),
            (1500.0, "1.5s"),
            (200.0, "200ms"),
            (0.25, "250µs"),
            (0.001, "1µs"),
        ];
        for (ms, text) in cases {
            assert_eq!(fmt_period(ms), text);
        }
    }

    #[test]
    fn margins_read_as_percent_until_ten_times_the_target() {
        assert_eq!(fmt_margin(0.61, 0), "+61%");
        assert_eq!(fmt_margin(-0.244, 1), "-24.4%");
        assert_eq!(fmt_margin(-8.0, 0), "-800%");
        // closed < 0.1% with 50% closed: 500 times the target.
        assert_eq!(fmt_margin((0.001 - 0.5) / 0.001, 0), "500x the target");
    }
}
