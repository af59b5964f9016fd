//! Durations, rates and stage lists. Every error names the offending text.

use std::time::Duration;

/// A value that could not be parsed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum UnitError {
    #[error("invalid duration '{0}': {1} (examples: 500ms, 30s, 2m, 1m30s, 1h)")]
    Duration(String, &'static str),
    #[error("invalid rate '{0}': {1} (examples: 100, 100/s, 6000/m)")]
    Rate(String, &'static str),
    #[error("invalid stage '{0}': {1} (expected DURATION:TARGET, e.g. 30s:100/s or 1m:50)")]
    Stage(String, String),
    #[error("stages mix rates (/s) and connection counts: {0}")]
    MixedStages(String),
    #[error("invalid size '{0}': {1} (examples: 64MiB, 1GiB, 500KB)")]
    Size(String, String),
    #[error("invalid status '{0}' in '{1}' (expected 100-599)")]
    Status(String, String),
}

/// Parses a duration made of number+unit parts (`ns`, `us`, `ms`, `s`, `m`, `h`); a bare
/// number means seconds.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let err = |why| UnitError::Duration(text.to_string(), why);
    let s = text.trim();
    if s.is_empty() {
        return Err(err("empty"));
    }
    if s.starts_with('-') {
        return Err(err("must not be negative"));
    }
    if let Ok(secs) = s.parse::<f64>() {
        return finite_secs(secs).ok_or_else(|| err("out of range (at most 365 days)"));
    }
    let mut total = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(err("expected a number"));
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| err("bad number"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" | "sec" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "" => return Err(err("missing unit after a number")),
            _ => return Err(err("unknown unit")),
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    finite_secs(total).ok_or_else(|| err("out of range (at most 365 days)"))
}

/// Longest duration accepted anywhere (a year): far beyond any load test, and far from the
/// limits of the clock arithmetic.
pub const MAX_DURATION_SECS: f64 = 365.0 * 86_400.0;

fn finite_secs(secs: f64) -> Option<Duration> {
    (secs.is_finite() && (0.0..=MAX_DURATION_SECS).contains(&secs))
        .then(|| Duration::from_secs_f64(secs))
}

/// Parses a rate in requests per second: `R`, `R/s`, `R/m` (per minute) or `R/h`.
pub fn parse_rate(text: &str) -> Result<f64, UnitError> {
    let err = |why| UnitError::Rate(text.to_string(), why);
    let s = text.trim();
    let (num, per) = match s.split_once('/') {
        Some((n, unit)) => {
            // `100/s`, and vegeta's `100/1s` or `300/5m`: a count per a whole period.
            let unit = unit.trim();
            let digits = unit
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(unit.len());
            let (count, unit) = unit.split_at(digits);
            let count: f64 = if count.is_empty() {
                1.0
            } else {
                count.parse().map_err(|_| err("bad period after '/'"))?
            };
            let per = match unit {
                "s" | "sec" => 1.0,
                "m" | "min" => 60.0,
                "h" => 3600.0,
                _ => return Err(err("unknown unit after '/'")),
            };
            if count <= 0.0 {
                return Err(err("the period after '/' must be longer than zero"));
            }
            (n, per * count)
        }
        None => (s, 1.0),
    };
    let n: f64 = num.trim().parse().map_err(|_| err("not a number"))?;
    if !n.is_finite() || n < 0.0 {
        return Err(err("must be a non-negative number"));
    }
    Ok(n / per)
}

/// Parses a size in bytes: `65536`, `64KiB`, `64MiB`, `1GiB` (or KB/MB/GB, decimal), from
/// 1 KiB to 16 GiB (a memory limit).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let bytes = parse_bytes(text)?;
    if !(1024..=16 << 30).contains(&bytes) {
        return Err(UnitError::Size(
            text.to_string(),
            "out of range (1KiB to 16GiB)".into(),
        ));
    }
    Ok(bytes)
}

/// Parses any number of bytes, zero included: `0`, `512`, `64KiB`, `1.5MB`.
pub fn parse_bytes(text: &str) -> Result<u64, UnitError> {
    let err = |why: String| UnitError::Size(text.to_string(), why);
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let scale: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "KiB" | "K" => 1024.0,
        "MiB" | "M" => 1024.0 * 1024.0,
        "GiB" | "G" => 1024.0 * 1024.0 * 1024.0,
        "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        other => return Err(err(format!("unknown unit '{other}'"))),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| err("expected a number and a unit".into()))?;
    let bytes = n * scale;
    if !(0.0..=(1u64 << 50) as f64).contains(&bytes) {
        return Err(err("out of range".into()));
    }
    Ok(bytes.round() as u64)
}

