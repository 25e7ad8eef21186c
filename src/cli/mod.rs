//! Command-line definition. Each subcommand's arguments turn into the options struct of the
//! library module that does the work.

use crate::harness::sweep::SweepOptions;
use crate::matrix::cell_model::KindSpeeds;
use crate::matrix::{CostWeights, DEFAULT_EPS, ServerShape};
use crate::spec::{LoadedSpec, MemoryAxis, SweepMode};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};

pub mod colocate;
pub mod deploy;
pub mod export;
pub mod grid;
pub mod predict;
pub mod replay;

#[derive(Debug, Parser)]
#[command(
    name = "profiler",
    version,
    about = "Profile deep-learning training jobs under CPU and memory caps into throughput matrices",
    long_about = "Profile deep-learning training jobs under real cgroup CPU and memory caps into \
CPU x memory throughput matrices (Synergy-style optimistic profiling), inspect them, and replay \
cluster schedules with them offline.\n\n\
Start with:\n  profiler sweep --job workloads/input-pipeline.toml\n  \
profiler show matrices/input-pipeline.matrix.jsonl --demand\n  \
profiler plot matrices/input-pipeline.matrix.jsonl\n  \
profiler report matrices/input-pipeline.matrix.jsonl    (one HTML page: charts, cells, provenance)\n  \
profiler export matrices/input-pipeline.matrix.jsonl --format csv -o input-pipeline.csv\n  \
profiler validate --job workloads/input-pipeline.toml\n  \
profiler replay --compare fifo+proportional,fifo+tune,fifo+opt\n  \
profiler deploy --trace workloads/deploy/trace.csv --compare fifo+proportional,fifo+tune\n  \
profiler doctor    (on a GPU server: is everything there a GPU sweep needs?)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a job under each CPU (and memory) cap of its spec and write its throughput matrix.
    #[command(
        long_about = "Run a job under each CPU (and memory) cap of its spec and write its \
throughput matrix.\n\n\
The job is started under a cgroup of its own (below /profiler), warmed up, and measured until \
its throughput is steady. By default (memory = \"model\") only the CPU axis is measured, at the \
largest memory level, plus one calibration cell (the lowest memory level at the highest CPU \
level, with three memory levels or more: what a read costs a job that waits on its reads), \
and the memory axis is filled by the spec's cache model (dataset.cache: the kernel's page \
cache, or Synergy's MinIO cache); every cell says whether it was measured or \
modelled (`profiler validate` checks the model against measurement). In live mode (the default where valid) a running job is \
re-capped from one level to the next instead of being restarted.\n\n\
Cells are appended to the matrix file as they finish: after Ctrl-C or a crash, run the same \
command with --resume to finish the rest.\n\n\
Needs root and the cpu, cpuset and memory cgroup controllers (v1 or v2). Use --no-caps to run \
the spec once, uncapped, as any user, to check that it starts and reports progress.\n\n\
With --slurm the whole-core CPU levels run as Slurm jobs (one per level, `sbatch -c C --mem=M`) \
under the caps of Slurm's own cgroups, the profiler on each node checking them and creating none; \
cells record the node they ran on. --job may then be a quoted pattern (`'workloads/*.toml'`) to \
profile many jobs at once. See docs/SLURM.md.\n\n\
Examples:\n  profiler sweep --job workloads/input-pipeline.toml\n  \
profiler sweep --job workloads/resnet18.toml --mode relaunch --memory measure\n  \
profiler sweep --job workloads/resnet18.toml --resume\n  \
profiler sweep --job workloads/my-job.toml --no-caps\n  \
profiler sweep --job workloads/input-pipeline.toml --slurm --slurm-skip-fractional --partition cpu\n  \
profiler sweep --job 'workloads/*.toml' --slurm --slurm-arg=--account=prof"
    )]
    Sweep(SweepArgs),
    /// Print a matrix file as CPU x memory tables (and its best-case demand with --demand).
    Show(ShowArgs),
    /// Judge the cell model on recorded sweeps: whether each sweep's intervals hold the other
    /// sweeps' rates of the same cells, how wide they are, and where a precision would stop.
    #[command(
        long_about = "Judge the cell model on a corpus of recorded sweeps of the same jobs.\n\n\
Each sweep is fitted on its own, every sweep of a machine kind read at one probe speed (the upper \
quartile of the kind's probe readings). Each sweep's 95% intervals are held against every other \
sweep's estimates of the same cells: the share inside should be about 95%. Beside it, the \
intervals the sweeps recorded, held the same way. Last, each sweep is refitted at the end of \
each of its visits, to find where --precision would have stopped it.\n\n\
A folder stands for the *.matrix.jsonl files in it and in its subfolders (a corpus keeps one \
per machine kind). Jobs with one sweep are skipped.\n\n\
Examples:\n  profiler corpus tests/data/sweeps\n  \
profiler corpus matrices/history --precision 0.03"
    )]
    Corpus(CorpusArgs),
    /// Predict a job's whole matrix from a few measured cells and the jobs already profiled,
    /// each predicted cell with its interval.
    #[command(long_about = predict::LONG_ABOUT)]
    Predict(predict::PredictArgs),
    /// Measure every cell of a job's matrix and report how well each cache model predicts the
    /// memory axis from the CPU axis.
    #[command(
        long_about = "Measure every cell of a job's matrix and report how well each cache model \
predicts the memory axis from the CPU axis.\n\n\
Optimistic profiling (`sweep`, memory = \"model\") measures only the top memory level of each \
CPU level, and one calibration cell, and models the rest. `validate` measures every cell instead (a sweep with \
--memory measure, written to matrices/validation/<job>.matrix.jsonl by default), predicts the \
same cells from the top level with each cache model (minio: Synergy's never-evicting cache; \
page-cache: the kernel's LRU page cache over the order the job read its files in, traced on \
its first launch, else a fresh shuffle every epoch), and prints the \
per-cell and median error, leaving out the calibration cell where the model was fitted to it. The result is recorded in the header of the validation matrix and \
of the job's sweep matrix (matrices/<job>.matrix.jsonl, when it exists), so `show`, `export` \
and `plot` report it.\n\n\
The spec needs a [dataset] and at least two memory levels; a storage cap \
(sweep.storage_read_mb_s) makes the memory axis matter on machines with fast disks.\n\n\
Examples:\n  profiler validate --job workloads/input-pipeline.toml\n  \
profiler validate --job workloads/input-pipeline.toml --resume"
    )]
    Validate(ValidateArgs),
    /// Draw a matrix's sensitivity curves (throughput vs CPUs, vs memory, heat map) as PNG and
    /// SVG, and one chart of every model's CPU curve when given several.
    #[command(
        long_about = "Draw a matrix's sensitivity curves, as the Synergy paper shows them, into \
PNG and SVG files.\n\n\
For each matrix (and each combination of its swept parameters): throughput against CPUs, one \
line per memory level (<name>.cpu); against memory, one line per CPU level (<name>.memory); and \
a CPU x memory heat map with each cell's value (<name>.heatmap). Measured cells are filled \
symbols on solid lines, modelled cells hollow symbols on dashed lines (~ in the heat map), \
failed and infeasible cells a red x (hatched grey). The best-case demand (as `show --demand` \
chooses it) is a star, the server's proportional share a dashed line. Given several matrices, \
overview.png has one line per model: throughput against CPUs per GPU at the share's memory. \
The files written are listed at the end.\n\n\
By default values are the matrix's own: samples/s, cores, GiB. --normalize proportional gives \
Synergy's view: throughput divided by the throughput at the proportional share of --server, \
levels per GPU (CPU-only matrices count as one accelerator); those files end in .normalized. \
When the matrix records a cache-model validation (`profiler validate`), the charts say how \
accurate it was.\n\n\
Examples:\n  profiler plot matrices/zoo/*.matrix.jsonl --normalize proportional\n  \
profiler plot matrices/examples/*.matrix.jsonl -o plots/examples\n  \
profiler plot matrices/zoo/resnet18.matrix.jsonl --normalize proportional --server 32:8:1000"
    )]
    Plot(PlotArgs),
    /// Write matrices as self-contained HTML pages (charts with every measured cell's interval,
    /// the demand, each cell's story, provenance) and an index of several.
    #[command(
        long_about = "Write one self-contained HTML page per matrix, and an index.html when \
given several, into -o DIR (default report/).\n\n\
A page shows the best-case demand and the allocations its intervals cannot tell apart from it, \
the speed-up over the proportional share of --server, the heat map and the curves (the charts \
`profiler plot` draws, each measured cell with its 95% interval), every cell on a sortable row \
(rate and interval, relative rate, blocks, visits, CPU used, throttling, memory, page cache, \
storage reads, GPU), the story of each cell that has one (why it failed or was modelled, its \
visits, blocks left out, the cache model's prediction and why it missed), how the sweep went \
(live check, spread between launches, blocks, host speed) and where and when it was measured.\n\n\
The index lists every job's demand, speed-up and widest interval, sortable, each linking to its \
page, with the overview chart (up to 40 jobs). Pages need no network: scripts and styles are \
inline and their Content-Security-Policy forbids every request, so they open from file:// on an \
air-gapped server. A folder stands for the *.matrix.jsonl files in it, or, where it is a \
deploy's or a replay's --out, for that run: a deploy's page has the deploy against its replay \
scheme by scheme (makespan, mean and p99 JCT, the gaps, the gain over the proportional share), \
both JCT distributions and each job's timeline (running, queued or suspended, re-capped); a \
replay's has its schemes' summary and JCT distributions.\n\n\
Examples:\n  profiler report matrices/input-pipeline.matrix.jsonl\n  \
profiler report matrices/zoo -o report/zoo\n  \
profiler report results/deploy\n  \
profiler report results/fleet/*.matrix.jsonl --server 32:8:1000"
    )]
    Report(ReportArgs),
    /// Replay a cluster schedule (trace or synthetic arrivals) with Synergy's policies and
    /// mechanisms, and report JCT, makespan and utilisation.
    // Boxed: the replay options are far larger than the other commands' (clippy
    // `large_enum_variant`).
    Replay(Box<replay::ReplayArgs>),
    /// Write matrices in formats other tools read: tables (CSV, Parquet, JSON), Synergy, Blox
    /// and Gavel simulator inputs, Slurm and Kubernetes resource requests.
    #[command(long_about = export::LONG_ABOUT)]
    Export(export::ExportArgs),
    /// Run a replay's schedule on real jobs of this machine (each in a cgroup with the CPUs
    /// and memory the mechanism gave it) and compare makespan and JCTs with the replay.
    Deploy(deploy::DeployArgs),
    /// Measure job kinds alone and beside each other at one grant each: what a deploy's rates
    /// lose to co-location.
    Colocate(colocate::ColocateArgs),
    /// Check that this machine can profile GPU jobs: driver, NVML, GPM, cgroups, PyTorch, and a
    /// short GPU sweep, each with a verdict and what to do when it fails.
    #[command(
        long_about = "Check that this machine can profile GPU jobs, and say what to do where it cannot.\n\nRun it as root on a GPU server, from the directory that holds the copied release binary's workloads/ (it needs no network and no Rust toolchain). In order:\n  - NVIDIA driver and NVML: loads libnvidia-ml at run time; driver, NVML and CUDA versions, every GPU (name, memory, compute capability, MIG)\n  - GPM: samples per-SM activity on GPU 0 (Hopper and later)\n  - cgroups: version (v1 or v2), the controllers a sweep needs, the profiler's own parent cgroup\n  - cgroup caps: a CPU-bound process under a 0.5-CPU cap must get 0.5 CPU\n  - PyTorch: the spec's Python imports torch, sees the GPUs, has torchvision and Pillow\n  - GPU sweep: the spec (workloads/resnet18.toml) at its lowest CPU level and the most this machine has, full memory, short measurements (a few minutes; its synthetic dataset is generated once and reused by real sweeps); every cell must have a rate and NVML telemetry, and GPM SM activity where the GPU has GPM\n\nEach check prints PASS, WARN, SKIP or FAIL with what it saw. On a machine without a GPU the GPU checks say so and the rest still run. Exits 1 when a check failed.\n\nExamples:\n  sudo ./profiler doctor\n  sudo ./profiler doctor --no-sweep\n  sudo ./profiler doctor --job workloads/resnet50.toml"
    )]
    Doctor(DoctorArgs),
}

