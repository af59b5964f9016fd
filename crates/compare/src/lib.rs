//! Before and after: whether a change made a service slower, faster, or left it as it was, with
//! a verdict that knows noise. Used by `brink compare`; depends on results only, so a web view
//! of the history can call it too.
//!
//! # Method
//!
//! 1. **Comparable first** ([`check`]): same target and method, same load model and level
//!    (connections, rate or stages), durations within 10%; for searches, the same dimension.
//! 2. **Steady state only**: per scenario, each file's first 10% (at least 1 s; at least 5 s
//!    for runs of 30 s or more) and its last partial second are left out; several files on a side are put one after another.
//! 3. **Point estimates** come from merging the steady seconds' histograms exactly (latency from
//!    the intended start) and adding their counts (successes per second, error rate).
//! 4. **Noise** is measured by a circular block bootstrap over seconds: a resample of a side
//!    draws blocks of 5 consecutive seconds (wrapping around) at random starts until it has as
//!    many seconds as the side, merges their histograms and counts, and computes the same
//!    figures. Blocks keep the second-to-second correlation of a real run (a slow spell lasts
//!    several seconds) that resampling single seconds would hide. Each side is resampled
//!    independently 2,000 times with a fixed seed (the output is reproducible), and the change
//!    after/before - 1 (for the error rate, after - before in percentage points) of each
//!    resample pair gives the 2.5% and 97.5% quantiles: a 95% interval of the change.
//! 5. **Verdict** per metric with a tolerance t (defaults: p50, p90 and mean 5%; p95, p99 and
//!    p99.9 10%; throughput 5%; error rate 0.1 percentage point), in the direction that is
//!    worse for users (slower, less throughput, more errors): **regressed** when the whole
//!    interval is worse than t, **improved** when the whole interval is better than t,
//!    **unchanged** when it lies within plus or minus t, **inconclusive** otherwise (run
//!    longer). A latency change smaller than two steps of the histograms' resolution (0.2% of
//!    the figure, at least 2 µs) is never a regression or an improvement; a clear change of a
//!    sub-millisecond service is (0.07 ms to 0.8 ms regressed).
//!
//!    **Short runs** (a wrk-style 10 s before and after): with fewer than 40 steady seconds
//!    on a side, single seconds are resampled (blocks of one) and the interval is widened
//!    around the change by the small-sample factor t(0.975, n-1) / 1.96 x sqrt(n / (n-1)),
//!    n the fewer seconds of the two sides: the wider interval is the honest price of few
//!    seconds, and a clear change (a 20x slower p99) still reads regressed. Below 3 steady
//!    seconds on a side the verdict is **insufficient data**.
//!
//!    **A limited generator**: a run whose brink said it limited it (its workers busy or
//!    waiting for a CPU) looks worse than the service, never better: a regression when the
//!    after side was limited, or an improvement when the before side was, becomes **not the
//!    service's** and decides nothing; the note names the side. A regression against a
//!    limited before side stands (brink's limit cannot explain it).
//! 6. **Exit**: the aggregate p50, p90, p99, mean, error rate and throughput of each scenario
//!    decide (any of them regressed: 1; `--decide` chooses others): the most common regression
//!    is everything a little slower, and a run's p99 interval is often too wide to call it,
//!    while its p50's is not. The other rows, per-request rows (whole run, no resampling),
//!    server figures and connect times inform. For capacity searches, the maximum sustainable level
//!    decides: a search only knows it between its last pass and first failure, so it regressed
//!    when the after search failed at or below the level the before search passed, and
//!    improved in the mirror case.

mod check;
mod render;
mod rows;
mod steady;

pub use check::check;
pub use render::{render, Format};
pub use rows::compare;

use serde::Serialize;

/// Steady seconds per side from which blocks of seconds are resampled as they are.
pub const MIN_SECONDS: usize = 40;
/// Fewest steady seconds per side for any verdict (fewer: insufficient data).
pub const FEW_SECONDS: usize = 3;
/// Resamples per side.
pub const RESAMPLES: usize = 2000;
/// Seconds per resampled block.
pub const BLOCK: usize = 5;
/// The fixed seed of the resampling.
pub const SEED: u64 = 0x6272_696e_6b21;

/// What each verdict metric may change by before it counts (fractions; the error rate in
/// absolute share, 0.001 = 0.1 percentage point).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tolerances {
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub mean: f64,
    pub throughput: f64,
    pub errors: f64,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            p50: 0.05,
            p90: 0.05,
            p95: 0.10,
            p99: 0.10,
            p999: 0.10,
            mean: 0.05,
            throughput: 0.05,
            errors: 0.001,
        }
    }
}

