//! `profiler validate`: measure every cell of a job's matrix, model the same cells from the CPU
//! axis (the cell measured at the top memory level of each CPU level) with every cache model,
//! and report how far each model is from the measurement. The result goes into the matrix
//! header (`validation`), so later exports and plots can show how far to trust modelled cells.

mod diagnosis;
mod paired;

pub use diagnosis::SHARE_TOLERANCE;

use crate::cache_model::CacheModel;
use crate::harness::memory::modelled_cells::modelled_cells;
use crate::harness::sweep::{SweepError, SweepObserver, SweepOptions, run_sweep};
use crate::matrix::{
    CacheKind, Cell, CellKey, CellSource, LaunchSpread, Matrix, MatrixError, ModelAccuracy,
    Validation, ValidationCell, load_matrix, rewrite_header,
};
use crate::spec::MemoryAxis;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    #[error(transparent)]
    Sweep(#[from] SweepError),
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error(
        "{0}: no cache-model inputs in the header: validation needs a spec with a [dataset] and \
         at least two memory levels"
    )]
    NoCacheInputs(PathBuf),
    #[error(
        "{0}: no cell below the top memory level was measured with a positive rate (failed or \
         infeasible cells cannot be compared, nor the lowest level at the highest CPU level \
         where the model's wait per read was fitted to it: add a memory level); see \
         `profiler show {0}`"
    )]
    NothingToCompare(PathBuf),
}

/// Compares every measured cell below the top memory level with what each cache model predicts
/// for it from the measured top cell at the same CPU level and parameters.
pub fn compare(m: &Matrix, path: &Path) -> Result<Validation, ValidateError> {
    let inputs = m
        .header
        .cache_model
        .clone()
        .ok_or_else(|| ValidateError::NoCacheInputs(path.to_owned()))?;
    let samples = m.header.job.dataset_samples.unwrap_or(0);
    let top_memory = m.cells.iter().map(|c| c.memory_bytes).max().unwrap_or(0);
    let by_key: BTreeMap<CellKey, &Cell> = m.cells.iter().map(|c| (c.key(), c)).collect();
    // The cell the model's wait per read was fitted to predicts itself: left out.
    let fitted = (inputs.miss_calibration.as_ref())
        .filter(|_| {
            CacheModel::new(inputs.clone())
                .wait_per_read_s(samples)
                .is_some()
        })
        .map(|c| (c.cpu, c.memory_bytes));
    let spread = m.header.launch_spread.as_ref();
    let mut cells = Vec::new();
    // Per compared cell, the standard deviation reruns alone give its error, percent.
    let mut rerun_sds = Vec::new();
    for cell in by_key.values() {
        let (CellSource::Measured, Some(measured)) = (cell.source, cell.samples_per_s()) else {
            continue;
        };
        if cell.memory_bytes == top_memory
            || measured <= 0.0
            || fitted == Some((cell.cpu, cell.memory_bytes))
        {
            continue;
        }
        let Some(top) = by_key
            .get(&CellKey::new(cell.cpu, top_memory, &cell.params))
            .filter(|t| t.source == CellSource::Measured)
        else {
            continue;
        };
        let mut predicted = BTreeMap::new();
        for kind in CacheKind::ALL {
            let mut model = inputs.clone();
            model.kind = kind;
            let modelled = modelled_cells(top, &[cell.memory_bytes], Some(&model), samples);
            // An infeasible prediction (limit below the job's resident size) predicts 0.
            let rate = modelled[0].samples_per_s().unwrap_or(0.0);
            predicted.insert(kind, rate);
        }
        let check = diagnosis::check(cell, top, &CacheModel::new(inputs.clone()), samples);
        let rerun_sd = spread.map(|s| rerun_sd_pct(s, cell, top));
        rerun_sds.extend(rerun_sd);
        cells.push(ValidationCell {
            cpu: cell.cpu,
            memory_bytes: cell.memory_bytes,
            params: cell.params.clone(),
            measured_samples_per_s: measured,
            predicted,
            rerun_error_pct: spread.zip(rerun_sd).map(|(s, sd)| s.quantile() * sd),
            check: Some(check),
            paired: paired::paired_ratio(cell, top),
        });
    }
    // An exact model's |error| from reruns alone is half-normal: its median is 0.6745 sd.
    let rerun_median_abs_error_pct =
        spread.map(|_| HALF_NORMAL_MEDIAN * crate::stats::median(&rerun_sds));
    if cells.is_empty() {
        return Err(ValidateError::NothingToCompare(path.to_owned()));
    }
    let models = CacheKind::ALL
        .iter()
        .map(|&kind| {
            let mut errors: Vec<f64> = cells.iter().map(|c| error_pct(c, kind).abs()).collect();
            errors.sort_by(f64::total_cmp);
            ModelAccuracy {
                model: kind,
                median_abs_error_pct: crate::stats::median(&errors),
                max_abs_error_pct: errors.last().copied().unwrap_or(0.0),
                cells: errors.len() as u32,
            }
        })
        .collect();
    let (paired_models, paired_median_half_width_pct) = paired::accuracy(&cells);
    Ok(Validation {
        created_unix_s: crate::harness::measure::job_output::now_unix_s() as u64,
        models,
        cells,
        rerun_median_abs_error_pct,
        paired_models,
        paired_median_half_width_pct,
    })
}

