//! Stretch transfer: a new job's CPU curve read as a library job's, scaled and stretched.
//!
//! A library job's curve `f` stands for the new job's as `rate(c) = v · f(a · c)`: `v` scales
//! the rate (another accelerator, another batch), `a` stretches the CPU axis (more or less
//! work a sample on a CPU). Every library job is fitted to the measured cells over a grid of
//! stretches, `v` by least squares in log space at each. A stretch far from 1 costs a prior
//! penalty, so a job is read as its nearest shapes unstretched where they fit as well.
//!
//! - The weight of a library job is `exp(−Δ / 2τ²)`, `Δ` its penalised misfit over the best
//!   job's and `τ` the tolerance; jobs below [`Settings::keep`] of the best are left out.
//! - More CPU is taken never to lower a rate: a prediction and its interval stay between the
//!   measured cells around it (widened by the floor). A fitted curve's scale is its mean
//!   misfit, so a flat curve with a wiggle need not pass between two equal measured cells.
//! - A cell's prediction is the weighted median of the kept jobs' best fits there.
//! - Its interval spans every kept job at every stretch whose misfit is within `2τ²` of that
//!   job's best, widened by [`Settings::floor`] on each side. Where the measured cells cannot
//!   tell shapes apart (a curve flat from 3 to 24 CPUs says nothing of 1 and 2), the stretches
//!   that fit them all disagree there, and the interval says so.

use super::library::{Library, LibraryJob};

/// The predictor's settings: chosen on the zoo held out job by job (docs/findings/predict.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The penalty on a stretch's `(ln a)²`, in the units of a misfit (a sum of squared log
    /// errors).
    pub prior: f64,
    /// `τ`: how far in log space a measured cell may sit from a library job's curve and still
    /// fit it, about the spread of a measured cell between sweeps.
    pub tolerance: f64,
    /// A library job with less than this share of the best job's weight is left out.
    pub keep: f64,
    /// Each interval's widening on either side, in log space: the library's own resolution
    /// (the zoo's rates are given to two digits).
    pub floor: f64,
}

/// The settings a prediction uses unless told otherwise.
pub const SETTINGS: Settings = Settings {
    prior: 0.01,
    tolerance: 0.03,
    keep: 0.05,
    floor: 0.03,
};

/// Stretches tried: `ln a` from −2.1 to 2.1 (a from 1/8 to 8) in steps of 0.01.
const STRETCH_STEPS: i32 = 210;
const STRETCH_STEP: f64 = 0.01;

/// A cell's prediction, in log space.
#[derive(Debug, Clone, PartialEq)]
pub struct CellPrediction {
    /// `ln` of the predicted samples/s.
    pub log_rate: f64,
    pub log_low: f64,
    pub log_high: f64,
}

impl CellPrediction {
    /// The interval's relative half-width, as a matrix gives it: `(high − low) / 2 / rate`.
    pub fn half_width(&self) -> f64 {
        (self.log_high.exp() - self.log_low.exp()) / 2.0 / self.log_rate.exp()
    }

    /// Whether `log_rate` lies inside the interval.
    pub fn holds(&self, log_rate: f64) -> bool {
        (self.log_low - 1e-12..=self.log_high + 1e-12).contains(&log_rate)
    }
}

/// One library job fitted to the measured cells.
#[derive(Debug, Clone)]
struct JobFit<'a> {
    job: &'a LibraryJob,
    weight: f64,
    /// `(ln a, ln v)` of its penalised best fit.
    best: (f64, f64),
    /// Every `(ln a, ln v)` within `2τ²` of its best misfit.
    consistent: Vec<(f64, f64)>,
}

/// The library fitted to a job's measured cells.
#[derive(Debug, Clone)]
pub struct Transfer<'a> {
    fits: Vec<JobFit<'a>>,
    floor: f64,
    /// The measured cells, `(ln cpu, ln samples/s)`, in ascending CPU order, one a level.
    points: Vec<(f64, f64)>,
}

