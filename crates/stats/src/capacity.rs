//! The maths of a capacity search: the Universal Scalability Law fitted to throughput against
//! concurrency, and the knee of a latency/throughput curve.
//!
//! **USL** (Gunther): throughput at concurrency N is
//!
//! ```text
//! X(N) = λ N / (1 + σ (N - 1) + κ N (N - 1))
//! ```
//!
//! with λ the throughput of one unit of concurrency, σ contention (queueing on a shared
//! resource) and κ coherency (crosstalk; it makes throughput fall past a peak). Dividing N by X
//! makes it linear in three unknowns:
//!
//! ```text
//! N / X = a + b (N - 1) + c N (N - 1),    a = 1/λ,  b = σ/λ,  c = κ/λ
//! ```
//!
//! so ordinary least squares on (1, N-1, N(N-1)) gives a, b, c, hence λ = 1/a, σ = b/a,
//! κ = c/a. The peak is at N* = sqrt((1 - σ) / κ) when κ > 0. R² is computed on X itself (not on
//! the linearised form), so it says how well the curve follows the measured throughput. The
//! law's terms are bounded (0 <= σ <= 1, κ >= 0): a free fit outside them is replaced by the
//! fit with that term at its bound, and a curve that follows the points worse than their mean
//! (R² < 0) is no fit at all.
//!
//! **Knee**: going up the steps, the first step where latency grows much faster than load
//! (p90 ratio at least 3x the load ratio), or throughput stops growing (it gained less than a
//! fifth of the load's relative increase).

/// A fitted USL curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Usl {
    pub lambda: f64,
    pub sigma: f64,
    pub kappa: f64,
    /// Concurrency of peak throughput (`None` when κ <= 0: no peak within the model).
    pub peak_n: Option<f64>,
    pub peak_x: Option<f64>,
    pub r2: f64,
}

impl Usl {
    pub fn throughput(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }

    /// Fits `(concurrency, throughput)` points; `None` with fewer than three distinct
    /// concurrencies, a degenerate fit, or one that follows the points worse than their mean
    /// does (R² below 0). The law holds only with 0 <= σ <= 1 and κ >= 0: when the free fit
    /// breaks a bound, the model with that term fixed at its bound (κ = 0: Amdahl's law;
    /// σ = 0) is fitted instead, and the best of those that keep the bounds is taken.
    pub fn fit(points: &[(f64, f64)]) -> Option<Usl> {
        let pts: Vec<(f64, f64)> = points
            .iter()
            .copied()
            .filter(|&(n, x)| n >= 1.0 && x > 0.0 && n.is_finite() && x.is_finite())
            .collect();
        let mut distinct: Vec<f64> = pts.iter().map(|p| p.0).collect();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
        if distinct.len() < 3 {
            return None;
        }
        [Terms::Both, Terms::NoCoherency, Terms::NoContention]
            .into_iter()
            .filter_map(|t| fit_terms(&pts, t))
            .filter(|u| (0.0..=1.0).contains(&u.sigma) && u.kappa >= 0.0)
            .max_by(|a, b| a.r2.total_cmp(&b.r2))
            .filter(|u| u.r2 >= 0.0)
    }
}

/// Which of the law's terms a fit has free.
#[derive(Clone, Copy)]
enum Terms {
    Both,
    /// κ = 0.
    NoCoherency,
    /// σ = 0.
    NoContention,
}

/// Least squares of N/X on the terms' columns (1, N-1, N(N-1)), then the curve and its R² on X.
fn fit_terms(pts: &[(f64, f64)], terms: Terms) -> Option<Usl> {
    let cols: &[usize] = match terms {
        Terms::Both => &[0, 1, 2],
        Terms::NoCoherency => &[0, 1],
        Terms::NoContention => &[0, 2],
    };
    let k = cols.len();
    let mut m = [[0.0f64; 4]; 3];
    for &(n, x) in pts {
        let all = [1.0, n - 1.0, n * (n - 1.0)];
        let y = n / x;
        for (i, &ci) in cols.iter().enumerate() {
            for (j, &cj) in cols.iter().enumerate() {
                m[i][j] += all[ci] * all[cj];
            }
            m[i][3] += all[ci] * y;
        }
    }
    // Unused rows hold the identity, so a smaller system solves as the 3x3 one.
    for (i, row) in m.iter_mut().enumerate().skip(k) {
        row[i] = 1.0;
    }
    let solved = solve3(m)?;
    let mut coef = [0.0f64; 3];
    for (i, &ci) in cols.iter().enumerate() {
        coef[ci] = solved[i];
    }
    let [a, b, c] = coef;
    if a <= 0.0 {
        return None;
    }
    let mut usl = Usl {
        lambda: 1.0 / a,
        sigma: b / a,
        kappa: c / a,
        peak_n: None,
        peak_x: None,
        r2: 0.0,
    };
    if usl.kappa > 0.0 && usl.sigma < 1.0 {
        let n = ((1.0 - usl.sigma) / usl.kappa).sqrt();
        usl.peak_n = Some(n);
        usl.peak_x = Some(usl.throughput(n));
    }
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let ss_tot: f64 = pts.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let ss_res: f64 = pts
        .iter()
        .map(|p| (p.1 - usl.throughput(p.0)).powi(2))
        .sum();
    usl.r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        0.0
    };
    Some(usl)
}

