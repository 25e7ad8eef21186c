//! Calibration: fits [`StepTimeModel`] to measured step times and [`EfficiencyModel`] to
//! measured gradient statistics, and measures how well each reproduces its data.
//!
//! Step time, in stages (each stage's data fixes a few parameters; a final joint refinement
//! corrects what the stages' simplifications leave):
//! 1. compute: 1-GPU steps (no synchronisation) against the local batch, least squares on the
//!    relative error;
//! 2. synchronisation within one server, then across servers: the measured `sync_time` of
//!    multi-GPU steps against the replicas beyond two, same criterion;
//! 3. gamma: golden-section search in [1, 10] on the squared log error of the step time and of
//!    the compute time (step minus synchronisation, where measured), as Pollux fits;
//! 4. all seven parameters together: Nelder-Mead on the same loss, started from stages 1-3
//!    (deterministic: fixed start, fixed iteration budget).

use super::efficiency::EfficiencyModel;
use super::reference::{StepSample, ValidationCurve};
use super::step_time::StepTimeModel;
use crate::stats::median;

/// Largest gamma the fit considers (Pollux's bound).
pub const MAX_GAMMA: f64 = 10.0;

/// A fitted step-time model and its relative errors on the data it was fitted to.
#[derive(Debug, Clone, PartialEq)]
pub struct StepTimeFit {
    pub model: StepTimeModel,
    pub median_rel_err: f64,
    pub max_rel_err: f64,
    pub samples: usize,
}

/// |predicted - measured| / measured for every sample.
pub fn step_time_errors(m: &StepTimeModel, data: &[StepSample]) -> Vec<f64> {
    data.iter()
        .map(|s| (m.step_time(s.replicas, s.nodes, s.local_batch) - s.step_s).abs() / s.step_s)
        .collect()
}

/// Weighted least squares of y ~ a + b x minimising sum ((a + b x - y) / y)^2, with a, b >= 0.
fn relative_line(points: &[(f64, f64)]) -> (f64, f64) {
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, y) in points {
        let w = 1.0 / (y * y).max(1e-18);
        sw += w;
        sx += w * x;
        sy += w * y;
        sxx += w * x * x;
        sxy += w * x * y;
    }
    if sw == 0.0 {
        return (0.0, 0.0);
    }
    let det = sw * sxx - sx * sx;
    let (a, b) = if det.abs() > 1e-12 * sw * sxx.max(1e-300) {
        ((sxx * sy - sx * sxy) / det, (sw * sxy - sx * sy) / det)
    } else {
        (sy / sw, 0.0)
    };
    if a < 0.0 {
        // Through the origin: b = sum w x y / sum w x^2.
        (0.0, if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 })
    } else if b < 0.0 {
        (sy / sw, 0.0)
    } else {
        (a, b)
    }
}

/// Squared log errors of the step time and, where a sample measures it (step minus
/// synchronisation), of the compute time, as Pollux fits its model: gradient accumulation
/// runs compute-only passes, so the compute time must hold on its own.
fn log_loss(m: &StepTimeModel, data: &[StepSample]) -> f64 {
    let sq = |pred: f64, measured: f64| {
        if pred > 0.0 && pred.is_finite() {
            (pred / measured).ln().powi(2)
        } else {
            1e6
        }
    };
    data.iter()
        .map(|s| {
            let step = sq(m.step_time(s.replicas, s.nodes, s.local_batch), s.step_s);
            let compute = s.step_s - s.sync_s;
            if s.sync_s > 0.0 && compute > 0.0 {
                step + sq(m.compute_time(s.local_batch), compute)
            } else {
                step
            }
        })
        .sum()
}

fn golden(lo: f64, hi: f64, f: impl Fn(f64) -> f64) -> f64 {
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (lo, hi);
    let mut c = b - r * (b - a);
    let mut d = a + r * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..60 {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - r * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + r * (b - a);
            fd = f(d);
        }
    }
    0.5 * (a + b)
}

