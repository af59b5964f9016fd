//! The live progress on stderr: elapsed/total (and the grace period once the schedule is
//! over), req/s in the last second, p99 so far and errors so far. On a terminal one line is
//! redrawn every second; elsewhere (a CI log) a plain line is printed every 10 s, as k6 and
//! Gatling do, so a long job shows life. A coordinator in a pod of `k8s run` writes every
//! second's line marked (`logmark`), for the user's terminal to draw. `--quiet` has none.

use merge::SecondView;
use results::fmt::{fmt_count, fmt_ms};
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Seconds between two plain lines when stderr is not a terminal.
const LOG_EVERY: u64 = 10;

/// Prints the progress of each run.
pub struct Progress {
    /// Redraw one line (a terminal), or print a line every [`LOG_EVERY`] seconds.
    live: bool,
    total: Option<Duration>,
    drawn: bool,
    /// When a relayed line was last printed plainly.
    relayed: Option<std::time::Instant>,
    /// Plain lines are not printed (a search's step table shows its progress in a log).
    quiet_in_logs: bool,
    /// A search: (the most steps it can take, what one takes, the steps done so far).
    search: Option<(u32, Duration, u32)>,
}

impl Progress {
    /// Progress for a run of `total` (unknown for `-n` runs).
    pub fn new(total: Option<Duration>) -> Progress {
        Progress {
            live: std::io::stderr().is_terminal() && crate::logmark::get().is_none(),
            total,
            drawn: false,
            relayed: None,
            quiet_in_logs: false,
            search: None,
        }
    }

    /// A search begins that takes at most `most` steps of `per_step` each: in a log its step
    /// table is the progress, so no plain lines; on a terminal the live line says which step
    /// runs and at most how long is left.
    pub fn search_starts(&mut self, most: u32, per_step: Duration) {
        self.quiet_in_logs = true;
        self.search = Some((most, per_step, 0));
    }

    /// A search's step ended.
    pub fn step_done(&mut self) {
        if let Some((_, _, done)) = &mut self.search {
            *done += 1;
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
    /// Shows a line drawn elsewhere (a coordinator in a pod): redrawn on a terminal, else
    /// printed every [`LOG_EVERY`] seconds.
    pub fn relay(&mut self, line: &str) {
        if self.live {
            eprint!("\r\x1b[2K{line}");
            self.drawn = true;
        } else if self
            .relayed
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(LOG_EVERY))
        {
            eprintln!("{line}");
            self.relayed = Some(std::time::Instant::now());
        }
        let _ = std::io::stderr().flush();
    }

    /// Draws the line for one finished second.
    pub fn draw(&mut self, view: &SecondView) {
        let (s, totals) = (view.second, view.totals);
        let elapsed = s.t + 1;
        let mark = crate::logmark::get();
        if !self.live && mark.is_none() && (self.quiet_in_logs || elapsed % LOG_EVERY != 0) {
            return;
        }
        let all = &totals.all;
        let p99 = if all.corrected.is_empty() {
            0.0
        } else {
            all.corrected.value_at_quantile(0.99) as f64 / 1000.0
        };
        let line = format!(
            // The rate is the last second's; the rest are the run's so far.
            "  [{}]  {} req/s (last second)  so far: p99 {}  requests {}  errors {}",
            clock(elapsed, self.total),
            fmt_count(s.requests),
            fmt_ms(p99),
            fmt_count(all.requests),
            fmt_count(all.errors())
        );
        let line = match self.search {
            Some(s) => format!("{line}  {}", search_left(s, elapsed, self.total)),
            None => line,
        };
        if let Some(mark) = mark {
            crate::logmark::write(mark, "progress", &line);
        } else if self.live {
            eprint!("\r\x1b[2K{line}");
            self.drawn = true;
        } else {
            eprintln!("{line}");
        }
        let _ = std::io::stderr().flush();
    }
}

/// Where a search is: `step 3 of at most 16, at most 2 min 10 s left`; a step run again
/// (brink's host was busy) may go past the most counted at the start: `step 17, the last
/// ones`.
fn search_left(
    (most, per_step, done): (u32, Duration, u32),
    elapsed: u64,
    total: Option<Duration>,
) -> String {
    let this = done + 1;
    if this > most {
        return format!("step {this}, among the last");
    }
    let in_step = total.map_or(Duration::ZERO, |t| {
        t.saturating_sub(Duration::from_secs(elapsed))
    });
    let left = per_step * (most - this) + in_step;
    format!(
        "step {this} of at most {most}, at most {} left",
        runner::about(left)
    )
}

/// `5s/10s`, or past the schedule's end `10s/10s, grace +2s` (requests still in flight get
/// `--grace` to finish); `5s` when the length is not known.
fn clock(elapsed: u64, total: Option<Duration>) -> String {
    match total.map(|t| t.as_secs_f64().ceil() as u64) {
        Some(t) if elapsed > t => format!("{t}s/{t}s, grace +{}s", elapsed - t),
        Some(t) => format!("{elapsed}s/{t}s"),
        None => format!("{elapsed}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::{clock, search_left};
    use std::time::Duration;

    #[test]
    fn a_search_says_which_step_runs_and_at_most_how_long_is_left() {
        let step = Duration::from_secs(10);
        // Third step of at most 16, 4 s into its 10: 13 more steps and 6 s.
        assert_eq!(
            search_left((16, step, 2), 4, Some(step)),
            "step 3 of at most 16, at most 2 min 16 s left"
        );
        assert_eq!(
            search_left((16, step, 15), 9, Some(step)),
            "step 16 of at most 16, at most 1 s left"
        );
        // A step run again goes past the count made at the start.
        assert_eq!(
            search_left((16, step, 16), 1, Some(step)),
            "step 17, among the last"
        );
    }

    #[test]
    fn the_grace_period_reads_as_such() {
        let four = Some(Duration::from_secs(4));
        assert_eq!(clock(3, four), "3s/4s");
        assert_eq!(clock(4, four), "4s/4s");
        assert_eq!(clock(5, four), "4s/4s, grace +1s");
        assert_eq!(clock(7, None), "7s");
    }
}