#[derive(Debug, Clone, clap::Args)]
pub struct DoctorArgs {
    /// The GPU job swept briefly.
    #[arg(
        long,
        short = 'j',
        value_name = "SPEC.toml",
        default_value = "workloads/resnet18.toml"
    )]
    pub job: PathBuf,
    /// Skip the short GPU sweep (the other checks take seconds).
    #[arg(long)]
    pub no_sweep: bool,
    /// Directory for the short sweep's matrix and logs.
    #[arg(long, value_name = "DIR", default_value = "matrices/doctor")]
    pub output_dir: PathBuf,
    #[command(flatten)]
    pub cgroup_parent: CgroupParentArg,
}

impl DoctorArgs {
    pub fn to_options(&self) -> crate::doctor::DoctorOptions {
        crate::doctor::DoctorOptions {
            job: self.job.clone(),
            sweep: !self.no_sweep,
            output_dir: self.output_dir.clone(),
            cgroup_parent: self.cgroup_parent.name.clone(),
        }
    }
}

/// `--cgroup-parent`, which every command that runs jobs takes.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct CgroupParentArg {
    /// Parent cgroup the jobs' cgroups are created under: `profiler` or `profiler-<name>`
    /// (the profiler never creates or removes cgroups outside its own parent).
    #[arg(
        long = "cgroup-parent",
        default_value = "profiler",
        value_name = "NAME"
    )]
    pub name: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// Re-cap one running job from level to level (memory only downwards).
    Live,
    /// Start the job afresh for every cell.
    Relaunch,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum MemoryArg {
    /// Measure the CPU axis, fill the memory axis with the cache model.
    Model,
    /// Measure every memory level.
    Measure,
}

