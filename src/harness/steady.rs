//! Steady-state detection and the throughput estimate of one cell.
//!
//! Reports after the warm-up are cut into fixed windows; a window's rate is the samples it
//! gained over its length (interpolated between reports). The job is steady once the
//! coefficient of variation of the last N window rates is below the threshold. The estimate is
//! the mean of those N windows with a Student-t 95% interval (windows are treated as independent).

use super::progress::Report;
use crate::matrix::{Percentiles, Throughput};

/// Most windows one cell is cut into: a bound on the work and memory of `rates`, whatever the
/// timestamps (the progress reader also rejects timestamps far from now).
pub const MAX_WINDOWS: usize = 100_000;

/// Reports collected since the measurement of a cell started.
#[derive(Debug, Clone, Default)]
pub struct RateWindows {
    start_t: Option<f64>,
    window_s: f64,
    reports: Vec<Report>,
}

/// Cumulative samples at time `t`, linearly interpolated between reports.
fn samples_at(reports: &[Report], t: f64) -> Option<f64> {
    let i = reports.partition_point(|r| r.t < t);
    if i == reports.len() {
        return None;
    }
    if i == 0 {
        return (reports[0].t == t).then_some(reports[0].samples);
    }
    let (a, b) = (reports[i - 1], reports[i]);
    let f = if b.t > a.t {
        (t - a.t) / (b.t - a.t)
    } else {
        1.0
    };
    Some(a.samples + f * (b.samples - a.samples))
}

impl RateWindows {
    /// Starts measuring at `start_t` (Unix seconds); `last_before` is the latest report at or
    /// before it, so the first window can be interpolated.
    pub fn new(start_t: f64, window_s: f64, last_before: Option<Report>) -> Self {
        RateWindows {
            start_t: Some(start_t),
            window_s,
            reports: last_before.into_iter().collect(),
        }
    }

    /// Adds a report; one that is not finite or goes back in time is ignored.
    pub fn push(&mut self, r: Report) {
        if r.t.is_finite()
            && r.samples.is_finite()
            && self.reports.last().is_none_or(|l| r.t >= l.t)
        {
            self.reports.push(r);
        }
    }

    /// Rates of the complete windows so far.
    pub fn rates(&self) -> Vec<f64> {
        let Some(start) = self.start_t else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut k = 0.0;
        while out.len() < MAX_WINDOWS {
            let (a, b) = (start + k * self.window_s, start + (k + 1.0) * self.window_s);
            match (samples_at(&self.reports, a), samples_at(&self.reports, b)) {
                (Some(sa), Some(sb)) => out.push((sb - sa) / self.window_s),
                _ => return out,
            }
            k += 1.0;
        }
        out
    }

    /// Whether the last `n` windows vary less than `max_cv`.
    pub fn is_steady(&self, n: usize, max_cv: f64) -> bool {
        let rates = self.rates();
        rates.len() >= n && coefficient_of_variation(&rates[rates.len() - n..]) < max_cv
    }

    /// Throughput over the last `n` windows (all of them if fewer), or `None` without one
    /// complete window.
    pub fn throughput(&self, n: usize) -> Option<Throughput> {
        let rates = self.rates();
        if rates.is_empty() {
            return None;
        }
        let last = &rates[rates.len().saturating_sub(n)..];
        let (mean, half) = mean_ci95(last);
        Some(Throughput {
            samples_per_s: mean,
            ci95_low: (mean - half).max(0.0),
            ci95_high: mean + half,
            windows: last.len() as u32,
            measured_s: rates.len() as f64 * self.window_s,
        })
    }

