//! Throughput against one axis (CPUs or memory), one line per level of the other: measured
//! cells filled on solid lines, modelled ones hollow on dashed lines, failures a red x at zero,
//! the best case a star, the share a dashed vertical line.

use super::units::{amount, num, spread, trim};
use super::{LOG_SPREAD, SHARE_LABEL, View, ViewCell};
use crate::matrix::CellSource;
use crate::matrix::surface::same_level;
use crate::plot::{
    Chart, FAILED_RED, LegendKey, Mark, MarkerShape, REFERENCE_COLOR, STAR_GOLD, Scale,
};
use plotters::style::{BLACK, RGBColor};

/// Legend text of the ring around a disturbed cell.
pub(super) const DISTURBED_LABEL: &str = "disturbed: other processes\ntook the job's CPUs";

/// Throughput against CPUs, one line per memory level.
pub fn cpu_chart(v: &View) -> Chart {
    let lines = (0..v.mem.len())
        .map(|mi| {
            let cells = (0..v.cpu.len()).map(|ci| (v.cpu[ci], v.cell(ci, mi)));
            (v.mem[mi], cells.collect::<Vec<_>>())
        })
        .collect();
    let best = (v.cpu[v.best.ci], v.best.value);
    let what = "one line per memory level";
    let chart = Chart::new(format!("{}: throughput vs CPUs", v.title))
        .subtitle(v.subtitle(what))
        .x_label(v.cpu_label())
        .y_label(v.y_label());
    curves(
        chart,
        lines,
        &v.cpu,
        (v.share_cpu, "CPUs"),
        v.mem_unit,
        best,
        v,
    )
}

/// Throughput against memory, one line per CPU level.
pub fn memory_chart(v: &View) -> Chart {
    let lines = (0..v.cpu.len())
        .map(|ci| {
            let cells = (0..v.mem.len()).map(|mi| (v.mem[mi], v.cell(ci, mi)));
            (v.cpu[ci], cells.collect::<Vec<_>>())
        })
        .collect();
    let best = (v.mem[v.best.mi], v.best.value);
    let what = "one line per CPU level";
    let chart = Chart::new(format!("{}: throughput vs memory", v.title))
        .subtitle(v.subtitle(what))
        .x_label(v.mem_label())
        .y_label(v.y_label());
    curves(
        chart,
        lines,
        &v.mem,
        (v.share_mem, v.mem_unit),
        "CPUs",
        best,
        v,
    )
}

/// One line of a chart: the level it is drawn at (of the other axis) and its cells.
type Line = (f64, Vec<(f64, ViewCell)>);
/// A line standing for every level with the same cells.
type Merged = (Vec<f64>, Vec<(f64, ViewCell)>);

/// Lines of cells (identical ones merged into one), failure marks, the best case and the share
/// on `chart`. `levels` is the x axis' grid, `share` the share on it with its unit, `unit` the
/// unit of the lines' levels.
fn curves(
    chart: Chart,
    lines: Vec<Line>,
    levels: &[f64],
    share: (f64, &str),
    unit: &str,
    best: (f64, f64),
    v: &View,
) -> Chart {
    let (chart, drawn) = draw_lines(chart, lines, unit);
    let chart = drawn.mark_problems(chart);
    let chart = chart.mark(best_star(v, best));
    let chart = share_and_x_axis(chart, levels, share);
    // Room above the highest point for the best case's label.
    let chart = chart
        .y_range(0.0, (drawn.y_max.max(best.1) * 1.15).max(1e-9))
        .size(1000, 560);
    drawn.legend(chart)
}

/// What the lines drew: the marks drawn over them and the legend's keys follow from it.
#[derive(Default)]
struct Drawn {
    any_estimated: bool,
    any_measured: bool,
    any_failed: bool,
    y_max: f64,
    /// Levels with a failed cell, each once.
    failed_at: Vec<f64>,
    /// Points measured while other processes took the job's CPUs.
    disturbed_at: Vec<(f64, f64)>,
    /// Points `profiler predict` filled from other jobs' matrices.
    predicted_at: Vec<(f64, f64)>,
}

/// The ring drawn around a predicted point.
const PREDICTED_BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const PREDICTED_LABEL: &str = "predicted from other jobs (profiler predict)";