#[derive(Debug, Clone, clap::Args)]
pub struct SweepArgs {
    /// Job spec (TOML); see docs/JOB_SPEC.md and workloads/*.toml.
    #[arg(long, short = 'j', value_name = "SPEC.toml")]
    pub job: PathBuf,
    /// Matrix file to write [default: matrices/<job name>.matrix.jsonl].
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Keep the cells already in the output file and measure only the missing ones.
    #[arg(long)]
    pub resume: bool,
    /// Run the spec once without cgroup caps (no root needed) to check it; writes no matrix.
    #[arg(long)]
    pub no_caps: bool,
    /// Override the spec's sweep.mode.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Override the spec's sweep.memory.
    #[arg(long, value_enum)]
    pub memory: Option<MemoryArg>,
    /// Passes over the points (overrides measure.launches, default 2): each pass is a block
    /// that measures every point again, the reference cell first, so that every cell's
    /// interval says where a rerun lands and its relative rate rests on several blocks; 1
    /// measures each point once, faster, with intervals that say nothing about a rerun.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10))]
    pub launches: Option<u32>,
    /// Seconds the launches after the first may take per parameter combination (overrides
    /// measure.launches_budget_s): a pass of launches starts only while the passes before it
    /// took less, so a sweep's time stays bounded where launches disagree.
    #[arg(long, value_name = "SECONDS", value_parser = non_negative_seconds)]
    pub launches_budget: Option<f64>,
    /// The relative half-width every cell is measured to (overrides measure.precision, default
    /// 0.05 for ±5%): after the passes asked for, the sweep measures the reference and the
    /// cells still wider again, a block a pass, until none is or the budget is spent (a pass
    /// starts only where it should end within half of what the combination took before, or
    /// within --launches-budget), and names the cells it left wider.
    #[arg(long, value_name = "FRACTION", value_parser = parse_precision)]
    pub precision: Option<f64>,
    /// Print every step (each launch, re-cap and cell as it goes) and each finding's
    /// arithmetic (the live check, the spread between launches), and the whole matrix summary
    /// at the end; by default only warnings, and a one-screen summary.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// CPU levels to measure, comma-separated cores (overrides the spec's sweep.cpu), e.g.
    /// 0.25,0.5,0.75,1,1.25,1.5,2.
    #[arg(long, value_delimiter = ',', value_name = "CPUS", value_parser = predict::parse_cpu)]
    pub cpu: Vec<f64>,
    /// Add the finished matrix to this library of matrices, in its machine kind's folder
    /// (DIR/<kind>/), for `profiler predict --library DIR`; with --predict, also lean on it.
    #[arg(long, value_name = "DIR")]
    pub library: Option<PathBuf>,
    /// Measure the highest CPU level, then the level predicted least surely from the library
    /// (the shipped zoo and --library), until every other level is predicted within
    /// --precision; those are written predicted (docs/PREDICT.md).
    #[arg(long)]
    pub predict: bool,
    #[command(flatten)]
    pub cgroup_parent: CgroupParentArg,
    /// Run the whole-core CPU levels as Slurm jobs (sbatch), under Slurm's cgroups.
    #[arg(long)]
    pub slurm: bool,
    /// Slurm partition of the jobs (--slurm).
    #[arg(long, value_name = "P", requires = "slurm")]
    pub partition: Option<String>,
    /// Extra sbatch argument, repeatable (--slurm-arg=--account=x).
    #[arg(
        long,
        value_name = "ARG",
        allow_hyphen_values = true,
        requires = "slurm"
    )]
    pub slurm_arg: Vec<String>,
    /// Memory per job, MB [default: the top memory level; for levels relative to the dataset
    /// twice the dataset + 1 GiB; 4 GiB without a memory axis].
    #[arg(long, value_name = "MB", requires = "slurm")]
    pub slurm_mem: Option<u64>,
    /// Leave fractional CPU levels out (Slurm allocates whole cores) instead of refusing.
    #[arg(long, requires = "slurm")]
    pub slurm_skip_fractional: bool,
    /// Internal: measure this CPU level inside a job that --slurm submitted.
    #[arg(long, hide = true, value_name = "C", conflicts_with = "slurm")]
    pub slurm_step_cpu: Option<f64>,
    /// Internal: memory levels (bytes, largest first) fixed by the first level's job.
    #[arg(long, hide = true, value_delimiter = ',', requires = "slurm_step_cpu")]
    pub slurm_memory_levels: Option<Vec<u64>>,
}

