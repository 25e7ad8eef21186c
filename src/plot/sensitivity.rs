//! Sensitivity charts of throughput matrices, as the Synergy paper draws them: throughput
//! against CPUs (one line per memory level), against memory (one line per CPU level), a CPU x
//! memory heat map, and, for several matrices, one line per model against CPUs per GPU.
//!
//! Measured cells are filled symbols on solid lines, modelled cells hollow symbols on dashed
//! lines (`~` and a corner notch in the heat map); failed and infeasible cells are a red x at
//! zero (hatched grey in the heat map). The best-case demand ([`best_case`]) is a star, the
//! proportional share of the server shape a dashed vertical line.
//!
//! Values are the matrix's own (samples/s, cores, GiB) or, normalised, Synergy's view:
//! throughput divided by the throughput at the proportional share, levels per GPU (cores, GB).
//!
//! Reproduce the committed figures with
//! `profiler plot matrices/zoo/*.matrix.jsonl --normalize proportional`.

use super::heatmap::{FAILED_RED, REFERENCE_COLOR, STAR_GOLD};
use super::{
    Chart, Figure, HeatCell, HeatCellKind, Heatmap, LegendKey, Mark, MarkerShape, PlotError,
    Reference, Scale,
};
use crate::matrix::surface::{BYTES_PER_GB, same_level};
use crate::matrix::{
    CacheKind, CellSource, CostWeights, Interp, Matrix, MatrixError, ServerShape, Surface,
    SurfaceError, best_case, load_matrix,
};
use plotters::style::BLACK;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

const GIB: f64 = (1u64 << 30) as f64;
const MIB: f64 = (1u64 << 20) as f64;
/// A CPU or memory axis is logarithmic when its largest level is at least this many times its
/// smallest (Synergy's 1..24 cores): the low levels, where throughput changes most, get room.
const LOG_SPREAD: f64 = 8.0;
const SHARE_LABEL: &str = "proportional share";

#[derive(Debug, thiserror::Error)]
pub enum SensitivityError {
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error("{path}: {source}")]
    Surface { path: PathBuf, source: SurfaceError },
    #[error(
        "{path}: throughput at the proportional share of {shape} ({cpus} CPUs, {mem} GB per GPU) \
         is 0, so it cannot be normalised to it; plot it without --normalize"
    )]
    ZeroAtShare {
        path: PathBuf,
        shape: ServerShape,
        cpus: f64,
        mem: f64,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Plot(#[from] PlotError),
}

/// What `profiler plot` draws and where.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotOptions {
    pub out_dir: PathBuf,
    /// Throughput relative to the proportional share, levels per GPU (Synergy's view).
    pub normalize: bool,
    /// Defines the proportional share (and the best case's cost).
    pub server: ServerShape,
    /// Tolerance of the best case: within `eps` of the best throughput counts as best.
    pub eps: f64,
    /// Prices of CPU and memory in the best case's cost.
    pub weights: CostWeights,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            out_dir: PathBuf::from("plots"),
            normalize: false,
            server: ServerShape::default(),
            eps: crate::matrix::DEFAULT_EPS,
            weights: CostWeights::default(),
        }
    }
}

/// One cell of a [`View`]: its value in the view's units (`None`: failed, infeasible or
/// missing) and how it came to be (`None`: missing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ViewCell {
    pub value: Option<f64>,
    pub source: Option<CellSource>,
}

/// The best-case demand in a view's units.
#[derive(Debug, Clone, PartialEq)]
pub struct BestPoint {
    /// Grid indices into [`View::cpu`] and [`View::mem`].
    pub ci: usize,
    pub mi: usize,
    pub value: f64,
    /// E.g. `best: 9 CPUs, 62.5 GB`.
    pub label: String,
    pub speedup_over_proportional: f64,
}

/// One parameter combination of one matrix, in the units it is drawn in.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// File-name stem: the job name, sanitised (the matrix file's name where two jobs share a
    /// name).
    pub name: String,
    /// Model, job when it differs, parameters.
    pub title: String,
    pub normalized: bool,
    /// CPU levels, ascending: cores, or cores per GPU when normalised.
    pub cpu: Vec<f64>,
    /// Memory levels, ascending, in `mem_unit` (per GPU when normalised).
    pub mem: Vec<f64>,
    pub mem_unit: &'static str,
    /// Row-major `[ci * mem.len() + mi]`.
    pub cells: Vec<ViewCell>,
    pub best: BestPoint,
    /// The proportional share, in the axes' units.
    pub share_cpu: f64,
    pub share_mem: f64,
    pub server: ServerShape,
    /// Throughput against CPUs per GPU at the share's memory per GPU (from the surface):
    /// the line this matrix contributes to the overview chart.
    pub overview: Vec<(f64, f64)>,
    /// One line on how well the cache model was validated, when it was.
    pub validation: Option<String>,
}

