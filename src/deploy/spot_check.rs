//! The spot check before a deploy's first round: each job kind measured briefly at one
//! allocation of its matrix (the measured cell nearest the cluster's proportional share), and
//! its matrix's rate there compared with what it measured now. A matrix from another machine,
//! or from this one in another state (another kernel, a busy neighbour, a new library), shows
//! here before a whole deploy rests on it.

use super::error::DeployError;
use crate::harness::sweep::{SweepObserver, SweepOptions, run_sweep};
use crate::matrix::{Cell, CellSource, Matrix, load_matrix};
use crate::spec::{CpuAxis, LoadedSpec, MemoryAxis, SweepMode};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Longest measurement of a spot check, seconds: brief, and still several windows.
const SPOT_MAX_S: f64 = 20.0;

/// The ratio's interval is never narrower than this on each side: a job held at a fixed pace
/// (an emulated accelerator's step) measures to a few parts in ten thousand within a launch,
/// and still lands further apart than that on another launch or day.
const MIN_HALF_WIDTH: f64 = 0.05;

/// One job kind's spot check.
#[derive(Debug, Clone, PartialEq)]
pub struct SpotCheck {
    pub model: String,
    pub cpu: f64,
    pub memory_bytes: u64,
    /// The matrix's rate at the cell and its 95% interval.
    pub matrix: [f64; 3],
    /// What the spot check measured, with its 95% interval.
    pub measured: [f64; 3],
    /// Measured over the matrix's rate, and the 95% interval of that ratio.
    pub ratio: [f64; 3],
    /// The spec whose sweep brings the matrix up to date.
    pub spec: PathBuf,
    /// The matrix the check compared with.
    pub matrix_path: PathBuf,
}

impl SpotCheck {
    /// Whether the ratio's interval holds 1: the matrix and the measurement agree.
    pub fn agrees(&self) -> bool {
        self.ratio[1] <= 1.0 && 1.0 <= self.ratio[2]
    }

    /// One line for the screen and the deploy's `checks.txt`.
    pub fn describe(&self) -> String {
        format!(
            "{}: at {} CPUs, {:.2} GiB measured {:.1} samples/s [{:.1}, {:.1}], its matrix says \
             {:.1} [{:.1}, {:.1}]: {:.2}x [{:.2}, {:.2}]{}",
            self.model,
            self.cpu,
            self.memory_bytes as f64 / crate::units::GIB,
            self.measured[0],
            self.measured[1],
            self.measured[2],
            self.matrix[0],
            self.matrix[1],
            self.matrix[2],
            self.ratio[0],
            self.ratio[1],
            self.ratio[2],
            if self.agrees() {
                ""
            } else {
                ": outside the interval"
            }
        )
    }

    /// The command that sweeps the job again into its matrix.
    pub fn sweep_command(&self) -> String {
        format!(
            "  profiler sweep --job {} --output {}",
            self.spec.display(),
            self.matrix_path.display()
        )
    }
}

/// The measured cell of `matrix` nearest `(cpus, mem_gb)`: the CPU level closest in ratio, then
/// the largest memory level within the share (the smallest where none is).
pub fn nearest_measured(matrix: &Matrix, cpus: f64, mem_gb: f64) -> Option<&Cell> {
    let measured: Vec<&Cell> = (matrix.cells.iter())
        .filter(|c| c.source == CellSource::Measured && c.throughput.is_some() && c.cpu > 0.0)
        .collect();
    let distance = |c: &Cell| (c.cpu / cpus).ln().abs();
    let best_cpu = (measured.iter())
        .map(|c| distance(c))
        .fold(f64::INFINITY, f64::min);
    let at_cpu: Vec<&Cell> = (measured.into_iter())
        .filter(|c| distance(c) <= best_cpu + 1e-9)
        .collect();
    let within = |c: &&&Cell| c.memory_bytes as f64 <= mem_gb * crate::units::GIB;
    (at_cpu.iter().filter(within))
        .max_by_key(|c| c.memory_bytes)
        .or_else(|| at_cpu.iter().min_by_key(|c| c.memory_bytes))
        .copied()
}