impl<'a> Transfer<'a> {
    /// Fits every job of `library` to `measured` (`(cpu, samples/s)` pairs, each positive).
    /// `None` without a measured cell or a library job.
    pub fn fit(
        measured: &[(f64, f64)],
        library: &'a Library,
        settings: &Settings,
    ) -> Option<Transfer<'a>> {
        let points = one_a_level(measured);
        if points.is_empty() {
            return None;
        }
        let two_tau2 = 2.0 * settings.tolerance.powi(2);
        let profiled: Vec<(&LibraryJob, Profile)> = (library.jobs().iter())
            .map(|job| (job, Profile::of(job, &points, settings.prior, two_tau2)))
            .collect();
        let best = (profiled.iter())
            .map(|(_, p)| p.penalised)
            .fold(f64::INFINITY, f64::min);
        if !best.is_finite() {
            return None;
        }
        let fits: Vec<JobFit> = (profiled.into_iter())
            .map(|(job, p)| JobFit {
                job,
                weight: (-(p.penalised - best) / two_tau2).exp(),
                best: p.best,
                consistent: p.consistent,
            })
            .filter(|f| f.weight >= settings.keep)
            .collect();
        Some(Transfer {
            fits,
            floor: settings.floor,
            points,
        })
    }

    /// The prediction at `cpu`.
    pub fn at(&self, cpu: f64) -> CellPrediction {
        let x = cpu.ln();
        let read = |job: &LibraryJob, (b, u): (f64, f64)| u + job.curve.at(x + b);
        let mut bests: Vec<(f64, f64)> = (self.fits.iter())
            .map(|f| (read(f.job, f.best), f.weight))
            .collect();
        bests.sort_by(|a, b| a.0.total_cmp(&b.0));
        let half = bests.iter().map(|b| b.1).sum::<f64>() / 2.0;
        let mut acc = 0.0;
        let log_rate = (bests.iter())
            .find(|(_, w)| {
                acc += w;
                acc >= half
            })
            .map_or(f64::NAN, |b| b.0);
        let (mut low, mut high) = (log_rate, log_rate);
        for f in &self.fits {
            for &c in &f.consistent {
                let y = read(f.job, c);
                low = low.min(y);
                high = high.max(y);
            }
        }
        // More CPU never lowers the rate: the measured cells around `x` bound it.
        let (below, above) = self.bracket(x);
        let log_rate = log_rate.clamp(below, above);
        let (low, high) = (low - self.floor, high + self.floor);
        CellPrediction {
            log_rate,
            log_low: low.clamp(below - self.floor, log_rate),
            log_high: high.clamp(log_rate, above + self.floor),
        }
    }

    /// The `ln` rates the measured cells bound `ln cpu` = `x` to where more CPU never lowers
    /// a rate: from the highest measured at fewer CPUs to the lowest measured at more
    /// (either way round where those two disagree; unbounded where there is none).
    fn bracket(&self, x: f64) -> (f64, f64) {
        let below = (self.points.iter()).filter(|p| p.0 < x).map(|p| p.1);
        let above = (self.points.iter()).filter(|p| p.0 > x).map(|p| p.1);
        let (b, a) = (
            below.fold(f64::NEG_INFINITY, f64::max),
            above.fold(f64::INFINITY, f64::min),
        );
        (b.min(a), a.max(b))
    }

    /// The library jobs the prediction leans on, by weight, each with its share of the
    /// weight: those with a tenth of it or more.
    pub fn leaned_on(&self) -> Vec<(&'a LibraryJob, f64)> {
        let total: f64 = self.fits.iter().map(|f| f.weight).sum();
        let mut out: Vec<(&LibraryJob, f64)> = (self.fits.iter())
            .map(|f| (f.job, f.weight / total))
            .filter(|(_, share)| *share >= 0.1)
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out
    }
}

/// The usable measured cells as `(ln cpu, ln samples/s)` in ascending CPU order, the cells
/// at one level averaged in log space.
fn one_a_level(measured: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = (measured.iter())
        .filter(|(c, r)| *c > 0.0 && *r > 0.0 && c.is_finite() && r.is_finite())
        .map(|(c, r)| (c.ln(), r.ln()))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64, f64)> = Vec::new();
    for (x, y) in points {
        match out.last_mut() {
            Some(last) if (last.0 - x).abs() < 1e-9 => {
                last.1 += y;
                last.2 += 1.0;
            }
            _ => out.push((x, y, 1.0)),
        }
    }
    out.into_iter().map(|(x, sum, n)| (x, sum / n)).collect()
}

/// A library job's misfit over the stretches.
struct Profile {
    /// The least penalised misfit.
    penalised: f64,
    best: (f64, f64),
    consistent: Vec<(f64, f64)>,
}