/// Most stages a profile may have.
pub const MAX_STAGES: usize = 1000;

/// A stage list: either all rates (open model) or all connection counts (closed model).
#[derive(Clone, Debug, PartialEq)]
pub enum Stages {
    Rate(Vec<(Duration, f64)>),
    Connections(Vec<(Duration, f64)>),
}

/// Parses `DUR:TARGET,...`; targets with `/` are rates, bare numbers are connections.
pub fn parse_stages(text: &str) -> Result<Stages, UnitError> {
    let mut rates = Vec::new();
    let mut conns = Vec::new();
    if text.split(',').count() > MAX_STAGES {
        return Err(UnitError::Stage(
            format!("{} stages", text.split(',').count()),
            format!("at most {MAX_STAGES} stages"),
        ));
    }
    for part in text.split(',') {
        let stage_err = |why: String| UnitError::Stage(part.trim().to_string(), why);
        let (d, t) = part
            .split_once(':')
            .ok_or_else(|| stage_err("missing ':'".into()))?;
        let d = parse_duration(d).map_err(|e| stage_err(e.to_string()))?;
        if d.is_zero() {
            return Err(stage_err("duration must be positive".into()));
        }
        let t = t.trim();
        if t.contains('/') {
            rates.push((d, parse_rate(t).map_err(|e| stage_err(e.to_string()))?));
        } else {
            let n: u32 = t
                .parse()
                .map_err(|_| stage_err(format!("'{t}' is not a whole number of connections")))?;
            conns.push((d, f64::from(n)));
        }
    }
    match (rates.is_empty(), conns.is_empty()) {
        (false, false) => Err(UnitError::MixedStages(text.to_string())),
        (true, _) => Ok(Stages::Connections(conns)),
        (false, true) => Ok(Stages::Rate(rates)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ok = [
            ("60s", 60_000),
            ("2m", 120_000),
            ("1m30s", 90_000),
            ("500ms", 500),
            ("1h", 3_600_000),
            ("1.5s", 1_500),
            ("30", 30_000),
        ];
        for (s, ms) in ok {
            assert_eq!(parse_duration(s), Ok(Duration::from_millis(ms)), "{s}");
        }
        for s in ["", "-5s", "abc", "10x", "5 s", "s", "1e400"] {
            assert!(parse_duration(s).is_err(), "{s} should fail");
        }
        assert!(parse_duration("-1s")
            .unwrap_err()
            .to_string()
            .contains("'-1s'"));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("5000"), Ok(5000.0));
        assert_eq!(parse_rate("100/s"), Ok(100.0));
        assert_eq!(parse_rate("6000/m"), Ok(100.0));
        // vegeta's spelling: a count per a whole period.
        assert_eq!(parse_rate("100/1s"), Ok(100.0));
        assert_eq!(parse_rate("300/5m"), Ok(1.0));
        assert!(parse_rate("100/0s").is_err());
        for s in ["-1", "x/s", "10/d", "", "inf"] {
            assert!(parse_rate(s).is_err(), "{s} should fail");
        }
    }

    #[test]
    fn stages() {
        let s = parse_stages("1m:100/s,10m:100/s,30s:1000/s").unwrap();
        assert_eq!(
            s,
            Stages::Rate(vec![
                (Duration::from_secs(60), 100.0),
                (Duration::from_secs(600), 100.0),
                (Duration::from_secs(30), 1000.0)
            ])
        );
        assert_eq!(
            parse_stages("30s:50,1m:50").unwrap(),
            Stages::Connections(vec![
                (Duration::from_secs(30), 50.0),
                (Duration::from_secs(60), 50.0)
            ])
        );
        assert!(matches!(
            parse_stages("30s:50,1m:100/s"),
            Err(UnitError::MixedStages(_))
        ));
        assert!(parse_stages("30s")
            .unwrap_err()
            .to_string()
            .contains("missing ':'"));
        assert!(parse_stages("0s:10").is_err());
        assert!(parse_stages("5s:-3").is_err());
    }
}
