//! The throughput sensitivity matrix: what one job achieves at each CPU x memory (x parameter)
//! allocation, and how each cell came to be (measured, modelled by the cache model, failed or
//! infeasible). Schema documented in `docs/MATRIX.md`.
//!
//! On disk a matrix is JSON lines (`*.matrix.jsonl`): one header line, then one line per cell,
//! appended and flushed as each cell finishes so an interrupted sweep keeps every finished cell.

pub mod cell_model;
pub mod checks;
pub mod demand;
pub mod doubt;
mod file;
pub mod machine;
pub mod relative;
mod shipped_zoo;
mod summary;
pub mod surface;
mod validation;
pub mod visits;

pub use checks::{Findings, check as check_matrix, is_disturbed};
pub use demand::{CostWeights, DEFAULT_EPS, Demand, best_case, demands, render_demands};
pub use file::{
    MatrixError, MatrixWriter, load_matrix, matrix_files, parse_matrix, rewrite_header,
    rewrite_matrix,
};
pub use machine::{GpuDevice, MachineInfo, Processor, Storage, UNKNOWN_KIND};
pub use relative::{BlockReference, HostModel, RelativeRate, SweepBlock};
pub use shipped_zoo::shipped_zoo;
pub use summary::{live_check_line, render_brief, render_cells, render_summary};
pub use surface::{Interp, ServerShape, Surface, SurfaceError};
pub use validation::{CellCheck, ModelAccuracy, PairedRatio, Validation, ValidationCell};
pub use visits::Visit;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the on-disk schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;
/// Value of the header's `kind` field, so a stray JSON file is not mistaken for a matrix.
pub const MATRIX_KIND: &str = "profiler-matrix";

/// Whether a count is zero (serde leaves such fields out).
pub(crate) fn is_zero(n: &u32) -> bool {
    *n == 0
}

pub(crate) fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

/// A whole matrix: header plus cells, in the order they were written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    pub header: MatrixHeader,
    pub cells: Vec<Cell>,
}

/// First line of a matrix file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixHeader {
    /// Always [`MATRIX_KIND`].
    pub kind: String,
    pub schema_version: u32,
    pub job: JobInfo,
    /// Machine the cells were measured on (`None` for matrices imported from elsewhere).
    pub machine: Option<MachineInfo>,
    /// The grid the sweep planned; cells may be missing for an interrupted sweep.
    pub axes: Axes,
    /// Seconds since the Unix epoch when the sweep started.
    pub created_unix_s: u64,
    /// Where the numbers come from (for example a published artifact), free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<String>,
    /// The profiler that wrote the matrix, `profiler 0.1.0`; absent in older files and in
    /// matrices from published artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiler: Option<String>,
    /// Inputs of the cache model used for `modelled` cells, when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_model: Option<CacheModelInputs>,
    /// How well the cache models predicted cells that were also measured (`profiler validate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<Validation>,
    /// The live-mode check of the sweep, when it ran one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_check: Option<LiveCheck>,
    /// How far apart launches of the job land, measured where a point was launched more than
    /// once; every cell's interval holds it (see [`LaunchSpread`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_spread: Option<LaunchSpread>,
    /// The blocks the sweep measured in: each opens (and, where it can, closes) with the
    /// reference cell, and every cell's relative rate is taken against its block's
    /// ([`relative`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<SweepBlock>,
    /// The host probe's speed every cell's relative rate was read at (the cell model's `s*`):
    /// the same for every sweep of a machine kind (`cell_model::KindSpeeds`). Absent where no
    /// probe ran, and in files written before the cell model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at_probe_speed: Option<f64>,
}

/// The spread between launches of the same job at the same point, pooled over the points the
/// sweep launched more than once (and the live check's re-capped launch, where it agreed).
/// Every cell's interval is at least `q · relative_sd · rate · sqrt(1 + 1/k)` wide on each
/// side (k: the launches behind the cell; q: the 95% Student-t quantile for
/// `degrees_of_freedom`), so it says where one more launch lands, not only what one launch
/// measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchSpread {
    /// Standard deviation of one launch's rate relative to its point's mean.
    pub relative_sd: f64,
    /// Degrees of freedom behind it: launches minus points.
    pub degrees_of_freedom: u32,
    /// Launches it was measured on, over all its points.
    pub launches: u32,
}

