//! Sensitivity charts of throughput matrices, as the Synergy paper draws them: throughput
//! against CPUs (one line per memory level), against memory (one line per CPU level), a CPU x
//! memory heat map, and, for several matrices, one line per model against CPUs per GPU.
//!
//! Measured cells are filled symbols on solid lines, modelled cells hollow symbols on dashed
//! lines (`~` and a corner notch in the heat map); failed and infeasible cells are a red x at
//! zero (hatched grey in the heat map); cells measured while other processes took the job's
//! CPUs are ringed in red (`!` and a red ring in the heat map's cell). The best-case demand
//! ([`best_case`]) is a star, the proportional share of the server shape a dashed vertical line.
//!
//! Values are the matrix's own (samples/s, cores, GiB) or, normalised, Synergy's view:
//! throughput divided by the throughput at the proportional share, levels per GPU (cores, GB).
//!
//! This file turns matrices into [`View`]s and writes the charts; `curves.rs` draws throughput
//! against one axis, `grid.rs` the heat map, `overview.rs` the chart of several models, and
//! `units.rs` formats numbers and names.
//!
//! Reproduce the committed figures with
//! `profiler plot matrices/zoo/*.matrix.jsonl --normalize proportional`.

mod curves;
mod grid;
mod overview;
#[cfg(test)]
mod tests;
mod units;

pub use curves::{cpu_chart, memory_chart};
pub use grid::heatmap;
pub use overview::overview_chart;
pub use units::{num, sanitize, unique_name};

use super::{Figure, PlotError};
use crate::matrix::surface::{BYTES_PER_GB, same_level};
use crate::matrix::{
    CacheKind, Cell, CellSource, CostWeights, Demand, Interp, Matrix, MatrixError, ServerShape,
    Surface, SurfaceError, best_case, is_disturbed, load_matrix,
};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use units::{amount, file_stem, level, spread, trim, with_scale};

use crate::units::GIB;
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
    /// Measured while other processes took the job's CPUs (see `matrix::checks`).
    pub disturbed: bool,
    /// A measured cell's 95% interval (low, high) in the view's units.
    pub interval: Option<(f64, f64)>,
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
            let unique = unique_name(&mut used, &name);
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
    let units = ViewUnits::new(&cells, opts.normalize, g, proportional);
    let grid = units.grid(&cells);
    let best = best_point(&surface, &demand, &grid, &units);
    let share_mem_gb = shape.share_mem_gb();
    let overview = overview_line(&surface, share_mem_gb, &units);
    let h = &m.header;
    let chosen: Option<CacheKind> = h.cache_model.as_ref().map(|c| c.kind);
    Ok(View {
        name,
        title: title(m, params),
        normalized: opts.normalize,
        share_cpu: shape.share_cpus() * g / units.cpu_div,
        share_mem: share_mem_gb * BYTES_PER_GB * g / units.mem_div,
        cpu: grid.cpu,
        mem: grid.mem,
        mem_unit: units.mem_unit,
        cells: grid.cells,
        best,
        server: shape,
        overview,
        validation: h.validation.as_ref().map(|v| v.summary(chosen)),
    })
}

/// How a matrix's figures become a view's: per GPU and GB when normalised (Synergy's), else
/// the job's cores and GiB (MiB for matrices whose levels are all below a GiB); throughput
/// over the share's when normalised.
struct ViewUnits {
    normalize: bool,
    /// The job's GPUs.
    gpus: f64,
    /// Samples/s per GPU at the proportional share.
    proportional: f64,
    cpu_div: f64,
    mem_div: f64,
    mem_unit: &'static str,
}

impl ViewUnits {
    fn new(cells: &[&Cell], normalize: bool, gpus: f64, proportional: f64) -> Self {
        let max_bytes = cells.iter().map(|c| c.memory_bytes).max().unwrap_or(0) as f64;
        let (mem_div, mem_unit) = if normalize {
            (BYTES_PER_GB * gpus, "GB")
        } else if max_bytes < GIB {
            (MIB, "MiB")
        } else {
            (GIB, "GiB")
        };
        let cpu_div = if normalize { gpus } else { 1.0 };
        ViewUnits {
            normalize,
            gpus,
            proportional,
            cpu_div,
            mem_div,
            mem_unit,
        }
    }

    /// A rate in the view's units.
    fn value(&self, samples_per_s: f64) -> f64 {
        if self.normalize {
            samples_per_s / self.gpus / self.proportional
        } else {
            samples_per_s
        }
    }

