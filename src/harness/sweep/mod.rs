//! The sweep: plan the grid, run the job under each allocation (re-capping a running job where
//! that is valid), measure, fill the memory axis with the cache model, and append every cell
//! to the matrix file as soon as it is known.

use crate::harness::cgroup::effective::EffectiveCaps;
use crate::harness::cgroup::{CapsError, CgroupRoot};
use crate::harness::measure::gpu::GpuMonitor;
use crate::harness::memory::dataset::DatasetError;
use crate::harness::process::job_launch::render_argv;
use crate::harness::process::launch::LaunchError;
use crate::harness::sweep::plan::{Point, Recorded, param_combinations};
use crate::matrix::MatrixError;
use crate::matrix::{Cell, CellSource, Matrix};
use crate::spec::{LoadedSpec, MemoryAxis, SweepMode, TemplateError, Vars};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod blocks;
mod cache;
pub mod cpu_search;
mod disturbance;
pub mod fleet;
mod footprint;
mod header;
mod host;
mod launches;
mod live_check;
mod measure;
mod measurement;
pub(crate) mod plan;
mod points;
mod reread;
mod run;
mod search;
mod setup;
mod spread;
mod warmup_end;

pub use blocks::{DRIFT_SLACK, MAX_EXTRA_PASSES};
pub use launches::{
    add_launch, combine_cells, combine_throughputs, hold_launch_spread, hold_pooled_spread,
    launch_rates, launch_sd, pooled_spread,
};
use live_check::LiveCheckState;
use run::Run;

pub use live_check::{LIVE_CHECK_MAX_TOLERANCE, LIVE_CHECK_SLACK};
pub use spread::DOUBT_PASSES;

const POLL: Duration = Duration::from_millis(100);

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

/// A sweep in progress: what it was asked and where it reports, the machine it runs on, and the
/// parts that own the rest of its state, each in its file.
struct Sweep<'a> {
    opts: &'a SweepOptions,
    observer: &'a mut dyn SweepObserver,
    cancel: &'a AtomicBool,
    root: Option<CgroupRoot>,
    gpu: Option<GpuMonitor>,
    /// Inside a Slurm step: the step and the caps of its cgroup, checked at every point.
    step: Option<(SlurmStep, EffectiveCaps)>,
    /// The levels and how they are walked ([`plan::Axes`]).
    axes: plan::Axes,
    /// The memory axis's inputs: levels, dataset, cache model ([`cache::MemoryInputs`]).
    mem: cache::MemoryInputs,
    /// The blocks measured so far and the one being measured ([`blocks::Blocks`]).
    blocks: blocks::Blocks,
    /// Whether re-capping a running job is still to be checked against a fresh start.
    live_check: LiveCheckState,
    /// The probe of the host's speed on the job's CPUs ([`host::HostWatch`]).
    host: host::HostWatch,
    /// The matrix written so far ([`header::Output`]).
    out: header::Output,
    launches: LaunchCount,
}

/// How many times the job was started.
#[derive(Debug, Clone, Copy, Default)]
struct LaunchCount {
    started: u32,
    /// Launches of the sweep this one resumes, so that visits keep telling launches apart.
    resumed: u32,
}

/// Runs a whole sweep. Every finished cell is already on disk when this returns, also on error
/// or interruption (`cancel` set by SIGINT/SIGTERM).
pub fn run_sweep(
    opts: &SweepOptions,
    observer: &mut dyn SweepObserver,
    cancel: &AtomicBool,
) -> Result<SweepOutcome, SweepError> {
    run_sweep_with(opts, None, observer, cancel)
}

/// Runs one CPU level of a sweep inside a Slurm job, under the caps Slurm's cgroups apply (see
/// [`SlurmStep`]); refuses to measure if they are not the point's.
pub fn run_sweep_in_slurm_step(
    opts: &SweepOptions,
    step: &SlurmStep,
    observer: &mut dyn SweepObserver,
    cancel: &AtomicBool,
) -> Result<SweepOutcome, SweepError> {
    run_sweep_with(opts, Some(step), observer, cancel)
}