impl View {
    pub fn cell(&self, ci: usize, mi: usize) -> ViewCell {
        self.cells[ci * self.mem.len() + mi]
    }

    fn y_label(&self) -> &'static str {
        if self.normalized {
            "throughput / throughput at the share"
        } else {
            "samples/s"
        }
    }

    fn cpu_label(&self) -> String {
        let unit = if self.normalized {
            "CPUs per GPU"
        } else {
            "CPUs (cores)"
        };
        with_scale(unit, spread(&self.cpu) >= LOG_SPREAD)
    }

    fn mem_label(&self) -> String {
        let unit = if self.normalized {
            format!("memory ({} per GPU)", self.mem_unit)
        } else {
            format!("memory ({})", self.mem_unit)
        };
        with_scale(&unit, spread(&self.mem) >= LOG_SPREAD)
    }

    fn value_text(&self, v: f64) -> String {
        if self.normalized {
            trim(format!("{v:.2}"))
        } else if v >= 100.0 {
            format!("{v:.0}")
        } else {
            trim(format!("{v:.1}"))
        }
    }

    fn subtitle(&self, what: &str) -> String {
        let mut s = what.to_string();
        if self.normalized {
            s.push_str(&format!(
                "; 1 = at the proportional share of {}",
                self.server
            ));
        }
        if let Some(v) = &self.validation {
            s.push('\n');
            s.push_str(v);
        }
        s
    }
}

/// Loads the matrices, prepares their views and writes every chart into `opts.out_dir`; returns
/// the files written.
pub fn plot_files(paths: &[PathBuf], opts: &PlotOptions) -> Result<Vec<PathBuf>, SensitivityError> {
    let mut matrices = Vec::with_capacity(paths.len());
    for p in paths {
        matrices.push((p.clone(), load_matrix(p)?));
    }
    let views = views(&matrices, opts)?;
    write_plots(&views, opts)
}

/// Views of every parameter combination of every matrix, with unique file names.
pub fn views(
    matrices: &[(PathBuf, Matrix)],
    opts: &PlotOptions,
) -> Result<Vec<View>, SensitivityError> {
    let job_names: Vec<&str> = matrices
        .iter()
        .map(|(_, m)| m.header.job.name.as_str())
        .collect();
    let mut used = HashSet::new();
    let mut out = Vec::new();
    for (path, m) in matrices {
        let shared = job_names
            .iter()
            .filter(|n| **n == m.header.job.name)
            .count()
            > 1;
        let base = if shared {
            file_stem(path)
        } else {
            m.header.job.name.clone()
        };
        let combos: BTreeSet<&BTreeMap<String, String>> =
            m.cells.iter().map(|c| &c.params).collect();
        for params in combos {
            let mut name = sanitize(&base);
            if !params.is_empty() {
                let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                name = format!("{name}.{}", sanitize(&p.join(",")));
            }
            let mut unique = name.clone();
            let mut k = 2;
            while !used.insert(unique.clone()) {
                unique = format!("{name}-{k}");
                k += 1;
            }
            let mut v = view(path, m, params, unique, opts)?;
            if shared {
                // Legends and titles must tell the files apart too.
                v.title = v.title.replacen(&m.header.job.model, &base, 1);
            }
            out.push(v);
        }
    }
    Ok(out)
}