    fn cpu(&self, c: &Cell) -> f64 {
        c.cpu / self.cpu_div
    }

    fn mem(&self, c: &Cell) -> f64 {
        c.memory_bytes as f64 / self.mem_div
    }

    /// The cells on the grid of their levels, in the view's units.
    fn grid(&self, cells: &[&Cell]) -> ViewGrid {
        let mut cpu: Vec<f64> = cells.iter().map(|c| self.cpu(c)).collect();
        let mut mem: Vec<f64> = cells.iter().map(|c| self.mem(c)).collect();
        for v in [&mut cpu, &mut mem] {
            v.sort_by(f64::total_cmp);
            v.dedup_by(|a, b| same_level(*a, *b));
        }
        let nm = mem.len();
        let mut grid = vec![
            ViewCell {
                value: None,
                source: None,
                disturbed: false,
                interval: None,
            };
            cpu.len() * nm
        ];
        for c in cells {
            let ci = level(&cpu, self.cpu(c));
            let mi = level(&mem, self.mem(c));
            let value = match c.source {
                CellSource::Failed | CellSource::Infeasible => None,
                _ => c
                    .samples_per_s()
                    .filter(|v| v.is_finite())
                    .map(|v| self.value(v)),
            };
            let interval = (c.throughput.as_ref())
                .filter(|_| value.is_some())
                .filter(|_| matches!(c.source, CellSource::Measured | CellSource::Predicted))
                .filter(|t| t.ci95_low.is_finite() && t.ci95_high.is_finite())
                .map(|t| (self.value(t.ci95_low), self.value(t.ci95_high)));
            // A repeated cell: the later one wins, as in the matrix file.
            grid[ci * nm + mi] = ViewCell {
                value,
                source: Some(c.source),
                disturbed: value.is_some() && is_disturbed(c),
                interval,
            };
        }
        ViewGrid {
            cpu,
            mem,
            cells: grid,
        }
    }
}

/// A view's levels, ascending, and its cells, row-major as in [`View::cells`].
struct ViewGrid {
    cpu: Vec<f64>,
    mem: Vec<f64>,
    cells: Vec<ViewCell>,
}

/// The best-case demand on the view's grid. The demand is per GPU in GB; the view's grid is the
/// same grid in its own units.
fn best_point(surface: &Surface, demand: &Demand, grid: &ViewGrid, units: &ViewUnits) -> BestPoint {
    let (cpu, mem) = (&grid.cpu, &grid.mem);
    let nm = mem.len();
    let ci = Surface::level_index(&surface.cpu, demand.cpus_per_gpu).unwrap_or(0);
    let mi = Surface::level_index(&surface.mem, demand.mem_gb_per_gpu).unwrap_or(0);
    let (ci, mi) = (ci.min(cpu.len() - 1), mi.min(nm - 1));
    let best_value = grid.cells[ci * nm + mi]
        .value
        .unwrap_or_else(|| units.value(demand.samples_per_s_per_gpu * units.gpus));
    let per_gpu = if units.normalize && surface.gpus > 1 {
        "/GPU"
    } else {
        ""
    };
    BestPoint {
        ci,
        mi,
        value: best_value,
        label: format!(
            "best: {}{per_gpu}, {}{per_gpu}",
            amount(cpu[ci], "CPUs"),
            amount(mem[mi], units.mem_unit)
        ),
        speedup_over_proportional: demand.speedup_over_proportional,
    }
}

/// Throughput against CPUs per GPU at the share's memory per GPU, from the surface.
fn overview_line(surface: &Surface, share_mem_gb: f64, units: &ViewUnits) -> Vec<(f64, f64)> {
    surface
        .cpu
        .iter()
        .map(|&c| {
            let v = surface.at(c, share_mem_gb, Interp::Bilinear);
            (
                c,
                if units.normalize {
                    v / units.proportional
                } else {
                    v
                },
            )
        })
        .collect()
}

/// Model, job when it differs, parameters.
fn title(m: &Matrix, params: &BTreeMap<String, String>) -> String {
    let h = &m.header;
    let mut title = h.job.model.clone();
    if h.job.name != h.job.model {
        title.push_str(&format!(" ({})", h.job.name));
    }
    if !params.is_empty() {
        let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        title.push_str(&format!(" [{}]", p.join(", ")));
    }
    title
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