impl LaunchSpread {
    /// One line for the screen and `show`.
    pub fn describe(&self) -> String {
        format!(
            "launches of the job land {:.1}% apart (one standard deviation, from {} launches, \
             {} degrees of freedom); every cell's interval holds {:.2} times that spread \
             (Student's 95% quantile: more launches narrow it)",
            100.0 * self.relative_sd,
            self.launches,
            self.degrees_of_freedom,
            self.quantile()
        )
    }

    /// The 95% Student-t quantile for the spread's degrees of freedom: how many of its
    /// standard deviations (times `sqrt(1 + 1/k)`) every cell's interval reaches on each side.
    pub fn quantile(&self) -> f64 {
        crate::stats::t_975(self.degrees_of_freedom as usize)
    }
}

/// What was profiled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobInfo {
    pub name: String,
    /// Model name as schedulers know it (e.g. `resnet18`); defaults to the job name.
    pub model: String,
    /// GPUs the job used while profiled. Matrices are per job, not per GPU.
    pub gpus: u32,
    /// Per-GPU batch size, when fixed by the spec (a swept `{batch}` parameter overrides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size_per_gpu: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_samples: Option<u64>,
}

/// The planned grid.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axes {
    /// CPU levels in cores (fractional allowed).
    pub cpu: Vec<f64>,
    /// Memory levels in bytes (cgroup memory limit, which also bounds the page cache).
    pub memory_bytes: Vec<u64>,
    /// Other swept job parameters, by name, with their values as templated into the command.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, Vec<String>>,
}

/// Which cache model fills the memory axis (see `cache_model`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum CacheKind {
    /// Synergy's assumption: a fixed part of the dataset stays cached, never evicted.
    #[default]
    Minio,
    /// The kernel's LRU-like page cache under a fresh random order every epoch.
    PageCache,
}

impl CacheKind {
    pub const ALL: [CacheKind; 2] = [CacheKind::Minio, CacheKind::PageCache];

    pub fn as_str(self) -> &'static str {
        match self {
            CacheKind::Minio => "minio",
            CacheKind::PageCache => "page-cache",
        }
    }
}

/// Inputs of the cache model (see `cache_model`), recorded so modelled cells can be audited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheModelInputs {
    /// The model the modelled cells come from (`minio` in files written before there was a
    /// choice).
    #[serde(default)]
    pub kind: CacheKind,
    /// What the dataset takes in the page cache: its files rounded up to whole pages (the
    /// file sizes in files written before that distinction).
    pub dataset_bytes: u64,
    /// Storage read bandwidth, bytes/s.
    pub storage_bytes_per_s: f64,
    /// Memory read bandwidth per core, bytes/s.
    pub memory_bytes_per_s_per_core: f64,
    /// What storage delivers per cache miss where that is more than a sample: the job maps the
    /// dataset's files into memory with no advice (neither `MADV_RANDOM` nor
    /// `MADV_SEQUENTIAL`), so each page fault on an uncached page reads the device's read-ahead
    /// window around it (`read_ahead_kb`), clipped to its file: the window or the dataset's
    /// mean file size, whichever is smaller. Absent: a miss reads the sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_unit_bytes: Option<u64>,
    /// Bytes of the dataset the job keeps mapped at once with `MADV_SEQUENTIAL` (`sr` among a
    /// mapping's `VmFlags`), across its processes: the kernel reads such maps ahead of their
    /// use, so a page cache with less room than this evicts some of what was read ahead before
    /// the job reaches it, and the job reads it again. Absent: no such maps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential_map_bytes: Option<u64>,
    /// The page cache's hit ratio against the part of the dataset it holds, `[x, h]` points
    /// with `x` from 0 to 1, from the order in which the job opened its dataset's files on its
    /// first launch (an LRU cache replayed over that order). Absent: the job is taken to read
    /// the dataset in a fresh random order every epoch (or no trace could be made: one file, no
    /// fanotify, or too little of the dataset read twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_hit_curve: Option<Vec<[f64; 2]>>,
    /// What the job read from storage per second in its first pass over the dataset, where
    /// that pass ran slower than the job does with the dataset cached (its reads held it
    /// back) and below `storage_bytes_per_s`: how the job reads (many streams at once, small
    /// reads) can get less from storage than one sequential stream does. Misses are served at
    /// the lower of the two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_storage_bytes_per_s: Option<f64>,
    /// The lowest memory level measured at one CPU level, beside the top one there: where it ran
    /// slower than storage bandwidth explains, the job waits on its reads, and each read costs
    /// it the time it cost there ([`crate::cache_model::CacheModel::wait_per_read_s`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss_calibration: Option<MissCalibration>,
    /// What storage read per sample when the sweep replayed the job's reads under the page
    /// cache of each memory level below the top one. Where present, the model takes its
    /// reads per sample from it instead of from the hit ratio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_reads: Option<ReplayedReads>,
}

