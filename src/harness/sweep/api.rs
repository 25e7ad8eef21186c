//! What a caller gives a sweep and gets back: its options, its observer, its outcome and its
//! errors.

use crate::harness::cgroup::CapsError;
use crate::harness::memory::dataset::DatasetError;
use crate::harness::process::launch::LaunchError;
use crate::matrix::cell_model::KindSpeeds;
use crate::matrix::{Cell, CellSource, Matrix, MatrixError};
use crate::spec::{LoadedSpec, MemoryAxis, SweepMode, TemplateError};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Caps(#[from] CapsError),
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error("{spec}: {source}")]
    Template {
        spec: PathBuf,
        source: TemplateError,
    },
    #[error("{0}")]
    Plan(String),
    #[error("Slurm: {0}")]
    Slurm(String),
    #[error(
        "interrupted; {cells} cell(s) are saved in {path}; run the same command with --resume to finish"
    )]
    Interrupted { cells: usize, path: PathBuf },
    #[error("cannot create log directory {path}: {source}")]
    Logs {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    pub spec: LoadedSpec,
    /// Matrix file to write (`*.matrix.jsonl`).
    pub output: PathBuf,
    pub resume: bool,
    /// `false` runs the spec once, uncapped, to check it (`--no-caps`).
    pub caps: bool,
    pub mode: Option<SweepMode>,
    pub memory_axis: Option<MemoryAxis>,
    /// Name of the profiler-owned parent cgroup.
    pub cgroup_parent: String,
    /// Where the machine kinds' reading speeds are kept: read before the cells are, and this
    /// sweep's added at its end.
    pub kinds: KindSpeeds,
}

/// One CPU level of a sweep run inside a Slurm job (`profiler sweep --slurm` submits these):
/// Slurm's cgroups hold the caps, so the profiler creates none and checks that they are the
/// point's before measuring.
#[derive(Debug, Clone)]
pub struct SlurmStep {
    /// The CPU level, whole cores (the job's `--cpus-per-task`).
    pub cpu: f64,
    /// Memory levels fixed by an earlier step of the same sweep, largest first.
    pub memory_levels: Option<Vec<u64>>,
    /// The node the step runs on, recorded in its cells.
    pub node: String,
}

/// Progress and diagnostics, shown by the CLI (progress bars) or collected by tests.
pub trait SweepObserver {
    fn planned(&mut self, _total_cells: usize, _already_done: usize) {}
    /// Like `planned`, when a CPU search decides how many cells there will be: at most this many.
    fn planned_at_most(&mut self, max_cells: usize, already_done: usize) {
        self.planned(max_cells, already_done);
    }
    fn status(&mut self, _message: &str) {}
    /// A finding worth keeping on screen (not a warning), such as the live check's verdict.
    fn note(&mut self, message: &str) {
        self.status(message);
    }
    fn cell_done(&mut self, _cell: &Cell) {}
    fn warn(&mut self, _message: &str) {}
    /// The widest relative half-width among the cells against the precision asked for.
    fn precision(&mut self, _widest: f64, _asked: f64) {}
}

/// Observer that ignores everything.
pub struct Silent;
impl SweepObserver for Silent {}

#[derive(Debug, Clone)]
pub struct SweepOutcome {
    pub matrix: Matrix,
    pub path: PathBuf,
    /// How many times the job was started.
    pub launches: u32,
    pub wall_s: f64,
}

impl SweepOutcome {
    /// The verdict of a `--no-caps` check: what the one uncapped run measured, or why it failed.
    pub fn uncapped_verdict(&self) -> Result<String, String> {
        let Some(cell) = self.matrix.cells.first() else {
            return Err("--no-caps: the job was not run".into());
        };
        match (cell.source, cell.samples_per_s()) {
            (CellSource::Measured, Some(rate)) => Ok(format!(
                "--no-caps: the spec runs and reports progress ({rate:.1} samples/s uncapped); no matrix written"
            )),
            (source, _) => Err(format!(
                "--no-caps: the spec does not work: the run {}: {}",
                source.as_str(),
                cell.note.as_deref().unwrap_or("no reason recorded")
            )),
        }
    }
}