/// Minimises `f` from `x0` with the Nelder-Mead simplex (initial steps `step`), at most
/// `iters` iterations.
pub fn nelder_mead(f: impl Fn(&[f64]) -> f64, x0: &[f64], step: f64, iters: usize) -> Vec<f64> {
    let n = x0.len();
    let mut pts: Vec<Vec<f64>> = vec![x0.to_vec()];
    for i in 0..n {
        let mut p = x0.to_vec();
        p[i] += step;
        pts.push(p);
    }
    let mut vals: Vec<f64> = pts.iter().map(|p| f(p)).collect();
    for _ in 0..iters {
        let mut order: Vec<usize> = (0..=n).collect();
        order.sort_by(|&a, &b| vals[a].total_cmp(&vals[b]));
        pts = order.iter().map(|&i| pts[i].clone()).collect();
        vals = order.iter().map(|&i| vals[i]).collect();
        if (vals[n] - vals[0]).abs() <= 1e-12 * (1.0 + vals[0].abs()) {
            break;
        }
        let centroid: Vec<f64> = (0..n)
            .map(|j| pts[..n].iter().map(|p| p[j]).sum::<f64>() / n as f64)
            .collect();
        let along = |t: f64| -> Vec<f64> {
            (0..n)
                .map(|j| centroid[j] + t * (pts[n][j] - centroid[j]))
                .collect()
        };
        let xr = along(-1.0);
        let fr = f(&xr);
        if fr < vals[0] {
            let xe = along(-2.0);
            let fe = f(&xe);
            if fe < fr {
                pts[n] = xe;
                vals[n] = fe;
            } else {
                pts[n] = xr;
                vals[n] = fr;
            }
        } else if fr < vals[n - 1] {
            pts[n] = xr;
            vals[n] = fr;
        } else {
            let xc = if fr < vals[n] {
                along(-0.5)
            } else {
                along(0.5)
            };
            let fc = f(&xc);
            if fc < vals[n].min(fr) {
                pts[n] = xc;
                vals[n] = fc;
            } else {
                let best = pts[0].clone();
                for i in 1..=n {
                    for (x, b) in pts[i].iter_mut().zip(&best) {
                        *x = b + 0.5 * (*x - b);
                    }
                    vals[i] = f(&pts[i]);
                }
            }
        }
    }
    let best = (0..=n)
        .min_by(|&a, &b| vals[a].total_cmp(&vals[b]))
        .unwrap_or(0);
    pts[best].clone()
}

/// Floor of the time parameters in the refinement's log space (seconds): zero in effect.
const TINY_S: f64 = 1e-9;

fn to_params(m: &StepTimeModel) -> Vec<f64> {
    let l = |x: f64| x.max(TINY_S).ln();
    vec![
        l(m.compute_s),
        l(m.compute_s_per_sample),
        l(m.sync_local_s),
        l(m.sync_local_s_per_replica),
        l(m.sync_node_s),
        l(m.sync_node_s_per_replica),
        m.gamma,
    ]
}

fn from_params(p: &[f64]) -> StepTimeModel {
    let e = |x: f64| {
        let v = x.exp();
        if v <= 2.0 * TINY_S { 0.0 } else { v }
    };
    StepTimeModel {
        compute_s: e(p[0]),
        compute_s_per_sample: e(p[1]),
        sync_local_s: e(p[2]),
        sync_local_s_per_replica: e(p[3]),
        sync_node_s: e(p[4]),
        sync_node_s_per_replica: e(p[5]),
        gamma: p[6].clamp(1.0, MAX_GAMMA),
    }
}

/// Fits the step-time model to `data` (see the module's description). `None` without 1-GPU
/// samples.
pub fn fit_step_time(data: &[StepSample]) -> Option<StepTimeFit> {
    let one: Vec<(f64, f64)> = data
        .iter()
        .filter(|s| s.replicas == 1)
        .map(|s| (s.local_batch, s.step_s))
        .collect();
    if one.is_empty() {
        return None;
    }
    let (compute_s, compute_s_per_sample) = relative_line(&one);
    // Measured synchronisation times; where a sample has none, what the step takes beyond
    // its compute time.
    let sync = |multi_node: bool| {
        let pts: Vec<(f64, f64)> = data
            .iter()
            .filter(|s| s.replicas > 1 && (s.nodes > 1) == multi_node)
            .map(|s| {
                let excess = s.step_s - (compute_s + compute_s_per_sample * s.local_batch);
                let y = if s.sync_s > 0.0 { s.sync_s } else { excess };
                (s.replicas.saturating_sub(2) as f64, y)
            })
            .filter(|&(_, y)| y > 0.0)
            .collect();
        relative_line(&pts)
    };
    let (sync_local_s, sync_local_s_per_replica) = sync(false);
    let (sync_node_s, sync_node_s_per_replica) = sync(true);
    let mut m = StepTimeModel {
        compute_s,
        compute_s_per_sample,
        sync_local_s,
        sync_local_s_per_replica,
        sync_node_s,
        sync_node_s_per_replica,
        gamma: 1.0,
    };
    m.gamma = golden(1.0, MAX_GAMMA, |g| {
        log_loss(&StepTimeModel { gamma: g, ..m }, data)
    });
    let staged = m;
    // A stage without data leaves a parameter at 0, which the refinement (in log space) could
    // not leave: start those at a small fraction of the shortest measured step instead.
    let floor = 1e-3 * data.iter().map(|s| s.step_s).fold(f64::INFINITY, f64::min);
    let lift = |x: f64| if x > floor { x } else { floor };
    let start = StepTimeModel {
        compute_s: lift(m.compute_s),
        compute_s_per_sample: m.compute_s_per_sample.max(TINY_S),
        sync_local_s: lift(m.sync_local_s),
        sync_local_s_per_replica: lift(m.sync_local_s_per_replica),
        sync_node_s: lift(m.sync_node_s),
        sync_node_s_per_replica: lift(m.sync_node_s_per_replica),
        gamma: m.gamma,
    };
    let p = nelder_mead(
        |p| {
            let pen = (p[6] - p[6].clamp(1.0, MAX_GAMMA)).powi(2);
            log_loss(&from_params(p), data) + pen
        },
        &to_params(&start),
        0.3,
        4000,
    );
    let refined = from_params(&p);
    let model = if log_loss(&refined, data) <= log_loss(&staged, data) {
        refined
    } else {
        staged
    };
    let errs = step_time_errors(&model, data);
    Some(StepTimeFit {
        model,
        median_rel_err: median(&errs),
        max_rel_err: errs.iter().copied().fold(0.0, f64::max),
        samples: data.len(),
    })
}