/// Gaussian elimination with partial pivoting on an augmented 3x4 matrix.
fn solve3(mut m: [[f64; 4]; 3]) -> Option<[f64; 3]> {
    for col in 0..3 {
        let pivot = (col..3).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        let pivot_row = m[col];
        for (row, r) in m.iter_mut().enumerate() {
            if row != col {
                let f = r[col] / pivot_row[col];
                for (x, p) in r.iter_mut().zip(pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    Some([m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]])
}

/// One measured step for knee detection.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub level: f64,
    pub throughput: f64,
    pub p90_ms: f64,
}

/// Where the curve bends, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Knee {
    /// Index of the step at the knee (in level order).
    pub index: usize,
    pub level: f64,
    pub reason: String,
}

/// A level is where throughput stopped growing only if no level above it gained more than
/// this share over it: a stall between two steps that the curve then climbs past (a noisy
/// step, a machine busy for a moment) is not the service saturating.
const PLATEAU_SLACK: f64 = 0.10;

/// Where the curve bends (steps sorted by level): the first step at which latency grows much
/// faster than load (p90 3x the load's growth: the step where it broke), or the first level
/// past which throughput stops growing (more load gains under a fifth of its growth, and no
/// level above gains more than [`PLATEAU_SLACK`] over it: the level where the service
/// saturates, not the one above it).
pub fn knee(points: &[Point]) -> Option<Knee> {
    let mut sorted: Vec<(usize, Point)> = points.iter().copied().enumerate().collect();
    sorted.sort_by(|a, b| a.1.level.total_cmp(&b.1.level));
    for (at, w) in sorted.windows(2).enumerate() {
        let ((before, prev), (i, cur)) = (w[0], w[1]);
        if prev.level <= 0.0 || prev.throughput <= 0.0 || prev.p90_ms <= 0.0 {
            continue;
        }
        let load = cur.level / prev.level;
        if load <= 1.0 {
            continue;
        }
        let lat = cur.p90_ms / prev.p90_ms;
        let gain = cur.throughput / prev.throughput;
        if lat >= 3.0 * load {
            return Some(Knee {
                index: i,
                level: cur.level,
                reason: format!("p90 x{} for {}x load", fmt_ratio(lat), fmt_ratio(load)),
            });
        }
        let best_above = sorted[at + 1..]
            .iter()
            .map(|(_, p)| p.throughput)
            .fold(0.0, f64::max);
        let held = best_above <= prev.throughput * (1.0 + PLATEAU_SLACK);
        if gain - 1.0 < 0.2 * (load - 1.0) && held {
            return Some(Knee {
                index: before,
                level: prev.level,
                reason: format!(
                    "throughput stops growing here: {:+.0}% for {}x load above it",
                    (gain - 1.0) * 100.0,
                    fmt_ratio(load)
                ),
            });
        }
    }
    None
}

fn fmt_ratio(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_known_usl_parameters() {
        let truth = Usl {
            lambda: 1000.0,
            sigma: 0.05,
            kappa: 0.0005,
            peak_n: None,
            peak_x: None,
            r2: 1.0,
        };
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
            .iter()
            .map(|&n| (n, truth.throughput(n)))
            .collect();
        let fit = Usl::fit(&pts).unwrap();
        assert!((fit.lambda - 1000.0).abs() < 1e-6, "{fit:?}");
        assert!((fit.sigma - 0.05).abs() < 1e-9 && (fit.kappa - 0.0005).abs() < 1e-9);
        // N* = sqrt(0.95 / 0.0005) = 43.6
        assert!((fit.peak_n.unwrap() - 43.59).abs() < 0.01);
        assert!(fit.r2 > 0.999_999);
    }

    #[test]
    fn a_fixed_capacity_server_is_pure_contention() {
        // K = 8 slots of 10 ms: X = min(N, 8) * 100, a hard ceiling the smooth USL curve can
        // only approximate: its peak lands near 800/s and the fit is still good.
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
            .iter()
            .map(|&n| (n, f64::min(n, 8.0) * 100.0))
            .collect();
        let fit = Usl::fit(&pts).unwrap();
        let peak = fit.peak_x.unwrap();
        assert!((peak - 800.0).abs() / 800.0 < 0.15, "{fit:?}");
        assert!(fit.r2 > 0.9, "{fit:?}");
    }

    #[test]
    fn a_fit_keeps_the_law_s_bounds_or_is_none() {
        // Amdahl's law (κ = 0) with noise that pulls the free fit's κ below zero.
        let pts = [
            (1.0, 1000.0),
            (2.0, 1820.0),
            (4.0, 3100.0),
            (8.0, 4900.0),
            (16.0, 7000.0),
        ];
        let free = fit_terms(&pts, Terms::Both).unwrap();
        assert!(free.kappa < 0.0, "the free fit breaks the bound: {free:?}");
        let fit = Usl::fit(&pts).unwrap();
        assert_eq!(fit.kappa, 0.0, "{fit:?}");
        assert!((0.0..=1.0).contains(&fit.sigma) && fit.r2 > 0.99, "{fit:?}");
        // A single-threaded server whose throughput fell from the first level and then
        // wandered (a Python http.server): the free fit gave σ 7.6, κ -0.047, R² -50.
        let wandering = [
            (1.0, 3144.0),
            (2.0, 2027.0),
            (4.0, 2224.0),
            (8.0, 1925.0),
            (16.0, 2062.0),
            (32.0, 2194.0),
            (24.0, 1555.0),
            (20.0, 1937.0),
            (18.0, 1799.0),
            (17.0, 2333.0),
        ];
        assert_eq!(
            Usl::fit(&wandering),
            None,
            "no curve of the law follows these"
        );
    }

    #[test]
    fn too_few_points_give_no_fit() {
        assert!(Usl::fit(&[(1.0, 10.0), (2.0, 20.0)]).is_none());
        assert!(Usl::fit(&[(4.0, 10.0), (4.0, 11.0), (4.0, 12.0)]).is_none());
    }

    fn p(level: f64, throughput: f64, p90_ms: f64) -> Point {
        Point {
            level,
            throughput,
            p90_ms,
        }
    }

    #[test]
    fn a_stall_the_curve_climbs_past_is_not_the_knee() {
        // Throughput stalls from 4 to 8 connections (a busy moment), then grows a third more:
        // the service saturates at 64, where it stops for good.
        let p = |level: f64, throughput: f64| Point {
            level,
            throughput,
            p90_ms: 0.05 * level,
        };
        let points = [
            p(1.0, 30_000.0),
            p(4.0, 83_000.0),
            p(8.0, 84_000.0),
            p(16.0, 96_000.0),
            p(64.0, 110_000.0),
            p(256.0, 111_000.0),
            p(1000.0, 112_000.0),
        ];
        let k = knee(&points).unwrap();
        assert_eq!(k.level, 64.0, "{k:?}");
        assert!(k.reason.starts_with("throughput stops growing"), "{k:?}");
    }

    #[test]
    fn knee_cases() {
        // A sweep seen behind a container bridge: 25 -> 50 connections, p90 1.68 ms -> 117 ms (x70 for 2x load).
        let k = knee(&[
            p(10.0, 15400.0, 0.94),
            p(25.0, 24400.0, 1.68),
            p(50.0, 27100.0, 117.0),
        ])
        .unwrap();
        assert_eq!((k.index, k.level), (2, 50.0));
        assert_eq!(k.reason, "p90 x70 for 2x load");
        // Throughput flat while latency grows in proportion (a saturated pool).
        let k = knee(&[
            p(4.0, 400.0, 10.0),
            p(8.0, 800.0, 10.0),
            p(16.0, 820.0, 19.5),
        ])
        .unwrap();
        assert_eq!((k.index, k.level), (1, 8.0), "the level where it saturates");
        assert_eq!(
            k.reason,
            "throughput stops growing here: +2% for 2x load above it"
        );
        // Linear scaling: no knee.
        assert!(knee(&[p(1.0, 100.0, 5.0), p(2.0, 200.0, 5.1), p(4.0, 400.0, 5.2)]).is_none());
    }
}