/// The view of the cells of `m` with exactly `params`.
pub fn view(
    path: &Path,
    m: &Matrix,
    params: &BTreeMap<String, String>,
    name: String,
    opts: &PlotOptions,
) -> Result<View, SensitivityError> {
    let surface =
        Surface::from_matrix_params(m, params).map_err(|source| SensitivityError::Surface {
            path: path.to_owned(),
            source,
        })?;
    let shape = opts.server;
    let demand = best_case(&surface, &shape, opts.eps, opts.weights);
    let proportional = demand.proportional_samples_per_s_per_gpu;
    if opts.normalize && (proportional.is_nan() || proportional <= 0.0) {
        return Err(SensitivityError::ZeroAtShare {
            path: path.to_owned(),
            shape,
            cpus: shape.share_cpus(),
            mem: shape.share_mem_gb(),
        });
    }
    let g = f64::from(surface.gpus);
    let cells: Vec<_> = m.cells.iter().filter(|c| &c.params == params).collect();
    let max_bytes = cells.iter().map(|c| c.memory_bytes).max().unwrap_or(0) as f64;
    // Units: per GPU and GB when normalised (Synergy's); else the job's cores and GiB (MiB for
    // matrices whose levels are all below a GiB).
    let (mem_div, mem_unit) = if opts.normalize {
        (BYTES_PER_GB * g, "GB")
    } else if max_bytes < GIB {
        (MIB, "MiB")
    } else {
        (GIB, "GiB")
    };
    let cpu_div = if opts.normalize { g } else { 1.0 };
    let value_of = |samples_per_s: f64| {
        if opts.normalize {
            samples_per_s / g / proportional
        } else {
            samples_per_s
        }
    };
    let mut cpu: Vec<f64> = cells.iter().map(|c| c.cpu / cpu_div).collect();
    let mut mem: Vec<f64> = cells
        .iter()
        .map(|c| c.memory_bytes as f64 / mem_div)
        .collect();
    for v in [&mut cpu, &mut mem] {
        v.sort_by(f64::total_cmp);
        v.dedup_by(|a, b| same_level(*a, *b));
    }
    let nm = mem.len();
    let mut grid = vec![
        ViewCell {
            value: None,
            source: None,
        };
        cpu.len() * nm
    ];
    for c in &cells {
        let ci = level(&cpu, c.cpu / cpu_div);
        let mi = level(&mem, c.memory_bytes as f64 / mem_div);
        let value = match c.source {
            CellSource::Failed | CellSource::Infeasible => None,
            _ => c.samples_per_s().filter(|v| v.is_finite()).map(value_of),
        };
        // A repeated cell: the later one wins, as in the matrix file.
        grid[ci * nm + mi] = ViewCell {
            value,
            source: Some(c.source),
        };
    }

    // The demand is per GPU in GB; the view's grid is the same grid in its own units.
    let ci = Surface::level_index(&surface.cpu, demand.cpus_per_gpu).unwrap_or(0);
    let mi = Surface::level_index(&surface.mem, demand.mem_gb_per_gpu).unwrap_or(0);
    let (ci, mi) = (ci.min(cpu.len() - 1), mi.min(nm - 1));
    let best_value = grid[ci * nm + mi]
        .value
        .unwrap_or_else(|| value_of(demand.samples_per_s_per_gpu * g));
    let per_gpu = if opts.normalize && surface.gpus > 1 {
        "/GPU"
    } else {
        ""
    };
    let best = BestPoint {
        ci,
        mi,
        value: best_value,
        label: format!(
            "best: {}{per_gpu}, {}{per_gpu}",
            amount(cpu[ci], "CPUs"),
            amount(mem[mi], mem_unit)
        ),
        speedup_over_proportional: demand.speedup_over_proportional,
    };

    let share_mem_gb = shape.share_mem_gb();
    let overview = surface
        .cpu
        .iter()
        .map(|&c| {
            let v = surface.at(c, share_mem_gb, Interp::Bilinear);
            (c, if opts.normalize { v / proportional } else { v })
        })
        .collect();

    let h = &m.header;
    let mut title = h.job.model.clone();
    if h.job.name != h.job.model {
        title.push_str(&format!(" ({})", h.job.name));
    }
    if !params.is_empty() {
        let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        title.push_str(&format!(" [{}]", p.join(", ")));
    }
    let chosen: Option<CacheKind> = h.cache_model.as_ref().map(|c| c.kind);
    Ok(View {
        name,
        title,
        normalized: opts.normalize,
        share_cpu: shape.share_cpus() * g / cpu_div,
        share_mem: share_mem_gb * BYTES_PER_GB * g / mem_div,
        cpu,
        mem,
        mem_unit,
        cells: grid,
        best,
        server: shape,
        overview,
        validation: h.validation.as_ref().map(|v| v.summary(chosen)),
    })
}