    /// p50/p95 seconds per iteration: the times the job prints, or else the times between
    /// consecutive reports that carry iteration counts.
    pub fn iteration_times(&self) -> Option<Percentiles> {
        let printed: Vec<f64> = self
            .reports
            .iter()
            .filter_map(|r| r.iteration_time_s)
            .collect();
        let mut times: Vec<f64> = if printed.len() >= 2 {
            printed
        } else {
            self.reports
                .windows(2)
                .filter_map(|w| {
                    let di = w[1].iterations? - w[0].iterations?;
                    (di > 0.0).then(|| (w[1].t - w[0].t) / di)
                })
                .collect()
        };
        times.retain(|t| t.is_finite());
        if times.len() < 2 {
            return None;
        }
        times.sort_by(f64::total_cmp);
        Some(Percentiles {
            p50: percentile(&times, 0.50),
            p95: percentile(&times, 0.95),
        })
    }
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn coefficient_of_variation(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 || mean <= 0.0 {
        return f64::INFINITY;
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    var.sqrt() / mean
}

/// Mean and half-width of the Student-t 95% interval.
pub fn mean_ci95(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
    (mean, t_975(n - 1) * (var / n as f64).sqrt())
}

/// Two-sided 95% Student-t quantile for `df` degrees of freedom.
fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 10] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    ];
    match df {
        0 => f64::INFINITY,
        1..=10 => TABLE[df - 1],
        11..=20 => 2.086,
        21..=30 => 2.042,
        _ => 1.96,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(t: f64, samples: f64, it: f64) -> Report {
        Report {
            t,
            samples,
            iterations: Some(it),
            iteration_time_s: None,
        }
    }

    #[test]
    fn constant_rate_is_steady_and_exact() {
        let mut w = RateWindows::new(100.0, 1.0, None);
        for i in 0..=100 {
            let t = 100.0 + i as f64 * 0.1;
            w.push(report(t, (t - 100.0) * 50.0, i as f64));
        }
        let rates = w.rates();
        assert_eq!(rates.len(), 10);
        assert!(rates.iter().all(|r| (r - 50.0).abs() < 1e-6));
        assert!(w.is_steady(5, 0.01));
        let tp = w.throughput(5).unwrap();
        assert!((tp.samples_per_s - 50.0).abs() < 1e-6 && tp.ci95_high - tp.ci95_low < 1e-6);
        let it = w.iteration_times().unwrap();
        assert!((it.p50 - 0.1).abs() < 1e-9);
    }

    #[test]
    fn ramping_rate_is_not_steady() {
        let mut w = RateWindows::new(0.0, 1.0, None);
        let mut s = 0.0;
        for i in 0..100 {
            s += i as f64; // rate grows every step
            w.push(report(i as f64 * 0.1, s, i as f64));
        }
        assert!(!w.is_steady(5, 0.05));
    }

    #[test]
    fn far_future_and_non_finite_reports_stay_bounded() {
        let mut w = RateWindows::new(0.0, 0.001, None);
        w.push(report(0.0, 0.0, 0.0));
        w.push(report(1e18, 1e9, 1.0));
        w.push(report(2e18, f64::NAN, 2.0));
        let rates = w.rates();
        assert_eq!(rates.len(), MAX_WINDOWS);
        assert!(rates.iter().all(|r| r.is_finite()));
    }

    #[test]
    fn printed_iteration_times_are_used() {
        let mut w = RateWindows::new(0.0, 1.0, None);
        for (i, s) in [0.2, 0.3, 0.25].into_iter().enumerate() {
            w.push(Report {
                t: i as f64,
                samples: i as f64 * 10.0,
                iterations: None,
                iteration_time_s: Some(s),
            });
        }
        let p = w.iteration_times().unwrap();
        assert_eq!((p.p50, p.p95), (0.25, 0.3));
    }

    /// The interval is worth its name: over many samples of a known distribution it covers
    /// the true mean 95% of the time, for the small sample counts a sweep uses (a normal
    /// quantile in place of Student's would cover about 88% at 5 windows).
    #[test]
    fn the_interval_covers_the_true_mean_95_percent_of_the_time() {
        let mut state = 7u64;
        let mut uniform = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (((z ^ (z >> 31)) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let (true_mean, sd) = (500.0, 40.0);
        for n in [3, 5, 8, 15] {
            let trials = 4000;
            let covered = (0..trials)
                .filter(|_| {
                    let xs: Vec<f64> = (0..n)
                        .map(|_| {
                            // Box-Muller.
                            let (u, v) = (uniform(), uniform());
                            true_mean
                                + sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
                        })
                        .collect();
                    let (mean, half) = mean_ci95(&xs);
                    (mean - true_mean).abs() <= half
                })
                .count();
            let coverage = covered as f64 / trials as f64;
            assert!(
                (0.935..=0.965).contains(&coverage),
                "{n} windows: coverage {coverage}"
            );
        }
    }
}