impl Tolerances {
    /// Applies `--tolerance NAME=PCT` (`p99=5%`, `throughput=3%`, `errors=0.5%`; the error
    /// rate's is in percentage points).
    pub fn set(&mut self, spec: &str) -> Result<(), String> {
        let (name, value) = spec
            .split_once('=')
            .ok_or_else(|| format!("--tolerance '{spec}': expected NAME=PERCENT, e.g. p99=5%"))?;
        let value = value.trim();
        let pct: f64 = value
            .strip_suffix('%')
            .unwrap_or(value)
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite() && (0.0..=1000.0).contains(p))
            .ok_or_else(|| {
                format!("--tolerance '{spec}': '{value}' is not a percentage from 0 to 1000")
            })?;
        let slot = match name.trim() {
            "p50" => &mut self.p50,
            "p90" => &mut self.p90,
            "p95" => &mut self.p95,
            "p99" => &mut self.p99,
            "p99.9" | "p999" => &mut self.p999,
            "mean" => &mut self.mean,
            "throughput" | "rps" => &mut self.throughput,
            "errors" => &mut self.errors,
            other => {
                return Err(format!(
                "--tolerance '{spec}': unknown metric '{other}' (p50, p90, p95, p99, p99.9, mean, throughput, errors)"
            ))
            }
        };
        *slot = pct / 100.0;
        Ok(())
    }
}

/// Which verdict metrics decide the exit code (`--decide p99,errors`), by the names
/// `--tolerance` takes.
#[derive(Clone, Debug, PartialEq)]
pub struct Decide(Vec<&'static str>);

/// Every verdict metric: its name on the command line, and its row's.
const DECIDABLE: [(&str, &str); 8] = [
    ("p50", "p50"),
    ("p90", "p90"),
    ("p95", "p95"),
    ("p99", "p99"),
    ("p99.9", "p99.9"),
    ("mean", "mean"),
    ("throughput", "ok req/s"),
    ("errors", "error rate"),
];

impl Default for Decide {
    fn default() -> Self {
        Decide(vec!["ok req/s", "error rate", "p50", "p90", "p99", "mean"])
    }
}

impl Decide {
    /// `--decide p50,p99,errors,throughput` (also `p999`, `rps`).
    pub fn parse(spec: &str) -> Result<Decide, String> {
        let mut rows = Vec::new();
        for name in spec.split(',').map(str::trim) {
            let name = match name {
                "p999" => "p99.9",
                "rps" => "throughput",
                n => n,
            };
            let Some(&(_, row)) = DECIDABLE.iter().find(|(n, _)| *n == name) else {
                return Err(format!(
                    "--decide '{spec}': unknown metric '{name}' (p50, p90, p95, p99, p99.9, mean, throughput, errors)"
                ));
            };
            if !rows.contains(&row) {
                rows.push(row);
            }
        }
        Ok(Decide(rows))
    }

    /// Whether the row of metric `row` decides.
    pub fn has(&self, row: &str) -> bool {
        self.0.contains(&row)
    }
}

/// What a row's figures say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Regressed,
    Improved,
    Unchanged,
    Inconclusive,
    InsufficientData,
    /// A side's generator was short of CPU: the difference may be brink's, not the service's.
    GeneratorLimited,
    /// Shown for context; no verdict.
    Info,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
            Verdict::Inconclusive => "inconclusive (run longer)",
            Verdict::InsufficientData => "insufficient data",
            Verdict::GeneratorLimited => "not the service's (brink was limited)",
            Verdict::Info => "",
        }
    }
}

/// How a row's values read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Ms,
    PerSecond,
    /// 0..1, shown in %.
    Share,
    Count,
    /// A search level (connections or req/s).
    Level,
    /// A server figure, shown as observed.
    Observed,
}

/// One line of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub scenario: String,
    /// A request of a mix or flow; `None` for the scenario as a whole.
    pub request: Option<String>,
    pub metric: String,
    pub unit: Unit,
    pub before: Option<f64>,
    pub after: Option<f64>,
    /// after/before - 1, or for the error rate after - before (share).
    pub change: Option<f64>,
    /// The change in words: `27.5% slower`, `1.8x throughput`.
    pub change_text: String,
    /// 95% interval of `change`.
    pub interval: Option<(f64, f64)>,
    pub verdict: Verdict,
    /// Whether this row decides the exit code.
    pub decides: bool,
}

/// The schema identifier of a comparison written as JSON.
pub const SCHEMA: &str = "brink.compare/v1";

/// A whole comparison (`schemas/brink.compare.v1.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub schema: &'static str,
    pub before: Vec<String>,
    pub after: Vec<String>,
    /// Steady seconds per scenario: (name, before, after).
    pub steady_seconds: Vec<(String, usize, usize)>,
    pub tolerances: Tolerances,
    pub rows: Vec<Row>,
    /// Differences that would have made the runs incomparable (`--allow-mismatch`).
    pub mismatches: Vec<String>,
    pub notes: Vec<String>,
    /// A deciding row regressed.
    pub regressed: bool,
}