/// Writes each view's three charts, and the overview when there are several views; returns
/// the files written (PNG and SVG of each).
pub fn write_plots(views: &[View], opts: &PlotOptions) -> Result<Vec<PathBuf>, SensitivityError> {
    let dir = &opts.out_dir;
    std::fs::create_dir_all(dir).map_err(|source| SensitivityError::Io {
        path: dir.clone(),
        source,
    })?;
    let suffix = if opts.normalize { ".normalized" } else { "" };
    let mut written = Vec::new();
    for v in views {
        let name = |what: &str| format!("{}.{what}{suffix}", v.name);
        written.extend(cpu_chart(v).save_png_and_svg(dir, &name("cpu"))?);
        written.extend(memory_chart(v).save_png_and_svg(dir, &name("memory"))?);
        written.extend(heatmap(v).save_png_and_svg(dir, &name("heatmap"))?);
    }
    if views.len() > 1 {
        let name = format!("overview{suffix}");
        written.extend(overview_chart(views, opts).save_png_and_svg(dir, &name)?);
    }
    Ok(written)
}

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
/// Models with the same overview curve.
type SameCurve<'a> = (Vec<&'a str>, &'a [(f64, f64)]);

/// Lines of cells (identical ones merged into one), failure marks, the best case and the share
/// on `chart`. `levels` is the x axis' grid, `share` the share on it with its unit, `unit` the
/// unit of the lines' levels.
fn curves(
    mut chart: Chart,
    lines: Vec<Line>,
    levels: &[f64],
    (share, share_unit): (f64, &str),
    unit: &str,
    best: (f64, f64),
    v: &View,
) -> Chart {
    let (lo, hi) = (levels[0], levels[levels.len() - 1]);
    let log = spread(levels) >= LOG_SPREAD;
    let (mut any_estimated, mut any_measured, mut any_failed) = (false, false, false);
    let mut y_max: f64 = 0.0;
    let mut failed_at: Vec<f64> = Vec::new();
    for (k, (line_levels, cells)) in merge_identical(lines).into_iter().enumerate() {
        let mut points = Vec::new();
        let mut estimated = Vec::new();
        for (x, cell) in cells {
            match (cell.value, cell.source) {
                (Some(y), Some(source)) => {
                    points.push((x, y));
                    let est = source == CellSource::Modelled;
                    estimated.push(est);
                    any_estimated |= est;
                    any_measured |= !est;
                    y_max = y_max.max(y);
                }
                (None, Some(_)) => {
                    // The line does not pass over a failed cell.
                    points.push((x, f64::NAN));
                    estimated.push(false);
                    any_failed = true;
                    if !failed_at.iter().any(|&f| same_level(f, x)) {
                        failed_at.push(x);
                    }
                }
                _ => {}
            }
        }
        let shape = MarkerShape::for_series(k);
        chart = chart
            .line(levels_label(&line_levels, unit), points)
            .markers(shape)
            .estimated(estimated);
    }
    // One x per failed level (the heat map tells which lines).
    for x in failed_at {
        chart = chart.mark(Mark {
            at: (x, 0.0),
            shape: MarkerShape::Cross,
            color: FAILED_RED,
            filled: false,
            radius: 6,
            label: None,
        });
    }
    // The speed-up over the share, where the share lies on the grid (beyond it the surface
    // only extrapolates what the share would give).
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
    chart = chart.mark(Mark {
        at: best,
        shape: MarkerShape::Star,
        color: STAR_GOLD,
        filled: true,
        radius: 9,
        label: Some(best_label),
    });
    // The share's line, and the axis stretched to it when it lies a little beyond the grid;
    // one far beyond the grid would squash the data, so it is only named in the legend.
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
    chart = chart.x_ticks(ticks);
    // Room above the highest point for the best case's label.
    chart = chart.y_range(0.0, (y_max.max(best.1) * 1.15).max(1e-9));
    chart = chart.size(1000, 560);
    if any_measured {
        chart = chart.key(LegendKey {
            label: "measured".into(),
            marker: Some((MarkerShape::Circle, BLACK, true)),
            line: Some((BLACK, false)),
        });
    }
    if any_estimated {
        chart = chart.key(LegendKey {
            label: "modelled".into(),
            marker: Some((MarkerShape::Circle, BLACK, false)),
            line: Some((BLACK, true)),
        });
    }
    if any_failed {
        chart = chart.key(LegendKey {
            label: "failed / infeasible".into(),
            marker: Some((MarkerShape::Cross, FAILED_RED, false)),
            line: None,
        });
    }
    chart.key(LegendKey {
        label: "best case".into(),
        marker: Some((MarkerShape::Star, STAR_GOLD, true)),
        line: None,
    })
}