impl CacheModelInputs {
    /// The inputs a sweep has before the job's own reads refine them: the model, the dataset's
    /// size and the two bandwidths, every refinement absent.
    pub fn new(
        kind: CacheKind,
        dataset_bytes: u64,
        storage_bytes_per_s: f64,
        memory_bytes_per_s_per_core: f64,
    ) -> CacheModelInputs {
        CacheModelInputs {
            kind,
            dataset_bytes,
            storage_bytes_per_s,
            memory_bytes_per_s_per_core,
            read_unit_bytes: None,
            sequential_map_bytes: None,
            access_hit_curve: None,
            job_storage_bytes_per_s: None,
            miss_calibration: None,
            replayed_reads: None,
        }
    }
}

/// How a job reads its dataset, as the sweep saw it: by system calls, or through memory maps
/// with the advice it gave them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadAccess {
    /// `read`/`pread` calls: the kernel reads ahead of them where it sees a stream.
    Pread,
    /// A map with no advice: a fault reads the device's read-ahead window around it.
    Map,
    /// A map advised `MADV_RANDOM`: a fault reads its page.
    MapRandom,
    /// A map advised `MADV_SEQUENTIAL`: the kernel reads ahead of the faults.
    MapSequential,
}

/// The job's reads replayed under each memory level's page cache: a memory cgroup holding as
/// much of the dataset as the level leaves the job, the dataset's storage cap, as many readers
/// as the job had reading it, each epoch's samples in a fresh random order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayedReads {
    pub access: ReadAccess,
    pub readers: u32,
    /// `[x, reads]`: `x` the part of the dataset the cache held, `reads` the bytes storage
    /// read over the bytes of the samples taken, in an epoch after one that filled the cache.
    pub points: Vec<[f64; 2]>,
}

/// A cell measured below the top memory level to learn what a miss costs the job.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MissCalibration {
    /// CPU level of the cell.
    pub cpu: f64,
    /// Its memory limit, bytes.
    pub memory_bytes: u64,
    /// Memory the job held besides the dataset at the top level of that CPU level, bytes: what
    /// the model takes off the limit.
    pub resident_bytes: u64,
    /// Samples/s measured in the cell.
    pub samples_per_s: f64,
    /// Samples/s measured at the top memory level of the same CPU level.
    pub cached_samples_per_s: f64,
    /// Bytes/s the cell read from storage: near the storage bandwidth, the cell was bound by
    /// bandwidth (reading more than the model counts), not waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_read_bytes_per_s: Option<f64>,
    /// CPU seconds the job spent on each sample in the cell (CPU used over samples/s): more
    /// than at the top level by what reading from storage under the cap costs in CPU time
    /// (faults or reads, their completion, reclaim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s_per_sample: Option<f64>,
    /// The same at the top memory level of the same CPU level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_cpu_s_per_sample: Option<f64>,
    /// The kernel's part of `cpu_s_per_sample` (system time): what reads cost a job whose
    /// threads spin in user space while they wait, which `cpu_s_per_sample` also counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_s_per_sample: Option<f64>,
    /// The same at the top memory level of the same CPU level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_system_s_per_sample: Option<f64>,
}