fn run_sweep_with(
    opts: &SweepOptions,
    step: Option<&SlurmStep>,
    observer: &mut dyn SweepObserver,
    cancel: &AtomicBool,
) -> Result<SweepOutcome, SweepError> {
    let started = Instant::now();
    let step_caps = step.map(|s| setup::step_caps(opts, s)).transpose()?;
    let spec = &opts.spec.spec;
    let dataset = setup::dataset(opts, observer)?;
    let cpu_levels = setup::cpu_levels(spec, step_caps.as_ref());
    let memory = setup::memory_levels(spec, dataset.as_ref(), step_caps.as_ref());
    let log_dir = opts.output.with_extension("logs");
    std::fs::create_dir_all(&log_dir).map_err(|source| SweepError::Logs {
        path: log_dir.clone(),
        source,
    })?;
    // Slurm owns a step's cgroups: the profiler makes none of its own there.
    let root = if opts.caps && step_caps.is_none() {
        Some(CgroupRoot::open(&opts.cgroup_parent)?)
    } else {
        None
    };
    let search = setup::cpu_search(opts, &cpu_levels, root.as_ref(), step_caps.as_ref())?;
    let storage_throttle = setup::storage_throttle(opts, step_caps.is_some(), observer)?;
    let gpu = setup::gpu_monitor(spec, observer);
    let (mode, live_check) = setup::mode(opts, step_caps.is_some());
    let mut sweep = Sweep {
        opts,
        observer,
        cancel,
        root,
        gpu,
        step: step_caps,
        axes: plan::Axes {
            cpu: cpu_levels.clone(),
            search,
            search_results: Vec::new(),
            params: spec.sweep.params.clone(),
            mode,
        },
        mem: cache::MemoryInputs::new(memory, dataset, storage_throttle),
        blocks: blocks::Blocks::seeded_now(),
        live_check,
        host: host::HostWatch::default(),
        out: header::Output::new(log_dir),
        launches: LaunchCount::default(),
    };
    if !opts.caps {
        return sweep.check_uncapped(started);
    }
    if opts.resume && opts.output.exists() {
        sweep.resume_from_file()?;
    }
    sweep.start_host_probe();
    sweep.run_combinations(&cpu_levels)?;
    let matrix = Matrix {
        header: sweep
            .out
            .header
            .clone()
            .unwrap_or_else(|| sweep.make_header()),
        cells: sweep.out.cells.clone(),
    };
    if sweep.out.writer.is_none() {
        // Nothing new was run (all cells resumed); still leave a valid file behind.
        sweep.ensure_writer()?;
    }
    Ok(SweepOutcome {
        matrix,
        path: opts.output.clone(),
        launches: sweep.launches.started,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

impl Sweep<'_> {
    /// Measures every parameter combination at `cpu_levels` (or where the search goes), fills
    /// the memory axis in, and holds the spreads between launches.
    fn run_combinations(&mut self, cpu_levels: &[f64]) -> Result<(), SweepError> {
        let spec = &self.opts.spec.spec;
        let memory_axis = self.opts.memory_axis.unwrap_or(spec.sweep.memory);
        if self.step.is_some() && memory_axis == MemoryAxis::Measure {
            return Err(SweepError::Plan(
                "a Slurm step has one memory limit, Slurm's: it measures the top memory level \
                 and models the rest; --memory measure needs the profiler's own caps (run it \
                 locally)"
                    .into(),
            ));
        }
        let combos = param_combinations(&spec.sweep.params);
        let n_mem = self.mem.levels.len();
        match &self.axes.search {
            Some(s) => {
                let at_most = combos.len() * s.at_most() * n_mem;
                self.observer.planned_at_most(at_most, self.out.cells.len());
            }
            None => {
                let total = combos.len() * cpu_levels.len() * n_mem;
                self.observer.planned(total, self.out.done.len());
            }
        }
        if n_mem > 1 {
            // Also when every cell is measured: the header then holds what `profiler validate`
            // needs to compare the cache models with the measurement.
            self.prepare_cache_model();
        }
        for (i, params) in combos.iter().enumerate() {
            let remaining_combos = combos.len() - i - 1;
            let levels =
                self.measure_combination(params, cpu_levels, memory_axis, remaining_combos)?;
            self.calibrate_misses(params, &levels)?;
            self.replay_reads(params, &levels)?;
            if memory_axis == MemoryAxis::Model {
                self.fill_modelled(params, &levels)?;
            }
        }
        if self.axes.search.is_some() {
            self.record_searched_axis()?;
        }
        self.hold_launch_spread()?;
        self.hold_relative_rates()
    }
}

fn render_all(argv: &[String], vars: &Vars, spec: &Path) -> Result<Vec<String>, SweepError> {
    render_argv(argv, vars).map_err(|source| SweepError::Template {
        spec: spec.to_owned(),
        source,
    })
}

fn total_memory_bytes() -> u64 {
    use procfs::Current;
    procfs::Meminfo::current()
        .map(|m| m.mem_total)
        .unwrap_or(u64::MAX / 2)
}

impl Sweep<'_> {
    /// Measures the points of one parameter combination, pass after pass (the CPU search's, or
    /// the grid of `cpu_levels` at the top memory level, or every level where `memory_axis`
    /// measures them), from the start again where the live check found re-capping not valid.
    /// Returns the CPU levels measured.
    fn measure_combination(
        &mut self,
        params: &BTreeMap<String, String>,
        cpu_levels: &[f64],
        memory_axis: MemoryAxis,
        remaining_combos: usize,
    ) -> Result<Vec<f64>, SweepError> {
        loop {
            let levels = match self.axes.search.clone() {
                Some(search) => self.run_search(&search, params, memory_axis, remaining_combos)?,
                None => {
                    let mems: Vec<usize> = match memory_axis {
                        MemoryAxis::Model => vec![0],
                        MemoryAxis::Measure => (0..self.mem.levels.len()).collect(),
                    };
                    let grid: Vec<Point> = (cpu_levels.iter())
                        .flat_map(|&cpu| {
                            mems.iter().map(move |&mem| Point {
                                cpu,
                                mem,
                                params: params.clone(),
                            })
                        })
                        .collect();
                    let mut points = self.first_walk(grid, params);
                    if memory_axis == MemoryAxis::Model
                        && let Some(p) = self.calibration_point(cpu_levels, params)
                    {
                        points.push(p, false);
                    }
                    self.run_points(&mut points)?;
                    cpu_levels.to_vec()
                }
            };
            if !self.launch_again(params)? {
                return Ok(levels);
            }
        }
    }

    fn recorded(&self) -> Recorded<'_> {
        Recorded {
            cells: &self.out.cells,
            memory: &self.mem.levels,
            done: &self.out.done,
        }
    }

    /// The running launch's number in the sweep, counted from 1 (0 before the first), the
    /// launches of a resumed sweep's file included: what its visits are recorded with.
    fn launch_id(&self) -> u32 {
        self.launches.resumed + self.launches.started
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    fn interrupted(&self) -> SweepError {
        SweepError::Interrupted {
            cells: self.out.cells.len(),
            path: self.opts.output.clone(),
        }
    }
}