/// The x axis over `lo..hi`: logarithmic, or linear with room at the ends for the symbols, from
/// 0 (with a tick there) when that is near.
fn x_axis(chart: Chart, log: bool, lo: f64, hi: f64, ticks: &mut Vec<f64>) -> Chart {
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
                && match (ca.value, cb.value) {
                    (Some(p), Some(q)) => same_level(p, q),
                    (None, None) => true,
                    _ => false,
                }
        })
}

/// `62.5 GB`; `62.5, 125 GB`; `62.5 to 250 GB` for three or more levels.
fn levels_label(levels: &[f64], unit: &str) -> String {
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

/// `3 CPUs`, `1 CPU`, `62.5 GB`; memory in MiB past a GiB in GiB (a share far above a small
/// matrix's levels).
fn amount(v: f64, unit: &str) -> String {
    match unit {
        "CPUs" if v == 1.0 => "1 CPU".into(),
        "MiB" if v >= 1024.0 => format!("{} GiB", num(v / 1024.0)),
        _ => format!("{} {unit}", num(v)),
    }
}

/// Names joined by commas, broken into lines of about `width` characters (legend labels).
fn wrap_names(names: &[&str], width: usize) -> String {
    let mut lines: Vec<String> = vec![String::new()];
    for (i, n) in names.iter().enumerate() {
        let piece = if i + 1 < names.len() {
            format!("{n},")
        } else {
            n.to_string()
        };
        let cur = lines.last_mut().expect("a line");
        if !cur.is_empty() && cur.len() + 1 + piece.len() > width {
            lines.push(piece);
        } else {
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(&piece);
        }
    }
    lines.join("\n")
}

/// CPU x memory heat map of the cells' values.
pub fn heatmap(v: &View) -> Heatmap {
    let mut cells = Vec::with_capacity(v.cells.len());
    // Rows are memory levels (bottom up), columns CPU levels.
    for mi in 0..v.mem.len() {
        for ci in 0..v.cpu.len() {
            let c = v.cell(ci, mi);
            let (kind, text) = match (c.source, c.value) {
                (None, _) => (HeatCellKind::Missing, "-".to_string()),
                (Some(CellSource::Infeasible), _) => (HeatCellKind::Failed, "OOM".into()),
                (Some(_), None) => (HeatCellKind::Failed, "failed".into()),
                (Some(CellSource::Modelled), Some(x)) => {
                    (HeatCellKind::Estimated, format!("~{}", v.value_text(x)))
                }
                (Some(_), Some(x)) => (HeatCellKind::Measured, v.value_text(x)),
            };
            cells.push(HeatCell {
                value: c.value,
                text,
                kind,
            });
        }
    }
    let (what, per_cell) = if v.normalized {
        (
            "throughput / throughput at the share",
            "in each cell: throughput / throughput at the share",
        )
    } else {
        ("samples/s", "in each cell: samples/s")
    };
    let column = fractional_index(&v.cpu, v.share_cpu);
    let row = fractional_index(&v.mem, v.share_mem);
    let mut label = format!(
        "{SHARE_LABEL}: {}, {}",
        amount(v.share_cpu, "CPUs"),
        amount(v.share_mem, v.mem_unit)
    );
    if column.is_none() && row.is_none() {
        label.push_str("\n(off the grid)");
    }
    Heatmap {
        title: format!("{}: throughput by CPU and memory", v.title),
        subtitle: Some(v.subtitle(per_cell)),
        x_label: v.cpu_label().replace(", log scale", ""),
        y_label: v.mem_label().replace(", log scale", ""),
        columns: v.cpu.iter().map(|&c| num(c)).collect(),
        rows: v.mem.iter().map(|&m| num(m)).collect(),
        cells,
        value_label: what.into(),
        best: Some(((v.best.ci, v.best.mi), v.best.label.clone())),
        reference: Some(Reference { column, row, label }),
        size: (1000, 560),
    }
}

/// Every view's throughput against CPUs per GPU at the share's memory per GPU, one line per
/// model (Synergy's sensitivity figure).
pub fn overview_chart(views: &[View], opts: &PlotOptions) -> Chart {
    let share_cpus = opts.server.share_cpus();
    let share_mem = opts.server.share_mem_gb();
    let levels: Vec<f64> = views
        .iter()
        .flat_map(|v| v.overview.iter().map(|p| p.0))
        .collect();
    let (lo, hi) = levels
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let log = lo > 0.0 && hi.max(share_cpus) / lo.min(share_cpus) >= LOG_SPREAD;
    let y_max = views
        .iter()
        .flat_map(|v| v.overview.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let (y_label, note) = if opts.normalize {
        (
            "throughput / throughput at the share",
            format!("1 = at the proportional share of {}", opts.server),
        )
    } else {
        ("samples/s per GPU", format!("server {}", opts.server))
    };
    let mut chart = Chart::new("Throughput vs CPUs per GPU, by model")
        .subtitle(format!(
            "memory at the proportional share ({} GB per GPU); {note}",
            num(share_mem)
        ))
        .x_label(with_scale("CPUs per GPU", log))
        .y_label(y_label)
        .y_range(0.0, (y_max * 1.08).max(1e-9))
        .size(1000, 600);
    // Models with the same curve (Synergy's zoo has six flat at 1) share one line.
    let mut groups: Vec<SameCurve> = Vec::new();
    for v in views {
        let same_curve = |c: &[(f64, f64)]| {
            c.len() == v.overview.len()
                && c.iter()
                    .zip(&v.overview)
                    .all(|(p, q)| same_level(p.0, q.0) && same_level(p.1, q.1))
        };
        match groups.iter_mut().find(|(_, c)| same_curve(c)) {
            Some((names, _)) => names.push(&v.title),
            None => groups.push((vec![&v.title], &v.overview)),
        }
    }
    for (k, (names, curve)) in groups.into_iter().enumerate() {
        let shape = MarkerShape::for_series(k);
        chart = chart
            .line(wrap_names(&names, 24), curve.to_vec())
            .markers(shape);
    }
    let mut ticks = levels.clone();
    ticks.push(share_cpus);
    chart = x_axis(
        chart,
        log,
        lo.min(share_cpus),
        hi.max(share_cpus),
        &mut ticks,
    );
    ticks.sort_by(f64::total_cmp);
    ticks.dedup_by(|a, b| same_level(*a, *b));
    chart.x_ticks(ticks).vline(
        share_cpus,
        format!("{SHARE_LABEL}: {}", amount(share_cpus, "CPUs")),
        REFERENCE_COLOR,
    )
}

/// `x` as a fractional index into ascending `levels` for the heat map (`i + 0.5` at level `i`,
/// linear between levels); `None` outside the levels.
fn fractional_index(levels: &[f64], x: f64) -> Option<f64> {
    if let Some(i) = levels.iter().position(|&l| same_level(l, x)) {
        return Some(i as f64 + 0.5);
    }
    let hi = levels.iter().position(|&l| l > x)?;
    if hi == 0 {
        return None;
    }
    let (a, b) = (levels[hi - 1], levels[hi]);
    Some(hi as f64 - 0.5 + (x - a) / (b - a))
}

fn spread(levels: &[f64]) -> f64 {
    match (levels.first(), levels.last()) {
        (Some(&lo), Some(&hi)) if lo > 0.0 => hi / lo,
        _ => 1.0,
    }
}

fn with_scale(label: &str, log: bool) -> String {
    if log {
        format!("{label}, log scale")
    } else {
        label.to_string()
    }
}

fn level(levels: &[f64], x: f64) -> usize {
    Surface::level_index(levels, x).expect("level collected from the same cells")
}

/// A level for labels: few digits, no float noise (20.83 -> 20.8, 62.5, 0.5).
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        trim(format!("{v:.1}"))
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A file-name stem: letters, digits, `.`, `_`, `-` and `=` kept, anything else `-`.
pub fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '=') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches(|c| c == '.' || c == '-').to_string();
    if s.is_empty() { "matrix".into() } else { s }
}

