//! The sweep: plan the grid, run the job under each allocation (re-capping a running job where
//! that is valid), measure, fill the memory axis with the cache model, and append every cell
//! to the matrix file as soon as it is known.

use super::cgroup::effective::EffectiveCaps;
use super::cgroup::{CapsError, CgroupRoot};
use super::cpu_search::CpuSearch;
use super::dataset::{DatasetError, DatasetSize, block_device_of, ensure_dataset, measure_dataset};
use super::gpu::GpuMonitor;
use super::job_launch::{base_vars, render_argv};
use super::launch::LaunchError;
use super::plan::{MemoryLevels, Point, Recorded, param_combinations};
use crate::matrix::MatrixError;
use crate::matrix::{
    CacheModelInputs, Cell, CellKey, CellSource, Matrix, MatrixHeader, MatrixWriter,
};
use crate::spec::{CpuAxis, LoadedSpec, MemoryAxis, SweepMode, TemplateError, Vars};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod blocks;
mod cache;
mod cache_fill;
mod disturbance;
mod footprint;
mod header;
mod launches;
mod live_check;
mod measure;
mod points;
mod replay;
mod run;
mod search;
mod spread;

pub use blocks::{DRIFT_SLACK, MAX_EXTRA_PASSES};
pub use launches::{
    add_launch, combine_cells, combine_throughputs, hold_launch_spread, hold_pooled_spread,
    launch_rates, launch_sd, pooled_spread,
};
use live_check::LiveCheckState;
use run::Run;

pub use live_check::{LIVE_CHECK_MAX_TOLERANCE, LIVE_CHECK_SLACK};

const GIB: f64 = (1u64 << 30) as f64;
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

