//! `--trace[=RATIO]`, `--trace-link URL` and a plan's `trace:` become each scenario's
//! [`Tracing`]: the share of requests sampled, and a `baggage` naming the run and the
//! scenario (percent-encoded, so a scenario name cannot break the header).

use crate::cli::LoadArgs;
use crate::exit::Fail;
use engine::workload::trace::Tracing;

/// The tracing of scenario `name`, when `--trace` or the plan's `trace:` asks for it.
pub fn tracing(
    a: &LoadArgs,
    plan_ratio: Option<f64>,
    name: &str,
    run_id: &str,
) -> Result<Option<Tracing>, Fail> {
    if a.trace.is_none() && a.trace_link.is_some() {
        return Err(Fail::input("--trace-link needs --trace"));
    }
    let Some(ratio) = a.trace.or(plan_ratio) else {
        return Ok(None);
    };
    if !(0.0..=1.0).contains(&ratio) {
        return Err(Fail::input(format!(
            "--trace {ratio}: the sampled share is between 0 and 1"
        )));
    }
    if let Some(link) = &a.trace_link {
        if !link.contains("{trace_id}") {
            return Err(Fail::input(format!(
                "--trace-link {link}: put {{trace_id}} where the id goes"
            )));
        }
    }
    Ok(Some(Tracing {
        ratio,
        baggage: format!(
            "brink.run={},brink.scenario={}",
            encode(run_id),
            encode(name)
        ),
        link: a.trace_link.clone(),
    }))
}

/// A baggage value: letters, digits and `-._~` as they are, every other byte as `%XX`.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An id for this run's baggage: the seed and the clock, in hex.
pub fn run_id(seed: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!("{:016x}", seed.rotate_left(17) ^ now)
}

#[cfg(test)]
mod tests {
    #[test]
    fn baggage_values_are_percent_encoded() {
        assert_eq!(
            super::encode("checkout, v2\r\nX: y"),
            "checkout%2C%20v2%0D%0AX%3A%20y"
        );
    }
}