/// The spec cut down to one point, one launch, a brief measurement.
fn one_point(spec: &LoadedSpec, cell: &Cell) -> LoadedSpec {
    let mut short = spec.clone();
    let s = &mut short.spec;
    s.sweep.cpu = CpuAxis::Levels(vec![cell.cpu]);
    s.sweep.memory_gib = Some(vec![cell.memory_bytes as f64 / crate::units::GIB]);
    s.sweep.memory_pct_of_dataset = None;
    s.sweep.memory = MemoryAxis::Measure;
    s.sweep.mode = SweepMode::Relaunch;
    s.measure.launches = 1;
    s.measure.launches_budget_s = None;
    s.measure.max_s = s
        .measure
        .max_s
        .min(SPOT_MAX_S)
        .max(s.measure.window_s * 3.0);
    s.name = format!("spot-{}", s.name);
    short
}

/// Relative half-width of an interval around `rate`.
fn half_width(rate: f64, low: f64, high: f64) -> f64 {
    ((high - low) / 2.0 / rate).max(0.0)
}

/// Compares a measured cell with the matrix's.
pub fn compare(matrix_cell: &Cell, measured: &Cell) -> Option<([f64; 3], [f64; 3], [f64; 3])> {
    let (a, b) = (
        matrix_cell.throughput.as_ref()?,
        measured.throughput.as_ref()?,
    );
    if !(a.samples_per_s > 0.0 && b.samples_per_s > 0.0) {
        return None;
    }
    let ratio = b.samples_per_s / a.samples_per_s;
    // The two intervals' relative widths add in quadrature: the two are measured apart.
    let h = (half_width(a.samples_per_s, a.ci95_low, a.ci95_high))
        .hypot(half_width(b.samples_per_s, b.ci95_low, b.ci95_high))
        .max(MIN_HALF_WIDTH);
    Some((
        [a.samples_per_s, a.ci95_low, a.ci95_high],
        [b.samples_per_s, b.ci95_low, b.ci95_high],
        [ratio, ratio * (1.0 - h).max(0.0), ratio * (1.0 + h)],
    ))
}

/// What one spot check needs: the job's spec and matrix, and where its short sweep goes.
pub struct SpotInput<'a> {
    pub model: &'a str,
    pub spec: &'a LoadedSpec,
    pub matrix_path: &'a Path,
    /// The cluster's proportional share per GPU, cores and GB: the check runs near the share of
    /// the matrix's job (a CPU-only job counts as one GPU).
    pub share_per_gpu: (f64, f64),
    pub out_dir: &'a Path,
    pub cgroup_parent: &'a str,
}