/// `dir/name.matrix.jsonl` -> `name`.
fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(".matrix.jsonl")
        .or_else(|| name.strip_suffix(".jsonl"))
        .unwrap_or(&name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::fixtures;
    use crate::matrix::{Cell, Throughput};

    fn cell(cpu: f64, gb: f64, source: CellSource, v: Option<f64>) -> Cell {
        let mut c = fixtures::cell(cpu);
        c.memory_bytes = (gb * 1e9) as u64;
        c.source = source;
        c.throughput = v.map(|samples_per_s| Throughput {
            samples_per_s,
            ci95_low: samples_per_s,
            ci95_high: samples_per_s,
            windows: 1,
            measured_s: 1.0,
        });
        c
    }

    /// Two GPUs; 2 and 6 cores x 62.5 and 125 GB; one failed cell, one modelled.
    fn matrix() -> Matrix {
        let mut header = fixtures::header("job");
        header.job.gpus = 2;
        Matrix {
            header,
            cells: vec![
                cell(2.0, 62.5, CellSource::Failed, None),
                cell(2.0, 125.0, CellSource::Measured, Some(200.0)),
                cell(6.0, 62.5, CellSource::Modelled, Some(300.0)),
                cell(6.0, 125.0, CellSource::Measured, Some(600.0)),
            ],
        }
    }

    #[test]
    fn view_per_gpu_and_normalised() {
        let opts = PlotOptions {
            normalize: true,
            server: "24:8:500".parse().unwrap(),
            eps: 0.0,
            ..PlotOptions::default()
        };
        let v = view(
            Path::new("m"),
            &matrix(),
            &BTreeMap::new(),
            "job".into(),
            &opts,
        )
        .unwrap();
        // Per GPU: 1 and 3 cores, 31.25 and 62.5 GB.
        assert_eq!(v.cpu, vec![1.0, 3.0]);
        assert_eq!(v.mem, vec![31.25, 62.5]);
        assert_eq!((v.share_cpu, v.share_mem), (3.0, 62.5));
        // 600 samples/s for the job = 300 per GPU at the share: 1.
        assert_eq!(v.cell(1, 1).value, Some(1.0));
        assert_eq!(v.cell(0, 1).value, Some(200.0 / 600.0));
        assert_eq!(
            v.cell(0, 0),
            ViewCell {
                value: None,
                source: Some(CellSource::Failed)
            }
        );
        assert_eq!((v.best.ci, v.best.mi), (1, 1));
        assert_eq!(v.best.label, "best: 3 CPUs/GPU, 62.5 GB/GPU");
        assert_eq!(v.overview, vec![(1.0, 200.0 / 600.0), (3.0, 1.0)]);
    }

    #[test]
    fn view_in_the_matrix_units() {
        let v = view(
            Path::new("m"),
            &matrix(),
            &BTreeMap::new(),
            "job".into(),
            &PlotOptions::default(),
        )
        .unwrap();
        assert_eq!(v.cpu, vec![2.0, 6.0]);
        assert_eq!(v.mem_unit, "GiB");
        assert!((v.mem[1] - 125e9 / GIB).abs() < 1e-9);
        assert_eq!(v.cell(1, 1).value, Some(600.0));
        assert_eq!((v.share_cpu, v.best.value), (6.0, 600.0));
        let chart = cpu_chart(&v);
        assert_eq!(chart.series.len(), 2);
        // The failed cell is a gap in its line.
        let line = &chart.series[0].points;
        assert!(line.len() == 2 && line[0].0 == 2.0 && line[0].1.is_nan());
        assert_eq!(line[1], (6.0, 300.0));
        assert_eq!(chart.series[0].estimated, vec![false, true]);
        let fails: Vec<_> = chart
            .marks
            .iter()
            .filter(|m| m.shape == MarkerShape::Cross)
            .collect();
        assert_eq!(fails.len(), 1);
        assert_eq!(fails[0].at, (2.0, 0.0));
    }

    #[test]
    fn names_and_levels() {
        assert_eq!(sanitize("res/net 18"), "res-net-18");
        assert_eq!(sanitize("../x"), "x");
        assert_eq!(sanitize(""), "matrix");
        assert_eq!(
            file_stem(Path::new("a/b.measured.matrix.jsonl")),
            "b.measured"
        );
        assert_eq!(num(20.83), "20.8");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(num(187.5), "187.5");
        assert_eq!(fractional_index(&[1.0, 2.0, 4.0], 2.0), Some(1.5));
        assert_eq!(fractional_index(&[1.0, 2.0, 4.0], 3.0), Some(2.0));
        assert_eq!(fractional_index(&[1.0, 2.0, 4.0], 5.0), None);
        assert_eq!(fractional_index(&[1.0, 2.0, 4.0], 0.5), None);
    }
}
