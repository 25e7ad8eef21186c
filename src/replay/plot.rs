//! Replay plots through [`crate::plot::Chart`], each as PNG and SVG side by side: the JCT CDF of
//! every scheme and, per scheme, GPU/CPU/memory allocation and GPU use over time.

use super::error::ReplayError;
use super::{ReplaySummary, RunResult};
use crate::plot::{Chart, Scale, thin};
use std::path::{Path, PathBuf};

/// Points per line at most (long replays are thinned evenly; the CSVs keep every round).
const MAX_POINTS: usize = 2000;
/// The JCT axis is logarithmic when the longest measured JCT is at least this many times the
/// shortest.
const LOG_SPREAD: f64 = 50.0;

/// `policy+mechanism`, the scheme's name in legends and titles.
fn scheme(r: &RunResult) -> String {
    format!("{}+{}", r.summary.policy, r.summary.mechanism)
}

/// Writes `jct_cdf.{png,svg}` (all schemes) and `<policy>-<mechanism>.utilization.{png,svg}`
/// into `dir`; returns the paths written.
pub fn write_plots(s: &ReplaySummary, dir: &Path) -> Result<Vec<PathBuf>, ReplayError> {
    std::fs::create_dir_all(dir).map_err(ReplayError::io(dir))?;
    let mut written = Vec::new();
    written.extend(jct_cdf(s).save_png_and_svg(dir, "jct_cdf")?);
    for r in &s.runs {
        let name = format!("{}-{}.utilization", r.summary.policy, r.summary.mechanism);
        written.extend(utilization(s, r).save_png_and_svg(dir, &name)?);
    }
    Ok(written)
}

/// Fraction of finished jobs with JCT <= x (hours), one line per scheme.
pub fn jct_cdf(s: &ReplaySummary) -> Chart {
    let jcts: Vec<Vec<f64>> = s
        .runs
        .iter()
        .map(|r| {
            r.finished_jct_s
                .iter()
                .map(|x| x / 3600.0)
                .filter(|x| x.is_finite() && *x > 0.0)
                .collect()
        })
        .collect();
    let lo = jcts
        .iter()
        .flat_map(|v| v.first())
        .copied()
        .fold(f64::INFINITY, f64::min);
    let hi = jcts
        .iter()
        .flat_map(|v| v.last())
        .copied()
        .fold(0.0, f64::max);
    let log = lo.is_finite() && hi / lo >= LOG_SPREAD;
    let mut chart = Chart::new("JCT CDF")
        .x_label(if log {
            "JCT (hours, log scale)"
        } else {
            "JCT (hours)"
        })
        .y_label("fraction of jobs")
        .y_range(0.0, 1.0);
    if log {
        chart = chart.x_scale(Scale::Log);
    } else if hi > 0.0 {
        chart = chart.x_range(0.0, hi);
    }
    for (r, v) in s.runs.iter().zip(&jcts) {
        let n = v.len() as f64;
        // Staircase: up by 1/n at each JCT.
        let mut pts = Vec::with_capacity(2 * v.len());
        for (i, x) in v.iter().enumerate() {
            pts.push((*x, i as f64 / n));
            pts.push((*x, (i + 1) as f64 / n));
        }
        chart = chart.line(scheme(r), thin(pts, MAX_POINTS));
    }
    chart
}

/// GPU, CPU and memory allocated and GPU use, in % of the cluster, over time (hours).
pub fn utilization(s: &ReplaySummary, r: &RunResult) -> Chart {
    let (g, c, m) = (s.totals.0 as f64, s.totals.1, s.totals.2);
    let pct = |v: f64, total: f64| if total > 0.0 { v / total * 100.0 } else { 0.0 };
    let line = |f: &dyn Fn(&super::engine::RoundRow) -> f64| {
        thin(
            r.rounds.iter().map(|x| (x.t / 3600.0, f(x))).collect(),
            MAX_POINTS,
        )
    };
    let t_max = r.rounds.last().map_or(0.0, |x| x.t / 3600.0);
    let y_max = r
        .rounds
        .iter()
        .flat_map(|x| {
            [
                pct(x.gpus as f64, g),
                pct(x.gpu_use, g),
                pct(x.cpus, c),
                pct(x.mem_gb, m),
            ]
        })
        .fold(100.0, f64::max);
    let mut chart = Chart::new(format!("Cluster allocation over time, {}", scheme(r)))
        .x_label("time (hours)")
        .y_label("% of cluster")
        .y_range(0.0, y_max)
        // Allocations often coincide (proportional shares): widest first, so each stays
        // visible around the next; GPU use dashed on top.
        .line("GPU allocated", line(&|x| pct(x.gpus as f64, g)))
        .width(7)
        .line("CPU allocated", line(&|x| pct(x.cpus, c)))
        .width(4)
        .line("memory allocated", line(&|x| pct(x.mem_gb, m)))
        .width(2)
        .dashed_line("GPU use", line(&|x| pct(x.gpu_use, g)))
        .width(2);
    if t_max > 0.0 {
        chart = chart.x_range(0.0, t_max);
    }
    chart
}