/// The final progress every curve reaches (base-batch steps): the least of the curves' last
/// rows (Pollux's simulator finishes a job at the progress all its curves reach).
pub fn total_progress(curves: &[ValidationCurve]) -> f64 {
    curves
        .iter()
        .filter_map(|c| c.rows.last().map(|r| r.progress))
        .fold(f64::INFINITY, f64::min)
}

/// Where the phi of an efficiency model comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PhiSource {
    /// phi = B0 x grad_var / grad_sqr as measured: each row's phi holds from the previous row's
    /// progress on (a row's statistics are measured over the interval that ends at its
    /// progress); the point for row i is the geometric mean over the curves of their row i's
    /// phi (every curve is recorded at the same progress points), at the median of their start
    /// fractions.
    GradientStatistics,
    /// The phi that best explains the steps taken: for row i, the phi minimising the squared
    /// log error of every non-base curve's steps between rows i-1 and i, given the progress
    /// made (steps = progress x B0 (phi + B) / (B (phi + B0))). Needs two curves or more.
    Iterations,
}

/// Fits phi versus progress fraction from the curves with `source`; B0 is the smallest
/// curve's batch.
pub fn fit_efficiency_from(
    curves: &[ValidationCurve],
    source: PhiSource,
) -> Option<EfficiencyModel> {
    let b0 = curves.iter().map(|c| c.batch).min()? as f64;
    let total = total_progress(curves);
    if !(total.is_finite() && total > 0.0) {
        return None;
    }
    let rows = curves.iter().map(|c| c.rows.len()).min()?;
    let before = |c: &ValidationCurve, i: usize| {
        if i == 0 {
            (0.0, 0.0)
        } else {
            (c.rows[i - 1].progress, c.rows[i - 1].iteration)
        }
    };
    let mut phi: Vec<(f64, f64)> = Vec::with_capacity(rows);
    for i in 0..rows {
        let starts: Vec<f64> = curves.iter().map(|c| before(c, i).0 / total).collect();
        let f = median(&starts).clamp(0.0, 1.0);
        let value = match source {
            PhiSource::GradientStatistics => {
                let logs: Vec<f64> = curves
                    .iter()
                    .map(|c| b0 * c.rows[i].grad_var / c.rows[i].grad_sqr)
                    .filter(|p| p.is_finite() && *p > 0.0)
                    .map(f64::ln)
                    .collect();
                (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
            }
            PhiSource::Iterations => {
                // (batch, progress made, steps taken) over the row's interval.
                let obs: Vec<(f64, f64, f64)> = curves
                    .iter()
                    .filter(|c| c.batch as f64 != b0)
                    .map(|c| {
                        let (p0, it0) = before(c, i);
                        (
                            c.batch as f64,
                            c.rows[i].progress - p0,
                            c.rows[i].iteration - it0,
                        )
                    })
                    .filter(|&(_, dp, dit)| dp > 0.0 && dit > 0.0)
                    .collect();
                (!obs.is_empty()).then(|| {
                    let loss = |lp: f64| {
                        let p = lp.exp();
                        obs.iter()
                            .map(|&(b, dp, dit)| {
                                (dp * b0 * (p + b) / (b * (p + b0)) / dit).ln().powi(2)
                            })
                            .sum::<f64>()
                    };
                    golden(1e-2f64.ln(), 1e10f64.ln(), loss).exp()
                })
            }
        };
        if let Some(g) = value
            && phi.last().is_none_or(|&(lf, _)| f > lf)
        {
            phi.push((f, g));
        }
    }
    (!phi.is_empty()).then_some(EfficiencyModel { phi })
}

/// The efficiency model of the source whose worst iteration error over the curves is the
/// smaller (see docs/findings/elastic-model.md for both sources' errors per application).
pub fn fit_efficiency(curves: &[ValidationCurve]) -> Option<(EfficiencyModel, PhiSource)> {
    let worst = |m: &EfficiencyModel| {
        check_efficiency(m, curves)
            .iter()
            .map(|c| c.max_rel_err)
            .fold(0.0, f64::max)
    };
    [PhiSource::GradientStatistics, PhiSource::Iterations]
        .into_iter()
        .filter_map(|s| fit_efficiency_from(curves, s).map(|m| (worst(&m), m, s)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, m, s)| (m, s))
}

/// How well an efficiency model predicts one curve: for each row, the steps the model says a
/// run at the curve's batch takes to reach the row's progress (integrating
/// 1 / ((B / B0) E(B, fraction)) over progress), against the measured `iteration`.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveCheck {
    pub batch: u32,
    pub median_rel_err: f64,
    pub max_rel_err: f64,
}

