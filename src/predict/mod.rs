//! A job's whole matrix predicted from a few measured cells and the jobs already profiled.
//!
//! The CPU axis of the top memory level is read from the library by stretch transfer
//! ([`transfer`]); each predicted cell has the interval the transfer gives it. Below the top
//! memory level a predicted CPU level gets the memory axis the matrix's cache model gives
//! the predicted rate, or, without one, its predicted rate up to what storage let the
//! measured cells reach at that level. docs/PREDICT.md says how to use it,
//! docs/findings/predict.md what it scored.

pub mod curve;
pub mod evaluate;
pub mod feedback;
mod library;
pub mod transfer;

pub use library::{Library, LibraryJob, add_to_library, kind_folder};
pub use transfer::{CellPrediction, SETTINGS, Settings, Transfer};

use crate::harness::memory::modelled_cells::modelled_cells;
use crate::matrix::{Cell, CellSource, Matrix, MatrixError, RelativeRate, Throughput};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error("{path}: {source}")]
    Library {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{0}: no measured cell with a rate at the top memory level; measure one first (the \
         reference: `profiler sweep` with one CPU level)"
    )]
    NothingMeasured(String),
    #[error("the library holds no job with two CPU levels or more to lean on")]
    EmptyLibrary,
}

/// A predicted matrix and what it rests on.
#[derive(Debug, Clone)]
pub struct Prediction {
    /// The partial matrix with its missing cells predicted.
    pub matrix: Matrix,
    /// Per parameter combination: the CPU levels measured, the cells predicted at the top
    /// memory level, and the library jobs leaned on with their shares.
    pub combinations: Vec<CombinationPrediction>,
}

/// One parameter combination's prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct CombinationPrediction {
    pub params: BTreeMap<String, String>,
    pub measured_cpus: Vec<f64>,
    /// `(cpu, prediction)` of each CPU level predicted at the top memory level.
    pub predicted: Vec<(f64, CellPrediction)>,
    pub leaned_on: Vec<(String, f64)>,
}