impl MissCalibration {
    /// The calibration from its cell `low` and the top cell `top` of the same CPU level, both
    /// measured with a rate; `None` otherwise.
    pub fn from_cells(top: &Cell, low: &Cell) -> Option<Self> {
        let measured = |c: &Cell| {
            (c.source == CellSource::Measured)
                .then(|| c.samples_per_s())
                .flatten()
        };
        let per_sample = |c: &Cell, cores: fn(&Telemetry) -> Option<f64>| {
            let (t, rate) = (c.telemetry.as_ref()?, measured(c)?);
            let s = cores(t)? / rate;
            (s.is_finite() && s > 0.0).then_some(s)
        };
        let cpu_s_per_sample = |c: &Cell| per_sample(c, |t| Some(t.cpu_cores_used));
        let system_s_per_sample = |c: &Cell| per_sample(c, |t| t.cpu_system_cores);
        Some(MissCalibration {
            cpu: low.cpu,
            memory_bytes: low.memory_bytes,
            resident_bytes: (top.telemetry.as_ref()).map_or(0, |t| t.resident_besides_dataset()),
            samples_per_s: measured(low)?,
            cached_samples_per_s: measured(top)?,
            storage_read_bytes_per_s: low.telemetry.as_ref().map(|t| t.storage_read_bytes_per_s),
            cpu_s_per_sample: cpu_s_per_sample(low),
            cached_cpu_s_per_sample: cpu_s_per_sample(top),
            system_s_per_sample: system_s_per_sample(low),
            cached_system_s_per_sample: system_s_per_sample(top),
        })
    }
}

/// How a cell's throughput was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellSource {
    /// Run under these caps and measured.
    Measured,
    /// Filled by the cache model from measured cells.
    Modelled,
    /// The job failed (exited, crashed, never reported progress). See `note`.
    Failed,
    /// The allocation cannot run the job (killed by the OOM killer under the memory cap).
    Infeasible,
    /// Not run: read from the job's measured cells and the jobs already profiled
    /// (`profiler predict`), with the predictor's interval.
    Predicted,
}

impl CellSource {
    pub fn as_str(self) -> &'static str {
        match self {
            CellSource::Measured => "measured",
            CellSource::Modelled => "modelled",
            CellSource::Failed => "failed",
            CellSource::Infeasible => "infeasible",
            CellSource::Predicted => "predicted",
        }
    }
}

/// One point of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    pub cpu: f64,
    pub memory_bytes: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
    pub source: CellSource,
    /// Samples per second; `None` for failed and infeasible cells.
    pub throughput: Option<Throughput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_time_s: Option<Percentiles>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuTelemetry>,
    /// Why a cell failed, what the model assumed, warnings; free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Wall-clock seconds spent on this cell (0 for modelled cells).
    pub wall_s: f64,
    /// Host the cell was measured on, when it was measured elsewhere than the sweep ran
    /// (a Slurm node of `profiler sweep --slurm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// What else used the job's CPUs while the cell was measured (measured cells on a machine
    /// whose counters the profiler can read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<Interference>,
    /// Unix seconds of the first and last progress report the throughput was computed from,
    /// so the rate can be checked against the job's own records of the same interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_unix_s: Option<[f64; 2]>,
    /// Unix-second spans inside `measured_unix_s` that the rate leaves out: the windows
    /// discarded as disturbed between the ones it uses. The rate is the job's progress over
    /// `measured_unix_s` less these spans. Empty (and absent) when none was left out, as a
    /// rate over whole epochs never leaves any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out_unix_s: Vec<[f64; 2]>,
    /// The rate relative to the reference (top) cell of the blocks that measured it, with the
    /// interval another sweep's relative rate lands in; modelled cells get the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative: Option<RelativeRate>,
    /// Every measurement of the cell where a launch measured it more than once (a live launch
    /// walking its points in rounds), in the order they were made: each launch's rate above is
    /// its visits' together, and each visit is read against its own block's reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub visits: Vec<Visit>,
}

impl Cell {
    /// A cell at a grid point with no measurement in it (one that failed, was ruled out or
    /// is still to be filled in): the shape every other is built from, with `..`.
    pub fn at(
        cpu: f64,
        memory_bytes: u64,
        params: BTreeMap<String, String>,
        source: CellSource,
    ) -> Cell {
        Cell {
            cpu,
            memory_bytes,
            params,
            source,
            throughput: None,
            iteration_time_s: None,
            telemetry: None,
            gpu: None,
            note: None,
            wall_s: 0.0,
            node: None,
            interference: None,
            relative: None,
            visits: Vec::new(),
            measured_unix_s: None,
            left_out_unix_s: Vec::new(),
        }
    }

    /// Key identifying the grid point, independent of the result.
    pub fn key(&self) -> CellKey {
        CellKey::new(self.cpu, self.memory_bytes, &self.params)
    }

    pub fn samples_per_s(&self) -> Option<f64> {
        self.throughput.as_ref().map(|t| t.samples_per_s)
    }