/// Predicted steps at batch `b` to reach progress `p` (base-batch steps) when the job's total is
/// `total`.
pub fn predicted_steps(m: &EfficiencyModel, b: f64, b0: f64, p: f64, total: f64) -> f64 {
    const N: usize = 400;
    let h = p / N as f64;
    let rate = |x: f64| (b / b0) * m.efficiency(b, b0, (x / total).clamp(0.0, 1.0));
    // Midpoint rule.
    (0..N).map(|i| h / rate((i as f64 + 0.5) * h)).sum()
}

/// [`CurveCheck`] for every curve but the base batch's (where prediction is exact by
/// construction).
pub fn check_efficiency(m: &EfficiencyModel, curves: &[ValidationCurve]) -> Vec<CurveCheck> {
    let Some(b0) = curves.iter().map(|c| c.batch).min() else {
        return Vec::new();
    };
    let total = total_progress(curves);
    curves
        .iter()
        .filter(|c| c.batch != b0)
        .map(|c| {
            let errs: Vec<f64> = c
                .rows
                .iter()
                .map(|r| {
                    let pred = predicted_steps(m, c.batch as f64, b0 as f64, r.progress, total);
                    (pred - r.iteration).abs() / r.iteration
                })
                .collect();
            CurveCheck {
                batch: c.batch,
                median_rel_err: median(&errs),
                max_rel_err: errs.iter().copied().fold(0.0, f64::max),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::elastic::model::reference::ValidationRow;

    #[test]
    fn relative_line_is_exact_on_a_line_and_never_negative() {
        let pts: Vec<(f64, f64)> = (1..10).map(|x| (x as f64, 0.5 + 2.0 * x as f64)).collect();
        let (a, b) = relative_line(&pts);
        assert!((a - 0.5).abs() < 1e-9 && (b - 2.0).abs() < 1e-9, "{a} {b}");
        // A falling line is fitted as a constant, not with a negative slope.
        let falling: Vec<(f64, f64)> = (1..10).map(|x| (x as f64, 20.0 - x as f64)).collect();
        let (a, b) = relative_line(&falling);
        assert!(a > 0.0 && b == 0.0, "{a} {b}");
    }

    #[test]
    fn nelder_mead_and_golden_find_minima() {
        let x = nelder_mead(
            |p| (p[0] - 3.0).powi(2) + 10.0 * (p[1] + 1.0).powi(2),
            &[0.0, 0.0],
            0.5,
            2000,
        );
        assert!(
            (x[0] - 3.0).abs() < 1e-4 && (x[1] + 1.0).abs() < 1e-4,
            "{x:?}"
        );
        let g = golden(1.0, 10.0, |v| (v - 4.2).powi(2));
        assert!((g - 4.2).abs() < 1e-6, "{g}");
    }

    /// Curves generated from a known constant phi are predicted exactly (up to the quadrature)
    /// and the fit recovers phi.
    #[test]
    fn efficiency_fit_recovers_a_constant_phi() {
        let (phi, b0) = (500.0, 64.0);
        let curve = |b: f64| {
            let gain = (b / b0) * (phi + b0) / (phi + b);
            let rows = (1..=10)
                .map(|k| {
                    let progress = 1000.0 * k as f64;
                    ValidationRow {
                        progress,
                        iteration: progress / gain,
                        metric: 0.0,
                        grad_sqr: 1.0,
                        grad_var: phi / b0,
                    }
                })
                .collect();
            ValidationCurve {
                batch: b as u32,
                rows,
            }
        };
        let curves: Vec<ValidationCurve> = [64.0, 256.0, 1024.0].map(curve).into();
        for source in [PhiSource::GradientStatistics, PhiSource::Iterations] {
            let m = fit_efficiency_from(&curves, source).unwrap();
            assert!(
                m.phi.iter().all(|&(_, p)| (p - phi).abs() < 1e-6 * phi),
                "{m:?}"
            );
            for c in check_efficiency(&m, &curves) {
                assert!(c.max_rel_err < 1e-6, "{c:?}");
            }
        }
    }
}