impl Profile {
    fn of(job: &LibraryJob, points: &[(f64, f64)], prior: f64, two_tau2: f64) -> Profile {
        let n = points.len() as f64;
        let fitted: Vec<(f64, f64, f64)> = (-STRETCH_STEPS..=STRETCH_STEPS)
            .map(|i| {
                let b = f64::from(i) * STRETCH_STEP;
                let residual = |(x, y): &(f64, f64)| y - job.curve.at(x + b);
                let u = points.iter().map(residual).sum::<f64>() / n;
                let sse: f64 = points.iter().map(|p| (residual(p) - u).powi(2)).sum();
                (b, u, sse)
            })
            .collect();
        let (b, u, sse) = (fitted.iter())
            .min_by(|p, q| (p.2 + prior * p.0 * p.0).total_cmp(&(q.2 + prior * q.0 * q.0)))
            .copied()
            .unwrap_or((0.0, 0.0, f64::INFINITY));
        let least = fitted.iter().map(|p| p.2).fold(f64::INFINITY, f64::min);
        Profile {
            penalised: sse + prior * b * b,
            best: (b, u),
            consistent: (fitted.iter())
                .filter(|p| p.2 <= least + two_tau2)
                .map(|p| (p.0, p.1))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::curve::Curve;

    fn job(name: &str, pairs: &[(f64, f64)]) -> LibraryJob {
        LibraryJob {
            name: name.into(),
            origin: "test".into(),
            curve: Curve::new(pairs.iter().copied()).unwrap(),
        }
    }

    #[test]
    fn a_scaled_and_stretched_library_job_is_recovered() {
        // The new job is the library's at half the rate with each CPU doing twice the work.
        let shape = [
            (1.0, 10.0),
            (2.0, 20.0),
            (4.0, 40.0),
            (8.0, 50.0),
            (16.0, 50.0),
        ];
        let lib = Library::of_jobs(vec![job("shape", &shape)]);
        let truth = |c: f64| 0.5 * Curve::new(shape).unwrap().at((2.0 * c).ln()).exp();
        let measured = [(1.0, truth(1.0)), (8.0, truth(8.0))];
        let t = Transfer::fit(&measured, &lib, &SETTINGS).unwrap();
        for c in [2.0, 3.0, 4.0] {
            let p = t.at(c);
            assert!((p.log_rate - truth(c).ln()).abs() < 0.02, "{c}: {p:?}");
            assert!(p.holds(truth(c).ln()));
        }
    }

    #[test]
    fn cells_that_cannot_tell_shapes_apart_give_a_wide_interval() {
        // Flat from 3 CPUs up, as both library jobs are: below 3 one is flat, one is not.
        let flat = job("flat", &[(1.0, 1.0), (3.0, 1.0), (24.0, 1.0)]);
        let knee = job("knee", &[(1.0, 0.3), (2.0, 0.66), (3.0, 1.0), (24.0, 1.0)]);
        let lib = Library::of_jobs(vec![flat, knee]);
        let t = Transfer::fit(&[(3.0, 5.0), (24.0, 5.0)], &lib, &SETTINGS).unwrap();
        let p = t.at(1.0);
        assert!(p.holds(5f64.ln()) && p.holds((0.3 * 5f64).ln()), "{p:?}");
        assert!(p.half_width() > 0.3);
        assert_eq!(t.leaned_on().len(), 2);
    }

    #[test]
    fn a_flat_job_is_read_flat_between_its_measured_cells() {
        // The only library job wiggles by 4% where the new job, measured at both ends, is flat:
        // the fitted scale sits between the wiggle's ends, the prediction between the cells.
        let wiggle = job("wiggle", &[(1.0, 1.0), (2.0, 1.04), (4.0, 1.0), (8.0, 1.0)]);
        let lib = Library::of_jobs(vec![wiggle]);
        let t = Transfer::fit(&[(1.0, 10.0), (8.0, 10.0)], &lib, &SETTINGS).unwrap();
        for c in [2.0, 3.0, 4.0] {
            let p = t.at(c);
            assert!((p.log_rate - 10f64.ln()).abs() < 1e-12, "{c}: {p:?}");
            assert!(p.log_low <= p.log_rate && p.log_rate <= p.log_high, "{p:?}");
            assert!(p.log_high <= 10f64.ln() + SETTINGS.floor + 1e-12, "{p:?}");
        }
        // Beyond the measured cells only one side is bound.
        let above = t.at(16.0);
        assert!(above.log_rate >= 10f64.ln() && above.log_low >= 10f64.ln() - SETTINGS.floor);
    }

    #[test]
    fn nothing_to_fit_is_no_transfer() {
        let lib = Library::of_jobs(vec![job("a", &[(1.0, 1.0), (2.0, 2.0)])]);
        assert!(Transfer::fit(&[], &lib, &SETTINGS).is_none());
        assert!(Transfer::fit(&[(1.0, 1.0)], &Library::default(), &SETTINGS).is_none());
    }
}