    /// Each launch the cell's rate comes from, in launch order: its throughput's launches, or
    /// the cell's own measurement where it is one launch; none without a rate.
    pub fn launches(&self) -> Vec<LaunchRate> {
        let Some(t) = &self.throughput else {
            return Vec::new();
        };
        if !t.launches.is_empty() {
            return t.launches.clone();
        }
        vec![LaunchRate {
            samples_per_s: t.samples_per_s,
            ci95_low: t.ci95_low,
            ci95_high: t.ci95_high,
            measured_unix_s: self.measured_unix_s,
            left_out_unix_s: self.left_out_unix_s.clone(),
        }]
    }
}

/// Grid-point identity; CPU is compared in milli-cores so 0.5 and 0.50 are the same point.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellKey {
    pub cpu_milli: u64,
    pub memory_bytes: u64,
    pub params: BTreeMap<String, String>,
}

impl CellKey {
    pub fn new(cpu: f64, memory_bytes: u64, params: &BTreeMap<String, String>) -> Self {
        CellKey {
            cpu_milli: (cpu * 1000.0).round() as u64,
            memory_bytes,
            params: params.clone(),
        }
    }
}

/// Steady-state throughput with its 95% confidence interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Throughput {
    pub samples_per_s: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    /// Number of rate windows the interval was computed from.
    pub windows: u32,
    /// Seconds of steady state measured.
    pub measured_s: f64,
    /// The launches the cell was measured on, where there was more than one: the rate above is
    /// their mean and the interval says where another launch lands (within- and
    /// between-launch variation combined).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launches: Vec<LaunchRate>,
}

/// One launch's measurement of a cell measured on several launches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchRate {
    pub samples_per_s: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    /// Unix seconds [start, end] of the windows this launch's rate covers, as the cell's
    /// `measured_unix_s` is for its first launch; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_unix_s: Option<[f64; 2]>,
    /// Spans inside `measured_unix_s` this launch's rate leaves out, as the cell's
    /// `left_out_unix_s` is for its first launch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out_unix_s: Vec<[f64; 2]>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Percentiles {
    pub p50: f64,
    pub p95: f64,
}

/// Host-side counters over the measurement window, for the job's whole process tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Telemetry {
    /// CPU seconds (user + system) per wall second: 1.0 = one core busy.
    pub cpu_cores_used: f64,
    /// The part of `cpu_cores_used` the kernel spent on the job's behalf (system time: page
    /// faults, read calls, their completion, reclaim under a memory cap), in cores; absent
    /// where the job's cgroup does not tell it apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_system_cores: Option<f64>,
    /// Seconds the CFS throttled the cgroup per wall second.
    pub throttled_s_per_s: f64,
    /// Peak resident memory of the process tree, bytes: the sum of its processes' PSS, so pages
    /// they share (forked DataLoader workers) count once. Sampled as often as its reading stays
    /// under 1% of a core (every few seconds for a PyTorch DataLoader's processes).
    pub rss_peak_bytes: u64,
    /// Page cache charged to the cgroup at the end of the window, bytes.
    pub page_cache_bytes: u64,
    /// Bytes read from storage (block layer) per second.
    pub storage_read_bytes_per_s: f64,
    /// Peak anonymous memory charged to the cgroup, bytes: what a memory limit must hold and
    /// cannot reclaim. Unlike PSS it leaves out mapped files (libtorch and other shared
    /// libraries), which the kernel charges as page cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anon_peak_bytes: Option<u64>,
    /// Bytes of the dataset in the page cache at the end of the window (`cachestat` or
    /// `mincore` per file); the rest of `page_cache_bytes` is the job's other files (its
    /// libraries, code, logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_cached_bytes: Option<u64>,
    /// 95% half-width of `dataset_cached_bytes` where it was estimated from a sample of the
    /// dataset's files (datasets of more than 100,000 files); absent where every file was
    /// asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_cached_half_width_bytes: Option<u64>,
    /// Mapped file pages outside the dataset that the job's processes touched during the window
    /// (shared libraries, memory-mapped files), each once: the part of its other files a memory
    /// limit must keep cached. The rest of them (library code run once at import) the kernel
    /// evicts before the dataset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped_hot_bytes: Option<u64>,
    /// Peak shared memory charged to the cgroup (tmpfs, `/dev/shm`, memfd), bytes: how a
    /// PyTorch DataLoader's workers hand batches over. The kernel files it under page cache
    /// (`page_cache_bytes` includes it), yet without swap it cannot be reclaimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shmem_peak_bytes: Option<u64>,
    /// Anonymous plus shared memory charged to the cgroup, bytes, averaged over the cell's
    /// measurement. A job that starts its loader's workers afresh every epoch holds far more at
    /// each epoch's start than through it; the cache model still takes the peak, since what the
    /// cache loses at the peak is read again through the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_mean_bytes: Option<u64>,
    /// CPU time of the profiler's fixed reference loop while the cell was measured (the median
    /// of its runs, about one a second), ns. Where it differs between cells, the machine's CPUs
    /// ran at different speeds: a virtual machine's slow down when other guests load the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_loop_ns: Option<f64>,
}