/// Measures one job kind at the measured cell of its matrix nearest `share`.
pub fn spot_check(
    input: &SpotInput,
    observer: &mut dyn SweepObserver,
    cancel: &AtomicBool,
) -> Result<SpotCheck, DeployError> {
    let matrix = load_matrix(input.matrix_path).map_err(|e| DeployError::Options(e.to_string()))?;
    let (cpus, mem_gb) = input.share_per_gpu;
    let g = matrix.header.job.gpus.max(1) as f64;
    let cell = nearest_measured(&matrix, cpus * g, mem_gb * g).ok_or_else(|| {
        DeployError::Options(format!(
            "{}: no measured cell to spot-check {} at (--no-spot-check deploys without)",
            input.matrix_path.display(),
            input.model
        ))
    })?;
    let output = input
        .out_dir
        .join(format!("{}.matrix.jsonl", input.spec.spec.name));
    let sweep = SweepOptions {
        spec: one_point(input.spec, cell),
        output: output.clone(),
        resume: false,
        caps: true,
        mode: Some(SweepMode::Relaunch),
        memory_axis: None,
        cgroup_parent: input.cgroup_parent.to_string(),
        kinds: crate::matrix::cell_model::KindSpeeds::default(),
    };
    let _ = std::fs::remove_file(&output);
    let outcome = run_sweep(&sweep, observer, cancel).map_err(|e| DeployError::Profile {
        spec: input.spec.path.clone(),
        source: Box::new(e),
    })?;
    let measured = (outcome.matrix.cells.iter())
        .find(|c| c.source == CellSource::Measured && c.throughput.is_some())
        .ok_or_else(|| DeployError::Job {
            job_id: 0,
            model: input.model.to_string(),
            message: format!(
                "the spot check measured no rate at {} CPUs (its log: {})",
                cell.cpu,
                output.with_extension("logs").display()
            ),
        })?;
    let (matrix_rate, measured_rate, ratio) =
        compare(cell, measured).ok_or_else(|| DeployError::Job {
            job_id: 0,
            model: input.model.to_string(),
            message: "the spot check or the matrix has no positive rate".into(),
        })?;
    Ok(SpotCheck {
        model: input.model.to_string(),
        cpu: cell.cpu,
        memory_bytes: cell.memory_bytes,
        matrix: matrix_rate,
        measured: measured_rate,
        ratio,
        spec: input.spec.path.clone(),
        matrix_path: input.matrix_path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::fixtures;

    fn cell(cpu: f64, gib: f64, rate: f64, half: f64) -> Cell {
        let mut c = fixtures::measured(cpu, (gib * crate::units::GIB) as u64, rate, None);
        let t = c.throughput.as_mut().unwrap();
        (t.ci95_low, t.ci95_high) = (rate - half, rate + half);
        c
    }

    #[test]
    fn the_nearest_measured_cell_is_the_share_s_cpu_level_and_memory_within_it() {
        let m = Matrix {
            header: fixtures::header("m"),
            cells: vec![
                cell(0.25, 0.5, 10.0, 1.0),
                cell(0.5, 0.5, 20.0, 1.0),
                cell(0.5, 2.0, 25.0, 1.0),
                cell(1.0, 0.5, 40.0, 1.0),
            ],
        };
        let c = nearest_measured(&m, 0.5, 1.0).unwrap();
        assert_eq!((c.cpu, c.memory_bytes), (0.5, crate::units::GIB_BYTES / 2));
        // No level within the share: the smallest.
        let c = nearest_measured(&m, 0.6, 0.1).unwrap();
        assert_eq!((c.cpu, c.memory_bytes), (0.5, crate::units::GIB_BYTES / 2));
        let c = nearest_measured(&m, 0.9, 4.0).unwrap();
        assert_eq!(c.cpu, 1.0);
    }

    #[test]
    fn the_ratio_s_interval_adds_both_widths() {
        // 5% and 12% half-widths: 13% together.
        let (_, _, r) = compare(&cell(1.0, 1.0, 100.0, 5.0), &cell(1.0, 1.0, 50.0, 6.0)).unwrap();
        assert!((r[0] - 0.5).abs() < 1e-12);
        assert!((r[1] - 0.5 * 0.87).abs() < 1e-12 && (r[2] - 0.5 * 1.13).abs() < 1e-12);
        let far = SpotCheck {
            model: "m".into(),
            cpu: 1.0,
            memory_bytes: 1,
            matrix: [0.0; 3],
            measured: [0.0; 3],
            ratio: r,
            spec: "jobs/m.toml".into(),
            matrix_path: "matrices/m.matrix.jsonl".into(),
        };
        assert!(!far.agrees());
        assert!(far.describe().ends_with("outside the interval"));
        let (_, _, near) =
            compare(&cell(1.0, 1.0, 100.0, 5.0), &cell(1.0, 1.0, 95.0, 6.0)).unwrap();
        assert!(
            SpotCheck {
                ratio: near,
                ..far.clone()
            }
            .agrees()
        );
        // Two nearly exact rates 0.1% apart agree: the interval is at least ±5%.
        let (_, _, exact) =
            compare(&cell(1.0, 1.0, 398.2, 0.1), &cell(1.0, 1.0, 398.7, 0.05)).unwrap();
        assert!((exact[2] / exact[0] - 1.05).abs() < 1e-12);
        assert!(
            SpotCheck {
                ratio: exact,
                ..far
            }
            .agrees()
        );
    }
}