/// Each line (identical ones merged) with its own marker shape, modelled stretches dashed.
fn draw_lines(mut chart: Chart, lines: Vec<Line>, unit: &str) -> (Chart, Drawn) {
    let mut drawn = Drawn::default();
    for (k, (line_levels, cells)) in merge_identical(lines).into_iter().enumerate() {
        let (points, estimated, intervals) = drawn.line(cells);
        let shape = MarkerShape::for_series(k);
        chart = chart
            .line(levels_label(&line_levels, unit), points)
            .markers(shape)
            .estimated(estimated)
            .intervals(intervals);
    }
    (chart, drawn)
}

impl Drawn {
    /// A line's points, which of them are modelled and their intervals, noting what the marks
    /// and the legend need.
    #[allow(clippy::type_complexity)]
    fn line(
        &mut self,
        cells: Vec<(f64, ViewCell)>,
    ) -> (Vec<(f64, f64)>, Vec<bool>, Vec<Option<(f64, f64)>>) {
        let mut points = Vec::new();
        let mut estimated = Vec::new();
        let mut intervals = Vec::new();
        for (x, cell) in cells {
            intervals.push(cell.interval);
            match (cell.value, cell.source) {
                (Some(y), Some(source)) => {
                    points.push((x, y));
                    let est = matches!(source, CellSource::Modelled | CellSource::Predicted);
                    estimated.push(est);
                    if source == CellSource::Predicted {
                        self.predicted_at.push((x, y));
                    }
                    self.any_estimated |= source == CellSource::Modelled;
                    self.any_measured |= !est;
                    let top = cell.interval.map_or(y, |(_, hi)| hi.max(y));
                    self.y_max = self.y_max.max(top);
                    if cell.disturbed {
                        self.disturbed_at.push((x, y));
                    }
                }
                (None, Some(_)) => {
                    // The line does not pass over a failed cell.
                    points.push((x, f64::NAN));
                    estimated.push(false);
                    self.any_failed = true;
                    if !self.failed_at.iter().any(|&f| same_level(f, x)) {
                        self.failed_at.push(x);
                    }
                }
                _ => {
                    intervals.pop();
                }
            }
        }
        (points, estimated, intervals)
    }

    /// Failed levels and disturbed points, marked over the lines.
    fn mark_problems(&self, mut chart: Chart) -> Chart {
        // One x per failed level (the heat map tells which lines).
        for &x in &self.failed_at {
            chart = chart.mark(Mark {
                at: (x, 0.0),
                shape: MarkerShape::Cross,
                color: FAILED_RED,
                filled: false,
                radius: 6,
                label: None,
            });
        }
        // A blue ring around each predicted point: it was not run.
        for &at in &self.predicted_at {
            chart = chart.mark(Mark {
                at,
                shape: MarkerShape::Ring,
                color: PREDICTED_BLUE,
                filled: false,
                radius: 9,
                label: None,
            });
        }
        // A ring around each disturbed point: its rate is not the job's own.
        for &at in &self.disturbed_at {
            chart = chart.mark(Mark {
                at,
                shape: MarkerShape::Ring,
                color: FAILED_RED,
                filled: false,
                radius: 11,
                label: None,
            });
        }
        chart
    }

    /// A key for each kind of symbol drawn, and the best case's.
    fn legend(&self, mut chart: Chart) -> Chart {
        if self.any_measured {
            chart = chart.key(LegendKey {
                label: "measured".into(),
                marker: Some((MarkerShape::Circle, BLACK, true)),
                line: Some((BLACK, false)),
            });
        }
        if self.any_estimated {
            chart = chart.key(LegendKey {
                label: "modelled".into(),
                marker: Some((MarkerShape::Circle, BLACK, false)),
                line: Some((BLACK, true)),
            });
        }
        if self.any_failed {
            chart = chart.key(LegendKey {
                label: "failed / infeasible".into(),
                marker: Some((MarkerShape::Cross, FAILED_RED, false)),
                line: None,
            });
        }
        if !self.predicted_at.is_empty() {
            chart = chart.key(LegendKey {
                label: PREDICTED_LABEL.into(),
                marker: Some((MarkerShape::Ring, PREDICTED_BLUE, false)),
                line: None,
            });
        }
        if !self.disturbed_at.is_empty() {
            chart = chart.key(LegendKey {
                label: DISTURBED_LABEL.into(),
                marker: Some((MarkerShape::Ring, FAILED_RED, false)),
                line: None,
            });
        }
        chart.key(LegendKey {
            label: "best case".into(),
            marker: Some((MarkerShape::Star, STAR_GOLD, true)),
            line: None,
        })
    }
}