impl Telemetry {
    /// Memory the job holds besides the dataset's cache: anonymous and shared memory plus its
    /// hot mapped files, where the cell recorded them (shared memory only in newer files);
    /// otherwise the PSS peak (older matrices).
    pub fn resident_besides_dataset(&self) -> u64 {
        match (self.anon_peak_bytes, self.mapped_hot_bytes) {
            (Some(anon), Some(hot)) => anon + self.shmem_peak_bytes.unwrap_or(0) + hot,
            _ => self.rss_peak_bytes,
        }
    }
}

/// What else used the job's CPUs while a cell was measured. A measurement window is disturbed
/// when the job ran below its CPU cap while its CPUs had no idle time left for it (other
/// processes took it); such windows are discarded and measured again, a bounded number of times.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interference {
    /// CPU time other processes used on the job's CPUs, in cores (mean over the kept windows).
    pub other_cores: f64,
    /// Idle time on the job's CPUs, in cores (mean over the kept windows).
    pub idle_cores: f64,
    /// Percentage of time some runnable task waited for a CPU (the kernel's CPU pressure,
    /// `some`), where the kernel reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pressure_pct: Option<f64>,
    /// Time a hypervisor gave the job's CPUs to other guests (part of `other_cores`), cores;
    /// absent when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_cores: Option<f64>,
    /// Time the job's own tasks waited on a run queue, in cores (summed over its tasks), from
    /// the kernel's per-task scheduler statistics; absent where they could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_wait_cores: Option<f64>,
    /// The job cgroup's own CPU pressure, `some`, percent (cgroup v2 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_cpu_pressure_pct: Option<f64>,
    /// CPU time other processes used on the rest of the profiler's CPUs (those the job is not
    /// pinned to), in cores; absent when the job had them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elsewhere_cores: Option<f64>,
    /// Disturbed windows discarded and measured again.
    pub discarded_windows: u32,
    /// The cell is still disturbed: its kept windows include disturbed ones because the
    /// re-measurements ran out. Its rate is kept but is not the job's own.
    pub disturbed: bool,
    /// What disturbed a disturbed cell, in words (`other processes on the job's CPUs`, `the
    /// job's tasks waiting for a CPU`, `other processes busy on the machine's other CPUs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed_by: Option<String>,
}

/// The check of a live sweep that re-capping a running job measures what a fresh start would:
/// one point's ratio to the reference on a launch started at the reference and re-capped down,
/// and on a launch started fresh at the point and re-capped up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveCheck {
    /// CPU level of the point measured both ways.
    pub cpu: f64,
    /// Samples/s of the running job re-capped to that level (the launches started at the
    /// reference).
    pub live_samples_per_s: f64,
    /// Samples/s of the fresh start at that level (in files of older sweeps, the mean of the
    /// fresh launches where the check took more than one).
    pub relaunch_samples_per_s: f64,
    /// Largest difference the two ratios may show and still agree: a fixed slack plus the
    /// spread their blocks give them, never more than 15%.
    pub tolerance: f64,
    pub outcome: LiveCheckOutcome,
    /// Each fresh launch's rate, in files of older sweeps whose check took more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fresh_samples_per_s: Vec<f64>,
    /// Standard deviation of one block's log-ratio the check allowed for (in files of older
    /// sweeps, of the fresh launches' rates relative to their mean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_launch_spread: Option<f64>,
    /// Why the check decided as it did.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The factor that reads the fresh start at the live launches' speed: the fresh launch's
    /// ratio over theirs, times their rate, over the fresh start's rate; so that a host that
    /// slowed one launch against the other does not decide the check. The rates above are the
    /// launches' own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_ratio: Option<f64>,
}

