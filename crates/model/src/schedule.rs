//! Pacing maths, pure and clock-free. A [`Curve`] is a piecewise-linear function of time built
//! from segments; the same shape describes both load models:
//!
//! * **open model** (rate): the curve is a rate r(t) in requests per second. The number of
//!   requests due by time t is the area under the curve, N(t) = ∫₀ᵗ r(s) ds. Request `i`
//!   (0-based) is due at the time t where N(t) = i. Inside a segment that ramps linearly from r0
//!   to r1 over D seconds, with x = i - N(segment start) requests into it, solving
//!   r0·τ + (r1 - r0)·τ²/(2D) = x for τ gives τ = 2x / (r0 + √(r0² + 2x(r1 - r0)/D)), a form
//!   that stays exact when r1 = r0 (τ = x/r0) and when r0 = 0 (τ = √(2xD/r1)).
//! * **closed model** (connections): the curve is a connection count c(t), rounded to the
//!   nearest whole connection; workers add or retire connections to follow it.
//!
//! A stage ramps from the previous target (0 for the first) to its own, so `--stages
//! 30s:100/s,1m:100/s` ramps up for 30 s and holds for a minute. `--rate R` alone is a single flat
//! segment that never ends unless `-d` or `-n` bound it.

use std::time::Duration;

/// One linear piece of a [`Curve`]: from `from` to `to` over `duration` (may be infinite).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// Seconds; `f64::INFINITY` for a flat segment without end.
    pub secs: f64,
    pub from: f64,
    pub to: f64,
}

/// A piecewise-linear function of time: a rate (open model) or a connection count (closed).
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    segments: Vec<Segment>,
}

/// What the pacer says to do next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next {
    /// The request is due now (or overdue by the given lag).
    Now { lag: Duration },
    /// The request is due after this wait.
    Wait(Duration),
    /// The schedule is over.
    Stop,
}

impl Curve {
    /// A flat curve at `value`, for `duration` or forever.
    pub fn flat(value: f64, duration: Option<Duration>) -> Curve {
        let secs = duration.map_or(f64::INFINITY, |d| d.as_secs_f64());
        Curve {
            segments: vec![Segment {
                secs,
                from: value,
                to: value,
            }],
        }
    }

    /// Stages `(duration, target)`, each ramping from the previous target (0 for the first).
    pub fn stages(stages: &[(Duration, f64)]) -> Curve {
        let mut prev = 0.0;
        let segments = stages
            .iter()
            .map(|&(d, target)| {
                let s = Segment {
                    secs: d.as_secs_f64(),
                    from: prev,
                    to: target,
                };
                prev = target;
                s
            })
            .collect();
        Curve { segments }
    }

    /// The segments, in order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Total length, `None` when the curve never ends.
    pub fn end(&self) -> Option<Duration> {
        let secs: f64 = self.segments.iter().map(|s| s.secs).sum();
        secs.is_finite().then(|| Duration::from_secs_f64(secs))
    }

    /// Cuts the curve at `limit` (used when `-d` bounds a rate or staged profile).
    pub fn truncated(&self, limit: Duration) -> Curve {
        let mut left = limit.as_secs_f64();
        let mut segments = Vec::new();
        for s in &self.segments {
            if left <= 0.0 {
                break;
            }
            if s.secs <= left {
                segments.push(*s);
                left -= s.secs;
            } else {
                let to = s.from + (s.to - s.from) * (left / s.secs);
                let to = if s.secs.is_infinite() { s.to } else { to };
                segments.push(Segment {
                    secs: left,
                    from: s.from,
                    to,
                });
                left = 0.0;
            }
        }
        Curve { segments }
    }

    /// The highest value the curve reaches.
    pub fn peak(&self) -> f64 {
        self.segments
            .iter()
            .map(|s| s.from.max(s.to))
            .fold(0.0, f64::max)
    }

    /// Value at `t`, `None` once the curve has ended.
    pub fn value_at(&self, t: Duration) -> Option<f64> {
        let mut t = t.as_secs_f64();
        for s in &self.segments {
            if t < s.secs {
                return Some(if s.secs.is_infinite() {
                    s.from
                } else {
                    s.from + (s.to - s.from) * t / s.secs
                });
            }
            t -= s.secs;
        }
        None
    }

