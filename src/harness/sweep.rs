//! The sweep: plan the grid, run the job under each allocation (re-capping a running job where
//! that is valid), measure, fill the memory axis with the cache model, and append every cell
//! to the matrix file as soon as it is known.

use super::cgroup::effective::EffectiveCaps;
use super::cgroup::{CapsError, CgroupRoot, RunCgroup};
use super::cpu_search::CpuSearch;
use super::dataset::{
    DatasetError, DatasetSize, block_device_of, ensure_dataset, evict_from_page_cache,
    measure_dataset,
};
use super::gpu::GpuMonitor;
use super::launch::{
    Launch, LaunchError, PROGRESS_FILE_ENV, RunningJob, describe_exit, path_with_own_dir,
};
use super::model_fill::modelled_cells;
use super::plan::{
    MemoryLevels, Point, PointSource, Recorded, cpu_text, joins_launch, label, param_combinations,
};
use super::progress::{ProgressPaths, ProgressTail, Report, now_unix_s};
use super::resident::tree_resident_bytes;
use super::steady::RateWindows;
use crate::cache_model;
use crate::matrix::MatrixError;
use crate::matrix::{
    Axes, CacheKind, CacheModelInputs, Cell, CellKey, CellSource, JobInfo, MATRIX_KIND, Matrix,
    MatrixHeader, MatrixWriter, SCHEMA_VERSION, Telemetry,
};
use crate::spec::{CpuAxis, LoadedSpec, MemoryAxis, SweepMode, TemplateError, Vars, render};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod search;

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
    axes_cpu: Vec<f64>,
    /// The CPU search choosing the levels, when the spec asks for one instead of a list.
    search: Option<CpuSearch>,
    /// What each search found, one line per parameter combination, for the header.
    search_results: Vec<String>,
    mode: SweepMode,
    params_axes: BTreeMap<String, Vec<String>>,
    cache_inputs: Option<CacheModelInputs>,
    /// Block device of the dataset and the read cap (bytes/s) applied to every run.
    storage_throttle: Option<((u64, u64), u64)>,
    /// Why memory levels relative to the dataset leave out the job's resident size, if they do.
    memory_note: Option<String>,
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
        axes_cpu: cpu_levels.clone(),
        search,
        search_results: Vec::new(),
        mode: opts.mode.unwrap_or(spec.sweep.mode),
        params_axes: spec.sweep.params.clone(),
        cache_inputs: None,
        storage_throttle,
        memory_note: None,
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
        let levels = match sweep.search.clone() {
            Some(search) => {
                let remaining_combos = combos.len() - i - 1;
                sweep.run_search(&search, params, memory_axis, remaining_combos)?
            }
            None => {
                let mut points = VecDeque::new();
                for &cpu in &cpu_levels {
                    let mems: Vec<usize> = match memory_axis {
                        MemoryAxis::Model => vec![0],
                        MemoryAxis::Measure => (0..n_mem).collect(),
                    };
                    points.extend(mems.into_iter().map(|mem| Point {
                        cpu,
                        mem,
                        params: params.clone(),
                    }));
                }
                sweep.run_points(&mut points)?;
                cpu_levels.clone()
            }
        };
        if memory_axis == MemoryAxis::Model {
            sweep.fill_modelled(params, &levels)?;
        }
    }
    if sweep.search.is_some() {
        sweep.record_searched_axis()?;
    }
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

fn base_vars(spec: &LoadedSpec) -> Vars {
    let mut vars = Vars::new();
    vars.insert("gpus".into(), spec.spec.gpus.to_string());
    if let Some(d) = &spec.dataset_path {
        vars.insert("dataset".into(), absolute(d).display().to_string());
    }
    vars
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_owned())
}