/// The best case's star, labelled with its speed-up over the share where the share lies on
/// the grid (beyond it the surface only extrapolates what the share would give).
fn best_star(v: &View, best: (f64, f64)) -> Mark {
    let inside = |levels: &[f64], x: f64| levels[0] <= x && x <= levels[levels.len() - 1];
    let best_label = if inside(&v.cpu, v.share_cpu) && inside(&v.mem, v.share_mem) {
        format!(
            "{} ({}x the share)",
            v.best.label,
            trim(format!("{:.2}", v.best.speedup_over_proportional))
        )
    } else {
        v.best.label.clone()
    };
    Mark {
        at: best,
        shape: MarkerShape::Star,
        color: STAR_GOLD,
        filled: true,
        radius: 9,
        label: Some(best_label),
    }
}

/// The share's line, and the x axis over `levels`, stretched to the share when it lies a
/// little beyond the grid; one far beyond the grid would squash the data, so it is only named
/// in the legend.
fn share_and_x_axis(mut chart: Chart, levels: &[f64], (share, share_unit): (f64, &str)) -> Chart {
    let (lo, hi) = (levels[0], levels[levels.len() - 1]);
    let log = spread(levels) >= LOG_SPREAD;
    let (x0, x1) = (lo.min(share), hi.max(share));
    let near = if log {
        x1 / x0 <= (hi / lo) * 2.0
    } else {
        x1 - x0 <= (hi - lo) * 2.0
    };
    let share_text = format!("{SHARE_LABEL}: {}", amount(share, share_unit));
    let mut ticks = levels.to_vec();
    if near {
        chart = chart.vline(share, share_text, REFERENCE_COLOR);
        if !levels.iter().any(|&l| same_level(l, share)) {
            ticks.push(share);
        }
        chart = x_axis(chart, log, x0, x1, &mut ticks);
    } else {
        chart = chart.key(LegendKey {
            label: format!("{share_text}\n(off the axis)"),
            marker: None,
            line: Some((REFERENCE_COLOR, true)),
        });
        chart = x_axis(chart, log, lo, hi, &mut ticks);
    }
    ticks.sort_by(f64::total_cmp);
    chart.x_ticks(ticks)
}

/// The x axis over `lo..hi`: logarithmic, or linear with room at the ends for the symbols, from
/// 0 (with a tick there) when that is near.
pub(super) fn x_axis(chart: Chart, log: bool, lo: f64, hi: f64, ticks: &mut Vec<f64>) -> Chart {
    if log {
        chart.x_range(lo, hi).x_scale(Scale::Log)
    } else if lo <= 0.3 * hi {
        // From 0, where 0 is not far from the data.
        ticks.push(0.0);
        let lo = lo.min(0.0);
        chart.x_range(lo, hi + (hi - lo) * 0.04)
    } else {
        let pad = (hi - lo) * 0.06;
        chart.x_range(lo - pad, hi + pad)
    }
}

/// Lines with the same cells (values and sources) drawn once: each distinct line with every
/// level it stands for, in order of first appearance. Lines drawn over each other would show
/// only the last.
fn merge_identical(lines: Vec<Line>) -> Vec<Merged> {
    let mut out: Vec<Merged> = Vec::new();
    for (level, cells) in lines {
        match out.iter_mut().find(|(_, c)| same_cells(c, &cells)) {
            Some((levels, _)) => levels.push(level),
            None => out.push((vec![level], cells)),
        }
    }
    out
}

fn same_cells(a: &[(f64, ViewCell)], b: &[(f64, ViewCell)]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((xa, ca), (xb, cb))| {
            same_level(*xa, *xb)
                && ca.source == cb.source
                && ca.disturbed == cb.disturbed
                && match (ca.value, cb.value) {
                    (Some(p), Some(q)) => same_level(p, q),
                    (None, None) => true,
                    _ => false,
                }
        })
}

/// `62.5 GB`; `62.5, 125 GB`; `62.5 to 250 GB` for three or more levels.
pub(super) fn levels_label(levels: &[f64], unit: &str) -> String {
    let unit = if unit == "CPUs" && levels.len() == 1 && levels[0] == 1.0 {
        "CPU"
    } else {
        unit
    };
    match levels {
        [] => unit.to_string(),
        [a, .., b] if levels.len() >= 3 => format!("{} to {} {unit}", num(*a), num(*b)),
        _ => {
            let v: Vec<String> = levels.iter().map(|&l| num(l)).collect();
            format!("{} {unit}", v.join(", "))
        }
    }
}