impl CombinationPrediction {
    /// The widest predicted cell: its CPU level and relative half-width.
    pub fn widest(&self) -> Option<(f64, f64)> {
        (self.predicted.iter())
            .map(|(c, p)| (*c, p.half_width()))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

impl Prediction {
    /// Two lines a combination: what was predicted from what, and how wide it is.
    pub fn describe(&self) -> String {
        let mut out = Vec::new();
        for c in &self.combinations {
            let params = if c.params.is_empty() {
                String::new()
            } else {
                let kv: Vec<String> = c.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!(" [{}]", kv.join(", "))
            };
            let leaned: Vec<String> = (c.leaned_on.iter())
                .map(|(name, share)| format!("{name} {:.0}%", 100.0 * share))
                .collect();
            out.push(format!(
                "{}{params}: {} CPU level(s) predicted from {} measured ({} CPUs), leaning on {}",
                self.matrix.header.job.name,
                c.predicted.len(),
                c.measured_cpus.len(),
                join_cpus(&c.measured_cpus),
                leaned.join(", ")
            ));
            let mut widths: Vec<f64> = c.predicted.iter().map(|p| p.1.half_width()).collect();
            widths.sort_by(f64::total_cmp);
            if let (Some(median), Some((cpu, widest))) = (widths.get(widths.len() / 2), c.widest())
            {
                out.push(format!(
                    "  predicted ±{:.1}% median, ±{:.0}% at most (at {cpu} CPUs: measure it next)",
                    100.0 * median,
                    100.0 * widest
                ));
            }
        }
        out.join("\n")
    }
}

fn join_cpus(cpus: &[f64]) -> String {
    let s: Vec<String> = cpus.iter().map(|c| format!("{c}")).collect();
    s.join(", ")
}

/// The level of `levels` to measure next, given the levels `measured` (`(cpu, samples/s)`, a
/// rate of 0 where the job failed there): the highest first; then the level left whose
/// prediction from the rest is widest, while one is wider than `precision`. `None` where
/// every level left is within it, or none is left.
pub fn next_level(
    measured: &[(f64, f64)],
    levels: &[f64],
    library: &Library,
    settings: &Settings,
    precision: f64,
) -> Option<f64> {
    let same = |a: f64, b: f64| (a * 1000.0).round() == (b * 1000.0).round();
    let is_measured = |c: f64| measured.iter().any(|m| same(m.0, c));
    let highest = levels.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if highest.is_finite() && !is_measured(highest) {
        return Some(highest);
    }
    let rated: Vec<(f64, f64)> = measured.iter().copied().filter(|m| m.1 > 0.0).collect();
    let transfer = Transfer::fit(&rated, library, settings)?;
    (levels.iter().copied())
        .filter(|&c| !is_measured(c))
        .map(|c| (c, transfer.at(c).half_width()))
        .filter(|(_, w)| *w > precision)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

/// `partial` with every missing cell of its grid predicted from its measured cells and
/// `library`: `source = "predicted"`, each with its interval. `cpu_levels` join the grid's.
pub fn predict_matrix(
    partial: &Matrix,
    cpu_levels: &[f64],
    library: &Library,
    settings: &Settings,
) -> Result<Prediction, PredictError> {
    if library.jobs().is_empty() {
        return Err(PredictError::EmptyLibrary);
    }
    let mut matrix = partial.clone();
    let axis = &mut matrix.header.axes.cpu;
    axis.extend(cpu_levels.iter().filter(|c| c.is_finite() && **c > 0.0));
    axis.sort_by(f64::total_cmp);
    axis.dedup();
    matrix.cells.retain(|c| c.source != CellSource::Predicted);
    let mut combinations = Vec::new();
    for params in combinations_of(&matrix) {
        let (cells, combination) = predict_combination(&matrix, &params, library, settings)?;
        matrix.cells.extend(cells);
        combinations.push(combination);
    }
    if combinations.is_empty() {
        return Err(PredictError::NothingMeasured(
            partial.header.job.name.clone(),
        ));
    }
    let predicted: usize = (matrix.cells.iter())
        .filter(|c| c.source == CellSource::Predicted)
        .count();
    let note = format!(
        "{predicted} cell(s) predicted by profiler predict from {} library job(s)",
        library.jobs().len()
    );
    matrix.header.provenance = Some(match matrix.header.provenance.take() {
        Some(p) => format!("{p}; {note}"),
        None => note,
    });
    Ok(Prediction {
        matrix,
        combinations,
    })
}

/// The parameter combinations with a measured cell, in the order first met.
fn combinations_of(matrix: &Matrix) -> Vec<BTreeMap<String, String>> {
    let mut out: Vec<BTreeMap<String, String>> = Vec::new();
    for c in matrix
        .cells
        .iter()
        .filter(|c| c.source == CellSource::Measured)
    {
        if !out.contains(&c.params) {
            out.push(c.params.clone());
        }
    }
    out
}

/// The predicted cells of one parameter combination.
fn predict_combination(
    matrix: &Matrix,
    params: &BTreeMap<String, String>,
    library: &Library,
    settings: &Settings,
) -> Result<(Vec<Cell>, CombinationPrediction), PredictError> {
    let ours: Vec<&Cell> = (matrix.cells.iter())
        .filter(|c| &c.params == params)
        .collect();
    let top = (matrix.header.axes.memory_bytes.iter().copied())
        .chain(ours.iter().map(|c| c.memory_bytes))
        .max()
        .unwrap_or(0);
    let measured_top: Vec<&Cell> = (ours.iter().copied())
        .filter(|c| c.memory_bytes == top && c.source == CellSource::Measured)
        .filter(|c| c.samples_per_s().is_some_and(|r| r > 0.0))
        .collect();
    let nothing = || PredictError::NothingMeasured(matrix.header.job.name.clone());
    let reference = (measured_top.iter())
        .max_by(|a, b| a.cpu.total_cmp(&b.cpu))
        .and_then(|c| c.samples_per_s())
        .ok_or_else(nothing)?;
    let pairs = library::rates_read_alike(&measured_top);
    let transfer = Transfer::fit(&pairs, library, settings).ok_or_else(nothing)?;
    let leaned_on = (transfer.leaned_on().into_iter())
        .map(|(job, share)| (job.name.clone(), share))
        .collect::<Vec<_>>();
    let names: Vec<&str> = leaned_on.iter().map(|(n, _)| n.as_str()).collect();
    let mut cells = Vec::new();
    let mut predicted = Vec::new();
    let at_top = |cpu: f64| ours.iter().any(|c| c.memory_bytes == top && c.cpu == cpu);
    for &cpu in matrix.header.axes.cpu.iter().filter(|&&c| !at_top(c)) {
        let p = transfer.at(cpu);
        let mut cell = Cell::at(cpu, top, params.clone(), CellSource::Predicted);
        cell.throughput = Some(Throughput {
            samples_per_s: p.log_rate.exp(),
            ci95_low: p.log_low.exp(),
            ci95_high: p.log_high.exp(),
            windows: 0,
            measured_s: 0.0,
            launches: Vec::new(),
        });
        cell.relative = Some(RelativeRate::unadjusted(
            p.log_rate.exp() / reference,
            [p.log_low.exp() / reference, p.log_high.exp() / reference],
            0,
            0,
        ));
        cell.note = Some(format!(
            "predicted from {} measured CPU level(s) by stretch transfer, leaning on {}",
            pairs.len(),
            names.join(", ")
        ));
        cells.extend(memory_axis(matrix, &ours, &cell, top));
        cells.push(cell);
        predicted.push((cpu, p));
    }
    let mut measured_cpus: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    measured_cpus.sort_by(f64::total_cmp);
    Ok((
        cells,
        CombinationPrediction {
            params: params.clone(),
            measured_cpus,
            predicted,
            leaned_on,
        },
    ))
}

/// The cells below the top memory level at a predicted CPU level, from its predicted top
/// cell `top_cell`: the matrix's cache model where it has one, else the top cell's rate up to
/// the memory level's storage cap ([`storage_cap`]); each marked predicted.
fn memory_axis(matrix: &Matrix, ours: &[&Cell], top_cell: &Cell, top: u64) -> Vec<Cell> {
    let lower: Vec<u64> = (matrix.header.axes.memory_bytes.iter().copied())
        .filter(|&m| m < top)
        .collect();
    let cache_model = (matrix.header.cache_model.as_ref()).zip(matrix.header.job.dataset_samples);
    let (mut cells, how) = match (cache_model, nearest_measured(ours, top, top_cell.cpu)) {
        (Some((inputs, samples)), Some(nearest)) => {
            // The cache model reads the measured cell's telemetry; at another CPU level the
            // job's CPU time a sample is taken to be the nearest level's.
            let mut template = nearest.clone();
            template.cpu = top_cell.cpu;
            template.throughput = top_cell.throughput.clone();
            if let (Some(t), Some(r), Some(rate)) = (
                template.telemetry.as_mut(),
                nearest.samples_per_s(),
                top_cell.samples_per_s(),
            ) {
                t.cpu_cores_used *= rate / r;
            }
            let how = format!(
                "the memory axis from the cache model, a sample's CPU time as measured at {} CPUs",
                nearest.cpu
            );
            (
                modelled_cells(&template, &lower, Some(inputs), samples),
                how,
            )
        }
        _ => {
            let capped = (lower.iter())
                .filter_map(|&m| {
                    let cap = storage_cap(ours, top, m)?;
                    let mut cell = top_cell.clone();
                    cell.memory_bytes = m;
                    if let Some(t) = cell.throughput.as_mut() {
                        t.samples_per_s = t.samples_per_s.min(cap);
                        t.ci95_low = t.ci95_low.min(cap);
                        t.ci95_high = t.ci95_high.min(cap);
                    }
                    cell.relative = None;
                    Some(cell)
                })
                .collect();
            let how = "each memory level capped at the most its measured cells reached where \
                       storage bound them"
                .to_owned();
            (capped, how)
        }
    };
    for cell in &mut cells {
        if cell.source == CellSource::Modelled {
            cell.source = CellSource::Predicted;
        }
        let model_note = cell
            .note
            .take()
            .map_or(String::new(), |n| format!(" ({n})"));
        cell.note = Some(format!(
            "predicted at the top memory level, {how}{model_note}"
        ));
    }
    cells
}

/// The measured cell of the `top` memory level nearest `cpu` (in log CPUs).
fn nearest_measured<'c>(ours: &[&'c Cell], top: u64, cpu: f64) -> Option<&'c Cell> {
    (ours.iter().copied())
        .filter(|c| c.memory_bytes == top && c.source == CellSource::Measured)
        .min_by(|a, b| {
            let d = |c: &Cell| (c.cpu.ln() - cpu.ln()).abs();
            d(a).total_cmp(&d(b))
        })
}

/// The most samples/s memory level `m` lets the job reach, as Synergy's optimistic profiling
/// reads it: where a measured CPU level ran slower at `m` than at the `top` memory level,
/// storage bound it there, whatever the CPUs; the highest such rate. `f64::INFINITY` where no
/// measured level was bound at `m`, `None` where none was measured at `m`.
fn storage_cap(ours: &[&Cell], top: u64, m: u64) -> Option<f64> {
    let rate = |cpu: f64, mem: u64| {
        (ours.iter())
            .find(|c| c.cpu == cpu && c.memory_bytes == mem && c.source == CellSource::Measured)
            .and_then(|c| c.samples_per_s())
    };
    let pairs: Vec<(f64, f64)> = (ours.iter())
        .filter(|c| c.memory_bytes == m && c.source == CellSource::Measured)
        .filter_map(|c| Some((c.samples_per_s()?, rate(c.cpu, top)?)))
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let bound = pairs.iter().filter(|(low, top)| low < &(top * 0.99));
    Some(bound.map(|p| p.0).fold(f64::NEG_INFINITY, f64::max))
        .map(|cap| if cap.is_finite() { cap } else { f64::INFINITY })
}