/// Mutable state of a sweep in progress.
struct Sweep<'a> {
    opts: &'a SweepOptions,
    observer: &'a mut dyn SweepObserver,
    cancel: &'a AtomicBool,
    root: Option<CgroupRoot>,
    gpu: Option<GpuMonitor>,
    memory: MemoryLevels,
    dataset: Option<DatasetSize>,
    header: Option<MatrixHeader>,
    writer: Option<MatrixWriter>,
    cells: Vec<Cell>,
    done: HashSet<CellKey>,
    log_dir: PathBuf,
    launches: u32,
    /// Launches of the sweep this one resumes, so that visits keep telling launches apart.
    resumed_launches: u32,
    axes_cpu: Vec<f64>,
    /// The CPU search choosing the levels, when the spec asks for one instead of a list.
    search: Option<CpuSearch>,
    /// What each search found, one line per parameter combination, for the header.
    search_results: Vec<String>,
    mode: SweepMode,
    /// Whether re-capping a running job is still to be checked against a fresh start.
    live_check: LiveCheckState,
    /// The blocks measured so far ([`blocks`]), and the one being measured.
    blocks: Vec<crate::matrix::SweepBlock>,
    block: Option<crate::matrix::SweepBlock>,
    /// Orders each block's points afresh.
    rng: rand_chacha::ChaCha8Rng,
    params_axes: BTreeMap<String, Vec<String>>,
    cache_inputs: Option<CacheModelInputs>,
    /// How the job maps its dataset's files, once looked at (while its first cell ran).
    dataset_maps: Option<crate::harness::resident::DatasetMaps>,
    /// Block device of the dataset and the read cap (bytes/s) applied to every run.
    storage_throttle: Option<((u64, u64), u64)>,
    /// Why memory levels relative to the dataset leave out the job's resident size, or were
    /// sized again, if they were.
    memory_note: Option<String>,
    /// Where the storage cap is above what the disk delivers to random reads of a sample,
    /// what it delivered.
    storage_note: Option<String>,
    /// How levels relative to the dataset were sized from the job's footprint.
    sizing: Option<footprint::Sizing>,
    /// The memory axis has a dataset but no cache model (measuring storage failed): lower
    /// memory levels are not filled in rather than filled with the top level's rate.
    model_unavailable: bool,
    /// Inside a Slurm step: the step and the caps of its cgroup, checked at every point.
    step: Option<(SlurmStep, EffectiveCaps)>,
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
    let step_caps = match step {
        Some(step) => {
            let caps = EffectiveCaps::of_self().map_err(|e| {
                SweepError::Plan(format!("in the Slurm step: reading its caps: {e}"))
            })?;
            caps.check(step.cpu, None).map_err(|e| {
                SweepError::Plan(format!(
                    "in the Slurm step: refusing to measure cpu = {}: {e} (Slurm must confine \
                     steps: TaskPlugin=task/cgroup with ConstrainCores=yes)",
                    step.cpu
                ))
            })?;
            if let CpuAxis::Search(_) = &opts.spec.spec.sweep.cpu {
                return Err(SweepError::Plan(
                    "a Slurm step measures one CPU level; the spec's CPU search cannot run in one"
                        .into(),
                ));
            }
            Some((step.clone(), caps))
        }
        None => None,
    };
    let spec = &opts.spec.spec;
    let base_vars = base_vars(&opts.spec);
    let mut dataset = None;
    if let (Some(path), Some(d)) = (&opts.spec.dataset_path, &spec.dataset) {
        let generate = d
            .generate
            .as_ref()
            .map(|argv| render_all(argv, &base_vars, &opts.spec.path))
            .transpose()?;
        if !path.exists() {
            observer.status(&format!("generating dataset {}", path.display()));
        }
        ensure_dataset(path, generate.as_deref(), &opts.spec.working_dir)?;
        dataset = Some(measure_dataset(path)?);
    }
    let dataset_bytes = spec
        .dataset
        .as_ref()
        .and_then(|d| d.bytes)
        .or(dataset.as_ref().map(|d| d.bytes));

    let mut cpu_levels = match &spec.sweep.cpu {
        CpuAxis::Levels(levels) => levels.clone(),
        CpuAxis::Search(_) => Vec::new(),
    };
    cpu_levels.sort_by(|a, b| b.total_cmp(a));
    cpu_levels.dedup();
    if let Some((step, _)) = &step_caps {
        cpu_levels = vec![step.cpu];
    }
    let memory = match (&spec.sweep.memory_gib, &spec.sweep.memory_pct_of_dataset) {
        (Some(g), _) => {
            let mut b: Vec<u64> = g.iter().map(|g| (g * GIB) as u64).collect();
            b.sort_unstable_by(|a, b| b.cmp(a));
            b.dedup();
            MemoryLevels::Bytes(b)
        }
        (None, Some(p)) => {
            let mut pct = p.clone();
            pct.sort_by(|a, b| b.total_cmp(a));
            pct.dedup();
            MemoryLevels::PctOfDataset {
                pct,
                dataset_bytes: dataset_bytes.unwrap_or(0),
            }
        }
        // No memory axis: one level, the machine's memory (i.e. effectively uncapped), or in
        // a Slurm step the memory Slurm gave it.
        (None, None) => MemoryLevels::Bytes(vec![
            step_caps
                .as_ref()
                .and_then(|(_, caps)| caps.memory_limit)
                .unwrap_or_else(total_memory_bytes),
        ]),
    };
    let memory = match step_caps
        .as_ref()
        .and_then(|(s, _)| s.memory_levels.clone())
    {
        Some(levels) => MemoryLevels::Bytes(levels),
        None => memory,
    };

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
    let available = match (&root, &step_caps) {
        (Some(r), _) => r.cpus().len() as f64,
        (None, Some((_, caps))) => caps.cores(),
        (None, None) => crate::machine::available_cpus() as f64,
    };
    let search = match &spec.sweep.cpu {
        CpuAxis::Levels(_) => None,
        CpuAxis::Search(s) => Some(
            search::configure(s, spec.gpus, available)
                .map_err(|e| SweepError::Plan(format!("{}: {e}", opts.spec.path.display())))?,
        ),
    };
    let highest = search
        .as_ref()
        .map_or(cpu_levels.first().copied(), |s| Some(s.max));
    if let Some(too_big) = highest.filter(|c| opts.caps && *c > available) {
        return Err(SweepError::Plan(format!(
            "{}: sweep.cpu level {too_big} exceeds the {available} CPUs available here",
            opts.spec.path.display()
        )));
    }

    let storage_throttle = match (spec.sweep.storage_read_mb_s, &opts.spec.dataset_path) {
        (Some(mb), Some(_)) if step_caps.is_some() => {
            observer.warn(&format!(
                "sweep.storage_read_mb_s = {mb} is not applied in a Slurm step (Slurm owns its \
                 cgroups): runs read at the node's storage speed"
            ));
            None
        }
        (Some(mb), Some(path)) if opts.caps => {
            let dev = block_device_of(path).ok_or_else(|| {
                SweepError::Plan(format!(
                    "sweep.storage_read_mb_s: {} is not on a block device that can be throttled",
                    path.display()
                ))
            })?;
            Some((dev, (mb * 1e6) as u64))
        }
        _ => None,
    };

    let gpu = if spec.gpus > 0 {
        match super::gpu::open_nvml() {
            Ok(probe) => Some(GpuMonitor::start(
                Box::new(probe),
                (0..spec.gpus).collect(),
                Duration::from_millis(200),
            )),
            Err(e) => {
                observer.warn(&format!("{e}; cells will have no GPU telemetry"));
                None
            }
        }
    } else {
        None
    };

    let mut mode = opts.mode.unwrap_or(spec.sweep.mode);
    if spec.sweep.adapts_to_caps == Some(false) {
        mode = SweepMode::Relaunch;
    }
    // Only a launch that re-caps its CPU needs the check: not when the command follows the CPU
    // level (a launch per level), nor when the spec vouches for the job.
    let live_check = if mode == SweepMode::Live
        && spec.sweep.adapts_to_caps.is_none()
        && !opts.spec.depends_on_cpu_level()
        && step_caps.is_none()
    {
        LiveCheckState::Pending { attempts: 0 }
    } else {
        LiveCheckState::NotNeeded
    };
    let mut sweep = Sweep {
        opts,
        observer,
        cancel,
        root,
        gpu,
        memory,
        dataset,
        header: None,
        writer: None,
        cells: Vec::new(),
        done: HashSet::new(),
        log_dir,
        launches: 0,
        resumed_launches: 0,
        axes_cpu: cpu_levels.clone(),
        search,
        search_results: Vec::new(),
        mode,
        live_check,
        blocks: Vec::new(),
        block: None,
        rng: <rand_chacha::ChaCha8Rng as rand_core::SeedableRng>::seed_from_u64(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
        ),
        params_axes: spec.sweep.params.clone(),
        cache_inputs: None,
        dataset_maps: None,
        storage_throttle,
        memory_note: None,
        storage_note: None,
        sizing: None,
        model_unavailable: false,
        step: step_caps,
    };

    if !opts.caps {
        return sweep.check_uncapped(started);
    }
    if opts.resume && opts.output.exists() {
        sweep.resume_from_file()?;
    }

    let memory_axis = opts.memory_axis.unwrap_or(spec.sweep.memory);
    if sweep.step.is_some() && memory_axis == MemoryAxis::Measure {
        return Err(SweepError::Plan(
            "a Slurm step has one memory limit, Slurm's: it measures the top memory level and \
             models the rest; --memory measure needs the profiler's own caps (run it locally)"
                .into(),
        ));
    }
    let combos = param_combinations(&spec.sweep.params);
    let n_mem = sweep.memory.len();
    match &sweep.search {
        Some(s) => {
            let at_most = combos.len() * s.at_most() * n_mem;
            sweep.observer.planned_at_most(at_most, sweep.cells.len());
        }
        None => {
            let total = combos.len() * cpu_levels.len() * n_mem;
            sweep.observer.planned(total, sweep.done.len());
        }
    }

    if n_mem > 1 {
        // Also when every cell is measured: the header then holds what `profiler validate`
        // needs to compare the cache models with the measurement.
        sweep.prepare_cache_model();
    }
    for (i, params) in combos.iter().enumerate() {
        let remaining_combos = combos.len() - i - 1;
        let levels =
            sweep.measure_combination(params, &cpu_levels, memory_axis, remaining_combos)?;
        sweep.calibrate_misses(params, &levels)?;
        sweep.replay_reads(params, &levels)?;
        if memory_axis == MemoryAxis::Model {
            sweep.fill_modelled(params, &levels)?;
        }
    }
    if sweep.search.is_some() {
        sweep.record_searched_axis()?;
    }
    sweep.hold_launch_spread()?;
    sweep.hold_relative_rates()?;
    let matrix = Matrix {
        header: sweep.header.clone().unwrap_or_else(|| sweep.make_header()),
        cells: sweep.cells.clone(),
    };
    if sweep.writer.is_none() {
        // Nothing new was run (all cells resumed); still leave a valid file behind.
        sweep.ensure_writer()?;
    }
    Ok(SweepOutcome {
        matrix,
        path: opts.output.clone(),
        launches: sweep.launches,
        wall_s: started.elapsed().as_secs_f64(),
    })
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
            let levels = match self.search.clone() {
                Some(search) => self.run_search(&search, params, memory_axis, remaining_combos)?,
                None => {
                    let mems: Vec<usize> = match memory_axis {
                        MemoryAxis::Model => vec![0],
                        MemoryAxis::Measure => (0..self.memory.len()).collect(),
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
            cells: &self.cells,
            memory: &self.memory,
            done: &self.done,
        }
    }

    /// The running launch's number in the sweep, counted from 1 (0 before the first), the
    /// launches of a resumed sweep's file included: what its visits are recorded with.
    fn launch_id(&self) -> u32 {
        self.resumed_launches + self.launches
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    fn interrupted(&self) -> SweepError {
        SweepError::Interrupted {
            cells: self.cells.len(),
            path: self.opts.output.clone(),
        }
    }
}