fn render_all(argv: &[String], vars: &Vars, spec: &Path) -> Result<Vec<String>, SweepError> {
    argv.iter()
        .map(|a| render(a, vars))
        .collect::<Result<_, _>>()
        .map_err(|source| SweepError::Template {
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

/// What happened to a measured point.
enum Outcome {
    Cell(Cell),
    /// The job died at this point; the cell says why. The launch is over.
    Died(Cell),
}

/// A launched job and what it has reported so far.
struct Run {
    job: RunningJob,
    cgroup: Option<RunCgroup>,
    tail: ProgressTail,
    last_report: Option<Report>,
    oom_base: u64,
}

impl Run {
    fn poll(&mut self) -> Vec<Report> {
        let r = self.tail.poll();
        if let Some(last) = r.last() {
            self.last_report = Some(*last);
        }
        r
    }

    fn oom_killed(&self) -> bool {
        self.cgroup
            .as_ref()
            .is_some_and(|c| c.counters().oom_kills > self.oom_base)
    }

    /// Resident memory of the job's processes right now, shared pages counted once.
    fn resident_bytes(&self) -> u64 {
        let pids = match &self.cgroup {
            Some(cg) => cg.pids(),
            None => vec![self.job.pid()],
        };
        tree_resident_bytes(&pids)
    }
}

impl Sweep<'_> {
    fn recorded(&self) -> Recorded<'_> {
        Recorded {
            cells: &self.cells,
            memory: &self.memory,
            done: &self.done,
        }
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

    fn make_header(&self) -> MatrixHeader {
        let spec = &self.opts.spec.spec;
        let cgroup = match (&self.root, &self.step) {
            (Some(r), _) => r.version().as_str(),
            (None, Some(_)) => "slurm",
            (None, None) => "none",
        };
        let memory_bytes = self.memory.bytes().map(|b| b.to_vec()).unwrap_or_default();
        let provenance = match &spec.sweep.memory_pct_of_dataset {
            Some(p) => format!(
                "profiler sweep of {}; memory levels = 1.1 x the job's resident memory after warm-up + 8 MiB + {p:?} % of the dataset",
                self.opts.spec.path.display()
            ),
            None => format!("profiler sweep of {}", self.opts.spec.path.display()),
        };
        let provenance = match self.root.as_ref().and_then(|r| r.swap_note()) {
            Some(note) => format!("{provenance}; {note}"),
            None => provenance,
        };
        let provenance = match &self.memory_note {
            Some(note) => format!("{provenance}; {note}"),
            None => provenance,
        };
        let provenance = match spec.sweep.storage_read_mb_s {
            Some(mb) if self.storage_throttle.is_some() => {
                format!("{provenance}; storage reads capped at {mb} MB/s (emulated slower storage)")
            }
            _ => provenance,
        };
        let provenance = match &self.step {
            Some(_) => format!(
                "{provenance}; measured in Slurm jobs under Slurm's cgroups (cpuset and memory \
                 limit of the job), one CPU level per job"
            ),
            None => provenance,
        };
        let provenance = match &self.search {
            Some(search) => format!(
                "{provenance}; {}",
                search::describe(search, &self.search_results)
            ),
            None => provenance,
        };
        MatrixHeader {
            kind: MATRIX_KIND.to_string(),
            schema_version: SCHEMA_VERSION,
            job: JobInfo {
                name: spec.name.clone(),
                model: self.opts.spec.model().to_string(),
                gpus: spec.gpus,
                batch_size_per_gpu: spec.batch_size_per_gpu,
                dataset_bytes: spec
                    .dataset
                    .as_ref()
                    .and_then(|d| d.bytes)
                    .or(self.dataset.as_ref().map(|d| d.bytes)),
                dataset_samples: spec
                    .dataset
                    .as_ref()
                    .and_then(|d| d.samples)
                    .or(self.dataset.as_ref().map(|d| d.files)),
            },
            machine: Some(crate::machine::describe_machine(cgroup)),
            axes: Axes {
                cpu: self.axes_cpu.clone(),
                memory_bytes,
                params: self.params_axes.clone(),
            },
            created_unix_s: now_unix_s() as u64,
            provenance: Some(provenance),
            cache_model: self.cache_inputs.clone(),
            validation: None,
        }
    }

    fn ensure_writer(&mut self) -> Result<&mut MatrixWriter, SweepError> {
        if self.writer.is_none() {
            let header = self.make_header();
            let (writer, kept) = MatrixWriter::create(&self.opts.output, &header)?;
            if let Some(kept) = kept {
                self.observer.warn(&format!(
                    "{} existed; its cells are kept in {} (use --resume to continue a sweep)",
                    self.opts.output.display(),
                    kept.display()
                ));
            }
            self.writer = Some(writer);
            self.header = Some(header);
        }
        Ok(self.writer.as_mut().expect("just created"))
    }

    fn record(&mut self, mut cell: Cell) -> Result<(), SweepError> {
        if let Some((step, _)) = &self.step {
            cell.node = Some(step.node.clone());
        }
        self.ensure_writer()?.append(&cell)?;
        self.done.insert(cell.key());
        self.observer.cell_done(&cell);
        self.cells.push(cell);
        Ok(())
    }

    fn resume_from_file(&mut self) -> Result<(), SweepError> {
        let (writer, matrix) = MatrixWriter::resume(&self.opts.output)?;
        let h = &matrix.header;
        let spec = &self.opts.spec.spec;
        if h.job.name != spec.name {
            return Err(SweepError::Plan(format!(
                "--resume: {} holds a matrix of job {:?}, not {:?}",
                self.opts.output.display(),
                h.job.name,
                spec.name
            )));
        }
        if h.axes.memory_bytes.len() != self.memory.len() {
            return Err(SweepError::Plan(format!(
                "--resume: {} has {} memory levels but the spec now has {}; start afresh without --resume",
                self.opts.output.display(),
                h.axes.memory_bytes.len(),
                self.memory.len()
            )));
        }
        let mut levels = h.axes.memory_bytes.clone();
        levels.sort_unstable_by(|a, b| b.cmp(a));
        self.memory = MemoryLevels::Bytes(levels);
        self.cache_inputs = h.cache_model.clone();
        self.done = matrix.cells.iter().map(Cell::key).collect();
        self.cells = matrix.cells.clone();
        self.header = Some(matrix.header);
        self.writer = Some(writer);
        self.observer.status(&format!(
            "resuming: {} cell(s) already in {}",
            self.cells.len(),
            self.opts.output.display()
        ));
        Ok(())
    }

    /// Measures storage and memory bandwidth for the cache model (once per sweep).
    fn prepare_cache_model(&mut self) {
        if self.cache_inputs.is_some() {
            return;
        }
        let Some(ds) = &self.dataset else { return };
        self.observer
            .status("measuring storage and memory bandwidth for the cache model");
        let storage = match cache_model::measure_storage_read_bandwidth(&ds.paths, 512 << 20) {
            Ok(b) => b,
            Err(e) => {
                self.observer.warn(&format!(
                    "storage bandwidth: {e}; memory levels below the top one will not be modelled (measure them with --memory measure)"
                ));
                self.model_unavailable = true;
                return;
            }
        };
        // Runs see the throttled bandwidth when the spec emulates slower storage.
        let storage = match self.storage_throttle {
            Some((_, cap)) => storage.min(cap as f64),
            None => storage,
        };
        let kind = self
            .opts
            .spec
            .spec
            .dataset
            .as_ref()
            .map_or(CacheKind::PageCache, |d| d.cache);
        self.cache_inputs = Some(CacheModelInputs {
            kind,
            dataset_bytes: ds.bytes,
            storage_bytes_per_s: storage,
            memory_bytes_per_s_per_core: cache_model::measure_memory_read_bandwidth_per_core(),
        });
    }

    /// Fills the memory levels below the top one from the measured CPU axis.
    fn fill_modelled(
        &mut self,
        params: &BTreeMap<String, String>,
        cpus: &[f64],
    ) -> Result<(), SweepError> {
        let Some(levels) = self.memory.bytes().map(|b| b.to_vec()) else {
            return Ok(());
        };
        if self.model_unavailable && self.cache_inputs.is_none() {
            // Without the cache model the top level's rate says nothing about lower levels;
            // leave them out (a --resume that can measure storage fills them).
            return Ok(());
        }
        let samples = self
            .header
            .as_ref()
            .and_then(|h| h.job.dataset_samples)
            .unwrap_or(0);
        for &cpu in cpus {
            let top = CellKey::new(cpu, levels[0], params);
            let Some(measured) = self.cells.iter().find(|c| c.key() == top).cloned() else {
                continue;
            };
            let lower: Vec<u64> = levels[1..]
                .iter()
                .copied()
                .filter(|&l| !self.done.contains(&CellKey::new(cpu, l, params)))
                .collect();
            for cell in modelled_cells(&measured, &lower, self.cache_inputs.as_ref(), samples) {
                self.record(cell)?;
            }
        }
        Ok(())
    }

    fn vars_for(&self, p: &Point) -> Vars {
        let mut vars = base_vars(&self.opts.spec);
        vars.insert("cpus".into(), cpu_text(p.cpu));
        vars.insert("workers".into(), (p.cpu.ceil() as u64).max(1).to_string());
        vars.extend(p.params.clone());
        vars
    }

    /// In a Slurm step: an error unless the step's cgroup has the point's caps.
    fn check_step_caps(&self, p: &Point) -> Result<(), SweepError> {
        let Some((_, caps)) = &self.step else {
            return Ok(());
        };
        let memory = self.memory.bytes().map(|b| b[p.mem]);
        caps.check(p.cpu, memory).map_err(|e| {
            SweepError::Plan(format!(
                "in the Slurm step: refusing to measure {}: {e} (ask for more with \
                 `profiler sweep --slurm --slurm-mem MB`)",
                label(p)
            ))
        })
    }

    fn launch(&mut self, first: &Point, memory_limit: Option<u64>) -> Result<Run, SweepError> {
        self.check_step_caps(first)?;
        let spec = &self.opts.spec;
        self.launches += 1;
        let cgroup = match &self.root {
            Some(root) => {
                // Start every launch with a cold cache, charged to the job's own cgroup.
                if let Some(ds) = &self.dataset {
                    evict_from_page_cache(&ds.paths);
                }
                let cg = root.create_launch(&spec.spec.name, self.launches)?;
                cg.set_cpu(first.cpu)?;
                cg.set_memory_limit(memory_limit)?;
                if let Some((dev, bps)) = self.storage_throttle {
                    cg.set_read_bps(dev, Some(bps))?;
                }
                Some(cg)
            }
            None => None,
        };
        let tag = match &cgroup {
            Some(cg) => cg.name().to_string(),
            None => format!(
                "{}-{}-{}",
                spec.spec.name,
                std::process::id(),
                self.launches
            ),
        };
        let vars = self.vars_for(first);
        let argv = render_all(&spec.spec.command, &vars, &spec.path)?;
        let progress_file = self.log_dir.join(format!("{tag}.progress.jsonl"));
        let stdout_log = self.log_dir.join(format!("{tag}.stdout.log"));
        let _ = std::fs::remove_file(&progress_file);
        let mut env: Vec<(String, String)> = Vec::new();
        for (k, v) in &spec.spec.env {
            env.push((
                k.clone(),
                render(v, &vars).map_err(|source| SweepError::Template {
                    spec: spec.path.clone(),
                    source,
                })?,
            ));
        }
        env.push((
            PROGRESS_FILE_ENV.into(),
            absolute(&progress_file).display().to_string(),
        ));
        env.push(("PROFILER_CPUS".into(), vars["cpus"].clone()));
        env.push(("PROFILER_WORKERS".into(), vars["workers"].clone()));
        env.push(("PATH".into(), path_with_own_dir()));
        // Python block-buffers output that is not a terminal: progress would arrive in bursts.
        if !spec.spec.env.contains_key("PYTHONUNBUFFERED") {
            env.push(("PYTHONUNBUFFERED".into(), "1".into()));
        }
        let launch = Launch {
            argv,
            shell: spec.spec.shell,
            env,
            cwd: spec.working_dir.clone(),
            stdout_log: stdout_log.clone(),
            stderr_log: self.log_dir.join(format!("{tag}.stderr.log")),
            cgroup_procs: cgroup.as_ref().map(|c| c.procs_files()).unwrap_or_default(),
        };
        let job = launch.spawn()?;
        let progress_paths = ProgressPaths {
            progress_file,
            stdout: stdout_log,
            stderr: self.log_dir.join(format!("{tag}.stderr.log")),
        };
        let oom_base = cgroup.as_ref().map_or(0, |c| c.counters().oom_kills);
        Ok(Run {
            job,
            cgroup,
            tail: ProgressTail::new(&spec.spec, progress_paths),
            last_report: None,
            oom_base,
        })
    }

    fn empty_cell(&self, p: &Point, source: CellSource, note: String, wall_s: f64) -> Cell {
        Cell {
            cpu: p.cpu,
            memory_bytes: self.memory.bytes().map_or(0, |b| b[p.mem]),
            params: p.params.clone(),
            source,
            throughput: None,
            iteration_time_s: None,
            telemetry: None,
            gpu: None,
            note: Some(note),
            wall_s,
            node: None,
        }
    }

    /// The cell for a job that ended: infeasible if the OOM killer took it, else failed.
    fn death_cell(&self, run: &mut Run, p: &Point, started: Instant, phase: &str) -> Cell {
        let status = run
            .job
            .try_status()
            .map(describe_exit)
            .unwrap_or_else(|| "stopped".into());
        let wall = started.elapsed().as_secs_f64();
        if run.oom_killed() {
            return self.empty_cell(
                p,
                CellSource::Infeasible,
                format!("OOM-killed under the memory cap during {phase} ({status})"),
                wall,
            );
        }
        let tail = run.job.stderr_tail(2000);
        self.empty_cell(
            p,
            CellSource::Failed,
            format!("job {status} during {phase}; stderr tail:\n{tail}"),
            wall,
        )
    }

    /// Waits until the job has reported progress for `seconds` after its first report.
    /// Returns `Err(cell)` when the job dies or never reports.
    fn warm_up(
        &mut self,
        run: &mut Run,
        p: &Point,
        started: Instant,
    ) -> Result<Result<(), Cell>, SweepError> {
        let m = self.opts.spec.spec.measure.clone();
        // One pass over the dataset, so a launch's first cell sees a warm page cache.
        let pass_samples = match (&self.dataset, m.warmup_pass) {
            (Some(ds), true) => self
                .opts
                .spec
                .spec
                .dataset
                .as_ref()
                .and_then(|d| d.samples)
                .unwrap_or(ds.files) as f64,
            _ => 0.0,
        };
        let mut first: Option<(Instant, f64)> = None;
        let mut read = 0.0;
        loop {
            if self.cancelled() {
                return Err(self.interrupted());
            }
            let reports = run.poll();
            for w in run.tail.take_warnings() {
                self.observer.warn(&format!("{}: {w}", label(p)));
            }
            if let (Some(r), None) = (reports.first(), first) {
                first = Some((Instant::now(), r.samples));
                self.observer.status(&format!("{}: warming up", label(p)));
            }
            if let (Some(last), Some((_, base))) = (reports.last(), first) {
                read = last.samples - base;
            }
            if run.job.try_status().is_some() {
                return Ok(Err(self.death_cell(
                    run,
                    p,
                    started,
                    "start-up and warm-up",
                )));
            }
            match first {
                Some((f, _))
                    if f.elapsed().as_secs_f64() >= m.warmup_s
                        && (read >= pass_samples
                            || f.elapsed().as_secs_f64() >= m.startup_timeout_s) =>
                {
                    return Ok(Ok(()));
                }
                None if started.elapsed().as_secs_f64() > m.startup_timeout_s => {
                    let mut note = format!(
                        "no progress within startup_timeout_s = {} s; expected {}",
                        m.startup_timeout_s,
                        run.tail.expectation()
                    );
                    if let Some(bad) = &run.tail.first_bad_line {
                        note.push_str(&format!(
                            "; got {} malformed line(s), first: {bad}",
                            run.tail.bad_lines
                        ));
                    }
                    return Ok(Err(self.empty_cell(
                        p,
                        CellSource::Failed,
                        note,
                        started.elapsed().as_secs_f64(),
                    )));
                }
                _ => std::thread::sleep(POLL),
            }
        }
    }

    /// Measures one point on a running, warmed-up job.
    fn measure(
        &mut self,
        run: &mut Run,
        p: &Point,
        started: Instant,
    ) -> Result<Outcome, SweepError> {
        let m = self.opts.spec.spec.measure.clone();
        self.observer.status(&format!("{}: measuring", label(p)));
        run.poll();
        let t0 = now_unix_s();
        let mut windows = RateWindows::new(t0, m.window_s, run.last_report);
        let c0 = run.cgroup.as_ref().map(|c| c.counters());
        let clock = Instant::now();
        if let Some(g) = &self.gpu {
            g.reset_window();
        }
        let mut rss_peak = 0u64;
        let mut steady = false;
        loop {
            if self.cancelled() {
                return Err(self.interrupted());
            }
            for r in run.poll() {
                windows.push(r);
            }
            for w in run.tail.take_warnings() {
                self.observer.warn(&format!("{}: {w}", label(p)));
            }
            rss_peak = rss_peak.max(run.resident_bytes());
            if run.job.try_status().is_some() {
                return Ok(Outcome::Died(self.death_cell(
                    run,
                    p,
                    started,
                    "measurement",
                )));
            }
            if windows.is_steady(m.steady_windows, m.steady_cv) {
                steady = true;
                break;
            }
            if clock.elapsed().as_secs_f64() >= m.max_s {
                break;
            }
            std::thread::sleep(POLL);
        }
        let elapsed = clock.elapsed().as_secs_f64();
        let telemetry = match (c0, run.cgroup.as_ref().map(|c| c.counters())) {
            (Some(a), Some(b)) => Some(Telemetry {
                cpu_cores_used: (b.cpu_usage_ns - a.cpu_usage_ns) as f64 / 1e9 / elapsed,
                throttled_s_per_s: (b.throttled_ns.saturating_sub(a.throttled_ns)) as f64
                    / 1e9
                    / elapsed,
                rss_peak_bytes: rss_peak,
                page_cache_bytes: b.page_cache_bytes,
                storage_read_bytes_per_s: (b.read_bytes.saturating_sub(a.read_bytes)) as f64
                    / elapsed,
            }),
            _ => Some(Telemetry {
                rss_peak_bytes: rss_peak,
                ..Telemetry::default()
            }),
        };
        let Some(throughput) = windows.throughput(m.steady_windows) else {
            let mut cell = self.empty_cell(
                p,
                CellSource::Failed,
                format!(
                    "the job reported no progress for {:.0} s of measurement (max_s); expected {}",
                    elapsed,
                    run.tail.expectation()
                ),
                started.elapsed().as_secs_f64(),
            );
            cell.telemetry = telemetry;
            return Ok(Outcome::Cell(cell));
        };
        let note = (!steady).then(|| {
            format!(
                "did not reach steady state (CV of the last {} windows < {}) within max_s = {} s",
                m.steady_windows, m.steady_cv, m.max_s
            )
        });
        Ok(Outcome::Cell(Cell {
            cpu: p.cpu,
            memory_bytes: self.memory.bytes().map_or(0, |b| b[p.mem]),
            params: p.params.clone(),
            source: CellSource::Measured,
            throughput: Some(throughput),
            iteration_time_s: windows.iteration_times(),
            telemetry,
            gpu: self.gpu.as_ref().and_then(|g| g.window_summary()),
            note,
            wall_s: started.elapsed().as_secs_f64(),
            node: None,
        }))
    }

    /// Measures the points `source` gives, one launch for as long as they can share it (live
    /// re-capping); when the job dies, the next point is relaunched.
    fn run_points(&mut self, source: &mut dyn PointSource) -> Result<(), SweepError> {
        let depends_on_cpu = self.opts.spec.depends_on_cpu_level();
        while let Some(first) = source.peek(&self.recorded()) {
            source.take();
            let started = Instant::now();
            self.observer
                .status(&format!("{}: starting job", label(&first)));
            let limit = self.memory.bytes().map(|b| b[first.mem]);
            let mut run = self.launch(&first, limit)?;
            let warm = self.warm_up(&mut run, &first, started)?;
            if let Err(mut cell) = warm {
                if self.memory.bytes().is_none() {
                    // Levels relative to the dataset need the job's resident size, which a job
                    // that died cannot tell; fix them now without it so the file stays
                    // loadable and resumable and the other points have levels to run at.
                    self.memory.resolve(0);
                    self.memory_note = Some(
                        "the first launch ended before its warm-up, so memory levels leave out the job's resident memory".into(),
                    );
                    cell.memory_bytes = self.memory.bytes().expect("resolved")[first.mem];
                }
                self.record(cell)?;
                self.record_ruled_out_by_oom(source, &first);
                continue;
            }
            if self.memory.bytes().is_none() {
                // Memory levels relative to the dataset: now the job's resident size is known.
                let resident = run
                    .resident_bytes()
                    .max(run.cgroup.as_ref().map_or(0, |c| c.counters().anon_bytes));
                self.memory.resolve(resident);
                self.check_step_caps(&first)?;
                let bytes = self.memory.bytes().expect("resolved")[first.mem];
                if let Some(cg) = &run.cgroup {
                    cg.set_memory_limit(Some(bytes))?;
                }
                self.ensure_writer()?;
                std::thread::sleep(Duration::from_secs_f64(
                    self.opts.spec.spec.measure.settle_s,
                ));
            }
            let mut point = first;
            let mut point_started = started;
            loop {
                match self.measure(&mut run, &point, point_started)? {
                    Outcome::Cell(cell) => self.record(cell)?,
                    Outcome::Died(cell) => {
                        self.record(cell)?;
                        self.record_ruled_out_by_oom(source, &point);
                        break;
                    }
                }
                // Next point on the same launch, if it can share it.
                let Some(next) = source.peek(&self.recorded()) else {
                    break;
                };
                if !joins_launch(&point, &next, self.mode, depends_on_cpu) {
                    break;
                }
                source.take();
                point_started = Instant::now();
                self.observer
                    .status(&format!("{}: re-capping the running job", label(&next)));
                if let Some(cg) = &run.cgroup {
                    cg.set_cpu(next.cpu)?;
                    let bytes = self.memory.bytes().expect("resolved")[next.mem];
                    // Only EBUSY means the kernel could not reclaim; any other failure is
                    // the sweep's, not the cell's.
                    if let Err(e) = cg.set_memory_limit(Some(bytes)) {
                        if !e.is_busy() {
                            return Err(e.into());
                        }
                        let cell = self.empty_cell(
                            &next,
                            CellSource::Infeasible,
                            format!("the kernel could not reclaim memory down to the limit: {e}"),
                            0.0,
                        );
                        self.record(cell)?;
                        self.record_ruled_out_by_oom(source, &next);
                        break;
                    }
                }
                // Let the new caps take effect before measuring.
                let settle = Instant::now();
                while settle.elapsed().as_secs_f64() < self.opts.spec.spec.measure.settle_s {
                    if self.cancelled() {
                        return Err(self.interrupted());
                    }
                    run.poll();
                    std::thread::sleep(POLL);
                }
                point = next;
            }
            run.job.stop();
            drop(run);
        }
        Ok(())
    }

    /// After an OOM at `p`, smaller memory at the same CPU level and parameters cannot fit either.
    fn record_ruled_out_by_oom(&mut self, source: &mut dyn PointSource, p: &Point) {
        let oom = self
            .cells
            .last()
            .is_some_and(|c| c.source == CellSource::Infeasible);
        if !oom {
            return;
        }
        for q in source.remove_ruled_out_by_oom(p) {
            let _ = self.record(self.ruled_out_cell(&q));
        }
    }

    fn ruled_out_cell(&self, p: &Point) -> Cell {
        self.empty_cell(
            p,
            CellSource::Infeasible,
            "not run: a larger memory limit at this CPU level was already OOM-killed".into(),
            0.0,
        )
    }

    /// `--no-caps`: runs the first point once, without cgroups, to check the spec end to end.
    fn check_uncapped(mut self, started: Instant) -> Result<SweepOutcome, SweepError> {
        let params = param_combinations(&self.opts.spec.spec.sweep.params)
            .into_iter()
            .next()
            .unwrap_or_default();
        let cpus = crate::machine::available_cpus() as f64;
        let p = Point {
            cpu: cpus,
            mem: 0,
            params,
        };
        self.memory = MemoryLevels::Bytes(vec![total_memory_bytes()]);
        self.axes_cpu = vec![cpus];
        self.observer.planned(1, 0);
        let mut run = self.launch(&p, None)?;
        let cell = match self.warm_up(&mut run, &p, started)? {
            Err(cell) => cell,
            Ok(()) => match self.measure(&mut run, &p, started)? {
                Outcome::Cell(c) | Outcome::Died(c) => c,
            },
        };
        run.job.stop();
        self.observer.cell_done(&cell);
        self.cells.push(cell);
        Ok(SweepOutcome {
            matrix: Matrix {
                header: self.make_header(),
                cells: self.cells,
            },
            path: PathBuf::new(),
            launches: self.launches,
            wall_s: started.elapsed().as_secs_f64(),
        })
    }
}
