//! Where a run broke: for an objective judged over a sliding window (`p95 < 1s over 30s`), the
//! first window in which it failed, the load the schedule asked for then, what the service
//! answered, and what the server's CPU says about why. On a ramp this is the answer to "how
//! much can it take" without a separate search; on a flat load it says when, not where.

use crate::find::By;
use crate::fmt::{fmt_rate, observed_value};
use serde::{Deserialize, Serialize};

/// The first failing window of the objective that failed first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BrokeJson {
    /// The objective, as written.
    pub slo: String,
    /// Seconds from the scenario's start to the end of the first failing window, and its length.
    pub at_s: u64,
    pub window_s: u64,
    /// The schedule's mean level over that window, in `by`'s unit.
    pub level: f64,
    pub by: By,
    /// Successful responses per second over the window.
    pub ok_rps: f64,
    /// The server's CPU (percent of one core) at its highest in the window, when observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_percent: Option<f64>,
    /// What that CPU says: `true` CPU-bound, `false` not, absent when it cannot tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_bound: Option<bool>,
    /// The server's threads' wait for a CPU (percent of one core) at its highest in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait_percent: Option<f64>,
}

/// A server's wait for a CPU (percent of one core) from which the host counts as short of CPU.
pub const STARVED_WAIT_PERCENT: f64 = 20.0;

impl BrokeJson {
    /// The finding in words: `'p95 < 1s over 30s' first failed in the 30 s up to 4m12s, at
    /// 63/s (61 ok/s); server CPU 97%: CPU-bound ...`.
    pub fn describe(&self) -> String {
        let mut t = format!(
            "'{}' first failed in the {} s up to {}, at {} ({} ok/s)",
            self.slo,
            self.window_s,
            clock(self.at_s),
            self.by.describe(self.level),
            fmt_rate(self.ok_rps)
        );
        if let Some(c) = self.cpu_percent {
            t.push_str(&format!(
                "; server CPU {}",
                observed_value(model::metrics::CPU, c)
            ));
        }
        t.push_str(match self.cpu_bound {
            Some(true) => ": CPU-bound: the service needs more CPU (or less work per request) to go further",
            Some(false) => ": not CPU-bound: the limit is elsewhere: pools, locks, connection handling, a dependency or the network path",
            None => "",
        });
        if let Some(w) = self.cpu_wait_percent.filter(|w| *w >= STARVED_WAIT_PERCENT) {
            t.push_str(&format!(
                "; its threads waited for a CPU {w:.0}% of a core's time: this host is short of CPU"
            ));
        }
        t
    }
}

/// `45s`, `4m12s`.
fn clock(s: u64) -> String {
    if s < 60 {
        format!("{s}s")
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_a_sentence() {
        let mut b = BrokeJson {
            slo: "p95 < 1s over 30s".into(),
            at_s: 252,
            window_s: 30,
            level: 63.0,
            by: By::Rate,
            ok_rps: 61.2,
            cpu_percent: Some(97.0),
            cpu_bound: Some(true),
            cpu_wait_percent: Some(3.0),
        };
        assert_eq!(
            b.describe(),
            "'p95 < 1s over 30s' first failed in the 30 s up to 4m12s, at 63.0/s (61.2 ok/s); server CPU 97%: CPU-bound: the service needs more CPU (or less work per request) to go further"
        );
        (b.cpu_percent, b.cpu_bound, b.by, b.level, b.at_s) =
            (None, None, By::Connections, 16.0, 45);
        assert_eq!(
            b.describe(),
            "'p95 < 1s over 30s' first failed in the 30 s up to 45s, at 16 connections (61.2 ok/s)"
        );
        b.cpu_wait_percent = Some(66.0);
        assert!(b.describe().ends_with(
            "(61.2 ok/s); its threads waited for a CPU 66% of a core's time: this host is short of CPU"
        ));
    }
}