    /// Area under the curve up to its end (requests in a rate schedule); infinite if unbounded.
    pub fn total(&self) -> f64 {
        self.segments
            .iter()
            .map(|s| (s.from + s.to) / 2.0 * s.secs)
            .sum()
    }

    /// Open model: when request `i` (0-based) is due, `None` if the schedule ends before it.
    pub fn time_of(&self, i: u64) -> Option<Duration> {
        let mut x = i as f64;
        let mut start = 0.0;
        for s in &self.segments {
            let area = (s.from + s.to) / 2.0 * s.secs;
            if x < area {
                let tau = if x == 0.0 {
                    0.0
                } else if s.secs.is_infinite() {
                    x / s.from
                } else {
                    let disc = s.from * s.from + 2.0 * x * (s.to - s.from) / s.secs;
                    2.0 * x / (s.from + disc.max(0.0).sqrt())
                };
                return Some(Duration::from_secs_f64(start + tau.min(s.secs)));
            }
            x -= area;
            start += s.secs;
        }
        None
    }

    /// Open model pacer: what to do for request number `sent` when `elapsed` has passed.
    pub fn next(&self, elapsed: Duration, sent: u64) -> Next {
        match self.time_of(sent) {
            None => Next::Stop,
            Some(due) if due <= elapsed => Next::Now { lag: elapsed - due },
            Some(due) => Next::Wait(due - elapsed),
        }
    }
}

/// How load is generated.
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// Closed model: the curve is the number of connections, each sending its next request when
    /// the previous answer arrives.
    Closed { connections: Curve },
    /// Open model: the curve is the request rate; `pool` connections at most are in flight.
    Open { rate: Curve, pool: usize },
}

impl Load {
    /// The schedule's length, `None` when only `-n` (or an interrupt) ends the run.
    pub fn end(&self) -> Option<Duration> {
        match self {
            Load::Closed { connections } => connections.end(),
            Load::Open { rate, .. } => rate.end(),
        }
    }

    /// The most connections this load can hold open at once.
    pub fn max_connections(&self) -> usize {
        match self {
            Load::Closed { connections } => connections.peak().round() as usize,
            Load::Open { pool, .. } => *pool,
        }
    }