/// What a live check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveCheckOutcome {
    /// They agree: the sweep went on re-capping.
    Live,
    /// They differ: the points were measured again, the job relaunched at every one.
    Relaunch,
    /// Other processes disturbed every block of the check's fresh launches: the sweep went on
    /// re-capping, unchecked.
    Unproven,
    /// The blocks were too few to tell the two apart: the check is made again (a sweep never
    /// ends with this verdict).
    Undecided,
}

impl std::fmt::Display for LiveCheckOutcome {
    /// The word the matrix file holds.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LiveCheckOutcome::Live => "live",
            LiveCheckOutcome::Relaunch => "relaunch",
            LiveCheckOutcome::Unproven => "unproven",
            LiveCheckOutcome::Undecided => "undecided",
        })
    }
}

impl LiveCheck {
    /// The fresh rate the re-capped one was compared with: scaled to the live launch's
    /// reference where the check compared ratios.
    pub fn compared_samples_per_s(&self) -> f64 {
        self.relaunch_samples_per_s * self.reference_ratio.unwrap_or(1.0)
    }

    /// What the re-capped rate was compared with: `fresh start`, or `3 fresh starts`.
    pub fn fresh_label(&self) -> String {
        let starts = match self.fresh_samples_per_s.len() {
            0 | 1 => "fresh start".to_string(),
            k => format!("{k} fresh starts"),
        };
        match self.reference_ratio {
            Some(r) => format!("{starts} scaled by {r:.3} to the live launch's reference"),
            None => starts,
        }
    }

    /// The reason, in parentheses after a space; empty where none was recorded.
    pub fn reason_suffix(&self) -> String {
        if self.reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.reason)
        }
    }
}

/// GPU-side averages over the measurement window, over the job's GPUs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuTelemetry {
    pub utilization_pct: f64,
    pub sm_clock_mhz: f64,
    pub memory_used_bytes: u64,
    pub power_w: f64,
    /// GPM SM activity (Hopper and later), percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_activity_pct: Option<f64>,
}

/// Small matrices for the module's unit tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    pub fn header(name: &str) -> MatrixHeader {
        MatrixHeader {
            kind: MATRIX_KIND.into(),
            schema_version: SCHEMA_VERSION,
            job: JobInfo {
                name: name.into(),
                model: name.into(),
                gpus: 0,
                batch_size_per_gpu: None,
                dataset_bytes: None,
                dataset_samples: None,
            },
            machine: None,
            axes: Axes {
                cpu: vec![1.0],
                memory_bytes: vec![1 << 30],
                params: Default::default(),
            },
            created_unix_s: 0,
            provenance: None,
            profiler: None,
            cache_model: None,
            validation: None,
            live_check: None,
            launch_spread: None,
            blocks: Vec::new(),
            read_at_probe_speed: None,
        }
    }

    /// A measured cell at `cpu` and `memory_bytes` whose rate is `rate` exactly, with the
    /// relative rate `[rate, low, high]` where one is given.
    pub fn measured(cpu: f64, memory_bytes: u64, rate: f64, relative: Option<[f64; 3]>) -> Cell {
        Cell {
            memory_bytes,
            source: CellSource::Measured,
            note: None,
            throughput: Some(Throughput {
                samples_per_s: rate,
                ci95_low: rate,
                ci95_high: rate,
                windows: 1,
                measured_s: 1.0,
                launches: Vec::new(),
            }),
            relative: relative
                .map(|[rate, low, high]| RelativeRate::unadjusted(rate, [low, high], 3, 0)),
            ..cell(cpu)
        }
    }

    /// A visit on `launch` at `rate`, its own interval ±`half_width` of it, measured over
    /// [start, start + 10].
    pub fn visit(launch: u32, rate: f64, start: f64, half_width: f64) -> Visit {
        Visit {
            launch,
            samples_per_s: rate,
            ci95_low: rate * (1.0 - half_width),
            ci95_high: rate * (1.0 + half_width),
            measured_s: 10.0,
            windows: 0,
            measured_unix_s: [start, start + 10.0],
            left_out_unix_s: Vec::new(),
            disturbed: false,
            host: None,
        }
    }

    pub fn cell(cpu: f64) -> Cell {
        Cell {
            note: Some("x".into()),
            wall_s: 1.0,
            ..Cell::at(cpu, 1 << 30, Default::default(), CellSource::Failed)
        }
    }
}
