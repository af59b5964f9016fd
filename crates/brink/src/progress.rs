//! The live progress line on stderr, redrawn every second when stderr is a terminal:
//! elapsed/total, req/s in the last second, p99 so far and errors so far.

use engine::SecondView;
use report::{fmt_count, fmt_ms};
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Prints one line per second; silent when stderr is not a terminal.
pub struct Progress {
    enabled: bool,
    total: Option<Duration>,
    drawn: bool,
}

impl Progress {
    /// A progress line for a run of `total` (unknown for `-n` runs).
    pub fn new(total: Option<Duration>) -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            total,
            drawn: false,
        }
    }

    /// A new run starts that lasts `total` (unknown for `-n` runs).
    pub fn start(&mut self, total: Option<Duration>) {
        self.total = total;
    }

    /// Clears the line before the summary is printed.
    pub fn finish(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
            self.drawn = false;
        }
    }
}

impl Progress {
    /// Draws the line for one finished second.
    pub fn draw(&mut self, view: &SecondView) {
        let (s, totals) = (view.second, view.totals);
        if !self.enabled {
            return;
        }
        let elapsed = s.t + 1;
        let of = self
            .total
            .map_or(String::new(), |t| format!("/{}s", t.as_secs_f64().ceil()));
        let all = &totals.all;
        let p99 = if all.corrected.is_empty() {
            0.0
        } else {
            all.corrected.value_at_quantile(0.99) as f64 / 1000.0
        };
        eprint!(
            "\r\x1b[2K  [{elapsed}s{of}]  {} req/s  p99 {}  requests {}  errors {}",
            fmt_count(s.requests),
            fmt_ms(p99),
            fmt_count(all.requests),
            fmt_count(all.errors())
        );
        let _ = std::io::stderr().flush();
        self.drawn = true;
    }
}