/// The median of `|Z|` for a standard normal `Z`.
const HALF_NORMAL_MEDIAN: f64 = 0.6745;

/// The standard deviation reruns alone give `cell`'s error, percent. A prediction scales the
/// top cell's rate, so the error is the ratio of two means, each over its own launches:
/// `sd x sqrt(1/k_cell + 1/k_top)`. Times Student's quantile for the degrees of freedom the
/// spread was measured with, it is how far reruns may move the error (95%).
fn rerun_sd_pct(spread: &LaunchSpread, cell: &Cell, top: &Cell) -> f64 {
    let k = |c: &Cell| c.throughput.as_ref().map_or(1, |t| t.launches.len().max(1)) as f64;
    100.0 * spread.relative_sd * (1.0 / k(cell) + 1.0 / k(top)).sqrt()
}

/// Signed error of `kind`'s prediction for a cell, percent of the measured rate.
pub fn error_pct(c: &ValidationCell, kind: CacheKind) -> f64 {
    let p = c.predicted.get(&kind).copied().unwrap_or(0.0);
    100.0 * (p - c.measured_samples_per_s) / c.measured_samples_per_s
}

/// Cells whose chosen model is off by more than this (percent) get a line saying why.
pub const EXPLAIN_ABOVE_PCT: f64 = 5.0;

/// The comparison as a table, one line per cell (and, where the chosen model is off by more
/// than [`EXPLAIN_ABOVE_PCT`], the assumption that failed), then one line per model.
pub fn render(v: &Validation, chosen: Option<CacheKind>) -> String {
    use crate::units::GIB;
    let shown = chosen.unwrap_or(CacheKind::PageCache);
    let mut out = String::new();
    let _ = write!(out, "{:>6} {:>9} {:>10}", "CPU", "memory", "measured");
    for kind in CacheKind::ALL {
        let _ = write!(out, " {:>20}", format!("{} (error)", kind.as_str()));
    }
    out.push('\n');
    for c in &v.cells {
        let params: Vec<String> = c.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = write!(
            out,
            "{:>6} {:>9} {:>10.1}",
            c.cpu,
            format!("{:.3}G", c.memory_bytes as f64 / GIB),
            c.measured_samples_per_s
        );
        for kind in CacheKind::ALL {
            let p = c.predicted.get(&kind).copied().unwrap_or(0.0);
            let _ = write!(
                out,
                " {:>20}",
                format!("{p:.1} ({:+.1}%)", error_pct(c, kind))
            );
        }
        if !params.is_empty() {
            let _ = write!(out, "  [{}]", params.join(", "));
        }
        out.push('\n');
        // Why the chosen model is off, where it is off by more than the launches vary.
        if let Some(check) = c
            .check
            .as_ref()
            .filter(|_| error_pct(c, shown).abs() > EXPLAIN_ABOVE_PCT)
        {
            let _ = writeln!(out, "{:>28} why: {}", "", check.explanation);
        }
    }
    // The machine's own speed, where it moved between a cell and its top cell.
    let speeds: Vec<f64> = (v.cells.iter())
        .filter_map(|c| c.check.as_ref()?.cpu_speed_vs_top)
        .collect();
    let lo = speeds.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = speeds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !speeds.is_empty() && (lo < 0.95 || hi > 1.05) {
        let _ = writeln!(
            out,
            "the machine's CPUs ran at {:.0}-{:.0}% of their speed during the top cells (the \
             profiler's reference loop): where a cell's CPUs were slower, so is the cell",
            100.0 * lo,
            100.0 * hi
        );
    }
    if let Some(line) = paired::describe(v, shown) {
        let _ = writeln!(out, "{line}");
    }
    match v.rerun_median_abs_error_pct {
        Some(noise) => {
            let beyond = (v.cells.iter())
                .filter(|c| {
                    c.rerun_error_pct
                        .is_some_and(|b| error_pct(c, shown).abs() > b)
                })
                .count();
            let _ = writeln!(
                out,
                "reruns alone: a model exact on every cell would be off by {noise:.1}% median \
                 here (the spread between launches); {beyond} of {} cells are off by more than \
                 reruns may move them ({})",
                v.cells.len(),
                shown.as_str()
            );
        }
        None if v
            .accuracy(shown)
            .is_some_and(|a| a.max_abs_error_pct > EXPLAIN_ABOVE_PCT) =>
        {
            let _ = writeln!(
                out,
                "each cell was measured on one launch: `--launches 2` measures how far reruns \
                 alone move these errors"
            );
        }
        None => {}
    }
    let _ = writeln!(out, "{}", v.summary(chosen));
    out
}