impl SweepArgs {
    /// How --slurm submits its jobs.
    pub fn slurm_options(&self) -> std::io::Result<crate::harness::sweep::fleet::SlurmOptions> {
        Ok(crate::harness::sweep::fleet::SlurmOptions {
            partition: self.partition.clone(),
            extra_args: self.slurm_arg.clone(),
            mem_mb: self.slurm_mem,
            skip_fractional: self.slurm_skip_fractional,
            profiler: std::env::current_exe()?,
            poll: std::time::Duration::from_secs(1),
        })
    }

    /// The step a job submitted by --slurm measures (`--slurm-step-cpu`), on this node.
    pub fn slurm_step(&self) -> Option<crate::harness::sweep::SlurmStep> {
        self.slurm_step_cpu
            .map(|cpu| crate::harness::sweep::SlurmStep {
                cpu,
                memory_levels: self.slurm_memory_levels.clone(),
                node: crate::harness::sweep::fleet::node_name(),
            })
    }

    pub fn into_options(self, mut spec: LoadedSpec) -> SweepOptions {
        if let Some(n) = self.launches {
            spec.spec.measure.launches = n;
        }
        if let Some(p) = self.precision {
            spec.spec.measure.precision = p;
        }
        if let Some(b) = self.launches_budget {
            spec.spec.measure.launches_budget_s = Some(b);
        }
        if !self.cpu.is_empty() {
            spec.spec.sweep.cpu = crate::spec::CpuAxis::Levels(self.cpu.clone());
        }
        if self.predict {
            spec.spec.sweep.cpu = predict_search(&spec.spec.sweep.cpu, self.library.as_deref());
        }
        let output = match self.output {
            // A directory (several specs at once): one matrix per job in it.
            Some(dir) if dir.is_dir() => dir.join(format!("{}.matrix.jsonl", spec.spec.name)),
            Some(file) => file,
            None => PathBuf::from(format!("matrices/{}.matrix.jsonl", spec.spec.name)),
        };
        SweepOptions {
            spec,
            output,
            resume: self.resume,
            caps: !self.no_caps,
            mode: self.mode.map(ModeArg::into_mode),
            memory_axis: self.memory.map(|m| match m {
                MemoryArg::Model => MemoryAxis::Model,
                MemoryArg::Measure => MemoryAxis::Measure,
            }),
            cgroup_parent: self.cgroup_parent.name,
            kinds: KindSpeeds::default(),
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Job spec (TOML); see docs/JOB_SPEC.md and workloads/*.toml.
    #[arg(long, short = 'j', value_name = "SPEC.toml")]
    pub job: PathBuf,
    /// Matrix file to write [default: matrices/validation/<job name>.matrix.jsonl].
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also record the result in this matrix of the same job [default:
    /// matrices/<job name>.matrix.jsonl, when it exists].
    #[arg(long, value_name = "FILE")]
    pub record_in: Option<PathBuf>,
    /// Keep the cells already in the output file and measure only the missing ones.
    #[arg(long)]
    pub resume: bool,
    /// Override the spec's sweep.mode.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Walk the levels this many times (overrides measure.launches): every cell is then the
    /// mean of its launches, and the matrix says how far launches of the job land apart
    /// (`launch_spread`), the part of an error that is the machine's own variation.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10))]
    pub launches: Option<u32>,
    #[command(flatten)]
    pub cgroup_parent: CgroupParentArg,
}

impl ValidateArgs {
    /// The sweep that measures every cell, and the matrices to record the result in.
    pub fn into_options(self, mut spec: LoadedSpec) -> (SweepOptions, Vec<PathBuf>) {
        if let Some(n) = self.launches {
            spec.spec.measure.launches = n;
        }
        let name = spec.spec.name.clone();
        let output = self
            .output
            .unwrap_or_else(|| PathBuf::from(format!("matrices/validation/{name}.matrix.jsonl")));
        let record_in = vec![
            self.record_in
                .unwrap_or_else(|| PathBuf::from(format!("matrices/{name}.matrix.jsonl"))),
        ];
        let opts = SweepOptions {
            spec,
            output,
            resume: self.resume,
            caps: true,
            mode: self.mode.map(ModeArg::into_mode),
            memory_axis: Some(MemoryAxis::Measure),
            cgroup_parent: self.cgroup_parent.name,
            kinds: KindSpeeds::default(),
        };
        (opts, record_in)
    }
}

impl ModeArg {
    fn into_mode(self) -> SweepMode {
        match self {
            ModeArg::Live => SweepMode::Live,
            ModeArg::Relaunch => SweepMode::Relaunch,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// A `*.matrix.jsonl` file.
    pub file: PathBuf,
    /// Print the cells as JSON lines instead of tables.
    #[arg(long, conflicts_with = "cells")]
    pub json: bool,
    /// Print one line per cell with everything it measured: interval, iteration times, CPU
    /// used, throttling, resident memory, page cache, storage reads, GPU telemetry.
    #[arg(long)]
    pub cells: bool,
    /// After the table, print the best-case demand: the least CPU and memory per GPU that reach
    /// (1 - eps) of the best throughput, and its speed-up over the server's proportional share.
    #[arg(long, conflicts_with = "json")]
    pub demand: bool,
    #[command(flatten)]
    pub demand_args: DemandArgs,
}

#[derive(Debug, Clone, clap::Args)]
pub struct CorpusArgs {
    /// Matrix files, or folders of them.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The relative half-width a sweep stops at, for the replayed stops.
    #[arg(long, default_value_t = crate::matrix::cell_model::DEFAULT_PRECISION, value_name = "FRACTION", value_parser = parse_precision)]
    pub precision: f64,
}

/// `sweep.cpu` as the prediction search over its levels (a search's own levels, where it has
/// them), leaning on `library` (made absolute: the spec's directory does not apply to it).
fn predict_search(axis: &crate::spec::CpuAxis, library: Option<&Path>) -> crate::spec::CpuAxis {
    use crate::spec::{CpuAxis, CpuSearchSpec, SearchRuleSpec};
    let levels = match axis {
        CpuAxis::Levels(levels) => levels.clone(),
        CpuAxis::Search(s) => s.levels.clone().unwrap_or_default(),
    };
    CpuAxis::Search(CpuSearchSpec {
        search: SearchRuleSpec::Predict,
        min: None,
        max: None,
        tolerance: None,
        step: None,
        max_points: None,
        levels: Some(levels),
        library: library.map(|l| std::path::absolute(l).unwrap_or_else(|_| l.to_owned())),
    })
}

/// How a best-case demand is chosen (`show --demand`, `export`, `plot`).
#[derive(Debug, Clone, clap::Args)]
pub struct DemandArgs {
    /// Server shape whose GPU-proportional share is the baseline (Synergy's default server:
    /// 24 CPUs, 8 GPUs, 500 GB, a share of 3 CPUs and 62.5 GB per GPU).
    #[arg(long, default_value = "24:8:500", value_name = "CPUS:GPUS:GB")]
    pub server: ServerShape,
    /// A grid point within this fraction of the best throughput counts as best (0 = only the
    /// best itself).
    #[arg(long, default_value_t = DEFAULT_EPS, value_name = "FRACTION", value_parser = parse_eps)]
    pub eps: f64,
    /// Price of one proportional share of CPU in the demand's cost.
    #[arg(long, default_value_t = 1.0, value_name = "W", value_parser = parse_weight)]
    pub cpu_weight: f64,
    /// Price of one proportional share of memory in the demand's cost.
    #[arg(long, default_value_t = 1.0, value_name = "W", value_parser = parse_weight)]
    pub mem_weight: f64,
}

impl DemandArgs {
    pub fn weights(&self) -> CostWeights {
        CostWeights {
            cpu: self.cpu_weight,
            mem: self.mem_weight,
        }
    }
}

fn parse_eps(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|e| (0.0..1.0).contains(e))
        .ok_or_else(|| format!("{s:?}: expected a fraction in [0, 1), e.g. 0.02"))
}

pub(crate) fn parse_precision(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|p| *p > 0.0 && *p < 1.0)
        .ok_or_else(|| {
            format!("{s:?}: expected a relative half-width in (0, 1), e.g. 0.05 for ±5%")
        })
}

fn non_negative_seconds(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|w| w.is_finite() && *w >= 0.0)
        .ok_or_else(|| format!("{s:?}: expected seconds >= 0, e.g. 600"))
}

fn parse_weight(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|w| w.is_finite() && *w >= 0.0)
        .ok_or_else(|| format!("{s:?}: expected a weight >= 0, e.g. 1 or 0.5"))
}

/// Baseline of `plot --normalize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NormalizeArg {
    /// Throughput at the server's GPU-proportional share = 1; levels per GPU.
    Proportional,
}

#[derive(Debug, clap::Args)]
pub struct PlotArgs {
    /// Matrix files (`*.matrix.jsonl`).
    #[arg(required = true, value_name = "MATRIX")]
    pub matrices: Vec<PathBuf>,
    /// Folder the charts are written into (created when missing).
    #[arg(long, short = 'o', default_value = "plots", value_name = "DIR")]
    pub output: PathBuf,
    /// Draw throughput relative to a baseline, and levels per GPU (Synergy's view).
    #[arg(long, value_enum, value_name = "BASELINE")]
    pub normalize: Option<NormalizeArg>,
    #[command(flatten)]
    pub demand_args: DemandArgs,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Matrix files (`*.matrix.jsonl`), folders of them, or a deploy's or a replay's `--out`.
    #[arg(required = true, value_name = "MATRIX|DIR")]
    pub matrices: Vec<PathBuf>,
    /// Folder the pages are written into (created when missing).
    #[arg(long, short = 'o', default_value = "report", value_name = "DIR")]
    pub output: PathBuf,
    #[command(flatten)]
    pub demand_args: DemandArgs,
}

impl ReportArgs {
    pub fn to_options(&self) -> crate::report::ReportOptions {
        crate::report::ReportOptions {
            out_dir: self.output.clone(),
            server: self.demand_args.server,
            eps: self.demand_args.eps,
            weights: self.demand_args.weights(),
        }
    }
}

impl PlotArgs {
    pub fn to_options(&self) -> crate::plot::sensitivity::PlotOptions {
        crate::plot::sensitivity::PlotOptions {
            out_dir: self.output.clone(),
            normalize: self.normalize == Some(NormalizeArg::Proportional),
            server: self.demand_args.server,
            eps: self.demand_args.eps,
            weights: self.demand_args.weights(),
        }
    }
}