    /// Target level (connections or req/s) at `t`.
    pub fn level_at(&self, t: Duration) -> Option<f64> {
        match self {
            Load::Closed { connections } => connections.value_at(t),
            Load::Open { rate, .. } => rate.value_at(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }
    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }
    fn close(a: Duration, b: Duration) -> bool {
        a.abs_diff(b) < Duration::from_micros(2)
    }

    #[test]
    fn pacer_table() {
        let r1000 = Curve::flat(1000.0, None);
        let r1000_2s = Curve::flat(1000.0, Some(secs(2)));
        let cases: &[(&Curve, Duration, u64, Next, &str)] = &[
            (
                &r1000,
                ms(0),
                0,
                Next::Now { lag: ms(0) },
                "the first request is due at once",
            ),
            (
                &r1000,
                ms(1),
                2,
                Next::Wait(ms(1)),
                "1000/s, 2 sent, 1 ms elapsed: wait 1 ms",
            ),
            (
                &r1000,
                ms(5),
                2,
                Next::Now { lag: ms(3) },
                "behind schedule: due now, 3 ms late",
            ),
            (
                &r1000,
                ms(0),
                1_000_000,
                Next::Wait(secs(1000)),
                "an unbounded rate never stops",
            ),
            (
                &r1000_2s,
                ms(1999),
                1999,
                Next::Now { lag: ms(0) },
                "the last request of 2 s",
            ),
            (
                &r1000_2s,
                ms(1999),
                2000,
                Next::Stop,
                "2 s at 1000/s is exactly 2000 requests",
            ),
        ];
        for (curve, elapsed, sent, want, why) in cases {
            let got = curve.next(*elapsed, *sent);
            let ok = match (got, *want) {
                (Next::Now { lag: a }, Next::Now { lag: b }) | (Next::Wait(a), Next::Wait(b)) => {
                    close(a, b)
                }
                (a, b) => a == b,
            };
            assert!(ok, "{why}: got {got:?}, want {want:?}");
        }
    }

    #[test]
    fn ramp_from_zero_follows_the_area() {
        // 0 -> 100/s over 10 s: N(t) = 5 t², so N(10) = 500 and request 125 is due at t = 5 s.
        let c = Curve::stages(&[(secs(10), 100.0)]);
        assert_eq!(c.total(), 500.0);
        assert!(close(c.time_of(125).unwrap(), secs(5)));
        assert!(close(c.time_of(0).unwrap(), ms(0)));
        assert_eq!(c.time_of(500), None, "500 requests fill the stage exactly");
    }

    #[test]
    fn ramp_hold_spike_counts_add_up() {
        // 10 s ramp to 100/s (500), hold 10 s (1000), jump to 1000/s over 1 s (550), hold 2 s (2000).
        let c = Curve::stages(&[
            (secs(10), 100.0),
            (secs(10), 100.0),
            (secs(1), 1000.0),
            (secs(2), 1000.0),
        ]);
        assert_eq!(c.total(), 4050.0);
        assert!(
            close(c.time_of(500).unwrap(), secs(10)),
            "the hold starts at 10 s"
        );
        assert!(
            close(c.time_of(1000).unwrap(), secs(15)),
            "100/s: 500 more by 15 s"
        );
        assert!(
            close(c.time_of(2050).unwrap(), secs(21)),
            "the spike ends at 21 s"
        );
        assert!(
            close(c.time_of(3050).unwrap(), secs(22)),
            "1000/s: 1000 more by 22 s"
        );
        assert_eq!(c.time_of(4050), None);
    }

    #[test]
    fn ramp_down_is_monotonic_and_ends() {
        let c = Curve::stages(&[(secs(1), 1000.0), (secs(1), 0.0)]);
        assert_eq!(c.total(), 1000.0);
        let mut last = Duration::ZERO;
        for i in 0..1000 {
            let t = c.time_of(i).unwrap();
            assert!(t >= last, "request {i} at {t:?} before {last:?}");
            last = t;
        }
        assert!(last <= secs(2));
    }

    #[test]
    fn connection_curve_values() {
        let c = Curve::stages(&[(secs(10), 50.0), (secs(5), 50.0), (secs(10), 0.0)]);
        assert_eq!(c.value_at(secs(0)), Some(0.0));
        assert_eq!(c.value_at(secs(5)), Some(25.0));
        assert_eq!(c.value_at(secs(12)), Some(50.0));
        assert_eq!(c.value_at(secs(20)), Some(25.0));
        assert_eq!(c.value_at(secs(25)), None);
        assert_eq!(c.peak(), 50.0);
        assert_eq!(c.end(), Some(secs(25)));
    }

    #[test]
    fn truncation_cuts_inside_a_ramp() {
        let c = Curve::stages(&[(secs(10), 100.0)]).truncated(secs(5));
        assert_eq!(c.end(), Some(secs(5)));
        assert_eq!(c.total(), 125.0);
        let f = Curve::flat(10.0, None).truncated(secs(3));
        assert_eq!(f.total(), 30.0);
    }
}

/// Which model a run's load follows, as results and reports name it (`closed`, `open`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadModel {
    /// Connections (or virtual users) each send their next request when an answer arrives.
    Closed,
    /// Requests are due at intended times whatever the answers do.
    Open,
}

impl LoadModel {
    /// `closed` or `open`, as [`LoadModel::as_str`] writes it.
    pub fn parse(word: &str) -> Option<LoadModel> {
        [LoadModel::Closed, LoadModel::Open]
            .into_iter()
            .find(|m| m.as_str() == word)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LoadModel::Closed => "closed",
            LoadModel::Open => "open",
        }
    }
}

impl std::fmt::Display for LoadModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Load {
    /// The model this load follows.
    pub fn model(&self) -> LoadModel {
        match self {
            Load::Closed { .. } => LoadModel::Closed,
            Load::Open { .. } => LoadModel::Open,
        }
    }
}