/// What `profiler validate` did.
#[derive(Debug, Clone)]
pub struct ValidateOutcome {
    pub matrix: Matrix,
    pub path: PathBuf,
    /// Other matrices of the same job whose header now records the validation too.
    pub also_recorded_in: Vec<PathBuf>,
}

/// Measures every cell (a sweep with `memory = "measure"` into `opts.output`), compares the
/// cache models with it and records the result in the output's header and in the header of
/// each of `record_in` that holds a matrix of the same job.
pub fn run_validate(
    opts: &SweepOptions,
    record_in: &[PathBuf],
    observer: &mut dyn SweepObserver,
    cancel: &AtomicBool,
) -> Result<ValidateOutcome, ValidateError> {
    let mut opts = opts.clone();
    opts.memory_axis = Some(MemoryAxis::Measure);
    let outcome = run_sweep(&opts, observer, cancel)?;
    let mut matrix = load_matrix(&outcome.path)?;
    let validation = compare(&matrix, &outcome.path)?;
    matrix.header.validation = Some(validation.clone());
    rewrite_header(&outcome.path, &matrix.header)?;
    let mut also = Vec::new();
    for path in record_in {
        if !path.exists() || path == &outcome.path {
            continue;
        }
        let mut other = load_matrix(path)?;
        if other.header.job.name != matrix.header.job.name {
            continue;
        }
        other.header.validation = Some(validation.clone());
        rewrite_header(path, &other.header)?;
        also.push(path.clone());
    }
    Ok(ValidateOutcome {
        matrix,
        path: outcome.path,
        also_recorded_in: also,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::fixtures::header;
    use crate::matrix::{CacheModelInputs, Telemetry, Throughput};

    const MIB: u64 = 1 << 20;

    fn cell(cpu: f64, mem_mib: u64, rate: Option<f64>) -> Cell {
        let source = match rate {
            Some(_) => CellSource::Measured,
            None => CellSource::Infeasible,
        };
        Cell {
            memory_bytes: mem_mib * MIB,
            source,
            throughput: rate.map(|r| Throughput {
                samples_per_s: r,
                ci95_low: r,
                ci95_high: r,
                windows: 4,
                measured_s: 4.0,
                launches: Vec::new(),
            }),
            telemetry: Some(Telemetry {
                rss_peak_bytes: 10 * MIB,
                ..Telemetry::default()
            }),
            note: None,
            wall_s: 5.0,
            ..crate::matrix::fixtures::cell(cpu)
        }
    }

    /// A storage-bound job: 100 MiB dataset of 2000 samples at 20 MiB/s.
    fn matrix(cells: Vec<Cell>) -> Matrix {
        let mut h = header("job");
        h.job.dataset_samples = Some(2000);
        h.cache_model = Some(CacheModelInputs::new(
            CacheKind::PageCache,
            100 * MIB,
            20.0 * MIB as f64,
            1e13,
        ));
        Matrix { header: h, cells }
    }

    #[test]
    fn compares_each_model_with_the_measured_cells() {
        // Half the dataset fits at 60 MiB (10 MiB resident): MinIO predicts 2000 / 2.5 s = 800,
        // the page-cache model (15.3% hits) 2000 / (0.847 x 5 s) = 472.5 samples/s.
        let m = matrix(vec![
            cell(1.0, 200, Some(1000.0)),
            cell(1.0, 60, Some(480.0)),
            cell(1.0, 5, None),
        ]);
        let v = compare(&m, Path::new("m.jsonl")).unwrap();
        assert_eq!(v.cells.len(), 1, "the infeasible cell is not compared");
        let c = &v.cells[0];
        assert!(
            (c.predicted[&CacheKind::Minio] - 800.0).abs() < 1.0,
            "{c:?}"
        );
        let lru = c.predicted[&CacheKind::PageCache];
        assert!((lru - 472.5).abs() < 0.5, "{lru}");
        let acc = v.accuracy(CacheKind::PageCache).unwrap();
        assert!((acc.median_abs_error_pct - 100.0 * (480.0 - lru) / 480.0).abs() < 1e-9);
        assert!(v.accuracy(CacheKind::Minio).unwrap().median_abs_error_pct > 60.0);
        let table = render(&v, Some(CacheKind::PageCache));
        assert!(table.contains("validated: page-cache model"), "{table}");
    }

    /// Cells measured on two launches each, launches 10% apart over 8 degrees of freedom:
    /// an error is a ratio of two means of two, so reruns alone move it by sd x 1 (t = 2.306
    /// either way, 23.1%); an exact model's median |error| is 0.6745 x 10% = 6.7%.
    #[test]
    fn says_how_far_reruns_alone_move_each_error() {
        let twice = |mut c: Cell| {
            let t = c.throughput.as_mut().unwrap();
            let rate = |r| crate::matrix::LaunchRate {
                samples_per_s: r,
                ci95_low: r,
                ci95_high: r,
                measured_unix_s: None,
                left_out_unix_s: Vec::new(),
            };
            t.launches = vec![rate(t.samples_per_s), rate(t.samples_per_s)];
            c
        };
        let cells = vec![
            twice(cell(1.0, 200, Some(1000.0))),
            twice(cell(1.0, 60, Some(480.0))),
            twice(cell(1.0, 40, Some(200.0))),
        ];
        let mut m = matrix(cells.clone());
        let v = compare(&m, Path::new("m.jsonl")).unwrap();
        assert_eq!(v.rerun_median_abs_error_pct, None, "no spread was measured");
        assert!(v.cells.iter().all(|c| c.rerun_error_pct.is_none()));
        let table = render(&v, Some(CacheKind::PageCache));
        assert!(table.contains("`--launches 2`"), "{table}");

        m.header.launch_spread = Some(LaunchSpread {
            relative_sd: 0.10,
            degrees_of_freedom: 8,
            launches: 16,
        });
        let v = compare(&m, Path::new("m.jsonl")).unwrap();
        for c in &v.cells {
            // Student's 2.3060 for 8 degrees of freedom, times 10% x sqrt(1/1 + 1/1) / sqrt 2.
            assert!((c.rerun_error_pct.unwrap() - 23.060).abs() < 1e-3, "{c:?}");
        }
        let noise = v.rerun_median_abs_error_pct.unwrap();
        assert!((noise - 6.745).abs() < 1e-9, "{noise}");
        // The 60 MiB cell is within 2% (above), the 40 MiB one far off: one cell beyond.
        let far = error_pct(&v.cells[0], CacheKind::PageCache).abs();
        let near = error_pct(&v.cells[1], CacheKind::PageCache).abs();
        assert!(far > 23.06 && near < 23.06, "{far} {near}");
        let table = render(&v, Some(CacheKind::PageCache));
        assert!(
            table.contains("off by 6.7% median") && table.contains("1 of 2 cells"),
            "{table}"
        );
        // A cell measured once counts its one launch: the error moves further.
        m.cells[2] = cells[2].clone();
        m.cells[2].throughput.as_mut().unwrap().launches.clear();
        let v = compare(&m, Path::new("m.jsonl")).unwrap();
        let once = v.cells.iter().find(|c| c.memory_bytes == 40 * MIB).unwrap();
        assert!((once.rerun_error_pct.unwrap() - 23.060 * 1.5f64.sqrt()).abs() < 1e-3);
    }

    #[test]
    fn refuses_matrices_it_cannot_validate() {
        let mut m = matrix(vec![cell(1.0, 200, Some(1000.0))]);
        let e = compare(&m, Path::new("m.jsonl")).unwrap_err();
        assert!(matches!(e, ValidateError::NothingToCompare(_)), "{e}");
        m.header.cache_model = None;
        let e = compare(&m, Path::new("m.jsonl")).unwrap_err();
        assert!(
            e.to_string().contains("needs a spec with a [dataset]"),
            "{e}"
        );
    }
}
